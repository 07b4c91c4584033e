// memx/evaluation: baselines, ground truth, scale-out replication, SVG charts.
#include "memx/evaluation/compare.h"
#include "memx/evaluation/measuredcompare.h"
#include "memx/evaluation/scale.h"
#include "memx/io/formats.h"
#include "memx/testbed/virtualtestbed.h"
#include "memx/util/diagnostic.h"

#include <QTest>
#include <QXmlStreamReader>

#include <algorithm>
#include <cmath>

using namespace memx;

static const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters/";

/// A small, fast MemX space for the 20-GPU sample.
static CompareRequest smallRequest(const std::string &clusterFile)
{
    CompareRequest req;
    req.search.cluster = loadCluster(kSamples + clusterFile);
    req.search.model = resolveModel("llama2-7b");
    req.search.threads = 1;
    req.search.space.tensorParallel = {1, 2, 4};
    req.search.space.microBatches = {1, 2};
    req.search.space.stagesPerGroup = {1, 2};
    req.candidatesPerMethod = 10;
    return req;
}

class TestCompare : public QObject {
    Q_OBJECT

private slots:
    void uniformSplitCounts()
    {
        // 32 layers over 5 stages: 32 = 5 x 6 + 2, the first two stages take one extra.
        QCOMPARE(uniformSplit(32, 5), (std::vector<int> {7, 7, 6, 6, 6}));
        QCOMPARE(uniformSplit(32, 4), (std::vector<int> {8, 8, 8, 8}));
        QVERIFY(uniformSplit(3, 4).empty());
        QVERIFY(uniformSplit(3, 0).empty());
    }

    void groundTruthRanking()
    {
        GroundTruth truth;
        auto cand = [](bool ok, double t, double m, double b) {
            TruthCandidate c;
            c.ok = ok;
            c.timeMs = t;
            c.peak = m;
            c.imbalance = b;
            return c;
        };
        truth.candidates = {cand(true, 100, 0.90, 0.50), cand(true, 110, 0.50, 0.05), cand(false, 0, 1.2, 0.9),
                            cand(true, 105, 0.95, 0.60)};
        rankGroundTruth(truth, ObjectiveWeights {1, 0.5, 0.5});
        // Time: 100 (0) < 105 (3) < 110 (1); the failed run (2) is not ranked.
        QCOMPARE(truth.timeOrder, (std::vector<uint32_t> {0, 3, 1}));
        // Weighted product, each metric over its max (110, 0.95, 0.6), by hand:
        //   #0: ln(100/110) + .5 ln(.90/.95) + .5 ln(.50/.60) = -0.0953 - 0.0270 - 0.0912 = -0.2135
        //   #1: ln(110/110) + .5 ln(.50/.95) + .5 ln(.05/.60) =  0      - 0.3209 - 1.2425 = -1.5634
        //   #3: ln(105/110) + .5 ln(1)       + .5 ln(1)       = -0.0465
        QCOMPARE(truth.memoryBalanceOrder, (std::vector<uint32_t> {1, 0, 3}));
    }

    void measuredMetrics()
    {
        const Cluster c = loadCluster(kSamples + "h100-8x.json");
        // Two stages of one TP2 replica each on node GPUs 0,1 and 2,3.
        Plan p;
        p.stages.resize(2);
        p.stages[0].replicas = {Replica {c.nodes()[0].name, {0, 1}, 2, 1}};
        p.stages[1].replicas = {Replica {c.nodes()[0].name, {2, 3}, 2, 1}};
        const double cap = c.devices[0].memoryBytes();
        TestbedRun run;
        run.peakBytesPerGpu = {0.5 * cap, 0.5 * cap, 0.3 * cap, 0.3 * cap};
        double m = 0, b = 0;
        measuredMemoryMetrics(run, p, c, m, b);
        QCOMPARE(m, 0.5);
        // utilisations .5 .5 .3 .3: mean .4, population sd .1, CV .25
        QVERIFY2(std::abs(b - 0.25) < 1e-12, qPrintable(QString::number(b)));
    }

