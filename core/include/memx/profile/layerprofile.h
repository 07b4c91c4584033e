#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memx {

/// Measured (or simulated, or interpolated) cost of one layer for one micro-batch.
struct LayerMeasurement {
    double forwardMs = 0; ///< forward pass, milliseconds
    double backwardMs = 0; ///< backward pass, milliseconds
    double optimizerMs = 0; ///< optimizer update of this layer's parameters, milliseconds
    std::optional<double> paramBytes; ///< parameter bytes of the layer on one TP rank
    std::optional<double> activationBytes; ///< activation bytes kept for backward, per micro-batch

    bool operator==(const LayerMeasurement &) const = default;
};

/// Where a profile came from.
enum class ProfileOrigin { Measured, Simulated, Interpolated };
const char *toString(ProfileOrigin origin);

/// What a per-layer profile was measured for.
struct ProfileKey {
    std::string gpu; ///< catalogue device id (e.g. "a100-40gb-sxm")
    std::string model; ///< model id (e.g. "opt-350m")
    int tp = 1;
    int microBatch = 1;
    int seqLength = 0;

    bool operator==(const ProfileKey &) const = default;
    auto operator<=>(const ProfileKey &) const = default;
};

/// Per-layer costs for one ProfileKey. layers[0] is the embedding, layers[1..L] the transformer
/// layers, layers[L+1] the output layer (head + loss), as the public dataset and Megatron's
/// layer timers lay them out.
struct LayerProfile {
    ProfileKey key;
    std::vector<LayerMeasurement> layers;
    ProfileOrigin origin = ProfileOrigin::Measured;
    std::string source; ///< file or job it came from
    /// The layer times were measured inside their TP group, so they already contain the
    /// tensor-parallel collectives (Megatron's layer timers, Sailor's profiler). False for
    /// compute-only profiles (the virtual testbed's): the cost model then adds the TP term.
    bool includesTpCommunication = true;

    bool operator==(const LayerProfile &) const = default;
};

/// A set of per-layer profiles, looked up by key. Value type.
class ProfileSet {
public:
    void add(LayerProfile profile); ///< replaces a profile with the same key
    const LayerProfile *find(const ProfileKey &key) const;
    const std::vector<LayerProfile> &profiles() const { return mProfiles; }
    bool empty() const { return mProfiles.empty(); }
    size_t size() const { return mProfiles.size(); }

    bool operator==(const ProfileSet &) const = default;

private:
    std::vector<LayerProfile> mProfiles;
};

} // namespace memx
