// PipelineTimeline: the 1F1B timeline of a real estimate (rows = stages, axis origin, hit tests,
// tooltips, caption), a 64-stage x 1024-micro-batch schedule, clear() and refused estimates.
#include "memx/cost/costmodel.h"
#include "memx/io/formats.h"
#include "memx/ui/pipelinetimeline.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QHelpEvent>
#include <QImage>
#include <QToolTip>
#include <QtTest>

#include <map>

using namespace memx;
using memx::ui::PipelineTimeline;
using Kind = PipelineOp::Kind;

namespace {

const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters";

/// One stage per entry of `stages` (node, tp), consecutive GPUs per node, equal layer split;
/// global batch = m x micro-batch 1.
Plan plan(const Model &model, const std::vector<std::pair<std::string, int>> &stages, int m,
          RecomputeMethod rc = RecomputeMethod::None)
{
    Plan p;
    p.globalBatch = m;
    std::map<std::string, int> nextGpu;
    const int n = int(stages.size());
    int layer = 0;
    for (int s = 0; s < n; ++s) {
        Stage st;
        st.firstLayer = layer;
        st.layerCount = model.shape.layers / n + (s < model.shape.layers % n ? 1 : 0);
        layer += st.layerCount;
        st.recompute.method = rc;
        Replica r;
        r.node = stages[size_t(s)].first;
        r.tp = stages[size_t(s)].second;
        r.microBatch = 1;
        for (int t = 0; t < r.tp; ++t)
            r.gpus.push_back(nextGpu[r.node]++);
        st.replicas.push_back(r);
        p.stages.push_back(st);
    }
    return p;
}

/// gpt3-1.3b in 4 stages of TP 2 on the 8 x H100 node, m = 8.
PlanEstimate fourStages(RecomputeMethod rc = RecomputeMethod::None)
{
    const Cluster c = loadCluster(kSamples + "/h100-8x.json");
    const Model model = resolveModel("gpt3-1.3b");
    const Plan p = plan(model, {{"dgx-h100", 2}, {"dgx-h100", 2}, {"dgx-h100", 2}, {"dgx-h100", 2}}, 8, rc);
    return estimatePlan(p, c, model, nullptr, CostOptions {});
}

/// gpt3-6.7b in 16 stages of one GPU on the 20-GPU NVIDIA + AMD sample (A100, MI250X, H100), m = 64.
PlanEstimate sixteenStages()
{
    const Cluster c = loadCluster(kSamples + "/paper-20gpu-nvidia-amd.json");
    const Model model = resolveModel("gpt3-6.7b");
    std::vector<std::pair<std::string, int>> stages;
    for (int i = 0; i < 4; ++i)
        stages.emplace_back("a100-0", 1);
    for (int i = 0; i < 8; ++i)
        stages.emplace_back("mi250x", 1);
    for (int i = 0; i < 4; ++i)
        stages.emplace_back("h100", 1);
    return estimatePlan(plan(model, stages, 64, RecomputeMethod::Full), c, model, nullptr, CostOptions {});
}

/// A synthetic estimate: `p` stages of slightly different steps, `m` micro-batches, 0.1 ms sends.
PlanEstimate synthetic(int p, int m)
{
    PlanEstimate e;
    e.microBatches = m;
    for (int i = 0; i < p; ++i) {
        StageEstimate s;
        s.stage = i;
        s.forwardMs = 1.0 + 0.01 * (i % 7);
        s.backwardMs = 2.0 + 0.02 * (i % 5);
        s.recomputeMs = 0.5;
        s.stepMs = s.forwardMs + s.backwardMs + s.recomputeMs;
        s.p2pMs = i + 1 < p ? 0.1 : 0.0;
        e.stages.push_back(s);
    }
    e.pipelineMs = 1000;
    return e;
}

} // namespace