    void comparePicksAreConsistent()
    {
        const CompareRequest req = smallRequest("paper-20gpu-nvidia-amd.json");
        const CompareReport r = runCompare(req);
        QCOMPARE(r.methods.size(), size_t(9)); // MemX, baselines 1-4, the four published planners
        const MethodOutcome &memx = r.methods[0], &b1 = r.methods[1], &b2 = r.methods[2], &b3 = r.methods[3],
                            &b4 = r.methods[4];
        QCOMPARE(memx.id, std::string("memx"));
        QCOMPARE(b4.id, std::string("exhaustive-profiling"));
        for (const MethodOutcome *o : {&memx, &b1, &b2, &b3})
            QVERIFY2(o->hasPlan, o->id.c_str());
        // MemX's space contains baseline 1's (same analytic metrics, normalised by the same maxima):
        // its pick cannot score worse under its own weights. Without a learned predictor MemX = baseline 3.
        QVERIFY2(memx.memxLogScore <= b1.memxLogScore + 1e-12,
                 qPrintable(QString("%1 vs %2").arg(memx.memxLogScore).arg(b1.memxLogScore)));
        QCOMPARE(memx.plan.stages, b3.plan.stages);
        QCOMPARE(memx.memxLogScore, b3.memxLogScore);
        // Baselines 1 and 2 use one recompute method everywhere; baseline 2's split is uniform.
        for (const MethodOutcome *o : {&b1, &b2})
            for (const Stage &s : o->plan.stages)
                QCOMPARE(s.recompute.method, o->plan.stages.front().recompute.method);
        std::vector<int> counts;
        for (const Stage &s : b2.plan.stages)
            counts.push_back(s.layerCount);
        QCOMPARE(counts, uniformSplit(32, static_cast<int>(counts.size())));
        // Baseline 1 searches a subset of MemX's space with the time objective: the full space's
        // fastest plan is at least as fast (predicted).
        SearchRequest full = req.search;
        const SearchResult res = runSearch(full);
        const std::vector<uint32_t> fastest = rank(res, ObjectiveWeights::timeOnly(), 1);
        QVERIFY(res.timeMs[fastest[0]] <= b1.predictedTimeMs + 1e-9);
        // Exhaustive profiling: every valid configuration x 47 s, and it finds the measured best.
        QCOMPARE(b4.validConfigs, memx.validConfigs);
        QCOMPARE(b4.profilingSeconds, 47.0 * static_cast<double>(memx.validConfigs));
        QVERIFY(b4.top1Time && b4.top1MemoryBalance);
        // Ground truth: the picks are candidates, flags agree with ranks, measured values agree.
        QVERIFY(!r.truth.timeOrder.empty());
        const TruthCandidate &bestT = r.truth.candidates[r.truth.timeOrder.front()];
        for (const TruthCandidate &c : r.truth.candidates)
            if (c.ok)
                QVERIFY(bestT.timeMs <= c.timeMs);
        QCOMPARE(b4.measuredTimeMs, bestT.timeMs);
        for (const MethodOutcome *o : {&memx, &b1, &b2, &b3}) {
            QCOMPARE(o->top1Time, o->timeRank == 1);
            QCOMPARE(o->top1MemoryBalance, o->memoryBalanceRank == 1);
            if (o->measuredOk)
                QVERIFY2(o->timeRank >= 1 && o->measuredTimeMs >= bestT.timeMs, o->id.c_str());
            if (!o->measuredOk)
                continue;
            // Regret, recomputed by hand: time = T / best T - 1; memory-balance = ratio of the
            // weighted products T'^1 M'^0.5 B'^0.5 (the maxima cancel in the ratio, B' = 1 + B).
            QVERIFY(std::abs(o->timeRegretPct - 100.0 * (o->measuredTimeMs / bestT.timeMs - 1.0)) < 1e-9);
            const TruthCandidate &bestMB = r.truth.candidates[r.truth.memoryBalanceOrder.front()];
            const double ratio = (o->measuredTimeMs / bestMB.timeMs) * std::sqrt(o->measuredPeak / bestMB.peak)
                * std::sqrt((1 + o->measuredImbalance) / (1 + bestMB.imbalance));
            QVERIFY2(std::abs(o->memoryBalanceRegretPct - 100.0 * (ratio - 1.0)) < 1e-6,
                     qPrintable(QString("%1: %2 vs %3")
                                    .arg(o->id.c_str())
                                    .arg(o->memoryBalanceRegretPct)
                                    .arg(100.0 * (ratio - 1.0))));
            QVERIFY(o->timeRegretPct >= 0 && o->memoryBalanceRegretPct >= -1e-9);
            QCOMPARE(o->timeRegretPct == 0, o->timeRank == 1 || o->measuredTimeMs == bestT.timeMs);
        }
        // Deterministic (fixed testbed seed).
        const CompareReport again = runCompare(req);
        QCOMPARE(again.methods[1].measuredTimeMs, b1.measuredTimeMs);
        QCOMPARE(again.truth.timeOrder, r.truth.timeOrder);
    }

