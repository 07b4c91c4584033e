#include "memx/ui/paretochartview.h"
#include "memx/ui/plantablemodel.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QHeaderView>
#include <QTableView>
#include <QtTest>

using namespace memx::ui;

namespace {

PlanPoint plan(quint32 id, double timeMs, double mem, double cv, double score, bool front, bool oom, QString summary)
{
    PlanPoint p;
    p.id = id;
    p.timeMs = timeMs;
    p.peakMemoryFraction = mem;
    p.imbalance = cv;
    p.score = score;
    p.onFront = front;
    p.oom = oom;
    p.summary = std::move(summary);
    return p;
}

QVector<PlanPoint> samplePlans()
{
    return {
        plan(10, 300.0, 0.70, 0.10, 0.40, true, false, "PP4 TP2 DP1 a100"),
        plan(11, 250.0, 0.95, 0.20, 0.30, true, false, "PP2 TP4 DP1 mi250x"),
        plan(12, 400.0, 1.20, 0.05, 0.90, false, true, "PP1 TP8 DP1 h100 (OOM)"),
        plan(13, 280.0, 0.60, 0.30, 0.20, true, false, "PP4 TP1 DP2 mixed"),
        plan(14, 500.0, 0.80, 0.40, 0.95, false, false, "PP8 TP1 DP1 A100"),
    };
}

QList<quint32> proxyIds(const QAbstractItemModel &m)
{
    QList<quint32> ids;
    for (int r = 0; r < m.rowCount(); ++r)
        ids << m.index(r, 0).data(PlanTableModel::PlanIdRole).value<quint32>();
    return ids;
}

} // namespace

class TestPlanTableModel : public QObject {
    Q_OBJECT
private slots:
    void modelTester()
    {
        PlanTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        PlanFilterProxy proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setPlans(samplePlans());
        QCOMPARE(model.rowCount(), 5);
        QCOMPARE(model.columnCount(), int(PlanTableModel::ColumnCount));
        proxy.sort(PlanTableModel::TimeColumn);
        proxy.setParetoOnly(true);
        proxy.setTextFilter("pp4");
        model.updateScores({0.5, 0.4, 0.3, 0.2, 0.1});
        model.setPlans({});
        QCOMPARE(proxy.rowCount(), 0);
        model.setPlans(samplePlans());
        QCOMPARE(proxy.rowCount(), 2);
    }

    void ranksFollowScore()
    {
        PlanTableModel model;
        model.setPlans(samplePlans());
        // scores 0.40, 0.30, 0.90, 0.20, 0.95 -> ranks 3, 2, 4, 1, 5
        const QList<int> expected = {3, 2, 4, 1, 5};
        for (int r = 0; r < 5; ++r)
            QCOMPARE(model.index(r, PlanTableModel::RankColumn).data().toInt(), expected[r]);
        QCOMPARE(model.topPlanId(), 13u);
        QCOMPARE(model.index(2, 0).data(Qt::UserRole).value<quint32>(), 12u);

        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        QVERIFY(model.updateScores({0.1, 0.2, 0.3, 0.4, 0.5}));
        QCOMPARE(reset.count(), 0);
        QVERIFY(changed.count() >= 1);
        QCOMPARE(model.topPlanId(), 10u);
        QCOMPARE(model.index(4, PlanTableModel::RankColumn).data().toInt(), 5);
        QVERIFY(!model.updateScores({1.0}));
    }

    void displayAndHeaders()
    {
        PlanTableModel model;
        model.setPlans(samplePlans());
        QCOMPARE(model.headerData(PlanTableModel::TimeColumn, Qt::Horizontal).toString(), QString("Time (ms)"));
        QCOMPARE(model.headerData(PlanTableModel::MemoryColumn, Qt::Horizontal).toString(), QString("Peak mem (%)"));
        QCOMPARE(model.index(0, PlanTableModel::MemoryColumn).data().toString(), QString("70.0"));
        QCOMPARE(model.index(0, PlanTableModel::ImbalanceColumn).data().toString(), QString("0.100"));
        QVERIFY(model.index(2, PlanTableModel::PlanColumn).data().toString().startsWith("[OOM]"));
        QVERIFY(!model.index(1, PlanTableModel::ParetoColumn).data().toString().isEmpty());
        QVERIFY(model.index(2, PlanTableModel::ParetoColumn).data().toString().isEmpty());
        QVERIFY(model.index(2, 0).data(Qt::ForegroundRole).isValid());
        QVERIFY(!model.index(0, 0).data(Qt::ForegroundRole).isValid());
    }

