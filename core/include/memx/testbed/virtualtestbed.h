#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"
#include "memx/profile/layerprofile.h"
#include "memx/profile/measuredrun.h"
#include "memx/profile/profilejob.h"

#include <cstdint>
#include <string>
#include <vector>

namespace memx {

/// Parameters of the virtual testbed's effects (docs/profiles.md, "Virtual testbed").
struct TestbedOptions {
    // ---- compute ----
    /// Fraction of peak a large, perfectly tiled GEMM reaches, per vendor (others: otherGemmEfficiency).
    double nvidiaGemmEfficiency = 0.72;
    double amdGemmEfficiency = 0.55;
    double otherGemmEfficiency = 0.45;
    /// GEMM tile edge (M and N are padded up to it) and K granularity.
    int tileMN = 128;
    int tileK = 64;
    /// Per-kernel launch overhead, microseconds.
    double kernelLaunchUs = 6.0;
    /// FP8 GEMMs (Plan::fp8) reach this fraction of the BF16 GEMM efficiency, of the FP8 peak.
    double fp8EfficiencyFactor = 0.8;
    /// Achieved fraction of HBM bandwidth of memory-bound kernels (norms, dropout, softmax, Adam).
    double memoryBoundEfficiency = 0.7;
    // ---- communication (NCCL/RCCL protocol model) ----
    /// Messages below llMaxBytes use LL, below ll128MaxBytes LL128 (NVLink only), else Simple.
    double llMaxBytes = 64.0 * 1024;
    double ll128MaxBytes = 4.0 * 1024 * 1024;
    /// Bandwidth fraction and per-step latency (microseconds) of each protocol.
    double llBandwidthFraction = 0.45, llLatencyUs = 4.0;
    double ll128BandwidthFraction = 0.9, ll128LatencyUs = 8.0;
    double simpleBandwidthFraction = 0.97, simpleLatencyUs = 20.0;
    /// Gradient all-reduce bucket, parameters (Megatron DDP's default bucket is 40M).
    double gradBucketParams = 40e6;
    // ---- memory ----
    double allocatorBlockBytes = 2.0 * 1024 * 1024; ///< caching allocator rounds each tensor up to this
    double fragmentationPerDistinctSize = 0.002; ///< extra reserved fraction per distinct tensor size
    double maxFragmentation = 0.12;
    double nvidiaContextBytes = 0.55 * 1073741824.0; ///< CUDA context + cuBLAS workspace
    double amdContextBytes = 0.75 * 1073741824.0; ///< HIP context + rocBLAS/hipBLASLt workspace
    double communicatorBytes = 0.33 * 1073741824.0; ///< NCCL/RCCL buffers per communicator group
    // ---- run-to-run effects ----
    double jitterCv = 0.03; ///< coefficient of variation of the lognormal run-to-run factor
    double profileJitterCv = 0.01; ///< per-layer measurement noise of profiling jobs
    double stragglerProbability = 0.03; ///< chance a run has one slow GPU
    double stragglerSlowdown = 1.25; ///< that GPU's compute is this much slower
    double iterationOverheadMs = 3.0; ///< per-iteration host work (data loader, logging, launch gaps)
    int timedIterations = 10; ///< iterations a run's reported time is the mean of
    std::string group; ///< group label of produced runs; empty: "testbed/<cluster name>"
};

/// Outcome of running one plan on the testbed. `ok` false means the run failed (out of memory),
/// like a real trial; `run` is then filled except for the time.
struct TestbedRun {
    bool ok = false;
    std::string error; ///< e.g. "out of memory on node a100-0 GPU 3: 41.2 GiB needed, 40.0 GiB available"
    MeasuredRun run; ///< iteration time (ms), device-used peak (bytes), source "virtual-testbed seed=N"
    std::vector<double> iterationTimesMs; ///< the timed iterations
    std::vector<double> peakBytesPerGpu; ///< device-used peak of every GPU, in plan order (stage, replica, rank)
    bool straggler = false; ///< this run had a slow GPU
};

/// Simulated compute of one layer kind for one micro-batch (milliseconds).
struct SimulatedLayerTimes {
    double forwardMs = 0, backwardMs = 0;
};

/// A simulated GPU cluster that "runs" profiling jobs and plans. It has its own performance model
/// (GEMM tile/wave quantisation, per-vendor efficiency, NCCL protocol steps, a discrete-event 1F1B
/// pipeline, caching-allocator rounding and fragmentation, run-to-run jitter, stragglers) and is
/// deterministic by seed: the same seed gives bit-identical results whatever the call order.
/// Everything it produces is labelled simulated (ProfileOrigin::Simulated,
/// source "virtual-testbed seed=N"). Value type; const methods are thread-safe.
class VirtualTestbed {
public:
    explicit VirtualTestbed(std::uint64_t seed, TestbedOptions options = {});

