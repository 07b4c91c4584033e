// memx/evaluation: Galvatron (Miao et al., VLDB'22; Galvatron-BMW) re-implemented as a baseline planner.
#include "memx/evaluation/baseline_galvatron.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"

#include <QElapsedTimer>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>

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

/// Models that outlive the contexts (BaselineContext keeps a reference to its model).
static const Model &llama7b()
{
    static const Model m = resolveModel("llama2-7b");
    return m;
}

static const Model &llama70b()
{
    static const Model m = resolveModel("llama2-70b");
    return m;
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

/// Node "r" with 4 RTX 4090 and nodes "h-0", "h-1" with 4 H100 SXM each, 25 GB/s between them.
static Cluster rtxAndH100()
{
    const nlohmann::json j = {{"format", "memx.cluster/1"},
                              {"name", "4090+h100"},
                              {"nodes",
                               {{{"name", "r"}, {"gpu", "rtx-4090"}, {"gpus", 4}, {"count", 1}},
                                {{"name", "h"}, {"gpu", "h100-sxm"}, {"gpus", 4}, {"count", 2}}}},
                              {"network", {{"interNode", {{"bandwidthGBps", 25}, {"latencyUs", 5}}}}}};
    Diagnostics diags;
    Cluster c = parseCluster(j, builtinCatalogue(), diags);
    if (!diags.empty())
        qFatal("bad test cluster");
    return c;
}

/// The checks every pick must pass: valid MemX plans of Galvatron's space on all GPUs that fit by
/// its memory model with the fewest checkpointed layers, top sorted by its time.
static void checkPick(const BaselinePick &pick, const BaselineContext &ctx)
{
    QVERIFY2(pick.hasPlan, pick.refusal.c_str());
    QVERIFY(!pick.cancelled);
    QVERIFY(!pick.top.empty());
    QCOMPARE(pick.top.front(), pick.plan);
    QVERIFY(pick.configsExamined >= pick.top.size());
    const GalvatronHardware hw = galvatronHardware(ctx);
    double last = 0;
    for (const Plan &p : pick.top) {
        Diagnostics diags;
        validatePlan(p, ctx.cluster(), ctx.model(), diags);
        QVERIFY2(diags.empty(), (p.name + ":\n" + text(diags)).c_str());
        QCOMPARE(p.globalBatch, ctx.globalBatch());
        QCOMPARE(p.totalGpus(), ctx.cluster().totalGpus()); // Galvatron plans every GPU
        const int tp = p.stages.front().replicas.front().tp, mbs = p.stages.front().replicas.front().microBatch;
        const int dp = p.stages.front().dp();
        QVERIFY(mbs <= 16);
        QVERIFY(!p.sequenceParallel);
        const GalvatronDpType type = dpShardingOf(p) == DpSharding::None ? GalvatronDpType::Ddp
            : dpShardingOf(p) == DpSharding::Parameters                  ? GalvatronDpType::Zero3
                                                                         : GalvatronDpType::Zero2;
        const BaselineLayerCosts &c = ctx.layerCosts(hw.device, tp, mbs);
        for (size_t k = 0; k < p.stages.size(); ++k) {
            const Stage &s = p.stages[k];
            QCOMPARE(s.dp(), dp);
            for (const Replica &r : s.replicas) {
                QCOMPARE(r.tp, tp);
                QCOMPARE(r.microBatch, mbs);
            }
            // The fewest checkpointed layers: one fewer would not fit the budget.
            const int rc = recomputedLayers(s.recompute, s.layerCount);
            const GalvatronStageMemory m
                = galvatronStageMemory(c, type, dp, static_cast<int>(k), p.pp(), p.microBatches());
            QVERIFY(m.bytes(s.layerCount, rc) <= hw.budgetBytes);
            if (rc > 0)
                QVERIFY(m.bytes(s.layerCount, rc - 1) > hw.budgetBytes);
        }
        const BaselineEstimate e = galvatronEstimate(p, ctx);
        QVERIFY2(e.ok, e.error.c_str());
        QVERIFY(e.hasMemory);
        QVERIFY(e.fits);
        QVERIFY(e.peakBytes <= hw.budgetBytes);
        QVERIFY(e.timeMs >= last);
        last = e.timeMs;
    }
    const BaselineEstimate first = galvatronEstimate(pick.plan, ctx);
    QVERIFY(pick.predicted.ok);
    QCOMPARE(pick.predicted.timeMs, first.timeMs);
    QCOMPARE(pick.predicted.peakBytes, first.peakBytes);
    QCOMPARE(pick.predicted.fits, first.fits);
}

/// The profiled type and the smallest memory, found the plain way: GPUs per type in node order.
static void expectedHardware(const Cluster &c, int &device, double &memory)
{
    std::vector<std::pair<int, int>> counts; // (device, GPUs) in node order
    for (const Node &n : c.nodes()) {
        auto it = std::find_if(counts.begin(), counts.end(), [&](const auto &e) { return e.first == n.device; });
        if (it == counts.end())
            counts.emplace_back(n.device, n.gpus);
        else
            it->second += n.gpus;
    }
    device = -1;
    int most = 0;
    memory = 0;
    for (const auto &[d, n] : counts) {
        if (n > most) {
            most = n;
            device = d;
        }
        const double mem = c.devices[static_cast<size_t>(d)].memoryBytes();
        if (memory == 0 || mem < memory)
            memory = mem;
    }
}

class TestBaselineGalvatron : public QObject {
    Q_OBJECT

private slots:
    void budgetAndStateRatios()
    {
        QCOMPARE(galvatronBudgetBytes(16 * kGiB), 16 * kGiB);
        QCOMPARE(galvatronBudgetBytes(20 * kGiB), 20 * kGiB);
        QCOMPARE(galvatronBudgetBytes(40 * kGiB), 32 * kGiB);
        QCOMPARE(galvatronStateRatio(GalvatronDpType::Ddp, 8), 1.0);
        QNEAR(galvatronStateRatio(GalvatronDpType::Zero3, 4), 0.253, 1e-12);
        QNEAR(galvatronStateRatio(GalvatronDpType::Zero2, 4), 7.0 / 8 * 0.253 + 0.125, 1e-12);
        QNEAR(galvatronStateRatio(GalvatronDpType::Zero2, 1), 7.0 / 8 * 1.003 + 0.125, 1e-12);
    }

    void evenDivisionAndPipelineFormulas()
    {
        QCOMPARE(galvatronEvenDivision(32, 3), (std::vector<int> {10, 11, 11}));
        QCOMPARE(galvatronEvenDivision(32, 4), (std::vector<int> {8, 8, 8, 8}));
        QVERIFY(galvatronEvenDivision(4, 5).empty());
        QVERIFY(galvatronEvenDivision(4, 0).empty());
        // t = 3, 5, 4 ms, B = 4: sum + last (B - 1) = 12 + 12 = 24; 1F1B 12/3 + 3 x 5 + 2 x 12/3 = 27.
        QNEAR(galvatronPipelineMs({3, 5, 4}, 4), 27.0, 1e-12);
        // The last stage the slowest: both terms 12 + 3 x 5 = 27.
        QNEAR(galvatronPipelineMs({3, 4, 5}, 4), 27.0, 1e-12);
        QNEAR(galvatronPipelineMs({3, 5, 4}, 1), 12.0, 1e-12);
        // Tail: bct 10, dp 4 -> the whole reduction overlaps: 0.1256 x 4; bct 4, dp 10 -> 6 exposed
        // plus 0.1256 x 4.
        QNEAR(galvatronReduceTailMs(10, 4), 0.1256 * 4, 1e-12);
        QNEAR(galvatronReduceTailMs(4, 10), 6 + 0.1256 * 4, 1e-12);
        QCOMPARE(galvatronReduceTailMs(4, 0), 0.0);
    }

    void memoryBalancedDivision()
    {
        // 12 layers over 3 stages costing 3, 2, 1 per layer, fixed 2, 0, 1. Even 4/4/4: 14, 8, 5,
        // average 9. Stage 0 fills to 2 layers (8; 3 would be 11 > 9), stage 1 to 4 (8), the last
        // takes 6 (7): max 8 <= 1.3 x 9.
        std::vector<GalvatronStageMemory> m = {{2, 3, 0}, {0, 2, 0}, {1, 1, 0}};
        QCOMPARE(galvatronMemoryBalancedDivision(m, 12), (std::vector<int> {2, 4, 6}));
        // 6 layers at 1, 1, X per layer, no fixed part. Even 2/2/2: 2, 2, 2X, average (4 + 2X) / 3.
        // Stages 0 and 1 fill up to the most they may take (4, then 1: one layer left per later
        // stage), the last holds one layer = X. The cap X <= 1.3 (4 + 2X) / 3 holds up to X = 13.
        m = {{0, 1, 0}, {0, 1, 0}, {0, 13, 0}};
        QCOMPARE(galvatronMemoryBalancedDivision(m, 6), (std::vector<int> {4, 1, 1}));
        m[2].layerBytes = 14; // 14 > 1.3 x 32 / 3 = 13.87: rejected
        QVERIFY(galvatronMemoryBalancedDivision(m, 6).empty());
        // A stage may not be filled beyond the average even when layers remain: stage 0 keeps 1.
        m = {{10, 1, 0}, {0, 1, 0}};
        // even 3/3: 13, 3 -> average 8: stage 0 already exceeds it with one layer -> 1, last 5:
        // 11 and 5, 11 <= 10.4? no -> rejected by the cap.
        QVERIFY(galvatronMemoryBalancedDivision(m, 6).empty());
        QVERIFY(galvatronMemoryBalancedDivision({}, 6).empty());
        QVERIFY(galvatronMemoryBalancedDivision(std::vector<GalvatronStageMemory>(7), 6).empty());
    }

    void recomputeKnapsackMatchesBruteForce()
    {
        std::mt19937 rng(18);
        std::uniform_real_distribution<double> u(0.0, 1.0);
        int fitsNone = 0, fitsPartial = 0, fitsAll = 0;
        for (int i = 0; i < 5000; ++i) {
            GalvatronStageMemory m;
            m.fixedBytes = 5e9 * u(rng);
            m.layerBytesRecompute = 1e9 * u(rng);
            m.layerBytes = m.layerBytesRecompute + 3e9 * u(rng);
            const int layers = 1 + static_cast<int>(u(rng) * 40);
            const double budget = m.bytes(layers, 0) * (0.2 + 1.0 * u(rng));
            int brute = -1;
            for (int r = 0; r <= layers; ++r)
                if (m.bytes(layers, r) <= budget) {
                    brute = r;
                    break;
                }
            QCOMPARE(galvatronRecomputeLayers(m, layers, budget), brute);
            fitsNone += brute < 0;
            fitsPartial += brute > 0 && brute < layers;
            fitsAll += brute == 0;
        }
        QVERIFY(fitsNone > 100 && fitsPartial > 100 && fitsAll > 100);
        // Exactly at the budget fits; recompute that saves nothing cannot help.
        const GalvatronStageMemory m {1, 3, 1};
        QCOMPARE(galvatronRecomputeLayers(m, 4, m.bytes(4, 2)), 2);
        QCOMPARE(galvatronRecomputeLayers({1, 3, 3}, 4, 12), -1);
        QCOMPARE(galvatronRecomputeLayers({1, 3, 3}, 4, 13), 0);
    }

    void homogeneousAssumptionOnMixedClusters()
    {
        const Model model = resolveModel("llama2-7b");
        // 20-GPU samples: ties of 8 GPUs (A100 and MI250X) go to the type met first in node order.
        for (const char *file : {"paper-20gpu-mixed-consumer.json", "paper-20gpu-nvidia-amd.json"}) {
            const Cluster c = loadCluster(kSamples + file);
            const BaselineContext ctx(c, model, 0, nullptr, CostOptions {});
            int device = -1;
            double memory = 0;
            expectedHardware(c, device, memory);
            const GalvatronHardware hw = galvatronHardware(ctx);
            QCOMPARE(hw.gpus, 20);
            QCOMPARE(hw.device, device);
            QCOMPARE(hw.memoryBytes, memory);
            QCOMPARE(hw.budgetBytes, galvatronBudgetBytes(memory));
            QCOMPARE(ctx.memoryBytes(hw.memoryDevice), memory);
        }
        {
            const Cluster c = loadCluster(kSamples + "paper-20gpu-mixed-consumer.json");
            const GalvatronHardware hw = galvatronHardware(BaselineContext(c, model, 0, nullptr, CostOptions {}));
            QCOMPARE(c.devices[static_cast<size_t>(hw.device)].id, std::string("a100-80gb-sxm"));
            QCOMPARE(c.devices[static_cast<size_t>(hw.memoryDevice)].id, std::string("rtx-4090"));
            QVERIFY(hw.budgetBytes < hw.memoryBytes); // 24 GB > 20 GiB: 20% reserved
        }
        {
            const Cluster c = loadCluster(kSamples + "paper-20gpu-nvidia-amd.json");
            const GalvatronHardware hw = galvatronHardware(BaselineContext(c, model, 0, nullptr, CostOptions {}));
            QCOMPARE(c.devices[static_cast<size_t>(hw.device)].id, std::string("a100-40gb-sxm"));
            QCOMPARE(c.devices[static_cast<size_t>(hw.memoryDevice)].id, std::string("a100-40gb-sxm"));
        }
        // No tie: 8 H100 against 4 RTX 4090 -> the H100 profile, the 4090's memory; the notes say so.
        const Cluster c = rtxAndH100();
        const BaselineContext ctx(c, model, 16, nullptr, CostOptions {});
        const GalvatronHardware hw = galvatronHardware(ctx);
        QCOMPARE(hw.device, c.deviceIndex("h100-sxm"));
        QCOMPARE(hw.memoryDevice, c.deviceIndex("rtx-4090"));
        QCOMPARE(hw.memoryBytes, ctx.memoryBytes(c.deviceIndex("rtx-4090")));
        const BaselinePick pick = galvatronPlan(ctx, 5, {});
        checkPick(pick, ctx);
        QVERIFY(!pick.notes.empty());
        QVERIFY(pick.notes.front().find("rtx-4090") != std::string::npos);
        QVERIFY(pick.notes.front().find("h100-sxm") != std::string::npos);
        QVERIFY(pick.notes.front().find("8 of 12 GPUs") != std::string::npos);

        // The estimate ignores the real device types: one GPU of an A100 node and one of an MI250X
        // node, no communication, cost the same.
        const Cluster mixed = loadCluster(kSamples + "paper-20gpu-mixed-consumer.json");
        const BaselineContext mctx(mixed, model, 4, nullptr, CostOptions {});
        Plan onA100, onMi250;
        onA100.globalBatch = onMi250.globalBatch = 4;
        onA100.stages = {Stage {0, 32, {RecomputeMethod::Full, 0}, {replicaOf("a100", {0}, 1)}}};
        onMi250.stages = {Stage {0, 32, {RecomputeMethod::Full, 0}, {replicaOf("mi250x", {0}, 1)}}};
        for (const Plan &p : {onA100, onMi250}) {
            Diagnostics diags;
            validatePlan(p, mixed, model, diags);
            QVERIFY2(diags.empty(), text(diags).c_str());
        }
        const BaselineEstimate ea = galvatronEstimate(onA100, mctx), em = galvatronEstimate(onMi250, mctx);
        QVERIFY(ea.ok && em.ok);
        QCOMPARE(ea.timeMs, em.timeMs);
        QCOMPARE(ea.peakBytes, em.peakBytes);
    }

    void timeAndMemoryByHand()
    {
        // 8 x H100 (one node), Llama-2 7B (32 layers, seq 4096, hidden 4096), gbs 16. Plan pp 2,
        // tp 2, dp 2, mbs 2: B = 16 / (2 x 2) = 4; stage 0 = layers 0-15 on GPUs {0,1}, {2,3},
        // stage 1 = layers 16-31 on {4,5}, {6,7}; DDP, no checkpointing.
        const Cluster c = loadCluster(kSamples + "h100-8x.json");
        const Model m = resolveModel("llama2-7b");
        const BaselineContext ctx(c, m, 16, nullptr, CostOptions {});
        const int h = c.deviceIndex("h100-sxm");
        const BaselineLayerCosts &k = ctx.layerCosts(h, 2, 2);
        const std::string node = ctx.nodes().front().name;
        Plan p;
        p.globalBatch = 16;
        p.stages = {Stage {0, 16, {}, {replicaOf(node, {0, 1}, 2), replicaOf(node, {2, 3}, 2)}},
                    Stage {16, 16, {}, {replicaOf(node, {4, 5}, 2), replicaOf(node, {6, 7}, 2)}}};
        Diagnostics diags;
        validatePlan(p, c, m, diags);
        QVERIFY2(diags.empty(), text(diags).c_str());

        // fct_s = the stage's layer forwards (+ embedding / head), bct_s = 2 fct_s.
        double f0 = k.embeddingForwardMs, f1 = k.headForwardMs, rc0 = 0;
        for (int l = 0; l < 16; ++l) {
            f0 += k.layerForwardMs[static_cast<size_t>(l)];
            f1 += k.layerForwardMs[static_cast<size_t>(16 + l)];
            rc0 += l < 6 ? k.layerForwardMs[static_cast<size_t>(l)] : 0.0;
        }
        // p2p per stage and micro-batch: 2 x mbs x seq x hidden x 2 B over the intra-node link.
        const Link intra = ctx.link(0, 0);
        const double actBytes = 2.0 * m.shape.seqLength * m.shape.hidden * 2;
        const double p2p = 2 * actBytes / (intra.bandwidthAt(actBytes) * 1e6);
        const double t0 = 3 * f0 + p2p, t1 = 3 * f1 + p2p;
        const double pipe = std::max(t0 + t1 + 3 * t1, t0 + t1 + 3 * std::max(t0, t1));
        // DP: 2 (d - 1) / d x 2 B x the stage's parameters on one TP rank, intra-node link.
        const double P0 = 16 * k.layerParams + k.embeddingParams, P1 = 16 * k.layerParams + k.headParams;
        const auto dpMs = [&](double params) {
            const double bytes = 2.0 * 1 / 2 * 2 * params;
            return bytes / (intra.bandwidthAt(bytes) * 1e6);
        };
        const auto tail = [](double bct, double dp) { return std::max(0.0, dp - bct) + 0.1256 * std::min(bct, dp); };
        const double expected = pipe + std::max(tail(2 * f0, dpMs(P0)), tail(2 * f1, dpMs(P1)));
        const BaselineEstimate e = galvatronEstimate(p, ctx);
        QVERIFY2(e.ok, e.error.c_str());
        QNEAR(e.timeMs, expected, 1e-12);
        QNEAR(e.timeMs, 886.275687, 1e-8); // the figure of today's layerCosts, pinned

        // Memory: 16 B x params x 1 (DDP) + per-sample activations x mbs x in-flight (2 on stage 0,
        // 1 on stage 1) + the embedding's activations on stage 0, one micro-batch of logits on 1.
        const double m0 = 16 * P0 + (16 * k.layerActivationBytes + k.embeddingActivationBytes) * 2;
        const double m1 = 16 * P1 + 16 * k.layerActivationBytes + k.logitsBytes;
        QVERIFY(e.hasMemory);
        QNEAR(e.peakBytes, std::max(m0, m1), 1e-12);
        QCOMPARE(m0, 50711363584.0);
        QCOMPARE(m1, 39653015552.0);
        const double capacity = ctx.memoryBytes(h);
        QNEAR(e.peakUtilisation, std::max(m0, m1) / capacity, 1e-12);
        QCOMPARE(e.fits, std::max(m0, m1) <= 0.8 * capacity);
        std::printf("pp2 tp2 dp2 mbs2 DDP: %.6f ms, stage memory %.0f / %.0f B (budget %.0f)\n", e.timeMs, m0, m1,
                    0.8 * capacity);

        // ZeRO-2 (the distributed optimizer) and the first 6 layers of stage 0 checkpointed: stage 0's
        // backward adds their forward; states x (7/8 (1/2 + 0.003) + 1/8); 6 layers keep only their
        // input.
        Plan z = p;
        z.distributedOptimizer = true;
        z.stages[0].recompute = {RecomputeMethod::Full, 6};
        const double ratio = 7.0 / 8 * (0.5 + 0.003) + 0.125;
        const double zt0 = t0 + rc0;
        const double zpipe = std::max(zt0 + t1 + 3 * t1, zt0 + t1 + 3 * std::max(zt0, t1));
        const double zexpected = zpipe + std::max(tail(2 * f0 + rc0, dpMs(P0)), tail(2 * f1, dpMs(P1)));
        const double zm0 = 16 * ratio * P0
            + (10 * k.layerActivationBytes + 6 * k.layerActivationBytesRecompute + k.embeddingActivationBytes) * 2;
        const double zm1 = 16 * ratio * P1 + 16 * k.layerActivationBytes + k.logitsBytes;
        const BaselineEstimate ze = galvatronEstimate(z, ctx);
        QVERIFY(ze.ok);
        QNEAR(ze.timeMs, zexpected, 1e-12);
        QNEAR(ze.peakBytes, std::max(zm0, zm1), 1e-12);
        QVERIFY(ze.timeMs > e.timeMs);
        QVERIFY(zm0 < m0);
        // Megatron-FSDP optim_grads (ZeRO-2 proper) on one stage costs as the distributed optimizer.
        Plan one;
        one.globalBatch = 16;
        one.stages = {Stage {0, 32, {}, {}}};
        for (int d = 0; d < 4; ++d)
            one.stages[0].replicas.push_back(replicaOf(node, {2 * d, 2 * d + 1}, 2));
        Plan fsdp2 = one, dist = one, fsdp3 = one;
        setDpSharding(fsdp2, DpSharding::Gradients);
        setDpSharding(dist, DpSharding::Optimizer);
        setDpSharding(fsdp3, DpSharding::Parameters);
        QCOMPARE(galvatronEstimate(fsdp2, ctx).timeMs, galvatronEstimate(dist, ctx).timeMs);
        QCOMPARE(galvatronEstimate(fsdp2, ctx).peakBytes, galvatronEstimate(dist, ctx).peakBytes);
        QVERIFY(galvatronEstimate(fsdp3, ctx).peakBytes < galvatronEstimate(dist, ctx).peakBytes);
        QVERIFY(galvatronEstimate(dist, ctx).peakBytes < galvatronEstimate(one, ctx).peakBytes);
    }

    void searchSpaceOnOneNode()
    {
        // 8 GPUs, 32 heads, gbs 16: (tp, pp, dp) with tp pp dp = 8, chunks every divisor of 16 / dp:
        //   tp 1: dp 8, 4, 2, 1 -> 2 + 3 + 4 + 5 = 14; tp 2: dp 4, 2, 1 -> 3 + 4 + 5 = 12;
        //   tp 4: dp 2, 1 -> 4 + 5 = 9; tp 8: dp 1 -> 5.  40 tasks.
        const Cluster c = loadCluster(kSamples + "h100-8x.json");
        const BaselineContext ctx(c, llama7b(), 16, nullptr, CostOptions {});
        const std::vector<GalvatronTask> tasks = galvatronTasks(ctx);
        QCOMPARE(tasks.size(), size_t(40));
        for (const GalvatronTask &t : tasks) {
            QCOMPARE(t.pp * t.tp * t.dp, 8);
            QCOMPARE(t.dp * t.chunks * t.mbs, 16);
        }
        QCOMPARE(tasks.front(), (GalvatronTask {1, 1, 8, 1, 2}));
        // gbs 64: mbs <= 16 drops chunks 1 and 2 at dp 1 (mbs 64, 32) and chunks 1 at dp 2 (32).
        const BaselineContext big(c, llama7b(), 64, nullptr, CostOptions {});
        for (const GalvatronTask &t : galvatronTasks(big))
            QVERIFY(t.mbs <= 16);
        // The search: DDP on every task, ZeRO-2 where dp > 1, ZeRO-3 where also pp = 1, and the
        // balanced divisions that differ from the even one: at least 40 + 26 + 10 candidates.
        const BaselinePick pick = galvatronPlan(ctx, 10, {});
        checkPick(pick, ctx);
        QVERIFY(pick.configsExamined >= 76);
        // 20 GPUs on nodes of 8, 8, 4: TP 8 does not divide 20 GPUs; 1, 2, 4 stay in nodes.
        const Cluster mixed = loadCluster(kSamples + "paper-20gpu-mixed-consumer.json");
        const BaselineContext mctx(mixed, llama7b(), 0, nullptr, CostOptions {});
        std::set<int> tps;
        for (const GalvatronTask &t : galvatronTasks(mctx))
            tps.insert(t.tp);
        QCOMPARE(tps, (std::set<int> {1, 2, 4}));
    }

    void estimatesEveryFeatureMix()
    {
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
            const BaselineEstimate e = galvatronEstimate(p, ctx);
            QVERIFY2(e.ok, (std::string(dir) + ": " + e.error).c_str());
            QVERIFY2(std::isfinite(e.timeMs) && e.timeMs > 0, dir);
            QVERIFY2(e.hasMemory && e.peakBytes > 0, dir);
            // Checkpointing every layer costs time and saves memory.
            Plan rc = p;
            for (Stage &s : rc.stages)
                s.recompute = {RecomputeMethod::Full, 0};
            const BaselineEstimate r = galvatronEstimate(rc, ctx);
            QVERIFY2(r.timeMs > e.timeMs || p.stages.front().recompute.method == RecomputeMethod::Full, dir);
            QVERIFY2(r.peakBytes <= e.peakBytes, dir);
            ++costed;
        }
        QCOMPARE(costed, 8);
        const BaselineContext ctx(c, llama7b(), 16, nullptr, CostOptions {});
        Plan empty;
        empty.globalBatch = 16;
        QVERIFY(!galvatronEstimate(empty, ctx).ok);
        Plan unknown;
        unknown.globalBatch = 16;
        unknown.stages = {Stage {0, 32, {}, {replicaOf("nowhere", {0}, 1)}}};
        QVERIFY(!galvatronEstimate(unknown, ctx).ok);
        Plan gap;
        gap.globalBatch = 16;
        gap.stages = {Stage {0, 30, {}, {replicaOf(ctx.nodes().front().name, {0}, 1)}}};
        QVERIFY(!galvatronEstimate(gap, ctx).ok);
    }

    void plansOnSamples()
    {
        const Model m = resolveModel("llama2-7b");
        for (const char *file : {"h100-8x.json", "paper-20gpu-nvidia-amd.json", "paper-20gpu-mixed-consumer.json",
                                 "paper-60gpu-mixed-consumer.json", "paper-60gpu-nvidia-amd.json"}) {
            const Cluster c = loadCluster(kSamples + file);
            const BaselineContext ctx(c, m, 0, nullptr, CostOptions {});
            QElapsedTimer timer;
            timer.start();
            const BaselinePick pick = galvatronPlan(ctx, 10, {});
            const double ms = timer.nsecsElapsed() / 1e6;
            checkPick(pick, ctx);
            QVERIFY(pick.notes.size() >= 2);
            std::printf("%s: %s (%s), %.1f ms predicted, peak %.1f GiB, %llu configs, %.2f ms\n", file,
                        pick.plan.name.c_str(), pick.plan.summary(c).c_str(), pick.predicted.timeMs,
                        pick.predicted.peakBytes / kGiB, static_cast<unsigned long long>(pick.configsExamined), ms);
#ifdef NDEBUG
            QVERIFY2(ms < 2000, file);
#endif
        }
    }

    void boundedOnFiveHundredTwelveGpus()
    {
        const Cluster c = loadCluster(kSamples + "cross-vendor-512gpu.json");
        const BaselineContext ctx(c, llama7b(), 0, nullptr, CostOptions {});
        QElapsedTimer timer;
        timer.start();
        const BaselinePick pick = galvatronPlan(ctx, 10, {});
        const double ms = timer.nsecsElapsed() / 1e6;
        checkPick(pick, ctx);
        std::printf("cross-vendor-512gpu: %s (%s), %.1f ms predicted, %llu configs, %.2f ms\n", pick.plan.name.c_str(),
                    pick.plan.summary(c).c_str(), pick.predicted.timeMs,
                    static_cast<unsigned long long>(pick.configsExamined), ms);
        for (const std::string &n : pick.notes)
            std::printf("  note: %s\n", n.c_str());
#ifdef NDEBUG
        QVERIFY(ms < 5000);
#endif
    }

    void refusesWhenNothingFits()
    {
        // Llama-2 70B on one RTX 4090: 16 B per parameter of one layer's ~0.86e9 parameters alone
        // exceed the 24 GB (less 20%), with any checkpointing.
        const nlohmann::json j = {{"format", "memx.cluster/1"},
                                  {"name", "one 4090"},
                                  {"nodes", {{{"name", "r"}, {"gpu", "rtx-4090"}, {"gpus", 1}, {"count", 1}}}},
                                  {"network", {{"interNode", {{"bandwidthGBps", 25}, {"latencyUs", 5}}}}}};
        Diagnostics diags;
        const Cluster c = parseCluster(j, builtinCatalogue(), diags);
        QVERIFY(diags.empty());
        const BaselineContext ctx(c, llama70b(), 0, nullptr, CostOptions {});
        const BaselinePick pick = galvatronPlan(ctx, 5, {});
        QVERIFY(!pick.hasPlan);
        QVERIFY(!pick.refusal.empty());
        QVERIFY(pick.top.empty());
        QVERIFY(pick.configsExamined > 0);
    }

    void cancelStopsTheSearch()
    {
        const Cluster c = loadCluster(kSamples + "paper-60gpu-nvidia-amd.json");
        const BaselineContext ctx(c, llama7b(), 0, nullptr, CostOptions {});
        int calls = 0;
        const BaselinePick none = galvatronPlan(ctx, 10, [&](size_t, size_t) {
            ++calls;
            return false;
        });
        QVERIFY(none.cancelled);
        QVERIFY(!none.hasPlan);
        QCOMPARE(calls, 1);
        size_t lastDone = 0, total = 0;
        calls = 0;
        const BaselinePick later = galvatronPlan(ctx, 10, [&](size_t done, size_t t) {
            lastDone = done;
            total = t;
            return ++calls < 3;
        });
        QVERIFY(later.cancelled);
        QVERIFY(!later.hasPlan);
        QCOMPARE(calls, 3);
        QVERIFY(lastDone > 0 && lastDone < total);
        size_t end = 0;
        const BaselinePick full = galvatronPlan(ctx, 10, [&](size_t done, size_t t) {
            end = done;
            total = t;
            return true;
        });
        QVERIFY(!full.cancelled);
        QCOMPARE(end, total);
    }
};

QTEST_GUILESS_MAIN(TestBaselineGalvatron)
#include "tst_baseline_galvatron.moc"
