#pragma once

#include "memx/cluster/cluster.h"
#include "memx/cost/costmodel.h"
#include "memx/export/export.h"
#include "memx/model/model.h"
#include "memx/profile/importbatch.h"
#include "memx/profile/profilejob.h"
#include "memx/search/search.h"
#include "memx/util/progress.h"

#include <nlohmann/json.hpp>

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace memx {

/// One per-layer kernel the search space uses: a device type running TP `tp` with micro-batch
/// `microBatch` (recompute does not need its own profile: the cost model derives it from the
/// forward time).
struct KernelPoint {
    std::string device;
    int tp = 1;
    int microBatch = 1;
    auto operator<=>(const KernelPoint &) const = default;
    bool operator==(const KernelPoint &) const = default;
};

struct MinimalSetOptions {
    SearchSpaceOptions space; ///< the space the search will explore
    /// With a target: the planned search under it (memx/search/plannedsearch.h: the groups it
    /// cannot run and the slowest ones idle) and end-to-end runs it launches. Without: the whole
    /// space (measurements serve every target), end-to-end runs Megatron-LM or FlagScale launches.
    std::optional<LaunchTarget> target;
    int globalBatch = 0; ///< 0: the model's
    CostOptions cost; ///< analytic model used for the time estimates
    int threads = 0;
    /// Interpolate TP degrees (a + b/tp) between measured ones on devices with an NVLink/NVSwitch/
    /// Infinity Fabric scale-up link; on PCIe cards every needed TP degree is measured
    /// (docs/profiles.md: TP interpolation is unreliable there). Off by default: it is less accurate
    /// and, since it forces the interpolated degree's micro-batch sizes at both neighbours, on the
    /// 20-GPU sample it costs more GPU-hours than measuring every TP.
    bool tpInterpolation = false;
    /// Consecutive measured micro-batch sizes differ by at most this factor (4 = endpoints plus
    /// every other power of two); sizes in between are interpolated.
    int maxMicroBatchRatio = 4;
    /// Transformer layer counts the per-layer jobs run (their difference isolates one layer).
    std::vector<int> layerVariants = {1, 3};
    int microBatchesPerIteration = 4; ///< per-layer jobs: gradient-accumulation steps per iteration
    int endToEndRuns = 6; ///< best analytic plan per pipeline depth + the two memory extremes
    /// Memory-calibration jobs per device type (ProfileJobKind::Memory), on the model truncated
    /// to this many transformer layers; 0 = none.
    int memoryCalibrationLayers = 2;
    int warmupIterations = 3;
    int timedIterations = 10;
    double startupSeconds = 90; ///< process launch, NCCL init, model build, per run
    double exhaustiveSecondsPerConfiguration = 47; ///< the MemX paper's per-configuration figure
};

/// The chosen measurements and their cost.
struct ProfilingPlan {
    std::string clusterName;
    std::string modelId;
    int globalBatch = 0;
    std::vector<KernelPoint> needed; ///< every kernel the space's configurations use, sorted
    std::vector<KernelPoint> measured; ///< the per-layer profiles to measure, sorted
    size_t naiveGridPoints = 0; ///< per device: needed TP degrees x needed micro-batch sizes
    std::vector<ProfileJob> jobs; ///< per-layer jobs first, then end-to-end
    uint64_t configurations = 0; ///< valid configurations of the space
    int clusterGpus = 0;
    double profilingGpuHours = 0; ///< sum over jobs of GPUs x estimated seconds / 3600
    double profilingWallHours = 0; ///< jobs run one after another
    double exhaustiveGpuHours = 0; ///< configurations x cluster GPUs x seconds per configuration
    double exhaustiveWallDays = 0; ///< configurations x seconds per configuration / 86400
    std::vector<std::string> notes;
};

/// True when `point` is measured, interpolable in micro-batch from measured sizes below and above
/// at the same TP, or (when `tpInterpolation`) interpolable in TP from measured degrees below and
/// above at the same micro-batch - the rules of memx/profiling/augment.h.
bool kernelCovered(const std::set<KernelPoint> &measured, const KernelPoint &point, bool tpInterpolation);
/// Whether TP interpolation is allowed on `device` under `options`.
bool tpInterpolationAllowed(const GpuSpec &device, const MinimalSetOptions &options);

/// Every kernel point (device, TP, replica micro-batch) the configurations of `result` use: one
/// look per distinct (pipeline, micro-batch) of their bases, since neither the layer split nor the
/// recompute or optimizer choice changes the kernels; read from the decoding tables without
/// materialising plans. `progress` is called every few thousand configurations (done, size());
/// returning false throws Cancelled.
std::set<KernelPoint> kernelsOfSpace(const SearchResult &result, const ProgressFn &progress = {});

/// Chooses the smallest set of per-layer measurements covering the space (per device and TP:
/// micro-batch endpoints and steps of at most maxMicroBatchRatio; TP endpoints and steps of at most
/// 4 where TP interpolation is allowed, else every TP), the memory-calibration jobs of every device
/// type the space uses, plus a few end-to-end runs, and estimates
/// the GPU-hours against running every configuration end to end. Throws std::invalid_argument
/// when the space is empty, Cancelled when `progress` (the search's) stops it.
ProfilingPlan planMinimalSet(const Cluster &cluster, const Model &model, const MinimalSetOptions &options,
                             const ProgressFn &progress = {});

/// Format tag of the manifest.
inline constexpr const char *kProfileJobsFormat = "memx.profilejobs/1";

/// The manifest (memx.profilejobs/1): cluster, model, the jobs with their expected logs.
nlohmann::json manifestToJson(const ProfilingPlan &plan, const Cluster &cluster, const Model &model);

/// A parsed manifest.
struct ProfileManifest {
    Cluster cluster;
    Model model;
    std::vector<ProfileJob> jobs;
};
/// Parses a manifest; throws LoadError naming `file` and the JSON pointer of every problem.
ProfileManifest parseManifest(const std::string &text, const std::string &file);

/// The files of a plan: per job a folder jobs/<id>/ with Megatron-LM launch scripts (a few
/// iterations, log interval 1, timers at level 2, memory report) or, for heterogeneous end-to-end
/// plans, the FlagScale export; a run.sh per job that tees the log to $LOG_DIR/<log file> (memory
/// jobs also run their sample-memory.sh, nvidia-smi or rocm-smi into $LOG_DIR/<log stem>.nvml.csv,
/// see memoryJobSampleFile and memorySamplerScript); and manifest.json.
std::vector<ExportFile> profilingJobFiles(ProfilingPlan &plan, const Cluster &cluster, const Model &model,
                                          const std::string &date = {});

} // namespace memx

