// memx/evaluation: Sailor (Strati et al., SOSP'25) re-implemented as a baseline planner.
#include "memx/evaluation/baseline_sailor.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"

#include <QElapsedTimer>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

using namespace memx;

static const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters/";
static constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

static bool near(double a, double b, double rel)
{
    return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)) + 1e-12;
}

#define QNEAR(a, b, rel)                                                                                               \
    QVERIFY2(near((a), (b), (rel)),                                                                                    \
             (std::string(#a " = ") + std::to_string(a) + ", expected " + std::to_string(b)).c_str())

/// Node "a" with 4 A100 80GB and node "h" with 4 H100 SXM, 25 GB/s and 5 us between them.
static Cluster twoTypeCluster()
{
    const nlohmann::json j = {{"format", "memx.cluster/1"},
                              {"name", "a100+h100"},
                              {"nodes",
                               {{{"name", "a"}, {"gpu", "a100-80gb-sxm"}, {"gpus", 4}, {"count", 1}},
                                {{"name", "h"}, {"gpu", "h100-sxm"}, {"gpus", 4}, {"count", 1}}}},
                              {"network", {{"interNode", {{"bandwidthGBps", 25}, {"latencyUs", 5}}}}}};
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

/// The checks every pick must pass: valid MemX plans of Sailor's space that fit by its memory
/// model, predicted = sailorEstimate, top sorted by its time (= by throughput at the fixed gbs).
static void checkPick(const BaselinePick &pick, const BaselineContext &ctx)
{
    QVERIFY2(pick.hasPlan, pick.refusal.c_str());
    QVERIFY(!pick.cancelled);
    QVERIFY(!pick.top.empty());
    QCOMPARE(pick.top.front(), pick.plan);
    QVERIFY(pick.configsExamined >= pick.top.size());
    double last = 0;
    for (const Plan &p : pick.top) {
        Diagnostics diags;
        validatePlan(p, ctx.cluster(), ctx.model(), diags);
        QVERIFY2(diags.empty(), (p.name + ":\n" + text(diags)).c_str());
        QCOMPARE(p.globalBatch, ctx.globalBatch());
        QVERIFY(p.totalGpus() <= ctx.cluster().totalGpus());
        // Sailor's space: the uniform split, one micro-batch size, the same dp on every stage, and
        // every replica's TP within its type's bounds for that stage.
        std::vector<int> counts;
        for (const Stage &s : p.stages)
            counts.push_back(s.layerCount);
        QCOMPARE(counts, sailorUniformSplit(ctx.model().shape.layers, p.pp()));
        const int mbs = p.stages.front().replicas.front().microBatch;
        for (size_t k = 0; k < p.stages.size(); ++k) {
            const Stage &s = p.stages[k];
            QCOMPARE(s.dp(), p.stages.front().dp());
            for (const Replica &r : s.replicas) {
                QCOMPARE(r.microBatch, mbs);
                const int device = ctx.cluster().findNode(r.node)->device;
                const SailorTpBounds b
                    = sailorTpBounds(ctx, device, mbs, s.firstLayer, s.layerCount, static_cast<int>(k), p.pp());
                QVERIFY2(std::find(b.allowed.begin(), b.allowed.end(), r.tp) != b.allowed.end(), p.name.c_str());
            }
        }
        const BaselineEstimate e = sailorEstimate(p, ctx);
        QVERIFY2(e.ok, e.error.c_str());
        QVERIFY(e.hasMemory);
        QVERIFY(e.fits);
        QVERIFY(e.peakUtilisation <= 1.0);
        QVERIFY(e.timeMs >= last);
        last = e.timeMs;
    }
    const BaselineEstimate first = sailorEstimate(pick.plan, ctx);
    QVERIFY(pick.predicted.ok);
    QCOMPARE(pick.predicted.timeMs, first.timeMs);
    QCOMPARE(pick.predicted.peakBytes, first.peakBytes);
    QCOMPARE(pick.predicted.fits, first.fits);
}

class TestBaselineSailor : public QObject {
    Q_OBJECT

private slots:
    void uniformSplitPutsExtraLayersLast()
    {
        QCOMPARE(sailorUniformSplit(24, 5), (std::vector<int> {4, 5, 5, 5, 5}));
        QCOMPARE(sailorUniformSplit(32, 3), (std::vector<int> {10, 11, 11}));
        QCOMPARE(sailorUniformSplit(32, 5), (std::vector<int> {6, 6, 6, 7, 7}));
        QCOMPARE(sailorUniformSplit(32, 4), (std::vector<int> {8, 8, 8, 8}));
        QCOMPARE(sailorUniformSplit(32, 1), (std::vector<int> {32}));
        QCOMPARE(sailorUniformSplit(24, 24), std::vector<int>(24, 1));
        QVERIFY(sailorUniformSplit(24, 25).empty());
        QVERIFY(sailorUniformSplit(24, 0).empty());
    }

    void iterationTimeOfTwoStagePlanByHand()
    {
        // Node a = 4 x A100 80GB (NVLink 300 GB/s, 3 us), node h = 4 x H100, 25 GB/s + 5 us between.
        // OPT-350M (24 layers, seq 2048, hidden 1024), gbs 16. Plan (heterogeneous replicas in stage 1):
        //   stage 0 = layers 0-11: a{0} TP1, a{1} TP1            (mb 2 each)
        //   stage 1 = layers 12-23: a{2,3} TP2, h{0} TP1         (mb 2 each)
        // 4 samples per step: B = 16 / 4 = 4 micro-batches.
        // layerCosts at mb 2 (ms, every layer the same):
        //   A100 TP1: layer fwd 0.96 + bwd 1.756151564, embedding 0.16 + 0.16, optimizer 0.2314923001
        //             per layer, 0.9859327121 embedding; 12,587,008 params / layer, 53,608,448 embedding
        //   A100 TP2: layer 1.04 + 1.52, head 1.794394604 + 2.973005551, optimizer 0.1157838156 per
        //             layer, 3.766552231e-5 head
        //   H100 TP1: layer 0.96 + 1.44, head 1.550153108 + 2.136512665, optimizer 0.1408993433 per
        //             layer, 2.292537313e-5 head; 2,048 head params (final norm; tied embeddings)
        // comp_0 = 12 x 2.716151564 + 0.32                      = 32.9138187707
        // comp_1 = max(A100 TP2 12 x 2.56 + 4.767400155 = 35.487400155, H100 12 x 2.4 + 3.686665773
        //              = 32.486665773)                          = 35.487400155
        // comm: 2 x 2048 x 1024 x 2 B = 8,388,608 B; bottleneck pair a -> h: 5 us + 8,388,608 / 25e9 s
        //   = 0.34054432 ms; comm_0 = comm_1 = 0.34054432 (one send each: activation / gradient)
        // update: 12 x 0.2314923001 + 0.9859327121 = 3.7638403133 (stage 0) > stage 1's
        //   max(1.389443453, 1.690815045)
        // T_pp = 3 x (35.487400155 + 0.34054432) + 2 x 0.34054432 + 32.9138187707 + 35.487400155
        //        + 3.7638403133                                  = 180.329981304
        // T_sync: stage 0 = 204,652,544 params (one bucket < 5e8), ring of 2 inside node a:
        //   2 x (3 us + 204,652,544 x 4 B / 2 / 300e9 B/s) = 2.73470058667 ms;
        //   stage 1 = its smallest TP (H100 TP1): 151,046,144 params, ring a <-> h:
        //   2 x (5 us + 151,046,144 x 4 / 2 / 25e9)        = 24.17738304 ms
        // T_iter = 180.329981304 + 24.17738304 = 204.507364344 ms
        const Cluster c = twoTypeCluster();
        const Model m = resolveModel("opt-350m");
        const BaselineContext ctx(c, m, 16, nullptr, CostOptions {});
        const int a = c.deviceIndex("a100-80gb-sxm"), h = c.deviceIndex("h100-sxm");
        const BaselineLayerCosts &A1 = ctx.layerCosts(a, 1, 2), &A2 = ctx.layerCosts(a, 2, 2),
                                 &H1 = ctx.layerCosts(h, 1, 2);
        QNEAR(sailorReplicaComputeMs(A1, 0, 12, true, false), 32.9138187707, 1e-9);
        QNEAR(sailorReplicaComputeMs(A2, 12, 12, false, true), 35.487400155, 1e-9);
        QNEAR(sailorReplicaComputeMs(H1, 12, 12, false, true), 32.486665773, 1e-9);
        QNEAR(A1.layerOptimizerMs, 0.2314923001, 1e-9);
        QNEAR(A1.embeddingOptimizerMs, 0.9859327121, 1e-9);
        QCOMPARE(A1.layerParams, 12587008.0);
        QCOMPARE(A1.embeddingParams, 53608448.0);
        QCOMPARE(H1.headParams, 2048.0);
        QCOMPARE(ctx.link(0, 0).bandwidthGBps, 300.0);
        QCOMPARE(ctx.link(0, 1).bandwidthGBps, 25.0);

        Plan p;
        p.globalBatch = 16;
        p.stages = {Stage {0, 12, {}, {replicaOf("a", {0}, 2), replicaOf("a", {1}, 2)}},
                    Stage {12, 12, {}, {replicaOf("a", {2, 3}, 2), replicaOf("h", {0}, 2)}}};
        Diagnostics diags;
        validatePlan(p, c, m, diags);
        QVERIFY2(diags.empty(), text(diags).c_str());
        const BaselineEstimate e = sailorEstimate(p, ctx);
        QVERIFY2(e.ok, e.error.c_str());
        QNEAR(e.timeMs, 204.507364344, 1e-9);

        // The same with a measured inter-node curve (5 GB/s at 1e6 B, 20 GB/s at 1e9 B, linear in
        // log2 bytes): the activation (8,388,608 B) and the stage-1 ring message (302,092,288 B) are
        // timed at the curve's bandwidth, Sailor's fitted bandwidth-vs-size idea:
        //   bw(x) = 5 + 15 (log2 x - log2 1e6) / (log2 1e9 - log2 1e6) GB/s
        Cluster curved = c;
        curved.network.interNode.curve = {{1e6, 5}, {1e9, 20}};
        const BaselineContext cctx(curved, m, 16, nullptr, CostOptions {});
        const auto bw
            = [](double x) { return 5 + 15 * (std::log2(x) - std::log2(1e6)) / (std::log2(1e9) - std::log2(1e6)); };
        const double t = 0.005 + 8388608 / (bw(8388608) * 1e9) * 1e3;
        const double sync1 = 2 * (0.005 + 302092288 / (bw(302092288) * 1e9) * 1e3);
        const double expected = 3 * (35.487400155 + t) + 2 * t + 32.9138187707 + 35.487400155 + 3.7638403133
            + std::max(2.73470058667, sync1);
        const BaselineEstimate ce = sailorEstimate(p, cctx);
        QVERIFY2(ce.ok, ce.error.c_str());
        QNEAR(ce.timeMs, expected, 1e-9);
        QVERIFY(ce.timeMs > e.timeMs); // the curve is below the nominal 25 GB/s at these sizes
    }

    void memoryByHand()
    {
        // The plan of iterationTimeOfTwoStagePlanByHand; layerCosts at mb 1 (bytes, per TP rank):
        //   TP1: 12,587,008 params / layer, embedding 53,608,448, head 2,048; activations 71,303,168
        //        per layer, embedding 2,113,536, logits 626,524,160
        //   TP2: 6,295,552 / layer, head 2,048; activations 46,137,344 per layer, logits 314,048,512
        // mem = 24 B x P_stage + act x mb x (pp - stage) + 2 GiB (TP1) / 3 GiB (TP>1):
        //   stage 0, A100 TP1: 24 x 204,652,544 + (12 x 71,303,168 + 2,113,536) x 2 x 2 + 2 GiB
        //                      = 4,911,661,056 + 3,431,006,208 + 2,147,483,648 = 10,490,150,912
        //   stage 1, A100 TP2: 24 x 75,548,672 + (12 x 46,137,344 + 314,048,512) x 2 x 1 + 3 GiB
        //                      = 1,813,168,128 + 1,735,393,280 + 3,221,225,472 = 6,769,786,880
        //   stage 1, H100 TP1: 24 x 151,046,144 + (12 x 71,303,168 + 626,524,160) x 2 x 1 + 2 GiB
        //                      = 3,625,107,456 + 2,964,324,352 + 2,147,483,648 = 8,736,915,456
        // peak = stage 0's A100: 10,490,150,912 / 84,986,665,369.6 = 0.123432904
        const Cluster c = twoTypeCluster();
        const Model m = resolveModel("opt-350m");
        const BaselineContext ctx(c, m, 16, nullptr, CostOptions {});
        const int a = c.deviceIndex("a100-80gb-sxm"), h = c.deviceIndex("h100-sxm");
        const BaselineLayerCosts &T1 = ctx.layerCosts(a, 1, 1), &T2 = ctx.layerCosts(a, 2, 1);
        QCOMPARE(T1.layerActivationBytes, 71303168.0);
        QCOMPARE(T1.embeddingActivationBytes, 2113536.0);
        QCOMPARE(T1.logitsBytes, 626524160.0);
        QCOMPARE(T2.layerActivationBytes, 46137344.0);
        QCOMPARE(T2.logitsBytes, 314048512.0);
        QCOMPARE(sailorReplicaMemoryBytes(ctx, a, 1, 2, 0, 12, 0, 2), 10490150912.0);
        QCOMPARE(sailorReplicaMemoryBytes(ctx, a, 2, 2, 12, 12, 1, 2), 6769786880.0);
        QCOMPARE(sailorReplicaMemoryBytes(ctx, h, 1, 2, 12, 12, 1, 2), 8736915456.0);
        Plan p;
        p.globalBatch = 16;
        p.stages = {Stage {0, 12, {}, {replicaOf("a", {0}, 2), replicaOf("a", {1}, 2)}},
                    Stage {12, 12, {}, {replicaOf("a", {2, 3}, 2), replicaOf("h", {0}, 2)}}};
        const BaselineEstimate e = sailorEstimate(p, ctx);
        QVERIFY(e.ok && e.hasMemory && e.fits);
        QCOMPARE(e.peakBytes, 10490150912.0);
        QNEAR(e.peakUtilisation, 10490150912.0 / ctx.memoryBytes(a), 1e-12);
        QNEAR(e.peakUtilisation, 0.123432904, 1e-8);

        // No ZeRO in Sailor: the distributed optimizer changes nothing. Micro-batch 32 per replica
        // (gbs 256): stage 0 holds 24 x 204,652,544 + 857,751,552 x 32 x 2 + 2 GiB = 61,955,244,032
        // B (fits in 84,986,665,369.6); at 64 it needs 116,851,343,360 B: fits = false.
        Plan big = p;
        big.distributedOptimizer = true;
        QCOMPARE(sailorEstimate(big, ctx).peakBytes, e.peakBytes);
        for (int mb : {32, 64}) {
            const BaselineContext bctx(c, m, 4 * mb, nullptr, CostOptions {});
            Plan q = p;
            q.globalBatch = 4 * mb;
            for (Stage &s : q.stages)
                for (Replica &r : s.replicas)
                    r.microBatch = mb;
            const BaselineEstimate be = sailorEstimate(q, bctx);
            QVERIFY(be.ok);
            QCOMPARE(be.peakBytes, mb == 32 ? 61955244032.0 : 116851343360.0);
            QCOMPARE(be.fits, mb == 32);
        }
    }

    void tpBoundsByHand()
    {
        // paper-20gpu-mixed-consumer, llama2-7b, mb 1. Stage compute (fwd + bwd, ms) and memory:
        // A100 80GB, the whole model (pp 1): comp 940.511908 / 503.331880 / 288.013646 / 182.726456 at
        //   TP 1 / 2 / 4 / 8: speed-ups 1.869, 1.748, 1.576, all >= 1.5, so max TP = 8. Memory
        //   183.06e9 / 96.37e9 / 52.51e9 B at TP 1 / 2 / 4 against 84.99e9: min TP = 4 -> {4, 8}.
        // RTX 4090 (4 per node: TP <= 4), pp 1: comp 1747.737 / 1042.792 / 694.033: 1.676, 1.5025 ->
        //   max TP 4; but even TP4 needs 52.51e9 B > 25.39e9: min TP 0, nothing allowed.
        // RTX 4090, stage 0 of pp 4 (layers 0-7 + embedding, 4 micro-batches in flight):
        //   comp 429.221824 / 256.967250 / 171.799963: 1.670 then 1.4958 < 1.5 -> max TP = 2;
        //   memory 62.54e9 / 36.14e9 / 22.40e9 B: the smallest that fits 25.39e9 is TP4 -> {4}:
        //   24 x (8 x 50,601,984 + 33,030,144) + (8 x 268,959,744 + 16,809,984) x 1 x 4 + 3 GiB
        //   = 10,508,304,384 + 8,673,951,744 + 3,221,225,472 = 22,403,481,600 B.
        const Cluster c = loadCluster(kSamples + "paper-20gpu-mixed-consumer.json");
        const Model m = resolveModel("llama2-7b");
        const BaselineContext ctx(c, m, 0, nullptr, CostOptions {});
        const int a100 = c.deviceIndex("a100-80gb-sxm"), rtx = c.deviceIndex("rtx-4090");
        QCOMPARE(sailorTpCandidates(ctx, a100), (std::vector<int> {1, 2, 4, 8}));
        QCOMPARE(sailorTpCandidates(ctx, rtx), (std::vector<int> {1, 2, 4}));
        const double a100Ms[] = {940.511908095, 503.33188003, 288.013646311, 182.726456435};
        for (int i = 0; i < 4; ++i)
            QNEAR(sailorReplicaComputeMs(ctx.layerCosts(a100, 1 << i, 1), 0, 32, true, true), a100Ms[i], 1e-9);
        QNEAR(sailorReplicaMemoryBytes(ctx, a100, 2, 1, 0, 32, 0, 1), 96373702656.0, 1e-12);
        QNEAR(sailorReplicaMemoryBytes(ctx, a100, 4, 1, 0, 32, 0, 1), 52507574272.0, 1e-12);
        const SailorTpBounds whole = sailorTpBounds(ctx, a100, 1, 0, 32, 0, 1);
        QCOMPARE(whole.minTp, 4);
        QCOMPARE(whole.maxTp, 8);
        QCOMPARE(whole.allowed, (std::vector<int> {4, 8}));

        const SailorTpBounds none = sailorTpBounds(ctx, rtx, 1, 0, 32, 0, 1);
        QCOMPARE(none.minTp, 0);
        QCOMPARE(none.maxTp, 4);
        QVERIFY(none.allowed.empty());

        const double rtxMs[] = {429.221823848, 256.967249791, 171.799962763};
        for (int i = 0; i < 3; ++i)
            QNEAR(sailorReplicaComputeMs(ctx.layerCosts(rtx, 1 << i, 1), 0, 8, true, false), rtxMs[i], 1e-9);
        QVERIFY(rtxMs[1] / rtxMs[2] < 1.5);
        QCOMPARE(sailorReplicaMemoryBytes(ctx, rtx, 4, 1, 0, 8, 0, 4), 22403481600.0);
        const SailorTpBounds stage0 = sailorTpBounds(ctx, rtx, 1, 0, 8, 0, 4);
        QCOMPARE(stage0.minTp, 4);
        QCOMPARE(stage0.maxTp, 2);
        QCOMPARE(stage0.allowed, (std::vector<int> {4}));
    }

    void estimatesEveryFeatureMix()
    {
        // The export goldens on 8 x H100 mix CP, VPP, FSDP, FP8, MoE/EP, overlap and recompute:
        // Sailor ignores what it does not model, but must cost every one of them.
        const Cluster c = loadCluster(kSamples + "h100-8x.json");
        const std::string golden = MEMX_SOURCE_DIR "/tests/data/export/golden/";
        int costed = 0;
        for (const char *dir : {"h100-8x-cp2pp4-vpp2", "h100-8x-tp2cp2dp2-a2a", "h100-8x-tp2dp4-fsdp",
                                "h100-8x-tp2pp2dp2", "h100-8x-tp2pp2dp2-ep2-mixtral", "h100-8x-tp2pp2dp2-fp8",
                                "h100-8x-tp2pp2dp2-llama3", "h100-8x-tp2pp2dp2-overlap"}) {
            const std::string path = golden + dir + "/json/plan.json";
            const Plan p = loadPlan(path);
            std::ifstream in(path);
            const nlohmann::json j = nlohmann::json::parse(in);
            const Model m = resolveModel(j.at("provenance").at("model").get<std::string>());
            const BaselineContext ctx(c, m, p.globalBatch, nullptr, CostOptions {});
            const BaselineEstimate e = sailorEstimate(p, ctx);
            QVERIFY2(e.ok, (std::string(dir) + ": " + e.error).c_str());
            QVERIFY2(std::isfinite(e.timeMs) && e.timeMs > 0, dir);
            QVERIFY2(e.hasMemory && e.peakBytes > 2 * kGiB, dir);
            // No recompute in Sailor: recomputing every layer changes neither time nor memory.
            Plan rc = p;
            for (Stage &s : rc.stages)
                s.recompute = {RecomputeMethod::Full, 0};
            const BaselineEstimate r = sailorEstimate(rc, ctx);
            QCOMPARE(r.timeMs, e.timeMs);
            QCOMPARE(r.peakBytes, e.peakBytes);
            ++costed;
        }
        QCOMPARE(costed, 8);
        const BaselineContext ctx(c, resolveModel("llama2-7b"), 16, nullptr, CostOptions {});
        Plan empty;
        empty.globalBatch = 16;
        QVERIFY(!sailorEstimate(empty, ctx).ok);
        Plan unknown;
        unknown.globalBatch = 16;
        unknown.stages = {Stage {0, 32, {}, {replicaOf("nowhere", {0}, 1)}}};
        QVERIFY(!sailorEstimate(unknown, ctx).ok);
    }

    void plansOnTwentyGpuSamples()
    {
        const Model m = resolveModel("llama2-7b");
        for (const char *file : {"paper-20gpu-nvidia-amd.json", "paper-20gpu-mixed-consumer.json"}) {
            const Cluster c = loadCluster(kSamples + file);
            const BaselineContext ctx(c, m, 0, nullptr, CostOptions {});
            QElapsedTimer timer;
            timer.start();
            const BaselinePick pick = sailorPlan(ctx, 10, {});
            const qint64 ms = timer.elapsed();
            checkPick(pick, ctx);
            QCOMPARE(pick.top.size(), size_t(10));
            QVERIFY(!pick.notes.empty());
            std::printf("%s: %s, %.1f ms predicted, %llu candidates, %lld ms\n", file, pick.plan.summary(c).c_str(),
                        pick.predicted.timeMs, static_cast<unsigned long long>(pick.configsExamined),
                        static_cast<long long>(ms));
        }
    }

    void searchSpeed()
    {
        const Model m = resolveModel("llama2-7b");
        for (const char *file :
             {"paper-20gpu-nvidia-amd.json", "paper-60gpu-mixed-consumer.json", "paper-60gpu-nvidia-amd.json"}) {
            const Cluster c = loadCluster(kSamples + file);
            const BaselineContext ctx(c, m, 0, nullptr, CostOptions {});
            QElapsedTimer timer;
            timer.start();
            const BaselinePick pick = sailorPlan(ctx, 10, {});
            const qint64 ms = timer.elapsed();
            checkPick(pick, ctx);
            std::printf("%s: %s, %llu candidates, %lld ms\n", file, pick.plan.summary(c).c_str(),
                        static_cast<unsigned long long>(pick.configsExamined), static_cast<long long>(ms));
#ifdef NDEBUG
            QVERIFY2(ms < 5000, file);
#endif
        }
    }

    void refusesWhenNothingFits()
    {
        // Llama-2 70B on one RTX 4090 (24 GB): 24 B per parameter of even one of 80 layers
        // (~0.86e9 params x 24 B = 20.6 GB) plus activations and 2 GiB do not fit.
        const nlohmann::json j = {{"format", "memx.cluster/1"},
                                  {"name", "one 4090"},
                                  {"nodes", {{{"name", "r"}, {"gpu", "rtx-4090"}, {"gpus", 1}, {"count", 1}}}},
                                  {"network", {{"interNode", {{"bandwidthGBps", 25}, {"latencyUs", 5}}}}}};
        Diagnostics diags;
        const Cluster c = parseCluster(j, builtinCatalogue(), diags);
        QVERIFY(diags.empty());
        const BaselineContext ctx(c, resolveModel("llama2-70b"), 0, nullptr, CostOptions {});
        const BaselinePick pick = sailorPlan(ctx, 5, {});
        QVERIFY(!pick.hasPlan);
        QVERIFY(!pick.refusal.empty());
        QVERIFY(pick.top.empty());
    }

    void cancelStopsTheSearch()
    {
        const Cluster c = loadCluster(kSamples + "paper-20gpu-nvidia-amd.json");
        const BaselineContext ctx(c, resolveModel("llama2-7b"), 0, nullptr, CostOptions {});
        int calls = 0;
        const BaselinePick none = sailorPlan(ctx, 10, [&](size_t, size_t) {
            ++calls;
            return false;
        });
        QVERIFY(none.cancelled);
        QVERIFY(!none.hasPlan);
        QCOMPARE(calls, 1);
        // Cancelled midway: some progress reported, then stopped.
        size_t lastDone = 0, total = 0;
        calls = 0;
        const BaselinePick later = sailorPlan(ctx, 10, [&](size_t done, size_t t) {
            lastDone = done;
            total = t;
            return ++calls < 3;
        });
        QVERIFY(later.cancelled);
        QVERIFY(!later.hasPlan);
        QCOMPARE(calls, 3);
        QVERIFY(lastDone > 0 && lastDone < total);
        // Uncancelled, progress ends at total.
        size_t end = 0;
        const BaselinePick full = sailorPlan(ctx, 10, [&](size_t done, size_t t) {
            end = done;
            total = t;
            return true;
        });
        QVERIFY(!full.cancelled);
        QCOMPARE(end, total);
    }
};

QTEST_GUILESS_MAIN(TestBaselineSailor)
#include "tst_baseline_sailor.moc"
