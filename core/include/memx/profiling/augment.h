#pragma once

#include "memx/model/model.h"
#include "memx/profile/layerprofile.h"

#include <optional>
#include <vector>

namespace memx {

/// Interpolation-based augmentation of measured per-layer profiles (docs/profiles.md).
/// Every produced profile has origin Interpolated and a source naming the profiles it came from.

/// Per-layer piecewise-linear interpolation in micro-batch size between the nearest measured
/// neighbours below and above `microBatch` (times, optimizer time and activation bytes; parameter
/// bytes are copied). `profiles` must share gpu, model, tp and seqLength and have the same layer
/// count. nullopt when `microBatch` is not strictly inside the measured range (no extrapolation).
std::optional<LayerProfile> interpolateMicroBatch(const std::vector<LayerProfile> &profiles, int microBatch);

/// Per-layer least-squares fit of t(tp) = a + b / tp (forward, backward, optimizer, parameter and
/// activation bytes) over profiles sharing gpu, model, microBatch and seqLength, evaluated at `tp`.
/// Needs two or more distinct TP degrees; nullopt when `tp` lies outside [min, max] measured TP.
std::optional<LayerProfile> interpolateTensorParallel(const std::vector<LayerProfile> &profiles, int tp);

/// The profile of the same layers for a model with `layers` transformer layers (id `modelId`):
/// transformer layers are all alike, so the last one is repeated (or trailing ones are dropped).
LayerProfile withLayerCount(const LayerProfile &profile, int layers, const std::string &modelId);

/// Rescales a profile to another sequence length with the analytic FLOP and activation ratios of
/// `model` (transformer layer FLOPs per sample 24 s h^2 + 4 s^2 h; activations s h (34 + 5 a s / h);
/// embedding and output layer linear in s). Model-based: the public data has one sequence length.
LayerProfile scaleSequenceLength(const LayerProfile &profile, const Model &model, int seqLength);

struct AugmentOptions {
    /// Micro-batch sizes to fill in inside each measured range (in addition to powers of two).
    std::vector<int> microBatches;
    /// TP degrees to fill in inside each measured range.
    std::vector<int> tpDegrees = {1, 2, 4, 8, 16};
};

/// Fills the gaps of a measured set: every power-of-two (and listed) micro-batch size strictly
/// between measured ones, then every listed TP degree between measured ones. Returns only the new
/// (Interpolated) profiles; measured keys are never overwritten.
std::vector<LayerProfile> augmentProfiles(const ProfileSet &measured, const AugmentOptions &options = {});

/// Result of hiding measured points and interpolating them from the others.
struct HoldOutReport {
    struct Point {
        ProfileKey key;
        double measuredMs = 0; ///< sum over layers of forward + backward, measured
        double interpolatedMs = 0; ///< the same sum from the interpolated profile
        double relativeError = 0; ///< |interpolated - measured| / measured
    };
    std::vector<Point> points;
    double medianError = 0;
    double p90Error = 0;
    double maxError = 0;
};

/// For every (gpu, model, tp, seqLength) with >= 3 measured micro-batch sizes, hides each interior
/// one and interpolates it from the rest (interpolateMicroBatch).
HoldOutReport holdOutMicroBatch(const ProfileSet &measured);
/// The same along TP (interpolateTensorParallel) for groups with >= 3 TP degrees.
HoldOutReport holdOutTensorParallel(const ProfileSet &measured);

/// Sum over layers of forward + backward milliseconds (compute of one micro-batch).
double computeMs(const LayerProfile &profile);

} // namespace memx