    void publishedPlannersInCompare()
    {
        // The published planners plan with their own cost models; compare runs MemX's cost model
        // and the testbed on their picks.
        const CompareRequest req = smallRequest("paper-20gpu-nvidia-amd.json");
        const CompareReport r = runCompare(req);
        QCOMPARE(r.methods.size(), size_t(9));
        const BaselineContext context(req.search.cluster, req.search.model, req.search.model.training.globalBatch,
                                      nullptr, req.search.cost);
        for (size_t k = 0; k < std::size(kBaselines); ++k) {
            const MethodOutcome &o = r.methods[5 + k];
            QCOMPARE(o.id, std::string(baselineId(kBaselines[k])));
            QVERIFY(o.published);
            if (kBaselines[k] == Baseline::Metis) {
                // 20 GPUs: no power-of-two device groups cover them; Metis has no plan.
                QVERIFY(!o.hasPlan);
                QVERIFY2(o.refusal.find("power") != std::string::npos, o.refusal.c_str());
                continue;
            }
            QVERIFY2(o.hasPlan, (o.id + ": " + o.refusal).c_str());
            Diagnostics diags;
            validatePlan(o.plan, req.search.cluster, req.search.model, diags);
            QVERIFY2(diags.empty(), o.id.c_str());
            // Its own prediction is its cost model's; "predicted" is MemX's estimate of the pick.
            QCOMPARE(o.ownTimeMs, baselineEstimate(kBaselines[k], o.plan, context).timeMs);
            const PlanEstimate e = estimatePlan(o.plan, req.search.cluster, req.search.model, nullptr, req.search.cost);
            QCOMPARE(o.predictedTimeMs, e.iterationTimeMs);
            QCOMPARE(o.memxOom, e.oom);
            // The pick is a ground-truth candidate proposed by the planner; its measurement is that one's.
            bool found = false;
            for (const TruthCandidate &c : r.truth.candidates) {
                Plan a = c.plan, b = o.plan;
                a.name = b.name = "";
                if (a == b) {
                    found = true;
                    QVERIFY(std::find(c.proposedBy.begin(), c.proposedBy.end(), o.id) != c.proposedBy.end());
                    QCOMPARE(o.measuredOk, c.ok);
                    QCOMPARE(o.measuredTimeMs, c.timeMs);
                    // A plan measures the same wherever it sits in the candidate list: one run of
                    // it alone on the same testbed gives the same time.
                    Plan alone = o.plan;
                    alone.name = "candidate";
                    const TestbedRun solo = VirtualTestbed(req.testbedSeed, req.testbed)
                                                .runPlan(alone, req.search.cluster, req.search.model);
                    QCOMPARE(solo.ok, c.ok);
                    if (solo.ok)
                        QCOMPARE(solo.run.iterationTimeMs, c.timeMs);
                }
            }
            QVERIFY2(found, o.id.c_str());
            QCOMPARE(o.ownHasMemory, kBaselines[k] != Baseline::Amp);
        }
        const nlohmann::json j = toJson(r, req.search.cluster);
        QCOMPARE(j["methods"][5]["id"].get<std::string>(), std::string("metis"));
        QVERIFY(j["methods"][5].contains("refusal"));
        QVERIFY(j["methods"][6]["own"].contains("timeMs"));
    }

