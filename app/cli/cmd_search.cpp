#include "command.h"
#include "progress.h"
#include "searchoptions.h"

#include "memx/cost/costjson.h"
#include "memx/engine/plannedsearch.h"
#include "memx/io/formats.h"
#include "memx/search/objective.h"
#include "memx/search/search.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/diagnostic.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx search --cluster CLUSTER --model MODEL [options]

Enumerates heterogeneous parallel plans (pipeline depth, GPU group order, TP/DP per stage,
layer split, micro-batch, recompute per device type, distributed optimizer), prunes what
cannot run, evaluates the rest with the analytic cost model, ranks them with the weighted
product T^wt x M^wm x B^wb and keeps the 3-objective Pareto front.
  T = iteration time, M = highest per-GPU memory utilisation (device-used / capacity),
  B = coefficient of variation of per-GPU memory utilisation.

Options:
  --cluster FILE        cluster file (memx.cluster/1)
  --model ID|FILE       model preset id (e.g. llama2-7b) or model file
  --attention A         attention backend: auto (per device: flash on Ampere/Hopper/CDNA2+,
                        unfused on V100/Turing), flash, fused or unfused (default: the model's)
  --gbs N               global batch (default: the model's)
  --weights T,M,B       objective weights (default 1,0,0: time only)
  --top K               plans to show (default 10)
  --threads N           worker threads (default: all cores)
  --json                full JSON: counts, timings, top-K plans with per-GPU memory, Pareto front
  --project FILE        use the project's per-layer profiles, its calibration ('memx profile
                        calibrate') and, when 'memx train' stored one, its learned predictor (T and
                        memory corrected, spreads, [risk of OOM], [EXTRAPOLATING] for plans unlike
                        every training run), with the project's prediction cache; without it: the
                        analytic model. The same planned search as the workbench's
  --no-cache            with --project: do not read or write the prediction cache and the
                        stored result of an identical earlier search
  Search space (comma-separated lists; defaults in docs/search.md):
  --stages LIST         pipeline stages per GPU group (default 1,2,3)
  --tp LIST             tensor-parallel degrees (default 1,2,4,8)
  --mbs LIST            micro-batch sizes (default 1,2,4)
  --max-mbs N           largest micro-batch of any replica (default 32)
  --recompute LIST      none,selective,full (default all three, chosen per device type)
  --dist-opt LIST       off,on (default both)
  --radius N            layer-split neighbourhood: layers moved across a boundary (default 1)
  --no-permute          keep the cluster file's group order along the pipeline
  --no-memory-split     skip the memory-aware layer split
  --max-stages N        cap on the pipeline depth
  --sequence-parallel   plans use sequence parallelism
  --max-bases N         budget of base configurations (default 500000); a larger space is
                        narrowed step by step (group order, TP, stages, recompute, dist-opt)
                        and the steps are reported
A progress bar is drawn on stderr when it is a terminal; Ctrl-C cancels and prints partial counts.
)";


std::string fmtBytesGiB(double b)
{
    std::ostringstream o;
    o << std::fixed << std::setprecision(1) << b / 1073741824.0;
    return o.str();
}

/// What to try when nothing survived, from the reason most candidates were pruned for (the old
/// fixed "try recompute" was wrong when, e.g., every group had fewer layers than stages).
std::string noPlanHint(const PruneCounts &p, size_t groups, int layers)
{
    const uint64_t most = std::max({p.divisibility, p.microBatchLimit, p.layers, p.outOfMemory});
    if (most == 0)
        return "the search space is empty; widen --stages, --tp or --mbs";
    if (most == p.outOfMemory)
        return "every candidate runs out of memory; try recompute, a smaller micro-batch, the distributed "
               "optimizer or more GPUs";
    if (most == p.layers) {
        if (groups > static_cast<size_t>(layers))
            return "every pipeline has at least one stage per node group, and the cluster's " + std::to_string(groups)
                + " groups are more than the model's " + std::to_string(layers)
                + " layers; use a cluster with fewer groups (larger nodes) or a deeper model";
        return "no layer split gives every stage between 1 and " + std::to_string(kMaxStageLayers)
            + " layers; try other --stages per group";
    }
    if (most == p.microBatchLimit)
        return "replicas would need micro-batches over --max-mbs; try a smaller --gbs or micro-batch";
    return "the global batch, micro-batches and TP degrees do not divide; try another --gbs, --mbs or --tp";
}