namespace memx {

/// Megatron-LM timer lines (--timing-log-level 2, "(min, max) time across ranks (ms):" blocks):
/// the max of forward-compute, backward-compute and optimizer of every logged iteration.
struct MegatronTimers {
    std::vector<double> forwardComputeMs, backwardComputeMs, optimizerMs;
    /// The log starts with the virtual testbed's "# memx virtual testbed (SIMULATED) ..." line;
    /// `simulatedSource` then holds its "virtual-testbed seed=N".
    bool simulated = false;
    std::string simulatedSource;
};
/// Parses the timer lines; a timer line with an unreadable number is an error naming file and line.
MegatronTimers parseMegatronTimers(const std::string &text, const std::string &file);

/// The device-used samples a memory job writes next to its log: "<log without .log>.nvml.csv",
/// lines "index, memory.used [MiB]" of `nvidia-smi --query-gpu=index,memory.used
/// --format=csv,noheader,nounits -lms 200`.
std::string memoryJobSampleFile(const ProfileJob &job);
/// The memory job's sampler (jobs/<id>/sample-memory.sh, started by its run.sh): "index, MiB used"
/// lines every 200 ms from nvidia-smi, or from rocm-smi's VRAM-used column on AMD nodes.
std::string memorySamplerScript();
/// Peak "memory.used" (bytes, MiB x 2^20) over the samples of GPU indices 0 .. gpus-1 in such a
/// file. Throws LoadError naming the file and line on a malformed line; nullopt without samples.
std::optional<double> peakDeviceUsedBytes(const std::string &text, const std::string &file, int gpus);

/// Imports the logs a manifest's jobs wrote into `logDir` (the manifest's logFiles names).
/// Per-layer jobs: the difference of the layer variants' per-micro-batch forward/backward compute
/// gives one transformer layer; the rest is split between embedding and output layer in the cost
/// model's proportion; optimizer time likewise. End-to-end jobs: importMegatronLog with the job's
/// plan (run id "<manifest run prefix>/<job id>"). Memory jobs: the same on the truncated model
/// (memoryCalibrationModel, added to the batch), with the device-used peak of the job's nvidia-smi
/// samples (MemoryKind::DeviceUsed) or, without that file, the log's max reserved
/// (MemoryKind::Reserved, with a warning). The first `skip` iterations are warm-up (-1: each
/// job's warmupIterations). Jobs whose logs are all missing are skipped with a warning; a job with
/// some but not all logs is an error. Logs written by the virtual testbed keep origin Simulated and
/// its source label. Throws LoadError when no log matches.
ImportBatch importManifestLogs(const ProfileManifest &manifest, const std::string &logDir, int skip,
                               const std::string &group, const ProgressFn &progress = {});

} // namespace memx
