// `memx compare` and `memx scale` run as a user runs them.
#include <cmath>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

#include "testutils.h"

using Run = memxtest::CliRun;
using memxtest::runMemx;

static const QString kSamples = QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters");

static const QStringList kNarrow {"--threads", "1", "--tp", "1,2,4", "--mbs", "1,2", "--stages", "1,2"};

class TestCompareCli : public QObject {
    Q_OBJECT

private slots:
    void compareJson()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("compare.json");
        Run r = runMemx(QStringList {"compare", "--cluster", kSamples + "/paper-20gpu-nvidia-amd.json", "--model",
                                     "llama2-7b", "--candidates", "5", "--json", "--out", out}
                        + kNarrow);
        QVERIFY2(r.code == 0, qPrintable(r.errText()));
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(j.value("format").toString(), QStringLiteral("memx.compare/1"));
        const QJsonArray methods = j.value("methods").toArray();
        QCOMPARE(methods.size(), 9);
        QStringList ids;
        for (const auto &m : methods)
            ids << m.toObject().value("id").toString();
        QCOMPARE(ids,
                 (QStringList {"memx", "time-only", "uniform-split", "analytic", "exhaustive-profiling", "metis", "amp",
                               "sailor", "galvatron"}));
        // Metis cannot plan 20 GPUs (no power-of-two device groups): no plan, and it says why.
        QVERIFY(!methods[5].toObject().value("hasPlan").toBool());
        QVERIFY(methods[5].toObject().value("refusal").toString().contains(QLatin1String("power")));
        const QJsonObject ex = methods[4].toObject();
        QCOMPARE(ex.value("profilingSeconds").toDouble(), 47.0 * ex.value("validConfigs").toDouble());
        QVERIFY(methods[1].toObject().value("plan").isObject());
        QVERIFY(!j.value("groundTruth").toObject().value("candidates").toArray().isEmpty());
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(f.readAll()).object(), j);
    }

    void compareWithLearnedPredictor()
    {
        // The learned path end to end, as a user runs it: simulated runs on the virtual testbed,
        // `memx train`, then `memx compare --project`. MemX must search with the learned model (and
        // say so), the baselines stay analytic, and MemX's predicted metrics for its pick must equal
        // what `memx predict --project` says about the same plan (an independent code path).
        QTemporaryDir dir;
        const QString project = dir.filePath("testbed.memx");
        const QString cluster = kSamples + "/paper-20gpu-nvidia-amd.json";
        Run r = runMemx(QStringList {"profile", "run-simulated", "--project", project,    "--cluster",
                                     cluster,   "--model",       "llama2-7b", "--stages", "1,2",
                                     "--tp",    "1,2,4",         "--mbs",     "1,2",      "--top",
                                     "8",       "--spread",      "24",        "--seed",   "1"});
        QVERIFY2(r.code == 0, qPrintable(r.errText()));
        r = runMemx({"train", "--project", project, "--folds", "0", "--ensemble", "2", "--rounds", "40"});
        QVERIFY2(r.code == 0, qPrintable(r.errText()));
        const QString out = dir.filePath("compare.json");
        r = runMemx(QStringList {"compare", "--project", project, "--cluster", cluster, "--model", "llama2-7b",
                                 "--candidates", "5", "--json", "--out", out}
                    + kNarrow);
        QVERIFY2(r.code == 0, qPrintable(r.errText()));
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        const QJsonArray methods = j.value("methods").toArray();
        QCOMPARE(methods.size(), 9); // five methods and the four published planners
        const QJsonObject memxM = methods[0].toObject(), analytic = methods[3].toObject();
        QCOMPARE(memxM.value("id").toString(), QStringLiteral("memx"));
        QVERIFY2(memxM.value("predictor").toString().startsWith(QLatin1String("learned")),
                 qPrintable(memxM.value("predictor").toString()));
        QCOMPARE(analytic.value("predictor").toString(), QStringLiteral("analytic"));
        QCOMPARE(methods[1].toObject().value("predictor").toString(), QStringLiteral("analytic"));
        // Both searched the same space.
        QCOMPARE(memxM.value("validConfigs").toDouble(), analytic.value("validConfigs").toDouble());
        // The pick was run on the testbed (ground truth) unless it failed there.
        QVERIFY(memxM.value("measured").isObject());

        const QString pick = dir.filePath("pick.json");
        {
            QFile f(pick);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QJsonDocument(memxM.value("plan").toObject()).toJson());
        }
        r = runMemx(
            {"predict", "--project", project, "--cluster", cluster, "--model", "llama2-7b", "--plan", pick, "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.errText()));
        const QJsonObject p = QJsonDocument::fromJson(r.out).object();
        QVERIFY(p.value("predictor").toString().startsWith(QLatin1String("learned")));
        const QJsonObject learned = p.value("learned").toObject();
        const QJsonObject predicted = memxM.value("predicted").toObject();
        const double tPredict = learned.value("iterationTimeMs").toDouble();
        const double tCompare = predicted.value("timeMs").toDouble();
        QVERIFY2(tPredict > 0 && std::abs(tCompare - tPredict) <= 1e-9 * tPredict,
                 qPrintable(QStringLiteral("compare %1 ms, predict %2 ms").arg(tCompare).arg(tPredict)));
        // M is the peak utilisation (the fullest GPU relative to its own capacity), not the
        // largest GPU's bytes over its capacity: on this mixed cluster they are different GPUs.
        const double mPredict = learned.value("peakUtilisation").toDouble();
        QVERIFY2(
            std::abs(predicted.value("peakMemory").toDouble() - mPredict) <= 1e-9 * mPredict,
            qPrintable(
                QStringLiteral("compare %1, predict %2").arg(predicted.value("peakMemory").toDouble()).arg(mPredict)));
        // The learned model answered differently from the analytic one (it was trained on testbed
        // runs whose times differ from the analytic model's), so the prediction is not a pass-through.
        QVERIFY(std::abs(tPredict - p.value("iterationTimeMs").toDouble()) > 1e-6 * tPredict);
    }

    void compareTable()
    {
        Run r = runMemx(QStringList {"compare", "--cluster", kSamples + "/paper-20gpu-nvidia-amd.json", "--model",
                                     "llama2-7b", "--candidates", "3"}
                        + kNarrow);
        QVERIFY2(r.code == 0, qPrintable(r.errText()));
        for (const char *s : {"method", "time-only", "uniform-split", "exhaustive-profiling", "true best by time"})
            QVERIFY2(r.outText().contains(QLatin1String(s)), s);
        r = runMemx({"compare", "--cluster", kSamples + "/paper-20gpu-nvidia-amd.json", "--model", "llama2-7b",
                     "--weights", "1,x,0"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.errText().contains(QStringLiteral("--weights")));
    }

    void compareOnMeasuredRuns()
    {
        // The real megatron-tutorials runs (8 x H100), imported as a user does, then every method's
        // own cost model on them: one row per method, MemX's figures equal memx evaluate --analytic's.
        QTemporaryDir dir;
        const QString project = dir.filePath("mt.memx");
        const QString csv = QStringLiteral(MEMX_SHARED_DIR "/data/public/megatron-tutorials/h100_runs.csv");
        if (!QFile::exists(csv))
            QSKIP("the public megatron-tutorials data is not next to the checkout");
        Run r = runMemx({"profile", "import", "--format", "runs-csv", csv, "--project", project});
        QVERIFY2(r.code == 0, qPrintable(r.errText()));
        r = runMemx({"compare", "--measured", project, "--json"});
        QVERIFY2(r.code == 0, qPrintable(r.errText()));
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(j.value("format").toString(), QStringLiteral("memx.compare-measured/1"));
        const QJsonArray methods = j.value("methods").toArray();
        QStringList ids;
        for (const auto &m : methods)
            ids << m.toObject().value("id").toString();
        QCOMPARE(ids, (QStringList {"memx", "metis", "amp", "sailor", "galvatron"}));
        Run ev = runMemx({"evaluate", "--project", project, "--analytic", "--json"});
        QVERIFY2(ev.code == 0, qPrintable(ev.errText()));
        const QJsonObject evAll = QJsonDocument::fromJson(ev.out)
                                      .object()
                                      .value("reports")
                                      .toArray()[0]
                                      .toObject()
                                      .value("analytic")
                                      .toObject()
                                      .value("all")
                                      .toObject();
        const QJsonObject mxAll = methods[0].toObject().value("all").toObject();
        QVERIFY2(std::abs(mxAll.value("timeMapePct").toDouble() - evAll.value("timeMapePct").toDouble()) < 1e-9,
                 qPrintable(QString::fromUtf8(QJsonDocument(evAll).toJson())));
        for (const auto &m : methods) {
            const QJsonObject o = m.toObject();
            QVERIFY2(o.value("costed").toInt() > 40, qPrintable(o.value("id").toString()));
            QVERIFY(o.value("all").toObject().value("timeMapePct").toDouble() > 0);
        }
        QVERIFY(!methods[2].toObject().value("hasMemory").toBool()); // AMP
        r = runMemx({"compare", "--measured", project});
        QVERIFY2(r.code == 0, qPrintable(r.errText()));
        for (const char *s : {"metis", "amp", "sailor", "galvatron", "time MAPE", "tbl-101"})
            QVERIFY2(r.outText().contains(QLatin1String(s)), s);
        r = runMemx({"compare", "--measured", dir.filePath("missing.memx")});
        QCOMPARE(r.code, 1);
        QVERIFY(r.errText().contains(QLatin1String("missing.memx")));
    }

    void scaleWritesChartsAndTable()
    {
        QTemporaryDir dir;
        Run r = runMemx(QStringList {"scale", "--cluster", kSamples + "/h100-8x.json", "--model", "llama2-7b", "--to",
                                     "16,32", "--out", dir.path()}
                        + kNarrow);
        QVERIFY2(r.code == 0, qPrintable(r.errText()));
        QVERIFY(r.outText().contains(QStringLiteral("GPUs")));
        QFile js(dir.filePath("scale.json"));
        QVERIFY(js.open(QIODevice::ReadOnly));
        const QJsonArray pts = QJsonDocument::fromJson(js.readAll()).object().value("points").toArray();
        QCOMPARE(pts.size(), 3);
        QCOMPARE(pts[0].toObject().value("gpus").toInt(), 8);
        QCOMPARE(pts[1].toObject().value("gpus").toInt(), 16);
        QCOMPARE(pts[2].toObject().value("gpus").toInt(), 32);
        for (const char *name : {"time-vs-gpus.svg", "search-time-vs-gpus.svg", "throughput-vs-gpus.svg"}) {
            QFile f(dir.filePath(QLatin1String(name)));
            QVERIFY2(f.open(QIODevice::ReadOnly), name);
            QXmlStreamReader xml(f.readAll());
            int circles = 0;
            while (!xml.atEnd()) {
                xml.readNext();
                if (xml.isStartElement() && xml.name() == QLatin1String("circle"))
                    ++circles;
            }
            QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
            QCOMPARE(circles, 3);
        }
    }

    void scaleRejectsUnreachableSize()
    {
        Run r = runMemx(
            {"scale", "--cluster", kSamples + "/paper-20gpu-nvidia-amd.json", "--model", "llama2-7b", "--to", "40,50"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.errText().contains(QStringLiteral("50 GPUs cannot be reached"))
                     && r.errText().contains(QStringLiteral("20, 40, 60")),
                 qPrintable(r.errText()));
        r = runMemx({"scale", "--cluster", kSamples + "/h100-8x.json", "--model", "llama2-7b"});
        QCOMPARE(r.code, 2);
    }
};

QTEST_GUILESS_MAIN(TestCompareCli)
#include "tst_comparecli.moc"
