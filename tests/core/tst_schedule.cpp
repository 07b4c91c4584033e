// The 1F1B schedule as events (memx/cost/schedule.h): makespans worked by hand, the 1F1B order,
// dependencies and no overlap per stage, the makespan against an independent longest-path
// computation and the closed form, the virtual testbed's simulateOneFOneBMs, an analytic
// estimate's schedule, refused input.
#include "memx/cost/costmodel.h"
#include "memx/cost/schedule.h"
#include "memx/io/formats.h"
#include "memx/testbed/virtualtestbed.h"

#include <QTest>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

using namespace memx;
using Kind = PipelineOp::Kind;

static const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters";

static bool near(double a, double b, double tol = 1e-9)
{
    return std::abs(a - b) <= tol * std::max(1.0, std::max(std::abs(a), std::abs(b)));
}

/// Stage i's 1F1B order written from the definition: min(p-1-i, m) warm-up forwards, then
/// forward / backward pairs, then the remaining backwards.
static std::vector<std::pair<Kind, int>> order(int p, int i, int m)
{
    std::vector<std::pair<Kind, int>> o;
    const int warm = std::min(p - 1 - i, m);
    for (int j = 0; j < warm; ++j)
        o.emplace_back(Kind::Forward, j);
    for (int j = 0; j < m - warm; ++j) {
        o.emplace_back(Kind::Forward, warm + j);
        o.emplace_back(Kind::Backward, j);
    }
    for (int j = m - warm; j < m; ++j)
        o.emplace_back(Kind::Backward, j);
    return o;
}

/// Independent makespan: earliest starts of the operation graph (stage order + cross-stage
/// dependencies with the sends) by relaxation to a fixed point, no event loop.
static double longestPathMs(const std::vector<double> &f, const std::vector<double> &b, const std::vector<double> &d,
                            int m)
{
    const int p = int(f.size());
    // start[i][kind][mb]
    std::vector<std::vector<std::vector<double>>> start(size_t(p), std::vector<std::vector<double>>(2));
    for (auto &s : start)
        for (auto &v : s)
            v.assign(size_t(m), 0.0);
    auto dur = [&](int i, Kind k) { return k == Kind::Forward ? f[size_t(i)] : b[size_t(i)]; };
    auto sendMs = [&](int i) { return d.empty() ? 0.0 : d[size_t(i)]; };
    bool changed = true;
    while (changed) {
        changed = false;
        for (int i = 0; i < p; ++i) {
            const auto o = order(p, i, m);
            for (size_t k = 0; k < o.size(); ++k) {
                const auto [kind, mb] = o[k];
                double es = 0;
                if (k > 0)
                    es = start[size_t(i)][size_t(o[k - 1].first)][size_t(o[k - 1].second)] + dur(i, o[k - 1].first);
                if (kind == Kind::Forward && i > 0)
                    es = std::max(es, start[size_t(i - 1)][0][size_t(mb)] + f[size_t(i - 1)] + sendMs(i - 1));
                if (kind == Kind::Backward && i + 1 < p)
                    es = std::max(es, start[size_t(i + 1)][1][size_t(mb)] + b[size_t(i + 1)] + sendMs(i));
                double &cur = start[size_t(i)][size_t(kind)][size_t(mb)];
                if (es > cur) {
                    cur = es;
                    changed = true;
                }
            }
        }
    }
    double end = 0;
    for (int i = 0; i < p; ++i)
        end = std::max(end, start[size_t(i)][1][size_t(m - 1)] + b[size_t(i)]);
    return end;
}

