// Search engine speed: enumerate + evaluate + rank + Pareto on the sample clusters, a space of
// over 1,000,000 configurations, and re-ranking cached metrics after a weight change.
// Run: build/tests/bench/bench_search --benchmark_counters_tabular=true
// Figures go to docs/performance.md.
#include "memx/io/formats.h"
#include "memx/profiling/minimalset.h"
#include "memx/search/objective.h"
#include "memx/search/search.h"
#include "memx/util/diagnostic.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <thread>

using namespace memx;

namespace {

const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters";

SearchRequest makeRequest(const std::string &cluster, int threads)
{
    SearchRequest r;
    r.cluster = loadCluster(kSamples + "/" + cluster + ".json");
    r.model = resolveModel("llama2-7b");
    r.threads = threads;
    return r;
}

double processCpuSeconds()
{
    timespec ts {};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/// A generated two-type cluster of `gpus` GPUs: a quarter A100 40GB, the rest V100 16GB, 8 per
/// node, one 100 Gb/s fabric (the shape of the Sailor comparison clusters of issue 22).
Cluster generatedCluster(int gpus)
{
    const int nodes = gpus / 8;
    const nlohmann::json j
        = {{"format", "memx.cluster/1"},
           {"name", "generated " + std::to_string(gpus)},
           {"nodes",
            {{{"name", "a100"}, {"gpu", "a100-40gb-sxm"}, {"gpus", 8}, {"count", nodes / 4}},
             {{"name", "v100"}, {"gpu", "v100-16gb-sxm2"}, {"gpus", 8}, {"count", nodes - nodes / 4}}}},
           {"network", {{"interNode", {{"bandwidthGBps", 12.5}, {"latencyUs", 10}}}}}};
    Diagnostics d;
    Cluster c = parseCluster(j, builtinCatalogue(), d);
    if (!d.empty())
        throw std::runtime_error(d.items().front().toString());
    return c;
}

/// Full search pipeline: runSearch + rank(top 10) + paretoFront.
void runFull(benchmark::State &state, const SearchRequest &req)
{
    uint64_t evaluated = 0, enumerated = 0;
    size_t front = 0;
    double cpu = 0;
    for (auto _ : state) {
        const double c0 = processCpuSeconds();
        SearchResult r = runSearch(req);
        auto top = rank(r, ObjectiveWeights {1, 0.5, 0.2}, 10);
        auto f = paretoFront(r);
        cpu += processCpuSeconds() - c0;
        benchmark::DoNotOptimize(top.data());
        evaluated = r.evaluated;
        enumerated = r.enumerated;
        front = f.size();
    }
    state.counters["evaluated"] = static_cast<double>(evaluated);
    state.counters["enumerated"] = static_cast<double>(enumerated);
    state.counters["pareto"] = static_cast<double>(front);
    state.counters["evaluated/s"]
        = benchmark::Counter(static_cast<double>(evaluated) * state.iterations(), benchmark::Counter::kIsRate);
    state.counters["enumerated/s"]
        = benchmark::Counter(static_cast<double>(enumerated) * state.iterations(), benchmark::Counter::kIsRate);
    state.counters["processCpuS"] = cpu / state.iterations();
}

void BM_Search20(benchmark::State &state)
{
    runFull(state, makeRequest("paper-20gpu-nvidia-amd", static_cast<int>(state.range(0))));
}
BENCHMARK(BM_Search20)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

/// The 20-GPU default without partial recompute (--no-partial-recompute; issue 17 item 4): the
/// space before the dimension, for the before/after figures of docs/search.md.
void BM_Search20WholeStageRecompute(benchmark::State &state)
{
    SearchRequest r = makeRequest("paper-20gpu-nvidia-amd", 2);
    r.space.partialRecompute = false;
    runFull(state, r);
}
BENCHMARK(BM_Search20WholeStageRecompute)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

/// The 20-GPU default with Megatron's DP overlap on every plan (--overlap-dp; issue 17 item 5):
/// the same space, exposedDpSyncMs per split.
void BM_Search20OverlapDp(benchmark::State &state)
{
    SearchRequest r = makeRequest("paper-20gpu-nvidia-amd", 2);
    r.space.overlapDataParallel = true;
    runFull(state, r);
}
BENCHMARK(BM_Search20OverlapDp)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

/// The 20-GPU default with every data-parallel sharding level (--dp-sharding all; issue 17 item 5):
/// the Megatron-FSDP bases cost only their pruning here (no single stage spans the three groups).
void BM_Search20DpShardingAll(benchmark::State &state)
{
    SearchRequest r = makeRequest("paper-20gpu-nvidia-amd", 2);
    r.space.dpSharding = {DpSharding::None, DpSharding::Optimizer, DpSharding::Gradients, DpSharding::Parameters};
    runFull(state, r);
}
BENCHMARK(BM_Search20DpShardingAll)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

/// The 20-GPU default with the interleaved schedule searched too (--vpp 1,2 and 1,2,4; issue 17).
void BM_Search20Interleaved(benchmark::State &state)
{
    SearchRequest r = makeRequest("paper-20gpu-nvidia-amd", 2);
    r.space.virtualStages = state.range(0) == 2 ? std::vector<int> {1, 2} : std::vector<int> {1, 2, 4};
    runFull(state, r);
}
BENCHMARK(BM_Search20Interleaved)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

/// The 20-GPU default with context parallelism {1, 2, 4, 8} (and with the interleaved {1, 2} too).
void BM_Search20ContextParallel(benchmark::State &state)
{
    SearchRequest r = makeRequest("paper-20gpu-nvidia-amd", 2);
    r.space.contextParallel = {1, 2, 4, 8};
    if (state.range(0))
        r.space.virtualStages = {1, 2};
    runFull(state, r);
}
BENCHMARK(BM_Search20ContextParallel)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

void BM_Search20Consumer(benchmark::State &state)
{
    runFull(state, makeRequest("paper-20gpu-mixed-consumer", 2));
}
BENCHMARK(BM_Search20Consumer)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Search40(benchmark::State &state)
{
    runFull(state, makeRequest("paper-40gpu-nvidia-amd", 2));
}
BENCHMARK(BM_Search40)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Search60(benchmark::State &state)
{
    runFull(state, makeRequest("paper-60gpu-nvidia-amd", 2));
}
BENCHMARK(BM_Search60)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Search512Narrow(benchmark::State &state)
{
    // 512 GPUs, 4 device types: the default space has ~48M base configurations; this narrowed
    // space keeps the file's group order and TP 4/8.
    SearchRequest r = makeRequest("cross-vendor-512gpu", 2);
    r.space.permuteGroups = false;
    r.space.tensorParallel = {4, 8};
    runFull(state, r);
}
BENCHMARK(BM_Search512Narrow)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The 512-GPU sample's whole default space (no narrowing, ~48 M base configurations), streamed:
/// the top 10 of memx search's default objective and of T alone, the Pareto front.
void BM_Search512FullStreamed(benchmark::State &state)
{
    SearchRequest r = makeRequest("cross-vendor-512gpu", 2);
    r.stream = StreamOptions {{ObjectiveWeights {}, ObjectiveWeights::timeOnly()}, 10};
    runFull(state, r);
}
BENCHMARK(BM_Search512FullStreamed)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

/// Set-up + search of a generated A100 + V100 cluster of range(0) GPUs (default space, gbs 1024),
/// range(1) = 1: streamed.
void BM_SearchGenerated(benchmark::State &state)
{
    SearchRequest r;
    r.cluster = generatedCluster(static_cast<int>(state.range(0)));
    r.model = resolveModel("llama2-7b");
    r.threads = 2;
    if (state.range(1))
        r.stream = StreamOptions {};
    runFull(state, r);
}
BENCHMARK(BM_SearchGenerated)
    ->Args({512, 0})
    ->Args({2048, 0})
    ->Args({8192, 0})
    ->Args({8192, 1})
    ->Args({65536, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_SearchOneMillion(benchmark::State &state)
{
    // Widened 20-GPU space: stages per group 1,2,4 -> over 1,000,000 evaluated configurations.
    SearchRequest r = makeRequest("paper-20gpu-nvidia-amd", 2);
    r.space.stagesPerGroup = {1, 2, 4};
    runFull(state, r);
}
BENCHMARK(BM_SearchOneMillion)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

/// Cancel latency: another thread requests the cancel `range(0)` ms after runSearch starts (as the
/// GUI's Cancel button or the CLI's SIGINT handler do: the progress callback then returns false);
/// the time reported (manual time) is from that request to runSearch returning. Counters:
/// inSetup = share of iterations whose cancel landed in the set-up phase (before the first
/// progress call with a total, i.e. before evaluation), setupMs = mean set-up duration when
/// evaluation was reached, maxMs = worst latency, kept = mean configurations in the cancelled
/// result (runSearch hands back the chunks completed before the cancel: copying them into the
/// result's flat arrays is the part of the latency that grows with the time searched).
/// `run(progress)` does the work under test and returns how many configurations it kept, or -1
/// when it finished without seeing the cancel.
void cancelLatencyOf(benchmark::State &state, const std::function<double(const ProgressFn &)> &run)
{
    using Clock = std::chrono::steady_clock;
    const auto delay = std::chrono::milliseconds(state.range(0));
    double worstMs = 0, inSetup = 0, setupMs = 0, setupRuns = 0, kept = 0;
    for (auto _ : state) {
        std::atomic<bool> cancel {false};
        Clock::time_point cancelAt {}, evaluationAt {};
        bool refusedInSetup = false, evaluating = false;
        const Clock::time_point start = Clock::now();
        std::thread canceller([&] {
            std::this_thread::sleep_until(start + delay);
            cancelAt = Clock::now();
            cancel = true;
        });
        const double keptNow = run([&](size_t, size_t total) {
            if (total > 0 && !evaluating) {
                evaluating = true;
                evaluationAt = Clock::now();
            }
            const bool stop = cancel.load();
            if (stop && total == 0)
                refusedInSetup = true;
            return !stop;
        });
        const Clock::time_point end = Clock::now();
        canceller.join();
        if (keptNow < 0) {
            state.SkipWithError("the search finished before the cancel: use a shorter delay");
            break;
        }
        const double ms = std::chrono::duration<double, std::milli>(end - cancelAt).count();
        state.SetIterationTime(ms / 1000);
        worstMs = std::max(worstMs, ms);
        kept += keptNow;
        inSetup += refusedInSetup ? 1 : 0;
        if (evaluating) {
            setupMs += std::chrono::duration<double, std::milli>(evaluationAt - start).count();
            ++setupRuns;
        }
    }
    state.counters["maxMs"] = worstMs;
    state.counters["inSetup"] = inSetup / std::max<double>(1, static_cast<double>(state.iterations()));
    state.counters["setupMs"] = setupRuns > 0 ? setupMs / setupRuns : -1;
    state.counters["kept"] = kept / std::max<double>(1, static_cast<double>(state.iterations()));
}

void cancelLatency(benchmark::State &state, const SearchRequest &req)
{
    cancelLatencyOf(state, [&](const ProgressFn &progress) {
        const SearchResult r = runSearch(req, progress);
        return r.cancelled ? static_cast<double>(r.size()) : -1.0;
    });
}

/// `memx profile plan` on the 512-GPU sample as the CLI runs it (narrowed to 500 k base
/// configurations; ~0.4 s in all: the search, then the kernels of the space and the end-to-end
/// picks, which poll the same callback). A cancel throws memx::Cancelled (kept = 0).
void cancelProfilePlan(benchmark::State &state, const std::string &model, uint64_t maxBases)
{
    SearchRequest r = makeRequest("cross-vendor-512gpu", 2);
    r.model = resolveModel(model);
    narrowToBudget(r, maxBases);
    MinimalSetOptions o;
    o.space = r.space;
    o.threads = 2;
    cancelLatencyOf(state, [&](const ProgressFn &progress) {
        try {
            planMinimalSet(r.cluster, r.model, o, progress);
        } catch (const Cancelled &) {
            return 0.0;
        }
        return -1.0;
    });
}

void BM_CancelProfilePlan512(benchmark::State &state)
{
    cancelProfilePlan(state, "gpt3-1.3b", 500000);
}
BENCHMARK(BM_CancelProfilePlan512)
    ->Arg(5)
    ->Arg(150)
    ->Arg(300)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(5);

/// A wider space (`memx profile plan --model llama2-7b --max-bases 4000000`: ~1.7 s of search,
/// then ~2 s over its 6 M configurations; ~1.7 GiB at its peak; tests/cli/tst_scale.cpp cancels
/// it 1.5 s in).
void BM_CancelProfilePlan512Wide(benchmark::State &state)
{
    cancelProfilePlan(state, "llama2-7b", 4000000);
}
BENCHMARK(BM_CancelProfilePlan512Wide)
    ->Arg(1000)
    ->Arg(1500)
    ->Arg(2500)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(3);

/// The 512-GPU sample as `memx search` runs it by default: narrowed to 500 k base configurations
/// (in-process: set-up ~0.1 s, then ~0.4 s of evaluation on 2 threads).
void BM_Cancel512(benchmark::State &state)
{
    SearchRequest r = makeRequest("cross-vendor-512gpu", 2);
    narrowToBudget(r, 500000);
    cancelLatency(state, r);
}
BENCHMARK(BM_Cancel512)->Arg(5)->Arg(25)->Arg(50)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

/// A wider space on the same cluster (`--radius 3 --max-bases 4000000`, tests/cli/tst_scale.cpp):
/// minutes of evaluation, cancelled during it.
void BM_Cancel512Wide(benchmark::State &state)
{
    SearchRequest r = makeRequest("cross-vendor-512gpu", 2);
    r.space.neighbourRadius = 3;
    narrowToBudget(r, 4000000);
    cancelLatency(state, r);
}
BENCHMARK(BM_Cancel512Wide)->Arg(1000)->Arg(2000)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

/// The same wide space streamed, as `memx search` runs it (top 10 of the default objective and
/// the Pareto front kept): a cancelled result holds what the workers kept, nothing to gather.
void BM_Cancel512WideStreamed(benchmark::State &state)
{
    SearchRequest r = makeRequest("cross-vendor-512gpu", 2);
    r.space.neighbourRadius = 3;
    narrowToBudget(r, 4000000);
    r.stream = StreamOptions {{ObjectiveWeights {}}, 10};
    cancelLatency(state, r);
}
BENCHMARK(BM_Cancel512WideStreamed)
    ->Arg(1000)
    ->Arg(2000)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(5);

/// The full ~48 M-base space (budget lifted): its set-up alone (pipeline enumeration over every
/// group order) takes tens of seconds, cancelled in it.
void BM_Cancel512Full(benchmark::State &state)
{
    cancelLatency(state, makeRequest("cross-vendor-512gpu", 2));
}
BENCHMARK(BM_Cancel512Full)->Arg(100)->Arg(3000)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

/// Cached metrics of the first 31,240 configurations of the 20-GPU default space.
struct Cached {
    std::vector<double> t, m, b;
    Cached()
    {
        const SearchResult r = runSearch(makeRequest("paper-20gpu-nvidia-amd", 2));
        const size_t n = std::min<size_t>(31240, r.size());
        t.assign(r.timeMs.begin(), r.timeMs.begin() + static_cast<long>(n));
        m.assign(r.peakMemory.begin(), r.peakMemory.begin() + static_cast<long>(n));
        b.assign(r.imbalance.begin(), r.imbalance.begin() + static_cast<long>(n));
    }
    MetricView view() const { return MetricView {t.data(), m.data(), b.data(), t.size()}; }
};

const Cached &cached()
{
    static const Cached c;
    return c;
}

void BM_Rerank31240(benchmark::State &state)
{
    const MetricView v = cached().view();
    double w = 0.1;
    for (auto _ : state) {
        w = w > 2 ? 0.1 : w + 0.1; // a new weight every time
        auto top = rank(v, ObjectiveWeights {1.0, w, 0.3}, 10);
        benchmark::DoNotOptimize(top.data());
    }
    state.counters["plans"] = static_cast<double>(v.size);
}
BENCHMARK(BM_Rerank31240)->Unit(benchmark::kMicrosecond);

void BM_Pareto31240(benchmark::State &state)
{
    const MetricView v = cached().view();
    for (auto _ : state) {
        auto f = paretoFront(v);
        benchmark::DoNotOptimize(f.data());
    }
    state.counters["plans"] = static_cast<double>(v.size);
}
BENCHMARK(BM_Pareto31240)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
