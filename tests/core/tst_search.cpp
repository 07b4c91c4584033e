// Search engine, objective and Pareto front: brute-force Pareto check, objective invariances,
// determinism across thread counts, fast path == estimatePlan, space size, sensible plans.
#include "memx/cost/features.h"
#include "memx/export/launchtarget.h"
#include "memx/io/formats.h"
#include "memx/predict/predictioncache.h"
#include "memx/search/objective.h"
#include "memx/search/search.h"
#include "memx/util/diagnostic.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace memx;

static const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters";

/// O(n^2) reference: i is on the front iff no j dominates it.
static std::vector<uint32_t> bruteForcePareto(const std::vector<double> &t, const std::vector<double> &m,
                                              const std::vector<double> &b)
{
    std::vector<uint32_t> out;
    for (size_t i = 0; i < t.size(); ++i) {
        bool dominated = false;
        for (size_t j = 0; j < t.size() && !dominated; ++j)
            dominated = t[j] <= t[i] && m[j] <= m[i] && b[j] <= b[i] && (t[j] < t[i] || m[j] < m[i] || b[j] < b[i]);
        if (!dominated)
            out.push_back(static_cast<uint32_t>(i));
    }
    return out;
}

static SearchRequest request20(int threads)
{
    SearchRequest r;
    r.cluster = loadCluster(kSamples + "/paper-20gpu-nvidia-amd.json");
    r.model = resolveModel("llama2-7b");
    r.threads = threads;
    return r;
}

/// A small request (narrowed space) for the slower checks.
/// 8 x H100, llama2-7b at global batch 32, 1/2/4 stages, TP 1/2/4, micro-batch 1/2, 2 threads:
/// a small space for the settings and dimensions of issue 17.
static SearchRequest h100Request()
{
    SearchRequest req;
    req.cluster = loadCluster(kSamples + "/h100-8x.json");
    req.model = resolveModel("llama2-7b");
    req.model.training.globalBatch = 32;
    req.space.stagesPerGroup = {1, 2, 4};
    req.space.tensorParallel = {1, 2, 4};
    req.space.microBatches = {1, 2};
    req.threads = 2;
    return req;
}

/// Relative difference |a - b| / |b| (b near 0: / 1e-12).
static double rel(double a, double b)
{
    return std::abs(a - b) / std::max(std::abs(b), 1e-12);
}

static SearchRequest smallRequest(int threads)
{
    SearchRequest r = request20(threads);
    r.space.tensorParallel = {1, 2};
    r.space.stagesPerGroup = {1, 2};
    r.space.microBatches = {1, 2};
    return r;
}

class TestSearch : public QObject {
    Q_OBJECT

    SearchResult mDefault; // default space on the 20-GPU sample, computed once

private slots:
    /// Issue 21 item 5: layer counts are 8-bit; a 300-layer model searched as "0-43" (300 mod
    /// 256). A split with a stage over kMaxStageLayers is pruned for "layers", and every plan
    /// found covers all 300 layers.
    void stageLayerLimitIsChecked()
    {
        SearchRequest r;
        r.cluster = loadCluster(kSamples + "/h100-8x.json");
        r.model = resolveModel("gpt3-1.3b"); // 300 of its layers: ~15 B parameters, fits 8 H100s in 2 stages
        r.model.shape.layers = 300;
        r.space.tensorParallel = {8};
        r.space.microBatches = {1};
        r.threads = 1;
        r.space.stagesPerGroup = {1};
        const SearchResult one = runSearch(r);
        QCOMPARE(one.size(), size_t(0));
        QVERIFY(one.pruned.layers > 0);
        r.space.tensorParallel = {4};
        r.space.stagesPerGroup = {2};
        const SearchResult two = runSearch(r);
        QVERIFY(two.size() > 0);
        for (size_t i = 0; i < two.size(); ++i) {
            const Plan p = two.materialize(i);
            int layers = 0;
            for (const Stage &st : p.stages) {
                QVERIFY(st.layerCount <= kMaxStageLayers);
                layers += st.layerCount;
            }
            QCOMPARE(layers, 300);
        }
    }

    void initTestCase() { mDefault = runSearch(request20(2)); }

