// memx profile plan | run-simulated | augment: minimal-set profiling plans, the virtual testbed,
// interpolation-based augmentation.
#include "command.h"
#include "progress.h"
#include "searchoptions.h"

#include "memx/io/formats.h"
#include "memx/profiling/augment.h"
#include "memx/profiling/minimalset.h"
#include "memx/search/objective.h"
#include "memx/store/sqlitestore.h"
#include "memx/testbed/virtualtestbed.h"
#include "memx/util/fileio.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace memx::cli {
namespace {

constexpr const char *kDefaultProject = "memx-project.memx";

const char *kPlanUsage
    = R"txt(Usage: memx profile plan --cluster CLUSTER --model MODEL [--out DIR] [--force] [--json] [options]

Chooses the smallest set of measurements that covers the search space for prediction: per GPU type
the (TP, micro-batch) per-layer profiles to measure (the rest is interpolated as `memx profile
augment` does), plus a few end-to-end runs, with the estimated GPU-hours against running every
configuration end to end (47 s each, the MemX paper's figure). With --out, writes one folder per
job (Megatron-LM launch scripts running a few iterations with timers and memory logging; FlagScale
for heterogeneous end-to-end plans), a run.sh per job and manifest.json (memx.profilejobs/1) for
`memx profile import --format megatron --manifest DIR/manifest.json LOGDIR` or
`memx profile run-simulated --jobs DIR/manifest.json`.

Options:
  --out DIR            write the jobs and manifest.json there
  --force              overwrite existing files in DIR
  --gbs N              global batch (default: the model's)
  --tp LIST            TP degrees of the space (default 1,2,4,8)
  --mbs LIST           micro-batch sizes of the space (default 1,2,4)
  --stages LIST        stages per GPU group (default 1,2,3)
  --target T           megatron, flagscale or any: search the target's plans (the groups it
                       cannot run and the slowest ones idle, as memx search) and pick end-to-end
                       runs it launches; default: the whole space (measurements serve every
                       target), end-to-end runs that Megatron-LM or FlagScale launches
  --e2e N              end-to-end runs (default 6)
  --iterations N       timed iterations per job (default 10)
  --tp-interpolation  interpolate TP degrees between measured ones on NVLink/Infinity Fabric
                       GPUs (default: measure every needed TP degree)
  --threads N          search threads
  --max-bases N        budget of base configurations (default 500000, as memx search); a larger
                       space is narrowed step by step (group order, TP, stages, recompute,
                       dist-opt) with a note on stderr. Ctrl-C cancels (exit 130)
  --date ISO8601       date written into the scripts (default: now)
  --json               print the plan as JSON
  --attention A        attention backend of the jobs: auto, flash, fused or unfused
)txt";

const char *kRunUsage
    = R"txt(Usage: memx profile run-simulated [--project FILE] (--jobs MANIFEST | --plan FILE... | --top K)
                                  [--cluster CLUSTER --model MODEL] [--spread N] [--seed N] [--group LABEL]
                                  [--json]

Runs profiling jobs or plans on the VIRTUAL TESTBED (a simulated cluster, no GPUs) and imports the
results into the project (created when absent): per-layer profiles with origin "simulated" and
measured runs with source "virtual-testbed seed=N" (device-used peak memory). Everything it
produces is labelled simulated.

  --jobs MANIFEST   run every job of a `memx profile plan` manifest (its cluster and model)
  --plan FILE       run this plan (repeatable; needs --cluster and --model)
  --top K           search the space (with the project's profiles) and run the K fastest plans (0: none,
                    with --spread)
  --spread N        with --top: also run N plans spread across the whole space (evenly spaced in
                    the time ranking of every valid configuration, slowest included), so a
                    dataset is not only near-identical fast plans
  --tp LIST, --mbs LIST, --stages LIST   with --top: narrow the searched space
  --seed N          testbed seed (default 1): same seed, same results
  --group LABEL     group label of the runs (default testbed/<cluster name>)
  --write-logs DIR  also write each job's simulated Megatron-LM log(s) into DIR (the file names the
                    manifest expects), for `memx profile import --manifest`
  --no-import       do not write to the project

