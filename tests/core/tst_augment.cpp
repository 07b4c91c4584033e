// Interpolation-based augmentation: hand-worked cases and an honest hold-out test on public data.
#include "memx/io/formats.h"
#include "memx/profiling/augment.h"
#include "memx/profiling/sailorimporter.h"

#include <QTest>

#include <cmath>
#include <filesystem>

using namespace memx;

static const std::string kSailor = MEMX_SHARED_DIR "/data/public/sailor";

static LayerProfile profile(int tp, int mbs, double fwd, double bwd)
{
    LayerProfile p;
    p.key = {"a100-80gb-sxm", "toy", tp, mbs, 2048};
    for (int i = 0; i < 4; ++i)
        p.layers.push_back({fwd, bwd, 0.1, 1000.0 / tp, 500.0 * mbs});
    return p;
}

class TestAugment : public QObject {
    Q_OBJECT

private slots:
    void microBatchIsPiecewiseLinear()
    {
        // Between mbs 2 (fwd 3, bwd 5) and 8 (fwd 9, bwd 17): at 4, w = (4-2)/(8-2) = 1/3,
        // fwd = 3 + 6/3 = 5, bwd = 5 + 12/3 = 9, activations 1000 + 3000/3 = 2000.
        const std::vector<LayerProfile> ps = {profile(1, 2, 3, 5), profile(1, 8, 9, 17), profile(1, 1, 1, 1)};
        const auto p = interpolateMicroBatch(ps, 4);
        QVERIFY(p);
        QCOMPARE(p->key.microBatch, 4);
        QVERIFY(p->origin == ProfileOrigin::Interpolated);
        QCOMPARE(p->layers[2].forwardMs, 5.0);
        QCOMPARE(p->layers[2].backwardMs, 9.0);
        QCOMPARE(*p->layers[2].activationBytes, 2000.0);
        QCOMPARE(*p->layers[2].paramBytes, 1000.0);
        QVERIFY(!interpolateMicroBatch(ps, 16)); // no extrapolation
    }

    void tensorParallelFitsAPlusBOverTp()
    {
        // t(tp) = 1 + 8/tp measured at tp 1, 2, 8 (9, 5, 2): the fit is exact, t(4) = 3.
        const std::vector<LayerProfile> ps = {profile(1, 1, 9, 18), profile(2, 1, 5, 10), profile(8, 1, 2, 4)};
        const auto p = interpolateTensorParallel(ps, 4);
        QVERIFY(p);
        QVERIFY(std::abs(p->layers[1].forwardMs - 3.0) < 1e-12);
        QVERIFY(std::abs(p->layers[1].backwardMs - 6.0) < 1e-12);
        QVERIFY(std::abs(*p->layers[1].paramBytes - 250.0) < 1e-9); // 1000/tp is of the same form
        QVERIFY(!interpolateTensorParallel(ps, 16));
    }

    void layerCountAndSequenceLength()
    {
        LayerProfile p = profile(1, 1, 2, 4);
        p.layers.front().forwardMs = 0.5;
        p.layers.back().forwardMs = 1.5;
        const LayerProfile deeper = withLayerCount(p, 5, "toy-5l");
        QCOMPARE(deeper.layers.size(), size_t(7));
        QCOMPARE(deeper.layers.front().forwardMs, 0.5);
        QCOMPARE(deeper.layers.back().forwardMs, 1.5);
        QCOMPARE(deeper.key.model, std::string("toy-5l"));
        QCOMPARE(withLayerCount(p, 1, "toy-1l").layers.size(), size_t(3));

        Model m = resolveModel("gpt3-1.3b"); // h 2048, 16 heads
        const LayerProfile longer = scaleSequenceLength(p, m, 4096);
        // FLOP ratio (24 s1 h^2 + 4 s1^2 h) / (24 s0 h^2 + 4 s0^2 h) with h = 2048, s0 = 2048, s1 = 4096:
        // = (24*4096*2048 + 4*4096^2) / (24*2048*2048 + 4*2048^2) = (201326592 + 67108864) / (100663296 + 16777216)
        // = 268435456 / 117440512 = 2.2857142857...
        QVERIFY(std::abs(longer.layers[1].forwardMs - 2 * 268435456.0 / 117440512.0) < 1e-12);
        QCOMPARE(longer.layers.front().forwardMs, 1.0); // embedding: linear in s
        QCOMPARE(longer.key.seqLength, 4096);
    }

    void holdOutOnPublicData()
    {
        if (!std::filesystem::exists(kSailor))
            QSKIP("public Sailor data not found at MEMX_SHARED_DIR/data/public/sailor");
        const ImportBatch b = importSailor(kSailor);
        ProfileSet measured;
        for (const LayerProfile &p : b.profiles)
            measured.add(p);
        const HoldOutReport mbs = holdOutMicroBatch(measured);
        qInfo("micro-batch hold-out: %zu points, median %.2f%%, p90 %.2f%%, max %.2f%%", mbs.points.size(),
              100 * mbs.medianError, 100 * mbs.p90Error, 100 * mbs.maxError);
        // Reference: an independent Python script over layer_times.json (linear interpolation of the
        // summed fwd+bwd between neighbouring micro-batch sizes) finds 119 interior points, median
        // 0.791%, p90 4.489%.
        QCOMPARE(mbs.points.size(), size_t(119));
        QVERIFY2(std::abs(mbs.medianError - 0.007907) < 1e-5, qPrintable(QString::number(mbs.medianError)));
        QVERIFY2(std::abs(mbs.p90Error - 0.044888) < 1e-5, qPrintable(QString::number(mbs.p90Error)));
        QVERIFY2(mbs.medianError < 0.05, "target: median error under 5% on hidden micro-batch points");

        const HoldOutReport tp = holdOutTensorParallel(measured);
        qInfo("TP hold-out: %zu points, median %.2f%%, p90 %.2f%%, max %.2f%%", tp.points.size(), 100 * tp.medianError,
              100 * tp.p90Error, 100 * tp.maxError);
        QVERIFY(!tp.points.empty());

        // The public micro-batch sizes are all powers of two and TP sets have no interior gaps, so
        // ask for in-between sizes explicitly.
        AugmentOptions options;
        options.microBatches = {3, 6, 12};
        const auto extra = augmentProfiles(measured, options);
        qInfo("augmentation adds %zu profiles to %zu measured", extra.size(), measured.size());
        QVERIFY(!extra.empty());
        for (const LayerProfile &p : extra) {
            QVERIFY(p.origin == ProfileOrigin::Interpolated);
            QVERIFY2(!measured.find(p.key), "augmentation must not overwrite a measured profile");
        }
    }
};

QTEST_GUILESS_MAIN(TestAugment)
#include "tst_augment.moc"
