// memx/evaluation: AMP (Li et al., NeurIPS'22) re-implemented as a baseline planner.
#include "memx/evaluation/baseline_amp.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"

#include <QElapsedTimer>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>

using namespace memx;

static const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters/";

static bool near(double a, double b, double rel)
{
    return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)) + 1e-12;
}

#define QNEAR(a, b, rel)                                                                                               \
    QVERIFY2(near((a), (b), (rel)),                                                                                    \
             (std::string(#a " = ") + std::to_string(a) + ", expected " + std::to_string(b)).c_str())

/// `count` nodes of `gpus` x `device`, 25 GB/s between nodes.
static Cluster gridCluster(const std::string &device, int gpus, int count)
{
    const nlohmann::json j = {{"format", "memx.cluster/1"},
                              {"name", "grid"},
                              {"nodes", {{{"name", "n"}, {"gpu", device}, {"gpus", gpus}, {"count", count}}}},
                              {"network", {{"interNode", {{"bandwidthGBps", 25}, {"latencyUs", 5}}}}}};
    Diagnostics diags;
    Cluster c = parseCluster(j, builtinCatalogue(), diags);
    if (!diags.empty())
        qFatal("bad test cluster");
    return c;
}

/// A stage of `layers` layers from `first`, one replica per entry of `gpus` on `node`.
static Stage stageOf(int first, int layers, const std::string &node, const std::vector<std::vector<int>> &gpus, int mb)
{
    Stage s;
    s.firstLayer = first;
    s.layerCount = layers;
    for (const std::vector<int> &g : gpus) {
        Replica r;
        r.node = node;
        r.gpus = g;
        r.tp = static_cast<int>(g.size());
        r.microBatch = mb;
        s.replicas.push_back(r);
    }
    return s;
}

static std::string text(const Diagnostics &d)
{
    std::string t;
    for (const Diagnostic &x : d.items())
        t += x.toString() + "\n";
    return t;
}

/// Every split of `layers` layers into `pp` non-empty stages.
static void compositions(int layers, int pp, std::vector<int> &prefix, const std::function<void()> &visit)
{
    if (pp == 1) {
        prefix.push_back(layers);
        visit();
        prefix.pop_back();
        return;
    }
    for (int n = 1; n <= layers - (pp - 1); ++n) {
        prefix.push_back(n);
        compositions(layers - n, pp - 1, prefix, visit);
        prefix.pop_back();
    }
}

/// Largest stage time and largest all-reduce volume of a split (embedding first, head last).
static std::pair<double, double> splitMaxima(const std::vector<double> &ms, const std::vector<int> &counts,
                                             double layerParams, double embeddingParams)
{
    double maxT = 0, maxV = 0;
    int first = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
        double t = k == 0 ? ms.front() : 0.0;
        if (k + 1 == counts.size())
            t += ms.back();
        for (int l = first; l < first + counts[k]; ++l)
            t += ms[static_cast<size_t>(1 + l)];
        const double v = counts[k] * layerParams + (k == 0 ? embeddingParams : 0.0);
        maxT = std::max(maxT, t);
        maxV = std::max(maxV, v);
        first += counts[k];
    }
    return {maxT, maxV};
}

/// The checks every pick must pass: valid MemX plans using every GPU, predicted = ampEstimate,
/// top sorted by AMP's cost.
static void checkPick(const BaselinePick &pick, const BaselineContext &ctx)
{
    QVERIFY2(pick.hasPlan, pick.refusal.c_str());
    QVERIFY(!pick.top.empty());
    QCOMPARE(pick.top.front(), pick.plan);
    double last = 0;
    for (const Plan &p : pick.top) {
        Diagnostics diags;
        validatePlan(p, ctx.cluster(), ctx.model(), diags);
        QVERIFY2(diags.empty(), (p.name + ":\n" + text(diags)).c_str());
        QCOMPARE(p.globalBatch, ctx.globalBatch());
        QCOMPARE(p.totalGpus(), ctx.cluster().totalGpus()); // AMP always uses every GPU
        const BaselineEstimate e = ampEstimate(p, ctx);
        QVERIFY(e.ok);
        QVERIFY(e.timeMs >= last);
        last = e.timeMs;
    }
    const BaselineEstimate first = ampEstimate(pick.plan, ctx);
    QCOMPARE(pick.predicted.timeMs, first.timeMs);
    QVERIFY(pick.predicted.ok);
    QVERIFY(!pick.predicted.hasMemory);
    QVERIFY(pick.predicted.fits);
}

class TestBaselineAmp : public QObject {
    Q_OBJECT

private slots:
    void costOfTwoStagePlanByHand()
    {
        // 2 nodes x 4 A100 40GB, 25 GB/s between them; llama2-7b (h 4096, s 4096, v 32000), gbs 16.
        // Plan: stage 0 = layers 0-15 on n-0, stage 1 = layers 16-31 on n-1, each TP2 x DP2, mb 2.
        // B = 16 / (2 x 2) = 4 micro-batches.
        // Profile (layerCosts(a100, tp 2, mb 1), one device type so the weighted average is it):
        //   embedding 0.16 ms, every transformer layer 5.26331082 ms, head 3.18330163 ms.
        // e_l = mbs x 3 x t_fwd = 6 x t_fwd:
        //   E0 = 6 x (0.16 + 16 x 5.26331082)       = 6 x 84.37297312 = 506.23783872
        //   E1 = 6 x (16 x 5.26331082 + 3.18330163) = 6 x 87.39627475 = 524.37764850
        //   (B - 1) max + sum = 3 x 524.3776485 + 506.23783872 + 524.3776485 = 2603.74843272
        // cut: mbs s h 2 B / bw = 2 x 4096 x 4096 x 2 / 25e9 B/s = 67,108,864 B / 25e6 B/ms = 2.68435456
        // DP: stage 0 params = 16 x 12 h^2 / 2 + h v / 2 = 1,610,612,736 + 65,536,000 = 1,676,148,736;
        //     2 (2 - 1) / (2 x 25e6 B/ms) x 1,676,148,736 x 2 B = 134.09189888 ms (stage 1 has less)
        // cost = 2603.74843272 + 2.68435456 + 134.09189888 = 2740.52468616 ms
        const Cluster c = gridCluster("a100-40gb-sxm", 4, 2);
        const Model m = resolveModel("llama2-7b");
        const BaselineContext ctx(c, m, 16, nullptr, CostOptions {});
        const BaselineLayerCosts &t = ctx.layerCosts(0, 2, 1);
        QNEAR(t.embeddingForwardMs, 0.16, 1e-8);
        QNEAR(t.layerForwardMs[0], 5.26331082, 1e-8);
        QNEAR(t.layerForwardMs[31], 5.26331082, 1e-8);
        QNEAR(t.headForwardMs, 3.18330163, 1e-8);
        Plan p;
        p.globalBatch = 16;
        p.stages = {stageOf(0, 16, "n-0", {{0, 1}, {2, 3}}, 2), stageOf(16, 16, "n-1", {{0, 1}, {2, 3}}, 2)};
        Diagnostics diags;
        validatePlan(p, c, m, diags);
        QVERIFY2(diags.empty(), text(diags).c_str());
        const BaselineEstimate e = ampEstimate(p, ctx);
        QVERIFY2(e.ok, e.error.c_str());
        QNEAR(e.timeMs, 2740.52468616, 1e-8);
        QVERIFY(!e.hasMemory);
        QVERIFY(e.fits);

        // AMP has no recompute: full recompute costs the same.
        Plan rc = p;
        for (Stage &s : rc.stages)
            s.recompute.method = RecomputeMethod::Full;
        QCOMPARE(ampEstimate(rc, ctx).timeMs, e.timeMs);

        // Stages with their own TP: stage 1 as one TP4 replica of mb 4 (the same 4 sequences per
        // step) is costed with the TP4 profile, 4 x 3 x t_fwd(tp 4), and no DP all-reduce of its own.
        Plan mixed = p;
        mixed.stages[1] = stageOf(16, 16, "n-1", {{0, 1, 2, 3}}, 4);
        const BaselineLayerCosts &t4 = ctx.layerCosts(0, 4, 1);
        double fwd4 = t4.headForwardMs;
        for (int l = 16; l < 32; ++l)
            fwd4 += t4.layerForwardMs[static_cast<size_t>(l)];
        const double e1 = 4 * 3 * fwd4;
        const double expected = 3 * std::max(506.23783872, e1) + 506.23783872 + e1 + 2.68435456 + 134.09189888;
        QNEAR(ampEstimate(mixed, ctx).timeMs, expected, 1e-8);
    }

    void singleNodeUsesIntraNodeLink()
    {
        // h100-8x (one node): the slowest link is the node's own. One stage, TP4 x DP2, mb 1, gbs 16,
        // B = 8: cost = 7 E + E + 0 cuts + 2 (2 - 1) / (2 bw) x (32 x 12 h^2 / 4 + h v / 4) x 2 B.
        const Cluster c = loadCluster(kSamples + "h100-8x.json");
        const Model m = resolveModel("llama2-7b");
        const BaselineContext ctx(c, m, 16, nullptr, CostOptions {});
        QCOMPARE(ctx.nodes().size(), size_t(1));
        const std::string node = ctx.nodes()[0].name;
        Plan p;
        p.globalBatch = 16;
        p.stages = {stageOf(0, 32, node, {{0, 1, 2, 3}, {4, 5, 6, 7}}, 1)};
        const BaselineLayerCosts &t = ctx.layerCosts(0, 4, 1);
        double fwd = t.embeddingForwardMs + t.headForwardMs;
        for (double x : t.layerForwardMs)
            fwd += x;
        const double h = 4096, v = 32000, bw = ctx.nodes()[0].intraLink.bandwidthGBps * 1e6;
        const double expected = 8 * 3 * fwd + 2.0 * 1 / (2 * bw) * (32 * 12 * h * h / 4 + h * v / 4) * 2;
        QNEAR(ampEstimate(p, ctx).timeMs, expected, 1e-12);
    }

    void estimatesEveryFeatureMix()
    {
        // The export goldens on 8 x H100 mix CP, VPP, FSDP, FP8, MoE/EP, overlap and recompute:
        // AMP ignores what it does not model, but must cost every one of them.
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
            const BaselineEstimate e = ampEstimate(p, ctx);
            QVERIFY2(e.ok, (std::string(dir) + ": " + e.error).c_str());
            QVERIFY2(std::isfinite(e.timeMs) && e.timeMs > 0, dir);
            ++costed;
        }
        QCOMPARE(costed, 8);
        Plan empty;
        empty.globalBatch = 16;
        const BaselineContext ctx(c, resolveModel("llama2-7b"), 16, nullptr, CostOptions {});
        QVERIFY(!ampEstimate(empty, ctx).ok);
    }

    void weightedAverageOnMixedCluster()
    {
        // paper-20gpu-mixed-consumer: 8 A100 80GB + 8 MI250X + 4 RTX 4090, weights 0.4 / 0.4 / 0.2.
        // layerCosts(type, tp 4, mb 1): A100 layer 3.00917663, head 1.52202966; MI250X 5.6909838,
        // 3.01375004; RTX 4090 8.11602723, 2.90083962; embedding 0.16 on all three.
        //   layer = 0.4 x 3.00917663 + 0.4 x 5.6909838 + 0.2 x 8.11602723 = 5.103269618
        //   head  = 0.4 x 1.52202966 + 0.4 x 3.01375004 + 0.2 x 2.90083962 = 2.394479804
        const Cluster c = loadCluster(kSamples + "paper-20gpu-mixed-consumer.json");
        const Model m = resolveModel("llama2-7b");
        const BaselineContext ctx(c, m, 0, nullptr, CostOptions {});
        QCOMPARE(ctx.globalBatch(), 1024);
        const std::vector<double> w = ampLayerForwardMs(ctx, 4);
        QCOMPARE(w.size(), size_t(34));
        QNEAR(w[0], 0.16, 1e-8);
        QNEAR(w[1], 5.103269618, 1e-8);
        QNEAR(w[33], 2.394479804, 1e-8);
        const int a100 = c.deviceIndex("a100-80gb-sxm"), mi = c.deviceIndex("mi250x"), rtx = c.deviceIndex("rtx-4090");
        for (size_t l = 0; l < 32; ++l)
            QNEAR(w[1 + l],
                  0.4 * ctx.layerCosts(a100, 4, 1).layerForwardMs[l] + 0.4 * ctx.layerCosts(mi, 4, 1).layerForwardMs[l]
                      + 0.2 * ctx.layerCosts(rtx, 4, 1).layerForwardMs[l],
                  1e-12);

        // PP5 x TP4, DP1, mb 1, layers 7/7/6/6/6, B = 1024; slowest link rtx4090 <-> others 1.25 GB/s.
        //   E = 3 x (0.16 + 7 L), 3 x 7 L, 3 x 6 L, 3 x 6 L, 3 x (6 L + head)
        //     = 107.648661978, 107.168661978, 91.858853124, 91.858853124, 99.042292536
        //   1023 x 107.648661978 + 497.57732274 = 110622.158526234
        //   cuts: 4 x 4096 x 4096 x 2 B / 1.25e6 B/ms = 4 x 26.8435456 = 107.3741824; DP1: no all-reduce
        //   cost = 110729.532708634 ms
        const std::vector<std::pair<std::string, int>> blocks
            = {{"a100", 0}, {"a100", 4}, {"mi250x", 0}, {"mi250x", 4}, {"rtx4090", 0}};
        const std::vector<int> counts = {7, 7, 6, 6, 6};
        const auto planOn = [&](bool reversed) {
            Plan p;
            p.globalBatch = 1024;
            int first = 0;
            for (size_t k = 0; k < counts.size(); ++k) {
                const auto &[node, g] = blocks[reversed ? blocks.size() - 1 - k : k];
                p.stages.push_back(stageOf(first, counts[k], node, {{g, g + 1, g + 2, g + 3}}, 1));
                first += counts[k];
            }
            return p;
        };
        const Plan forward = planOn(false), backward = planOn(true);
        for (const Plan *p : {&forward, &backward}) {
            Diagnostics diags;
            validatePlan(*p, c, m, diags);
            QVERIFY2(diags.empty(), text(diags).c_str());
        }
        const BaselineEstimate e = ampEstimate(forward, ctx);
        QVERIFY2(e.ok, e.error.c_str());
        QNEAR(e.timeMs, 110729.532708634, 1e-8);
        // No per-stage device type: putting the 4090s first instead of last changes nothing.
        QCOMPARE(ampEstimate(backward, ctx).timeMs, e.timeMs);
    }

    void candidatesOfSixteenGpus()
    {
        // 4 nodes x 4 GPUs, gbs 32 (AMP's homogeneous experiment). mp x dp x pp = 16 = 2^4: 15
        // triples (exponents a + d + p = 4). mp 8 and 16 put a TP group across two nodes: mp 8
        // with (dp, pp) = (1, 2), (2, 1) and mp 16: 3 triples skipped, leaving mp <= 4 (AMP's own
        // profiles stop at mp 4 too). mbs runs over the divisors of 32 / dp = 2^(5 - d), 6 - d of them:
        //   d = 0: 3 triples (a = 0, 1, 2) x 6 = 18;   d = 1: 3 x 5 = 15;   d = 2: 3 x 4 = 12;
        //   d = 3: 2 (a = 0, 1) x 3 = 6;               d = 4: 1 x 2 = 2;    total 53 = AMP's count.
        const Cluster c = gridCluster("a100-40gb-sxm", 4, 4);
        const Model m = resolveModel("llama2-7b");
        const BaselineContext ctx(c, m, 32, nullptr, CostOptions {});
        const AmpSpace space = ampSpace(ctx);
        QCOMPARE(space.gpus, 16);
        QCOMPARE(space.triples, 15);
        QCOMPARE(space.crossNode, 3);
        QCOMPARE(space.headsMismatch + space.batchMismatch + space.tooManyStages, 0);
        QCOMPARE(space.candidates.size(), size_t(53));
        for (const AmpCandidate &x : space.candidates) {
            QCOMPARE(x.mp * x.dp * x.pp, 16);
            QVERIFY(x.mp <= 4);
            QCOMPARE((32 / x.dp) % x.mbs, 0);
        }
        const BaselinePick pick = ampPlan(ctx, 60, {});
        checkPick(pick, ctx);
        QCOMPARE(pick.configsExamined, uint64_t(53));
        QCOMPARE(pick.top.size(), size_t(53));
    }

    void partitionMatchesBruteForce()
    {
        // Irregular layer times: the split must reach the smallest largest stage time of all splits.
        // Uniform times with a heavy embedding: many splits tie, and the tie-break must take the
        // smallest largest all-reduce volume (fewer layers on the embedding's stage).
        const std::vector<std::vector<double>> cases
            = {{0.3, 1.0, 2.5, 0.7, 3.1, 1.2, 0.4, 2.2, 1.9}, {0, 1, 1, 1, 1, 1, 1, 1, 1, 0}};
        const double layerParams = 1.0, embeddingParams = 2.5;
        for (const std::vector<double> &ms : cases) {
            const int L = static_cast<int>(ms.size()) - 2;
            for (int pp = 1; pp <= L; ++pp) {
                double bestT = 1e300;
                std::vector<std::pair<double, double>> all;
                std::vector<int> prefix;
                compositions(L, pp, prefix, [&] {
                    all.push_back(splitMaxima(ms, prefix, layerParams, embeddingParams));
                    bestT = std::min(bestT, all.back().first);
                });
                double bestV = 1e300;
                for (const auto &[t, v] : all)
                    if (t <= bestT * (1 + 1e-12))
                        bestV = std::min(bestV, v);
                const std::vector<int> counts = ampPartition(ms, pp, layerParams, embeddingParams);
                QCOMPARE(static_cast<int>(counts.size()), pp);
                int sum = 0;
                for (int n : counts) {
                    QVERIFY(n >= 1);
                    sum += n;
                }
                QCOMPARE(sum, L);
                const auto [t, v] = splitMaxima(ms, counts, layerParams, embeddingParams);
                QNEAR(t, bestT, 1e-12);
                QNEAR(v, bestV, 1e-12);
            }
        }
        // 8 uniform layers over 3 stages: max 3 layers per stage; (2, 3, 3) keeps the embedding's
        // stage at 2 + 2.5 = 4.5 units instead of 3 + 2.5.
        QCOMPARE(ampPartition(cases[1], 3, layerParams, embeddingParams), (std::vector<int> {2, 3, 3}));
        QVERIFY(ampPartition(cases[1], 9, 1, 1).empty());
    }

    void plansOnTwentyGpuSamples()
    {
        // 20 GPUs: 18 (mp, dp, pp) triples (sum over mp | 20 of the divisors of 20 / mp:
        // 6 + 4 + 2 + 3 + 2 + 1). mp 5, 10, 20 cross a node (3 + 2 + 1 = 6); of the rest dp 5, 10,
        // 20 do not divide gbs 1024 (mp 1: 3, mp 2: 2, mp 4: 1). Left: mp 1 x (dp, pp) = (1, 20),
        // (2, 10), (4, 5); mp 2 x (1, 10), (2, 5); mp 4 x (1, 5), with 11 / 10 / 9 mbs for dp 1 / 2 / 4:
        // 30 + 21 + 11 = 62 candidates.
        const Model m = resolveModel("llama2-7b");
        for (const char *file : {"paper-20gpu-nvidia-amd.json", "paper-20gpu-mixed-consumer.json"}) {
            const Cluster c = loadCluster(kSamples + file);
            const BaselineContext ctx(c, m, 0, nullptr, CostOptions {});
            const AmpSpace space = ampSpace(ctx);
            QCOMPARE(space.triples, 18);
            QCOMPARE(space.crossNode, 6);
            QCOMPARE(space.batchMismatch, 6);
            QCOMPARE(space.candidates.size(), size_t(62));
            const BaselinePick pick = ampPlan(ctx, 10, {});
            checkPick(pick, ctx);
            QCOMPARE(pick.top.size(), size_t(10));
            QCOMPARE(pick.configsExamined, uint64_t(62));
            QVERIFY(!pick.notes.empty());
            // The pick's split is AMP's DP partition of the weighted layer times at its mp.
            const Plan &p = pick.plan;
            const int mp = p.stages.front().replicas.front().tp;
            std::vector<int> counts;
            for (const Stage &s : p.stages)
                counts.push_back(s.layerCount);
            const double h = m.shape.hidden;
            QCOMPARE(counts, ampPartition(ampLayerForwardMs(ctx, mp), p.pp(), 12 * h * h / mp, h * m.shape.vocab / mp));
        }
    }

    void searchSpeedOnSixtyGpus()
    {
        const Model m = resolveModel("llama2-7b");
        for (const char *file :
             {"paper-20gpu-nvidia-amd.json", "paper-60gpu-mixed-consumer.json", "paper-60gpu-nvidia-amd.json"}) {
            const Cluster c = loadCluster(kSamples + file);
            const BaselineContext ctx(c, m, 0, nullptr, CostOptions {});
            QElapsedTimer timer;
            timer.start();
            const BaselinePick pick = ampPlan(ctx, 10, {});
            const double ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
            qInfo("%s: %llu candidates in %.2f ms; pick %s, %.0f ms", file,
                  static_cast<unsigned long long>(pick.configsExamined), ms, pick.plan.summary(c).c_str(),
                  pick.predicted.timeMs);
            for (const std::string &n : pick.notes)
                qInfo("  note: %s", n.c_str());
            checkPick(pick, ctx);
            QVERIFY(ms < 5000);
        }
    }

    void cancel()
    {
        const Cluster c = loadCluster(kSamples + "paper-20gpu-nvidia-amd.json");
        const Model m = resolveModel("llama2-7b");
        const BaselineContext ctx(c, m, 0, nullptr, CostOptions {});
        size_t calls = 0, lastDone = 0, lastTotal = 0;
        const BaselinePick done = ampPlan(ctx, 5, [&](size_t d, size_t t) {
            ++calls;
            lastDone = d;
            lastTotal = t;
            return true;
        });
        QVERIFY(done.hasPlan);
        QVERIFY(calls >= 2);
        QCOMPARE(lastTotal, size_t(62));
        QCOMPARE(lastDone, lastTotal);
        const BaselinePick stopped = ampPlan(ctx, 5, [](size_t, size_t) { return false; });
        QVERIFY(stopped.cancelled);
        QVERIFY(!stopped.hasPlan);
        QVERIFY(stopped.top.empty());
    }

    void refusesWhenNoSplitFits()
    {
        // One node of 3 GPUs, a 2-layer llama2-7b (32 heads), gbs 2: no split of the 3 GPUs qualifies.
        const Cluster c = gridCluster("a100-40gb-sxm", 3, 1);
        Model m = resolveModel("llama2-7b");
        m.shape.layers = 2;
        const BaselineContext ctx(c, m, 2, nullptr, CostOptions {});
        // Triples of 3: (1, 1, 3) pp 3 > 2 layers, (1, 3, 1) dp 3 does not divide gbs 2,
        // (3, 1, 1) mp 3 does not divide 32 heads.
        const AmpSpace space = ampSpace(ctx);
        QCOMPARE(space.triples, 3);
        QCOMPARE(space.tooManyStages, 1);
        QCOMPARE(space.batchMismatch, 1);
        QCOMPARE(space.headsMismatch, 1);
        const BaselinePick pick = ampPlan(ctx, 5, {});
        QVERIFY(!pick.hasPlan);
        QVERIFY(pick.refusal.find("none of the 3") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestBaselineAmp)
#include "tst_baseline_amp.moc"