    /// Issue 22: on 80 A100 + 240 V100 with a 24-layer model and 5 + 15 stages, the memory-aware
    /// split gave the V100 stages (too small for their speed share) one layer each and did not take
    /// the excess back: the top plan covered 25 layers, and estimatePlan refused it. Every plan of
    /// the space must now cover exactly 24 layers, and the top plans must estimate as searched.
    void memoryAwareSplitCoversTheModel()
    {
        Diagnostics d;
        SearchRequest r;
        r.cluster = parseCluster(nlohmann::json::parse(R"({"format": "memx.cluster/1", "name": "80+240",
            "nodes": [{"name": "a100", "gpu": "a100-40gb-sxm", "gpus": 8, "count": 10},
                      {"name": "v100", "gpu": "v100-16gb-sxm2", "gpus": 8, "count": 30}],
            "network": {"interNode": {"bandwidthGBps": 12.5, "latencyUs": 10}}})"),
                                 builtinCatalogue(), d);
        QVERIFY(d.empty());
        r.model = resolveModel("opt-350m");
        r.globalBatch = 1024;
        r.space.stagesPerGroup = {5, 15};
        r.threads = 2;
        const SearchResult res = runSearch(r);
        QVERIFY(res.size() > 0);
        checkSearchInvariants(res); // throws on the first plan that does not cover 24 layers
        for (size_t i = 0; i < res.size(); ++i) {
            int layers = 0;
            for (const Stage &st : res.materialize(i).stages)
                layers += st.layerCount;
            QCOMPARE(layers, 24);
        }
        for (uint32_t i : rank(res, ObjectiveWeights::timeOnly(), 5)) {
            const PlanEstimate e = estimatePlan(res.materialize(i), r.cluster, r.model, nullptr, r.cost);
            QVERIFY(std::abs(e.iterationTimeMs - res.timeMs[i]) < 1e-9 * res.timeMs[i]);
        }
        // The memory-aware split contributes plans here (the check is not vacuous).
        SearchRequest off = r;
        off.space.memoryAwareSplit = false;
        QVERIFY(runSearch(off).evaluated < res.evaluated);
    }

    /// Issue 22 item 3: 80 A100 + 240 V100 at global batch 1024 has no plan (no pipeline's
    /// samples per step divide 1024); with roundGlobalBatch every plan runs the nearest multiple
    /// of its step, reported per plan, and estimates as searched.
    void roundedGlobalBatch()
    {
        // Hand-worked: round(1024 / 240) = 4 -> 960; round(1024 / 48) = 21 -> 1008; 10 / 4 = 2.5
        // rounds up to 3; 1 / 8 rounds to 0, raised to 1; exact multiples stay.
        QCOMPARE(roundedMicroBatchCount(1024, 240), 4);
        QCOMPARE(roundedMicroBatchCount(1024, 48), 21);
        QCOMPARE(roundedMicroBatchCount(10, 4), 3);
        QCOMPARE(roundedMicroBatchCount(1, 8), 1);
        QCOMPARE(roundedMicroBatchCount(1024, 64), 16);
        SearchRequest r;
        r.cluster = loadCluster(MEMX_SOURCE_DIR "/tests/data/a100-80-v100-240.json");
        r.model = resolveModel("opt-350m");
        r.globalBatch = 1024;
        r.space.mixedStages = false;
        r.threads = 2;
        const SearchResult exact = runSearch(r);
        QCOMPARE(exact.size(), size_t(0));
        QVERIFY(exact.pruned.divisibility > 0);
        r.space.roundGlobalBatch = true;
        const SearchResult res = runSearch(r);
        QVERIFY(res.size() > 0);
        QVERIFY(res.roundGlobalBatch);
        QCOMPARE(res.globalBatch, 1024);
        QVERIFY(res.pruned.divisibility < exact.pruned.divisibility);
        checkSearchInvariants(res);
        for (size_t i = 0; i < res.size(); ++i) {
            const Plan p = res.materialize(i);
            QCOMPARE(p.globalBatch, res.globalBatchOf(i));
            const int step = p.stages.front().replicas.front().microBatch * p.stages.front().dp(); // uniform split
            QCOMPARE(p.globalBatch % step, 0);
            QVERIFY(2 * std::abs(p.globalBatch - 1024) <= step);
            QVERIFY(p.globalBatch != 1024); // 1024 itself is no plan's multiple here
        }
        for (uint32_t i : rank(res, ObjectiveWeights::timeOnly(), 5)) {
            const Plan p = res.materialize(i);
            const PlanEstimate e = estimatePlan(p, r.cluster, r.model, nullptr, r.cost);
            QVERIFY(std::abs(e.iterationTimeMs - res.timeMs[i]) < 1e-9 * res.timeMs[i]);
            QVERIFY(res.signatureKey(i).rfind("gbs=" + std::to_string(p.globalBatch) + ";", 0) == 0);
        }
        // Where the batch divides, rounding changes nothing: the 20-GPU space is the same bit for bit.
        SearchRequest small = smallRequest(2);
        const SearchResult a = runSearch(small);
        small.space.roundGlobalBatch = true;
        const SearchResult b = runSearch(small);
        QVERIFY(b.size() >= a.size());
        QVERIFY(b.pruned.divisibility <= a.pruned.divisibility);
        size_t j = 0; // a's configurations appear in b in the same order with the same figures
        for (size_t i = 0; i < a.size(); ++i) {
            while (j < b.size() && (b.baseOf[j] != a.baseOf[i] || b.timeMs[j] != a.timeMs[i]))
                ++j;
            QVERIFY(j < b.size());
            QCOMPARE(b.globalBatchOf(j), a.globalBatch);
        }
    }

    /// Issue 22 item 2: a streamed search keeps only the top K per objective, the Pareto front and
    /// the normalisers, and gives exactly the full enumeration's ranking, scores and front (the
    /// full result, ranked by rank() and swept by paretoFront - itself checked against brute force
    /// below - is the reference), for any thread count and a buffer small enough to compact often.
    void streamedSearchEqualsFullSearch()
    {
        const std::vector<ObjectiveWeights> objectives
            = {ObjectiveWeights {}, ObjectiveWeights::timeOnly(), ObjectiveWeights {0, 1, 0}, {1, 0.5, 0.2}};
        for (const bool mixed : {false, true}) {
            SearchRequest r = smallRequest(2);
            r.space.mixedStages = mixed;
            const SearchResult full = runSearch(r);
            QVERIFY(full.size() > 5000);
            for (const int threads : {1, 2}) {
                SearchRequest sr = r;
                sr.threads = threads;
                sr.stream = StreamOptions {objectives, 10, 1024};
                const SearchResult st = runSearch(sr);
                QVERIFY(st.streamed);
                QVERIFY(st.size() < full.size() / 4);
                QCOMPARE(st.evaluated, full.evaluated);
                QCOMPARE(st.enumerated, full.enumerated);
                QCOMPARE(st.pruned.total(), full.pruned.total());
                QCOMPARE(st.pruned.outOfMemory, full.pruned.outOfMemory);
                checkSearchInvariants(st);
                const auto same = [&](uint32_t i, uint32_t j) {
                    return full.baseOf[i] == st.baseOf[j] && full.signatureKey(i) == st.signatureKey(j)
                        && full.timeMs[i] == st.timeMs[j] && full.peakMemory[i] == st.peakMemory[j]
                        && full.imbalance[i] == st.imbalance[j] && full.peakBytes[i] == st.peakBytes[j];
                };
                for (const ObjectiveWeights &o : objectives) {
                    const std::vector<uint32_t> a = rank(full, o, 10), b = rank(st, o, 10);
                    QCOMPARE(a.size(), b.size());
                    const std::vector<double> sa = logScores(metricsOf(full), o), sb = logScores(metricsOf(st), o);
                    for (size_t k = 0; k < a.size(); ++k) {
                        QVERIFY(same(a[k], b[k]));
                        QCOMPARE(sa[a[k]], sb[b[k]]); // the same normalisers: the same scores, bit for bit
                    }
                }
                const std::vector<uint32_t> fa = paretoFront(full), fb = paretoFront(st);
                QCOMPARE(fa.size(), fb.size());
                for (size_t k = 0; k < fa.size(); ++k)
                    QVERIFY(same(fa[k], fb[k]));
            }
        }
        // A cancelled streamed search returns what it kept of the completed chunks.
        SearchRequest c = request20(2);
        c.stream = StreamOptions {};
        const SearchResult cut = runSearch(c, [](size_t done, size_t total) { return total == 0 || done == 0; });
        QVERIFY(cut.cancelled);
        QVERIFY(cut.evaluated < mDefault.evaluated);
        // Streaming and features do not mix (a learned predictor re-scores every configuration).
        c.collectFeatures = true;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, runSearch(c));
    }

    /// Issue 22 item 1: clusters beyond the planner's limits are refused by name.
    void clusterSizeLimits()
    {
        SearchRequest r = request20(1);
        r.cluster.groups.front().count = kMaxSearchNodes; // 8192 nodes + the others
        try {
            runSearch(r);
            QFAIL("an oversized cluster was searched");
        } catch (const std::invalid_argument &e) {
            QVERIFY(std::string(e.what()).find("at most 8192 nodes and 65536 GPUs") != std::string::npos);
        }
    }

    void paretoMatchesBruteForceOnRandomPointsWithTies()
    {
        std::mt19937 rng(42);
        for (int trial = 0; trial < 20; ++trial) {
            const size_t n = 50 + trial * 60;
            std::uniform_int_distribution<int> small(0, trial % 2 ? 6 : 1000); // many ties on odd trials
            std::vector<double> t(n), m(n), b(n);
            for (size_t i = 0; i < n; ++i) {
                t[i] = small(rng);
                m[i] = small(rng) * 0.25;
                b[i] = small(rng) * 0.5;
            }
            MetricView v {t.data(), m.data(), b.data(), n};
            const auto front = paretoFront(v);
            const auto ref = bruteForcePareto(t, m, b);
            QVERIFY2(front == ref,
                     ("trial " + std::to_string(trial) + ": front " + std::to_string(front.size()) + " vs brute force "
                      + std::to_string(ref.size()))
                         .c_str());
        }
    }

    void paretoMatchesBruteForceOnSearchResult()
    {
        // 4,000 real configurations spread over the space.
        const size_t n = 4000, stride = std::max<size_t>(1, mDefault.size() / n);
        std::vector<double> t, m, b;
        for (size_t i = 0; i < mDefault.size() && t.size() < n; i += stride) {
            t.push_back(mDefault.timeMs[i]);
            m.push_back(mDefault.peakMemory[i]);
            b.push_back(mDefault.imbalance[i]);
        }
        MetricView v {t.data(), m.data(), b.data(), t.size()};
        QCOMPARE(paretoFront(v), bruteForcePareto(t, m, b));
        // And the full front is non-dominated by every plan (O(front x n)).
        const auto front = paretoFront(mDefault);
        QVERIFY(!front.empty());
        for (uint32_t f : front)
            for (size_t j = 0; j < mDefault.size(); j += 7) {
                const bool dom = mDefault.timeMs[j] <= mDefault.timeMs[f]
                    && mDefault.peakMemory[j] <= mDefault.peakMemory[f]
                    && mDefault.imbalance[j] <= mDefault.imbalance[f]
                    && (mDefault.timeMs[j] < mDefault.timeMs[f] || mDefault.peakMemory[j] < mDefault.peakMemory[f]
                        || mDefault.imbalance[j] < mDefault.imbalance[f]);
                QVERIFY(!dom);
            }
    }

    void objectiveInvariances()
    {
        const SearchResult &r = mDefault;
        const size_t K = 200;
        // (1, 0, 0) reproduces the time-only ranking.
        std::vector<uint32_t> byTime(r.size());
        std::iota(byTime.begin(), byTime.end(), 0u);
        std::stable_sort(byTime.begin(), byTime.end(), [&](uint32_t a, uint32_t b) {
            if (r.timeMs[a] != r.timeMs[b])
                return r.timeMs[a] < r.timeMs[b];
            if (r.peakMemory[a] != r.peakMemory[b])
                return r.peakMemory[a] < r.peakMemory[b];
            return r.imbalance[a] < r.imbalance[b];
        });
        byTime.resize(K);
        QCOMPARE(rank(r, ObjectiveWeights::timeOnly(), K), byTime);

        // Rescaling T or M leaves the ranking unchanged (powers of two: exact in floating point,
        // so the comparison is exact; other factors are checked on scores below). B, a coefficient
        // of variation, is already scale-free and enters as 1 + B, so it is not rescaled.
        const ObjectiveWeights w {1.0, 0.7, 0.3};
        const auto base = rank(r, w, K);
        std::vector<double> t = r.timeMs, m = r.peakMemory, b = r.imbalance;
        for (double &x : t)
            x *= 1024.0;
        for (double &x : m)
            x *= 0.125;
        QCOMPARE(rank(MetricView {t.data(), m.data(), b.data(), t.size()}, w, K), base);
        // Non-power-of-two factors: the scores agree to rounding.
        for (double &x : t)
            x *= 3.7;
        const auto s0 = logScores(metricsOf(r), w);
        const auto s1 = logScores(MetricView {t.data(), m.data(), b.data(), t.size()}, w);
        for (size_t i = 0; i < s0.size(); i += 97)
            QVERIFY(std::abs(s0[i] - s1[i]) < 1e-9);
        // Scaling all weights together does not change the order either.
        QCOMPARE(rank(r, ObjectiveWeights {2.0, 1.4, 0.6}, K), base);
        // Weight on memory prefers lower peak memory: the top plan under (0, 1, 0) has the least M.
        const auto memTop = rank(r, ObjectiveWeights {0, 1, 0}, 1);
        QCOMPARE(r.peakMemory[memTop[0]], *std::min_element(r.peakMemory.begin(), r.peakMemory.end()));
        // Negative weights are rejected.
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rank(r, ObjectiveWeights {-1, 0, 0}, 1));
    }

    void objectiveBalanceTradeOff()
    {
        // Worked by hand: plans (T ms, M, B) = a (100, 0.8, 0.003), b (88, 0.8, 0.004),
        // c (92, 0.8, 0.40), d (100, 0.8, 0.0).
        const std::vector<double> t {100, 88, 92, 100}, m {0.8, 0.8, 0.8, 0.8}, b {0.003, 0.004, 0.40, 0.0};
        const MetricView v {t.data(), m.data(), b.data(), t.size()};
        const ObjectiveScale sc = objectiveScaleOf(v);
        QCOMPARE(sc.maxTime, 100.0);
        QCOMPARE(sc.maxMemory, 0.8);
        QCOMPARE(sc.maxBalance, 1.4);
        // Weights (1, 0.5, 0.5): log score = ln(T/100) + 0.5 ln(M/0.8) + 0.5 ln((1+B)/1.4)
        //   a: 0 + 0 + 0.5 ln(1.003/1.4) = -0.166712...
        //   b: ln 0.88 + 0.5 ln(1.004/1.4) = -0.127833 - 0.166214 = -0.294047
        //   c: ln 0.92 + 0.5 ln(1.4/1.4) = -0.083382
        //   d: 0.5 ln(1/1.4) = -0.168236
        const ObjectiveWeights w {1, 0.5, 0.5};
        const auto s = logScores(v, w);
        QVERIFY(std::abs(s[0] - 0.5 * std::log(1.003 / 1.4)) < 1e-12);
        QVERIFY(std::abs(s[1] - (std::log(0.88) + 0.5 * std::log(1.004 / 1.4))) < 1e-12);
        QVERIFY(std::abs(s[2] - std::log(0.92)) < 1e-12);
        QVERIFY(std::abs(s[3] - 0.5 * std::log(1 / 1.4)) < 1e-12);
        // The 12% faster plan b wins although its balance is 0.004, not 0.003 or 0 (with the old
        // X / max X normalisation of B, a and d ranked first: a 33% "worse" balance outweighed 12%).
        QCOMPARE(rank(v, w, 4), (std::vector<uint32_t> {1, 3, 0, 2}));
        // A real imbalance still counts: at (1, 0, 1) the balanced plan d (ln(1/1.4) = -0.336) beats
        // c, 8% faster but 40% imbalanced (ln 0.92 = -0.083); b: ln 0.88 + ln(1.004/1.4) = -0.460,
        // a: ln(1.003/1.4) = -0.333.
        QCOMPARE(rank(v, ObjectiveWeights {1, 0, 1}, 4), (std::vector<uint32_t> {1, 3, 0, 2}));
        // Time only: b first; balance only: d (B = 0) first.
        QCOMPARE(rank(v, ObjectiveWeights::timeOnly(), 1).front(), 1u);
        QCOMPARE(rank(v, ObjectiveWeights {0, 0, 1}, 1).front(), 3u);
        // logScore against a scale reproduces logScores (compare uses it for plans chosen elsewhere).
        for (size_t i = 0; i < t.size(); ++i)
            QCOMPARE(logScore(sc, w, t[i], m[i], b[i]), s[i]);
    }

    void deterministicAcrossThreadCounts()
    {
        const SearchResult a = runSearch(smallRequest(1));
        const SearchResult b = runSearch(smallRequest(2));
        const SearchResult c = runSearch(smallRequest(3));
        QVERIFY(a.size() > 1000);
        for (const SearchResult *x : {&b, &c}) {
            QCOMPARE(x->timeMs, a.timeMs);
            QCOMPARE(x->peakMemory, a.peakMemory);
            QCOMPARE(x->imbalance, a.imbalance);
            QCOMPARE(x->baseOf, a.baseOf);
            QCOMPARE(x->layerCounts, a.layerCounts);
            QCOMPARE(x->enumerated, a.enumerated);
            QCOMPARE(x->pruned.outOfMemory, a.pruned.outOfMemory);
        }
    }

    void fastPathAgreesWithEstimatePlan()
    {
        const SearchResult &r = mDefault;
        SearchRequest req = request20(1);
        std::vector<uint32_t> picks = rank(r, ObjectiveWeights::timeOnly(), 20);
        for (uint32_t i : rank(r, ObjectiveWeights {1, 1, 1}, 20))
            picks.push_back(i);
        for (size_t i = 0; i < r.size(); i += r.size() / 50 + 1)
            picks.push_back(static_cast<uint32_t>(i));
        for (uint32_t i : picks) {
            const Plan plan = r.materialize(i);
            Diagnostics d;
            validatePlan(plan, req.cluster, req.model, d);
            QVERIFY2(d.empty(), plan.summary(req.cluster).c_str());
            const PlanEstimate e = estimatePlan(plan, req.cluster, req.model, nullptr, req.cost);
            QVERIFY(!e.oom);
            QVERIFY2(rel(e.iterationTimeMs, r.timeMs[i]) < 1e-9, plan.summary(req.cluster).c_str());
            QVERIFY2(rel(e.peakUtilisation, r.peakMemory[i]) < 1e-9, plan.summary(req.cluster).c_str());
            QVERIFY2(std::abs(e.imbalance - r.imbalance[i]) < 1e-9, plan.summary(req.cluster).c_str());
            QVERIFY(rel(e.peakBytes, r.peakBytes[i]) < 1e-9);
        }
    }

    /// Issue 17 item 5: with overlapDataParallel every plan carries Megatron's overlap flags
    /// (the parameter gather only with the distributed optimizer), the fast path prices them as
    /// estimatePlan does, the space is the same size, and no plan gets slower.
    void dataParallelOverlapSetting()
    {
        SearchRequest req = smallRequest(1);
        const SearchResult plain = runSearch(req);
        req.space.overlapDataParallel = true;
        const SearchResult ov = runSearch(req);
        QCOMPARE(ov.size(), plain.size());
        QVERIFY(ov.overlapDataParallel);
        int faster = 0;
        for (size_t i = 0; i < ov.size(); i += ov.size() / 60 + 1) {
            const Plan plan = ov.materialize(i);
            QVERIFY(plan.overlapGradReduce);
            QCOMPARE(plan.overlapParamGather, plan.distributedOptimizer);
            Diagnostics d;
            validatePlan(plan, req.cluster, req.model, d);
            QVERIFY2(d.empty(), plan.summary(req.cluster).c_str());
            const PlanEstimate e = estimatePlan(plan, req.cluster, req.model, nullptr, req.cost);
            QVERIFY2(rel(e.iterationTimeMs, ov.timeMs[i]) < 1e-9, plan.summary(req.cluster).c_str());
            QVERIFY(ov.timeMs[i] <= plain.timeMs[i] + 1e-9);
            QCOMPARE(ov.peakMemory[i], plain.peakMemory[i]);
            faster += ov.timeMs[i] < plain.timeMs[i] - 1e-9;
        }
        QVERIFY(faster > 0);
    }

    /// Issue 17 item 7: FP8 as a search setting. On 8 x H100 every plan carries the format, is
    /// valid, and its fast-path time and memory are estimatePlan's; the best FP8 plan is faster
    /// than the best BF16 one. A TP degree whose shards FP8 GEMMs cannot run (FFN 11024 / 2 =
    /// 5512, not a multiple of 16) is pruned for divisibility; a group without FP8 is refused.
    void fp8Setting()
    {
        SearchRequest req = h100Request();
        const SearchResult bf = runSearch(req);
        req.space.fp8 = Fp8Format::Hybrid;
        const SearchResult f8 = runSearch(req);
        QCOMPARE(f8.fp8, Fp8Format::Hybrid);
        QVERIFY(f8.size() > 0);
        for (size_t i = 0; i < f8.size(); i += f8.size() / 40 + 1) {
            const Plan plan = f8.materialize(i);
            QCOMPARE(plan.fp8, Fp8Format::Hybrid);
            Diagnostics d;
            validatePlan(plan, req.cluster, req.model, d);
            QVERIFY2(d.empty(), plan.summary(req.cluster).c_str());
            const PlanEstimate e = estimatePlan(plan, req.cluster, req.model, nullptr, req.cost);
            QVERIFY2(rel(e.iterationTimeMs, f8.timeMs[i]) < 1e-9, plan.summary(req.cluster).c_str());
            QVERIFY2(rel(e.peakUtilisation, f8.peakMemory[i]) < 1e-9, plan.summary(req.cluster).c_str());
        }
        const auto best = [](const SearchResult &r) { return *std::min_element(r.timeMs.begin(), r.timeMs.end()); };
        QVERIFY2(best(f8) < 0.95 * best(bf), (std::to_string(best(f8)) + " vs " + std::to_string(best(bf))).c_str());

        SearchRequest odd = req;
        odd.model.shape.ffnHidden = 11024;
        const SearchResult o = runSearch(odd);
        QVERIFY(o.size() > 0);
        for (size_t i = 0; i < o.size(); ++i)
            for (const Stage &st : o.materialize(i).stages)
                for (const Replica &r : st.replicas)
                    QVERIFY2(r.tp != 2, "TP 2 shards FFN 11024 into 5512, which FP8 cannot run");
        odd.space.fp8 = Fp8Format::Off;
        bool bf16HasTp2 = false;
        const SearchResult ob = runSearch(odd);
        for (size_t i = 0; i < ob.size() && !bf16HasTp2; ++i)
            bf16HasTp2 = ob.materialize(i).stages.front().replicas.front().tp == 2;
        QVERIFY(bf16HasTp2);

        SearchRequest mixed = request20(1);
        mixed.space.fp8 = Fp8Format::E4M3;
        try {
            runSearch(mixed);
            QFAIL("expected a refusal: A100 and MI250X have no FP8");
        } catch (const std::invalid_argument &e) {
            QVERIFY2(std::string(e.what()).find("a100-40gb-sxm") != std::string::npos, e.what());
        }
    }

    /// Issue 17 item 5: data-parallel sharding as a dimension. On 8 x H100 with llama2-7b, every
    /// level: the none / optim rows are exactly the default search's, every Megatron-FSDP row is a
    /// single-stage plan with a DP group that validates, whose time, memory and learned-model
    /// features the fast path computes as estimatePlan does; FSDP on pipelines is pruned for
    /// "launcher"; sharding the weights lowers the fullest GPU of the same shape.
    void dpShardingDimension()
    {
        SearchRequest req = h100Request();
        const SearchResult plain = runSearch(req);
        req.space.dpSharding = {DpSharding::None, DpSharding::Optimizer, DpSharding::Gradients, DpSharding::Parameters};
        req.collectFeatures = true;
        const SearchResult all = runSearch(req);
        QVERIFY(all.pruned.launcher > plain.pruned.launcher);
        std::multiset<std::string> plainRows, allRows;
        for (size_t i = 0; i < plain.size(); ++i)
            plainRows.insert(plain.materialize(i).summary(req.cluster));
        size_t fsdpRows = 0;
        std::map<std::string, std::map<DpSharding, double>> peakByShape;
        for (size_t i = 0; i < all.size(); ++i) {
            const Plan plan = all.materialize(i);
            const DpSharding d = dpShardingOf(plan);
            if (d < DpSharding::Gradients) {
                allRows.insert(plan.summary(req.cluster));
                Plan shape = plan;
                setDpSharding(shape, DpSharding::None);
                peakByShape[shape.summary(req.cluster)][d] = all.peakBytes[i];
                continue;
            }
            ++fsdpRows;
            QCOMPARE(plan.pp(), 1);
            QVERIFY(plan.stages.front().dp() > 1);
            Diagnostics diag;
            validatePlan(plan, req.cluster, req.model, diag);
            QVERIFY2(diag.empty(), plan.summary(req.cluster).c_str());
            const PlanEstimate e = estimatePlan(plan, req.cluster, req.model, nullptr, req.cost);
            QVERIFY2(rel(e.iterationTimeMs, all.timeMs[i]) < 1e-9, plan.summary(req.cluster).c_str());
            QVERIFY2(rel(e.peakUtilisation, all.peakMemory[i]) < 1e-9, plan.summary(req.cluster).c_str());
            QVERIFY(e.stages.front().fsdpCommMs > 0);
            const FeatureVector ref = encodeFeatures(featureInputs(plan, req.cluster, req.model, e));
            for (size_t f = 0; f < kFeatureCount; ++f)
                QVERIFY2(std::abs(all.features[i * kFeatureCount + f] - ref[f])
                             <= 1e-4 * std::max(1.0, std::abs(static_cast<double>(ref[f]))),
                         (plan.summary(req.cluster) + " feature " + featureNames()[f]).c_str());
            Plan shape = plan;
            setDpSharding(shape, DpSharding::None);
            peakByShape[shape.summary(req.cluster)][d] = all.peakBytes[i];
        }
        QVERIFY(fsdpRows > 0);
        QVERIFY(plainRows == allRows);
        size_t compared = 0;
        for (const auto &[shape, peaks] : peakByShape)
            if (peaks.count(DpSharding::Parameters) && peaks.count(DpSharding::Optimizer)) {
                QVERIFY2(peaks.at(DpSharding::Parameters) < peaks.at(DpSharding::Optimizer), shape.c_str());
                ++compared;
            }
        QVERIFY(compared > 0);
    }

    /// Issue 17 item 1: the interleaved schedule as a dimension. On 8 x H100 with llama2-7b
    /// (32 layers), virtual stages {1, 2, 4}: the v = 1 rows are exactly the plain search's, every
    /// v > 1 row is a valid Megatron-LM interleaved plan (p >= 3, micro-batches in groups of p,
    /// whole chunks per stage) whose time and memory the fast path computes as estimatePlan does.
    void interleavedDimension()
    {
        SearchRequest plain;
        plain.cluster = loadCluster(kSamples + "/h100-8x.json");
        plain.model = resolveModel("llama2-7b");
        plain.model.training.globalBatch = 32;
        plain.space.stagesPerGroup = {1, 2, 4, 8};
        plain.space.tensorParallel = {1, 2};
        plain.space.microBatches = {1, 2};
        plain.space.recompute = {RecomputeMethod::None, RecomputeMethod::Full};
        plain.threads = 2;
        SearchRequest vpp = plain;
        vpp.space.virtualStages = {1, 2, 4};
        QCOMPARE(baseConfigurationBound(vpp), 3 * baseConfigurationBound(plain));
        const SearchResult a = runSearch(plain), b = runSearch(vpp);
        std::multiset<std::string> plainKeys, vppPlainKeys;
        for (size_t i = 0; i < a.size(); ++i)
            plainKeys.insert(a.signatureKey(i));
        size_t interleaved = 0;
        double bestPlain8 = 1e300, bestInterleaved8 = 1e300; // PP 8 plans
        for (size_t i = 0; i < b.size(); ++i) {
            const Plan plan = b.materialize(i);
            if (plan.pp() == 8)
                (plan.virtualStages > 1 ? bestInterleaved8 : bestPlain8)
                    = std::min(plan.virtualStages > 1 ? bestInterleaved8 : bestPlain8, b.timeMs[i]);
            QCOMPARE(b.signatureKey(i), planSignature(plan, b.cluster).key);
            if (plan.virtualStages == 1) {
                vppPlainKeys.insert(b.signatureKey(i));
                continue;
            }
            ++interleaved;
            Diagnostics d;
            validatePlan(plan, vpp.cluster, vpp.model, d);
            QVERIFY2(d.empty(),
                     (plan.summary(vpp.cluster) + (d.empty() ? "" : ": " + d.items().front().message)).c_str());
            QVERIFY(plan.pp() >= 3 && plan.microBatches() % plan.pp() == 0);
            if (i % 7 == 0) {
                const PlanEstimate e = estimatePlan(plan, vpp.cluster, vpp.model, nullptr, vpp.cost);
                QVERIFY2(rel(e.iterationTimeMs, b.timeMs[i]) < 1e-9, plan.summary(vpp.cluster).c_str());
                QVERIFY2(rel(e.peakBytes, b.peakBytes[i]) < 1e-9, plan.summary(vpp.cluster).c_str());
            }
        }
        QVERIFY2(interleaved > 100, std::to_string(interleaved).c_str());
        QVERIFY(plainKeys == vppPlainKeys);
        // At PP 8 with up to 32 micro-batches the bubble (7 of 39 steps) shrinks more than the
        // extra sends cost: the fastest PP 8 plan is interleaved.
        QVERIFY2(bestInterleaved8 < bestPlain8,
                 (std::to_string(bestInterleaved8) + " vs " + std::to_string(bestPlain8)).c_str());
        checkSearchInvariants(b);
    }

    /// Issue 17 item 2: context parallelism as a dimension. llama2-7b at 32k tokens on 8 x H100,
    /// CP {1, 2, 4, 8}: CP plans that fit are found, each a valid plan (replicas of TP x CP GPUs
    /// of one node) priced by the fast path exactly as estimatePlan prices it; the CP 1 rows are
    /// the plain search's.
    void contextParallelDimension()
    {
        SearchRequest plain;
        plain.cluster = loadCluster(kSamples + "/h100-8x.json");
        plain.model = resolveModel("llama2-7b");
        plain.model.shape.seqLength = 32768;
        plain.model.training.globalBatch = 16;
        plain.space.microBatches = {1, 2};
        plain.threads = 2;
        for (CpComm comm : {CpComm::P2P, CpComm::A2A}) {
            SearchRequest cp = plain;
            cp.space.contextParallel = {1, 2, 4, 8};
            cp.space.cpComm = comm;
            QCOMPARE(baseConfigurationBound(cp), 4 * baseConfigurationBound(plain));
            const SearchResult a = runSearch(plain), b = runSearch(cp);
            std::multiset<std::string> plainKeys, cpPlainKeys;
            for (size_t i = 0; i < a.size(); ++i)
                plainKeys.insert(a.signatureKey(i));
            std::set<int> sizes;
            for (size_t i = 0; i < b.size(); ++i) {
                const Plan plan = b.materialize(i);
                QVERIFY2(b.signatureKey(i) == planSignature(plan, b.cluster).key,
                         (b.signatureKey(i) + "\n" + planSignature(plan, b.cluster).key).c_str());
                if (plan.contextParallel == 1) {
                    cpPlainKeys.insert(b.signatureKey(i));
                    continue;
                }
                sizes.insert(plan.contextParallel);
                QCOMPARE(plan.cpComm, comm);
                Diagnostics d;
                validatePlan(plan, cp.cluster, cp.model, d);
                QVERIFY2(d.empty(),
                         (plan.summary(cp.cluster) + (d.empty() ? "" : ": " + d.items().front().message)).c_str());
                const PlanEstimate e = estimatePlan(plan, cp.cluster, cp.model, nullptr, cp.cost);
                QVERIFY(!e.oom);
                QVERIFY2(rel(e.iterationTimeMs, b.timeMs[i]) < 1e-9, plan.summary(cp.cluster).c_str());
                QVERIFY2(rel(e.peakBytes, b.peakBytes[i]) < 1e-9, plan.summary(cp.cluster).c_str());
                QVERIFY2(std::abs(e.imbalance - b.imbalance[i]) < 1e-9, plan.summary(cp.cluster).c_str());
            }
            QVERIFY(plainKeys == cpPlainKeys);
            // Every size appears (a2a: 32 heads / TP must divide by CP, so TP 8 pairs only with CP 1).
            QCOMPARE(sizes, (std::set<int> {2, 4, 8}));
            checkSearchInvariants(b);
        }
    }

    /// Issue 17 item 4: partial recompute. llama2-7b on 8 x H100 with full recompute or none:
    /// every fitting plan that recomputes whole stages is also tried with the fewest recomputed
    /// layers per stage that fit. Checked against estimatePlan as an independent brute force: each
    /// such plan fits, one layer fewer on any stage (on Megatron-LM: one fewer per chunk on every
    /// stage) does not, it is faster than its whole-stage twin, and the fast path prices it as
    /// estimatePlan does. Without the option the search is the old one, row for row.
    void partialRecomputeFewestLayersThatFit()
    {
        for (const LaunchTarget target : {LaunchTarget::Any, LaunchTarget::Megatron}) {
            SearchRequest req;
            req.cluster = loadCluster(kSamples + "/h100-8x.json");
            req.model = resolveModel("llama2-7b");
            req.model.training.globalBatch = 32;
            req.space.stagesPerGroup = {1, 2, 4};
            req.space.tensorParallel = {1, 2};
            req.space.microBatches = {1, 2, 4};
            req.space.recompute = {RecomputeMethod::None, RecomputeMethod::Full};
            req.space.virtualStages = {1, 2};
            req.space.target = target;
            req.threads = 2;
            SearchRequest whole = req;
            whole.space.partialRecompute = false;
            const SearchResult r = runSearch(req), w = runSearch(whole);
            checkSearchInvariants(r);
            std::multiset<std::string> wholeKeys, rWholeKeys;
            for (size_t i = 0; i < w.size(); ++i)
                wholeKeys.insert(w.signatureKey(i));
            // Whole-stage twin of each partial row: same base and split, every Full stage whole.
            std::map<std::pair<uint32_t, std::vector<int>>, double> wholeTime;
            for (size_t i = 0; i < r.size(); ++i)
                if (!r.recomputedLayersOf(i)) {
                    const Plan plan = r.materialize(i);
                    std::vector<int> split;
                    for (const Stage &st : plan.stages)
                        split.push_back(st.layerCount);
                    wholeTime[{r.baseOf[i], split}] = r.timeMs[i];
                }
            size_t partial = 0, withNone = 0, interleaved = 0;
            double bestPartial = 1e300, bestWhole = 1e300; // fastest partial / whole-stage full
            for (size_t i = 0; i < r.size(); ++i) {
                const Plan plan = r.materialize(i);
                QCOMPARE(r.signatureKey(i), planSignature(plan, r.cluster).key);
                if (!r.recomputedLayersOf(i)) {
                    rWholeKeys.insert(r.signatureKey(i));
                    if (r.recomputeOf(i).front() == RecomputeMethod::Full)
                        bestWhole = std::min(bestWhole, r.timeMs[i]);
                    continue;
                }
                ++partial;
                bestPartial = std::min(bestPartial, r.timeMs[i]);
                const std::string what = plan.summary(r.cluster);
                Diagnostics d;
                validatePlan(plan, req.cluster, req.model, d);
                QVERIFY2(d.empty(), what.c_str());
                if (target == LaunchTarget::Megatron) {
                    Diagnostics ld;
                    QVERIFY2(checkLaunchTarget(target, plan, req.cluster, req.model, ld), what.c_str());
                }
                const PlanEstimate e = estimatePlan(plan, req.cluster, req.model, nullptr, req.cost);
                QVERIFY2(!e.oom, what.c_str());
                QVERIFY2(rel(e.iterationTimeMs, r.timeMs[i]) < 1e-9, what.c_str());
                QVERIFY2(rel(e.peakBytes, r.peakBytes[i]) < 1e-9, what.c_str());
                std::vector<int> split;
                for (const Stage &st : plan.stages)
                    split.push_back(st.layerCount);
                const auto twin = wholeTime.find({r.baseOf[i], split});
                QVERIFY2(twin != wholeTime.end(), what.c_str());
                QVERIFY2(r.timeMs[i] < twin->second, what.c_str());
                const int v = plan.virtualStages;
                interleaved += v > 1;
                // Recomputed layers of stage s, in the plan's terms (0 = none).
                const auto layersOf = [](const Stage &st) {
                    return st.recompute.method != RecomputeMethod::Full ? 0
                        : st.recompute.layers == 0                      ? st.layerCount
                                                                        : st.recompute.layers;
                };
                const auto withLayers = [](Stage &st, int k) {
                    st.recompute = k == 0 ? Recompute {} : Recompute {RecomputeMethod::Full, k};
                };
                const auto ooms
                    = [&](const Plan &q) { return estimatePlan(q, req.cluster, req.model, nullptr, req.cost).oom; };
                if (target == LaunchTarget::Megatron) {
                    // One "block N" for the job: N per chunk, min(N, chunk layers).
                    int n = 0;
                    for (const Stage &st : plan.stages) {
                        QCOMPARE(st.recompute.method, RecomputeMethod::Full);
                        n = std::max(n, layersOf(st) / v);
                    }
                    for (const Stage &st : plan.stages)
                        QCOMPARE(layersOf(st), v * std::min(n, st.layerCount / v));
                    Plan fewer = plan;
                    for (Stage &st : fewer.stages)
                        withLayers(st, v * std::min(n - 1, st.layerCount / v));
                    QVERIFY2(n == 1 || ooms(fewer), what.c_str());
                    continue;
                }
                for (size_t s = 0; s < plan.stages.size(); ++s) {
                    const int k = layersOf(plan.stages[s]);
                    withNone += plan.stages[s].recompute.method == RecomputeMethod::None;
                    if (k == 0 || r.recomputeOf(i).front() != RecomputeMethod::Full)
                        continue;
                    QCOMPARE(k % v, 0);
                    Plan fewer = plan;
                    withLayers(fewer.stages[s], k - v);
                    QVERIFY2(ooms(fewer), (what + ", stage " + std::to_string(s)).c_str());
                }
            }
            QVERIFY(wholeKeys == rWholeKeys);
            QCOMPARE(r.evaluated, w.evaluated + partial);
            QVERIFY2(partial > 50, std::to_string(partial).c_str());
            QVERIFY(interleaved > 0);
            if (target == LaunchTarget::Any)
                QVERIFY2(withNone > 0, "some stage fits without recompute while another needs it");
            QVERIFY2(bestPartial < bestWhole,
                     (std::to_string(bestPartial) + " vs " + std::to_string(bestWhole)).c_str());
        }
    }

    /// Issue 17 item 3: sequence parallelism is not enumerated because it weakly dominates TP
    /// without it in the cost model. Checked on plans of the default 20-GPU space with TP > 1 (and
    /// recompute of every kind): switched off, no plan gets faster or smaller, and each gets
    /// strictly smaller activations with it.
    void sequenceParallelDominates()
    {
        const SearchResult &r = mDefault;
        QVERIFY(r.sequenceParallel); // the default
        SearchRequest req = request20(1);
        int checked = 0;
        for (size_t i = 0; i < r.size() && checked < 300; i += 997) {
            Plan on = r.materialize(i);
            int maxTp = 1;
            for (const Stage &st : on.stages)
                for (const Replica &rep : st.replicas)
                    maxTp = std::max(maxTp, rep.tp);
            if (maxTp == 1)
                continue;
            Plan off = on;
            off.sequenceParallel = false;
            const PlanEstimate a = estimatePlan(on, req.cluster, req.model, nullptr, req.cost);
            const PlanEstimate b = estimatePlan(off, req.cluster, req.model, nullptr, req.cost);
            QVERIFY2(a.iterationTimeMs <= b.iterationTimeMs * (1 + 1e-12), on.summary(req.cluster).c_str());
            QVERIFY2(a.peakBytes <= b.peakBytes * (1 + 1e-12), on.summary(req.cluster).c_str());
            double actOn = 0, actOff = 0;
            for (size_t g = 0; g < a.gpus.size(); ++g) {
                actOn += a.gpus[g].activationBytes;
                actOff += b.gpus[g].activationBytes;
            }
            QVERIFY(actOn < actOff);
            ++checked;
        }
        QVERIFY2(checked >= 100, std::to_string(checked).c_str());
    }

    void defaultSpaceSizeAndCounts()
    {
        const SearchResult &r = mDefault;
        // The MemX paper's 31,240 configurations on 20 GPUs: our default space holds more valid ones.
        QVERIFY2(r.evaluated >= 31240, std::to_string(r.evaluated).c_str());
        QCOMPARE(r.evaluated, static_cast<uint64_t>(r.size()));
        QCOMPARE(r.enumerated, r.evaluated + r.pruned.total());
        QVERIFY(r.pruned.outOfMemory > 0);
        QVERIFY(!r.cancelled);
        // Narrowing a dimension shrinks the space; widening grows it.
        SearchRequest narrow = request20(2);
        narrow.space.recompute = {RecomputeMethod::Full};
        const SearchResult n = runSearch(narrow);
        QVERIFY(n.enumerated < r.enumerated);
        for (size_t i = 0; i < n.size(); i += 101)
            for (RecomputeMethod m : n.recomputeOf(i))
                QCOMPARE(m, RecomputeMethod::Full);
    }

    /// A distributed optimizer over DP 1 shards nothing: when the space offers both optimizers,
    /// such a configuration is the plain one again and is pruned as a duplicate. Checked against
    /// the two one-optimizer searches: both = plain + (dist-opt - dist-opt ones with every DP 1).
    void distributedOptimizerOverDp1IsADuplicate()
    {
        SearchRequest both = request20(2);
        both.space.tensorParallel = {2, 4, 8}; // wide TP: stages with DP 1 exist
        both.space.stagesPerGroup = {1, 2};
        both.space.microBatches = {1, 2};
        SearchRequest plain = both, dist = both;
        plain.space.dpSharding = {DpSharding::None};
        dist.space.dpSharding = {DpSharding::Optimizer};
        const SearchResult rb = runSearch(both), rp = runSearch(plain), rd = runSearch(dist);
        const auto allDp1 = [](const SearchResult &r, size_t i) {
            const Plan plan = r.materialize(i);
            return std::all_of(plan.stages.begin(), plan.stages.end(),
                               [](const Stage &s) { return s.replicas.size() == 1; });
        };
        uint64_t distDp1 = 0, plainDp1 = 0;
        for (size_t i = 0; i < rd.size(); ++i)
            distDp1 += allDp1(rd, i);
        for (size_t i = 0; i < rp.size(); ++i)
            plainDp1 += allDp1(rp, i);
        QVERIFY(distDp1 > 0); // the check is not vacuous
        QCOMPARE(distDp1, plainDp1); // the same plans, one per optimizer
        QCOMPARE(rb.evaluated, rp.evaluated + rd.evaluated - distDp1);
        for (size_t i = 0; i < rb.size(); ++i)
            if (rb.materialize(i).distributedOptimizer)
                QVERIFY(!allDp1(rb, i));
        QCOMPARE(rb.enumerated, rb.evaluated + rb.pruned.total());
    }

    void sensiblePlans()
    {
        // Fast GPUs get more layers: in the time-best plan, the H100 stage (4 x 989 TFLOP/s)
        // carries more layers than the MI250X stage (8 x 191.5 TFLOP/s at a lower efficiency).
        const SearchResult &r = mDefault;
        const Plan best = r.materialize(rank(r, ObjectiveWeights::timeOnly(), 1).front());
        const Cluster &c = r.cluster;
        auto deviceOf = [&](const Stage &s) { return c.devices[c.findNode(s.replicas[0].node)->device].id; };
        int h100 = 0, mi = 0;
        for (const Stage &s : best.stages) {
            if (deviceOf(s) == "h100-sxm")
                h100 += s.layerCount;
            if (deviceOf(s) == "mi250x")
                mi += s.layerCount;
        }
        QVERIFY2(h100 > mi, best.summary(c).c_str());

        // Memory-poor GPUs recompute or get fewer layers: on the consumer cluster, the 24 GB
        // RTX 4090 stages of the best plan hold fewer layers per GPU than the A100-80GB stages,
        // or recompute.
        SearchRequest cons;
        cons.cluster = loadCluster(kSamples + "/paper-20gpu-mixed-consumer.json");
        cons.model = resolveModel("llama2-7b");
        cons.space = smallRequest(2).space;
        cons.threads = 2;
        const SearchResult rc = runSearch(cons);
        QVERIFY(rc.size() > 0);
        for (uint32_t i : rank(rc, ObjectiveWeights::timeOnly(), 5)) {
            const Plan p = rc.materialize(i);
            double rtxPerGpu = 0, a100PerGpu = 0;
            bool rtxRecomputes = false;
            for (const Stage &s : p.stages) {
                const std::string dev = rc.cluster.devices[rc.cluster.findNode(s.replicas[0].node)->device].id;
                const int gpus = s.dp() * s.replicas[0].tp;
                if (dev == "rtx-4090") {
                    rtxPerGpu = std::max(rtxPerGpu, static_cast<double>(s.layerCount) / gpus);
                    rtxRecomputes = rtxRecomputes || s.recompute.method != RecomputeMethod::None;
                }
                if (dev == "a100-80gb-sxm")
                    a100PerGpu = std::max(a100PerGpu, static_cast<double>(s.layerCount) / gpus);
            }
            QVERIFY2(rtxRecomputes || rtxPerGpu < a100PerGpu, p.summary(rc.cluster).c_str());
        }
    }

    void cancelStopsEarly()
    {
        int calls = 0;
        const SearchResult r = runSearch(request20(2), [&](size_t, size_t) {
            ++calls;
            return false;
        });
        QVERIFY(r.cancelled);
        QVERIFY(calls >= 1);
        QVERIFY(r.evaluated < mDefault.evaluated);
        QCOMPARE(r.enumerated, r.evaluated + r.pruned.total() + 0 * calls);
    }

    void boundAndBudget()
    {
        // The bound equals the number of bases the engine walks (progress total) when no
        // pipeline exceeds the depth cap.
        size_t total = 0;
        SearchRequest r = smallRequest(2);
        runSearch(r, [&](size_t, size_t t) {
            total = t;
            return true;
        });
        QCOMPARE(static_cast<uint64_t>(total), baseConfigurationBound(r));
        // 20-GPU default without mixed stages: 6 orders x (6 x 7 x 5) (stages, TP) options x 3
        // micro-batches x 3^3 recompute x 2 = 204,120 bases. Mixed stages add one partition per
        // pair of device types: A100+H100 (5 options: s=1 TP 1,2,4; s=2 TP 1,2) x MI250X 7 x 2
        // orders = 70, A100+MI250X (6) x H100 5 x 2 = 60, MI250X+H100 (5) x A100 6 x 2 = 60:
        // 190 pipelines x 162 = 30,780 more, 234,900 in all; within the budget, nothing narrowed.
        SearchRequest d = request20(2);
        QCOMPARE(baseConfigurationBound(d), uint64_t(234900));
        QVERIFY(narrowToBudget(d, 500000).empty());
        d.space.mixedStages = false;
        QCOMPARE(baseConfigurationBound(d), uint64_t(204120));
        // 512 GPUs: 4 groups x 8 options, 24 orders = 98,304 pipelines, plus 6 pairs x 8^3 x 3! =
        // 18,432 with a mixed stage: 116,736 x 3 x 81 x 2 = 56,733,696 bases; narrowing drops the
        // mixed stages, the permutations, then TP 1 and 2.
        SearchRequest big;
        big.cluster = loadCluster(kSamples + "/cross-vendor-512gpu.json");
        big.model = resolveModel("llama2-7b");
        QCOMPARE(baseConfigurationBound(big), uint64_t(56733696));
        const auto notes = narrowToBudget(big, 500000);
        QCOMPARE(notes.size(), size_t(4));
        QVERIFY(!big.space.mixedStages);
        QVERIFY(!big.space.permuteGroups);
        QCOMPARE(big.space.tensorParallel, (std::vector<int> {4, 8}));
        QVERIFY(baseConfigurationBound(big) <= 500000);
    }

    /// mixedMicroBatches by hand: 2 replicas of part 1 and 1 of part 2 carry 8 sequences.
    /// Equal speeds: (1,6) pace 6, (2,4) pace 4, (3,2) pace 3 -> (3,2). Part 2 three times as fast:
    /// paces max(b1, b2/3) = 2, 2, 3 -> the smallest b1 among the two best, (1,6). No solution
    /// when the parts cannot add up (2 b1 + 2 b2 = 5) or there are fewer sequences than replicas.
    void mixedMicroBatchSplit()
    {
        using P = std::optional<std::pair<int, int>>;
        QCOMPARE(mixedMicroBatches(8, 2, 1, 1.0, 1.0), P({3, 2}));
        QCOMPARE(mixedMicroBatches(8, 2, 1, 1.0, 3.0), P({1, 6}));
        QCOMPARE(mixedMicroBatches(12, 4, 2, 2.0, 1.0), P({2, 2})); // 4x2 + 2x2; (1,4) paces 4
        QCOMPARE(mixedMicroBatches(5, 2, 2, 1.0, 1.0), P());
        QCOMPARE(mixedMicroBatches(2, 2, 1, 1.0, 1.0), P());
    }

    /// Mixed-type stages in the 20-GPU default space (target Any): a stage's DP group spans two
    /// node groups of different device types; the faster part's replicas carry at least the
    /// slower part's micro-batch, the parts add up to the stage's samples per step, and the fast
    /// path agrees with estimatePlan (which runs a stage at its slowest replica's pace and
    /// reduces gradients over every link the mixed group spans).
    void mixedStagesInTheSpace()
    {
        const SearchResult &r = mDefault;
        SearchRequest req = request20(1);
        std::vector<uint32_t> mixed;
        for (size_t i = 0; i < r.size(); ++i) {
            const auto b = r.decodeBase(r.baseOf[i]);
            for (const SearchStage &s : r.pipelines[b.pipeline].stages)
                if (s.mixed()) {
                    mixed.push_back(static_cast<uint32_t>(i));
                    break;
                }
        }
        QVERIFY2(mixed.size() > 1000, std::to_string(mixed.size()).c_str());
        size_t proportional = 0;
        for (size_t k = 0; k < mixed.size(); k += mixed.size() / 300 + 1) {
            const uint32_t i = mixed[k];
            const Plan plan = r.materialize(i);
            Diagnostics d;
            validatePlan(plan, req.cluster, req.model, d);
            QVERIFY2(d.empty(), plan.summary(req.cluster).c_str());
            const auto b = r.decodeBase(r.baseOf[i]);
            const SearchResult::Pipeline &pl = r.pipelines[b.pipeline];
            for (size_t si = 0; si < pl.stages.size(); ++si) {
                const SearchStage &s = pl.stages[si];
                if (!s.mixed())
                    continue;
                const Stage &st = plan.stages[si];
                QCOMPARE(st.dp(), s.dp);
                const int b1 = st.replicas.front().microBatch, b2 = st.replicas.back().microBatch;
                QVERIFY(req.cluster.findNode(st.replicas.front().node)->device
                        != req.cluster.findNode(st.replicas.back().node)->device);
                if (s.weight > s.weight2)
                    QVERIFY(b1 >= b2);
                if (s.weight2 > s.weight)
                    QVERIFY(b2 >= b1);
                proportional += b1 != b2;
            }
            const PlanEstimate e = estimatePlan(plan, req.cluster, req.model, nullptr, req.cost);
            QVERIFY2(rel(e.iterationTimeMs, r.timeMs[i]) < 1e-9, plan.summary(req.cluster).c_str());
            QVERIFY2(rel(e.peakUtilisation, r.peakMemory[i]) < 1e-9, plan.summary(req.cluster).c_str());
            QVERIFY2(std::abs(e.imbalance - r.imbalance[i]) < 1e-9, plan.summary(req.cluster).c_str());
            QVERIFY(rel(e.peakBytes, r.peakBytes[i]) < 1e-9);
        }
        QVERIFY(proportional > 0); // faster replicas really take larger micro-batches
        // Without the dimension no mixed stage appears, and everything else is unchanged.
        SearchRequest plain = request20(2);
        plain.space.mixedStages = false;
        const SearchResult p = runSearch(plain);
        QCOMPARE(p.size() + mixed.size(), r.size());
        for (const SearchResult::Pipeline &pl : p.pipelines)
            for (const SearchStage &s : pl.stages)
                QVERIFY(!s.mixed());
        // FlagScale meshes have one device type: no mixed stage under that target.
        SearchRequest fs = smallRequest(2);
        fs.space.target = LaunchTarget::FlagScale;
        fs.cluster.groups.erase(fs.cluster.groups.begin() + 1); // the MI250X node: no ROCm in FlagScale
        const SearchResult f = runSearch(fs);
        QVERIFY(f.size() > 0);
        for (const SearchResult::Pipeline &pl : f.pipelines)
            for (const SearchStage &s : pl.stages)
                QVERIFY(!s.mixed());
    }

    void badRequestsAreErrors()
    {
        SearchRequest r = request20(1);
        r.space.microBatches = {};
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, runSearch(r));
        r = request20(1);
        r.globalBatch = -1;
        r.model.training.globalBatch = 0;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, runSearch(r));
        r = request20(1);
        r.cluster.groups.clear();
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, runSearch(r));
    }
};

QTEST_GUILESS_MAIN(TestSearch)
#include "tst_search.moc"