/// What `memx search` was asked for, besides the planned search itself.
struct SearchArgs {
    SearchRequest request;
    PlannedSearchOptions options;
    Objective objective;
    size_t topK = 10;
    bool json = false;
    std::unique_ptr<SqliteStore> store; ///< the --project file (its caches)
    std::optional<SearchProject> project;
};

SearchArgs parseSearchArgs(const std::vector<std::string> &argv)
{
    std::set<std::string> values {"cluster", "model", "gbs", "weights", "top", "threads", "max-bases", "project"};
    values.insert(kSpaceValueOptions.begin(), kSpaceValueOptions.end());
    values.insert(kModelValueOptions.begin(), kModelValueOptions.end());
    std::set<std::string> switches {"json", "no-cache"};
    switches.insert(kSpaceSwitches.begin(), kSpaceSwitches.end());
    Args args(argv, values, switches);
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    SearchArgs a;
    a.request.cluster = loadCluster(args.require("cluster"));
    if (auto project = args.value("project")) {
        if (!std::filesystem::exists(*project))
            throw LoadError(*project, "", "no such project file");
        a.store = std::make_unique<SqliteStore>(*project, false);
        a.project = loadSearchProject(*a.store);
    }
    a.request.model = modelOption(args, a.store.get());
    a.request.globalBatch = static_cast<int>(args.intValue("gbs", 1, 1 << 24).value_or(0));
    a.request.threads = static_cast<int>(args.intValue("threads", 1, 1024).value_or(0));
    applySpaceOptions(args, a.request.space);
    a.topK = static_cast<size_t>(args.intValue("top", 1, 100000).value_or(10));
    a.objective = weightsOption(args, Objective {});
    a.options.maxBases = static_cast<uint64_t>(args.intValue("max-bases", 1, 4000000000LL).value_or(kDefaultMaxBases));
    a.options.useCache = !args.has("no-cache");
    a.json = args.has("json");
    return a;
}

/// Ranking and the Pareto front of a finished search, timed.
struct Ranked {
    std::vector<uint32_t> top, front;
    std::vector<double> scores;
    double rankMs = 0, paretoMs = 0;
};

Ranked rankResult(const SearchResult &res, const Objective &obj, size_t topK)
{
    Ranked r;
    const auto r0 = std::chrono::steady_clock::now();
    r.top = rank(res, obj, topK);
    const auto r1 = std::chrono::steady_clock::now();
    r.front = paretoFront(res);
    const auto r2 = std::chrono::steady_clock::now();
    r.rankMs = std::chrono::duration<double, std::milli>(r1 - r0).count();
    r.paretoMs = std::chrono::duration<double, std::milli>(r2 - r1).count();
    r.scores = logScores(metricsOf(res), obj);
    return r;
}

nlohmann::json learnedJson(const PlannedSearch &s)
{
    const LearnedSearchStats &st = s.learned;
    return {{"cacheHits", st.cacheHits},
            {"predicted", st.predicted},
            {"hitRate", st.hitRate()},
            {"cacheUsed", s.cacheUsed},
            {"resultFromCache", s.resultFromCache},
            {"signatureMs", st.signatureMs},
            {"predictMs", st.predictMs},
            {"totalMs", st.totalMs}};
}

