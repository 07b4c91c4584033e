// memx/evaluation: Metis (Um et al., USENIX ATC'24) re-implemented as a baseline planner.
#include "memx/evaluation/baseline_metis.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

using namespace memx;

static const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters/";

static bool near(double a, double b, double rel)
{
    return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)) + 1e-12;
}

#define QNEAR(a, b, rel)                                                                                               \
    QVERIFY2(near((a), (b), (rel)),                                                                                    \
             (std::string(#a " = ") + std::to_string(a) + ", expected " + std::to_string(b)).c_str())

/// Node "a" with 4 A100 80GB and node "h" with 4 H100 SXM, `interGBps` between them.
static Cluster twoTypeCluster(double interGBps = 25)
{
    const nlohmann::json j = {{"format", "memx.cluster/1"},
                              {"name", "a100+h100"},
                              {"nodes",
                               {{{"name", "a"}, {"gpu", "a100-80gb-sxm"}, {"gpus", 4}, {"count", 1}},
                                {{"name", "h"}, {"gpu", "h100-sxm"}, {"gpus", 4}, {"count", 1}}}},
                              {"network", {{"interNode", {{"bandwidthGBps", interGBps}, {"latencyUs", 5}}}}}};
    Diagnostics diags;
    Cluster c = parseCluster(j, builtinCatalogue(), diags);
    if (!diags.empty())
        qFatal("bad test cluster");
    return c;
}

static Replica replicaOf(const std::string &node, std::vector<int> gpus, int mb)
{
    Replica r;
    r.node = node;
    r.tp = static_cast<int>(gpus.size());
    r.gpus = std::move(gpus);
    r.microBatch = mb;
    return r;
}

static std::string text(const Diagnostics &d)
{
    std::string t;
    for (const Diagnostic &x : d.items())
        t += x.toString() + "\n";
    return t;
}

/// Every pick: valid MemX plans that fit by Metis' memory model, top sorted by its time,
/// predicted = metisEstimate of the pick, every GPU used (Metis plans all of them).
static void checkPick(const BaselinePick &pick, const BaselineContext &ctx)
{
    QVERIFY2(pick.hasPlan, pick.refusal.c_str());
    QVERIFY(!pick.top.empty());
    QCOMPARE(pick.top.front(), pick.plan);
    QVERIFY(pick.configsExamined >= pick.top.size());
    double last = 0;
    for (const Plan &p : pick.top) {
        Diagnostics diags;
        validatePlan(p, ctx.cluster(), ctx.model(), diags);
        QVERIFY2(diags.empty(), text(diags).c_str());
        QCOMPARE(p.totalGpus(), ctx.cluster().totalGpus());
        for (const Stage &s : p.stages)
            QVERIFY(metisPowerOfTwo(s.dp() * s.replicas.front().tp));
        const BaselineEstimate e = metisEstimate(p, ctx);
        QVERIFY2(e.ok, e.error.c_str());
        QVERIFY(e.fits && e.peakUtilisation <= 1.0);
        QVERIFY(e.timeMs >= last);
        last = e.timeMs;
    }
    QCOMPARE(pick.predicted.timeMs, metisEstimate(pick.plan, ctx).timeMs);
}

class TestBaselineMetis : public QObject {
    Q_OBJECT

private slots:
    void refusesNonPowerOfTwoClusters()
    {
        for (const char *name :
             {"paper-20gpu-nvidia-amd.json", "paper-20gpu-mixed-consumer.json", "paper-60gpu-mixed-consumer.json"}) {
            const Cluster c = loadCluster(kSamples + name);
            const BaselineContext ctx(c, resolveModel("llama2-7b"), 1024, nullptr, CostOptions {});
            const BaselinePick pick = metisPlan(ctx, 5, {});
            QVERIFY(!pick.hasPlan);
            QVERIFY2(pick.refusal.find("power of two") != std::string::npos, pick.refusal.c_str());
            QVERIFY2(pick.refusal.find(std::to_string(c.totalGpus()) + " GPUs") != std::string::npos,
                     pick.refusal.c_str());
            QCOMPARE(pick.configsExamined, uint64_t(0));
        }
        QVERIFY(metisPowerOfTwo(16) && metisPowerOfTwo(1) && !metisPowerOfTwo(20) && !metisPowerOfTwo(0));
    }

    void deviceGroupsOfSixteenGpus()
    {
        // Worked by hand: 16 GPUs, groups >= 0.5 x 16 / stages.
        using V = std::vector<std::vector<int>>;
        QCOMPARE(metisGroupShapes(16, 1), (V {{16}}));
        QCOMPARE(metisGroupShapes(16, 2), (V {{8, 8}})); // >= 4: 8 + 8 only
        QCOMPARE(metisGroupShapes(16, 3), (V {{8, 4, 4}})); // >= 2.67
        QCOMPARE(metisGroupShapes(16, 4), (V {{8, 4, 2, 2}, {4, 4, 4, 4}})); // >= 2
        QVERIFY(metisGroupShapes(20, 2).empty());
        // Brute force: every non-increasing tuple of powers of two over 1..N, for N up to 64.
        for (int n : {1, 2, 4, 8, 16, 32, 64})
            for (int s = 1; s <= std::min(n, 12); ++s) {
                std::set<std::vector<int>> expected;
                std::vector<int> cur;
                std::function<void(int, int)> rec = [&](int left, int maxPart) {
                    if (static_cast<int>(cur.size()) == s) {
                        if (left == 0)
                            expected.insert(cur);
                        return;
                    }
                    for (int p = 1; p <= maxPart; p *= 2)
                        if (p <= left && p >= 0.5 * n / s) {
                            cur.push_back(p);
                            rec(left - p, p);
                            cur.pop_back();
                        }
                };
                rec(n, n);
                const V got = metisGroupShapes(n, s);
                QCOMPARE(std::set<std::vector<int>>(got.begin(), got.end()), expected);
                QCOMPARE(got.size(), expected.size());
            }
        bool capped = false;
        QCOMPARE(metisGroupOrders({8, 4, 4}, 10, capped), (V {{4, 4, 8}, {4, 8, 4}, {8, 4, 4}}));
        QVERIFY(!capped);
        QCOMPARE(metisGroupOrders({4, 2, 1, 1}, 5, capped).size(), size_t(5)); // 12 orders exist
        QVERIFY(capped);
    }

    void dataLoadBalancerAndLayerSplit()
    {
        // 10 sequences over weights 1 : 1 : 2 -> 2.5, 2.5, 5 -> floors 2, 2, 5, the one left to the
        // first largest remainder.
        QCOMPARE(metisBalanceBatch(10, {1, 1, 2}), (std::vector<int> {3, 2, 5}));
        QCOMPARE(metisBalanceBatch(8, {1, 1, 1, 1}), (std::vector<int> {2, 2, 2, 2}));
        // Every replica keeps a sequence: 3 over 1 : 100 : 1 -> 0, 2.94, 0 (+1 to the 2.94 ...).
        QCOMPARE(metisBalanceBatch(3, {1, 100, 1}), (std::vector<int> {1, 1, 1}));
        QVERIFY(metisBalanceBatch(2, {1, 1, 1}).empty());
        QVERIFY(metisBalanceBatch(4, {1, 0}).empty());
        // 32 layers at speeds 1 : 3 -> 224 sub-units 56 : 168 -> 8 : 24 layers.
        QCOMPARE(metisProportionalSplit(32, {1, 3}), (std::vector<int> {8, 24}));
        // 24 layers at 1 : 1 : 1.5 -> 168 units 48 : 48 : 72 -> 6.86 : 6.86 : 10.29 -> 7, 7, 10.
        QCOMPARE(metisProportionalSplit(24, {1, 1, 1.5}), (std::vector<int> {7, 7, 10}));
        // Every stage keeps a layer however slow.
        QCOMPARE(metisProportionalSplit(4, {1, 1000, 1}), (std::vector<int> {1, 2, 1}));
        QVERIFY(metisProportionalSplit(2, {1, 1, 1}).empty());
    }

    void iterationTimeByHand()
    {
        // Llama-2-7B (32 layers), gbs 64 on 4 A100 + 4 H100. Plan: stage 0 = layers 0-15 on a, TP1
        // x DP4, mb 2; stage 1 = layers 16-31 on h, TP2 x DP2, mb 4 and 3 + 5 (mixed batches are
        // Metis' DataLoadBalancer's kind). 8 sequences a step: B = 8.
        const Cluster c = twoTypeCluster();
        const Model m = resolveModel("llama2-7b");
        const BaselineContext ctx(c, m, 64, nullptr, CostOptions {});
        Plan p;
        p.globalBatch = 64;
        Stage s0, s1;
        s0.firstLayer = 0;
        s0.layerCount = 16;
        for (int g = 0; g < 4; ++g)
            s0.replicas.push_back(replicaOf("a", {g}, 2));
        s1.firstLayer = 16;
        s1.layerCount = 16;
        s1.replicas = {replicaOf("h", {0, 1}, 3), replicaOf("h", {2, 3}, 5)};
        p.stages = {s0, s1};
        Diagnostics d;
        validatePlan(p, c, m, d);
        QVERIFY2(d.empty(), text(d).c_str());
        const int a = c.findNode("a")->device, h = c.findNode("h")->device;
        auto layers = [](const BaselineLayerCosts &k, int from, int to) {
            double t = 0;
            for (int l = from; l < to; ++l)
                t += k.layerForwardMs[static_cast<size_t>(l)] + k.layerBackwardMs[static_cast<size_t>(l)];
            return t;
        };
        const BaselineLayerCosts &a1 = ctx.layerCosts(a, 1, 2);
        const double L0 = layers(a1, 0, 16) + a1.embeddingForwardMs + a1.embeddingBackwardMs;
        // b = 3 = 1 + 2 and b = 5 = 1 + 4: the profiled parts summed; the slower replica counts.
        auto part = [&](int mb) {
            const BaselineLayerCosts &k = ctx.layerCosts(h, 2, mb);
            return layers(k, 16, 32) + k.headForwardMs + k.headBackwardMs;
        };
        const double L1 = std::max(part(1) + part(2), part(1) + part(4));
        const BaselineLayerCosts &h2 = ctx.layerCosts(h, 2, 1);
        const BaselineLayerCosts &a11 = ctx.layerCosts(a, 1, 1);
        const double opt0 = 16 * a11.layerOptimizerMs + a11.embeddingOptimizerMs;
        const double opt1 = 16 * h2.layerOptimizerMs + h2.headOptimizerMs;
        // Bandwidths as Metis reads them: intra-node figures only (its get_inter_bandwidth bug).
        const double bwA = c.findNode("a")->intraLink.bandwidthGBps * 1e6;
        const double bwH = c.findNode("h")->intraLink.bandwidthGBps * 1e6;
        QVERIFY(bwA > 0 && bwH > 0);
        const double P0 = 16 * a11.layerParams + a11.embeddingParams, P1 = 16 * h2.layerParams + h2.headParams;
        const double dp0 = 2.0 * 3 / (4 * bwA) * P0 * 2, dp1 = 2.0 * 1 / (2 * bwH) * P1 * 2;
        const double pp0 = 2.0 * m.shape.seqLength * m.shape.hidden * 2 / std::min(bwA, bwH);
        const double expected = 7 * std::max(L0, L1) + L0 + L1 + std::max(opt0, opt1) + std::max(dp0, dp1) + pp0;
        const BaselineEstimate e = metisEstimate(p, ctx);
        QVERIFY2(e.ok, e.error.c_str());
        QNEAR(e.timeMs, expected, 1e-12);
        // Memory: per GPU, 16 B / param + activations of its batch; the fullest GPU.
        const double mem0 = 16 * (16 * a11.layerParams + a11.embeddingParams)
            + 2 * (16 * a11.layerActivationBytes + a11.embeddingActivationBytes);
        const double mem1
            = 16 * (16 * h2.layerParams + h2.headParams) + 5 * (16 * h2.layerActivationBytes + h2.logitsBytes);
        QNEAR(e.peakBytes, std::max(mem0, mem1), 1e-12);
        QNEAR(e.peakUtilisation, std::max(mem0 / ctx.memoryBytes(a), mem1 / ctx.memoryBytes(h)), 1e-12);
        // The published bandwidth rule: the inter-node link does not change Metis' figure.
        const Cluster fast = twoTypeCluster(400);
        const BaselineContext ctxFast(fast, m, 64, nullptr, CostOptions {});
        QCOMPARE(metisEstimate(p, ctxFast).timeMs, e.timeMs);
    }

    void plansOnPowerOfTwoClusters()
    {
        const Model m = resolveModel("llama2-7b");
        {
            const Cluster c = twoTypeCluster();
            const BaselineContext ctx(c, m, 64, nullptr, CostOptions {});
            const BaselinePick pick = metisPlan(ctx, 10, {});
            checkPick(pick, ctx);
            QVERIFY(pick.configsExamined > 10);
            // Metis uses every GPU and gives the faster H100s no fewer layers per GPU group.
            QCOMPARE(pick.plan.totalGpus(), 8);
        }
        {
            const Cluster c = loadCluster(kSamples + "h100-8x.json");
            const BaselineContext ctx(c, m, 1024, nullptr, CostOptions {});
            checkPick(metisPlan(ctx, 10, {}), ctx);
        }
    }

    void cancelStops()
    {
        const Cluster c = loadCluster(kSamples + "cross-vendor-512gpu.json");
        const BaselineContext ctx(c, resolveModel("llama2-7b"), 1024, nullptr, CostOptions {});
        int calls = 0;
        const BaselinePick pick = metisPlan(ctx, 5, [&](size_t, size_t) { return ++calls < 3; });
        QVERIFY(pick.cancelled);
        QVERIFY(!pick.hasPlan);
        QCOMPARE(calls, 3);
    }
};

QTEST_APPLESS_MAIN(TestBaselineMetis)
#include "tst_baseline_metis.moc"
