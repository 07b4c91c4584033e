// memx train / evaluate / predict --project / search --project as binaries on the imported public
// GH200 runs: the stored predictor is used and named, the analytic path is unchanged without one.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include "testutils.h"

using Run = memxtest::CliRun;
using memxtest::runMemx;

static const QString kSamples = QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters");
static const QString kSailor = QStringLiteral(MEMX_SHARED_DIR "/data/public/sailor");

class TestTrainCli : public QObject {
    Q_OBJECT

    QTemporaryDir mDir;
    QString mProject;

private slots:
    void initTestCase()
    {
        mProject = mDir.filePath("p.memx");
        const Run r = runMemx({"profile", "import", "--format", "sailor", kSailor, "--project", mProject});
        QVERIFY2(r.code == 0, r.err.constData());
    }

    void searchWithoutModelIsAnalytic()
    {
        const QString cluster = kSamples + "/paper-20gpu-nvidia-amd.json";
        const QStringList space = {"--stages", "1", "--mbs", "1,2", "--threads", "2", "--top", "3"};
        const Run plain
            = runMemx(QStringList {"search", "--cluster", cluster, "--model", "llama2-7b", "--json"} + space);
        QVERIFY2(plain.code == 0, plain.err.constData());
        const QJsonObject j = QJsonDocument::fromJson(plain.out).object();
        QCOMPARE(j["predictor"].toString(), QString("analytic"));
        const Run text = runMemx(QStringList {"search", "--cluster", cluster, "--model", "llama2-7b"} + space);
        QVERIFY(text.out.contains("predictor: analytic"));
    }

