// memx profile plan | run-simulated | augment: minimal-set profiling plans, the virtual testbed,
// interpolation-based augmentation.
#include "command.h"
#include "progress.h"
#include "searchoptions.h"

#include "memx/engine/plannedsearch.h"
#include "memx/io/formats.h"
#include "memx/profiling/augment.h"
#include "memx/profiling/minimalset.h"
#include "memx/search/objective.h"
#include "memx/store/sqlitestore.h"
#include "memx/testbed/testbedjobs.h"
#include "memx/testbed/virtualtestbed.h"
#include "memx/util/fileio.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
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
  --gpus FILE          custom GPU definitions (memx.catalogue/1) the cluster may name; repeatable
  --out DIR            write the jobs and manifest.json there
  --force              overwrite existing files in DIR
  --gbs N              global batch (default: the model's)
  --tp LIST            TP degrees of the space (default 1,2,4,8)
  --mbs LIST           micro-batch sizes of the space (default 1,2,4)
  --stages LIST        stages per GPU group (default 1,2,3)
                       (and every other search-space option of memx search: --max-mbs,
                       --recompute, --vpp, --cp, --cp-comm, --dist-opt, --dp-sharding, --radius,
                       --max-stages, --no-permute, --no-memory-split, --no-sequence-parallel,
                       --no-mixed-stages)
  --target T           megatron, flagscale or any: search the target's plans (the groups it
                       cannot run and the slowest ones idle, as memx search) and pick end-to-end
                       runs it launches; default: the whole space (measurements serve every
                       target), end-to-end runs that Megatron-LM or FlagScale launches
  --e2e N              end-to-end runs (default 6)
  --memory-layers N    memory-calibration jobs per device type on the model truncated to N
                       layers (default 2; 0: none): 1 GPU at two micro-batch sizes and the
                       node's GPUs data-parallel, with nvidia-smi sampling the device-used
                       memory; `memx profile calibrate` then fits the device's context,
                       communicator buffers and allocator reserve
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
  --top K           search the space as `memx search --project` does (the project's profiles,
                    calibration and learned predictor, the --max-bases budget) and run the K fastest
                    plans (0: none, with --spread)
  --spread N        with --top: also run N plans spread across the whole space (evenly spaced in
                    the time ranking of every valid configuration, slowest included), so a
                    dataset is not only near-identical fast plans
  --stages --tp --mbs --max-mbs --recompute --vpp --cp --cp-comm --dist-opt --dp-sharding --radius
  --max-stages --no-permute
  --no-memory-split --no-sequence-parallel   with --top: the searched space (as memx search)
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
    std::set<std::string> values {"cluster",    "gpus",    "model", "out",       "gbs",       "e2e",
                                  "iterations", "threads", "date",  "attention", "max-bases", "memory-layers"};
    values.insert(kSpaceValueOptions.begin(), kSpaceValueOptions.end());
    std::set<std::string> switches {"json", "force", "tp-interpolation"};
    switches.insert(kSpaceSwitches.begin(), kSpaceSwitches.end());
    Args args(argv, values, switches);
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    const Cluster cluster = loadClusterOption(args);
    const Model model = modelOption(args);
    MinimalSetOptions o;
    o.globalBatch = static_cast<int>(args.intValue("gbs", 1, 1 << 24).value_or(0));
    applySpaceOptions(args, o.space);
    o.target = targetOption(args);
    o.endToEndRuns = static_cast<int>(args.intValue("e2e", 0, 1000).value_or(o.endToEndRuns));
    o.memoryCalibrationLayers
        = static_cast<int>(args.intValue("memory-layers", 0, 1000000).value_or(o.memoryCalibrationLayers));
    o.timedIterations = static_cast<int>(args.intValue("iterations", 1, 100000).value_or(o.timedIterations));
    o.threads = static_cast<int>(args.intValue("threads", 1, 1024).value_or(0));
    o.tpInterpolation = args.has("tp-interpolation");
    // The planned search's size budget, as `memx search`: a space over it is narrowed (before
    // this, the 512-GPU sample enumerated every group order, grew ~400 MB/s and died of bad_alloc).
    {
        SearchRequest budget;
        budget.cluster = cluster;
        budget.model = model;
        budget.globalBatch = o.globalBatch;
        budget.space = o.space;
        const uint64_t maxBases
            = static_cast<uint64_t>(args.intValue("max-bases", 1, 4000000000LL).value_or(kDefaultMaxBases));
        for (const std::string &n : narrowToBudget(budget, maxBases))
            std::cerr << "note: space narrowed to " << maxBases << " base configurations: " << n << "\n";
        o.space = budget.space;
    }
    ProfilingPlan plan;
    {
        CliProgress progress("base configurations"); // Ctrl-C: the search polls it every 10 ms
        try {
            plan = planMinimalSet(cluster, model, o, progress.callback());
        } catch (const memx::Cancelled &) {
            progress.finish();
            std::cerr << "cancelled (Ctrl-C): no profiling plan written\n";
            return Cancelled;
        } catch (const std::invalid_argument &e) {
            progress.finish();
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
    const size_t memoryJobs = static_cast<size_t>(std::count_if(
        plan.jobs.begin(), plan.jobs.end(), [](const ProfileJob &j) { return j.kind == ProfileJobKind::Memory; }));
    const size_t e2e = plan.jobs.size() - perLayer - memoryJobs;
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
    std::cout << "  measure " << perLayer << " per-layer profiles (rest interpolated) + " << memoryJobs
              << " memory-calibration runs + " << e2e << " end-to-end runs = " << plan.jobs.size() << " jobs\n\n";
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

/// What `memx profile run-simulated` runs: a manifest's jobs, or plans (from files or the top of a search).
struct SimulatedWork {
    Cluster cluster;
    Model model;
    std::vector<ProfileJob> jobs;
    std::vector<Plan> plans;
};

/// --top K [--spread N]: the K best plans by time of the search `memx search --project` runs
/// (weights 1,0,0), then N spread evenly over the ranks after them (the slowest included).
std::vector<Plan> topAndSpreadPlans(const Args &args, const Cluster &cluster, const Model &model,
                                    const std::string &project)
{
    SearchRequest req;
    req.cluster = cluster;
    req.model = model;
    req.threads = static_cast<int>(args.intValue("threads", 1, 1024).value_or(0));
    applySpaceOptions(args, req.space);
    std::unique_ptr<SqliteStore> store;
    std::optional<SearchProject> context;
    if (std::filesystem::exists(project)) {
        store = std::make_unique<SqliteStore>(project, false);
        context = loadSearchProject(*store);
    }
    PlannedSearch planned = planSearch(plannedRequest(args, req), context ? &*context : nullptr);
    for (const std::string &n : planned.narrowed)
        std::cerr << "note: space narrowed to " << kDefaultMaxBases << " base configurations: " << n << "\n";
    {
        CliProgress progress("base configurations");
        runPlannedSearch(planned, store.get(), progress.callback());
    }
    if (planned.cancelled())
        throw memx::Cancelled();
    const SearchResult &res = planned.result;
    const size_t k = static_cast<size_t>(args.intValue("top", 0, 10000).value_or(5));
    const size_t spread = static_cast<size_t>(args.intValue("spread", 0, 10000).value_or(0));
    const std::vector<uint32_t> order = rank(res, ObjectiveWeights::timeOnly(), res.size());
    std::vector<uint32_t> chosen(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(k, order.size())));
    const size_t rest = order.size() > k ? order.size() - k : 0;
    size_t last = SIZE_MAX;
    for (size_t j = 0; j < spread && rest > 0; ++j) {
        const size_t r = k + (spread == 1 ? rest - 1 : j * (rest - 1) / (spread - 1));
        if (r != last)
            chosen.push_back(order[r]);
        last = r;
    }
    std::vector<Plan> plans;
    for (size_t c = 0; c < chosen.size(); ++c) {
        Plan p = res.materialize(chosen[c]);
        p.name = (c < k ? "top" : "spread") + std::to_string(c < k ? c + 1 : c - k + 1);
        plans.push_back(std::move(p));
    }
    return plans;
}

SimulatedWork simulatedWork(const Args &args, const std::string &project)
{
    SimulatedWork w;
    if (auto manifestPath = args.value("jobs")) {
        ProfileManifest m = parseManifest(readTextFile(*manifestPath), *manifestPath);
        w.cluster = m.cluster;
        w.model = m.model;
        w.jobs = std::move(m.jobs);
        return w;
    }
    if (!args.has("cluster") || !args.has("model"))
        throw UsageError {"--plan and --top need --cluster and --model"};
    w.cluster = loadCluster(args.require("cluster"));
    w.model = modelOption(args);
    if (args.has("plan")) {
        w.plans.push_back(loadPlan(args.require("plan")));
        for (const std::string &p : args.positional())
            w.plans.push_back(loadPlan(p));
    } else {
        w.plans = topAndSpreadPlans(args, w.cluster, w.model, project);
    }
    return w;
}

nlohmann::json resultJson(const TestbedJobResult &r)
{
    if (r.perLayer)
        return {{"job", r.job},
                {"kind", "per-layer"},
                {"simulated", true},
                {"source", r.source},
                {"device", r.device},
                {"tp", r.tp},
                {"microBatch", r.microBatch},
                {"layerForwardMs", r.layerForwardMs},
                {"layerBackwardMs", r.layerBackwardMs}};
    nlohmann::json j {{"job", r.job},
                      {"kind", "end-to-end"},
                      {"simulated", true},
                      {"source", r.source},
                      {"plan", r.plan},
                      {"ok", r.ok},
                      {"peakMemoryBytes", r.peakMemoryBytes}};
    if (r.ok) {
        j["runId"] = r.runId;
        j["iterationTimeMs"] = r.iterationTimeMs;
        j["straggler"] = r.straggler;
    } else {
        j["error"] = r.error;
    }
    return j;
}

void printSimulated(const TestbedBatch &out, const VirtualTestbed &tb, const SimulatedWork &w, const Args &args,
                    const std::string &project)
{
    if (args.has("json")) {
        nlohmann::json results = nlohmann::json::array();
        for (const TestbedJobResult &r : out.results)
            results.push_back(resultJson(r));
        std::cout << nlohmann::json {{"simulated", true},
                                     {"source", tb.sourceLabel()},
                                     {"project", args.has("no-import") ? nlohmann::json() : nlohmann::json(project)},
                                     {"profiles", out.batch.profiles.size()},
                                     {"runs", out.batch.runs.size()},
                                     {"failed", out.failed()},
                                     {"logs", out.logs.size()},
                                     {"results", results}}
                         .dump(2)
                  << "\n";
        return;
    }
    std::cout << "SIMULATED on the virtual testbed (" << tb.sourceLabel() << "), " << w.cluster.name << ", "
              << w.model.id << "\n";
    for (const TestbedJobResult &r : out.results) {
        std::cout << "  " << std::left << std::setw(34) << r.job;
        if (r.perLayer)
            std::cout << "per-layer  fwd " << fmt(r.layerForwardMs, 3) << " ms  bwd " << fmt(r.layerBackwardMs, 3)
                      << " ms per layer\n";
        else if (r.ok)
            std::cout << "run  " << fmt(r.iterationTimeMs, 1) << " ms/iter  peak "
                      << fmt(r.peakMemoryBytes / 1073741824.0, 1) << " GiB" << (r.straggler ? " (straggler)" : "")
                      << "\n";
        else
            std::cout << "FAILED: " << r.error << "\n";
    }
    std::cout << (args.has("no-import") ? "Not imported" : "Imported into " + project) << ": "
              << out.batch.profiles.size() << " simulated profile(s), " << out.batch.runs.size() << " simulated run(s)";
    if (out.failed())
        std::cout << ", " << out.failed() << " failed (out of memory)";
    std::cout << "\n";
}

int runSimulated(const std::vector<std::string> &argv)
{
    std::set<std::string> values {"project", "jobs", "plan",  "top",        "spread",  "cluster",
                                  "model",   "seed", "group", "write-logs", "threads", "attention"};
    values.insert(kSpaceValueOptions.begin(), kSpaceValueOptions.end());
    std::set<std::string> switches {"json", "no-import"};
    switches.insert(kSpaceSwitches.begin(), kSpaceSwitches.end());
    Args args(argv, values, switches);
    if (args.has("jobs") + args.has("plan") + args.has("top") != 1)
        throw UsageError {"give exactly one of --jobs, --plan or --top"};
    if (args.has("vpp") && *args.value("vpp") != "1")
        throw UsageError {"--vpp: the virtual testbed does not simulate the interleaved schedule (expected 1)"};
    if (args.has("cp") && *args.value("cp") != "1")
        throw UsageError {"--cp: the virtual testbed does not simulate context parallelism (expected 1)"};
    if (!args.has("plan") && !args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    TestbedOptions to;
    to.group = args.value("group").value_or("");
    const VirtualTestbed tb(static_cast<std::uint64_t>(args.intValue("seed", 0, 1LL << 62).value_or(1)), to);
    const std::string project = args.value("project").value_or(kDefaultProject);
    const SimulatedWork w = simulatedWork(args, project);

    TestbedBatch out;
    {
        CliProgress progress("testbed jobs and runs"); // Ctrl-C: memx::Cancelled, nothing written
        try {
            TestbedJobOptions options;
            options.logs = args.has("write-logs");
            out = runTestbedJobs(tb, w.cluster, w.model, w.jobs, w.plans, options, progress.callback());
        } catch (const std::invalid_argument &e) {
            progress.finish();
            std::cerr << "error: " << e.what() << "\n";
            return Failure;
        }
        if (auto dir = args.value("write-logs")) {
            std::filesystem::create_directories(*dir);
            for (const auto &[name, content] : out.logs)
                writeFileAtomically((std::filesystem::path(*dir) / name).string(), content);
        }
        if (!args.has("no-import")) {
            SqliteStore store(project, true);
            writeImport(store, out.batch, [&](size_t, size_t) { return !progress.interrupted(); });
        }
    }
    printSimulated(out, tb, w, args, project);
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
