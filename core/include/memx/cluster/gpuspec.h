#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace memx {

/// How the GPUs of one node talk to each other.
enum class ScaleUpKind { NvLink, NvSwitch, InfinityFabric, RoCE, Hccs, MluLink, BLink, Pcie };
enum class ScaleUpTopology { Switch, Mesh, Ring, Pairs, None };

const char *toString(ScaleUpKind kind);
const char *toString(ScaleUpTopology topology);

/// One accelerator model as the catalogue (or a user's custom entry) describes it.
/// Figures the vendor does not publish are std::nullopt ("unknown"), never guessed.
struct GpuSpec {
    std::string id; ///< stable key, e.g. "a100-80gb-sxm"
    std::vector<std::string> aliases; ///< other names that resolve to this id, e.g. "A100-80"
    std::string vendor; ///< "NVIDIA", "AMD", "Intel", "Huawei", ...
    std::string name; ///< display name
    std::string segment; ///< "datacenter", "consumer" or "workstation"
    std::optional<double> memoryGiB; ///< usable device memory, GiB (2^30 bytes)
    std::optional<double> memoryBandwidthGBps; ///< HBM/GDDR bandwidth, 1e9 bytes/s
    std::optional<double> denseBf16Tflops; ///< dense BF16 peak, 1e12 FLOP/s; unset when no BF16
    std::optional<double> denseFp16Tflops; ///< dense FP16 peak, 1e12 FLOP/s
    /// Dense FP8 tensor peak, 1e12 FLOP/s (FP32 accumulate, what Transformer Engine uses); unset:
    /// the device has no FP8 training support (or none is known), so FP8 plans are refused on it.
    std::optional<double> denseFp8Tflops;
    bool bf16Supported = true;
    ScaleUpKind scaleUpKind = ScaleUpKind::Pcie;
    std::optional<double> scaleUpPerDirectionGBps; ///< per GPU, per direction
    ScaleUpTopology scaleUpTopology = ScaleUpTopology::None;
    std::string hostLink;
    int devicesPerPackage = 1; ///< MI250X: 2 (this spec then describes one of them)
    std::optional<double> nicGbps; ///< typical scale-out NIC per device, Gbit/s
    std::string nicDescription;
    std::optional<double> tdpWatts;
    std::optional<int> computeUnits; ///< SMs (NVIDIA) / CUs (AMD) / cores: GEMM wave quantisation
    std::string architecture; ///< "volta", "turing", "ampere", "ada", "hopper", "cdna2", ... (empty: unknown)
    /// The device runs FlashAttention-class kernels (flash-attn / cuDNN fused attention on NVIDIA
    /// Ampere and newer, ROCm CK flash kernels on CDNA2+, ...): `attention: auto` resolves to flash
    /// there and to unfused elsewhere. Unknown devices: false (sizes memory the safe way).
    bool flashAttention = false;
    /// Device-used memory the training framework adds on top of the allocator's peak: the runtime
    /// context (CUDA/HIP context, kernels, cuBLAS/cuDNN workspaces), the communicator buffers per
    /// TP/DP/PP/CP group the GPU is in, and the caching allocator's reserve (fragmentation and
    /// rounding) as a fraction of the allocator peak. Unset: CostOptions' defaults.
    struct RuntimeMemory {
        std::optional<double> contextGiB;
        std::optional<double> communicatorGiB;
        std::optional<double> reserveFraction;
        std::string source; ///< where the figures come from (catalogue note, calibration run set)
        bool operator==(const RuntimeMemory &) const = default;
    } runtimeMemory;
    bool verified = true; ///< false: figures unconfirmed, the user must calibrate
    std::string notes;
    std::map<std::string, std::string> sources; ///< figure name -> where it comes from
    /// Filled by profiling: achieved fraction of peak compute, achieved bus bandwidth.
    std::optional<double> measuredComputeEfficiency;
    std::optional<double> measuredBusBandwidthGBps;
    bool custom = false; ///< defined in a cluster file rather than the catalogue

    /// Peak dense TFLOP/s in the given precision, falling back to FP16 when BF16 is unknown.
    std::optional<double> peakTflops(bool bf16) const;
    /// Usable memory in bytes (0 when unknown).
    double memoryBytes() const;
    /// Whether `idOrAlias` is this device's id or one of its aliases (case-insensitive, as
    /// Catalogue::find looks them up).
    bool isNamed(const std::string &idOrAlias) const;

    bool operator==(const GpuSpec &) const = default;
};

/// Whether `id` may be a device's id: letters, digits, '.', '_' and '-', starting with a letter
/// or digit (ids name GPU files and command-line values; every device file is held to it).
bool isValidDeviceId(const std::string &id);

/// The set of known devices, looked up by id or alias (case-insensitive).
class Catalogue {
public:
    Catalogue() = default;
    explicit Catalogue(std::vector<GpuSpec> devices);

    const std::vector<GpuSpec> &devices() const { return mDevices; }
    const GpuSpec *find(const std::string &idOrAlias) const;
    /// Ids of the devices whose id or name is closest to `text` (for "did you mean" hints).
    std::vector<std::string> suggest(const std::string &text, size_t max = 3) const;

private:
    std::vector<GpuSpec> mDevices;
};

} // namespace memx
