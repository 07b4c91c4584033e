// Evaluation metrics worked by hand: MAPE, Kendall tau, Top-1, regret (time and T x M rankings),
// ranking sets, the noise floor, k-fold grouping.
#include "memx/predict/crossvalidation.h"

#include <QTest>

#include <cmath>

using namespace memx;

static RunPrediction run(const std::string &id, const std::string &cluster, double mt, double mm, double at, double am,
                         double lt, double lm)
{
    RunPrediction r;
    r.runId = id;
    r.group = "g";
    r.clusterName = cluster;
    r.measuredTimeMs = mt;
    r.measuredPeakBytes = mm;
    r.analyticTimeMs = at;
    r.analyticPeakBytes = am;
    r.learnedTimeMs = lt;
    r.learnedPeakBytes = lm;
    return r;
}

class TestEvaluate : public QObject {
    Q_OBJECT

private slots:
    void kendallTauByHand()
    {
        // a = 1 2 3 4, b = 1 3 2 4: pairs (6): one discordant (2,3) -> (5 - 1) / 6.
        QCOMPARE(kendallTau({1, 2, 3, 4}, {1, 3, 2, 4}), 4.0 / 6.0);
        QCOMPARE(kendallTau({1, 2, 3}, {3, 2, 1}), -1.0);
        // a tie counts as neither: (1,1,2) vs (1,2,3): pairs 3, concordant 2 -> 2/3.
        QCOMPARE(kendallTau({1, 1, 2}, {1, 2, 3}), 2.0 / 3.0);
    }

    void metricsByHand()
    {
        // Cluster "c": three alternatives, cluster "d": one run (no ranking set).
        std::vector<RunPrediction> runs = {
            //   id   cl   meas T, M      analytic T, M   learned T, M
            run("a", "c", 100, 10, 150, 5, 110, 10),
            run("b", "c", 200, 5, 120, 4, 190, 6),
            run("c", "c", 300, 2, 400, 3, 300, 2),
            run("d", "d", 50, 1, 50, 1, 60, 1),
        };
        const MethodMetrics an = scorePredictions(runs, false);
        const MethodMetrics le = scorePredictions(runs, true);
        // Analytic time MAPE: |150-100|/100 = .5, |120-200|/200 = .4, |400-300|/300 = 1/3, 0 -> mean 30.8333%
        QVERIFY(std::abs(an.all.timeMapePct - 100.0 * (0.5 + 0.4 + 1.0 / 3.0 + 0) / 4) < 1e-9);
        // Analytic memory MAPE: .5, .2, .5, 0 -> 30%
        QVERIFY(std::abs(an.all.memMapePct - 30.0) < 1e-9);
        // Learned time MAPE: .1, .05, 0, .2 -> 8.75%; memory: 0, .2, 0, 0 -> 5%
        QVERIFY(std::abs(le.all.timeMapePct - 8.75) < 1e-9);
        QVERIFY(std::abs(le.all.memMapePct - 5.0) < 1e-9);

        // Time ranking in set c: measured order a < b < c. Analytic predicts b(120) < a(150) < c(400):
        // pairs ab discordant, ac, bc concordant -> tau 1/3; pick b: regret 200/100 - 1 = 100%.
        QCOMPARE(an.all.timeRanking.sets, 1);
        QCOMPARE(an.all.timeRanking.pairs, 3);
        QVERIFY(std::abs(an.all.timeRanking.kendallTau - 1.0 / 3.0) < 1e-12);
        QCOMPARE(an.all.timeRanking.top1Hits, 0);
        QVERIFY(std::abs(an.all.timeRanking.meanRegretPct - 100.0) < 1e-9);
        // Learned keeps the order: tau 1, hit, regret 0.
        QCOMPARE(le.all.timeRanking.kendallTau, 1.0);
        QCOMPARE(le.all.timeRanking.top1Hits, 1);
        QCOMPARE(le.all.timeRanking.meanRegretPct, 0.0);

        // T x M ranking, measured: a 1000, b 1000, c 600 -> best c.
        // Analytic: a 750, b 480, c 1200 -> pick b: regret 1000/600 - 1 = 66.67%;
        // pairs: ab (meas tie) neither, ac (750<1200 vs 1000>600) discordant, bc discordant -> tau -2/3.
        QVERIFY(std::abs(an.all.balanceRanking.kendallTau + 2.0 / 3.0) < 1e-12);
        QVERIFY(std::abs(an.all.balanceRanking.meanRegretPct - 100.0 * (1000.0 / 600.0 - 1)) < 1e-9);
        // Learned: a 1100, b 1140, c 600 -> pick c: hit; ab: 1100<1140 vs tie -> neither; ac, bc concordant.
        QCOMPARE(le.all.balanceRanking.top1Hits, 1);
        QVERIFY(std::abs(le.all.balanceRanking.kendallTau - 2.0 / 3.0) < 1e-12);
        QCOMPARE(le.groups.size(), size_t(1));
        QCOMPARE(le.groups[0].runs, 4);
    }