class TestPipelineTimeline : public QObject {
    Q_OBJECT
private slots:
    void rowsAxisAndHitTests()
    {
        const PlanEstimate e = fourStages();
        PipelineTimeline w;
        w.setEstimate(e);
        w.resize(900, w.sizeHint().height());
        QVERIFY(!w.grab().isNull());
        const PipelineSchedule &s = w.schedule();
        QCOMPARE(s.stages, 4);
        QCOMPARE(s.microBatches, 8);
        QCOMPARE(w.stageLabels().size(), 4);
        QCOMPARE(w.stageLabels()[0], QStringLiteral("S0 \u00b7 h100-sxm \u00d72"));
        // Stage 0's first forward starts at the axis origin; the last backward ends at the right end.
        const QRectF plot = w.plotArea();
        QCOMPARE(w.opRect(s.opIndex(0, 0, Kind::Forward)).left(), plot.left());
        QVERIFY(std::abs(w.opRect(s.opIndex(0, 7, Kind::Backward)).right() - plot.right()) < 1e-6);
        // Rows top to bottom, every op inside its row; the op under each box's centre is that op.
        for (int k = 0; k < int(s.ops.size()); ++k) {
            const QRectF r = w.opRect(k);
            const double rowH = plot.height() / 4;
            QVERIFY(r.top() >= plot.top() + s.ops[size_t(k)].stage * rowH);
            QVERIFY(r.bottom() <= plot.top() + (s.ops[size_t(k)].stage + 1) * rowH);
            QVERIFY(r.width() >= 1);
            QCOMPARE(w.opAt(r.center().toPoint()), k);
        }
        QVERIFY(w.minimumSizeHint().height() >= 4 * 18);
        QVERIFY(w.sizeHint().height() <= w.height());
        QCOMPARE(w.opAt(QPoint(1, 1)), -1);
        QCOMPARE(w.opRect(-1), QRectF());
        QCOMPARE(w.opRect(int(s.ops.size())), QRectF());
        // The last stage waits for the fill: its start is idle.
        const QRectF first3 = w.opRect(s.opIndex(3, 0, Kind::Forward));
        const QPoint bubble(int(plot.left() + 2), int(first3.center().y()));
        QCOMPARE(w.opAt(bubble), -1);
        QVERIFY2(w.toolTipAt(bubble).startsWith(QStringLiteral("stage 3 \u00b7 idle 0.0")),
                 qPrintable(w.toolTipAt(bubble)));
    }

    void profilerColours()
    {
        PipelineTimeline w;
        w.setEstimate(fourStages());
        w.resize(900, w.sizeHint().height());
        const QImage img = w.grab().toImage();
        const PipelineSchedule &s = w.schedule();
        const QRectF f = w.opRect(s.opIndex(1, 2, Kind::Forward)), b = w.opRect(s.opIndex(1, 2, Kind::Backward));
        const QColor fc = img.pixelColor(QPoint(int(f.left() + 3), int(f.top() + 3)));
        const QColor bc = img.pixelColor(QPoint(int(b.right() - 3), int(b.top() + 3)));
        QVERIFY2(fc.blue() > fc.red() && fc.blue() > fc.green(), qPrintable(fc.name())); // forward blue
        QVERIFY2(bc.green() > bc.red() && bc.green() > bc.blue(), qPrintable(bc.name())); // backward green
    }

    void tooltips()
    {
        const PlanEstimate e = fourStages(RecomputeMethod::Full);
        PipelineTimeline w;
        w.setEstimate(e);
        w.resize(900, w.sizeHint().height());
        const PipelineSchedule &s = w.schedule();
        const int k = s.opIndex(2, 5, Kind::Backward);
        const PipelineOp &op = s.ops[size_t(k)];
        QVERIFY(op.recomputeMs > 0);
        const QString expected
            = QStringLiteral("stage 2 \u00b7 micro-batch 5 \u00b7 backward %1\u2013%2 ms (recompute %3 ms)")
                  .arg(op.startMs, 0, 'f', 1)
                  .arg(op.endMs, 0, 'f', 1)
                  .arg(op.recomputeMs, 0, 'f', op.recomputeMs >= 1 ? 1 : 2);
        QCOMPARE(w.opToolTip(k), expected);
        QVERIFY(w.opToolTip(s.opIndex(0, 0, Kind::Forward)).contains(QStringLiteral("forward")));
        QVERIFY(!w.opToolTip(s.opIndex(0, 0, Kind::Forward)).contains(QStringLiteral("recompute")));
        QCOMPARE(w.opToolTip(-1), QString());
        // A real tooltip event over the box.
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const QPoint pos = w.opRect(k).center().toPoint();
        QHelpEvent help(QEvent::ToolTip, pos, w.mapToGlobal(pos));
        QApplication::sendEvent(&w, &help);
        QTRY_COMPARE(QToolTip::text(), expected);
        QToolTip::hideText();
    }

