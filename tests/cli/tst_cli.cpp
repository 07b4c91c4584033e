// The memx binary, run as a user runs it: exit codes, messages, JSON output.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTest>

static const QString kSamples = QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters");
static const QString kBroken = QStringLiteral(MEMX_SOURCE_DIR "/tests/data/broken");

struct Run
{
    int exitCode = -1;
    QString out;
    QString err;
};

static Run memx(const QStringList &args)
{
    QProcess p;
    p.start(QStringLiteral(MEMX_CLI_PATH), args);
    if (!p.waitForFinished(60000))
        qFatal("memx %s did not finish", qPrintable(args.join(QLatin1Char(' '))));
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

class TestCli : public QObject
{
    Q_OBJECT

private slots:
    void versionAndHelp()
    {
        Run r = memx({QStringLiteral("--version")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.startsWith(QStringLiteral("memx ")));
        r = memx({QStringLiteral("--help")});
        QCOMPARE(r.exitCode, 0);
        for (const char *cmd : {"validate", "info", "catalogue"})
            QVERIFY2(r.out.contains(QLatin1String(cmd)), cmd);
        r = memx({QStringLiteral("validate"), QStringLiteral("--help")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains(QStringLiteral("Usage: memx validate")));
    }

    void usageErrors()
    {
        Run r = memx({QStringLiteral("frobnicate")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.contains(QStringLiteral("unknown command 'frobnicate'")));
        r = memx({QStringLiteral("info"), QStringLiteral("--bogus")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.contains(QStringLiteral("unknown option --bogus")));
        r = memx({QStringLiteral("validate")});
        QCOMPARE(r.exitCode, 2);
    }

    void validateSamples()
    {
        QStringList files;
        for (const QString &f : QDir(kSamples).entryList({QStringLiteral("*.json")}))
            files << kSamples + QLatin1Char('/') + f;
        QVERIFY(files.size() >= 8);
        const Run r = memx(QStringList{QStringLiteral("validate")} + files);
        QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
        QCOMPARE(r.out.count(QStringLiteral("ok: ")), files.size());
    }

    void validateBrokenFiles()
    {
        QStringList files;
        for (const QString &f : QDir(kBroken).entryList({QStringLiteral("*.json")}))
            files << kBroken + QLatin1Char('/') + f;
        const Run r = memx(QStringList{QStringLiteral("validate"), QStringLiteral("--json")} + files);
        QCOMPARE(r.exitCode, 1);
        const QJsonObject report = QJsonDocument::fromJson(r.out.toUtf8()).object();
        const QJsonArray list = report.value(QStringLiteral("files")).toArray();
        QCOMPARE(list.size(), files.size());
        // Structurally valid plans pass without a cluster; everything else fails with problems.
        int invalid = 0;
        for (const QJsonValue &v : list) {
            const QJsonObject o = v.toObject();
            if (!o.value(QStringLiteral("valid")).toBool()) {
                ++invalid;
                QVERIFY(!o.value(QStringLiteral("problems")).toArray().isEmpty());
            }
        }
        QCOMPARE(report.value(QStringLiteral("invalid")).toInt(), invalid);
        QVERIFY(invalid >= files.size() - 1);
    }

    void validatePlanAgainstCluster()
    {
        const Run r = memx({QStringLiteral("validate"), kBroken + QStringLiteral("/plan-gap-and-reuse.json"),
                            QStringLiteral("--cluster"), kSamples + QStringLiteral("/h100-8x.json"),
                            QStringLiteral("--model"), QStringLiteral("gpt3-1.3b")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.out.contains(QStringLiteral("/stages/1/firstLayer: expected 10")), qPrintable(r.out));
        QVERIFY(r.out.contains(QStringLiteral("is already used by another replica")));
    }

    void infoJson()
    {
        const Run r = memx({QStringLiteral("info"), kSamples + QStringLiteral("/paper-20gpu-mixed-consumer.json"),
                            QStringLiteral("--json")});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(o.value(QStringLiteral("gpus")).toInt(), 20);
        const QJsonObject vendors = o.value(QStringLiteral("vendors")).toObject();
        QCOMPARE(vendors.value(QStringLiteral("NVIDIA")).toInt(), 12);
        QCOMPARE(vendors.value(QStringLiteral("AMD")).toInt(), 8);
        // Total memory = sum over GPUs of the catalogue's usable memory.
        const QJsonObject types = o.value(QStringLiteral("types")).toObject();
        double sum = 0;
        for (const QString &k : types.keys())
            sum += types.value(k).toObject().value(QStringLiteral("memoryGiB")).toDouble();
        QCOMPARE(o.value(QStringLiteral("memoryGiB")).toDouble(), sum);
    }

    void infoOnBrokenFileNamesTheField()
    {
        const Run r = memx({QStringLiteral("info"), kBroken + QStringLiteral("/cluster-negative-gpus.json")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral("cluster-negative-gpus.json: /nodes/0/gpus: expected an integer from 1 to 64, found -4")),
                 qPrintable(r.err));
    }

    void catalogue()
    {
        Run r = memx({QStringLiteral("catalogue"), QStringLiteral("--json")});
        QCOMPARE(r.exitCode, 0);
        const QJsonArray devices = QJsonDocument::fromJson(r.out.toUtf8()).object().value(QStringLiteral("devices")).toArray();
        QVERIFY(devices.size() >= 18);
        r = memx({QStringLiteral("catalogue"), QStringLiteral("GH-96")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains(QStringLiteral("gh200-96gb")));
        QVERIFY(r.out.contains(QStringLiteral("source ")));
        r = memx({QStringLiteral("catalogue"), QStringLiteral("h100-sxn")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY(r.err.contains(QStringLiteral("Did you mean")));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