int printJson(const PlannedSearch &s, const Ranked &rk, const Objective &obj)
{
    const SearchRequest &req = s.request;
    const SearchResult &res = s.result;
    const ProfileSet *profiles = req.profiles.empty() ? nullptr : &req.profiles;
    nlohmann::json j;
    j["cluster"] = req.cluster.name;
    j["model"] = req.model.id;
    j["globalBatch"] = res.globalBatch;
    j["weights"] = {obj.wt, obj.wm, obj.wb};
    j["cancelled"] = res.cancelled;
    j["narrowed"] = s.narrowed;
    j["counts"] = {{"enumerated", res.enumerated},
                   {"evaluated", res.evaluated},
                   {"pruned",
                    {{"divisibility", res.pruned.divisibility},
                     {"microBatchLimit", res.pruned.microBatchLimit},
                     {"layers", res.pruned.layers},
                     {"outOfMemory", res.pruned.outOfMemory},
                     {"duplicates", res.pruned.duplicates},
                     {"total", res.pruned.total()}}},
                   {"paretoFront", rk.front.size()}};
    j["timingsMs"] = {{"enumerateEvaluate", res.enumerateEvaluateMs}, {"rank", rk.rankMs}, {"pareto", rk.paretoMs}};
    j["threads"] = res.threads;
    j["predictor"] = res.predictor;
    j["attention"] = {{"model", toString(req.model.training.attention)}};
    for (const GpuSpec &d : req.cluster.devices)
        j["attention"]["resolved"][d.id] = toString(resolveAttention(req.model, d));
    if (s.usesPredictor())
        j["learned"] = learnedJson(s);
    j["metrics"] = {{"T", "iteration time, ms"},
                    {"M", "highest per-GPU device-used memory / capacity"},
                    {"B", "coefficient of variation of per-GPU memory utilisation"},
                    {"score", "exp(sum_k w_k log(X_k / max X_k)), lower is better"}};
    nlohmann::json tops = nlohmann::json::array();
    for (size_t k = 0; k < rk.top.size(); ++k) {
        const uint32_t i = rk.top[k];
        const Plan plan = res.materialize(i);
        const PlanEstimate est = estimatePlan(plan, req.cluster, req.model, profiles, req.cost);
        const PlanFigures f = planFigures(res, i);
        tops.push_back({{"rank", k + 1},
                        {"index", i},
                        {"T", f.timeMs},
                        {"M", f.peakMemory},
                        {"B", f.imbalance},
                        {"score", std::exp(rk.scores[i])},
                        {"summary", plan.summary(req.cluster)},
                        {"plan", toJson(plan)},
                        {"estimate", toJson(est)}});
        if (f.learned) {
            tops.back()["timeSpread"] = f.timeSpread;
            tops.back()["memorySpread"] = f.memSpread;
            tops.back()["oomRisk"] = f.oomRisk;
            tops.back()["extrapolating"] = f.extrapolating;
        }
    }
    j["top"] = tops;
    nlohmann::json fj = nlohmann::json::array();
    for (uint32_t i : rk.front)
        fj.push_back({{"index", i},
                      {"T", res.timeMs[i]},
                      {"M", res.peakMemory[i]},
                      {"B", res.imbalance[i]},
                      {"score", std::exp(rk.scores[i])},
                      {"summary", res.materialize(i).summary(req.cluster)}});
    j["paretoFront"] = fj;
    std::cout << j.dump(2) << "\n";
    return res.cancelled ? Cancelled : Ok;
}

