#include "memx/ui/paretochartview.h"

#include <QChartView>
#include <QDir>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineSeries>
#include <QValueAxis>
#include <QWheelEvent>
#include <QXYSeries>
#include <QtTest>

#include <random>

using namespace memx::ui;

namespace {

PlanPoint plan(quint32 id, double timeMs, double mem, double cv, bool front = false)
{
    PlanPoint p;
    p.id = id;
    p.timeMs = timeMs;
    p.peakMemoryFraction = mem;
    p.imbalance = cv;
    p.onFront = front;
    p.oom = mem > 1.0;
    p.riskOfOom = !p.oom && mem > 0.92;
    p.summary = QStringLiteral("plan %1").arg(id);
    return p;
}

bool dominates(const PlanPoint &a, const PlanPoint &b)
{
    const bool noWorse
        = a.timeMs <= b.timeMs && a.peakMemoryFraction <= b.peakMemoryFraction && a.imbalance <= b.imbalance;
    const bool better = a.timeMs < b.timeMs || a.peakMemoryFraction < b.peakMemoryFraction || a.imbalance < b.imbalance;
    return noWorse && better;
}

// Brute-force O(n^2) Pareto flags: the independent reference for the hand-marked front.
void markFrontBruteForce(QVector<PlanPoint> &plans)
{
    for (auto &p : plans) {
        p.onFront = std::none_of(plans.begin(), plans.end(), [&](const PlanPoint &q) { return dominates(q, p); });
    }
}

// Seven plans; front marked by hand (T ms, M fraction, B CV):
//   1 (100, .90, .10) front            5 (200, .95, .05) front: lowest B
//   2 (120, .60, .20) front            6 (160, .80, .40) dominated by 2
//   3 (150, .50, .30) front            7 (110, .95, .15) dominated by 1
//   4 (130, .70, .25) dominated by 2
QVector<PlanPoint> handMade()
{
    return {plan(1, 100, 0.90, 0.10, true),  plan(2, 120, 0.60, 0.20, true), plan(3, 150, 0.50, 0.30, true),
            plan(4, 130, 0.70, 0.25, false), plan(5, 200, 0.95, 0.05, true), plan(6, 160, 0.80, 0.40, false),
            plan(7, 110, 0.95, 0.15, false)};
}

QList<QPointF> allPoints(const ParetoChartView &v, bool front)
{
    QList<QPointF> pts;
    for (int b = 0; b < ParetoChartView::ColourBuckets; ++b)
        pts += (front ? v.frontSeries(b) : v.dominatedSeries(b))->points();
    return pts;
}

// Synthetic but plausible search result: iteration time vs peak memory trade off (more pipeline
// stages / recompute -> less memory, more time), imbalance independent-ish. Fixed seed.
QVector<PlanPoint> demoPlans(int n)
{
    std::mt19937 rng(20240607);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::normal_distribution<double> noise(0.0, 1.0);
    const char *recompute[] = {"none", "selective", "full"};
    QVector<PlanPoint> plans;
    plans.reserve(n);
    for (int i = 0; i < n; ++i) {
        const int pp = 1 << int(u(rng) * 4); // 1..8
        const int tp = 1 << int(u(rng) * 3); // 1..4
        const int dp = std::max(1, 20 / (pp * tp));
        const int rc = int(u(rng) * 3);
        const double x = u(rng);
        const double t = 260.0 + 520.0 * x * x + 40.0 * rc + std::abs(noise(rng)) * 90.0;
        const double m = 0.32 + 0.62 / (1.0 + 3.0 * x) - 0.06 * rc + std::abs(noise(rng)) * 0.12;
        const double b = 0.03 + 0.25 * u(rng) * u(rng) + 0.02 * pp / 8.0;
        PlanPoint p = plan(quint32(i + 1), t, std::max(0.2, m), b);
        p.summary = QStringLiteral("PP%1 x TP%2 x DP%3, mb %4, recompute %5")
                        .arg(pp)
                        .arg(tp)
                        .arg(dp)
                        .arg(1 << int(u(rng) * 3))
                        .arg(recompute[rc]);
        plans.append(p);
    }
    markFrontBruteForce(plans);
    scorePlans(plans, {1.0, 0.5, 0.5});
    return plans;
}

} // namespace

