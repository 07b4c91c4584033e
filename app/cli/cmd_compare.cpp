#include "command.h"
#include "progress.h"
#include "searchoptions.h"

#include "memx/engine/plannedcompare.h"
#include "memx/engine/plannedsearch.h"
#include "memx/evaluation/compare.h"
#include "memx/evaluation/measuredcompare.h"
#include "memx/io/formats.h"
#include "memx/predict/projectpredictor.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/diagnostic.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx compare --cluster CLUSTER --model MODEL [options]
       memx compare --measured PROJECT [--json] [--out FILE]

--measured: judges every method's own cost model on the measured runs of a project (memx profile
import): MemX's analytic model (with the project's profiles and calibration) and the published
planners Metis, AMP, Sailor and Galvatron re-implemented from their papers; per hardware group
and overall: time / memory MAPE, and within each set of alternatives (same cluster, model and
global batch) Kendall tau, Top-1 and regret under the time and the T x M ranking, and the OOM
verdicts (measured OOM predicted to fit, ran but predicted not to fit). Progress and Ctrl-C as
below.

Compares MemX with four baselines built from the same engine and with four published planners
re-implemented from their papers, each with its own search space and cost model
(docs/evaluation.md): metis, amp, sailor, galvatron. "pred T" is MemX's analytic estimate of a
method's pick, "own T" a published planner's own prediction of it. The engine's baselines:
  memx           full space, weights T,M,B (default 1,0.5,0.5), learned predictor with --project
  time-only      baseline 1 (Metis/AMP-style): compute-proportional split, homogeneous recompute,
                 memory only as a hard limit, weights 1,0,0
  uniform-split  baseline 2: uniform layer split, homogeneous recompute, weights 1,0,0
  analytic       baseline 3: MemX's space and weights, analytic cost model (no learning)
  exhaustive-profiling  baseline 4: profile every valid configuration (cost = count x 47 s)
Ground truth: the union of every method's top-N plans is run on the virtual testbed (fixed seed)
and ranked by measured time and by measured T^wt x M^wm x B^wb; a method "found the true Top-1"
when its pick is the measured best of those candidates.