void printHeader(const PlannedSearch &s, const Ranked &rk, const Objective &obj)
{
    const SearchRequest &req = s.request;
    const SearchResult &res = s.result;
    std::cout << "Search: " << req.model.id << " (gbs " << res.globalBatch << ") on \"" << req.cluster.name << "\""
              << (res.cancelled ? "  [CANCELLED: partial results]" : "") << "\n";
    std::cout << "  attention " << toString(req.model.training.attention) << ":";
    for (const GpuSpec &d : req.cluster.devices)
        std::cout << " " << d.id << "=" << toString(resolveAttention(req.model, d));
    std::cout << "\n";
    std::cout << "  enumerated " << res.enumerated << ", evaluated (fit in memory) " << res.evaluated << ", pruned "
              << res.pruned.total() << " (divisibility " << res.pruned.divisibility << ", micro-batch limit "
              << res.pruned.microBatchLimit << ", layers " << res.pruned.layers << ", out of memory "
              << res.pruned.outOfMemory << ", duplicates " << res.pruned.duplicates << ")\n";
    std::cout << std::fixed << std::setprecision(1) << "  " << res.enumerateEvaluateMs << " ms enumerate+evaluate, "
              << std::setprecision(2) << rk.rankMs << " ms rank, " << rk.paretoMs << " ms Pareto (" << rk.front.size()
              << " plans), " << res.threads << " threads\n";
    std::cout << "  predictor: " << res.predictor;
    if (s.resultFromCache)
        std::cout << "; the whole result of an identical earlier search (project's search cache, " << res.size()
                  << " configurations)" << std::setprecision(2);
    else if (s.usesPredictor() && !res.cancelled)
        std::cout << std::setprecision(1) << "; " << s.learned.predicted << " predicted, " << s.learned.cacheHits
                  << " from the prediction cache (hit rate " << 100.0 * s.learned.hitRate() << "%"
                  << (s.cacheUsed ? "" : ", cache off") << "), " << s.learned.totalMs << " ms" << std::setprecision(2);
    std::cout << "\n";
    std::cout << "  weights T,M,B = " << obj.wt << "," << obj.wm << "," << obj.wb
              << "   M = peak device-used memory / capacity, B = CV of per-GPU utilisation\n\n";
}

int printText(const PlannedSearch &s, const Ranked &rk, const Objective &obj)
{
    const SearchRequest &req = s.request;
    const SearchResult &res = s.result;
    printHeader(s, rk, obj);
    if (rk.top.empty()) {
        std::cout << "  no plan fits this cluster; "
                  << noPlanHint(res.pruned, req.cluster.groups.size(), req.model.shape.layers) << "\n";
        return res.cancelled ? Cancelled : Failure;
    }
    std::cout << "  " << std::right << std::setw(4) << "#" << std::setw(11) << "T ms" << std::setw(8) << "M"
              << std::setw(8) << "B" << std::setw(9) << "score" << std::setw(8) << "peakGiB"
              << "  plan\n";
    for (size_t k = 0; k < rk.top.size(); ++k) {
        const uint32_t i = rk.top[k];
        const PlanFigures f = planFigures(res, i);
        const Plan plan = res.materialize(i);
        std::cout << "  " << std::setw(4) << k + 1 << std::setw(11) << std::setprecision(1) << f.timeMs << std::setw(8)
                  << std::setprecision(3) << f.peakMemory << std::setw(8) << f.imbalance << std::setw(9)
                  << std::setprecision(4) << std::exp(rk.scores[i]) << std::setw(8) << fmtBytesGiB(f.peakBytes) << "  "
                  << plan.summary(req.cluster) << (plan.distributedOptimizer ? " dist-opt" : "")
                  << (f.oomRisk ? "  [risk of OOM]" : "") << (f.extrapolating ? "  [EXTRAPOLATING]" : "") << "\n";
    }
    return res.cancelled ? Cancelled : Ok;
}

int run(const std::vector<std::string> &argv)
{
    SearchArgs a = parseSearchArgs(argv);
    PlannedSearch s = planSearch(std::move(a.request), a.project ? &*a.project : nullptr, a.options);
    if (!a.json)
        for (const std::string &n : s.narrowed)
            std::cerr << "note: space narrowed to " << a.options.maxBases << " base configurations: " << n << "\n";
    try {
        CliProgress progress("base configurations");
        runPlannedSearch(s, a.store.get(), progress.callback(), [&](PlannedSearchPhase phase) {
            progress.setUnit(phase == PlannedSearchPhase::Search ? "base configurations" : "configurations predicted");
        });
    } catch (const std::invalid_argument &e) {
        std::cerr << "error: " << e.what() << "\n";
        return Failure;
    }
    for (const Diagnostic &w : s.warnings)
        std::cerr << "warning: " << w.toString() << "\n";
    const Ranked rk = rankResult(s.result, a.objective, a.topK);
    return a.json ? printJson(s, rk, a.objective) : printText(s, rk, a.objective);
}

CommandRegistration reg({"search", "search heterogeneous parallel plans: rank by T/M/B, Pareto front", kUsage, &run});

} // namespace
} // namespace memx::cli