Runs that do not fit in memory fail with "out of memory" like real trials and are not stored.
Progress is drawn on stderr when it is a terminal; Ctrl-C cancels (nothing is written, exit 130).
)txt";

const char *kAugmentUsage
    = R"txt(Usage: memx profile augment [--project FILE] [--micro-batches LIST] [--tp LIST] [--json]

Adds interpolated profiles (origin "interpolated") to the project: every power-of-two (and listed)
micro-batch size strictly inside each measured range (piecewise linear per layer), then every
listed TP degree (default 1,2,4,8,16) inside each measured TP range (a + b/tp fit). Measured and
simulated profiles are the source; they are never overwritten. Earlier interpolated profiles are
replaced.
)txt";

std::string fmt(double v, int prec)
{
    std::ostringstream o;
    o << std::fixed << std::setprecision(prec) << v;
    return o.str();
}

int runPlanCmd(const std::vector<std::string> &argv)
{
    Args args(argv,
              {"cluster", "model", "out", "gbs", "tp", "mbs", "stages", "e2e", "iterations", "threads", "date",
               "target", "attention", "max-bases"},
              {"json", "force", "tp-interpolation"});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    const Cluster cluster = loadCluster(args.require("cluster"));
    const Model model = modelOption(args);
    MinimalSetOptions o;
    o.globalBatch = static_cast<int>(args.intValue("gbs", 1, 1 << 24).value_or(0));
    o.space.tensorParallel = intList(args, "tp", o.space.tensorParallel, 1, 64);
    o.space.microBatches = intList(args, "mbs", o.space.microBatches, 1, 1024);
    o.space.stagesPerGroup = intList(args, "stages", o.space.stagesPerGroup, 1, 64);
    o.target = targetOption(args);
    o.endToEndRuns = static_cast<int>(args.intValue("e2e", 0, 1000).value_or(o.endToEndRuns));
    o.timedIterations = static_cast<int>(args.intValue("iterations", 1, 100000).value_or(o.timedIterations));
    o.threads = static_cast<int>(args.intValue("threads", 1, 1024).value_or(0));
    o.tpInterpolation = args.has("tp-interpolation");
    // The same size budget as `memx search`: a space over it is narrowed (before this, the
    // 512-GPU sample enumerated every group order, grew ~400 MB/s and died of bad_alloc).
    {
        SearchRequest budget;
        budget.cluster = cluster;
        budget.model = model;
        budget.globalBatch = o.globalBatch;
        budget.space = o.space;
        const uint64_t maxBases = static_cast<uint64_t>(args.intValue("max-bases", 1, 4000000000LL).value_or(500000));
        for (const std::string &n : narrowToBudget(budget, maxBases))
            std::cerr << "note: space narrowed to " << maxBases << " base configurations: " << n << "\n";
        o.space = budget.space;
    }
    ProfilingPlan plan;
    {
        CliProgress progress("base configurations"); // Ctrl-C: the search polls it every 10 ms
        try {
            plan = planMinimalSet(cluster, model, o, progress.callback());
        } catch (const std::invalid_argument &e) {
            progress.finish();
            if (progress.interrupted()) {
                std::cerr << "cancelled (Ctrl-C): no profiling plan written\n";
                return Cancelled;
            }
            std::cerr << "error: " << e.what() << "\n";
            return Failure;
        }
    }
    std::vector<std::string> written;
    if (auto out = args.value("out")) {
        const auto files = profilingJobFiles(plan, cluster, model, args.value("date").value_or(""));
        written = writeExportFiles(files, *out, args.has("force"));
    }
    const size_t perLayer = plan.measured.size();
    const size_t e2e = plan.jobs.size() - perLayer;
    const double ratio = plan.profilingGpuHours > 0 ? plan.exhaustiveGpuHours / plan.profilingGpuHours : 0;
    if (args.has("json")) {
        nlohmann::json j = manifestToJson(plan, cluster, model);
        j.erase("cluster");
        j.erase("model");
        j["cluster"] = cluster.name;
        j["model"] = model.id;
        nlohmann::json needed = nlohmann::json::array(), measured = nlohmann::json::array();
        for (const KernelPoint &k : plan.needed)
            needed.push_back({{"device", k.device}, {"tp", k.tp}, {"microBatch", k.microBatch}});
        for (const KernelPoint &k : plan.measured)
            measured.push_back({{"device", k.device}, {"tp", k.tp}, {"microBatch", k.microBatch}});
        j["neededKernels"] = needed;
        j["measuredKernels"] = measured;
        j["naiveGridPoints"] = plan.naiveGridPoints;
        j["estimate"]["ratio"] = ratio;
        j["estimate"]["clusterGpus"] = plan.clusterGpus;
        j["estimate"]["secondsPerConfiguration"] = o.exhaustiveSecondsPerConfiguration;
        j["notes"] = plan.notes;
        j["files"] = written;
        std::cout << j.dump(2) << "\n";
        return Ok;
    }
    std::cout << "Minimal profiling set for " << model.id << " on " << cluster.name << " (" << plan.clusterGpus
              << " GPUs, global batch " << plan.globalBatch << ")\n";
    std::cout << "  space: " << plan.configurations << " valid configurations use " << plan.needed.size()
              << " per-layer kernels (device x TP x micro-batch); naive grid " << plan.naiveGridPoints << "\n";
    std::cout << "  measure " << perLayer << " per-layer profiles (rest interpolated) + " << e2e
              << " end-to-end runs = " << plan.jobs.size() << " jobs\n\n";
    std::cout << "  " << std::left << std::setw(34) << "JOB" << std::setw(6) << "GPUs" << std::right << std::setw(10)
              << "est. s"
              << "  WHAT\n";
    for (const ProfileJob &j : plan.jobs) {
        std::cout << "  " << std::left << std::setw(34) << j.id << std::setw(6) << j.gpus << std::right << std::setw(10)
                  << fmt(j.estimatedSeconds, 0) << "  ";
        if (j.kind == ProfileJobKind::PerLayer) {
            std::cout << "per-layer, layers";
            for (int n : j.layerVariants)
                std::cout << " " << n;
        } else
            std::cout << j.reason << ": " << j.plan->summary(cluster);
        std::cout << "\n";
    }
    for (const std::string &n : plan.notes)
        std::cout << "  note: " << n << "\n";
    std::cout << "\n  Profiling:  " << fmt(plan.profilingGpuHours, 2) << " GPU-hours ("
              << fmt(plan.profilingWallHours, 2) << " h of wall time, jobs one after another)\n";
    std::cout << "  Exhaustive: " << plan.configurations << " configurations x "
              << fmt(o.exhaustiveSecondsPerConfiguration, 0) << " s = " << fmt(plan.exhaustiveWallDays, 1)
              << " days of wall time, " << fmt(plan.exhaustiveGpuHours, 0) << " GPU-hours on " << plan.clusterGpus
              << " GPUs (the paper: 31,240 x 47 s = " << fmt(31240 * 47.0 / 86400, 1) << " days)\n";
    std::cout << "  Ratio:      exhaustive / minimal = " << fmt(ratio, 0) << "x\n";
    if (!written.empty())
        std::cout << "\nWrote " << written.size() << " files into " << *args.value("out") << " (manifest.json)\n";
    return Ok;
}