    void publishedPlannersOnMeasuredRuns()
    {
        // Synthetic "measured" runs (times = 1.1 x MemX's estimate, peaks = 0.9 x) of DP/TP plans on
        // 8 x H100: every method's MAPE is recomputed here from its own estimate of each plan.
        const Cluster cluster = loadCluster(kSamples + "h100-8x.json");
        const Model m = resolveModel("gpt3-1.3b");
        std::vector<MeasuredRun> runs;
        for (int tp : {1, 2, 4, 8}) {
            MeasuredRun r;
            r.id = "synthetic/tp" + std::to_string(tp);
            r.plan.globalBatch = 64;
            Stage s;
            s.layerCount = m.shape.layers;
            for (int d = 0; d < 8 / tp; ++d) {
                Replica rep;
                rep.node = cluster.nodes().front().name;
                rep.tp = tp;
                rep.microBatch = 2;
                for (int g = 0; g < tp; ++g)
                    rep.gpus.push_back(d * tp + g);
                s.replicas.push_back(rep);
            }
            r.plan.stages.push_back(s);
            r.cluster = cluster;
            r.clusterName = cluster.name;
            r.modelId = m.id;
            r.group = "synthetic";
            const PlanEstimate e = estimatePlan(r.plan, cluster, m, nullptr, CostOptions {});
            r.iterationTimeMs = 1.1 * e.iterationTimeMs;
            r.peakMemoryBytes = 0.9 * e.peakBytes;
            r.memoryKind = MemoryKind::AllocatorMax;
            runs.push_back(r);
        }
        const auto modelOf = [&](const std::string &) { return std::optional<Model>(m); };
        const std::vector<TrainingSample> samples = buildSamples(runs, modelOf, nullptr, CostOptions {});
        QCOMPARE(samples.size(), runs.size());
        const MeasuredComparison c = compareOnMeasuredRuns(runs, samples, modelOf, nullptr, CostOptions {});
        QCOMPARE(c.runs, 4);
        QCOMPARE(c.methods.size(), size_t(5));
        QCOMPARE(c.methods[0].id, std::string("memx"));
        // MemX: |T - 1.1 T| / 1.1 T = 1/11 for every run.
        QVERIFY(std::abs(c.methods[0].metrics.all.timeMapePct - 100.0 / 11.0) < 1e-6);
        QCOMPARE(c.methods[0].metrics.all.timeRanking.sets, 1);
        for (size_t k = 0; k < std::size(kBaselines); ++k) {
            const MeasuredMethodScore &s = c.methods[k + 1];
            QCOMPARE(s.id, std::string(baselineId(kBaselines[k])));
            double ape = 0, mape = 0;
            int n = 0;
            for (const MeasuredRun &r : runs) {
                const BaselineContext ctx(r.cluster, m, r.plan.globalBatch, nullptr, CostOptions {});
                const BaselineEstimate e = baselineEstimate(kBaselines[k], r.plan, ctx);
                if (!e.ok)
                    continue;
                ++n;
                ape += std::abs(e.timeMs - r.iterationTimeMs) / r.iterationTimeMs;
                mape += std::abs(e.peakBytes - *r.peakMemoryBytes) / *r.peakMemoryBytes;
            }
            QCOMPARE(s.costed, n);
            QCOMPARE(s.costed + s.refused, 4);
            if (n == 0)
                continue;
            QVERIFY2(std::abs(s.metrics.all.timeMapePct - 100.0 * ape / n) < 1e-6, s.id.c_str());
            if (s.hasMemory)
                QVERIFY2(std::abs(s.metrics.all.memMapePct - 100.0 * mape / n) < 1e-6, s.id.c_str());
        }
        QVERIFY(!c.methods[2].hasMemory); // AMP has no memory model
        const std::string table = formatMeasuredComparison(c, "synthetic");
        QVERIFY(table.find("galvatron") != std::string::npos);
        QVERIFY(toJson(c)["methods"].size() == 5);
    }

    void timeOnlySplitIsProportionalOnHomogeneousCluster()
    {
        // On one device type every stage has the same speed, so the compute-proportional split
        // is uniform up to rounding: layer counts differ by at most one.
        CompareRequest req = smallRequest("h100-8x.json");
        req.search.space.stagesPerGroup = {2, 4};
        const CompareReport r = runCompare(req);
        const MethodOutcome &b1 = r.methods[1];
        QVERIFY(b1.hasPlan);
        int lo = 1 << 30, hi = 0, sum = 0;
        for (const Stage &s : b1.plan.stages) {
            lo = std::min(lo, s.layerCount);
            hi = std::max(hi, s.layerCount);
            sum += s.layerCount;
        }
        QCOMPARE(sum, 32);
        QVERIFY2(hi - lo <= 1, qPrintable(QString("%1..%2").arg(lo).arg(hi)));
    }

