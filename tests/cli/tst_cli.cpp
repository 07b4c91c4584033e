// The memx binary, run as a user runs it: exit codes, messages, JSON output.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTest>

#include "testutils.h"

using Run = memxtest::CliRun;
using memxtest::runMemx;

static const QString kSamples = QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters");
static const QString kBroken = QStringLiteral(MEMX_SOURCE_DIR "/tests/data/broken");

class TestCli : public QObject {
    Q_OBJECT

private slots:
    void versionAndHelp()
    {
        Run r = runMemx({QStringLiteral("--version")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.outText().startsWith(QStringLiteral("memx ")));
        r = runMemx({QStringLiteral("--help")});
        QCOMPARE(r.code, 0);
        for (const char *cmd : {"validate", "info", "catalogue"})
            QVERIFY2(r.outText().contains(QLatin1String(cmd)), cmd);
        r = runMemx({QStringLiteral("validate"), QStringLiteral("--help")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.outText().contains(QStringLiteral("Usage: memx validate")));
    }

    void usageErrors()
    {
        Run r = runMemx({QStringLiteral("frobnicate")});
        QCOMPARE(r.code, 2);
        QVERIFY(r.errText().contains(QStringLiteral("unknown command 'frobnicate'")));
        r = runMemx({QStringLiteral("info"), QStringLiteral("--bogus")});
        QCOMPARE(r.code, 2);
        QVERIFY(r.errText().contains(QStringLiteral("unknown option --bogus")));
        r = runMemx({QStringLiteral("validate")});
        QCOMPARE(r.code, 2);
    }

    void validateSamples()
    {
        QStringList files;
        for (const QString &f : QDir(kSamples).entryList({QStringLiteral("*.json")}))
            files << kSamples + QLatin1Char('/') + f;
        QVERIFY(files.size() >= 8);
        const Run r = runMemx(QStringList {QStringLiteral("validate")} + files);
        QVERIFY2(r.code == 0, qPrintable(r.outText() + r.errText()));
        QCOMPARE(r.outText().count(QStringLiteral("ok: ")), files.size());
    }

    void validateBrokenFiles()
    {
        QStringList files;
        for (const QString &f : QDir(kBroken).entryList({QStringLiteral("*.json")}))
            files << kBroken + QLatin1Char('/') + f;
        const Run r = runMemx(QStringList {QStringLiteral("validate"), QStringLiteral("--json")} + files);
        QCOMPARE(r.code, 1);
        const QJsonObject report = QJsonDocument::fromJson(r.out).object();
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
        const Run r = runMemx({QStringLiteral("validate"), kBroken + QStringLiteral("/plan-gap-and-reuse.json"),
                               QStringLiteral("--cluster"), kSamples + QStringLiteral("/h100-8x.json"),
                               QStringLiteral("--model"), QStringLiteral("gpt3-1.3b")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.outText().contains(QStringLiteral("/stages/1/firstLayer: expected 10")), qPrintable(r.outText()));
        QVERIFY(r.outText().contains(QStringLiteral("is already used by another replica")));
    }

    void infoJson()
    {
        const Run r = runMemx({QStringLiteral("info"), kSamples + QStringLiteral("/paper-20gpu-mixed-consumer.json"),
                               QStringLiteral("--json")});
        QCOMPARE(r.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
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
        const Run r = runMemx({QStringLiteral("info"), kBroken + QStringLiteral("/cluster-negative-gpus.json")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.errText().contains(QStringLiteral(
                     "cluster-negative-gpus.json: /nodes/0/gpus: expected an integer from 1 to 64, found -4")),
                 qPrintable(r.errText()));
    }

    void catalogue()
    {
        Run r = runMemx({QStringLiteral("catalogue"), QStringLiteral("--json")});
        QCOMPARE(r.code, 0);
        const QJsonArray devices = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("devices")).toArray();
        QVERIFY(devices.size() >= 18);
        r = runMemx({QStringLiteral("catalogue"), QStringLiteral("GH-96")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.outText().contains(QStringLiteral("gh200-96gb")));
        QVERIFY(r.outText().contains(QStringLiteral("source ")));
        r = runMemx({QStringLiteral("catalogue"), QStringLiteral("h100-sxn")});
        QCOMPARE(r.code, 1);
        QVERIFY(r.errText().contains(QStringLiteral("Did you mean")));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