class TestParetoChartView : public QObject {
    Q_OBJECT
private slots:
    void handMadeFrontIsTheBruteForceFront()
    {
        QVector<PlanPoint> ref = handMade();
        markFrontBruteForce(ref);
        const QVector<PlanPoint> hand = handMade();
        for (int i = 0; i < ref.size(); ++i)
            QVERIFY2(ref[i].onFront == hand[i].onFront, qPrintable(QString("plan %1").arg(hand[i].id)));
    }

    void frontAndDominatedSeries()
    {
        ParetoChartView v;
        v.setPoints(handMade());
        QCOMPARE(v.xMetric(), Metric::Time);
        QCOMPARE(v.yMetric(), Metric::Memory);
        QCOMPARE(v.colourMetric(), Metric::Balance);
        QCOMPARE(v.frontPointCount(), 4);
        QCOMPARE(v.dominatedPointCount(), 3);
        // Memory is plotted in percent.
        QVERIFY(allPoints(v, true).contains(QPointF(120, 60)));
        QVERIFY(allPoints(v, false).contains(QPointF(160, 80)));
        // Colour buckets by B over [0.05, 0.40]: plan 5 (B = .05) -> bucket 0;
        // plan 6 (B = .40) -> 8 -> clamped 7; plan 3 (B = .30): (.25 / .35) * 8 = 5.7 -> 5.
        QVERIFY(v.frontSeries(0)->points().contains(QPointF(200, 95)));
        QVERIFY(v.dominatedSeries(7)->points().contains(QPointF(160, 80)));
        QVERIFY(v.frontSeries(5)->points().contains(QPointF(150, 50)));
        // 2-D front of (T, M): plans 1 (100, 90), 2 (120, 60), 3 (150, 50) joined by steps.
        const QList<QPointF> expected
            = {QPointF(100, 90), QPointF(120, 90), QPointF(120, 60), QPointF(150, 60), QPointF(150, 50)};
        QCOMPARE(v.stepLine()->points(), expected);
        // Axis titles carry units.
        QVERIFY(v.chart()->axes(Qt::Horizontal).first()->titleText().contains("ms"));
        QVERIFY(v.chart()->axes(Qt::Vertical).first()->titleText().contains("%"));
    }

    /// The "N plans, K on the front" count never shows a text cut on the left: narrow panes get
    /// the short "K on the front", elided at the right if even that does not fit; the full text
    /// stays in the tooltip.
    void countLabelFitsNarrowPanes()
    {
        ParetoChartView v;
        v.setPoints(handMade());
        QLabel *count = nullptr;
        for (QLabel *l : v.findChildren<QLabel *>())
            if (l->toolTip().contains(QLatin1String("on the front")))
                count = l;
        QVERIFY(count);
        QCOMPARE(count->toolTip(), QStringLiteral("7 plans, 4 on the front"));
        v.resize(900, 500);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QTRY_COMPARE(count->text(), QStringLiteral("7 plans, 4 on the front"));
        const QString shortText = QStringLiteral("4 on the front");
        bool sawShort = false;
        for (int width = 900; width >= 300; width -= 10) {
            v.resize(width, 500);
            QTRY_VERIFY(count->fontMetrics().horizontalAdvance(count->text()) <= count->contentsRect().width());
            const int room = count->contentsRect().width();
            if (room >= count->fontMetrics().horizontalAdvance(shortText)) {
                QVERIFY2(count->text() == count->toolTip() || count->text() == shortText,
                         qPrintable(QString("%1 px: '%2'").arg(room).arg(count->text())));
                sawShort = sawShort || count->text() == shortText;
            }
        }
        QVERIFY(sawShort); // some width between full and nothing showed the short form
    }