    std::uint64_t seed() const { return mSeed; }
    const TestbedOptions &options() const { return mOptions; }
    /// "virtual-testbed seed=N"
    std::string sourceLabel() const;

    /// Runs a per-layer profiling job: a profile of `model` (all L+2 layers) for (job.device,
    /// job.tp, job.microBatch) with origin Simulated. Layer times are compute only (TP collectives
    /// are not included, matching the cost model's use of profiles). Throws std::invalid_argument
    /// when the job is not per-layer or the device is not in `cluster`.
    LayerProfile runProfilingJob(const ProfileJob &job, const Cluster &cluster, const Model &model) const;

    /// Runs `plan` end to end (validated; throws std::invalid_argument naming the problem).
    /// The run id is "testbed/<seed>/<plan name>/<hash of the plan>", group options().group.
    TestbedRun runPlan(const Plan &plan, const Cluster &cluster, const Model &model) const;

    /// Deterministic (jitter-free) compute of one transformer layer for one micro-batch.
    /// `fp8`: the four linear GEMMs at the device's FP8 peak, each operand cast by its own kernel.
    SimulatedLayerTimes transformerLayer(const GpuSpec &device, const Model &model, int tp, int microBatch,
                                         bool fp8 = false) const;
    /// Deterministic time of one GEMM (M x K) x (K x N) on `device`, milliseconds.
    double gemmMs(const GpuSpec &device, bool bf16, double m, double n, double k) const;
    /// The same GEMM in FP8 (throws std::invalid_argument when the device has no FP8 peak).
    double fp8GemmMs(const GpuSpec &device, double m, double n, double k) const;
    /// Fraction of peak the GEMM reaches (tile and wave quantisation x vendor efficiency).
    double gemmEfficiency(const GpuSpec &device, double m, double n, double k) const;
    /// Deterministic ring all-reduce time over `link` with the protocol the message size selects.
    double allReduceMs(int ranks, double bytes, const Link &link, bool nvlinkClass) const;
    /// Caching-allocator reserved bytes of a set of live tensors (bytes each): every tensor rounded
    /// up to allocatorBlockBytes, times (1 + fragmentation(distinct sizes)).
    double reservedBytes(const std::vector<double> &tensorBytes) const;

private:
    std::uint64_t mSeed;
    TestbedOptions mOptions;
};

/// Makespan (ms) of one 1F1B pipeline iteration by discrete-event simulation
/// (memx::oneFOneBSchedule, memx/cost/schedule.h): stage i runs min(p-1-i, m) warm-up forwards,
/// then one-forward-one-backward, then the remaining backwards; a forward waits for the previous
/// stage's forward of the same micro-batch plus p2pMs[i-1], a backward for the next stage's
/// backward plus p2pMs[i]. Per-stage times per micro-batch; a missing p2pMs entry is 0, entries
/// from index p-1 on are ignored.
/// Throws std::invalid_argument as oneFOneBSchedule does.
double simulateOneFOneBMs(const std::vector<double> &forwardMs, const std::vector<double> &backwardMs,
                          const std::vector<double> &p2pMs, int microBatches);

/// Streaming multiprocessors / compute units the testbed assumes for a device (wave quantisation).
int computeUnits(const GpuSpec &device);

} // namespace memx