    void replication()
    {
        const Cluster c = loadCluster(kSamples + "paper-20gpu-nvidia-amd.json");
        QCOMPARE(c.totalGpus(), 20);
        const Cluster c3 = replicateCluster(c, 3);
        QCOMPARE(c3.totalGpus(), 60);
        QCOMPARE(c3.groups.size(), c.groups.size());
        for (size_t g = 0; g < c.groups.size(); ++g) {
            QCOMPARE(c3.groups[g].count, 3 * c.groups[g].count);
            QCOMPARE(c3.groups[g].gpu, c.groups[g].gpu);
        }
        QCOMPARE(c3.totalNodes(), 3 * c.totalNodes());
        QCOMPARE(scaleFactors(c, {40, 60, 120}), (std::vector<int> {2, 3, 6}));
        try {
            scaleFactors(c, {40, 50});
            QFAIL("50 GPUs accepted");
        } catch (const std::invalid_argument &e) {
            QVERIFY2(std::string(e.what()).find("50") != std::string::npos
                         && std::string(e.what()).find("20, 40, 60") != std::string::npos,
                     e.what());
        }
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, replicateCluster(c, 0));
    }

    void scaleSearchesEachSize()
    {
        ScaleRequest req;
        req.search.cluster = loadCluster(kSamples + "h100-8x.json");
        req.search.model = resolveModel("llama2-7b");
        req.search.threads = 1;
        req.search.space.tensorParallel = {2, 4};
        req.search.space.microBatches = {1};
        req.targetGpus = {16, 24};
        const std::vector<ScalePoint> pts = runScale(req);
        QCOMPARE(pts.size(), size_t(3));
        QCOMPARE(pts[0].gpus, 8);
        QCOMPARE(pts[1].gpus, 16);
        QCOMPARE(pts[2].gpus, 24);
        for (const ScalePoint &p : pts) {
            QVERIFY(p.hasPlan);
            int gpus = 0;
            for (const Stage &s : p.best.stages)
                for (const Replica &rep : s.replicas)
                    gpus += static_cast<int>(rep.gpus.size());
            QVERIFY2(gpus <= p.gpus, qPrintable(QString::number(gpus)));
        }
        // More GPUs of the same kind: the best plan is not slower.
        QVERIFY(pts[2].timeMs <= pts[0].timeMs);
    }

    void progressAndCancel()
    {
        // Compare: progress is (thousandths, 1000), never decreasing, and reaches 1000.
        const CompareRequest req = smallRequest("paper-20gpu-nvidia-amd.json");
        std::vector<size_t> seen;
        const CompareReport full = runCompare(req, [&](size_t d, size_t t) {
            if (t != 1200) // five phases of 200 and the published planners' 200
                qFatal("total %zu", t);
            seen.push_back(d);
            return true;
        });
        QVERIFY(!full.cancelled);
        QVERIFY(seen.size() > 5);
        QVERIFY(std::is_sorted(seen.begin(), seen.end()));
        QCOMPARE(seen.back(), size_t(1200));
        // Cancel inside the first search (its first progress call): the report is partial and the
        // callback is not called again.
        size_t calls = 0;
        const CompareReport cancelled = runCompare(req, [&](size_t, size_t) {
            ++calls;
            return false;
        });
        QVERIFY(cancelled.cancelled);
        QCOMPARE(calls, size_t(1));
        QVERIFY(cancelled.methods.empty());
        QVERIFY(cancelled.truth.candidates.empty());
        // Cancel inside the published planners (800-1000) and once the testbed runs started
        // (> 1000): no method is reported.
        for (size_t at : {850, 1000}) {
            const CompareReport late = runCompare(req, [&](size_t d, size_t) { return d <= at; });
            QVERIFY(late.cancelled);
            QVERIFY(late.methods.empty());
        }

        // Scale: cancelling during the second size's search returns only the first size.
        ScaleRequest sreq;
        sreq.search.cluster = loadCluster(kSamples + "h100-8x.json");
        sreq.search.model = resolveModel("llama2-7b");
        sreq.search.threads = 1;
        sreq.search.space.tensorParallel = {2, 4};
        sreq.search.space.microBatches = {1};
        sreq.targetGpus = {16, 24};
        size_t last = 0;
        bool ordered = true;
        const std::vector<ScalePoint> pts = runScale(sreq, [&](size_t d, size_t t) {
            ordered = ordered && d >= last && t == 1000;
            last = d;
            return d < 400; // sizes are 0-333, 333-667, 667-1000 thousandths
        });
        QVERIFY(ordered);
        QVERIFY(last >= 400);
        QCOMPARE(pts.size(), size_t(1));
        QCOMPARE(pts[0].gpus, 8);
    }

    void svgIsWellFormed()
    {
        const std::string svg = svgLineChart(
            "a <b> & \"c\"", "GPUs", "s",
            {ChartSeries {"one", {20, 40, 60}, {1.5, 2.5, NAN}}, ChartSeries {"two & more", {20, 40}, {3, 4}}});
        QXmlStreamReader xml(QByteArray::fromStdString(svg));
        int circles = 0, polylines = 0;
        QString title;
        while (!xml.atEnd()) {
            xml.readNext();
            if (xml.isStartElement() && xml.name() == QLatin1String("circle"))
                ++circles;
            if (xml.isStartElement() && xml.name() == QLatin1String("polyline"))
                ++polylines;
            if (xml.isStartElement() && xml.name() == QLatin1String("text") && title.isEmpty())
                title = xml.readElementText();
        }
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QCOMPARE(circles, 4); // the NaN point is skipped
        QCOMPARE(polylines, 2);
        QCOMPARE(title, QStringLiteral("a <b> & \"c\""));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, svgLineChart("t", "x", "y", {ChartSeries {"bad", {1}, {}}}));
    }
};

QTEST_GUILESS_MAIN(TestCompare)
#include "tst_compare.moc"
