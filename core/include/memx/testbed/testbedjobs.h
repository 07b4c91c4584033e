#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"
#include "memx/profile/importbatch.h"
#include "memx/profile/profilejob.h"
#include "memx/testbed/virtualtestbed.h"
#include "memx/util/progress.h"

#include <string>
#include <utility>
#include <vector>

namespace memx {

/// What one job or plan did on the virtual testbed.
struct TestbedJobResult {
    std::string job; ///< job id, or the plan's name
    bool perLayer = false; ///< a per-layer profiling job (else an end-to-end run)
    bool ok = true; ///< end-to-end: ran without running out of memory
    std::string error; ///< end-to-end, !ok: why
    std::string source; ///< "virtual-testbed seed=N"
    // per-layer
    std::string device;
    int tp = 1, microBatch = 1;
    double layerForwardMs = 0, layerBackwardMs = 0; ///< one transformer layer, one micro-batch
    // end-to-end
    std::string plan; ///< Plan::summary
    std::string runId;
    double iterationTimeMs = 0;
    double peakMemoryBytes = 0; ///< device-used peak (also of a failed run: what it needed)
    bool straggler = false;
};

/// Everything a batch of testbed jobs produced, all labelled simulated.
struct TestbedBatch {
    /// The cluster, the model, the simulated profiles and the runs that fit in memory: what
    /// `memx profile run-simulated` and the Profiles dock import into the project in one transaction.
    ImportBatch batch;
    std::vector<TestbedJobResult> results; ///< one per job, then one per plan, in order
    /// With TestbedJobOptions::logs: simulated Megatron-LM logs (file name, content) under the names
    /// the jobs' manifest expects, for `memx profile import --manifest`.
    std::vector<std::pair<std::string, std::string>> logs;
    size_t failed() const;
};

struct TestbedJobOptions {
    bool logs = false; ///< also write each job's simulated Megatron-LM log(s)
};

/// Runs every profiling job (per-layer jobs profile, end-to-end jobs run their plan), then every
/// plan, on `testbed`: the loop `memx profile run-simulated` and the workbench's "Run on testbed"
/// share. Runs that do not fit fail like real trials (kept in `results`, not in the batch).
/// `progress(done, total)` counts jobs and plans; returning false throws Cancelled (nothing is
/// kept). Throws std::invalid_argument for a job or plan the cluster cannot run.
TestbedBatch runTestbedJobs(const VirtualTestbed &testbed, const Cluster &cluster, const Model &model,
                            const std::vector<ProfileJob> &jobs, const std::vector<Plan> &plans,
                            const TestbedJobOptions &options = {}, const ProgressFn &progress = {});

/// A simulated Megatron-LM log of `iterationsMs` (one "elapsed time per iteration (ms)" line each,
/// with forward/backward/optimizer timers, and per-rank memory lines of `peakBytes` after the
/// first iteration) as the Megatron importer reads it; the first line says SIMULATED.
std::string simulatedMegatronLog(const VirtualTestbed &testbed, const std::string &jobId,
                                 const std::vector<double> &iterationsMs, double forwardMs, double backwardMs,
                                 double optimizerMs, double peakBytes, int ranks);

} // namespace memx