    void timeColumnInSecondsLikeTheChart()
    {
        PlanTableModel model;
        QSignalSpy header(&model, &PlanTableModel::headerDataChanged);
        QVector<PlanPoint> plans = samplePlans();
        model.setPlans(plans);
        QVERIFY(!model.timeInSeconds());
        QCOMPARE(model.index(0, PlanTableModel::TimeColumn).data().toString(), QString("300.0"));
        // One plan of 10 s or more: the whole column (and its header) reads in seconds, as the
        // Pareto chart's time axis does (memx::ui::timeInSeconds); sorting stays numeric in ms.
        plans[4].timeMs = 1400000.0;
        model.setPlans(plans);
        QVERIFY(model.timeInSeconds());
        QCOMPARE(header.count(), 1);
        QCOMPARE(model.headerData(PlanTableModel::TimeColumn, Qt::Horizontal).toString(), QString("Time (s)"));
        QCOMPARE(model.index(0, PlanTableModel::TimeColumn).data().toString(), QString("0.30"));
        QCOMPARE(model.index(4, PlanTableModel::TimeColumn).data().toString(), QString("1400.00"));
        QCOMPARE(model.index(4, PlanTableModel::TimeColumn).data(PlanTableModel::SortRole).toDouble(), 1400000.0);
        ParetoChartView chart;
        chart.setPoints(plans);
        QCOMPARE(chart.timeInSeconds(), model.timeInSeconds());
    }

    void sortByTime()
    {
        PlanTableModel model;
        model.setPlans(samplePlans());
        PlanFilterProxy proxy;
        proxy.setSourceModel(&model);
        proxy.sort(PlanTableModel::TimeColumn, Qt::AscendingOrder);
        // times 300, 250, 400, 280, 500
        QCOMPARE(proxyIds(proxy), (QList<quint32> {11, 13, 10, 12, 14}));
        proxy.sort(PlanTableModel::TimeColumn, Qt::DescendingOrder);
        QCOMPARE(proxyIds(proxy), (QList<quint32> {14, 12, 10, 13, 11}));
        // numeric, not lexicographic: memory 0.60 < 0.70 < 0.80 < 0.95 < 1.20
        proxy.sort(PlanTableModel::MemoryColumn, Qt::AscendingOrder);
        QCOMPARE(proxyIds(proxy), (QList<quint32> {13, 10, 14, 11, 12}));
        proxy.sort(PlanTableModel::RankColumn, Qt::AscendingOrder);
        QCOMPARE(proxyIds(proxy), (QList<quint32> {13, 11, 10, 12, 14}));
        // re-scoring re-sorts the rank column dynamically
        model.updateScores({0.1, 0.2, 0.3, 0.4, 0.5});
        QCOMPARE(proxyIds(proxy), (QList<quint32> {10, 11, 12, 13, 14}));
    }

    void filters()
    {
        PlanTableModel model;
        model.setPlans(samplePlans());
        PlanFilterProxy proxy;
        proxy.setSourceModel(&model);
        proxy.sort(PlanTableModel::RankColumn);
        proxy.setHideOom(true);
        QCOMPARE(proxyIds(proxy), (QList<quint32> {13, 11, 10, 14}));
        proxy.setParetoOnly(true);
        QCOMPARE(proxyIds(proxy), (QList<quint32> {13, 11, 10}));
        proxy.setTextFilter("PP4"); // case-insensitive substring of the summary
        QCOMPARE(proxyIds(proxy), (QList<quint32> {13, 10}));
        proxy.setTextFilter("a100");
        proxy.setParetoOnly(false);
        QCOMPARE(proxyIds(proxy), (QList<quint32> {10, 14}));
        proxy.setTextFilter(QString());
        proxy.setHideOom(false);
        QCOMPARE(proxy.rowCount(), 5);
    }