    void axisSwitchChangesSeries()
    {
        ParetoChartView v;
        v.setPoints(handMade());
        QSignalSpy axes(&v, &ParetoChartView::axesChanged);
        v.setAxes(Metric::Time, Metric::Balance);
        QCOMPARE(axes.count(), 1);
        QCOMPARE(v.colourMetric(), Metric::Memory);
        QVERIFY(allPoints(v, true).contains(QPointF(200, 0.05)));
        QVERIFY(!allPoints(v, true).contains(QPointF(120, 60)));
        // 2-D front of (T, B): plan 1 (100, .10) then plan 5 (200, .05).
        QCOMPARE(v.stepLine()->points(), (QList<QPointF> {QPointF(100, 0.1), QPointF(200, 0.1), QPointF(200, 0.05)}));
        QVERIFY(v.chart()->axes(Qt::Vertical).first()->titleText().contains("CV"));
        // x == y is resolved, never a degenerate chart.
        v.setAxes(Metric::Memory, Metric::Memory);
        QVERIFY(v.xMetric() != v.yMetric());
        QCOMPARE(v.xMetric(), Metric::Memory);
        // Point counts do not depend on the projection.
        QCOMPARE(v.frontPointCount(), 4);
        QCOMPARE(v.dominatedPointCount(), 3);
    }

    void clickSelectsPlan()
    {
        ParetoChartView v;
        v.resize(800, 560);
        v.setPoints(handMade());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QSignalSpy selected(&v, &ParetoChartView::planSelected);
        for (quint32 id : {3u, 6u, 1u}) {
            const auto pos = v.viewportPosOf(id);
            QVERIFY(pos);
            QVERIFY2(v.chartView()->viewport()->rect().contains(*pos), "point outside the view");
            QTest::mouseClick(v.chartView()->viewport(), Qt::LeftButton, {}, *pos + QPoint(2, -2));
            QCOMPARE(selected.count(), 1);
            QCOMPARE(selected.takeFirst().at(0).value<quint32>(), id);
            QCOMPARE(v.selectedPlan(), id);
            QCOMPARE(v.selectedSeries()->count(), 1);
        }
        // Far from every point: nothing happens, the selection stays.
        QTest::mouseClick(v.chartView()->viewport(), Qt::LeftButton, {}, QPoint(3, 3));
        QCOMPARE(selected.count(), 0);
        QCOMPARE(v.selectedPlan(), 1u);
        // Selection from outside rings the point but does not echo a signal.
        v.setSelectedPlan(5);
        QCOMPARE(v.selectedSeries()->points(), (QList<QPointF> {QPointF(200, 95)}));
        QCOMPARE(selected.count(), 0);
        v.setSelectedPlan(999); // unknown id clears
        QCOMPARE(v.selectedSeries()->count(), 0);
        // New points keep a selection that still exists.
        v.setSelectedPlan(2);
        v.setPoints(handMade());
        QCOMPARE(v.selectedPlan(), 2u);
        v.setPoints({});
        QCOMPARE(v.selectedPlan(), 0u);
        QCOMPARE(v.frontPointCount(), 0);
    }

    void hoverReportsPlan()
    {
        ParetoChartView v;
        v.resize(800, 560);
        v.setPoints(handMade());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QSignalSpy hovered(&v, &ParetoChartView::planHovered);
        const auto pos = v.viewportPosOf(4);
        QVERIFY(pos);
        QTest::mouseMove(v.chartView()->viewport(), *pos);
        QTRY_COMPARE(hovered.count(), 1);
        QCOMPARE(hovered.at(0).at(0).value<quint32>(), 4u);
    }