    void caption()
    {
        const PlanEstimate e = fourStages();
        PipelineTimeline w;
        QCOMPARE(w.caption(), QString());
        w.setEstimate(e);
        const QString c = w.caption();
        QVERIFY2(c.contains(QStringLiteral("4 stages \u00d7 8 micro-batches")), qPrintable(c));
        QVERIFY(c.contains(QStringLiteral("makespan %1 ms").arg(w.schedule().makespanMs, 0, 'f', 1)));
        QVERIFY(c.contains(QStringLiteral("bubble %1 %").arg(w.schedule().bubbleFraction() * 100, 0, 'f', 1)));
        // The estimate's blocking sends make its pipeline a little longer: both are shown.
        QVERIFY(c.contains(QStringLiteral("the estimate's pipeline %1 ms").arg(e.pipelineMs, 0, 'f', 1)));
        QVERIFY(!c.contains(QStringLiteral("interleaved")));
        w.setEstimate(e, {}, 2);
        QVERIFY(w.caption().contains(QStringLiteral("interleaved v=2 drawn as 1F1B")));
        // Without sends the two agree.
        PlanEstimate same = synthetic(3, 4);
        for (StageEstimate &st : same.stages) {
            st.forwardMs = 1.0, st.backwardMs = 2.0, st.recomputeMs = 0.5, st.stepMs = 3.5;
            st.p2pMs = 0;
        }
        same.pipelineMs = (4 + 3 - 1) * 3.5;
        w.setEstimate(same, {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")});
        QVERIFY2(w.caption().contains(QStringLiteral("(= the estimate's pipeline time)")), qPrintable(w.caption()));
        QCOMPARE(w.stageLabels(), QStringList({QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")}));
        // Labels of the wrong count fall back to the defaults (no GPUs in a synthetic estimate).
        w.setEstimate(same, {QStringLiteral("a")});
        QCOMPARE(w.stageLabels()[2], QStringLiteral("Stage 2"));
    }

    void largeScheduleStaysFast()
    {
        PipelineTimeline w;
        w.setEstimate(synthetic(64, 1024));
        QCOMPARE(w.schedule().ops.size(), size_t(2 * 64 * 1024));
        w.resize(1200, w.minimumSizeHint().height());
        QVERIFY(w.minimumSizeHint().height() >= 64 * 18);
        QElapsedTimer t;
        t.start();
        const QImage img = w.grab().toImage();
        const qint64 ms = t.elapsed();
        qInfo("64 x 1024 grab: %lld ms", ms);
        QVERIFY(!img.isNull());
        QVERIFY2(ms < 3000, qPrintable(QString::number(ms)));
        // Ops far below a pixel still hit-test.
        const int k = w.schedule().opIndex(40, 500, Kind::Backward);
        QCOMPARE(w.opAt(w.opRect(k).center().toPoint()) >= 0, true);
        // A small window too.
        w.resize(300, 200);
        QVERIFY(!w.grab().isNull());
    }

    void sharedAxisSpan()
    {
        PipelineTimeline w;
        w.setEstimate(fourStages());
        w.resize(900, w.sizeHint().height());
        const PipelineSchedule &s = w.schedule();
        const double makespan = s.makespanMs;
        QCOMPARE(w.axisSpanMs(), makespan);
        const int last = s.opIndex(0, 7, Kind::Backward);
        const QRectF plot = w.plotArea();
        QVERIFY(std::abs(w.opRect(last).right() - plot.right()) < 1e-6);
        // Twice the makespan along the axis: the schedule ends half-way (worked by hand).
        w.setAxisSpanMs(2 * makespan);
        QCOMPARE(w.axisSpanMs(), 2 * makespan);
        QVERIFY(std::abs(w.opRect(last).right() - (plot.left() + plot.width() / 2)) < 1e-6);
        QCOMPARE(w.opAt(w.opRect(last).center().toPoint()), last);
        // Right of the makespan there is neither an operation nor an idle gap.
        const QPoint beyond(int(plot.left() + plot.width() * 0.75), int(w.opRect(last).center().y()));
        QCOMPARE(w.opAt(beyond), -1);
        QCOMPARE(w.toolTipAt(beyond), QString());
        QVERIFY(!w.grab().isNull());
        // A span shorter than the makespan (or nonsense) leaves the makespan; it survives setEstimate.
        w.setAxisSpanMs(makespan / 3);
        QCOMPARE(w.axisSpanMs(), makespan);
        w.setAxisSpanMs(std::nan(""));
        QCOMPARE(w.axisSpanMs(), makespan);
        w.setAxisSpanMs(3 * makespan);
        w.setEstimate(fourStages());
        QCOMPARE(w.axisSpanMs(), 3 * makespan);
    }

    void clearAndRefused()
    {
        PipelineTimeline w;
        w.resize(600, 300);
        QVERIFY(!w.grab().isNull()); // empty state
        w.setEstimate(fourStages());
        QVERIFY(!w.schedule().ops.empty());
        w.clear();
        QVERIFY(w.schedule().ops.empty());
        QCOMPARE(w.schedule().stages, 0);
        QVERIFY(w.stageLabels().isEmpty());
        QCOMPARE(w.caption(), QString());
        QCOMPARE(w.opAt(QPoint(300, 150)), -1);
        QCOMPARE(w.opRect(0), QRectF());
        QCOMPARE(w.toolTipAt(QPoint(300, 150)), QString());
        QVERIFY(!w.grab().isNull());
        // An estimate the scheduler refuses shows why.
        PlanEstimate bad = synthetic(2, 4);
        bad.microBatches = 0;
        w.setEstimate(bad);
        QVERIFY(w.schedule().ops.empty());
        QVERIFY2(w.error().contains(QStringLiteral("microBatches")), qPrintable(w.error()));
        QVERIFY(!w.grab().isNull());
        w.setEstimate(fourStages());
        QCOMPARE(w.error(), QString());
    }

    void screenshot()
    {
        const QString dir = qEnvironmentVariable("MEMX_SCREENSHOT_DIR");
        if (dir.isEmpty())
            QSKIP("set MEMX_SCREENSHOT_DIR to write screenshots");
        QDir().mkpath(dir);
        PipelineTimeline w;
        w.setEstimate(fourStages(RecomputeMethod::Full));
        w.resize(900, w.sizeHint().height());
        QVERIFY(w.grab().save(dir + "/timeline-4x8.png"));
        w.setEstimate(sixteenStages());
        w.resize(1000, w.sizeHint().height());
        QVERIFY(w.grab().save(dir + "/timeline-16x64.png"));
        w.resize(w.minimumSizeHint());
        QVERIFY(w.grab().save(dir + "/timeline-16x64-min.png"));
        w.setEstimate(synthetic(64, 1024));
        w.resize(1200, w.minimumSizeHint().height());
        QVERIFY(w.grab().save(dir + "/timeline-64x1024.png"));
        QPalette dark;
        dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
        dark.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
        dark.setColor(QPalette::Text, QColor(0xe0, 0xe0, 0xe0));
        dark.setColor(QPalette::Mid, QColor(0x70, 0x70, 0x70));
        w.setPalette(dark);
        w.setEstimate(fourStages(RecomputeMethod::Full));
        w.resize(900, w.sizeHint().height());
        QVERIFY(w.grab().save(dir + "/timeline-4x8-dark.png"));
    }
};

QTEST_MAIN(TestPipelineTimeline)
#include "tst_pipelinetimeline.moc"