    void trainThenUse()
    {
        const Run t = runMemx({"train", "--project", mProject, "--json", "--folds", "3"});
        QVERIFY2(t.code == 0, t.err.constData());
        const QJsonObject tj = QJsonDocument::fromJson(t.out).object();
        QCOMPARE(tj["trainedOn"].toInt(), 41);
        QCOMPARE(tj["featureSchema"].toInt(), 2);
        QCOMPARE(tj["predictor"].toString(), QString("learned (xgboost, 41 runs, schema v2)"));
        QVERIFY(tj["kfold"].toObject()["learned"].toObject()["all"].toObject()["timeMapePct"].toDouble() > 0);

        // search --project uses it, twice: the second run hits the persisted cache for every plan.
        const QString cluster = kSamples + "/paper-20gpu-nvidia-amd.json";
        const QStringList args
            = {"search", "--cluster", cluster, "--model",   "llama2-7b", "--project", mProject, "--stages",
               "1",      "--mbs",     "1,2",   "--threads", "2",         "--top",     "3",      "--json"};
        const Run s1 = runMemx(args);
        QVERIFY2(s1.code == 0, s1.err.constData());
        const QJsonObject j1 = QJsonDocument::fromJson(s1.out).object();
        QCOMPARE(j1["predictor"].toString(), QString("learned (xgboost, 41 runs, schema v2)"));
        QCOMPARE(j1["learned"].toObject()["cacheHits"].toDouble(), 0.0);
        const double n = j1["counts"].toObject()["evaluated"].toDouble();
        QCOMPARE(j1["learned"].toObject()["predicted"].toDouble(), n);
        QVERIFY(j1["top"].toArray()[0].toObject().contains("oomRisk"));
        QVERIFY(j1["top"].toArray()[0].toObject().contains("extrapolating"));
        const Run s2 = runMemx(args);
        QVERIFY2(s2.code == 0, s2.err.constData());
        const QJsonObject j2 = QJsonDocument::fromJson(s2.out).object();
        QCOMPARE(j2["learned"].toObject()["cacheHits"].toDouble(), n);
        // The identical request reuses the stored whole result (no enumeration, no prediction).
        QVERIFY(!j1["learned"].toObject()["resultFromCache"].toBool());
        QVERIFY(j2["learned"].toObject()["resultFromCache"].toBool());
        QCOMPARE(j2["counts"].toObject()["evaluated"].toDouble(), n);
        QCOMPARE(j2["top"].toArray()[0].toObject()["index"].toDouble(),
                 j1["top"].toArray()[0].toObject()["index"].toDouble());
        // Other weights: the same request (ranking is after the search), the same stored result.
        QStringList weighted = args;
        weighted << "--weights"
                 << "1,1,0";
        const Run s3 = runMemx(weighted);
        QVERIFY2(s3.code == 0, s3.err.constData());
        QVERIFY(QJsonDocument::fromJson(s3.out).object()["learned"].toObject()["resultFromCache"].toBool());
        // --no-cache: searched and predicted again, same figures.
        QStringList fresh = args;
        fresh << "--no-cache";
        const Run s4 = runMemx(fresh);
        QVERIFY2(s4.code == 0, s4.err.constData());
        const QJsonObject j4 = QJsonDocument::fromJson(s4.out).object();
        QVERIFY(!j4["learned"].toObject()["resultFromCache"].toBool());
        QCOMPARE(j4["learned"].toObject()["predicted"].toDouble(), n);
        QCOMPARE(j4["top"].toArray()[0].toObject()["T"].toDouble(), j1["top"].toArray()[0].toObject()["T"].toDouble());
        QCOMPARE(j2["top"].toArray()[0].toObject()["T"].toDouble(), j1["top"].toArray()[0].toObject()["T"].toDouble());

        // predict --project on a measured plan of the project: named, learned figures present.
        QTemporaryDir d;
        const QString planPath = d.filePath("plan.json");
        QFile f(planPath);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QJsonDocument(j1["top"].toArray()[0].toObject()["plan"].toObject()).toJson());
        f.close();
        const Run p = runMemx(
            {"predict", "--cluster", cluster, "--model", "llama2-7b", "--plan", planPath, "--project", mProject});
        QVERIFY2(p.code == 0 || p.code == 1, p.err.constData());
        QVERIFY2(p.out.startsWith("predictor: learned (xgboost, 41 runs, schema v2)"), p.out.constData());
        QVERIFY(p.out.contains("Learned: iteration time"));
        const Run pj = runMemx({"predict", "--cluster", cluster, "--model", "llama2-7b", "--plan", planPath, "--json"});
        QCOMPARE(QJsonDocument::fromJson(pj.out).object()["predictor"].toString(), QString("analytic"));
    }

    void evaluateLooJson()
    {
        const Run r = runMemx({"evaluate", "--project", mProject, "--loo", "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        const QJsonArray reports = j["reports"].toArray();
        QCOMPARE(reports.size(), 1);
        const QJsonObject rep = reports[0].toObject();
        QCOMPARE(rep["scheme"].toString(), QString("leave-one-out"));
        QCOMPARE(rep["runs"].toArray().size(), 41);
        QCOMPARE(rep["noiseFloor"].toObject()["pairs"].toInt(), 15);
        const double learned = rep["learned"].toObject()["all"].toObject()["timeMapePct"].toDouble();
        const double analytic = rep["analytic"].toObject()["all"].toObject()["timeMapePct"].toDouble();
        QVERIFY2(learned < analytic, qPrintable(QString("%1 vs %2").arg(learned).arg(analytic)));
        const Run text = runMemx({"evaluate", "--project", mProject, "--k", "4"});
        QVERIFY2(text.code == 0, text.err.constData());
        QVERIFY(text.out.contains("k-fold cross-validation, 4 folds"));
        QVERIFY(text.out.contains("Noise floor"));
    }

    /// Issue 14's GH200 targets, calibrated per fold (memx profile calibrate's fit on each fold's
    /// training runs only): judged against the data set's measured device-used peaks.
    void evaluateCalibratedPerFold()
    {
        const Run plain = runMemx({"evaluate", "--project", mProject, "--k", "5", "--json"});
        QVERIFY2(plain.code == 0, plain.err.constData());
        const Run r = runMemx({"evaluate", "--project", mProject, "--k", "5", "--calibrate", "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        auto all = [](const Run &run, const char *method) {
            const QJsonObject rep = QJsonDocument::fromJson(run.out).object()["reports"].toArray()[0].toObject();
            return rep[method].toObject()["all"].toObject();
        };
        const QJsonObject rep = QJsonDocument::fromJson(r.out).object()["reports"].toArray()[0].toObject();
        QVERIFY(rep["calibration"].toString().startsWith("per fold"));
        QCOMPARE(rep["runs"].toArray().size(), 41);
        const double before = all(plain, "analytic")["memoryMapePct"].toDouble();
        const double analytic = all(r, "analytic")["memoryMapePct"].toDouble();
        const double learned = all(r, "learned")["memoryMapePct"].toDouble();
        qInfo("GH200 memory MAPE, 5-fold: analytic defaults %.1f%%, calibrated per fold %.1f%%, learned %.1f%%", before,
              analytic, learned);
        QVERIFY2(analytic <= 10.0 && analytic < before, qPrintable(QString("%1 vs %2").arg(analytic).arg(before)));
        QVERIFY2(learned <= 5.0, qPrintable(QString::number(learned)));
        QCOMPARE(all(r, "analytic")["oomConfusion"].toObject()["falseFits"].toInt(), 0);
        const Run refused = runMemx({"evaluate", "--project", mProject, "--analytic", "--calibrate"});
        QCOMPARE(refused.code, 2);
        QVERIFY(refused.err.contains("--calibrate"));
    }

    void errors()
    {
        const Run missing = runMemx({"train", "--project", mDir.filePath("nope.memx")});
        QCOMPARE(missing.code, 1);
        QVERIFY(missing.err.contains("no such project file"));
        const Run usage = runMemx({"evaluate", "--project", mProject, "--k", "1"});
        QCOMPARE(usage.code, 2);
    }
};

QTEST_GUILESS_MAIN(TestTrainCli)
#include "tst_traincli.moc"
