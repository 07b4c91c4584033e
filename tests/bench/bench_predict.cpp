// Learned predictor in the search: batched prediction, the prediction cache (cold vs warm), a
// re-search after a weight change and after adding one node (runSearch alone, and the planned
// search with the cluster before the edit as the what-if baseline).
// Run: build/tests/bench/bench_predict --benchmark_counters_tabular=true
// Figures go to docs/performance.md ("Learned predictor and prediction cache").
#include "memx/engine/plannedsearch.h"
#include "memx/io/formats.h"
#include "memx/predict/learnedsearch.h"
#include "memx/predict/projectpredictor.h"
#include "memx/predict/searchresultcache.h"
#include "memx/profiling/sailorimporter.h"
#include "memx/search/objective.h"
#include "memx/search/plannedsearch.h"
#include "memx/store/memorystore.h"

#include <benchmark/benchmark.h>

#include <ctime>
#include <limits>

using namespace memx;

namespace {

const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters";

double processCpuSeconds()
{
    timespec ts {};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/// The predictor trained on the 41 public GH200 runs (once; deliberately never destroyed, so no
/// XGBoost handle outlives the library's own static state at exit).
LearnedPredictor &predictor()
{
    static LearnedPredictor *p = new LearnedPredictor([] {
        MemoryStore store;
        writeImport(store, importSailor(MEMX_SHARED_DIR "/data/public/sailor"));
        LearnedPredictor m = LearnedPredictor::train(samplesFromStore(store, CostOptions {}), PredictorOptions {});
        m.setThreads(2);
        return m;
    }());
    return *p;
}

/// 20-GPU sample, llama2-7b, stages per group {1}, micro-batches {1, 2}, no mixed-type stages (the
/// series' space since it began): 44,785 valid configurations (>= the paper's 31,240).
SearchRequest request(const std::string &cluster = "paper-20gpu-nvidia-amd")
{
    SearchRequest r;
    r.cluster = loadCluster(kSamples + "/" + cluster + ".json");
    r.model = resolveModel("llama2-7b");
    r.space.stagesPerGroup = {1};
    r.space.microBatches = {1, 2};
    r.space.mixedStages = false;
    r.threads = 2;
    r.collectFeatures = true;
    return r;
}

/// Search + learned prediction (+ cache) + rank + Pareto; counters: configurations, hit rate, CPU.
void learnedSearch(benchmark::State &state, const SearchRequest &req, PredictionCache *warmFrom, bool useCache)
{
    double cpu = 0;
    LearnedSearchStats st;
    for (auto _ : state) {
        state.PauseTiming();
        std::optional<PredictionCache> cache;
        if (useCache)
            cache = warmFrom ? *warmFrom : PredictionCache(1);
        state.ResumeTiming();
        const double c0 = processCpuSeconds();
        SearchResult res = runSearch(req);
        st = applyLearnedPredictor(res, predictor(), cache ? &*cache : nullptr);
        benchmark::DoNotOptimize(rank(res, ObjectiveWeights {1, 0.5, 0.2}, 10));
        benchmark::DoNotOptimize(paretoFront(res));
        cpu += processCpuSeconds() - c0;
    }
    state.counters["configs"] = static_cast<double>(st.configurations);
    state.counters["hitRate"] = st.hitRate();
    state.counters["predictMs"] = st.predictMs;
    state.counters["processCpuS"] = cpu / static_cast<double>(state.iterations());
}

/// The request with one more H100 node (4 -> 8 H100 GPUs).
SearchRequest requestPlusNode()
{
    SearchRequest r = request();
    r.cluster.groups[2].count += 1;
    return r;
}

/// Analytic search only (no features, no prediction). Arg 0: the sample; arg 1: one more H100
/// node - the floor of any re-search after adding the node that evaluates every configuration
/// of the new space.
void BM_AnalyticSearch(benchmark::State &state)
{
    SearchRequest req = state.range(0) == 1 ? requestPlusNode() : request();
    req.collectFeatures = false;
    double cpu = 0;
    size_t n = 0;
    for (auto _ : state) {
        const double c0 = processCpuSeconds();
        SearchResult res = runSearch(req);
        benchmark::DoNotOptimize(rank(res, ObjectiveWeights {1, 0.5, 0.2}, 10));
        benchmark::DoNotOptimize(paretoFront(res));
        cpu += processCpuSeconds() - c0;
        n = res.size();
    }
    state.counters["configs"] = static_cast<double>(n);
    state.counters["processCpuS"] = cpu / static_cast<double>(state.iterations());
}

void BM_LearnedSearchNoCache(benchmark::State &state)
{
    learnedSearch(state, request(), nullptr, false);
}
void BM_LearnedSearchColdCache(benchmark::State &state)
{
    learnedSearch(state, request(), nullptr, true);
}
void BM_LearnedSearchWarmCache(benchmark::State &state)
{
    const SearchRequest req = request();
    PredictionCache cache(1);
    SearchResult res = runSearch(req);
    applyLearnedPredictor(res, predictor(), &cache);
    learnedSearch(state, req, &cache, true);
}

/// The same request again with the whole-result cache: key (request JSON + profile and predictor
/// digests), lookup with the full key compared, copy of the cached result; then rank + Pareto.
/// Arg 0: in memory (SearchResultCache); arg 1: persisted in a project store (blob read +
/// deserialised, as `memx search --project` run twice).
void BM_LearnedSearchWarmResult(benchmark::State &state)
{
    const SearchRequest req = request();
    SearchResult first = runSearch(req);
    applyLearnedPredictor(first, predictor(), nullptr);
    SearchResultCache memory;
    memory.insert(searchRequestKey(req, predictor().digest()), first);
    MemoryStore store;
    saveSearchResult(store, searchRequestKey(req, predictor().digest()), first);
    const bool persisted = state.range(0) == 1;
    double cpu = 0;
    size_t n = 0;
    for (auto _ : state) {
        const double c0 = processCpuSeconds();
        const SearchRequestKey key = searchRequestKey(req, predictor().digest());
        std::optional<SearchResult> res = persisted ? loadSearchResult(store, key) : memory.find(key);
        if (!res)
            state.SkipWithError("no hit");
        benchmark::DoNotOptimize(rank(*res, ObjectiveWeights {1, 0.5, 0.2}, 10));
        benchmark::DoNotOptimize(paretoFront(*res));
        cpu += processCpuSeconds() - c0;
        n = res->size();
    }
    state.counters["configs"] = static_cast<double>(n);
    state.counters["hitRate"] = 1.0;
    state.counters["processCpuS"] = cpu / static_cast<double>(state.iterations());
}

/// Re-search after adding one H100 node (4 -> 8 H100 GPUs), cache warmed on the original cluster.
void BM_LearnedSearchAddNode(benchmark::State &state)
{
    PredictionCache cache(1);
    SearchResult res = runSearch(request());
    applyLearnedPredictor(res, predictor(), &cache);
    learnedSearch(state, requestPlusNode(), &cache, true);
}

/// The cold search of the cluster with the added node (the reference of the re-search above).
void BM_LearnedSearchAddNodeCold(benchmark::State &state)
{
    learnedSearch(state, requestPlusNode(), nullptr, true);
}

const SearchProject &project();

/// The engine's planned search (memx search --project, the workbench: plannedSearch) of `req`:
/// default target (FlagScale, the MI250X group idle) or target "any", `baseline` as the what-if
/// baseline, every subset learned-predicted with the project's predictor. `caches` stands for the
/// project's store (its stored subset results and prediction cache are read and written); null:
/// no caches.
PlannedSearch plannedLearned(const SearchRequest &req, const Cluster *baseline, Store *caches, bool anyTarget = false)
{
    PlannedSearchRequest p;
    p.search = req;
    p.search.collectFeatures = false; // planSearch asks for them with a predictor
    if (anyTarget) {
        p.autoTarget = false;
        p.search.space.target = LaunchTarget::Any;
    }
    if (baseline)
        p.baseline = *baseline;
    PlannedSearchOptions options;
    options.useCache = caches != nullptr;
    return plannedSearch(p, &project(), caches, options);
}

/// Re-search after adding one H100 node with a warm project: the caches hold what the search of
/// the cluster before the edit stored (whole subset results and per-plan predictions); the
/// baseline subset (the new node idle) is that search's own and comes back whole.
/// Arg 0: both caches; arg 1: per-plan predictions only (no whole-result reuse). Second arg: 0
/// the cluster's default target (FlagScale), 1 target "any" (the cost model's whole space).
void BM_PlannedAddNodeWarm(benchmark::State &state)
{
    const SearchRequest before = request();
    SearchRequest after = requestPlusNode();
    const bool any = state.range(1) == 1;
    MemoryStore warm;
    plannedLearned(before, nullptr, &warm, any);
    const bool whole = state.range(0) == 0;
    if (!whole) // per-plan predictions only: drop the stored subset results
        for (const std::string &key : warm.blobKeys(kSearchResultBlobKind))
            warm.removeBlob(kSearchResultBlobKind, key);
    double cpu = 0;
    LearnedSearchStats st;
    size_t n = 0, fromStore = 0;
    for (auto _ : state) {
        state.PauseTiming();
        MemoryStore store = warm; // each iteration starts from the same warm project
        state.ResumeTiming();
        const double c0 = processCpuSeconds();
        const PlannedSearch p = plannedLearned(after, &before.cluster, &store, any);
        benchmark::DoNotOptimize(rank(p.result, ObjectiveWeights {1, 0.5, 0.2}, 10));
        benchmark::DoNotOptimize(paretoFront(p.result));
        cpu += processCpuSeconds() - c0;
        n = p.result.size();
        st = p.learned;
        fromStore = p.subsetsFromCache;
    }
    state.counters["configs"] = static_cast<double>(n);
    state.counters["hitRate"] = st.hitRate();
    state.counters["subsetsStored"] = static_cast<double>(fromStore);
    state.counters["processCpuS"] = cpu / static_cast<double>(state.iterations());
}

/// The cold planned search of the same cluster (same subsets, baseline included), empty caches.
/// Arg: 0 the default target, 1 target "any".
void BM_PlannedAddNodeCold(benchmark::State &state)
{
    const bool any = state.range(0) == 1;
    const SearchRequest before = request();
    const SearchRequest after = requestPlusNode();
    double cpu = 0;
    LearnedSearchStats st;
    size_t n = 0;
    for (auto _ : state) {
        state.PauseTiming();
        MemoryStore store; // an empty project
        state.ResumeTiming();
        const double c0 = processCpuSeconds();
        const PlannedSearch p = plannedLearned(after, &before.cluster, &store, any);
        benchmark::DoNotOptimize(rank(p.result, ObjectiveWeights {1, 0.5, 0.2}, 10));
        benchmark::DoNotOptimize(paretoFront(p.result));
        cpu += processCpuSeconds() - c0;
        n = p.result.size();
        st = p.learned;
    }
    state.counters["configs"] = static_cast<double>(n);
    state.counters["hitRate"] = st.hitRate();
    state.counters["processCpuS"] = cpu / static_cast<double>(state.iterations());
}

/// A weight change re-ranks the cached learned metrics: no search, no prediction.
void BM_RerankAfterWeightChange(benchmark::State &state)
{
    SearchResult res = runSearch(request());
    applyLearnedPredictor(res, predictor(), nullptr);
    double w = 0.1;
    for (auto _ : state) {
        w = w > 2 ? 0.1 : w + 0.1;
        benchmark::DoNotOptimize(rank(res, ObjectiveWeights {1, w, 0.2}, 10));
    }
    state.counters["configs"] = static_cast<double>(res.size());
}

/// Raw batched prediction of 31,240 feature rows (5 members x 120 rounds x 2 targets).
void BM_PredictBatch31240(benchmark::State &state)
{
    SearchResult res = runSearch(request());
    const size_t rows = std::min<size_t>(31240, res.size());
    std::vector<float> tl, ml, ts, ms;
    for (auto _ : state)
        predictor().predictLogRatios(res.features.data(), rows, tl, ml, ts, ms);
    state.counters["rows"] = static_cast<double>(rows);
}

/// One prediction batch of `rows` rows on `threads` XGBoost threads (args: rows, threads), the
/// predictor's threads forced through the batch size rule's both sides. Picks
/// kParallelPredictRows (learnedpredictor.cpp): the row count from which a second thread saves
/// wall time without costing more process CPU than it saves (libgomp's workers busy-wait after
/// each region, which counts as CPU the search's own threads lose).
void BM_PredictBatchThreads(benchmark::State &state)
{
    static const SearchResult res = runSearch(request());
    const size_t rows = std::min<size_t>(static_cast<size_t>(state.range(0)), res.size());
    const int threads = static_cast<int>(state.range(1));
    const LearnedPredictor copy = LearnedPredictor::deserialize(predictor().serialize());
    copy.setThreads(threads);
    copy.setParallelPredictRows(threads == 1 ? std::numeric_limits<size_t>::max() : 0);
    std::vector<float> tl, ml, ts, ms;
    double cpu = 0;
    for (auto _ : state) {
        const double c0 = processCpuSeconds();
        copy.predictLogRatios(res.features.data(), rows, tl, ml, ts, ms);
        cpu += processCpuSeconds() - c0;
    }
    state.counters["rows"] = static_cast<double>(rows);
    state.counters["processCpuMs"] = 1000 * cpu / static_cast<double>(state.iterations());
}

/// The project the planned search reads: the predictor above (stored and read back, as a project
/// holds it) and no profiles. Never destroyed, like the predictor.
const SearchProject &project()
{
    static const SearchProject *p = [] {
        auto *s = new SearchProject;
        s->predictor = std::make_shared<const LearnedPredictor>(LearnedPredictor::deserialize(predictor().serialize()));
        s->predictor->setThreads(2);
        return s;
    }();
    return *p;
}

/// The engine's planned search (memx search --project, the workbench): planSearch (budget, keys) +
/// runPlannedSearch (search, learned predictor, extrapolation flags) + rank + Pareto. Arg 0: no
/// caches (compare BM_LearnedSearchNoCache: the engine's own cost); arg 1: a project store holding
/// the stored result of the same request (compare BM_LearnedSearchWarmResult/1).
void BM_PlannedSearch(benchmark::State &state)
{
    SearchRequest req = request();
    req.collectFeatures = false; // planSearch asks for them with a predictor
    PlannedSearchOptions options;
    options.useCache = state.range(0) == 1;
    MemoryStore store;
    PlannedSearchRequest planned;
    planned.search = req;
    if (options.useCache)
        plannedSearch(planned, &project(), &store, options);
    double cpu = 0;
    size_t n = 0;
    bool fromCache = false;
    for (auto _ : state) {
        const double c0 = processCpuSeconds();
        const PlannedSearch s = plannedSearch(planned, &project(), options.useCache ? &store : nullptr, options);
        benchmark::DoNotOptimize(rank(s.result, ObjectiveWeights {1, 0.5, 0.2}, 10));
        benchmark::DoNotOptimize(paretoFront(s.result));
        cpu += processCpuSeconds() - c0;
        n = s.result.size();
        fromCache = s.resultFromCache;
    }
    if (options.useCache && !fromCache)
        state.SkipWithError("the stored result was not reused");
    state.counters["configs"] = static_cast<double>(n);
    state.counters["processCpuS"] = cpu / static_cast<double>(state.iterations());
}

/// The extrapolation check over every configuration's features: arg 0 the flag alone
/// (LearnedPredictor::isExtrapolating, what the search and predictLogRatios run per row), arg 1
/// the reason text (extrapolation(), which they ran per row before).
void BM_ExtrapolationCheck(benchmark::State &state)
{
    const SearchResult res = runSearch(request());
    const bool text = state.range(0) == 1;
    size_t outside = 0;
    for (auto _ : state) {
        outside = 0;
        for (size_t i = 0; i < res.size(); ++i) {
            const float *f = res.features.data() + i * kFeatureCount;
            outside += text ? !predictor().extrapolation(f).empty() : predictor().isExtrapolating(f);
        }
        benchmark::DoNotOptimize(outside);
    }
    state.counters["rows"] = static_cast<double>(res.size());
    state.counters["outside"] = static_cast<double>(outside);
}

} // namespace

BENCHMARK(BM_PlannedSearch)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ExtrapolationCheck)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AnalyticSearch)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LearnedSearchNoCache)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LearnedSearchColdCache)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LearnedSearchWarmCache)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LearnedSearchWarmResult)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LearnedSearchAddNode)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LearnedSearchAddNodeCold)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlannedAddNodeWarm)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_PlannedAddNodeCold)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RerankAfterWeightChange)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PredictBatch31240)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PredictBatchThreads)
    ->ArgsProduct({{256, 1024, 4096, 8192, 16384, 32768}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