/// Checks every structural property of `s` for stage times f, b and sends d.
static void checkStructure(const PipelineSchedule &s, const std::vector<double> &f, const std::vector<double> &b,
                           const std::vector<double> &d, int m)
{
    const int p = int(f.size());
    QCOMPARE(s.stages, p);
    QCOMPARE(s.microBatches, m);
    QCOMPARE(s.ops.size(), size_t(2 * p * m));
    double latest = 0;
    for (int i = 0; i < p; ++i) {
        const auto o = order(p, i, m);
        std::vector<int> fwdSeen(size_t(m), 0), bwdSeen(size_t(m), 0);
        for (size_t k = 0; k < o.size(); ++k) {
            const int idx = i * 2 * m + int(k);
            const PipelineOp &op = s.ops[size_t(idx)];
            QCOMPARE(op.stage, i);
            QCOMPARE(op.kind, o[k].first);
            QCOMPARE(op.microBatch, o[k].second);
            QCOMPARE(s.opIndex(i, op.microBatch, op.kind), idx);
            ++(op.kind == Kind::Forward ? fwdSeen : bwdSeen)[size_t(op.microBatch)];
            QVERIFY(near(op.durationMs(), op.kind == Kind::Forward ? f[size_t(i)] : b[size_t(i)]));
            // Per stage: no overlap, in order.
            if (k > 0)
                QVERIFY(op.startMs >= s.ops[size_t(idx - 1)].endMs);
            // Dependencies: forward after the previous stage's forward + send; backward after the
            // next stage's backward + send.
            const double send = d.empty()
                ? 0.0
                : (op.kind == Kind::Forward ? (i > 0 ? d[size_t(i - 1)] : 0.0) : (i + 1 < p ? d[size_t(i)] : 0.0));
            if (op.kind == Kind::Forward && i > 0)
                QVERIFY(op.startMs
                        >= s.ops[size_t(s.opIndex(i - 1, op.microBatch, Kind::Forward))].endMs + send - 1e-9);
            if (op.kind == Kind::Backward && i + 1 < p)
                QVERIFY(op.startMs
                        >= s.ops[size_t(s.opIndex(i + 1, op.microBatch, Kind::Backward))].endMs + send - 1e-9);
            // Backward of a micro-batch after its own forward on the stage.
            if (op.kind == Kind::Backward)
                QVERIFY(op.startMs >= s.ops[size_t(s.opIndex(i, op.microBatch, Kind::Forward))].endMs);
            latest = std::max(latest, op.endMs);
        }
        for (int j = 0; j < m; ++j) {
            QCOMPARE(fwdSeen[size_t(j)], 1);
            QCOMPARE(bwdSeen[size_t(j)], 1);
        }
        QVERIFY(near(s.idleMs(i), s.makespanMs - m * (f[size_t(i)] + b[size_t(i)])));
    }
    QCOMPARE(s.makespanMs, latest);
}

/// The 4-stage plan of gpt3-1.3b on the 8-GPU H100 node: `pp` equal stages of TP `tp`.
static Plan nodePlan(const Model &model, int pp, int tp, int mbs, RecomputeMethod rc = RecomputeMethod::None)
{
    Plan plan;
    plan.globalBatch = model.training.globalBatch;
    int gpu = 0, layer = 0;
    for (int s = 0; s < pp; ++s) {
        Stage st;
        st.firstLayer = layer;
        st.layerCount = model.shape.layers / pp + (s < model.shape.layers % pp ? 1 : 0);
        layer += st.layerCount;
        st.recompute.method = rc;
        Replica r;
        r.node = "dgx-h100";
        r.tp = tp;
        r.microBatch = mbs;
        for (int t = 0; t < tp; ++t)
            r.gpus.push_back(gpu++);
        st.replicas.push_back(r);
        plan.stages.push_back(st);
    }
    return plan;
}

class TestSchedule : public QObject {
    Q_OBJECT

private slots:
    void uniformStagesWithoutSends()
    {
        // (m + p - 1)(F + B), also for m < p and m = 1.
        for (auto [p, m] : {std::pair {4, 8}, {3, 2}, {5, 1}, {1, 6}, {8, 3}}) {
            const std::vector<double> f(size_t(p), 1.0), b(size_t(p), 2.0);
            const PipelineSchedule s = oneFOneBSchedule(f, b, {}, m);
            QCOMPARE(s.makespanMs, (m + p - 1) * 3.0);
            checkStructure(s, f, b, {}, m);
            // Bubble: each stage idles (p - 1)(F + B).
            QVERIFY(near(s.bubbleFraction(), (p - 1) / double(m + p - 1)));
            QCOMPARE(s.p2pMs, std::vector<double>(size_t(p - 1), 0.0));
        }
    }