    void scorePlansUsesCoreObjective()
    {
        // Core objective: score = T'^wT * M'^wM * B'^wB, T' = T / max T, M' = M / max M,
        // B' = (1 + B) / max(1 + B). maxT = 200, maxM = 0.9, max(1 + B) = 1.4.
        QVector<PlanPoint> plans
            = {plan(1, 100.0, 0.9, 0.0, 0, true, false, "a"), plan(2, 200.0, 0.5, 0.2, 0, true, false, "b"),
               plan(3, 150.0, 0.7, 0.4, 0, true, false, "c")};
        scorePlans(plans, {1.0, 0.0, 0.0});
        // T' = 0.5, 1, 0.75
        QVERIFY(qAbs(plans[0].score - 0.5) < 1e-12);
        QVERIFY(qAbs(plans[1].score - 1.0) < 1e-12);
        QVERIFY(qAbs(plans[2].score - 0.75) < 1e-12);
        scorePlans(plans, {1.0, 1.0, 0.0});
        // M' = 1, 0.5/0.9, 0.7/0.9 -> 0.5, 0.555556, 0.583333
        QVERIFY(qAbs(plans[0].score - 0.5) < 1e-12);
        QVERIFY(qAbs(plans[1].score - 0.5 / 0.9) < 1e-12);
        QVERIFY(qAbs(plans[2].score - 0.75 * 0.7 / 0.9) < 1e-12);
        scorePlans(plans, {1.0, 1.0, 2.0});
        // B' = 1/1.4, 1.2/1.4, 1 -> 0.5 / 1.96 = 0.255102, 0.555556 * (1.2/1.4)^2 = 0.408163, 0.583333
        QVERIFY(qAbs(plans[0].score - 0.5 / 1.96) < 1e-12);
        QVERIFY(qAbs(plans[1].score - 0.5 / 0.9 * (1.2 / 1.4) * (1.2 / 1.4)) < 1e-12);
        QVERIFY(qAbs(plans[2].score - 0.75 * 0.7 / 0.9) < 1e-12);
    }

    void screenshot()
    {
        const QString dir = qEnvironmentVariable("MEMX_SCREENSHOT_DIR");
        if (dir.isEmpty())
            QSKIP("set MEMX_SCREENSHOT_DIR to write screenshots");
        QDir().mkpath(dir);
        QVector<PlanPoint> plans;
        const char *recompute[] = {"none", "selective", "full"};
        for (quint32 i = 0; i < 40; ++i) {
            const int pp = 1 << (i % 4), tp = 1 << ((i / 4) % 3);
            const double t = 300.0 + 13.7 * ((i * 7) % 40);
            const double m = 0.45 + 0.017 * ((i * 11) % 40);
            plans << plan(i + 1, t, m, 0.02 + 0.006 * ((i * 3) % 40), 0.0, (i % 5) == 0, m > 1.0,
                          QStringLiteral("PP%1 x TP%2 x DP%3, mb %4, recompute %5: a100-0, a100-1, mi250x, h100")
                              .arg(pp)
                              .arg(tp)
                              .arg(std::max(1, 20 / (pp * tp)))
                              .arg(1 + i % 2)
                              .arg(recompute[i % 3]));
            plans.back().riskOfOom = !plans.back().oom && m > 0.92;
        }
        scorePlans(plans, {1.0, 0.5, 0.5});
        PlanTableModel model;
        model.setPlans(plans);
        PlanFilterProxy proxy;
        proxy.setSourceModel(&model);
        QTableView view;
        view.setModel(&proxy);
        view.setSortingEnabled(true);
        view.sortByColumn(PlanTableModel::RankColumn, Qt::AscendingOrder);
        view.verticalHeader()->hide();
        view.setWordWrap(false);
        view.horizontalHeader()->setStretchLastSection(true);
        view.resizeColumnsToContents();
        view.resize(900, 360);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(view.grab().save(dir + "/plan-table.png"));
    }
};

QTEST_MAIN(TestPlanTableModel)
#include "tst_plantablemodel.moc"
