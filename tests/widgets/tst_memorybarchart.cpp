#include "memx/ui/memorybarchart.h"

#include <QDir>
#include <QImage>
#include <QtTest>

using namespace memx::ui;

namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

GpuMemoryBar bar(QString node, int gpu, QString vendor, double capGiB, double paramsGiB, double gradsGiB, double optGiB,
                 double actGiB, double overheadGiB, int stage = 0)
{
    GpuMemoryBar b;
    b.node = std::move(node);
    b.gpuIndex = gpu;
    b.vendor = std::move(vendor);
    b.device = b.vendor == "amd" ? "MI250X" : "A100-40";
    b.stage = stage;
    b.capacityBytes = capGiB * GiB;
    b.paramsBytes = paramsGiB * GiB;
    b.gradsBytes = gradsGiB * GiB;
    b.optimizerBytes = optGiB * GiB;
    b.activationBytes = actGiB * GiB;
    b.overheadBytes = overheadGiB * GiB;
    b.oom = b.usedBytes() > b.capacityBytes;
    b.riskOfOom = !b.oom && b.usedBytes() > 0.92 * b.capacityBytes;
    return b;
}

// The paper's 20-GPU cluster (2 nodes x 4 A100-40, 8 MI250X GCDs, 4 H100) under a 4-stage plan of a
// ~7B model: optimizer state dominates, stage 0 holds the most in-flight activations.
QVector<GpuMemoryBar> demoBars()
{
    QVector<GpuMemoryBar> bars;
    for (int g = 0; g < 4; ++g) // stage 0: risk on GPU 3 (extra activations of the embedding stage)
        bars << bar("a100-0", g, "nvidia", 40, 3.1, 3.1, 12.4, g == 3 ? 17.2 : 13.6, 2.4, 0);
    for (int g = 0; g < 4; ++g) // stage 1: GPU 2 runs out of memory (micro-batch 4 there)
        bars << bar("a100-1", g, "nvidia", 40, 2.6, 2.6, 10.4, g == 2 ? 25.5 : 11.0, 2.4, 1);
    for (int g = 0; g < 8; ++g)
        bars << bar("mi250x", g, "amd", 64, 4.2, 4.2, 16.8, 8.0 + 0.4 * (g % 4), 3.1, 2);
    for (int g = 0; g < 4; ++g) {
        GpuMemoryBar b = bar("h100", g, "nvidia", 80, 5.4, 5.4, 21.6, 5.5, 3.0, 3);
        b.device = "H100";
        bars << b;
    }
    return bars;
}

} // namespace

class TestMemoryBarChart : public QObject {
    Q_OBJECT
private slots:
    void captionNumbers()
    {
        // Hand-worked: utilisations 20/40 = 0.5, 30/40 = 0.75, 40/80 = 0.5.
        // mean = 1.75 / 3 = 0.58333; deviations -0.08333, 0.16667, -0.08333;
        // variance = (0.006944 + 0.027778 + 0.006944) / 3 = 0.013889; sd = 0.117851; CV = 0.20203.
        MemoryBarChart chart;
        chart.setBars({bar("n0", 0, "nvidia", 40, 4, 4, 8, 3, 1), bar("n1", 1, "nvidia", 40, 6, 6, 12, 4, 2),
                       bar("m0", 0, "amd", 80, 8, 8, 16, 6, 2)});
        QCOMPARE(chart.barCount(), 3);
        QVERIFY(qAbs(chart.imbalanceCv() - 0.20203) < 1e-4);
        QCOMPARE(chart.maxUtilisation(), 0.75);
        {
            // An idle GPU (stage -1, nothing on it) is not part of the plan's imbalance.
            MemoryBarChart withIdle;
            withIdle.setBars({bar("n0", 0, "nvidia", 40, 4, 4, 8, 3, 1), bar("n1", 1, "nvidia", 40, 6, 6, 12, 4, 2),
                              bar("m0", 0, "amd", 80, 8, 8, 16, 6, 2), bar("idle", 0, "amd", 64, 0, 0, 0, 0, 0, -1)});
            QVERIFY(qAbs(withIdle.imbalanceCv() - 0.20203) < 1e-4);
        }
        const QString caption = chart.captionText();
        QVERIFY2(caption.contains("Max utilisation 75.0 % (n1/1)"), qPrintable(caption));
        QVERIFY2(caption.contains("Imbalance CV 0.202"), qPrintable(caption));
        QVERIFY2(!caption.contains("OOM"), qPrintable(caption));
    }

