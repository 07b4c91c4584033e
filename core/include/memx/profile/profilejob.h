#pragma once

#include "memx/model/model.h"
#include "memx/plan/plan.h"

#include <optional>
#include <string>
#include <vector>

namespace memx {

/// What a profiling job measures.
enum class ProfileJobKind {
    PerLayer, ///< per-layer times of one (device, TP, micro-batch) on one node
    EndToEnd, ///< a whole plan on the cluster, for the predictor's correction
    /// A small plan of the model truncated to `layerVariants[0]` layers on one node of one device
    /// type, with the device-used memory sampled (nvidia-smi) next to Megatron's memory report:
    /// three per device type (1 GPU, 1 GPU with a larger micro-batch, the node's GPUs
    /// data-parallel) give `memx profile calibrate` the runtime context, the communicator
    /// buffers and the allocator reserve of that device (GpuSpec::runtimeMemory).
    Memory,
};
const char *toString(ProfileJobKind kind);
/// "per-layer", "end-to-end" or "memory"; nullopt otherwise.
std::optional<ProfileJobKind> profileJobKindFromString(const std::string &text);

/// The model a memory-calibration job runs: `model` truncated to `layers` transformer layers
/// (clamped to 1 .. its layers), id "<id>-memcal-L<layers>".
Model memoryCalibrationModel(const Model &model, int layers);

/// One runnable profiling job (a row of a memx.profilejobs/1 manifest, see docs/profiles.md).
///
/// A per-layer job runs the model truncated to `layerVariants[v]` transformer layers on `tp` GPUs
/// of `node` (PP 1, DP 1, micro-batch `microBatch`, `microBatchesPerIteration` micro-batches per
/// iteration), once per variant: the difference of the variants' forward/backward timers gives the
/// time of one transformer layer, the rest is embedding + output layer.
struct ProfileJob {
    std::string id; ///< unique in its manifest, e.g. "layer-a100-40gb-sxm-tp2-mbs4"
    ProfileJobKind kind = ProfileJobKind::PerLayer;
    std::string device; ///< catalogue device id (per-layer and memory jobs)
    std::string node; ///< node the per-layer or memory job runs on (expanded node name)
    int tp = 1;
    int microBatch = 1;
    std::vector<int> layerVariants; ///< per-layer: transformer layer counts, one run each; memory: the one count
    int microBatchesPerIteration = 1; ///< per-layer: gradient accumulation steps per iteration
    std::optional<Plan> plan; ///< end-to-end and memory: the plan to run
    std::string reason; ///< end-to-end and memory: why this plan was chosen (e.g. "best analytic plan with PP 2")
    int gpus = 1; ///< GPUs the job occupies
    int warmupIterations = 3;
    int timedIterations = 10;
    double estimatedSeconds = 0; ///< wall time estimate (start-up + warm-up + timed iterations), per variant summed
    std::vector<std::string> logFiles; ///< expected log file name per variant (end-to-end: one)
    std::vector<std::string> scripts; ///< launch script paths relative to the manifest folder

    double gpuSeconds() const { return gpus * estimatedSeconds; }
};

} // namespace memx
