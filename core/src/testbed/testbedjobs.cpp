#include "memx/testbed/testbedjobs.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace memx {

size_t TestbedBatch::failed() const
{
    size_t n = 0;
    for (const TestbedJobResult &r : results)
        n += r.ok ? 0 : 1;
    return n;
}

std::string simulatedMegatronLog(const VirtualTestbed &tb, const std::string &jobId, const std::vector<double> &iterMs,
                                 double fwdMs, double bwdMs, double optMs, double peakBytes, int ranks)
{
    std::ostringstream o;
    o << "# memx virtual testbed (SIMULATED) " << tb.sourceLabel() << " job=" << jobId << "\n";
    o << std::fixed << std::setprecision(2);
    for (size_t i = 0; i < iterMs.size(); ++i) {
        o << " [2025-01-01 00:00:00] iteration " << std::setw(8) << (i + 1) << "/" << std::setw(8) << iterMs.size()
          << " | consumed samples: " << (i + 1) << " | elapsed time per iteration (ms): " << iterMs[i]
          << " | learning rate: 1.000000E-04 | lm loss: 1.000000E+01 |\n";
        o << "(min, max) time across ranks (ms):\n";
        o << "    forward-backward ...............................: (" << fwdMs + bwdMs << ", " << fwdMs + bwdMs
          << ")\n";
        o << "    forward-compute ................................: (" << fwdMs << ", " << fwdMs << ")\n";
        o << "    backward-compute ...............................: (" << bwdMs << ", " << bwdMs << ")\n";
        o << "    optimizer ......................................: (" << optMs << ", " << optMs << ")\n";
        if (i == 0)
            for (int r = 0; r < ranks; ++r)
                o << "[Rank " << r << "] (after 1 iterations) memory (MB) | allocated: " << peakBytes / 1048576.0 * 0.8
                  << " | max allocated: " << peakBytes / 1048576.0 << " | reserved: " << peakBytes / 1048576.0
                  << " | max reserved: " << peakBytes / 1048576.0 << "\n";
    }
    return o.str();
}

namespace {

/// One per-layer job: its simulated profile and, per layer variant, the log Megatron's timers
/// would write (forward/backward compute of one iteration of that many layers).
void runPerLayerJob(const VirtualTestbed &tb, const ProfileJob &job, const Cluster &cluster, const Model &model,
                    bool logs, TestbedBatch &out)
{
    const LayerProfile p = tb.runProfilingJob(job, cluster, model);
    TestbedJobResult r;
    r.job = job.id;
    r.perLayer = true;
    r.source = p.source;
    r.device = job.device;
    r.tp = job.tp;
    r.microBatch = job.microBatch;
    r.layerForwardMs = p.layers[1].forwardMs;
    r.layerBackwardMs = p.layers[1].backwardMs;
    out.results.push_back(std::move(r));
    out.batch.profiles.push_back(p);
    if (!logs)
        return;
    for (size_t v = 0; v < job.layerVariants.size() && v < job.logFiles.size(); ++v) {
        const int n = job.layerVariants[v];
        double f = p.layers.front().forwardMs + p.layers.back().forwardMs;
        double b = p.layers.front().backwardMs + p.layers.back().backwardMs;
        double opt = p.layers.front().optimizerMs + p.layers.back().optimizerMs;
        for (int l = 1; l <= n; ++l) {
            f += p.layers[static_cast<size_t>(l)].forwardMs;
            b += p.layers[static_cast<size_t>(l)].backwardMs;
            opt += p.layers[static_cast<size_t>(l)].optimizerMs;
        }
        f *= job.microBatchesPerIteration;
        b *= job.microBatchesPerIteration;
        const std::vector<double> it(static_cast<size_t>(job.warmupIterations + job.timedIterations), f + b + opt);
        out.logs.push_back({job.logFiles[v], simulatedMegatronLog(tb, job.id, it, f, b, opt, 0, job.tp)});
    }
}

/// One end-to-end run; a run that does not fit is a result, not a stored run.
void runEndToEnd(const VirtualTestbed &tb, const Plan &plan, const std::string &jobId, const std::string &logFile,
                 const Cluster &cluster, const Model &model, TestbedBatch &out)
{
    const TestbedRun run = tb.runPlan(plan, cluster, model);
    TestbedJobResult r;
    r.job = jobId;
    r.source = tb.sourceLabel();
    r.plan = plan.summary(cluster);
    r.ok = run.ok;
    r.error = run.error;
    r.peakMemoryBytes = run.run.peakMemoryBytes.value_or(0);
    if (run.ok) {
        r.runId = run.run.id;
        r.iterationTimeMs = run.run.iterationTimeMs;
        r.straggler = run.straggler;
        out.batch.runs.push_back(run.run);
        if (!logFile.empty())
            out.logs.push_back(
                {logFile,
                 simulatedMegatronLog(tb, jobId, run.iterationTimesMs, 0, 0, 0, r.peakMemoryBytes, plan.totalGpus())});
    }
    out.results.push_back(std::move(r));
}

} // namespace

TestbedBatch runTestbedJobs(const VirtualTestbed &tb, const Cluster &cluster, const Model &model,
                            const std::vector<ProfileJob> &jobs, const std::vector<Plan> &plans,
                            const TestbedJobOptions &options, const ProgressFn &progress)
{
    TestbedBatch out;
    out.batch.clusters.push_back(cluster);
    out.batch.models.push_back(model);
    const size_t total = jobs.size() + plans.size();
    size_t done = 0;
    reportOrThrow(progress, 0, total);
    for (const ProfileJob &job : jobs) {
        if (job.kind == ProfileJobKind::PerLayer) {
            runPerLayerJob(tb, job, cluster, model, options.logs, out);
        } else {
            if (!job.plan)
                throw std::invalid_argument("job " + job.id + ": an end-to-end job without a plan");
            // A memory job runs the truncated model; its simulated run is device-used like every testbed run.
            const bool memoryJob = job.kind == ProfileJobKind::Memory && !job.layerVariants.empty();
            const Model runModel = memoryJob ? memoryCalibrationModel(model, job.layerVariants.front()) : model;
            if (memoryJob && std::none_of(out.batch.models.begin(), out.batch.models.end(), [&](const Model &m) {
                    return m.id == runModel.id;
                }))
                out.batch.models.push_back(runModel);
            runEndToEnd(tb, *job.plan, job.id, options.logs && !job.logFiles.empty() ? job.logFiles.front() : "",
                        cluster, runModel, out);
        }
        reportOrThrow(progress, ++done, total);
    }
    for (size_t i = 0; i < plans.size(); ++i) {
        runEndToEnd(tb, plans[i], plans[i].name.empty() ? "plan" + std::to_string(i + 1) : plans[i].name, "", cluster,
                    model, out);
        reportOrThrow(progress, ++done, total);
    }
    return out;
}

} // namespace memx
