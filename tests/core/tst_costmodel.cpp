// Analytic cost model: memory against Megatron-LM's theoretical_memory_usage.py worked by hand,
// iteration time against the section-5 formulas worked by hand, 1F1B in-flight counts,
// slowest-replica stages, recompute effects, profiles, out-of-memory flags.
#include "memx/cost/compute.h"
#include "memx/cost/costmodel.h"
#include "memx/cost/linktable.h"
#include "memx/io/formats.h"
#include "memx/profile/layerprofile.h"
#include "memx/util/diagnostic.h"

#include <QTest>

#include <cmath>
#include <random>
#include <set>
#include <tuple>

using namespace memx;

static const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters";

static bool near(double a, double b, double rel = 1e-9)
{
    return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)) + 1e-12;
}

#define QNEAR(a, b)                                                                                                    \
    QVERIFY2(near((a), (b)), (std::string(#a " = ") + std::to_string(a) + ", expected " + std::to_string(b)).c_str())

/// A GPT-3-6.7B-like model with Megatron's assumptions (f = 4h, no GLU, no learned positions).
static Model megatronModel()
{
    Model m;
    m.id = "test-gpt";
    m.shape.layers = 32;
    m.shape.hidden = 4096;
    m.shape.heads = 32;
    m.shape.kvGroups = 32;
    m.shape.ffnHidden = 16384;
    m.shape.vocab = 51200;
    m.shape.seqLength = 2048;
    m.shape.swiglu = false;
    m.shape.tiedEmbeddings = true;
    m.shape.normalization = Normalization::LayerNorm;
    m.shape.positionEmbedding = PositionEmbedding::Rope;
    m.training.globalBatch = 64;
    return m;
}

/// Plan over `cluster`'s node `node`: stages with the given layer counts, each `dp` replicas of
/// `tp` GPUs, consecutive GPU indices.
static Plan simplePlan(const std::string &node, const std::vector<int> &layers, int tp, int dp, int mb, int gbs,
                       RecomputeMethod rc = RecomputeMethod::None)
{
    Plan p;
    p.globalBatch = gbs;
    int first = 0, gpu = 0;
    for (int n : layers) {
        Stage s;
        s.firstLayer = first;
        s.layerCount = n;
        s.recompute.method = rc;
        first += n;
        for (int r = 0; r < dp; ++r) {
            Replica rep;
            rep.node = node;
            rep.tp = tp;
            rep.microBatch = mb;
            for (int k = 0; k < tp; ++k)
                rep.gpus.push_back(gpu++);
            s.replicas.push_back(rep);
        }
        p.stages.push_back(s);
    }
    return p;
}

/// One node of 8 synthetic GPUs: 100 TFLOP/s peak, efficiency 0.5, 1000 GB/s HBM, 80 GiB,
/// 100 GB/s intra-node link without latency.
static Cluster syntheticCluster()
{
    Cluster c;
    c.name = "synthetic";
    GpuSpec g;
    g.id = "synthetic-gpu";
    g.vendor = "NVIDIA";
    g.memoryGiB = 80;
    g.memoryBandwidthGBps = 1000;
    g.denseBf16Tflops = 100;
    g.denseFp16Tflops = 100;
    g.measuredComputeEfficiency = 0.5;
    c.devices.push_back(g);
    NodeGroup ng;
    ng.name = "n";
    ng.gpu = g.id;
    ng.gpusPerNode = 8;
    ng.intraLink = Link {100, 0, {}};
    c.groups.push_back(ng);
    c.network.interNode = Link {10, 0, {}};
    return c;
}

/// 4 layers, h 1024, 16 heads, f 4096, vocab 32000, s 1024: every dimension a multiple of 128.
/// Every diagnostic of `d`, one per line (for QVERIFY2 messages and substring checks).
static std::string text(const Diagnostics &d)
{
    std::string t;
    for (const Diagnostic &x : d.items())
        t += x.toString() + "\n";
    return t;
}

static Model tinyModel()
{
    Model m;
    m.id = "tiny";
    m.shape = ModelShape {
        4, 1024, 16, 16, 4096, 32000, 1024, false, true, Normalization::LayerNorm, PositionEmbedding::Rope};
    return m;
}

class TestCostModel : public QObject {
    Q_OBJECT

    static CostOptions opts() { return CostOptions {}; }

private slots:
    void megatronTheoreticalMemory()
    {
        // Homogeneous p = 2, t = 2, d = 2, b = 1, m = 64 / 2 = 32, selective recompute (the
        // case Megatron's compute_activation_memory_without_sp models: sbh(10 + 24/t)).
        // By hand (section 1.8):
        //   attention+MLP per layer = 4h^2 + 2hf = 67,108,864 + 134,217,728 = 201,326,592
        //   norms per layer = 2 * h * 2 = 16,384
        //   tp_sharded = (32 * 201,326,592 / 2 + h*V) / 2 = (3,221,225,472 + 209,715,200) / 2 = 1,715,470,336
        //   replicated = 16,384 * 32 / 2 = 262,144  -> 1,715,732,480 params on the first stage
        //   weights+optimizer = 18 x 1,715,732,480 = 30,883,184,640 bytes
        //   activations: sbh = 2048*4096 = 8,388,608; per layer sbh*(10+12) = 184,549,376
        //     x L = 5,905,580,032; + 8sbp = 32,768; + sbh*p = 16,777,216 -> 5,922,390,016
        //     x min(1, m/p) = 1 (Megatron then multiplies by 1.05 -> 6,218,509,516.8)
        Cluster c = syntheticCluster();
        c.groups[0].gpusPerNode = 8;
        const Model m = megatronModel();
        CostOptions o;
        const Plan plan = simplePlan("n", {16, 16}, 2, 2, 1, 64, RecomputeMethod::Selective);
        const PlanEstimate e = estimatePlan(plan, c, m, nullptr, o);
        QCOMPARE(e.microBatches, 32);
        const GpuMemory &g0 = e.gpus.front();
        QCOMPARE(g0.stage, 0);
        QNEAR(g0.paramsBytes + g0.gradsBytes + g0.optimizerBytes, 30883184640.0);
        QNEAR(g0.paramsBytes, 2 * 1715732480.0);
        QNEAR(g0.activationBytes, 5922390016.0);
        // Megatron's total = weights/optimizer + 1.05 x activations; ours replaces the 1.05 by an
        // allocator reserve on the whole allocator peak and adds context + communicators.
        const double megatronTotal = 30883184640.0 + 1.05 * 5922390016.0;
        const double allocator = 30883184640.0 + 5922390016.0;
        QNEAR(g0.overheadBytes,
              o.runtimeContextBytes + 3 * o.communicatorBytesPerGroup + o.allocatorReserveFraction * allocator);
        QNEAR(g0.totalBytes - g0.overheadBytes + 0.05 * 5922390016.0, megatronTotal);

        // Distributed optimizer: 6 + 12/d = 12 bytes per parameter.
        Plan dist = plan;
        dist.distributedOptimizer = true;
        const PlanEstimate ed = estimatePlan(dist, c, m, nullptr, o);
        const GpuMemory &d0 = ed.gpus.front();
        QNEAR(d0.paramsBytes + d0.gradsBytes + d0.optimizerBytes, 12.0 * 1715732480.0);
    }

    void activationRecomputeAndInFlight()
    {
        // p = 4, m = 2: stage i holds min(p - i, m) = 2, 2, 2, 1 micro-batches.
        const Cluster c = syntheticCluster();
        Model m = megatronModel();
        CostOptions o;
        const Plan plan = simplePlan("n", {8, 8, 8, 8}, 1, 1, 1, 2, RecomputeMethod::Full);
        const PlanEstimate e = estimatePlan(plan, c, m, nullptr, o);
        QCOMPARE(e.microBatches, 2);
        const int expected[4] = {2, 2, 2, 1};
        for (int i = 0; i < 4; ++i)
            QCOMPARE(e.stages[static_cast<size_t>(i)].microBatchesInFlight, expected[i]);
        // Full recompute, t = 1: each layer keeps 2sbh = 16,777,216 bytes per micro-batch plus one
        // layer's working set without recompute: sbh (34 + 5as/h) = 8,388,608 * (34 + 80) = 956,301,312.
        // Stage 1 (no embedding, no logits): 2 x 8 x 16,777,216 + 956,301,312 = 1,224,736,768.
        QNEAR(e.gpus[1].activationBytes, 1224736768.0);
        // Last stage: 1 x 8 x 16,777,216 + 956,301,312 + the loss peak: 16-bit logits + their fp32
        //   copy 6 sbh V/h (V = 51200, already a multiple of 128) + 4 sbh = 79 sbh = 662,700,032
        //   -> 1,753,219,072.
        QNEAR(e.gpus[3].activationBytes, 1753219072.0);
        // Selective drops the score term: per layer sbh (10 + 24) = 285,212,672; stage 1: 2 x 8 x that.
        const Plan sel = simplePlan("n", {8, 8, 8, 8}, 1, 1, 1, 2, RecomputeMethod::Selective);
        QNEAR(estimatePlan(sel, c, m, nullptr, o).gpus[1].activationBytes, 16.0 * 285212672.0);
        // None keeps the scores too: sbh (34 + 80) per layer.
        const Plan none = simplePlan("n", {8, 8, 8, 8}, 1, 1, 1, 2, RecomputeMethod::None);
        const PlanEstimate en = estimatePlan(none, c, m, nullptr, o);
        QNEAR(en.gpus[1].activationBytes, 16.0 * 956301312.0);
        // Recompute costs time: full adds one forward per layer.
        QNEAR(e.stages[1].recomputeMs, e.stages[1].forwardMs);
        QCOMPARE(en.stages[1].recomputeMs, 0.0);
        QVERIFY(e.iterationTimeMs > en.iterationTimeMs);
    }

    void iterationTimeByHand()
    {
        // 1 GPU, p = 1, t = 1, d = 1, b = 1, gbs 8 -> m = 8; the kernel-level model with one
        // compute unit (no wave quantisation), no host floor, flash attention. GEMM efficiency
        // 0.5 (measured) of 100 TFLOP/s, HBM 1000 GB/s x 0.7, every dimension a multiple of 128.
        Cluster c = syntheticCluster();
        c.devices[0].computeUnits = 1;
        Model m = tinyModel();
        m.training.globalBatch = 8;
        m.training.attention = AttentionBackend::Flash;
        CostOptions o;
        o.hostOpMicroseconds = 0;
        o.iterationOverheadMs = 0;
        const PlanEstimate e = estimatePlan(simplePlan("n", {4}, 1, 1, 1, 8), c, m, nullptr, o);
        // GEMM (M, N, K) = 2MNK / (5e13 x K / (K + 96)). Forward, T = 1024 tokens:
        //   QKV (1024, 3072, 1024) 0.1409286 ms, proj (1024, 1024, 1024) 0.0469762 ms,
        //   FC1 (1024, 4096, 1024) 0.1879048 ms, FC2 (1024, 1024, 4096) 0.1752202 ms
        //   -> 0.55163486208 ms; backward (data + weight gradients) 1.107296256 ms.
        // Flash attention: 2 x b a s^2 d = 2,147,483,648 FLOPs at 5e13 x 0.6 = 0.0715828 ms fwd,
        //   x 2.5 backward.
        // Memory-bound (Megatron's fused kernels): 2 norms 4 x 2Th + 2 bias-dropout-adds 7 x 2Th
        //   + 2 T f x 2 = 39,845,888 bytes at 700 GB/s = 0.0569227 ms fwd, x 2 backward.
        //   -> layer fwd 0.680140347490 ms, bwd 1.400098620952 ms.
        // Head (V = 32000, already a multiple of 128): logits GEMM + 10 T V bytes of cross-entropy
        //   -> fwd 1.936120685714 ms, bwd 3.282324497554 ms. Embedding 6 T h bytes: 0.008987794 /
        //   0.017975589 ms.
        const double memoryBound = 39845888.0 / 7e11 * 1e3;
        const double layerFwd = 0.55163486208 + 0.0715827882667 + memoryBound;
        const double layerBwd = 1.107296256 + 2.5 * 0.0715827882667 + 2 * memoryBound;
        QVERIFY(near(layerFwd, 0.680140347490, 1e-9) && near(layerBwd, 1.400098620952, 1e-9));
        const double step = 4 * (layerFwd + layerBwd) + 1.9361206857142859 + 3.282324497554286 + 0.008987794285714286
            + 0.017975588571428572;
        QNEAR(e.stages[0].forwardMs, 4 * layerFwd + 1.9361206857142859 + 0.008987794285714286);
        QNEAR(e.stages[0].stepMs, step);
        QNEAR(e.pipelineMs, 8 * step); // (m - 1) step + step
        // Optimizer: params 4 x 12,587,008 + h V 32,768,000 + final norm 2,048 = 83,118,080
        // x 30 bytes / (1000 GB/s x 0.8) = 3.116928 ms.
        QNEAR(e.optimizerMs, 3.116928);
        QCOMPARE(e.dpSyncMs, 0.0);
        QNEAR(e.iterationTimeMs, 8 * step + 3.116928);
        // The host floor: with 1 ms per op every pass is host-bound (24 / 36 ops per layer).
        o.hostOpMicroseconds = 1000;
        const PlanEstimate h = estimatePlan(simplePlan("n", {4}, 1, 1, 1, 8), c, m, nullptr, o);
        QNEAR(h.stages[0].forwardMs, 4 * 24.0 + 8.0 + 4.0);
        QNEAR(h.stages[0].backwardMs, 4 * 36.0 + 8.0 + 4.0);
        o.hostOpMicroseconds = 0;
        o.iterationOverheadMs = 2.5;
        QNEAR(estimatePlan(simplePlan("n", {4}, 1, 1, 1, 8), c, m, nullptr, o).iterationTimeMs,
              8 * step + 3.116928 + 2.5);
    }

    void sequenceParallelAndHostBoundCollectives()
    {
        // The tiny model of iterationTimeByHand at TP 2 on the synthetic GPU (100 GB/s link, no
        // latency). T = 1024 tokens, h = 1024: 2Th = 2,097,152 bytes.
        Cluster c = syntheticCluster();
        c.devices[0].computeUnits = 1;
        Model m = tinyModel();
        m.training.attention = AttentionBackend::Flash;
        CostOptions o;
        o.hostOpMicroseconds = 0;
        const Link link {100, 0, {}};
        const LayerKernel plain = makeLayerKernel(c.devices[0], link, m, 2, 1, false, nullptr, o);
        const LayerKernel sp = makeLayerKernel(c.devices[0], link, m, 2, 1, true, nullptr, o);
        // Sequence parallelism runs the norms and bias-dropout-adds (11 x 2Th bytes) on s / 2
        // tokens per rank: 11 x 2,097,152 / 2 bytes fewer at 700 GB/s forward, twice backward.
        const double saved = 11.0 * 2097152.0 / 2 / 7e11 * 1e3;
        QNEAR(plain.forwardPrefixMs[1] - sp.forwardPrefixMs[1], saved);
        QNEAR(plain.backwardPrefixMs[1] - sp.backwardPrefixMs[1], 2 * saved);
        // GPU-bound (no host cost): every TP all-reduce adds to the step. One all-reduce of
        // 2,097,152 bytes between 2 ranks: 2 (n - 1) / n x bytes / 100 GB/s = 0.02097152 ms; 2
        // forward + 2 backward per layer, the 2 forward ones again for a recomputed layer.
        const double one = 2097152.0 / 1e11 * 1e3;
        QNEAR(plain.tpCommPerLayerMs, 4 * one);
        QNEAR(plain.tpCommRecomputePerLayerMs, 2 * one);
        // Host-bound (1 ms per framework op): the collectives queue on the GPU behind kernels that
        // finish long before the host has issued the pass's 24 / 36 ops; only the 2 collective
        // calls per pass add host time: 2 ms forward + 2 ms backward.
        o.hostOpMicroseconds = 1000;
        const LayerKernel host = makeLayerKernel(c.devices[0], link, m, 2, 1, false, nullptr, o);
        QNEAR(host.forwardPrefixMs[1], 24.0);
        QNEAR(host.backwardPrefixMs[1], 36.0);
        QNEAR(host.tpCommPerLayerMs, 4.0);
        QNEAR(host.tpCommRecomputePerLayerMs, 2.0);
    }

    void collectivesAndPipeline()
    {
        // nccl-tests ring: all-reduce of 1e9 bytes over 4 ranks at 100 GB/s = 2*3/4*1e9/1e11 = 15 ms.
        QNEAR(allReduceMs(4, 1e9, Link {100, 0, {}}), 15.0);
        QNEAR(allGatherMs(4, 1e9, Link {100, 0, {}}), 7.5);
        QNEAR(allReduceMs(4, 1e9, Link {100, 5, {}}), 15.0 + 6 * 5e-3);
        QCOMPARE(allReduceMs(1, 1e9, Link {100, 0, {}}), 0.0);

        // Two stages, DP 2, TP 2 on one node: DP all-reduce of stage grads (4 bytes/param),
        // TP 4 all-reduces of 2 b s h bytes per layer, p2p 2 b s h bytes.
        const Cluster c = syntheticCluster();
        const Model m = megatronModel();
        CostOptions o;
        const Plan plan = simplePlan("n", {16, 16}, 2, 2, 1, 64, RecomputeMethod::Selective);
        const PlanEstimate e = estimatePlan(plan, c, m, nullptr, o);
        const double psi0 = 1715732480.0; // from megatronTheoreticalMemory
        QNEAR(e.stages[0].dpSyncMs, 2.0 * 1 / 2 * psi0 * 4 / 100e9 * 1e3);
        const double sbh2 = 2048.0 * 4096 * 2;
        QNEAR(e.stages[1].tpCommMs, 16 * 4 * (2.0 * 1 / 2 * sbh2 / 100e9 * 1e3));
        // Each send: its bytes + the fixed cost of one pipeline send (CostOptions::p2pOpOverheadMs, 1 ms).
        QNEAR(e.stages[0].p2pMs, sbh2 / 100e9 * 1e3 + 1.0);
        // 1F1B with blocking sends: (m - 1) (max step + its send or receive) + sum steps + 2 p2p
        // per boundary.
        const double s0 = e.stages[0].stepMs, s1 = e.stages[1].stepMs, x = e.stages[0].p2pMs;
        QNEAR(e.pipelineMs, 31 * (std::max(s0, s1) + x) + s0 + s1 + 2 * x);
        QNEAR(e.iterationTimeMs, e.pipelineMs + e.dpSyncMs + e.optimizerMs + CostOptions {}.iterationOverheadMs);
        QNEAR(e.stages[0].bubbleMs, e.pipelineMs - 32 * s0);
    }

    void interleavedPipelineByHand()
    {
        // Interleaved 1F1B (Narayanan et al. 2021): p = 4 equal stages of 8 layers, v = 2 chunks
        // per rank, m = 4. With sends free of cost beyond their bytes and not exposed, the
        // makespan is the paper's (m + (p - 1) / v) x step + the fill/drain sends 2 (p - 1) x send.
        const Cluster c = syntheticCluster();
        const Model m = megatronModel();
        CostOptions o;
        o.exposedP2pFraction = 0;
        o.p2pOpOverheadMs = 0;
        Plan plan = simplePlan("n", {8, 8, 8, 8}, 1, 1, 1, 4);
        const PlanEstimate plain = estimatePlan(plan, c, m, nullptr, o);
        plan.virtualStages = 2;
        const PlanEstimate e = estimatePlan(plan, c, m, nullptr, o);
        // Middle stages have neither embedding nor head: their steps are equal; the pipeline is set
        // by the slowest (the last, with the output layer): use the general form with every step.
        double sum = 0, slowest = 0, sends = 0;
        for (const StageEstimate &s : e.stages) {
            sum += s.stepMs;
            slowest = std::max(slowest, s.stepMs);
            sends += s.p2pMs;
        }
        QNEAR(e.pipelineMs, (4 - 0.5) * slowest + sum / 2 + 2 * sends);
        // Without interleaving: (m - 1) x slowest + sum + 2 sends; the bubble shrinks by (sum - slowest) / 2.
        QNEAR(plain.pipelineMs, 3 * slowest + sum + 2 * sends);
        QNEAR(plain.pipelineMs - e.pipelineMs, (sum - slowest) / 2);
        // Exposed sends: every rank sends and receives v times per micro-batch, the last rank to
        // the first as well. Link 100 GB/s without latency: a send of 2 b s h = 16,777,216 bytes is
        // 0.16777216 ms; + 1 ms fixed per send. Stage 3 receives from 2 and sends to 0 (wrap).
        CostOptions x;
        const double send = 16777216.0 / 100e9 * 1e3 + x.p2pOpOverheadMs;
        const PlanEstimate ex = estimatePlan(plan, c, m, nullptr, x);
        double sumX = 0, slowX = 0;
        for (const StageEstimate &s : ex.stages) {
            sumX += s.stepMs;
            slowX = std::max(slowX, s.stepMs + 2 * 2 * send);
        }
        QNEAR(ex.stages[0].p2pMs, send);
        QNEAR(ex.pipelineMs, 3.5 * slowX + sumX / 2 + 2 * 3 * send);
        QNEAR(pipelineMakespanMs(4, 4, std::vector<double> {1, 1, 1, 1}.data(), std::vector<double> {0, 0, 0}.data(),
                                 1.0, 2, 0.0),
              4 + 3.0 / 2);

        // Memory: Megatron-LM's warm-up of the interleaved schedule holds 2 (p - i - 1) + (v - 1) p + 1
        // chunks of layerCount / v layers (at most m v). m = 4: stage 0 min(8, 11) = 8 chunks = 4
        // micro-batches; stage 2 min(8, 7) = 3.5 (plain 1F1B: p - i = 2); stage 3 min(8, 5) = 2.5.
        QCOMPARE(inFlightMicroBatches(4, 0, 4, 2), 4.0);
        QCOMPARE(inFlightMicroBatches(4, 2, 4, 2), 3.5);
        QCOMPARE(inFlightMicroBatches(4, 3, 4, 2), 2.5);
        QCOMPARE(inFlightMicroBatches(4, 2, 4, 1), 2.0);
        // m = 8: stage 0 holds 11 / 2 = 5.5 = p (1 + (p - 1) / (p v)), theoretical_memory_usage.py's
        // interleaved penalty.
        QCOMPARE(inFlightMicroBatches(4, 0, 8, 2), 4.0 * (1 + 3.0 / 8));
        QCOMPARE(e.stages[2].microBatchesInFlight, 4); // 3.5 rounded up
        // Stage 2 (no embedding, no logits, no recompute) keeps in-flight x 8 layers x per layer.
        QNEAR(e.gpus[2].activationBytes / plain.gpus[2].activationBytes, 3.5 / 2);

        // Megatron-LM's rules: p > 2, equal chunks, micro-batches in groups of p.
        const auto firstProblem = [&](const Plan &p) {
            Diagnostics d;
            validatePlan(p, c, m, d);
            return d.empty() ? std::string() : d.items().front().pointer + ": " + d.items().front().message;
        };
        QCOMPARE(firstProblem(plan), std::string());
        Plan two = simplePlan("n", {16, 16}, 1, 1, 1, 4);
        two.virtualStages = 2;
        QVERIFY(firstProblem(two).find("/virtualStages: expected 1 with 2 pipeline stages") == 0);
        Plan odd = simplePlan("n", {9, 7, 8, 8}, 1, 1, 1, 4);
        odd.virtualStages = 2;
        QCOMPARE(firstProblem(odd),
                 std::string("/stages/0/layerCount: expected a multiple of the 2 virtual stages "
                             "(each rank holds equal model chunks), found 9"));
        Plan six = simplePlan("n", {8, 8, 8, 8}, 1, 1, 1, 6);
        six.virtualStages = 2;
        QVERIFY(firstProblem(six).find("/globalBatch: expected micro-batches in whole groups of the 4") == 0);
    }

    void contextParallelByHand()
    {
        // The tiny model (s = 1024, h = 1024, 16 heads of d = 64) on the synthetic GPU, one
        // compute unit, no host cost, flash attention: a CP rank holds s / cp tokens and its
        // queries attend to the whole sequence, so at CP 2 every kernel does half the work.
        Cluster c = syntheticCluster();
        c.devices[0].computeUnits = 1;
        Model m = tinyModel();
        m.training.globalBatch = 8;
        m.training.attention = AttentionBackend::Flash;
        CostOptions o;
        o.hostOpMicroseconds = 0;
        const Link link {100, 0, {}};
        const LayerKernel one = makeLayerKernel(c.devices[0], link, m, 1, 1, false, nullptr, o);
        const LayerKernel ag = makeLayerKernel(c.devices[0], link, m, 1, 1, false, nullptr, o, 2, CpComm::AllGather);
        QNEAR(ag.forwardPrefixMs[1], one.forwardPrefixMs[1] / 2);
        // Backward: the same, except that the weight-gradient GEMMs reduce over the rank's tokens,
        // whose short-reduction factor k / (k + 96) drops from 1024 / 1120 to 512 / 608: a little
        // more than half, at most the forward half of the weight-gradient part over that factor.
        QVERIFY(ag.backwardPrefixMs[1] > one.backwardPrefixMs[1] / 2);
        QVERIFY(ag.backwardPrefixMs[1] < one.backwardPrefixMs[1] / 2 * (1024.0 / 1120) / (512.0 / 608));
        // all_gather: local K/V = 2 x b (s / cp) d g / tp x 2 bytes = 2 x 512 x 64 x 16 x 2 =
        // 2,097,152; the gather of the whole 4,194,304 bytes over 2 ranks = 1/2 x 4,194,304 /
        // 100 GB/s = 0.02097152 ms forward, again in backward + the gradients' reduce-scatter.
        QNEAR(ag.cpCommPerLayerMs, 3 * 0.02097152);
        QNEAR(ag.cpCommRecomputePerLayerMs, 0.02097152);
        // p2p (ring): 1 step sending the 2,097,152-byte K/V block (0.02097152 ms) while the
        // step's attention runs: b (heads / tp) s^2 / cp = 8,388,608 scores, causal flash
        // 2 x scores x d = 1,073,741,824 FLOPs at 100 TFLOP/s x 0.5 x 0.6 = 0.0357913941 ms,
        // / cp = 0.0178956971 ms per step -> 0.0030758229 ms exposed forward; backward sends
        // 2x the bytes (0.04194304 ms) against 2.5x the step (0.0447392427 ms): hidden.
        const LayerKernel ring = makeLayerKernel(c.devices[0], link, m, 1, 1, false, nullptr, o, 2, CpComm::P2P);
        QVERIFY(near(ring.cpCommPerLayerMs, 0.02097152 - 1073741824.0 / 3e13 * 1e3 / 2, 1e-9));
        // a2a (Ulysses): Q, K, V in and the output out, b (s / cp) (2 q + 2 kv) x 2 bytes =
        // 512 x 4096 x 2 = 4,194,304 per rank, (cp - 1) / cp of it crosses: 0.02097152 ms each way.
        const LayerKernel a2a = makeLayerKernel(c.devices[0], link, m, 1, 1, false, nullptr, o, 2, CpComm::A2A);
        QNEAR(a2a.cpCommPerLayerMs, 2 * 0.02097152);

        // Memory: every activation holds s / cp tokens (an unfused score tensor (s / cp) x s), so
        // at CP 2 the activations halve, the weights do not, and the distributed optimizer
        // shards over DP x CP.
        Plan plan = simplePlan("n", {4}, 1, 1, 1, 8);
        plan.distributedOptimizer = true;
        const PlanEstimate e1 = estimatePlan(plan, c, m, nullptr, o);
        Plan cp = plan;
        cp.contextParallel = 2;
        cp.cpComm = CpComm::AllGather;
        cp.stages[0].replicas[0].gpus = {0, 1};
        for (AttentionBackend backend : {AttentionBackend::Flash, AttentionBackend::Unfused}) {
            m.training.attention = backend;
            const PlanEstimate a = estimatePlan(plan, c, m, nullptr, o);
            const PlanEstimate b = estimatePlan(cp, c, m, nullptr, o);
            QCOMPARE(b.gpus.size(), size_t(2));
            QNEAR(b.gpus[1].activationBytes, a.gpus[0].activationBytes / 2);
            QNEAR(b.gpus[0].paramsBytes, a.gpus[0].paramsBytes);
            QNEAR(b.gpus[0].optimizerBytes, a.gpus[0].optimizerBytes / 2);
        }
        m.training.attention = AttentionBackend::Flash;
        // Time: the layers' halved compute + their exchange; the gradients now reduce over the 2
        // CP ranks (reduce-scatter + all-gather with the distributed optimizer).
        const PlanEstimate e2 = estimatePlan(cp, c, m, nullptr, o);
        QNEAR(e2.stages[0].cpCommMs, 4 * 3 * 0.02097152);
        QVERIFY(e2.dpSyncMs > 0 && e1.dpSyncMs == 0);
        QVERIFY(e2.iterationTimeMs < e1.iterationTimeMs);

        // Rules: 2 x cp chunks divide the sequence; a2a needs the heads per TP rank to divide by cp;
        // a replica has tp x cp GPUs of one node.
        const auto firstProblem = [&](const Plan &p) {
            Diagnostics d;
            validatePlan(p, c, m, d);
            return d.empty() ? std::string() : d.items().front().pointer + ": " + d.items().front().message;
        };
        QCOMPARE(firstProblem(cp), std::string());
        Plan three = cp;
        three.contextParallel = 3;
        three.stages[0].replicas[0].gpus = {0, 1, 2};
        QVERIFY(firstProblem(three).find("/contextParallel: expected a size whose 2 x cp chunks divide the sequence "
                                         "of 1024 tokens")
                == 0);
        Plan few = cp;
        few.stages[0].replicas[0].gpus = {0};
        QCOMPARE(firstProblem(few),
                 std::string("/stages/0/replicas/0/gpus: expected 2 GPU indices (TP x CP: one per "
                             "TP rank of each CP rank), found 1"));
        Plan heads = cp;
        heads.cpComm = CpComm::A2A;
        heads.contextParallel = 32;
        QVERIFY(firstProblem(heads).find("/cpComm: expected p2p or all_gather: a2a spreads heads over the CP ranks, "
                                         "and stage 0's 16 heads (16 KV groups) per TP rank do not divide by cp 32")
                == 0);
        Plan wide = cp;
        wide.contextParallel = 16;
        wide.stages[0].replicas[0].gpus.clear();
        for (int g = 0; g < 16; ++g)
            wide.stages[0].replicas[0].gpus.push_back(g);
        QCOMPARE(firstProblem(wide),
                 std::string("/stages/0/replicas/0/tp: expected at most 8 GPUs for TP x CP (a "
                             "replica stays within node 'n'), found 16"));
    }

    void slowestReplicaLimitsStage()
    {
        // A stage with an H100 replica and an A100 replica runs at the A100's pace.
        const Cluster c = loadCluster(kSamples + "/paper-20gpu-nvidia-amd.json");
        const Model m = resolveModel("gpt3-1.3b");
        Plan p;
        p.globalBatch = 64;
        Stage s;
        s.layerCount = m.shape.layers;
        s.replicas.push_back(Replica {"h100", {0}, 1, 1});
        s.replicas.push_back(Replica {"a100-0", {0}, 1, 1});
        p.stages.push_back(s);
        const PlanEstimate mixed = estimatePlan(p, c, m, nullptr, CostOptions {});
        Plan a100 = p;
        a100.stages[0].replicas = {Replica {"a100-0", {0}, 1, 1}, Replica {"a100-0", {1}, 1, 1}};
        Plan h100 = p;
        h100.stages[0].replicas = {Replica {"h100", {0}, 1, 1}, Replica {"h100", {1}, 1, 1}};
        const PlanEstimate ea = estimatePlan(a100, c, m, nullptr, CostOptions {});
        const PlanEstimate eh = estimatePlan(h100, c, m, nullptr, CostOptions {});
        QNEAR(mixed.stages[0].stepMs, ea.stages[0].stepMs);
        QCOMPARE(mixed.stages[0].slowestReplica, 1);
        QVERIFY(eh.stages[0].stepMs < ea.stages[0].stepMs);
        // The mixed group spans two nodes: its DP all-reduce goes over the 25 GB/s network.
        QVERIFY(mixed.stages[0].dpSyncMs > ea.stages[0].dpSyncMs);
        // Per-GPU capacities differ: 39.5 GiB on the A100, 79.11 GiB on the H100.
        QCOMPARE(mixed.gpus.size(), size_t(2));
        QNEAR(mixed.gpus[1].capacityBytes, 39.5 * 1073741824.0);
        QVERIFY(mixed.imbalance > 0.1);
    }

    void outOfMemoryIsFlagged()
    {
        const Cluster c = loadCluster(kSamples + "/paper-20gpu-mixed-consumer.json");
        const Model m = resolveModel("llama2-7b");
        Plan p = simplePlan("rtx4090", {32}, 1, 1, 1, 8);
        const PlanEstimate e = estimatePlan(p, c, m, nullptr, CostOptions {});
        QVERIFY(e.oom);
        QVERIFY(e.gpus[0].oom);
        QVERIFY(e.gpus[0].headroomBytes < 0);
        QNEAR(e.gpus[0].headroomBytes, e.gpus[0].capacityBytes - e.gpus[0].totalBytes);
        QVERIFY(e.peakUtilisation > 1.0);
    }

    void profileReplacesAnalyticCompute()
    {
        const Cluster c = syntheticCluster();
        Model m = tinyModel();
        m.training.globalBatch = 8;
        ProfileSet ps;
        LayerProfile lp;
        lp.key = ProfileKey {"synthetic-gpu", "tiny", 1, 1, 1024};
        lp.layers.push_back(LayerMeasurement {0.1, 0.2, 0.01, {}, {}});
        for (int i = 0; i < 4; ++i)
            lp.layers.push_back(LayerMeasurement {1.0 + i, 2.0 + i, 0.5, {}, {}});
        lp.layers.push_back(LayerMeasurement {3.0, 6.0, 0.25, {}, {}});
        ps.add(lp);
        const PlanEstimate e = estimatePlan(simplePlan("n", {2, 2}, 1, 1, 1, 8), c, m, &ps, CostOptions {});
        // Stage 0: embedding 0.1 + 0.2, layers 0-1: fwd 1 + 2, bwd 2 + 3 -> 8.3 ms.
        // Stage 1: layers 2-3: fwd 3 + 4, bwd 4 + 5, head 3 + 6 -> 25 ms.
        QVERIFY(e.stages[0].profiled);
        QNEAR(e.stages[0].stepMs, 8.3);
        QNEAR(e.stages[1].stepMs, 25.0);
        // Optimizer from the profile: stage 1 = 0.5 + 0.5 + 0.25 = 1.25 ms (the max).
        QNEAR(e.optimizerMs, 1.25);
        // A key that is not in the set falls back to the analytic model.
        const PlanEstimate e2 = estimatePlan(simplePlan("n", {2, 2}, 1, 1, 2, 8), c, m, &ps, CostOptions {});
        QVERIFY(!e2.stages[0].profiled);
    }

    void attentionTermsKorthikanti()
    {
        // Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
        // Table 2, activation bytes per layer: TP alone sbh(10 + 24/t + 5as/(ht)); TP + SP
        // sbh/t (34 + 5as/h); selective recompute drops the 5as/h term (= what flash/fused
        // attention never stores). By hand for s = 2048, b = 1, h = 4096, a = 32, t = 8:
        //   sbh = 8,388,608; 5as/h = 5 x 32 x 2048 / 4096 = 80
        //   unfused, no SP: sbh (10 + 3 + 10)   = 23 sbh    = 192,937,984
        //   flash,   no SP: sbh (10 + 3)        = 13 sbh    = 109,051,904
        //   unfused, SP:    sbh / 8 (34 + 80)   = 14.25 sbh = 119,537,664
        //   flash,   SP:    sbh / 8 x 34        = 4.25 sbh  =  35,651,584
        //   full recompute keeps the input 2sbh (2sbh/t with SP) = 16,777,216 / 2,097,152
        Model m = megatronModel();
        const GpuSpec dev = syntheticCluster().devices[0];
        CostOptions o;
        struct Case {
            AttentionBackend a;
            bool sp;
            double none, sel, full;
        };
        for (const Case &c : {Case {AttentionBackend::Unfused, false, 192937984.0, 109051904.0, 16777216.0},
                              Case {AttentionBackend::Flash, false, 109051904.0, 109051904.0, 16777216.0},
                              Case {AttentionBackend::Fused, false, 109051904.0, 109051904.0, 16777216.0},
                              Case {AttentionBackend::Unfused, true, 119537664.0, 35651584.0, 2097152.0},
                              Case {AttentionBackend::Flash, true, 35651584.0, 35651584.0, 2097152.0}}) {
            m.training.attention = c.a;
            const MemoryKernel k = makeMemoryKernel(m, dev, 8, 1, c.sp, 1, nullptr, o);
            QCOMPARE(k.attention, c.a);
            QNEAR(k.layerActivationBytes[static_cast<int>(RecomputeMethod::None)], c.none);
            QNEAR(k.layerActivationBytes[static_cast<int>(RecomputeMethod::Selective)], c.sel);
            QNEAR(k.layerActivationBytes[static_cast<int>(RecomputeMethod::Full)], c.full);
        }
    }

    void attentionAutoResolvesPerDevice()
    {
        // `auto` is what Megatron-LM's --attention-backend auto picks: flash/fused on Ampere and
        // newer and on CDNA2+, unfused on Volta, Turing and CDNA1.
        Model m = megatronModel();
        m.training.attention = AttentionBackend::Auto;
        const Catalogue &cat = builtinCatalogue();
        for (const char *id : {"v100-16gb-sxm2", "rtx-2080", "titan-rtx", "mi100"})
            QCOMPARE(resolveAttention(m, *cat.find(id)), AttentionBackend::Unfused);
        for (const char *id : {"a100-80gb-sxm", "h100-sxm", "gh200-96gb", "rtx-3090", "rtx-4090", "mi250x", "mi300x"})
            QCOMPARE(resolveAttention(m, *cat.find(id)), AttentionBackend::Flash);
        m.training.attention = AttentionBackend::Flash; // the user's choice wins, even where unusual
        QCOMPARE(resolveAttention(m, *cat.find("v100-16gb-sxm2")), AttentionBackend::Flash);
        m.training.attention = AttentionBackend::Unfused;
        QCOMPARE(resolveAttention(m, *cat.find("h100-sxm")), AttentionBackend::Unfused);
        // Unfused attention also costs time (the s x s tensors go through HBM); flash does not.
        Cluster c = syntheticCluster();
        m.training.attention = AttentionBackend::Unfused;
        const LayerKernel ku = makeLayerKernel(c.devices[0], Link {100, 0, {}}, m, 1, 1, false, nullptr, opts());
        m.training.attention = AttentionBackend::Flash;
        const LayerKernel kf = makeLayerKernel(c.devices[0], Link {100, 0, {}}, m, 1, 1, false, nullptr, opts());
        // b = 1, a = 32, s = 2048, d = 128; 100 TFLOP/s x 0.5, 108 SMs, HBM 1000 GB/s x 0.7.
        // Unfused: QK^T as one batched GEMM (M = 32 x 2048, N = 2048, K = 128): 8192 tiles in 76
        //   waves of 108 (0.99805), K/(K+96) = 0.57143 -> 34,359,738,368 FLOPs in 1.204992 ms;
        //   PV (M = 65536, N = 128, K = 2048): 512 tiles in 5 waves (0.94815), 0.95522 -> 0.758747 ms;
        //   11 bytes x 32 x 2048^2 = 1,476,395,008 bytes at 700 GB/s = 2.109136 ms.
        // Flash: 2 x 32 x 2048^2 x 128 FLOPs at 5e13 x 0.6 = 1.145325 ms.
        const double unfused = 34359738368.0 / (5e13 * (8192.0 / (76 * 108)) * (128.0 / 224)) * 1e3
            + 34359738368.0 / (5e13 * (512.0 / 540) * (2048.0 / 2144)) * 1e3 + 1476395008.0 / 7e11 * 1e3;
        const double flash = 34359738368.0 / 3e13 * 1e3;
        QNEAR(ku.forwardPrefixMs[1] - kf.forwardPrefixMs[1], unfused - flash);
    }

    void logitsAndVocabPadding()
    {
        // GPT-2 XL (megatron-tutorials): V = 50257 padded to 128 x t: 50304 at t = 1, 51200 at t = 8.
        // Last stage at the loss, b = 1, s = 1024, h = 1600, t = 1:
        //   16-bit logits + fp32 copy: 6 x s x 50304 = 309,067,776; + 4 sbh = 6,553,600 -> 315,621,376
        Model m = megatronModel();
        m.shape.vocab = 50257;
        m.shape.hidden = 1600;
        m.shape.heads = 25;
        m.shape.kvGroups = 25;
        m.shape.ffnHidden = 6400;
        m.shape.seqLength = 1024;
        QCOMPARE(paddedVocab(m, 1, opts()), 50304LL);
        QCOMPARE(paddedVocab(m, 8, opts()), 51200LL);
        const MemoryKernel k = makeMemoryKernel(m, syntheticCluster().devices[0], 1, 1, false, 1, nullptr, opts());
        QNEAR(k.logitsBytes, 315621376.0);
        QNEAR(k.embeddingParams, 50304.0 * 1600);
    }

    void memoryVerdictBand()
    {
        // fits below capacity / (1 + u), does not fit above capacity / (1 - u), risk between.
        QCOMPARE(memoryVerdict(0.94, 0.05), MemoryVerdict::Fits); // 0.987
        QCOMPARE(memoryVerdict(0.96, 0.05), MemoryVerdict::Risk); // 1.008
        QCOMPARE(memoryVerdict(1.04, 0.05), MemoryVerdict::Risk); // 0.988 below
        QCOMPARE(memoryVerdict(1.06, 0.05), MemoryVerdict::DoesNotFit); // 1.007
        QCOMPARE(memoryVerdict(1.0, 0.0), MemoryVerdict::Risk);
        // The estimate carries it for its fullest GPU, with the margin in bytes.
        Cluster c = syntheticCluster();
        const PlanEstimate e
            = estimatePlan(simplePlan("n", {16, 16}, 2, 2, 1, 64), c, megatronModel(), nullptr, opts());
        QVERIFY(e.fullestGpu >= 0);
        QNEAR(e.marginBytes,
              e.gpus[static_cast<size_t>(e.fullestGpu)].capacityBytes
                  - e.gpus[static_cast<size_t>(e.fullestGpu)].totalBytes);
        QCOMPARE(e.verdict, memoryVerdict(e.peakUtilisation, opts().memoryUncertainty));
        // Three peaks of the fullest GPU: allocated < reserved < device-used.
        const GpuMemory &f = e.gpus[static_cast<size_t>(e.fullestGpu)];
        QNEAR(f.allocatedBytes, f.paramsBytes + f.gradsBytes + f.optimizerBytes + f.activationBytes);
        QNEAR(f.reservedBytes, f.allocatedBytes * (1 + opts().allocatorReserveFraction));
        QVERIFY(f.totalBytes > f.reservedBytes);
    }

    void measuredActivationBytesWin()
    {
        // A profile with measured activation bytes replaces the formula's stored bytes; selective
        // drops the formula's score term from them; full keeps the layer input.
        Model m = megatronModel();
        m.shape.layers = 2;
        m.training.attention = AttentionBackend::Unfused;
        const GpuSpec dev = syntheticCluster().devices[0];
        ProfileSet ps;
        LayerProfile lp;
        lp.key = ProfileKey {dev.id, m.id, 8, 1, m.shape.seqLength};
        lp.layers.resize(4);
        for (LayerMeasurement &l : lp.layers) {
            l.forwardMs = 1;
            l.activationBytes = 200e6;
        }
        ps.add(lp);
        const MemoryKernel k = makeMemoryKernel(m, dev, 8, 1, false, 1, &ps, opts());
        QVERIFY(k.activationsMeasured);
        QNEAR(k.layerActivationBytes[0], 200e6);
        QNEAR(k.layerActivationBytes[1], 200e6 - 10.0 * 8388608); // score term sbh x 80 / 8
        QNEAR(k.layerActivationBytes[2], 2.0 * 8388608);
        const MemoryKernel f = makeMemoryKernel(m, dev, 8, 2, false, 1, &ps, opts()); // no profile at mb 2
        QVERIFY(!f.activationsMeasured);
    }

    /// LinkTable (issue 22: linear link set-up) against the pairwise reference it replaced:
    /// random clusters mixing vendors, with group, node-to-group, node-to-node, same-group and
    /// repeated overrides (the first in file order wins), random node sets with repeats.
    void linkTableMatchesPairwiseLinks()
    {
        const Catalogue &cat = builtinCatalogue();
        const std::vector<std::string> devices {"a100-40gb-sxm", "h100-sxm", "mi250x"};
        std::mt19937 rng(22);
        const auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
        // The reference: every pair of distinct nodes through Cluster::interNodeLink (nodeLink).
        const auto among = [](const std::vector<int> &idx, const std::vector<Node> &nodes, const Cluster &c) {
            std::set<int> u(idx.begin(), idx.end());
            std::vector<Link> out;
            if (u.size() == 1)
                return std::vector<Link> {nodes[size_t(*u.begin())].intraLink};
            for (int a : u)
                for (int b : u)
                    if (a < b) {
                        const Link l = nodeLink(nodes[size_t(a)], nodes[size_t(b)], c, CostOptions {});
                        if (std::find(out.begin(), out.end(), l) == out.end())
                            out.push_back(l);
                    }
            return out;
        };
        const auto between = [](const std::vector<int> &x, const std::vector<int> &y, const std::vector<Node> &nodes,
                                const Cluster &c) {
            std::vector<Link> out;
            for (int a : std::set<int>(x.begin(), x.end()))
                for (int b : std::set<int>(y.begin(), y.end())) {
                    const Link l = a == b ? nodes[size_t(a)].intraLink
                                          : nodeLink(nodes[size_t(a)], nodes[size_t(b)], c, CostOptions {});
                    if (std::find(out.begin(), out.end(), l) == out.end())
                        out.push_back(l);
                }
            return out;
        };
        const auto sameSet = [](std::vector<Link> a, std::vector<Link> b) {
            const auto less = [](const Link &x, const Link &y) {
                return std::tie(x.bandwidthGBps, x.latencyUs) < std::tie(y.bandwidthGBps, y.latencyUs);
            };
            std::sort(a.begin(), a.end(), less);
            std::sort(b.begin(), b.end(), less);
            return a == b;
        };
        int checks = 0, withOverrides = 0;
        for (int trial = 0; trial < 60; ++trial) {
            Cluster c;
            c.name = "random";
            for (const std::string &d : devices)
                c.devices.push_back(*cat.find(d));
            const int groups = 1 + pick(4);
            for (int g = 0; g < groups; ++g) {
                NodeGroup ng;
                ng.name = "g" + std::to_string(g);
                ng.gpu = devices[size_t(pick(3))];
                ng.gpusPerNode = 8;
                ng.count = 1 + pick(6);
                c.groups.push_back(ng);
            }
            c.network.interNode = Link {25, 5, {}};
            const std::vector<Node> nodes = c.nodes();
            const int overrides = pick(7);
            for (int o = 0; o < overrides; ++o) {
                const auto name = [&] {
                    const int kind = pick(2);
                    if (kind == 0)
                        return c.groups[size_t(pick(groups))].name;
                    return nodes[size_t(pick(int(nodes.size())))].name;
                };
                c.network.overrides.push_back({name(), name(), Link {double(1 + pick(50)), double(pick(20)), {}}});
            }
            withOverrides += !c.network.overrides.empty();
            const LinkTable table(c, nodes, CostOptions {});
            for (int q = 0; q < 40; ++q) {
                std::vector<int> a, b;
                for (int k = 1 + pick(int(nodes.size()) + 2); k > 0; --k)
                    a.push_back(pick(int(nodes.size())));
                for (int k = 1 + pick(int(nodes.size()) + 2); k > 0; --k)
                    b.push_back(pick(int(nodes.size())));
                QVERIFY(sameSet(table.linksAmong(a), among(a, nodes, c)));
                QVERIFY(sameSet(table.linksBetween(a, b), between(a, b, nodes, c)));
                QVERIFY(sameSet(linksAmong(a, nodes, c, CostOptions {}), among(a, nodes, c)));
                for (int x : a)
                    for (int y : b)
                        if (x != y)
                            QCOMPARE(table.link(x, y), nodeLink(nodes[size_t(x)], nodes[size_t(y)], c, CostOptions {}));
                ++checks;
            }
        }
        QVERIFY(checks == 2400 && withOverrides > 40);
    }

    void invalidPlanIsRejected()
    {
        const Cluster c = syntheticCluster();
        const Model m = megatronModel();
        Plan p = simplePlan("n", {16, 15}, 1, 1, 1, 8); // 31 of 32 layers
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, estimatePlan(p, c, m, nullptr, CostOptions {}));
    }

    /// Issue 17 item 5: Megatron's DP overlap, worked by hand on exposedDpSyncMs. Stage 0 holds
    /// 120M parameters at DP 8: buckets of max(40M, 8M) -> 3. Reduce 30 ms over a 30 ms backward:
    /// bucket k is ready at 10k ms and takes 10 ms -> ends at 40, 10 ms past the backward
    /// = max(30/3, 30 - 30 x 2/3). Reduce 60 ms: comm-bound, 10 + 3 x 20 - 30 = 40 = 60 - 20.
    /// Stage 1 (one bucket) starts at its own last backward's end, drain = backward 30 + send 2
    /// ahead of stage 0's: 50 - 32 = 18 exposed. Gather 9 ms (distributed optimizer) over stage 0's
    /// 12 ms forward: max(3, 9 - 8) = 3; stage 1's over the fill 12 + 2: 0. (Contention 0 here
    /// unless given: CostOptions::overlapContention charges part of the hidden time back.)
    void dataParallelOverlapByHand()
    {
        DpOverlapStage st[2];
        st[0].comm = {30.0, 9.0};
        st[0].params = 120e6;
        st[0].dp = 8;
        st[0].forwardMs = 12;
        st[0].backwardMs = 30;
        st[0].p2pMs = 2;
        st[1].comm = {50.0, 9.0};
        st[1].params = 120e6;
        st[1].dp = 8;
        st[1].forwardMs = 12;
        st[1].backwardMs = 30;
        double exposed[2];
        QCOMPARE(dpBucketParams(8), 40e6);
        QCOMPARE(dpBucketParams(64), 64e6);
        // Off: everything exposed.
        QNEAR(exposedDpSyncMs(st, 2, false, false, exposed), 59.0);
        QNEAR(exposed[0], 39.0);
        // Gradient overlap only.
        QNEAR(exposedDpSyncMs(st, 2, true, false, exposed), 27.0);
        QNEAR(exposed[0], 10.0 + 9.0);
        QNEAR(exposed[1], 18.0 + 9.0);
        // Both.
        QNEAR(exposedDpSyncMs(st, 2, true, true, exposed), 18.0);
        QNEAR(exposed[0], 10.0 + 3.0);
        QNEAR(exposed[1], 18.0);
        // Contention 0.25: a quarter of every hidden millisecond comes back. Stage 0 hides 20 of
        // its reduce and 6 of its gather: 13 + 6.5; stage 1 hides 32 + 9: 18 + 10.25.
        QNEAR(exposedDpSyncMs(st, 2, true, true, exposed, 0.25), 28.25);
        QNEAR(exposed[0], 19.5);
        st[0].comm.reduceMs = 60;
        exposedDpSyncMs(st, 2, true, true, exposed);
        QNEAR(exposed[0], 40.0 + 3.0);
        // One bucket (40M parameters) cannot overlap on stage 0: max(C, C - 0) = C.
        st[0].params = 40e6;
        exposedDpSyncMs(st, 2, true, false, exposed);
        QNEAR(exposed[0], 60.0 + 9.0);

        // estimatePlan on 8 x H100 (llama2-7b, PP 2 x DP 4, distributed optimizer): overlap only
        // removes time, stage 0 keeps at least one bucket of its reduce-scatter exposed, and the
        // pipeline and memory are untouched.
        const Cluster c = loadCluster(kSamples + "/h100-8x.json");
        const Model m = resolveModel("llama2-7b");
        Plan plain = simplePlan("dgx-h100", {16, 16}, 1, 4, 1, 64);
        plain.distributedOptimizer = true;
        Plan ov = plain;
        ov.overlapGradReduce = ov.overlapParamGather = true;
        Diagnostics d;
        validatePlan(ov, c, m, d);
        QVERIFY2(d.empty(), d.empty() ? "" : d.items().front().toString().c_str());
        const PlanEstimate a = estimatePlan(plain, c, m, nullptr, {});
        const PlanEstimate b = estimatePlan(ov, c, m, nullptr, {});
        QVERIFY(a.dpSyncMs > 0);
        QVERIFY2(b.dpSyncMs < a.dpSyncMs, std::to_string(b.dpSyncMs).c_str());
        QNEAR(b.pipelineMs, a.pipelineMs);
        QNEAR(b.peakBytes, a.peakBytes);
        QNEAR(b.iterationTimeMs - b.dpSyncMs, a.iterationTimeMs - a.dpSyncMs);
        // Invalid: the parameter gather without the distributed optimizer.
        Plan bad = ov;
        bad.distributedOptimizer = false;
        Diagnostics db;
        validatePlan(bad, c, m, db);
        QVERIFY(!db.empty());
        QCOMPARE(db.items().front().pointer, std::string("/overlapParamGather"));
        Plan bad2 = ov;
        bad2.overlapGradReduce = false; // Megatron-LM: --overlap-param-gather needs --overlap-grad-reduce
        Diagnostics db2;
        validatePlan(bad2, c, m, db2);
        QVERIFY(!db2.empty());
        QCOMPARE(db2.items().front().pointer, std::string("/overlapParamGather"));
    }

    /// Issue 17 item 5: Megatron-FSDP. Memory by hand from the same plan with the distributed
    /// optimizer (P parameters per GPU: 2P weights, 4P gradients, 12P / d optimizer at d = 2):
    /// optim_grads keeps 2P weights, 4P / d + two units' fp32 gradients (the largest unit is the
    /// embedding, V h / t = 51,200 x 4096 / 2 = 104,857,600 parameters), 12P / d; optim_grads_params
    /// also 2P / d weights + two gathered units (2 x 2 bytes each). Time: the exposed part of the
    /// per-micro-batch collectives worked by hand, and estimatePlan adding it to every step.
    void mixtureOfExpertsByHand()
    {
        // Mixtral 8x7B (arXiv 2401.04088: 47B parameters, 13B active). Per layer: attention
        // 4096 x 128 x (2 x 32 + 2 x 8) = 41,943,040; 8 experts x 3 x 4096 x 14336 = 1,409,286,144;
        // router 4096 x 8 = 32,768; two RMSNorms 8,192. Embedding and output layer 4096 x 32000 each.
        const Model mx = resolveModel("mixtral-8x7b");
        QVERIFY(mx.shape.isMoe());
        QCOMPARE(mx.expertParamsPerLayer(), 1409286144LL);
        QCOMPARE(mx.paramsPerLayer(), 1451270144LL);
        QCOMPARE(mx.totalParams(), 46702792704LL);
        // Active: the layer less 6 of its 8 experts (6 x 176,160,768).
        QCOMPARE(mx.activeParamsPerLayer(), 1451270144LL - 6 * 176160768LL);
        QCOMPARE(mx.activeParams(), 12879925248LL);

        // Memory kernel at TP 2, EP 4, expert TP 1: the dense part over TP, router and norms whole,
        // 2 experts per rank.
        Cluster c = syntheticCluster();
        const CostOptions o;
        const GpuSpec &dev = c.devices.front();
        const MemoryKernel mk = makeMemoryKernel(mx, dev, 2, 1, true, 2, nullptr, o, 1, false, ExpertLayout {4, 1});
        QNEAR(mk.layerExpertParams, 1409286144.0 / 4);
        QNEAR(mk.layerParams, 41943040.0 / 2 + 8192 + 32768 + 1409286144.0 / 4);
        // The distributed optimizer shards the dense state over dp 4 and the experts' over 2.
        const MemoryBreakdown b = gpuMemory(mk, 1, false, false, {}, 1, 4, DpSharding::Optimizer, 0, 2);
        const double dense = mk.layerParams - mk.layerExpertParams;
        QNEAR(b.optimizer, 12.0 * (dense / 4 + mk.layerExpertParams / 2));
        QNEAR(b.params, 2.0 * mk.layerParams);
        QNEAR(b.grads, 4.0 * mk.layerParams);

        // All-to-all of one layer (forward): b 1 x s 4096 x topK 2 x h 4096 x 2 B = 67,108,864 B
        // per rank, 7/8 to its peers over 100 GB/s: 0.587 ms, dispatch + combine 1.174 ms. With half
        // the group on another node over a 10 GB/s NIC shared by 8 ranks: 4/8 x 8 x 67.1 MB / 10 GB/s
        // = 26.84 ms, x 2.
        const Link fast {100, 0, {}}, slow {10, 0, {}};
        QNEAR(moeAllToAllMs(mx, 1, 1, 1, false, 8, 8, fast, fast, 1), 2.0 * 67108864.0 * 7 / 8 / 100e9 * 1e3);
        QNEAR(moeAllToAllMs(mx, 1, 1, 1, false, 8, 4, fast, slow, 8), 2.0 * 67108864.0 * 4 / 8 * 8 / 10e9 * 1e3);
        QNEAR(moeAllToAllMs(mx, 2, 1, 1, true, 1, 1, fast, slow, 8), 0.0); // no expert parallelism

        // A plan: one stage of 8 GPUs, TP 1 x DP 8, EP 8. Its step carries 2 x 32 all-to-alls of
        // 1.174 ms (forward, backward) - every group inside the node.
        Model small = mx;
        small.shape.layers = 2;
        Plan plan = simplePlan("n", {2}, 1, 8, 1, 64);
        plan.expertParallel = 8;
        plan.distributedOptimizer = true;
        Diagnostics dv;
        validatePlan(plan, c, small, dv);
        QVERIFY2(dv.empty(), text(dv).c_str());
        const PlanEstimate e8 = estimatePlan(plan, c, small, nullptr, o);
        QNEAR(e8.stages.front().moeCommMs, 2.0 * 2 * 2.0 * 67108864.0 * 7 / 8 / 100e9 * 1e3);
        Plan noEp = plan;
        noEp.expertParallel = 1;
        const PlanEstimate e1 = estimatePlan(noEp, c, small, nullptr, o);
        QNEAR(e1.stages.front().moeCommMs, 0.0);
        // EP 8 holds 1/8 of the experts' weights and gradients: 7/8 x 2 layers x 1.41e9 x 6 B less.
        QNEAR(e1.gpus.front().paramsBytes + e1.gpus.front().gradsBytes - e8.gpus.front().paramsBytes
                  - e8.gpus.front().gradsBytes,
              6.0 * 2 * 1409286144.0 * 7 / 8);

        // Refusals: EP not dividing the experts, EP on a dense model, TP without SP, FSDP.
        Plan bad = plan;
        bad.expertParallel = 3;
        Diagnostics d1;
        validatePlan(bad, c, small, d1);
        QVERIFY2(text(d1).find("/expertParallel") != std::string::npos, text(d1).c_str());
        Diagnostics d2;
        validatePlan(plan, c, megatronModel(), d2);
        QVERIFY2(text(d2).find("has no experts") != std::string::npos, text(d2).c_str());
        Plan tp2 = simplePlan("n", {2}, 2, 4, 1, 64);
        tp2.expertParallel = 4;
        Diagnostics d3;
        validatePlan(tp2, c, small, d3);
        QVERIFY2(text(d3).find("/sequenceParallel") != std::string::npos, text(d3).c_str());
        tp2.sequenceParallel = true;
        Diagnostics d4;
        validatePlan(tp2, c, small, d4);
        QVERIFY2(d4.empty(), text(d4).c_str());
        setDpSharding(tp2, DpSharding::Gradients);
        Diagnostics d5;
        validatePlan(tp2, c, small, d5);
        QVERIFY2(text(d5).find("/fsdp") != std::string::npos, text(d5).c_str());
    }

    void fsdpByHand()
    {
        // fsdpMicroBatchComm: reduce-scatter 10 ms, all-gather 5 ms, forward 20, backward 40,
        // 10 units, contention 0.25. Gradients: max(10/10, 10 - 40 x 9/10) = 1 exposed, + 0.25 x 9
        // hidden = 3.25; the all-gather of the updated weights stays per iteration.
        FsdpComm g = fsdpMicroBatchComm(DpSharding::Gradients, {10.0, 5.0}, 20, 40, 10, 0.25);
        QNEAR(g.microBatchMs, 3.25);
        QNEAR(g.iteration.reduceMs, 0.0);
        QNEAR(g.iteration.gatherMs, 5.0);
        // Parameters: forward max(0.5, 5 - 18) = 0.5, backward (gather + reduce 15) max(1.5, 15 - 36)
        // = 1.5, + 0.25 x (4.5 + 13.5) = 6.5; nothing per iteration.
        const FsdpComm pa = fsdpMicroBatchComm(DpSharding::Parameters, {10.0, 5.0}, 20, 40, 10, 0.25);
        QNEAR(pa.microBatchMs, 6.5);
        QNEAR(pa.iteration.total(), 0.0);
        // A slow link: reduce-scatter 100 ms over a 40 ms backward: max(10, 100 - 36) = 64, + 0.25 x 36.
        g = fsdpMicroBatchComm(DpSharding::Gradients, {100.0, 50.0}, 20, 40, 10, 0.25);
        QNEAR(g.microBatchMs, 73.0);
        // The distributed optimizer leaves everything per iteration.
        const FsdpComm o1 = fsdpMicroBatchComm(DpSharding::Optimizer, {10.0, 5.0}, 20, 40, 10, 0.25);
        QNEAR(o1.microBatchMs, 0.0);
        QNEAR(o1.iteration.total(), 15.0);

        Cluster c = syntheticCluster();
        c.groups[0].gpusPerNode = 8;
        const Model m = megatronModel();
        const CostOptions o;
        Plan dist = simplePlan("n", {32}, 2, 2, 1, 64);
        dist.distributedOptimizer = true;
        const PlanEstimate ed = estimatePlan(dist, c, m, nullptr, o);
        const double P = ed.gpus.front().paramsBytes / 2.0, unit = 104857600.0;
        QNEAR(ed.gpus.front().gradsBytes, 4.0 * P);
        QNEAR(ed.gpus.front().optimizerBytes, 6.0 * P);
        Plan grads = dist;
        setDpSharding(grads, DpSharding::Gradients);
        QCOMPARE(dpShardingOf(grads), DpSharding::Gradients);
        Diagnostics dg;
        validatePlan(grads, c, m, dg);
        QVERIFY2(dg.empty(), text(dg).c_str());
        const PlanEstimate eg = estimatePlan(grads, c, m, nullptr, o);
        QNEAR(eg.gpus.front().paramsBytes, 2.0 * P);
        QNEAR(eg.gpus.front().gradsBytes, 2.0 * P + 8.0 * unit);
        QNEAR(eg.gpus.front().optimizerBytes, 6.0 * P);
        Plan params = dist;
        setDpSharding(params, DpSharding::Parameters);
        const PlanEstimate ep = estimatePlan(params, c, m, nullptr, o);
        QNEAR(ep.gpus.front().paramsBytes, P + 4.0 * unit);
        QNEAR(ep.gpus.front().gradsBytes, 2.0 * P + 8.0 * unit);
        QVERIFY(ep.gpus.front().totalBytes < eg.gpus.front().totalBytes);
        QVERIFY(eg.gpus.front().totalBytes < ed.gpus.front().totalBytes);
        // Time: one stage, so the pipeline is m steps; FSDP's exposed traffic joins every step.
        for (const PlanEstimate *e : {&eg, &ep}) {
            const StageEstimate &s = e->stages.front();
            QVERIFY(s.fsdpCommMs > 0);
            QNEAR(s.stepMs - s.fsdpCommMs, ed.stages.front().stepMs);
            QNEAR(e->pipelineMs, e->microBatches * s.stepMs);
        }
        QNEAR(ep.dpSyncMs, 0.0);
        QVERIFY(eg.dpSyncMs > 0 && eg.dpSyncMs < ed.dpSyncMs); // the all-gather only

        // Refusals: a pipeline, FSDP without the distributed optimizer, "optim" as FSDP.
        Plan piped = simplePlan("n", {16, 16}, 2, 2, 1, 64);
        setDpSharding(piped, DpSharding::Parameters);
        Diagnostics d1;
        validatePlan(piped, c, m, d1);
        QVERIFY2(text(d1).find("/fsdp") != std::string::npos, text(d1).c_str());
        Plan noDist = grads;
        noDist.distributedOptimizer = false;
        Diagnostics d2;
        validatePlan(noDist, c, m, d2);
        QVERIFY2(text(d2).find("/distributedOptimizer") != std::string::npos, text(d2).c_str());
        Plan optim = dist;
        optim.fsdp = DpSharding::Optimizer;
        Diagnostics d3;
        validatePlan(optim, c, m, d3);
        QVERIFY2(text(d3).find("distributed optimizer") != std::string::npos, text(d3).c_str());
    }

    void fp8ByHand()
    {
        // Time, tiny model (T = 1024 tokens, h 1024, f 4096, 16 heads, TP 1) on a synthetic GPU
        // with 100 TFLOP/s BF16, 200 FP8, efficiency 0.5, one compute unit (no wave loss) and every
        // dimension a multiple of the 128 tile: a GEMM (m, n, k) takes 2mnk (k + 96) / k / (peak x
        // eff). FP8 runs the four linear GEMMs at 200 x 0.5 x 0.85 and adds the casts: forward the
        // inputs T (h + q + h + f) = 7,340,032 elements, backward the output gradients
        // T ((q + 2kv) + h + f + h) = 9,437,184, at 4 bytes each over 1000 GB/s x 0.7; the host does
        // 4 more ops per pass (40 us each).
        Cluster c = syntheticCluster();
        GpuSpec &g = c.devices[0];
        g.denseFp8Tflops = 200;
        g.computeUnits = 1;
        const Model m = tinyModel();
        const CostOptions o;
        const ComputeParams p = computeParams(g, m, o);
        QNEAR(p.fp8PeakFlops, 200e12);
        QNEAR(p.fp8GemmEfficiency, 0.5 * 0.85);
        const LayerSeconds bf = transformerLayerSeconds(p, m, 1, 1, false, AttentionBackend::Flash, o);
        const LayerSeconds f8 = transformerLayerSeconds(p, m, 1, 1, false, AttentionBackend::Flash, o, 1, true);
        const double T = 1024;
        auto work = [](double mm, double n, double k) { return 2.0 * mm * n * k * (k + 96.0) / k; };
        const double fwdWork = work(T, 3072, 1024) + work(T, 1024, 1024) + work(T, 4096, 1024) + work(T, 1024, 4096);
        const double bwdWork = work(T, 1024, 3072) + work(1024, 3072, T) + work(T, 1024, 1024) + work(1024, 1024, T)
            + work(T, 1024, 4096) + work(1024, 4096, T) + work(T, 4096, 1024) + work(4096, 1024, T);
        const double bf16Rate = 100e12 * 0.5, fp8Rate = 200e12 * 0.5 * 0.85, castBw = 1000e9 * 0.7;
        QNEAR(bf.gpu.forward - f8.gpu.forward, fwdWork / bf16Rate - fwdWork / fp8Rate - 7340032.0 * 4 / castBw);
        QNEAR(bf.gpu.backward - f8.gpu.backward, bwdWork / bf16Rate - bwdWork / fp8Rate - 9437184.0 * 4 / castBw);
        QNEAR(f8.host.forward - bf.host.forward, 4 * 40e-6);
        QNEAR(f8.host.backward - bf.host.backward, 4 * 40e-6);
        // A device without FP8 ignores the flag (validatePlan refuses such plans).
        GpuSpec none = g;
        none.denseFp8Tflops.reset();
        const ComputeParams pn = computeParams(none, m, o);
        QNEAR(transformerLayerSeconds(pn, m, 1, 1, false, AttentionBackend::Flash, o, 1, true).gpu.forward,
              bf.gpu.forward);

        // Memory, GPT-6.7B-like at s 2048, b 1, t 8 (attentionTermsKorthikanti's 13 sbh with flash,
        // 23 sbh unfused): the two norm outputs (2 bytes each of the replicated 10 sbh) drop to 1
        // byte, -2 sbh; the FC2 input (f / t = 0.5 h elements per token, 1 sbh at 2 bytes) halves,
        // -0.5 sbh; the projection input's FP8 copy (q / t = 0.125 h elements) is +0.125 sbh with
        // flash (whose own output stays 16-bit) and -0.125 unfused (its 16-bit copy goes).
        // Flash: 13 - 2 - 0.5 + 0.125 = 10.625 sbh; unfused: 23 - 2 - 0.5 - 0.125 = 20.375 sbh;
        // flash + SP (replicated terms / t): 4.25 - 0.25 - 0.5 + 0.125 = 3.625 sbh.
        // Weight copies: 2 bytes x 12 h^2 / 8 = 50,331,648 per layer.
        Model gm = megatronModel();
        GpuSpec dev = syntheticCluster().devices[0];
        dev.denseFp8Tflops = 200;
        const double sbh = 2048.0 * 4096;
        struct Case {
            AttentionBackend a;
            bool sp;
            double none;
        };
        for (const Case &k : {Case {AttentionBackend::Flash, false, 10.625 * sbh},
                              Case {AttentionBackend::Unfused, false, 20.375 * sbh},
                              Case {AttentionBackend::Flash, true, 3.625 * sbh}}) {
            gm.training.attention = k.a;
            const MemoryKernel mk = makeMemoryKernel(gm, dev, 8, 1, k.sp, 1, nullptr, o, 1, true);
            QNEAR(mk.layerActivationBytes[0], k.none);
            QNEAR(mk.layerActivationBytes[2], 2.0 * sbh / (k.sp ? 8 : 1)); // full recompute: the input only
            QNEAR(mk.fp8WeightBytesPerLayer, 50331648.0);
            const MemoryKernel plain = makeMemoryKernel(gm, dev, 8, 1, k.sp, 1, nullptr, o);
            QCOMPARE(plain.fp8WeightBytesPerLayer, 0.0);
            const MemoryBreakdown a = gpuMemory(plain, 4, false, false, {}, 1, 1, DpSharding::None, 0);
            const MemoryBreakdown b = gpuMemory(mk, 4, false, false, {}, 1, 1, DpSharding::None, 0);
            QNEAR(b.params - a.params, 4 * 50331648.0);
            QNEAR(b.grads, a.grads);
        }

        // End to end on 8 x H100 (llama2-7b, TP 2 x PP 2 x DP 2): FP8 is faster, holds the weight
        // copies, and the same plan on A100s is refused at /fp8; a TP whose shards FP8 cannot run
        // is refused at the replica.
        const Cluster h = loadCluster(kSamples + "/h100-8x.json");
        const Model llama = resolveModel("llama2-7b");
        Plan plan = simplePlan("dgx-h100", {16, 16}, 2, 2, 1, 64);
        plan.sequenceParallel = true;
        Plan fp8 = plan;
        fp8.fp8 = Fp8Format::Hybrid;
        Diagnostics d;
        validatePlan(fp8, h, llama, d);
        QVERIFY2(d.empty(), d.empty() ? "" : d.items().front().toString().c_str());
        const PlanEstimate eb = estimatePlan(plan, h, llama, nullptr, o);
        const PlanEstimate e8 = estimatePlan(fp8, h, llama, nullptr, o);
        QVERIFY2(e8.pipelineMs < 0.9 * eb.pipelineMs,
                 (std::to_string(e8.pipelineMs) + " vs " + std::to_string(eb.pipelineMs)).c_str());
        QVERIFY(e8.gpus[0].paramsBytes > eb.gpus[0].paramsBytes);
        QVERIFY(e8.gpus[0].activationBytes < eb.gpus[0].activationBytes);
        QVERIFY(e8.optimizerMs > eb.optimizerMs); // the weights' cast once per iteration
        Cluster a100 = h;
        a100.devices[0] = *builtinCatalogue().find("a100-80gb-sxm");
        a100.groups[0].gpu = a100.devices[0].id;
        Diagnostics da;
        validatePlan(fp8, a100, llama, da);
        QVERIFY(!da.empty());
        QCOMPARE(da.items().front().pointer, std::string("/fp8"));
        QVERIFY2(da.items().front().message.find("a100-80gb-sxm") != std::string::npos,
                 da.items().front().message.c_str());
        Model odd = llama;
        odd.shape.ffnHidden = 11000; // 11000 / 2 = 5500: not a multiple of 16
        Diagnostics ds;
        validatePlan(fp8, h, odd, ds);
        QVERIFY(!ds.empty());
        QCOMPARE(ds.items().front().pointer, std::string("/stages/0/replicas/0"));
        QVERIFY(fp8ShapeProblem(odd, 2, 1, 1).find("FFN") != std::string::npos);
        QVERIFY(fp8ShapeProblem(llama, 2, 1, 1).empty());
    }
};

QTEST_GUILESS_MAIN(TestCostModel)
#include "tst_costmodel.moc"
