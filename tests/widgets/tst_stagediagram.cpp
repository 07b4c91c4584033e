#include "memx/ui/memorybarchart.h"
#include "memx/ui/paretochartview.h"
#include "memx/ui/stagediagram.h"

#include <QChartView>
#include <QDir>
#include <QHash>
#include <QImage>
#include <QtTest>

using namespace memx::ui;

namespace {

ReplicaInfo replica(QString node, QList<int> gpus, QString device, QString vendor, int mb)
{
    ReplicaInfo r;
    r.node = std::move(node);
    r.gpus = std::move(gpus);
    r.device = std::move(device);
    r.vendor = std::move(vendor);
    r.tp = int(r.gpus.size());
    r.microBatch = mb;
    return r;
}

StageInfo stage(int index, int first, int count, QString recompute, QList<ReplicaInfo> replicas, double computeMs,
                double commMs)
{
    StageInfo s;
    s.index = index;
    s.firstLayer = first;
    s.layerCount = count;
    s.recompute = std::move(recompute);
    s.replicas = std::move(replicas);
    s.computeMs = computeMs;
    s.commMs = commMs;
    return s;
}

// A 4-stage plan of a 32-layer model on the paper's 20-GPU cluster (A100-40 x 8, MI250X x 8, H100 x 4).
QVector<StageInfo> demoStages()
{
    return {
        stage(0, 0, 6, "full",
              {replica("a100-0", {0, 1}, "A100-40", "nvidia", 1), replica("a100-0", {2, 3}, "A100-40", "nvidia", 1)},
              212.4, 18.3),
        stage(1, 6, 7, "selective",
              {replica("a100-1", {0, 1}, "A100-40", "nvidia", 1), replica("a100-1", {2, 3}, "A100-40", "nvidia", 1)},
              219.8, 17.9),
        stage(2, 13, 9, "none",
              {replica("mi250x", {0, 1}, "MI250X", "amd", 1), replica("mi250x", {2, 3}, "MI250X", "amd", 1),
               replica("mi250x", {4, 5}, "MI250X", "amd", 1), replica("mi250x", {6, 7}, "MI250X", "amd", 1)},
              224.1, 26.5),
        stage(3, 22, 10, "none",
              {replica("h100", {0, 1}, "H100", "nvidia", 2), replica("h100", {2, 3}, "H100", "nvidia", 2)}, 205.0,
              15.2),
    };
}

bool imageHasColour(const QImage &img, const QColor &c)
{
    for (int y = 0; y < img.height(); ++y) {
        for (int x = 0; x < img.width(); ++x) {
            if (img.pixelColor(x, y).rgb() == c.rgb())
                return true;
        }
    }
    return false;
}

} // namespace

class TestStageDiagram : public QObject {
    Q_OBJECT
private slots:
    void sizeHintGrows()
    {
        StageDiagram d;
        const QSize empty = d.sizeHint();
        QVERIFY(empty.width() > 0 && empty.height() > 0);
        QVector<StageInfo> stages = demoStages();
        d.setStages(stages.mid(0, 2));
        const QSize two = d.sizeHint();
        d.setStages(stages);
        const QSize four = d.sizeHint();
        QVERIFY(four.width() > two.width());
        QVERIFY(four.height() > two.height()); // DP 4 on stage 2 needs taller columns than DP 2
        QVERIFY(two.width() >= empty.width());
        // Columns left to right, no overlap.
        d.resize(d.sizeHint());
        for (int i = 0; i + 1 < stages.size(); ++i)
            QVERIFY(d.stageRect(i).right() < d.stageRect(i + 1).left());
        QCOMPARE(d.stageAt(d.stageRect(2).center()), 2);
        QCOMPARE(d.stageAt(QPoint(1, 1)), -1);
    }