/// A simulated Megatron-LM log of one per-layer variant or end-to-end run (what the real job's
/// run.sh would capture), first line marking it simulated.
std::string simulatedLog(const VirtualTestbed &tb, const std::string &jobId, const std::vector<double> &iterMs,
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

int runSimulated(const std::vector<std::string> &argv)
{
    Args args(argv,
              {"project", "jobs", "plan", "top", "spread", "cluster", "model", "seed", "group", "write-logs", "threads",
               "tp", "mbs", "stages", "attention"},
              {"json", "no-import"});
    const int modes = args.has("jobs") + args.has("plan") + args.has("top");
    if (modes != 1)
        throw UsageError {"give exactly one of --jobs, --plan or --top"};
    std::vector<std::string> planFiles;
    if (args.has("plan")) {
        planFiles.push_back(args.require("plan"));
        for (const std::string &p : args.positional())
            planFiles.push_back(p);
    } else if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    const std::uint64_t seed = static_cast<std::uint64_t>(args.intValue("seed", 0, 1LL << 62).value_or(1));
    TestbedOptions to;
    to.group = args.value("group").value_or("");
    const VirtualTestbed tb(seed, to);
    const std::string project = args.value("project").value_or(kDefaultProject);

    Cluster cluster;
    Model model;
    std::vector<ProfileJob> jobs;
    std::vector<Plan> plans;
    if (auto manifestPath = args.value("jobs")) {
        ProfileManifest m = parseManifest(readTextFile(*manifestPath), *manifestPath);
        cluster = m.cluster;
        model = m.model;
        jobs = std::move(m.jobs);
    } else {
        if (!args.has("cluster") || !args.has("model"))
            throw UsageError {"--plan and --top need --cluster and --model"};
        cluster = loadCluster(args.require("cluster"));
        model = modelOption(args);
        if (args.has("plan")) {
            for (const std::string &f : planFiles)
                plans.push_back(loadPlan(f));
        } else {
            SearchRequest req;
            req.cluster = cluster;
            req.model = model;
            req.threads = static_cast<int>(args.intValue("threads", 1, 1024).value_or(0));
            if (std::filesystem::exists(project)) {
                SqliteStore store(project, false);
                req.profiles = store.profiles();
            }
            req.space.tensorParallel = intList(args, "tp", req.space.tensorParallel, 1, 64);
            req.space.microBatches = intList(args, "mbs", req.space.microBatches, 1, 1024);
            req.space.stagesPerGroup = intList(args, "stages", req.space.stagesPerGroup, 1, 64);
            const SearchResult res = runSearch(req);
            const size_t k = static_cast<size_t>(args.intValue("top", 0, 10000).value_or(5));
            const size_t spread = static_cast<size_t>(args.intValue("spread", 0, 10000).value_or(0));
            const std::vector<uint32_t> order = rank(res, ObjectiveWeights::timeOnly(), res.size());
            std::vector<uint32_t> chosen(order.begin(),
                                         order.begin() + static_cast<std::ptrdiff_t>(std::min(k, order.size())));
            // Evenly spaced ranks k .. n-1 (the slowest included); a rank is taken once.
            const size_t rest = order.size() > k ? order.size() - k : 0;
            size_t last = SIZE_MAX;
            for (size_t j = 0; j < spread && rest > 0; ++j) {
                const size_t r = k + (spread == 1 ? rest - 1 : j * (rest - 1) / (spread - 1));
                if (r != last)
                    chosen.push_back(order[r]);
                last = r;
            }
            for (size_t c = 0; c < chosen.size(); ++c) {
                Plan p = res.materialize(chosen[c]);
                p.name = (c < k ? "top" : "spread") + std::to_string(c < k ? c + 1 : c - k + 1);
                plans.push_back(std::move(p));
            }
        }
    }

    ImportBatch batch;
    batch.clusters.push_back(cluster);
    batch.models.push_back(model);
    nlohmann::json results = nlohmann::json::array();
    std::vector<std::pair<std::string, std::string>> logs; // file name -> content
    const size_t total = jobs.size() + plans.size();
    size_t done = 0, failed = 0;
    CliProgress progress("testbed jobs and runs");
    auto tick = [&]() { return progress(++done, total); };
    auto runOne = [&](const Plan &plan, const std::string &jobId, const std::string &logFile) {
        const TestbedRun r = tb.runPlan(plan, cluster, model);
        nlohmann::json j {{"job", jobId},
                          {"kind", "end-to-end"},
                          {"simulated", true},
                          {"source", tb.sourceLabel()},
                          {"plan", plan.summary(cluster)},
                          {"ok", r.ok},
                          {"peakMemoryBytes", *r.run.peakMemoryBytes}};
        if (r.ok) {
            batch.runs.push_back(r.run);
            j["runId"] = r.run.id;
            j["iterationTimeMs"] = r.run.iterationTimeMs;
            j["straggler"] = r.straggler;
            if (!logFile.empty())
                logs.push_back(
                    {logFile,
                     simulatedLog(tb, jobId, r.iterationTimesMs, 0, 0, 0, *r.run.peakMemoryBytes, plan.totalGpus())});
        } else {
            ++failed;
            j["error"] = r.error;
        }
        results.push_back(j);
    };
    bool cancelled = false;
    try {
        for (const ProfileJob &job : jobs) {
            if (job.kind == ProfileJobKind::PerLayer) {
                const LayerProfile p = tb.runProfilingJob(job, cluster, model);
                batch.profiles.push_back(p);
                results.push_back({{"job", job.id},
                                   {"kind", "per-layer"},
                                   {"simulated", true},
                                   {"source", p.source},
                                   {"device", job.device},
                                   {"tp", job.tp},
                                   {"microBatch", job.microBatch},
                                   {"layerForwardMs", p.layers[1].forwardMs},
                                   {"layerBackwardMs", p.layers[1].backwardMs}});
                // Per variant: forward/backward compute of one iteration as Megatron's timers report them.
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
                    const std::vector<double> it(static_cast<size_t>(job.warmupIterations + job.timedIterations),
                                                 f + b + opt);
                    logs.push_back({job.logFiles[v], simulatedLog(tb, job.id, it, f, b, opt, 0, job.tp)});
                }
            } else {
                runOne(*job.plan, job.id, job.logFiles.empty() ? "" : job.logFiles.front());
            }
            if (!tick()) {
                cancelled = true;
                break;
            }
        }
        for (size_t i = 0; i < plans.size() && !cancelled; ++i) {
            runOne(plans[i], plans[i].name.empty() ? "plan" + std::to_string(i + 1) : plans[i].name, "");
            if (!tick())
                cancelled = true;
        }
    } catch (const std::invalid_argument &e) {
        progress.finish();
        std::cerr << "error: " << e.what() << "\n";
        return Failure;
    }
    progress.finish();
    if (cancelled) {
        std::cerr << "cancelled: nothing written\n";
        return Cancelled;
    }
    if (auto dir = args.value("write-logs")) {
        std::filesystem::create_directories(*dir);
        for (const auto &[name, content] : logs)
            writeFileAtomically((std::filesystem::path(*dir) / name).string(), content);
    }
    if (!args.has("no-import")) {
        SqliteStore store(project, true);
        if (!writeImport(store, batch, [&](size_t, size_t) { return !progress.interrupted(); })) {
            std::cerr << "cancelled: nothing written\n";
            return Cancelled;
        }
    }
    if (args.has("json")) {
        std::cout << nlohmann::json {{"simulated", true},
                                     {"source", tb.sourceLabel()},
                                     {"project", args.has("no-import") ? nlohmann::json() : nlohmann::json(project)},
                                     {"profiles", batch.profiles.size()},
                                     {"runs", batch.runs.size()},
                                     {"failed", failed},
                                     {"logs", logs.size()},
                                     {"results", results}}
                         .dump(2)
                  << "\n";
        return Ok;
    }
    std::cout << "SIMULATED on the virtual testbed (" << tb.sourceLabel() << "), " << cluster.name << ", " << model.id
              << "\n";
    for (const auto &r : results) {
        std::cout << "  " << std::left << std::setw(34) << r["job"].get<std::string>();
        if (r["kind"] == "per-layer")
            std::cout << "per-layer  fwd " << fmt(r["layerForwardMs"].get<double>(), 3) << " ms  bwd "
                      << fmt(r["layerBackwardMs"].get<double>(), 3) << " ms per layer\n";
        else if (r["ok"].get<bool>())
            std::cout << "run  " << fmt(r["iterationTimeMs"].get<double>(), 1) << " ms/iter  peak "
                      << fmt(r["peakMemoryBytes"].get<double>() / 1073741824.0, 1) << " GiB"
                      << (r["straggler"].get<bool>() ? " (straggler)" : "") << "\n";
        else
            std::cout << "FAILED: " << r["error"].get<std::string>() << "\n";
    }
    std::cout << (args.has("no-import") ? "Not imported" : "Imported into " + project) << ": " << batch.profiles.size()
              << " simulated profile(s), " << batch.runs.size() << " simulated run(s)";
    if (failed)
        std::cout << ", " << failed << " failed (out of memory)";
    std::cout << "\n";
    return Ok;
}

