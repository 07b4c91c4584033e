// The RAII wrapper over XGBoost's C API: dual-output training, prediction, save/load, errors.
#include "memx/predict/xgboost.h"

#include <QTest>

#include <cmath>
#include <random>

using namespace memx;

/// Two smooth targets of two features: y0 = 2 x0 + x1, y1 = x0 * x1.
static void makeData(size_t rows, unsigned seed, std::vector<float> &x, std::vector<float> &y)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.f, 4.f);
    x.resize(rows * 2);
    y.resize(rows * 2);
    for (size_t i = 0; i < rows; ++i) {
        x[2 * i] = u(rng);
        x[2 * i + 1] = u(rng);
        y[2 * i] = 2 * x[2 * i] + x[2 * i + 1];
        y[2 * i + 1] = x[2 * i] * x[2 * i + 1];
    }
}

static const std::map<std::string, std::string> kParams = {
    {"tree_method", "hist"}, {"num_target", "2"}, {"max_depth", "6"}, {"eta", "0.3"}, {"nthread", "2"}, {"seed", "1"}};

class TestXgboost : public QObject {
    Q_OBJECT

private slots:
    void dualOutputLearnsBothTargets()
    {
        std::vector<float> x, y, hx, hy;
        makeData(2000, 1, x, y);
        makeData(200, 2, hx, hy);
        XgbMatrix train(x, 2000, 2);
        train.setLabels(y, 2);
        XgbBooster booster;
        size_t calls = 0;
        booster.train(train, kParams, 60, [&](size_t done, size_t total) {
            ++calls;
            return done <= total;
        });
        QCOMPARE(calls, size_t(60));
        XgbMatrix held(hx, 200, 2);
        const std::vector<float> p = booster.predict(held);
        QCOMPARE(p.size(), size_t(400));
        QCOMPARE(booster.outputs(), size_t(2));
        // Mean absolute error on held-out rows, against targets spanning 0..12 and 0..16.
        double e0 = 0, e1 = 0;
        for (size_t i = 0; i < 200; ++i) {
            e0 += std::abs(p[2 * i] - hy[2 * i]);
            e1 += std::abs(p[2 * i + 1] - hy[2 * i + 1]);
        }
        QVERIFY2(e0 / 200 < 0.25, qPrintable(QString::number(e0 / 200)));
        QVERIFY2(e1 / 200 < 0.35, qPrintable(QString::number(e1 / 200)));
    }

    void cancelStopsEarly()
    {
        std::vector<float> x, y;
        makeData(100, 3, x, y);
        XgbMatrix train(x, 100, 2);
        train.setLabels(y, 2);
        XgbBooster booster;
        size_t calls = 0;
        booster.train(train, kParams, 50, [&](size_t done, size_t) {
            ++calls;
            return done < 5;
        });
        QCOMPARE(calls, size_t(5));
    }

    void saveLoadGivesIdenticalPredictions()
    {
        std::vector<float> x, y;
        makeData(500, 4, x, y);
        XgbMatrix train(x, 500, 2);
        train.setLabels(y, 2);
        XgbBooster booster;
        booster.train(train, kParams, 20);
        const auto bytes = booster.save();
        QVERIFY(bytes.size() > 100);
        XgbBooster loaded;
        loaded.load(bytes);
        QCOMPARE(loaded.outputs(), size_t(2));
        QVERIFY(loaded.predict(train) == booster.predict(train));
    }

    void errorsAreTranslated()
    {
        XgbBooster booster;
        QVERIFY_THROWS_EXCEPTION(XgbError, booster.load({}));
        QVERIFY_THROWS_EXCEPTION(XgbError, booster.load({'n', 'o', 't', ' ', 'a', ' ', 'm', 'o', 'd', 'e', 'l'}));
        std::vector<float> x(6, 1.f);
        QVERIFY_THROWS_EXCEPTION(XgbError, XgbMatrix(x, 4, 2));
        XgbMatrix m(x, 3, 2);
        QVERIFY_THROWS_EXCEPTION(XgbError, m.setLabels({1.f, 2.f}, 2));
        // An unknown parameter value is rejected by XGBoost itself, with its message.
        m.setLabels({1, 2, 3, 4, 5, 6}, 2);
        try {
            booster.train(m, {{"tree_method", "no-such-method"}}, 1);
            QFAIL("expected XgbError");
        } catch (const XgbError &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("XGBoost")), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestXgboost)
#include "tst_xgboost.moc"