    void groupingAndFlags()
    {
        MemoryBarChart chart;
        // Interleaved input: grouped by vendor (first appearance), then node, keeping GPU order.
        chart.setBars({bar("n0", 0, "nvidia", 40, 1, 1, 1, 1, 1), bar("m0", 0, "amd", 64, 1, 1, 1, 1, 1),
                       bar("n1", 0, "nvidia", 40, 10, 10, 10, 10, 5), bar("n0", 1, "nvidia", 40, 8, 8, 8, 12, 1.5)});
        QStringList order;
        for (const auto &b : chart.bars())
            order << QStringLiteral("%1/%2").arg(b.node).arg(b.gpuIndex);
        QCOMPARE(order, (QStringList {"n0/0", "n0/1", "n1/0", "m0/0"}));
        // n1/0: 45 GiB > 40 -> OOM; n0/1: 37.5 GiB > 0.92 * 40 = 36.8 -> risk.
        QCOMPARE(chart.oomCount(), 1);
        QCOMPARE(chart.riskCount(), 1);
        QVERIFY(chart.bars()[2].oom);
        QVERIFY(chart.bars()[1].riskOfOom);
        const QString caption = chart.captionText();
        QVERIFY2(caption.contains("1 GPU out of memory") && caption.contains("1 at risk"), qPrintable(caption));
        QVERIFY2(caption.contains("112.5 % (n1/0)"), qPrintable(caption)); // 45 / 40
        QCOMPARE(MemoryBarChart::ComponentCount, 5);
    }

    void geometry()
    {
        MemoryBarChart chart;
        chart.resize(640, 360);
        chart.setBars({bar("n0", 0, "nvidia", 40, 4, 4, 8, 3, 1), bar("n0", 1, "nvidia", 40, 6, 6, 12, 4, 2),
                       bar("m0", 0, "amd", 80, 8, 8, 16, 6, 2)});
        // Axis reaches past the largest capacity (80 GiB).
        QVERIFY(chart.axisMaxGiB() >= 80.0);
        const QRect r0 = chart.barRect(0), r1 = chart.barRect(1), r2 = chart.barRect(2);
        // Heights proportional to used bytes: 20, 30, 40 GiB.
        QVERIFY(qAbs(r1.height() * 2 - r0.height() * 3) <= 3);
        QVERIFY(qAbs(r2.height() - r0.height() * 2) <= 2);
        QVERIFY(r0.right() < r1.left() && r1.right() < r2.left());
        // Node gap: distance n0 -> m0 larger than within n0.
        QVERIFY(r2.center().x() - r1.center().x() > r1.center().x() - r0.center().x());
        QCOMPARE(chart.barAt(r1.center()), 1);
        QCOMPARE(chart.barAt(QPoint(2, 2)), -1);
        QSignalSpy clicked(&chart, &MemoryBarChart::gpuClicked);
        QTest::mouseClick(&chart, Qt::LeftButton, {}, r2.center());
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked.at(0).at(0).toString(), QString("m0"));
        // Paints without crashing, empty or not.
        QImage img(chart.size(), QImage::Format_ARGB32);
        chart.render(&img);
        chart.setBars({});
        chart.render(&img);
        QCOMPARE(chart.captionText(), QString("No plan selected"));
    }

    /// The legend wraps instead of clipping its labels: at a narrow width it takes more rows,
    /// so the plot (the top of a full-capacity bar) starts lower than at a wide width.
    void legendWrapsInNarrowPanes()
    {
        MemoryBarChart chart;
        chart.setBars({bar("n0", 0, "nvidia", 40, 10, 10, 10, 8, 2)}); // used = capacity = 40 GiB
        chart.resize(1200, 360);
        const int wideTop = chart.barRect(0).top();
        chart.resize(260, 360);
        const int narrowTop = chart.barRect(0).top();
        const int rowH = chart.fontMetrics().height();
        QVERIFY2(narrowTop >= wideTop + rowH, qPrintable(QString("%1 vs %2").arg(narrowTop).arg(wideTop)));
        QVERIFY(chart.barRect(0).bottom() < chart.height());
        QVERIFY(chart.barRect(0).height() > 0);
    }

    void sizeHintGrowsWithBars()
    {
        MemoryBarChart chart;
        const int w8 = chart.sizeHint().width();
        QVector<GpuMemoryBar> many;
        for (int i = 0; i < 24; ++i)
            many << bar(QString("n%1").arg(i / 4), i % 4, "nvidia", 40, 1, 1, 1, 1, 1);
        chart.setBars(many);
        QVERIFY(chart.sizeHint().width() > w8);
        QVERIFY(chart.sizeHint().height() >= 300);
    }

    void screenshot()
    {
        const QString dir = qEnvironmentVariable("MEMX_SCREENSHOT_DIR");
        if (dir.isEmpty())
            QSKIP("set MEMX_SCREENSHOT_DIR to write screenshots");
        QDir().mkpath(dir);
        MemoryBarChart chart;
        chart.setBars(demoBars());
        QCOMPARE(chart.oomCount(), 1);
        QCOMPARE(chart.riskCount(), 1);
        chart.resize(chart.sizeHint());
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        QVERIFY(chart.grab().save(dir + "/memory-bars.png"));
    }
};

QTEST_MAIN(TestMemoryBarChart)
#include "tst_memorybarchart.moc"