    /// Context parallelism and the interleaved schedule show in each stage's parallel line
    /// ("TP 1 x CP 8 x DP 1 - 18 chunks"), and the column is wide enough for it (no clipping).
    void contextParallelAndChunksFit()
    {
        StageDiagram d;
        QVector<StageInfo> stages = demoStages().mid(0, 1);
        stages[0].replicas = {replica("h100", {0, 1, 2, 3, 4, 5, 6, 7}, "H100", "nvidia", 1)};
        stages[0].replicas[0].tp = 1;
        stages[0].contextParallel = 8;
        stages[0].virtualStages = 18;
        d.setStages(stages);
        d.resize(d.sizeHint());
        const QString text = QStringLiteral("TP 1 \u00d7 CP 8 \u00d7 DP 1 \u00b7 18 chunks");
        QVERIFY(d.stageRect(0).width() > QFontMetrics(d.font()).horizontalAdvance(text));
    }

    void paintsVendorColours()
    {
        StageDiagram d;
        d.setStages(demoStages());
        d.resize(d.sizeHint());
        QImage img(d.size(), QImage::Format_ARGB32);
        img.fill(Qt::white);
        d.render(&img);
        // The solid vendor strip of each replica box is painted in the exact vendor colour.
        QVERIFY(imageHasColour(img, vendorColor("amd")));
        QVERIFY(imageHasColour(img, vendorColor("nvidia")));
        // Without AMD replicas no AMD-red appears.
        QVector<StageInfo> nvidiaOnly = demoStages();
        nvidiaOnly.remove(2);
        d.setStages(nvidiaOnly);
        img.fill(Qt::white);
        d.render(&img);
        QVERIFY(!imageHasColour(img, vendorColor("amd")));
        // Empty and degenerate input paint without crashing.
        d.setStages({});
        d.render(&img);
        d.setStages({stage(0, 0, 0, QString(), {}, 0, 0)});
        d.render(&img);
    }

    // Issue #7: clicking a Pareto point updates the memory bars and the plan detail, wired the way
    // the main window does it (planSelected -> look up that plan's bars and stages).
    void paretoClickUpdatesBarsAndDetail()
    {
        QVector<PlanPoint> points;
        QHash<quint32, QVector<GpuMemoryBar>> barsOf;
        QHash<quint32, QVector<StageInfo>> stagesOf;
        for (quint32 id = 1; id <= 3; ++id) {
            PlanPoint p;
            p.id = id;
            p.timeMs = 100.0 * id;
            p.peakMemoryFraction = 1.0 - 0.2 * id;
            p.imbalance = 0.1;
            p.onFront = true;
            p.summary = QStringLiteral("PP%1").arg(id);
            points << p;
            QVector<GpuMemoryBar> bars;
            for (quint32 g = 0; g < id * 2; ++g) {
                GpuMemoryBar b;
                b.node = "n0";
                b.gpuIndex = int(g);
                b.vendor = "nvidia";
                b.capacityBytes = 40e9;
                b.paramsBytes = 10e9 * id;
                bars << b;
            }
            barsOf.insert(id, bars);
            stagesOf.insert(id, demoStages().mid(0, int(id)));
        }
        ParetoChartView chart;
        MemoryBarChart memory;
        StageDiagram detail;
        QObject::connect(&chart, &ParetoChartView::planSelected, &memory,
                         [&](quint32 id) { memory.setBars(barsOf.value(id)); });
        QObject::connect(&chart, &ParetoChartView::planSelected, &detail,
                         [&](quint32 id) { detail.setStages(stagesOf.value(id)); });
        chart.resize(700, 500);
        chart.setPoints(points);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        for (quint32 id : {2u, 3u, 1u}) {
            const auto pos = chart.viewportPosOf(id);
            QVERIFY(pos);
            QTest::mouseClick(chart.chartView()->viewport(), Qt::LeftButton, {}, *pos);
            QCOMPARE(memory.barCount(), int(id * 2));
            QCOMPARE(detail.stages().size(), qsizetype(id));
        }
    }

    void screenshot()
    {
        const QString dir = qEnvironmentVariable("MEMX_SCREENSHOT_DIR");
        if (dir.isEmpty())
            QSKIP("set MEMX_SCREENSHOT_DIR to write screenshots");
        QDir().mkpath(dir);
        StageDiagram d;
        d.setStages(demoStages());
        d.resize(d.sizeHint());
        d.show();
        QVERIFY(QTest::qWaitForWindowExposed(&d));
        QVERIFY(d.grab().save(dir + "/stage-diagram.png"));
    }
};

QTEST_MAIN(TestStageDiagram)
#include "tst_stagediagram.moc"