    void twoStagesWithSendsByHand()
    {
        // F = {1, 2}, B = {2, 3}, send 0.5, m = 2. Stage 0 runs F0 F1 B0 B1, stage 1 F0 B0 F1 B1:
        // S0 F0 0-1, F1 1-2; S1 F0 1.5-3.5, B0 3.5-6.5, F1 6.5-8.5 (arrived 2.5), B1 8.5-11.5;
        // S0 B0 7-9 (6.5 + 0.5), B1 12-14 (11.5 + 0.5). Makespan 14.
        const PipelineSchedule s = oneFOneBSchedule({1, 2}, {2, 3}, {0.5}, 2);
        const double expected[2][4][2]
            = {{{0, 1}, {1, 2}, {7, 9}, {12, 14}}, {{1.5, 3.5}, {3.5, 6.5}, {6.5, 8.5}, {8.5, 11.5}}};
        for (int i = 0; i < 2; ++i) {
            for (int k = 0; k < 4; ++k) {
                QCOMPARE(s.ops[size_t(i * 4 + k)].startMs, expected[i][k][0]);
                QCOMPARE(s.ops[size_t(i * 4 + k)].endMs, expected[i][k][1]);
            }
        }
        QCOMPARE(s.makespanMs, 14.0);
        QCOMPARE(s.busyMs(0), 6.0);
        QCOMPARE(s.idleMs(0), 8.0);
        QCOMPARE(s.idleMs(1), 4.0);
        QVERIFY(near(s.bubbleFraction(), 12.0 / 28.0));
        checkStructure(s, {1, 2}, {2, 3}, {0.5}, 2);
        // Three stages, one micro-batch: 1+2+3 + 0.5+0.5 forward, 6+4+2 + 0.5+0.5 backward.
        QCOMPARE(oneFOneBSchedule({1, 2, 3}, {2, 4, 6}, {0.5, 0.5}, 1).makespanMs, 20.0);
    }

    void randomAgainstIndependentChecks()
    {
        std::mt19937 rng(20);
        std::uniform_real_distribution<double> t(0.1, 5.0), send(0.0, 1.5);
        for (int trial = 0; trial < 200; ++trial) {
            const int p = 1 + int(rng() % 6), m = 1 + int(rng() % 10);
            std::vector<double> f(static_cast<size_t>(p)), b(static_cast<size_t>(p)), d(static_cast<size_t>(p - 1));
            for (int i = 0; i < p; ++i) {
                f[size_t(i)] = t(rng);
                b[size_t(i)] = t(rng);
            }
            for (double &x : d)
                x = trial % 4 == 0 ? 0.0 : send(rng);
            const PipelineSchedule s = oneFOneBSchedule(f, b, d, m);
            checkStructure(s, f, b, d, m);
            QVERIFY2(near(s.makespanMs, longestPathMs(f, b, d, m)), qPrintable(QString::number(trial)));
            QCOMPARE(simulateOneFOneBMs(f, b, d, m), s.makespanMs);
            // Critical path: every operation starts at time 0, at its predecessor's end, or at
            // its input's arrival (nothing waits longer than it must).
            for (size_t k = 0; k < s.ops.size(); ++k) {
                const PipelineOp &op = s.ops[k];
                bool tight = op.startMs == 0 || (k % size_t(2 * m) > 0 && op.startMs == s.ops[k - 1].endMs);
                if (op.kind == Kind::Forward && op.stage > 0)
                    tight = tight
                        || near(op.startMs,
                                s.ops[size_t(s.opIndex(op.stage - 1, op.microBatch, Kind::Forward))].endMs
                                    + d[size_t(op.stage - 1)]);
                if (op.kind == Kind::Backward && op.stage + 1 < p)
                    tight = tight
                        || near(op.startMs,
                                s.ops[size_t(s.opIndex(op.stage + 1, op.microBatch, Kind::Backward))].endMs
                                    + d[size_t(op.stage)]);
                QVERIFY(tight);
            }
        }
    }