    /// Times of 10 s and more are plotted in seconds: the axis reads "(s)", the points sit at
    /// ms / 1000, ticks are 1-2-5 steps and the tooltip / legend texts say "s".
    void timeAxisInSeconds()
    {
        ParetoChartView v;
        v.setPoints(handMade());
        QVERIFY(!v.timeInSeconds());
        QVERIFY(v.chart()->axes(Qt::Horizontal).first()->titleText().contains("(ms)"));
        QVector<PlanPoint> slow = handMade();
        for (auto &p : slow)
            p.timeMs *= 7000.0; // 700,000 .. 1,400,000 ms
        v.setPoints(slow);
        QVERIFY(v.timeInSeconds());
        QVERIFY(v.chart()->axes(Qt::Horizontal).first()->titleText().contains("(s)"));
        QVERIFY(allPoints(v, true).contains(QPointF(840, 60))); // plan 2: 840,000 ms, 60 %
        const auto *x = qobject_cast<QValueAxis *>(v.chart()->axes(Qt::Horizontal).first());
        QVERIFY(x);
        // Padded 665 .. 1435 s, snapped to the 200 s step of a ~770 s span: 600 .. 1600.
        QCOMPARE(x->min(), 600.0);
        QCOMPARE(x->max(), 1600.0);
        QCOMPARE(x->tickInterval(), 200.0);
        QCOMPARE(x->labelFormat(), QStringLiteral("%.0f"));
        QCOMPARE(formatMetric(Metric::Time, 1400000.0), QStringLiteral("1400.0 s"));
        QCOMPARE(formatMetric(Metric::Time, 12346.0), QStringLiteral("12.35 s"));
        QCOMPARE(formatMetric(Metric::Time, 9999.0), QStringLiteral("9999.0 ms"));
    }