    void noiseFloorByHand()
    {
        std::vector<TrainingSample> s(3);
        s[0].runId = "main/x";
        s[0].planKey = "p";
        s[0].measuredTimeMs = 110;
        s[0].measuredPeakBytes = 9;
        s[1].runId = "rerun/x";
        s[1].planKey = "p";
        s[1].measuredTimeMs = 100;
        s[1].measuredPeakBytes = 10;
        s[2].runId = "main/y";
        s[2].planKey = "q";
        s[2].measuredTimeMs = 100;
        const NoiseFloor n = noiseFloor(s);
        QCOMPARE(n.pairs, 1);
        QVERIFY(std::abs(n.timeMapePct - 10.0) < 1e-9); // |110 - 100| / 100
        QVERIFY(std::abs(n.memMapePct - 10.0) < 1e-9); // |9 - 10| / 10
    }

    /// k-fold keeps the runs of one plan in one fold, and every run is predicted exactly once.
    void kFoldGroupsPlans()
    {
        std::vector<TrainingSample> s;
        for (int i = 0; i < 12; ++i) {
            TrainingSample t;
            t.runId = "r" + std::to_string(i);
            t.group = "g";
            t.clusterName = "c";
            t.planKey = "p" + std::to_string(i / 2);
            for (size_t f = 0; f < kFeatureCount; ++f)
                t.features[f] = static_cast<float>(i % 5);
            t.analyticTimeMs = 100;
            t.analyticPeakBytes = 100;
            t.measuredTimeMs = 100 + i;
            t.measuredPeakBytes = 100 + i;
            s.push_back(t);
        }
        PredictorOptions o;
        o.ensemble = 2;
        o.rounds = 10;
        const EvaluationReport r = crossValidate(s, CvScheme::KFold, 3, o);
        QCOMPARE(r.folds, 3);
        QCOMPARE(r.runs.size(), size_t(12));
        for (size_t i = 0; i < 12; ++i)
            QCOMPARE(r.runs[i].runId, s[i].runId);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, crossValidate(s, CvScheme::KFold, 1, o));
        const nlohmann::json j = toJson(r);
        QCOMPARE(j["scheme"].get<std::string>(), std::string("k-fold"));
        QCOMPARE(j["runs"].size(), size_t(12));
        QVERIFY(formatReport(r).find("Noise floor") != std::string::npos);
    }

    /// With a per-fold sampler (a calibration as part of the method), each fold's samples come from
    /// it, it never sees the held-out plan (nor its rerun), and the runs that failed out of memory
    /// are predicted from a calibration of every run that ran. The "calibration" here is worked by
    /// hand: analytic time = mean measured time of the training runs.
    void perFoldSamplerNeverSeesTheHeldOutPlan()
    {
        std::vector<TrainingSample> s;
        for (int i = 0; i < 7; ++i) {
            TrainingSample t;
            t.runId = "r" + std::to_string(i);
            t.group = "g";
            t.clusterName = "c";
            t.planKey = "p" + std::to_string(i / 2); // r0/r1, r2/r3, r4/r5 are reruns of one plan
            for (size_t f = 0; f < kFeatureCount; ++f)
                t.features[f] = static_cast<float>(i % 3);
            t.analyticTimeMs = 1; // the uncalibrated estimate: never used once the sampler answers
            t.analyticPeakBytes = 100;
            t.capacityBytes = 1000;
            t.measuredTimeMs = 100.0 * (i + 1);
            t.measuredPeakBytes = 100;
            s.push_back(t);
        }
        s[6].measuredOutOfMemory = true; // r6: failed out of memory
        s[6].measuredTimeMs = 0;
        s[6].measuredPeakBytes.reset();
        std::vector<std::set<std::string>> calls;
        const FoldSampler sampler = [&](const std::set<std::string> &train) {
            calls.push_back(train);
            double sum = 0;
            for (const TrainingSample &t : s)
                if (train.count(t.runId))
                    sum += t.measuredTimeMs;
            std::vector<TrainingSample> out = s;
            for (TrainingSample &t : out)
                t.analyticTimeMs = sum / static_cast<double>(train.size());
            return out;
        };
        PredictorOptions o;
        o.ensemble = 2;
        o.rounds = 5;
        const EvaluationReport r = crossValidate(s, CvScheme::LeaveOneOut, 0, o, {}, 0.05, sampler);
        QVERIFY(r.calibratedPerFold);
        QCOMPARE(calls.size(), size_t(7)); // 6 folds + one for the out-of-memory run
        for (size_t f = 0; f < 6; ++f) {
            const std::string held = s[f].runId, rerun = s[f ^ 1].runId;
            QVERIFY(!calls[f].count(held));
            QVERIFY(!calls[f].count(rerun));
            QCOMPARE(calls[f].size(), size_t(4));
            QVERIFY(!calls[f].count("r6"));
        }
        QCOMPARE(calls[6].size(), size_t(6));
        // Fold of r0 (plan p0 held out): trains on r2..r5 -> (300 + 400 + 500 + 600) / 4 = 450 ms.
        QCOMPARE(r.runs[0].runId, std::string("r0"));
        QCOMPARE(r.runs[0].analyticTimeMs, 450.0);
        // Fold of r5 (p2 held out): r0..r3 -> (100 + 200 + 300 + 400) / 4 = 250 ms.
        QCOMPARE(r.runs[5].analyticTimeMs, 250.0);
        // The out-of-memory run: every run that ran -> 2100 / 6 = 350 ms.
        QCOMPARE(r.runs[6].runId, std::string("r6"));
        QCOMPARE(r.runs[6].analyticTimeMs, 350.0);
        // Analytic time MAPE by hand over the 6 runs that ran: predictions 450, 450, 350, 350, 250, 250
        // against 100..600.
        const double pred[6] = {450, 450, 350, 350, 250, 250};
        double mape = 0;
        for (int i = 0; i < 6; ++i)
            mape += std::abs(pred[i] - 100.0 * (i + 1)) / (100.0 * (i + 1));
        QVERIFY(std::abs(r.analytic.all.timeMapePct - 100.0 * mape / 6) < 1e-9);
        QVERIFY(toJson(r)["calibration"].get<std::string>().rfind("per fold", 0) == 0);
        QVERIFY(formatReport(r).find("calibrated per fold") != std::string::npos);
        // Without a sampler nothing changes: the samples' own estimate (1 ms).
        const EvaluationReport plain = crossValidate(s, CvScheme::LeaveOneOut, 0, o);
        QVERIFY(!plain.calibratedPerFold);
        QCOMPARE(plain.runs[0].analyticTimeMs, 1.0);
    }
};

QTEST_GUILESS_MAIN(TestEvaluate)
#include "tst_evaluate.moc"
