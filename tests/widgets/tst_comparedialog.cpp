// CompareDialog: MemX, the engine's baselines and the published planners on the workbench's
// cluster, in the background, with progress, Cancel and the same report as memx compare.
#include "memx/evaluation/compare.h"
#include "memx/io/formats.h"
#include "memx/ui/comparedialog.h"

#include <QChart>
#include <QLineSeries>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>

using namespace memx::ui;

namespace {
constexpr int kTimeoutMs = 240000;

memx::PlannedSearchRequest request()
{
    memx::PlannedSearchRequest r;
    r.search.cluster = memx::loadCluster(MEMX_SOURCE_DIR "/sample_clusters/paper-20gpu-nvidia-amd.json");
    r.search.model = memx::resolveModel("llama2-7b");
    r.search.threads = 1;
    r.search.space.tensorParallel = {1, 2, 4};
    r.search.space.microBatches = {1, 2};
    r.search.space.stagesPerGroup = {1, 2};
    return r;
}
} // namespace

class TestCompareDialog : public QObject {
    Q_OBJECT
private slots:
    void runsAndShowsEveryMethod()
    {
        CompareDialog dialog(request(), memx::ObjectiveWeights {1, 0.5, 0.5}, nullptr);
        QSignalSpy finished(&dialog, &CompareDialog::finished);
        dialog.run();
        QVERIFY(dialog.isRunning());
        QVERIFY(finished.wait(kTimeoutMs));
        QCOMPARE(finished.front().front().toBool(), true);
        QVERIFY(dialog.report());
        const memx::CompareReport &r = *dialog.report();
        // The same comparison memx compare runs: one row per method, in its order.
        QCOMPARE(dialog.table()->rowCount(), static_cast<int>(r.methods.size()));
        QCOMPARE(r.methods.size(), size_t(9));
        for (int row = 0; row < dialog.table()->rowCount(); ++row)
            QCOMPARE(dialog.table()->item(row, 0)->text().toStdString(), r.methods[static_cast<size_t>(row)].name);
        QCOMPARE(dialog.table()->item(5, 0)->text(), QStringLiteral("Metis"));
        // Metis refuses 20 GPUs and the row says why.
        QVERIFY(dialog.table()->item(5, dialog.table()->columnCount() - 1)->text().contains(QLatin1String("power")));
        // Chart: the candidates and one marked pick per method measured on the testbed.
        int picks = 0;
        for (const memx::MethodOutcome &o : r.methods)
            picks += o.measuredOk && o.method != memx::CompareMethod::Exhaustive ? 1 : 0;
        QCOMPARE(dialog.chart()->series().size(), picks + 2);
        // ... and the measured (T, M) Pareto front, checked against a brute-force front: a
        // candidate that ran is on it exactly when no other dominates it in (T, M).
        const auto *front = qobject_cast<QLineSeries *>(dialog.chart()->series().at(1));
        QVERIFY(front);
        std::vector<QPointF> expected;
        for (const memx::TruthCandidate &a : r.truth.candidates) {
            if (!a.ok)
                continue;
            bool dominated = false;
            for (const memx::TruthCandidate &b : r.truth.candidates)
                dominated = dominated
                    || (b.ok && b.timeMs <= a.timeMs && b.peak <= a.peak && (b.timeMs < a.timeMs || b.peak < a.peak));
            if (!dominated)
                expected.emplace_back(a.timeMs / 1000.0, a.peak);
        }
        QVERIFY(!expected.empty());
        QCOMPARE(front->count(), static_cast<int>(expected.size()));
        for (const QPointF &p : expected)
            QVERIFY(front->points().contains(p));
        for (int i = 1; i < front->count(); ++i)
            QVERIFY(front->at(i).x() >= front->at(i - 1).x() && front->at(i).y() <= front->at(i - 1).y());
    }

    void cancels()
    {
        CompareDialog dialog(request(), memx::ObjectiveWeights {1, 0.5, 0.5}, nullptr);
        QSignalSpy finished(&dialog, &CompareDialog::finished);
        dialog.run();
        dialog.cancel();
        QVERIFY(finished.wait(kTimeoutMs));
        QCOMPARE(finished.front().front().toBool(), false);
        QVERIFY(!dialog.report());
        QVERIFY(dialog.statusText().contains(QLatin1String("Cancelled")));
    }
};

QTEST_MAIN(TestCompareDialog)
#include "tst_comparedialog.moc"