    void closedFormsWithSends()
    {
        // One micro-batch: a forward sweep and a backward sweep, each send crossed twice.
        std::mt19937 rng(5);
        std::uniform_real_distribution<double> t(0.1, 4.0);
        for (int p = 1; p <= 7; ++p) {
            std::vector<double> f(static_cast<size_t>(p)), b(static_cast<size_t>(p)), d(static_cast<size_t>(p - 1));
            double sum = 0;
            for (int i = 0; i < p; ++i)
                sum += (f[size_t(i)] = t(rng)) + (b[size_t(i)] = t(rng));
            for (double &x : d)
                sum += 2 * (x = t(rng));
            QVERIFY(near(oneFOneBSchedule(f, b, d, 1).makespanMs, sum));
        }
        // Equal stages: the sends lengthen the fill and drain, (m + p - 1)(F + B) + 2 (p - 1) d, and
        // at most the steady state too; never beyond the analytic formula with blocking sends.
        for (auto [p, m] : {std::pair {4, 8}, {6, 16}, {2, 3}, {3, 2}}) {
            const std::vector<double> f(size_t(p), 1.0), b(size_t(p), 2.0), d(size_t(p - 1), 0.25);
            const std::vector<double> steps(size_t(p), 3.0);
            const double s = oneFOneBSchedule(f, b, d, m).makespanMs;
            QVERIFY(s >= (m + p - 1) * 3.0 + 2 * (p - 1) * 0.25 - 1e-9);
            QVERIFY(s <= pipelineMakespanMs(p, m, steps.data(), d.data(), 1.0) + 1e-9);
        }
    }

    void noiseScalesOperationsInEventOrder()
    {
        // One stage runs F0 B0 F1 B1 ...: the n-th operation takes opNoise[n % size] of its time.
        const PipelineSchedule s = oneFOneBSchedule({1}, {2}, {}, 3, {1.0, 0.5});
        QCOMPARE(s.ops[0].durationMs(), 1.0);
        QCOMPARE(s.ops[1].durationMs(), 1.0);
        QCOMPARE(s.ops[2].durationMs(), 1.0);
        QCOMPARE(s.makespanMs, 1 + 1 + 1 + 1 + 1 + 1.0);
        // Noise 1 everywhere is the noise-free schedule.
        QCOMPARE(oneFOneBSchedule({1, 2, 3}, {2, 4, 6}, {0.5, 0.5}, 4, {1.0}).makespanMs,
                 oneFOneBSchedule({1, 2, 3}, {2, 4, 6}, {0.5, 0.5}, 4).makespanMs);
    }

    void estimateSchedule()
    {
        const Cluster c = loadCluster(kSamples + "/h100-8x.json");
        const Model model = resolveModel("gpt3-1.3b");
        const PlanEstimate e = estimatePlan(nodePlan(model, 4, 2, 2), c, model, nullptr, CostOptions {});
        const PipelineSchedule s = oneFOneBSchedule(e);
        QCOMPARE(s.stages, 4);
        QCOMPARE(s.microBatches, e.microBatches);
        QVERIFY(e.microBatches > 4);
        for (int i = 0; i < 4; ++i) {
            const StageEstimate &se = e.stages[size_t(i)];
            const PipelineOp &fw = s.ops[size_t(s.opIndex(i, 0, Kind::Forward))];
            const PipelineOp &bw = s.ops[size_t(s.opIndex(i, 0, Kind::Backward))];
            QVERIFY(near(fw.durationMs() + bw.durationMs(), se.stepMs));
            QVERIFY(fw.durationMs() >= se.forwardMs && bw.durationMs() >= se.backwardMs);
            QCOMPARE(fw.recomputeMs, 0.0);
            QCOMPARE(bw.recomputeMs, 0.0);
            if (i < 3)
                QCOMPARE(s.p2pMs[size_t(i)], se.p2pMs);
        }
        // A uniform plan inside one node: close to the analytic pipeline time with latency-only
        // sends, and never beyond the default one whose sends block the stages.
        CostOptions latencyOnly;
        latencyOnly.exposedP2pFraction = 0;
        const double free = estimatePlan(nodePlan(model, 4, 2, 2), c, model, nullptr, latencyOnly).pipelineMs;
        QVERIFY2(std::abs(s.makespanMs - free) <= 0.01 * free,
                 qPrintable(QStringLiteral("%1 vs %2").arg(s.makespanMs).arg(free)));
        QVERIFY(s.makespanMs <= e.pipelineMs + 1e-9);

        // Full recompute: every backward starts with the stage's recomputeMs.
        const PlanEstimate er
            = estimatePlan(nodePlan(model, 2, 2, 2, RecomputeMethod::Full), c, model, nullptr, CostOptions {});
        const PipelineSchedule sr = oneFOneBSchedule(er);
        QVERIFY(er.stages[0].recomputeMs > 0);
        for (const PipelineOp &op : sr.ops)
            QCOMPARE(op.recomputeMs, op.kind == Kind::Backward ? er.stages[size_t(op.stage)].recomputeMs : 0.0);
    }