Options:
  --cluster FILE        cluster file (memx.cluster/1)
  --gpus FILE           custom GPU definitions (memx.catalogue/1, e.g. sample_gpus/) the cluster
                        may name; repeatable
  --model ID|FILE       model preset id or model file
  --attention A         attention backend: auto (per device: flash on Ampere/Hopper/CDNA2+,
                        unfused on V100/Turing), flash, fused or unfused (default: the model's)
  --gbs N               global batch (default: the model's)
  --weights T,M,B       MemX's weights (default 1,0.5,0.5)
  --project FILE        per-layer profiles and learned predictor of a project (memx train)
  --candidates N        top-N plans each method contributes to the ground truth (default 100)
  --seed N              virtual testbed seed (default 1)
  --seconds-per-run S   cost of one end-to-end profiling run for baseline 4 (default 47)
  --threads N           search threads (default: all cores)
  --json                JSON report (memx.compare/1) instead of the table
  --out FILE            also write the JSON report to FILE (atomically)
  Search space (as memx search): --stages --tp --mbs --max-mbs --recompute --vpp --cp --cp-comm
  --dist-opt --dp-sharding --radius
  --max-stages --no-permute --no-mixed-stages --max-bases N (default 500000)
  --target T            launch target of every method: megatron, flagscale or any (default:
                        from the cluster, docs/search.md); --idle-groups N as memx search
A progress bar is drawn on stderr when it is a terminal; Ctrl-C cancels (nothing is written,
exit 130).
)";

std::string fixed(double v, int digits)
{
    std::ostringstream o;
    o << std::fixed << std::setprecision(digits) << v;
    return o.str();
}

std::string duration(double ms)
{
    const double s = ms / 1000.0;
    if (s < 120)
        return fixed(s < 10 ? ms : s, s < 10 ? 1 : 1) + (s < 10 ? " ms" : " s");
    if (s < 7200)
        return fixed(s / 60, 1) + " min";
    if (s < 172800)
        return fixed(s / 3600, 1) + " h";
    return fixed(s / 86400, 1) + " days";
}

void printReport(const CompareReport &report, const CompareRequest &req)
{
    const ObjectiveWeights w = report.memxWeights;
    std::cout << "Compare: " << req.search.model.id << " on \"" << req.search.cluster.name << "\" ("
              << req.search.cluster.totalGpus() << " GPUs), MemX weights T,M,B = " << fixed(w.time, 2) << ','
              << fixed(w.memory, 2) << ',' << fixed(w.balance, 2) << "\n";
    size_t ok = 0;
    for (const TruthCandidate &c : report.truth.candidates)
        ok += c.ok ? 1 : 0;
    std::cout << "  ground truth: " << report.truth.candidates.size()
              << " candidate plans run on the virtual testbed (seed " << req.testbedSeed << "), " << ok << " ran, "
              << report.truth.candidates.size() - ok << " out of memory, " << fixed(report.truth.testbedMs, 0)
              << " ms\n";
    std::cout << "  target " << toString(report.target) << " (" << report.targetReason << ")\n";
    for (const std::string &n : report.notes)
        std::cout << "  note: " << n << "\n";
    std::cout << "\n";
    std::cout << std::left << std::setw(22) << "method" << std::right << std::setw(11) << "pred T ms" << std::setw(11)
              << "own T ms" << std::setw(11) << "meas T ms" << std::setw(8) << "meas M" << std::setw(8) << "meas B"
              << std::setw(14) << "search" << std::setw(10) << "configs" << std::setw(8) << "T top1" << std::setw(9)
              << "MB top1" << std::setw(9) << "T regr" << std::setw(9) << "MB regr"
              << "\n";
    for (const MethodOutcome &o : report.methods) {
        std::cout << std::left << std::setw(22) << o.id << std::right << std::setw(11)
                  << (o.hasPlan ? fixed(o.predictedTimeMs, 1) : std::string("-")) << std::setw(11)
                  << (o.published && o.hasPlan ? fixed(o.ownTimeMs, 1) : std::string("-")) << std::setw(11)
                  << (o.measuredOk ? fixed(o.measuredTimeMs, 1) : std::string(o.hasPlan ? "OOM" : "-")) << std::setw(8)
                  << (o.measuredOk ? fixed(o.measuredPeak, 3) : std::string("-")) << std::setw(8)
                  << (o.measuredOk ? fixed(o.measuredImbalance, 3) : std::string("-")) << std::setw(14)
                  << duration(o.searchMs) << std::setw(10) << o.validConfigs << std::setw(8)
                  << (o.top1Time       ? "yes"
                          : o.timeRank ? "#" + std::to_string(o.timeRank)
                                       : std::string("-"))
                  << std::setw(9)
                  << (o.top1MemoryBalance       ? "yes"
                          : o.memoryBalanceRank ? "#" + std::to_string(o.memoryBalanceRank)
                                                : std::string("-"))
                  << std::setw(9) << (o.measuredOk ? fixed(o.timeRegretPct, 1) + "%" : std::string("-")) << std::setw(9)
                  << (o.measuredOk ? fixed(o.memoryBalanceRegretPct, 1) + "%" : std::string("-")) << "\n";
    }
    std::cout << "\nPlans:\n";
    for (const MethodOutcome &o : report.methods) {
        if (o.hasPlan)
            std::cout << "  " << std::left << std::setw(22) << o.id << std::right << o.plan.summary(req.search.cluster)
                      << (o.measuredOk ? "" : "  [testbed: " + o.measuredError + "]") << "\n";
        else if (o.method == CompareMethod::Exhaustive)
            std::cout << "  " << std::left << std::setw(22) << o.id << std::right << "same as ground truth (profiles "
                      << o.validConfigs << " configurations x " << fixed(req.secondsPerProfiledRun, 0)
                      << " s = " << duration(o.profilingSeconds * 1000) << ")\n";
        else
            std::cout << "  " << std::left << std::setw(22) << o.id << std::right
                      << (o.refusal.empty() ? std::string("no valid plan") : "no plan: " + o.refusal) << "\n";
        for (const std::string &n : o.notes)
            std::cout << "  " << std::setw(22) << ""
                      << "note: " << n << "\n";
    }
    if (!report.truth.timeOrder.empty()) {
        std::cout << "  true best by time:            "
                  << report.truth.candidates[report.truth.timeOrder.front()].plan.summary(req.search.cluster) << "\n";
        std::cout << "  true best by memory-balance:  "
                  << report.truth.candidates[report.truth.memoryBalanceOrder.front()].plan.summary(req.search.cluster)
                  << "\n";
    }
}

int runMeasured(const std::vector<std::string> &argv)
{
    Args args(argv, {"measured", "out"}, {"json"});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    const std::string path = *args.value("measured");
    if (!std::filesystem::exists(path))
        throw LoadError(path, "", "no such project file (import measured runs with 'memx profile import')");
    SqliteStore store(path, false);
    const CostOptions cost;
    std::vector<std::string> notes;
    const std::vector<TrainingSample> samples = samplesFromStore(store, cost, &notes);
    const ProfileSet profiles = store.profiles();
    MeasuredComparison c;
    try {
        CliProgress progress("runs");
        c = compareOnMeasuredRuns(store.runs(), samples, projectModels(store), profiles.empty() ? nullptr : &profiles,
                                  cost, progress.callback());
    } catch (const memx::Cancelled &) {
        std::cerr << "cancelled: nothing written\n";
        return Cancelled;
    }
    c.notes.insert(c.notes.begin(), notes.begin(), notes.end());
    const nlohmann::json j = toJson(c);
    if (auto out = args.value("out"))
        saveJson(j, *out);
    if (args.has("json"))
        std::cout << j.dump(2) << "\n";
    else
        std::cout << formatMeasuredComparison(c, std::filesystem::path(path).filename().string());
    return Ok;
}

int run(const std::vector<std::string> &argv)
{
    if (std::find(argv.begin(), argv.end(), "--measured") != argv.end())
        return runMeasured(argv);
    std::set<std::string> values {"cluster",    "gpus", "model",           "gbs",     "weights", "project",
                                  "candidates", "seed", "seconds-per-run", "threads", "out",     "max-bases"};
    values.insert(kSpaceValueOptions.begin(), kSpaceValueOptions.end());
    values.insert(kModelValueOptions.begin(), kModelValueOptions.end());
    std::set<std::string> switches {"json"};
    switches.insert(kSpaceSwitches.begin(), kSpaceSwitches.end());
    Args args(argv, values, switches);
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    SearchRequest search;
    search.cluster = loadClusterOption(args);
    std::unique_ptr<SqliteStore> store;
    std::optional<SearchProject> project;
    if (auto path = args.value("project")) {
        if (!std::filesystem::exists(*path))
            throw LoadError(*path, "", "no such project file");
        store = std::make_unique<SqliteStore>(*path, false);
        project = loadSearchProject(*store);
    }
    search.model = modelOption(args, store.get());
    search.globalBatch = static_cast<int>(args.intValue("gbs", 1, 1 << 24).value_or(0));
    search.threads = static_cast<int>(args.intValue("threads", 1, 1024).value_or(0));
    applySpaceOptions(args, search.space);
    PlannedSearchOptions options;
    options.maxBases = static_cast<uint64_t>(args.intValue("max-bases", 1, 4000000000LL).value_or(kDefaultMaxBases));
    options.useCache = false; // compare runs its own searches (the planned search only plans them)
    // The planned search's budget, profiles, calibration and predictor: MemX's method is the
    // search `memx search --project` runs.
    const PlannedSearch planned = planSearch(plannedRequest(args, search), project ? &*project : nullptr, options);
    const std::vector<std::string> &narrowed = planned.narrowed;
    for (const std::string &n : narrowed)
        std::cerr << "note: space narrowed to " << options.maxBases << " base configurations: " << n << "\n";
    CompareRequest req = compareRequestFor(planned);
    req.memxWeights = weightsOption(args);
    req.candidatesPerMethod = static_cast<size_t>(args.intValue("candidates", 1, 100000).value_or(100));
    req.testbedSeed = static_cast<uint64_t>(args.intValue("seed", 0, 1LL << 62).value_or(1));
    req.secondsPerProfiledRun = static_cast<double>(args.intValue("seconds-per-run", 1, 1000000).value_or(47));
    if (planned.predictor)
        planned.predictor->setThreads(req.search.threads);

    CompareReport report;
    try {
        CliProgress progress("thousandths (searches, then testbed runs)");
        report = runCompare(req, progress.callback());
    } catch (const std::invalid_argument &e) {
        std::cerr << "error: " << e.what() << "\n";
        return Failure;
    }
    if (report.cancelled) {
        std::cerr << "cancelled: nothing written\n";
        return Cancelled;
    }
    for (const std::string &n : narrowed)
        report.notes.push_back("space narrowed: " + n);
    const nlohmann::json j = toJson(report, req.search.cluster);
    if (auto out = args.value("out"))
        saveJson(j, *out);
    if (args.has("json")) {
        std::cout << j.dump(2) << "\n";
        return Ok;
    }

    printReport(report, req);
    return Ok;
}

CommandRegistration reg({"compare", "compare MemX with time-only, uniform-split, analytic and exhaustive baselines",
                         kUsage, &run});

} // namespace
} // namespace memx::cli