int runAugment(const std::vector<std::string> &argv)
{
    Args args(argv, {"project", "micro-batches", "tp"}, {"json"});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    const std::string path = args.value("project").value_or(kDefaultProject);
    if (!std::filesystem::exists(path))
        throw LoadError(path, "", "no such project file (create one with 'memx profile import', or pass --project)");
    AugmentOptions o;
    o.microBatches = intList(args, "micro-batches", {}, 1, 1 << 20);
    o.tpDegrees = intList(args, "tp", o.tpDegrees, 1, 1024);
    SqliteStore store(path, false);
    ProfileSet sources;
    size_t replaced = 0;
    const ProfileSet stored = store.profiles();
    for (const LayerProfile &p : stored.profiles())
        if (p.origin != ProfileOrigin::Interpolated)
            sources.add(p);
    const std::vector<LayerProfile> added = augmentProfiles(sources, o);
    {
        StoreTransaction tx(store);
        replaced = store.removeProfiles(ProfileOrigin::Interpolated);
        for (const LayerProfile &p : added)
            store.putProfile(p);
        tx.commit();
    }
    if (args.has("json")) {
        nlohmann::json a = nlohmann::json::array();
        for (const LayerProfile &p : added)
            a.push_back({{"gpu", p.key.gpu},
                         {"model", p.key.model},
                         {"tp", p.key.tp},
                         {"microBatch", p.key.microBatch},
                         {"seqLength", p.key.seqLength},
                         {"source", p.source}});
        std::cout << nlohmann::json {{"project", path},
                                     {"sources", sources.size()},
                                     {"added", a},
                                     {"removedPreviousInterpolated", replaced}}
                         .dump(2)
                  << "\n";
        return Ok;
    }
    std::cout << "Augmented " << path << ": " << added.size() << " interpolated profile(s) from " << sources.size()
              << " measured/simulated (" << replaced << " earlier interpolated replaced)\n";
    for (const LayerProfile &p : added)
        std::cout << "  " << p.key.model << " " << p.key.gpu << " TP " << p.key.tp << " mbs " << p.key.microBatch
                  << "  <- " << p.source << "\n";
    return Ok;
}

CommandRegistration regPlan({"profile plan", "choose a minimal profiling set and write its jobs", kPlanUsage,
                             &runPlanCmd});
CommandRegistration regRun({"profile run-simulated", "run profiling jobs or plans on the virtual testbed (simulated)",
                            kRunUsage, &runSimulated});
CommandRegistration regAugment({"profile augment", "add interpolated profiles (micro-batch, TP) to a project",
                                kAugmentUsage, &runAugment});

} // namespace
} // namespace memx::cli