    void refusesBadInput()
    {
        auto refuses = [](auto &&fn, const char *needle) {
            try {
                fn();
            } catch (const std::invalid_argument &e) {
                return std::string(e.what()).find(needle) != std::string::npos;
            }
            return false;
        };
        QVERIFY(refuses([] { oneFOneBSchedule({}, {}, {}, 4); }, "no stages"));
        QVERIFY(refuses([] { oneFOneBSchedule({1, 2}, {1}, {}, 4); }, "backward times"));
        QVERIFY(refuses([] { oneFOneBSchedule({1, 2}, {1, 2}, {0.1, 0.2}, 4); }, "send times"));
        QVERIFY(refuses([] { oneFOneBSchedule({1}, {1}, {}, 0); }, "microBatches = 0"));
        QVERIFY(refuses([] { oneFOneBSchedule({1, -1}, {1, 1}, {}, 2); }, "forwardMs[1]"));
        QVERIFY(refuses([] { oneFOneBSchedule({1, 1}, {1, std::nan("")}, {}, 2); }, "backwardMs[1]"));
        QVERIFY(refuses([] { oneFOneBSchedule({1, 1}, {1, 1}, {-0.5}, 2); }, "p2pMs[0]"));
        QVERIFY(refuses([] { oneFOneBSchedule({1}, {1}, {}, 2, {1.0, -1.0}); }, "opNoise[1]"));
        QVERIFY(refuses(
            [] {
                oneFOneBSchedule({1, 1}, {1, 1}, {}, int(kMaxPipelineCells / 2 + 1));
            },
            "over the limit"));
        QVERIFY(refuses([] { oneFOneBSchedule(PlanEstimate {}); }, "no stages"));
        PlanEstimate noBatches;
        noBatches.stages.resize(2);
        QVERIFY(refuses([&] { oneFOneBSchedule(noBatches); }, "microBatches = 0"));
        QVERIFY(refuses([] { simulateOneFOneBMs({1, 2}, {1}, {}, 4); }, "backward"));
        // At the limit it still schedules (one stage, kMaxPipelineCells / 4 micro-batches: quick).
        QCOMPARE(oneFOneBSchedule({1}, {1}, {}, int(kMaxPipelineCells / 4)).ops.size(), kMaxPipelineCells / 2);
    }

    void outOfRangeQueries()
    {
        const PipelineSchedule s = oneFOneBSchedule({1, 1}, {1, 1}, {}, 2);
        QCOMPARE(s.opIndex(2, 0, Kind::Forward), -1);
        QCOMPARE(s.opIndex(0, 2, Kind::Forward), -1);
        QCOMPARE(s.opIndex(-1, 0, Kind::Backward), -1);
        QCOMPARE(s.busyMs(5), 0.0);
        QCOMPARE(s.idleMs(-1), 0.0);
        QCOMPARE(PipelineSchedule {}.bubbleFraction(), 0.0);
    }
};

QTEST_MAIN(TestSchedule)
#include "tst_schedule.moc"