    /// Wheel zoom about the pointer, rubber-band zoom, Shift+drag pan, Front, Home / double-click
    /// reset, and new points reset the zoom.
    void zoomPanReset()
    {
        ParetoChartView v;
        v.resize(800, 560);
        QVector<PlanPoint> plans = handMade();
        plans.append(plan(8, 5000, 0.99, 0.45, false)); // a slow dominated outlier
        v.setPoints(plans);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QTest::qWait(20);
        QWidget *vp = v.chartView()->viewport();
        const QRectF full = v.viewRange();
        QCOMPARE(full, v.fullRange());
        QVERIFY(!v.isZoomed());
        QVERIFY(full.right() >= 5000.0);

        // Wheel: one notch in about plan 2 zooms by 1.25 and keeps plan 2 under the pointer.
        const QPoint at2 = *v.viewportPosOf(2);
        const QPointF before = v.valueAt(at2);
        QWheelEvent wheel(QPointF(at2), QPointF(vp->mapToGlobal(at2)), QPoint(), QPoint(0, 120), Qt::NoButton,
                          Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(vp, &wheel);
        QVERIFY(v.isZoomed());
        QCOMPARE(v.viewRange().width(), full.width() / 1.25);
        QCOMPARE(v.viewRange().height(), full.height() / 1.25);
        // The value under the pointer keeps its place in the shown range (zoom about the pointer).
        const QRectF z = v.viewRange();
        QVERIFY2(std::abs((before.x() - z.left()) / z.width() - (before.x() - full.left()) / full.width()) < 1e-9,
                 "zoom is not about the pointer");
        QVERIFY(std::abs((before.y() - z.top()) / z.height() - (before.y() - full.top()) / full.height()) < 1e-9);

        // Home resets.
        QTest::keyClick(v.chartView(), Qt::Key_Home);
        QVERIFY(!v.isZoomed());
        QCOMPARE(v.viewRange(), full);

        // Front: the outlier is out of view, every front plan in it.
        QVERIFY(v.zoomToFront());
        QVERIFY(v.viewRange().right() < 1000.0);
        for (const auto &p : plans) {
            if (p.onFront)
                QVERIFY(v.viewRange().contains(QPointF(p.timeMs, p.peakMemoryFraction * 100.0)));
        }
        QVERIFY(!v.viewRange().contains(QPointF(5000, 99)));
        // Clicking a plan still selects it in the zoomed view.
        QSignalSpy selected(&v, &ParetoChartView::planSelected);
        QTest::mouseClick(vp, Qt::LeftButton, {}, *v.viewportPosOf(3));
        QCOMPARE(selected.count(), 1);
        QCOMPARE(v.selectedPlan(), 3u);

        // Rubber band from empty space around plans 1 (100, 90) and 7 (110, 95) only.
        v.resetZoom();
        const QPoint p1 = *v.viewportPosOf(1), p7 = *v.viewportPosOf(7);
        const QPoint from(std::min(p1.x(), p7.x()) - 10, std::min(p1.y(), p7.y()) - 10);
        const QPoint to(std::max(p1.x(), p7.x()) + 10, std::max(p1.y(), p7.y()) + 10);
        QVERIFY(!v.planAt(from));
        QTest::mousePress(vp, Qt::LeftButton, {}, from);
        QTest::mouseMove(vp, to);
        QTest::mouseRelease(vp, Qt::LeftButton, {}, to);
        QVERIFY(v.isZoomed());
        QVERIFY(v.viewRange().contains(QPointF(100, 90)));
        QVERIFY(v.viewRange().contains(QPointF(110, 95)));
        QVERIFY(!v.viewRange().contains(QPointF(120, 60)));
        QCOMPARE(selected.count(), 1); // the drag selected nothing

        // Shift+drag pans: 100 px to the right moves the range left by 100 px worth of values.
        const QRectF r0 = v.viewRange();
        const double perPx = r0.width() / v.chart()->plotArea().width();
        const QPoint c = vp->rect().center();
        QTest::mousePress(vp, Qt::LeftButton, Qt::ShiftModifier, c);
        QTest::mouseMove(vp, c + QPoint(100, 0));
        QTest::mouseRelease(vp, Qt::LeftButton, Qt::ShiftModifier, c + QPoint(100, 0));
        QVERIFY(std::abs(v.viewRange().left() - (r0.left() - 100 * perPx)) < perPx);
        QCOMPARE(v.viewRange().width(), r0.width());

        // Double click on empty space resets; new points reset too.
        QTest::mouseDClick(vp, Qt::LeftButton, {}, QPoint(3, 3));
        QVERIFY(!v.isZoomed());
        v.zoomBy(2.0, full.center());
        QVERIFY(v.isZoomed());
        const QRectF zoomed = v.viewRange();
        v.setPoints(plans, ParetoChartView::KeepView); // the same results re-scored (a slider)
        QVERIFY(v.isZoomed());
        QCOMPARE(v.viewRange(), zoomed);
        v.setPoints(plans);
        QVERIFY(!v.isZoomed());
        // Zooming out past the whole range is a reset.
        v.zoomBy(0.5, full.center());
        QVERIFY(!v.isZoomed());
        QCOMPARE(v.viewRange(), full);
    }

    void manyPoints()
    {
        ParetoChartView v;
        v.resize(900, 600);
        const QVector<PlanPoint> plans = demoPlans(30000);
        QElapsedTimer timer;
        timer.start();
        v.setPoints(plans);
        const qint64 setMs = timer.restart();
        const QPixmap pm = v.grab();
        const qint64 paintMs = timer.restart();
        const auto hit = v.planAt(QPoint(400, 300), 20);
        const qint64 hitUs = timer.nsecsElapsed() / 1000;
        qInfo("30,000 points: setPoints %lld ms, first grab %lld ms, planAt %lld us", setMs, paintMs, hitUs);
        Q_UNUSED(hit);
        QCOMPARE(v.frontPointCount() + v.dominatedPointCount(), 30000);
        QVERIFY(!pm.isNull());
    }

    void screenshot()
    {
        const QString dir = qEnvironmentVariable("MEMX_SCREENSHOT_DIR");
        if (dir.isEmpty())
            QSKIP("set MEMX_SCREENSHOT_DIR to write screenshots");
        QDir().mkpath(dir);
        ParetoChartView v;
        v.resize(v.sizeHint());
        const QVector<PlanPoint> plans = demoPlans(5000);
        v.setPoints(plans);
        // Select the best-scored front plan, as the workbench does after a search.
        quint32 best = 0;
        double bestScore = 1e9;
        for (const auto &p : plans) {
            if (p.onFront && p.score < bestScore) {
                bestScore = p.score;
                best = p.id;
            }
        }
        v.setSelectedPlan(best);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QTest::qWait(50); // Qt Charts lays out axis labels from the event loop
        QVERIFY(v.grab().save(dir + "/pareto-time-memory.png"));
        v.setAxes(Metric::Time, Metric::Balance);
        QTest::qWait(50);
        QVERIFY(v.grab().save(dir + "/pareto-time-balance.png"));
    }
};

QTEST_MAIN(TestParetoChartView)
#include "tst_paretochartview.moc"
