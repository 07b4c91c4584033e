#include "command.h"
#include "progress.h"
#include "searchoptions.h"

#include "memx/cost/costjson.h"
#include "memx/engine/plannedsearch.h"
#include "memx/io/formats.h"
#include "memx/predict/learnedsearch.h"
#include "memx/predict/projectpredictor.h"
#include "memx/predict/searchresultcache.h"
#include "memx/search/objective.h"
#include "memx/search/plannedsearch.h"
#include "memx/search/search.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/diagnostic.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx search --cluster CLUSTER --model MODEL [options]

Enumerates heterogeneous parallel plans (pipeline depth, GPU group order, TP/DP per stage,
layer split, micro-batch, recompute per device type, distributed optimizer, mixed-type
stages, idle node groups) that the launch target runs, prunes what cannot run, evaluates the
rest with the analytic cost model, ranks them with the weighted product T^wt x M^wm x B^wb and
keeps the 3-objective Pareto front. When nothing fits it says why and which batch sizes do.
  T = iteration time, M = highest per-GPU memory utilisation (device-used / capacity),
  B = coefficient of variation of per-GPU memory utilisation.

Options:
  --cluster FILE        cluster file (memx.cluster/1)
  --gpus FILE           custom GPU definitions (memx.catalogue/1, e.g. sample_gpus/) the cluster
                        may name; repeatable
  --model ID|FILE       model preset id (e.g. llama2-7b) or model file
  --attention A         attention backend: auto (per device: flash on Ampere/Hopper/CDNA2+,
                        unfused on V100/Turing), flash, fused or unfused (default: the model's)
  --gbs N               global batch (default: the model's)
  --weights T,M,B       objective weights (default 1,0.5,0.5; 1,0,0 ranks by time alone)
  --top K               plans to show (default 10)
  --threads N           worker threads (default: all cores)
  --json                full JSON: counts, timings, top-K plans with per-GPU memory, Pareto front
  --project FILE        use the project's per-layer profiles and, when 'memx train' stored one,
                        its learned predictor (T and memory corrected, confidence, risk of OOM),
                        with the project's prediction cache; without it: the analytic model
  --no-cache            with --project: do not read or write the prediction cache and the
                        stored result of an identical earlier search
  Search space (comma-separated lists; defaults in docs/search.md):
  --stages LIST         pipeline stages per GPU group (default 1,2,3)
  --tp LIST             tensor-parallel degrees (default 1,2,4,8)
  --mbs LIST            micro-batch sizes (default 1,2,4)
  --max-mbs N           largest micro-batch of any replica (default 32)
  --recompute LIST      none,selective,full (default all three, chosen per device type)
  --no-partial-recompute  full recompute of whole stages only (default: each fitting plan with
                        full recompute is also tried with the fewest recomputed layers per stage
                        that fit - Megatron's --recompute-method block --recompute-num-layers k)
  --vpp LIST            model chunks per pipeline rank, the interleaved 1F1B schedule, e.g.
                        1,2,4 (default 1; a value > 1 applies to pipelines of 3+ stages whose
                        micro-batches come in groups of the stage count, whole chunks per stage)
  --cp LIST             context-parallel sizes, e.g. 1,2,4,8 (default 1): a stage's DP group of
                        d TP groups becomes d / cp replicas of TP x CP GPUs of one node, each
                        holding seq / cp tokens (long sequences); not with mixed stages
  --cp-comm C           the CP exchange: p2p (ring attention, default), all_gather or a2a
  --dist-opt LIST       off,on (default both; the same as --dp-sharding none,optim)
  --dp-sharding LIST    data-parallel sharding to search: none, optim (the distributed
                        optimizer), optim_grads, optim_grads_params (Megatron-FSDP: gradients,
                        or gradients and weights, sharded; single-stage plans only), or all
                        (default none,optim)
  --radius N            layer-split neighbourhood: layers moved across a boundary (default 1)
  --no-permute          keep the cluster file's group order along the pipeline
  --no-memory-split     skip the memory-aware layer split
  --max-stages N        cap on the pipeline depth
  --no-sequence-parallel  plans without sequence parallelism (default: on wherever TP > 1;
                        docs/search.md: it dominates TP without it in the cost model)
  --no-mixed-stages     every stage on one node group (no DP group mixing GPU types)
  --round-batch         accept the nearest global batch each plan can run: its micro-batch
                        count rounded (a tie rounds up) instead of pruning it for divisibility;
                        the table and --json report every plan's global batch
  --target T            launch target: megatron, flagscale or any (the cost model's whole
                        space, plans marked with their launchers or "no launcher"); default:
                        from the cluster (one device type: megatron; types FlagScale runs:
                        flagscale, the groups it cannot run idle; docs/search.md)
  --idle-groups N       the slowest N node groups may also stay idle, each one more subset
                        searched (default 2; 0: only the groups the target cannot run idle)
  --baseline FILE       what-if: the cluster before an edit (e.g. one node fewer); when CLUSTER
                        holds it, its plans (the added nodes idle) are searched too - with
                        --project they come back from the project's caches
  --max-bases N         budget of base configurations (default 500000); a larger space is
                        narrowed step by step (mixed stages, group order, TP, stages,
                        recompute, dist-opt) and the steps are reported
A progress bar is drawn on stderr when it is a terminal; Ctrl-C cancels and prints partial counts.
)";

std::string fmtBytesGiB(double b)
{
    std::ostringstream o;
    o << std::fixed << std::setprecision(1) << b / 1073741824.0;
    return o.str();
}

nlohmann::json plannedJson(const PlannedSearchResult &p)
{
    nlohmann::json j;
    j["target"] = {{"name", toString(p.target)}, {"fromCluster", p.targetFromCluster}, {"reason", p.targetReason}};
    nlohmann::json subsets = nlohmann::json::array();
    for (const IdleSubset &s : p.subsets)
        subsets.push_back({{"label", s.label},
                           {"usedNodes", s.usedNodes},
                           {"configurations", s.evaluated},
                           {"kept", s.count},
                           {"enumerated", s.enumerated},
                           {"bestTimeMs", s.bestTimeMs}});
    j["subsets"] = subsets;
    j["notes"] = p.notes;
    if (p.advice)
        j["advice"] = {{"reason", p.advice->reason},
                       {"text", p.advice->text},
                       {"globalBatches", p.advice->globalBatches},
                       {"microBatches", p.advice->microBatches}};
    else
        j["advice"] = nullptr;
    return j;
}

/// The launchers of plan `i`: the target when there is one, else whichever runs it.
std::vector<LaunchTarget> launchersOfPlan(const PlannedSearchResult &p, const Plan &plan)
{
    if (p.target != LaunchTarget::Any)
        return {p.target};
    return launchersOf(plan, p.result.cluster, p.result.model);
}

/// The ranking of a finished search, as printed.
struct Shown {
    ObjectiveWeights obj;
    std::vector<uint32_t> top, front;
    std::vector<double> scores;
    double rankMs = 0, paretoMs = 0;
};

/// Write the JSON report (memx search --json).
int printJson(const PlannedSearch &planned, const Shown &shown)
{
    const SearchRequest &req = planned.request.search;
    const SearchResult &res = planned.result;
    const LearnedSearchStats &learnedStats = planned.learned;
    const bool learned = planned.usesPredictor();
    const std::vector<uint32_t> &top = shown.top, &front = shown.front;
    const std::vector<double> &scores = shown.scores;
    const ObjectiveWeights &obj = shown.obj;
    const ProfileSet *profiles = req.profiles.empty() ? nullptr : &req.profiles;
    nlohmann::json j = plannedJson(planned);
    j["cluster"] = req.cluster.name;
    j["model"] = req.model.id;
    j["globalBatch"] = res.globalBatch;
    j["roundGlobalBatch"] = res.roundGlobalBatch;
    j["weights"] = {obj.time, obj.memory, obj.balance};
    j["cancelled"] = res.cancelled;
    j["narrowed"] = planned.narrowed;
    j["counts"] = {{"enumerated", res.enumerated},
                   {"evaluated", res.evaluated},
                   {"pruned",
                    {{"divisibility", res.pruned.divisibility},
                     {"microBatchLimit", res.pruned.microBatchLimit},
                     {"layers", res.pruned.layers},
                     {"outOfMemory", res.pruned.outOfMemory},
                     {"duplicates", res.pruned.duplicates},
                     {"launcher", res.pruned.launcher},
                     {"total", res.pruned.total()}}},
                   {"paretoFront", front.size()}};
    j["timingsMs"]
        = {{"enumerateEvaluate", res.enumerateEvaluateMs}, {"rank", shown.rankMs}, {"pareto", shown.paretoMs}};
    j["threads"] = res.threads;
    j["predictor"] = res.predictor;
    j["attention"] = {{"model", toString(req.model.training.attention)}};
    for (const GpuSpec &d : req.cluster.devices)
        j["attention"]["resolved"][d.id] = toString(resolveAttention(req.model, d));
    if (learned)
        j["learned"] = {{"cacheHits", learnedStats.cacheHits},
                        {"predicted", learnedStats.predicted},
                        {"hitRate", learnedStats.hitRate()},
                        {"cacheUsed", planned.cacheUsed},
                        {"resultFromCache", planned.resultFromCache},
                        {"subsetsFromCache", planned.subsetsFromCache},
                        {"signatureMs", learnedStats.signatureMs},
                        {"predictMs", learnedStats.predictMs},
                        {"totalMs", learnedStats.totalMs}};
    j["metrics"] = {{"T", "iteration time, ms"},
                    {"M", "highest per-GPU device-used memory / capacity"},
                    {"B", "coefficient of variation of per-GPU memory utilisation"},
                    {"score", "exp(sum_k w_k log(X_k / max X_k)), lower is better"}};
    nlohmann::json tops = nlohmann::json::array();
    for (size_t k = 0; k < top.size(); ++k) {
        const uint32_t i = top[k];
        const Plan plan = res.materialize(i);
        const PlanEstimate est = estimatePlan(plan, req.cluster, req.model, profiles, req.cost);
        nlohmann::json launchers = nlohmann::json::array();
        for (LaunchTarget t : launchersOfPlan(planned, plan))
            launchers.push_back(toString(t));
        tops.push_back({{"rank", k + 1},
                        {"index", i},
                        {"T", res.timeMs[i]},
                        {"M", res.peakMemory[i]},
                        {"B", res.imbalance[i]},
                        {"score", std::exp(scores[i])},
                        {"summary", plan.summary(req.cluster)},
                        {"globalBatch", plan.globalBatch},
                        {"batchRounded", plan.globalBatch != res.globalBatch},
                        {"launchers", launchers},
                        {"idleGpus", planned.idleGpus(i)},
                        {"idle", planned.idleText(i)},
                        {"plan", toJson(plan)},
                        {"estimate", toJson(est)}});
        const PlanFigures f = planFigures(res, i);
        if (f.learned) {
            tops.back()["timeSpread"] = f.timeSpread;
            tops.back()["memorySpread"] = f.memSpread;
            tops.back()["oomRisk"] = f.oomRisk;
            tops.back()["extrapolating"] = f.extrapolating;
        }
    }
    j["top"] = tops;
    nlohmann::json fj = nlohmann::json::array();
    for (uint32_t i : front)
        fj.push_back({{"index", i},
                      {"T", res.timeMs[i]},
                      {"M", res.peakMemory[i]},
                      {"B", res.imbalance[i]},
                      {"score", std::exp(scores[i])},
                      {"summary", res.materialize(i).summary(req.cluster)}});
    j["paretoFront"] = fj;
    std::cout << j.dump(2) << "\n";
    return res.cancelled ? Cancelled : Ok;
}

/// Write the summary and the table of the best plans.
int printTable(const PlannedSearch &planned, const Shown &shown)
{
    const SearchRequest &req = planned.request.search;
    const SearchResult &res = planned.result;
    const LearnedSearchStats &learnedStats = planned.learned;
    const bool learned = planned.usesPredictor();
    const std::vector<uint32_t> &top = shown.top, &front = shown.front;
    const std::vector<double> &scores = shown.scores;
    const ObjectiveWeights &obj = shown.obj;
    const std::string predictorLine = "predictor: " + res.predictor;
    std::cout << "Search: " << req.model.id << " (gbs " << res.globalBatch << ") on \"" << req.cluster.name << "\""
              << (res.cancelled ? "  [CANCELLED: partial results]" : "") << "\n";
    std::cout << "  target " << toString(planned.target) << (planned.targetFromCluster ? " (from the cluster: " : " (")
              << planned.targetReason << ")\n";
    std::cout << "  attention " << toString(req.model.training.attention) << ":";
    for (const GpuSpec &d : req.cluster.devices)
        std::cout << " " << d.id << "=" << toString(resolveAttention(req.model, d));
    std::cout << "\n";
    std::cout << std::fixed << std::setprecision(1);
    for (const IdleSubset &s : planned.subsets) {
        std::cout << "  subset " << s.label << ": " << s.evaluated << " configurations";
        if (s.bestTimeMs > 0)
            std::cout << ", best " << s.bestTimeMs << " ms";
        std::cout << "\n";
    }
    for (const std::string &n : planned.notes)
        std::cout << "  note: " << n << "\n";
    std::cout << "  enumerated " << res.enumerated << ", evaluated (fit in memory) " << res.evaluated << ", pruned "
              << res.pruned.total() << " (divisibility " << res.pruned.divisibility << ", micro-batch limit "
              << res.pruned.microBatchLimit << ", layers " << res.pruned.layers << ", out of memory "
              << res.pruned.outOfMemory << ", duplicates " << res.pruned.duplicates << ", launcher "
              << res.pruned.launcher << ")\n";
    std::cout << "  " << res.enumerateEvaluateMs << " ms enumerate+evaluate, " << std::setprecision(2) << shown.rankMs
              << " ms rank, " << shown.paretoMs << " ms Pareto (" << front.size() << " plans), " << res.threads
              << " threads\n";
    {
        std::cout << "  " << predictorLine;
        if (planned.resultFromCache)
            std::cout << "; the whole result of identical earlier searches (project's search cache, " << res.size()
                      << " configurations)" << std::setprecision(2);
        else if (learned && !res.cancelled)
            std::cout << std::setprecision(1) << "; " << learnedStats.predicted << " predicted, "
                      << learnedStats.cacheHits << " from the prediction cache (hit rate "
                      << 100.0 * learnedStats.hitRate() << "%" << (planned.usesCache() ? "" : ", cache off") << "; "
                      << planned.subsetsFromCache << " of " << planned.subsetSearches << " subsets stored whole), "
                      << learnedStats.totalMs << " ms" << std::setprecision(2);
        std::cout << "\n";
    }
    if (res.roundGlobalBatch) {
        size_t rounded = 0;
        for (uint32_t i : top)
            rounded += res.globalBatchOf(i) != res.globalBatch ? 1 : 0;
        std::cout << "  batch rounding on (--round-batch): " << rounded << " of the " << top.size()
                  << " plans shown run a rounded global batch (column gbs)\n";
    }
    std::cout << "  weights T,M,B = " << obj.time << "," << obj.memory << "," << obj.balance
              << "   M = peak device-used memory / capacity, B = CV of per-GPU utilisation\n\n";
    if (top.empty()) {
        std::cout << "  no plan fits this cluster; "
                  << (planned.advice ? planned.advice->text : std::string("the search was cancelled")) << "\n";
        if (planned.advice && planned.advice->reason == "divisibility" && !res.roundGlobalBatch)
            std::cout << "  (--round-batch accepts the nearest global batch each plan can run)\n";
        return res.cancelled ? Cancelled : Failure;
    }
    std::cout << "  " << std::right << std::setw(4) << "#" << std::setw(11) << "T ms" << std::setw(8) << "M"
              << std::setw(8) << "B" << std::setw(9) << "score" << std::setw(8) << "peakGiB";
    if (res.roundGlobalBatch)
        std::cout << std::setw(7) << "gbs";
    std::cout << "  plan\n";
    for (size_t k = 0; k < top.size(); ++k) {
        const uint32_t i = top[k];
        const Plan plan = res.materialize(i);
        const std::string idle = planned.idleText(i);
        const PlanFigures f = planFigures(res, i);
        std::cout << "  " << std::setw(4) << k + 1 << std::setw(11) << std::setprecision(1) << f.timeMs << std::setw(8)
                  << std::setprecision(3) << f.peakMemory << std::setw(8) << f.imbalance << std::setw(9)
                  << std::setprecision(4) << std::exp(scores[i]) << std::setw(8) << fmtBytesGiB(f.peakBytes);
        if (res.roundGlobalBatch)
            std::cout << std::setw(7) << plan.globalBatch;
        std::cout << "  " << plan.summary(req.cluster) << (plan.distributedOptimizer ? " dist-opt" : "")
                  << (idle.empty() ? "" : "  [" + idle + "]")
                  << (planned.target == LaunchTarget::Any ? "  [" + launchersText(launchersOfPlan(planned, plan)) + "]"
                                                          : "")
                  << (f.oomRisk ? "  [risk of OOM]" : "") << (f.extrapolating ? "  [EXTRAPOLATING]" : "") << "\n";
    }
    return res.cancelled ? Cancelled : Ok;
}

/// What `memx search` was asked for, besides the planned search itself.
struct SearchArgs {
    PlannedSearchRequest request;
    PlannedSearchOptions options;
    ObjectiveWeights objective;
    size_t topK = 10;
    bool json = false;
    std::unique_ptr<SqliteStore> store; ///< the --project file (its caches)
    std::optional<SearchProject> project;
};

SearchArgs parseSearchArgs(const std::vector<std::string> &argv)
{
    std::set<std::string> values {"cluster", "gpus",    "model",     "gbs",     "weights",
                                  "top",     "threads", "max-bases", "project", "baseline"};
    values.insert(kSpaceValueOptions.begin(), kSpaceValueOptions.end());
    values.insert(kModelValueOptions.begin(), kModelValueOptions.end());
    std::set<std::string> switches {"json", "no-cache"};
    switches.insert(kSpaceSwitches.begin(), kSpaceSwitches.end());
    Args args(argv, values, switches);
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    SearchArgs a;
    SearchRequest req;
    req.cluster = loadClusterOption(args);
    if (auto project = args.value("project")) {
        if (!std::filesystem::exists(*project))
            throw LoadError(*project, "", "no such project file");
        a.store = std::make_unique<SqliteStore>(*project, false);
        a.project = loadSearchProject(*a.store);
    }
    req.model = modelOption(args, a.store.get());
    req.globalBatch = static_cast<int>(args.intValue("gbs", 1, 1 << 24).value_or(0));
    req.threads = static_cast<int>(args.intValue("threads", 1, 1024).value_or(0));
    applySpaceOptions(args, req.space);
    a.request = plannedRequest(args, req);
    if (const auto b = args.value("baseline"))
        a.request.baseline = loadCluster(*b);
    a.topK = static_cast<size_t>(args.intValue("top", 1, 100000).value_or(10));
    a.objective = weightsOption(args);
    a.options.maxBases = static_cast<uint64_t>(args.intValue("max-bases", 1, 4000000000LL).value_or(kDefaultMaxBases));
    a.options.useCache = !args.has("no-cache");
    a.json = args.has("json");
    // The analytic search streams: it keeps the top K of the objective shown and the Pareto front,
    // never the whole space (a learned predictor re-scores every configuration: it keeps them all).
    if (!a.project || !a.project->predictor)
        a.request.search.stream = StreamOptions {{a.objective}, a.topK};
    return a;
}

int run(const std::vector<std::string> &argv)
{
    SearchArgs a = parseSearchArgs(argv);
    PlannedSearch planned;
    try {
        // Per subset of node groups, the same request with the same predictor and profiles reuses
        // the stored result whole (the key is verified in full, memx/predict/searchresultcache.h);
        // other subsets reuse the per-plan predictions of the project's cache.
        planned = planSearch(std::move(a.request), a.project ? &*a.project : nullptr, a.options);
        if (!a.json)
            for (const std::string &n : planned.narrowed)
                std::cerr << "note: space narrowed to " << a.options.maxBases << " base configurations: " << n << "\n";
        CliProgress progress("base configurations");
        runPlannedSearch(planned, a.store.get(), progress.callback(), [&](PlannedSearchPhase phase) {
            progress.setUnit(phase == PlannedSearchPhase::Search ? "base configurations" : "configurations predicted");
        });
    } catch (const std::invalid_argument &e) {
        std::cerr << "error: " << e.what() << "\n";
        return Failure;
    }
    for (const Diagnostic &w : planned.warnings) // a bad stored blob is a miss, reported on stderr
        std::cerr << "warning: " << w.toString() << "\n";

    const SearchResult &res = planned.result;
    Shown shown;
    shown.obj = a.objective;
    const auto r0 = std::chrono::steady_clock::now();
    shown.top = rank(res, a.objective, a.topK);
    const auto r1 = std::chrono::steady_clock::now();
    shown.front = paretoFront(res);
    const auto r2 = std::chrono::steady_clock::now();
    shown.rankMs = std::chrono::duration<double, std::milli>(r1 - r0).count();
    shown.paretoMs = std::chrono::duration<double, std::milli>(r2 - r1).count();
    shown.scores = logScores(metricsOf(res), a.objective);
    return a.json ? printJson(planned, shown) : printTable(planned, shown);
}

CommandRegistration reg({"search", "search heterogeneous parallel plans: rank by T/M/B, Pareto front", kUsage, &run});

} // namespace
} // namespace memx::cli
