#pragma once

#include "memx/cluster/cluster.h"
#include "memx/plan/plan.h"

#include <optional>
#include <string>

namespace memx {

/// What a measured peak memory figure counts.
enum class MemoryKind {
    AllocatorMax, ///< PyTorch caching allocator peak (torch.cuda.max_memory_allocated)
    Reserved, ///< allocator peak reserved (torch.cuda.max_memory_reserved)
    DeviceUsed ///< device memory in use as NVML sees it (adds CUDA context, NCCL buffers)
};
const char *toString(MemoryKind kind);
/// "allocator-max", "reserved" or "device-used"; nullopt for anything else.
std::optional<MemoryKind> memoryKindFromString(const std::string &text);

/// One measured end-to-end training run: the plan that ran, on which cluster, and what it cost.
struct MeasuredRun {
    std::string id; ///< unique within a project (e.g. "sailor/gh200-main/OPT-350/N4/plan_config_N4_D2")
    Plan plan;
    std::string clusterName; ///< name of `cluster`
    Cluster cluster; ///< the cluster the run ran on (self-contained copy)
    std::string modelId;
    double iterationTimeMs = 0; ///< mean iteration time, milliseconds
    std::optional<double> peakMemoryBytes; ///< max over ranks, bytes; unset when not measured
    MemoryKind memoryKind = MemoryKind::AllocatorMax;
    std::string source; ///< file it came from
    std::string date; ///< ISO date of the measurement when known, else empty
    std::string group; ///< hardware group label, e.g. "gh200-main/OPT-350"
    /// The run failed out of memory: no time, no peak; it counts in the OOM confusion table of
    /// `memx evaluate` (a plan predicted to fit must not be one of these) and never trains.
    bool outOfMemory = false;

    bool operator==(const MeasuredRun &) const = default;
};

} // namespace memx
