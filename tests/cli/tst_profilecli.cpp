// The profiling loop through the real binary: profile plan -> run-simulated (virtual testbed) ->
// import the simulated logs by manifest -> coverage -> augment -> search with the profiles and run
// the top plans on the testbed -> measured (simulated) runs in the project.
#include "memx/io/formats.h"
#include "memx/profiling/coverage.h"
#include "memx/store/sqlitestore.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>

#include "testutils.h"

using Run = memxtest::CliRun;
using memxtest::runMemx;

static const QString kSamples = QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters");

class TestProfileCli : public QObject {
    Q_OBJECT

private slots:
    void closesTheLoop()
    {
        QTemporaryDir tmp;
        const QString cluster = kSamples + "/h100-8x.json";
        const QString jobs = tmp.filePath("jobs"), logs = tmp.filePath("logs");
        const QString project = tmp.filePath("p.memx"), project2 = tmp.filePath("p2.memx");

        // 1. Plan the minimal set and write the jobs.
        const Run plan = runMemx({"profile", "plan", "--cluster", cluster, "--model", "gpt3-1.3b", "--mbs", "1,2,4,8",
                                  "--out", jobs, "--date", "2025-01-01T00:00:00Z", "--json"});
        QVERIFY2(plan.code == 0, plan.err.constData());
        const QJsonObject pj = plan.json();
        const int perLayer = pj["measuredKernels"].toArray().size();
        QVERIFY(perLayer > 0);
        QVERIFY(perLayer < pj["neededKernels"].toArray().size());
        QVERIFY(pj["estimate"].toObject()["ratio"].toDouble() > 1);
        QVERIFY(QFile::exists(jobs + "/manifest.json"));
        const QJsonArray jobList = pj["jobs"].toArray();
        int e2e = 0;
        for (const auto &j : jobList) {
            QVERIFY(QFile::exists(jobs + "/" + j.toObject()["scripts"].toArray()[0].toString()));
            // Memory-calibration jobs are end-to-end runs of the truncated model.
            e2e += j.toObject()["kind"].toString() == "end-to-end" || j.toObject()["kind"].toString() == "memory";
        }
        QVERIFY(e2e >= 1);

        // 2. Run the jobs on the virtual testbed: profiles + runs into the project, logs to disk.
        const Run sim = runMemx({"profile", "run-simulated", "--project", project, "--jobs", jobs + "/manifest.json",
                                 "--seed", "5", "--write-logs", logs, "--json"});
        QVERIFY2(sim.code == 0, sim.err.constData());
        const QJsonObject sj = sim.json();
        QVERIFY(sj["simulated"].toBool());
        QCOMPARE(sj["source"].toString(), QString("virtual-testbed seed=5"));
        QCOMPARE(sj["profiles"].toInt(), perLayer);
        QCOMPARE(sj["runs"].toInt() + sj["failed"].toInt(), e2e);

        // 3. Import the simulated logs through the manifest, as real logs would be.
        const Run imp = runMemx({"profile", "import", "--format", "megatron", "--manifest", jobs + "/manifest.json",
                                 "--project", project2, "--json", logs});
        QVERIFY2(imp.code == 0, imp.err.constData());
        QCOMPARE(imp.json()["profiles"].toInt(), perLayer);
        QCOMPARE(imp.json()["runs"].toInt(), sj["runs"].toInt());
        // Profiles recovered from the simulated timer logs keep the simulated label (the arithmetic
        // of the recovery is checked in tst_minimalset perLayerImportFromTimerLogs).
        const Run l1 = runMemx({"profile", "list", "--project", project, "--json"});
        const Run l2 = runMemx({"profile", "list", "--project", project2, "--json"});
        QCOMPARE(l1.code, 0);
        QCOMPARE(l2.code, 0);
        for (const auto &p : l2.json()["profiles"].toArray())
            QCOMPARE(p.toObject()["origin"].toString(), QString("simulated")); // still labelled simulated

        // 4. Coverage shows measured points on the cluster's GPU type.
        const Run cov = runMemx({"profile", "coverage", "--project", project, "--cluster", cluster, "--json"});
        QVERIFY2(cov.code == 0, cov.err.constData());
        const QJsonObject h100
            = QJsonDocument::fromJson(cov.out).array()[0].toObject()["gpus"].toObject()["h100-sxm"].toObject();
        QCOMPARE(h100["simulated"].toInt(), perLayer); // testbed profiles show as S, not M
        QCOMPARE(h100["measured"].toInt(), 0);
        // Every cell as the core's one coverage rule (the Profiles dock's) gives it.
        {
            const memx::SqliteStore store(project.toStdString(), false);
            const memx::Cluster c = memx::loadCluster(cluster.toStdString());
            memx::CoverageQuery q;
            q.model = "gpt3-1.3b";
            q.seqLength = memx::resolveModel("gpt3-1.3b").shape.seqLength;
            q.cluster = &c;
            const std::vector<memx::DeviceCoverage> core = memx::profileCoverage(store.profiles(), q);
            QCOMPARE(core.size(), size_t(1));
            const QJsonArray cells = h100["cells"].toArray();
            QCOMPARE(cells.size(), qsizetype(core[0].tps.size() * core[0].microBatches.size()));
            for (const auto &v : cells) {
                const QJsonObject cell = v.toObject();
                const size_t t = size_t(std::find(core[0].tps.begin(), core[0].tps.end(), cell["tp"].toInt())
                                        - core[0].tps.begin());
                const size_t b = size_t(
                    std::find(core[0].microBatches.begin(), core[0].microBatches.end(), cell["microBatch"].toInt())
                    - core[0].microBatches.begin());
                QCOMPARE(cell["status"].toString(), QString::fromLatin1(memx::toString(core[0].cells[t][b])));
            }
        }

        // 5. Augment adds the interpolated profiles.
        const Run aug = runMemx({"profile", "augment", "--project", project, "--json"});
        QVERIFY2(aug.code == 0, aug.err.constData());
        QVERIFY(aug.json()["added"].toArray().size() > 0);
        const Run again = runMemx({"profile", "augment", "--project", project, "--json"});
        QCOMPARE(again.json()["removedPreviousInterpolated"].toInt(), aug.json()["added"].toArray().size());
        const Run cov2 = runMemx({"profile", "coverage", "--project", project, "--cluster", cluster, "--json"});
        const QJsonObject h2
            = QJsonDocument::fromJson(cov2.out).array()[0].toObject()["gpus"].toObject()["h100-sxm"].toObject();
        QVERIFY(h2["interpolated"].toInt() > 0);
        QCOMPARE(h2["simulated"].toInt(), perLayer);

        // 6. Search with the project's profiles, run the top 3 on the testbed.
        const Run top = runMemx({"profile", "run-simulated", "--project", project, "--cluster", cluster, "--model",
                                 "gpt3-1.3b", "--top", "3", "--seed", "5", "--json"});
        QVERIFY2(top.code == 0, top.err.constData());
        QCOMPARE(top.json()["runs"].toInt() + top.json()["failed"].toInt(), 3);
        const Run list = runMemx({"profile", "list", "--project", project, "--json"});
        int testbedRuns = 0;
        for (const auto &r : list.json()["runs"].toArray()) {
            const QJsonObject o = r.toObject();
            QVERIFY(o["source"].toString().startsWith("virtual-testbed seed=5"));
            QCOMPARE(o["memoryKind"].toString(), QString("device-used"));
            QCOMPARE(o["group"].toString(), QString("testbed/Homogeneous 8 x H100 SXM"));
            QVERIFY(o["iterationTimeMs"].toDouble() > 0);
            ++testbedRuns;
        }
        QCOMPARE(testbedRuns, sj["runs"].toInt() + top.json()["runs"].toInt());

        // Text output says SIMULATED.
        const Run text = runMemx(
            {"profile", "run-simulated", "--project", project, "--jobs", jobs + "/manifest.json", "--no-import"});
        QCOMPARE(text.code, 0);
        QVERIFY(text.out.contains("SIMULATED"));
    }

    void planFor20GpuSample()
    {
        const Run r = runMemx({"profile", "plan", "--cluster", kSamples + "/paper-20gpu-nvidia-amd.json", "--model",
                               "llama2-7b", "--threads", "2"});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY(r.out.contains("Exhaustive:"));
        QVERIFY(r.out.contains("GPU-hours"));
        QVERIFY(r.out.contains("Ratio:"));
        QVERIFY(r.out.contains("31,240 x 47 s = 17.0 days"));
    }

    /// `profile plan` and `run-simulated --top` read the search space through searchoptions.cpp
    /// (every option of `memx search`): a narrower space plans fewer configurations, a bad value
    /// is a usage error naming the option.
    void planUsesTheSearchOptions()
    {
        const QString cluster = kSamples + "/paper-20gpu-nvidia-amd.json";
        const QStringList base
            = {"profile", "plan", "--cluster", cluster, "--model", "llama2-7b", "--threads", "2", "--json"};
        const Run all = runMemx(base);
        const Run narrow = runMemx(base + QStringList {"--no-permute", "--recompute", "none", "--dist-opt", "on"});
        QVERIFY2(all.code == 0, all.err.constData());
        QVERIFY2(narrow.code == 0, narrow.err.constData());
        const double a = all.json()["estimate"].toObject()["configurations"].toDouble();
        const double n = narrow.json()["estimate"].toObject()["configurations"].toDouble();
        QVERIFY2(n > 0 && n < a / 10, qPrintable(QStringLiteral("%1 of %2").arg(n).arg(a)));
        const Run bad = runMemx(base + QStringList {"--dist-opt", "maybe"});
        QCOMPARE(bad.code, 2);
        QVERIFY(bad.err.contains("--dist-opt: expected off or on"));
        const Run top = runMemx({"profile", "run-simulated", "--cluster", kSamples + "/h100-8x.json", "--model",
                                 "gpt3-1.3b", "--top", "1", "--recompute", "sometimes", "--no-import"});
        QCOMPARE(top.code, 2);
        QVERIFY(top.err.contains("--recompute: expected none, selective or full"));
    }

    void contradictingBytesAreRefused()
    {
        // gpt3-1.3b (s 2048, h 2048, 16 heads) at TP 1: a layer keeps 2048 x 2048 x 34 = 142.6 MB
        // per sequence with flash attention; 1 MB per sequence was measured for another shape.
        QTemporaryDir tmp;
        auto write = [&](const QString &name, double bytes) {
            QFile f(tmp.filePath(name));
            if (!f.open(QIODevice::WriteOnly))
                return QString();
            QByteArray layers;
            for (int i = 0; i < 26; ++i)
                layers += QByteArray(i ? "," : "") + "{\"forwardMs\": 1, \"backwardMs\": 2"
                    + (i > 0 && i < 25 ? ", \"activationBytes\": " + QByteArray::number(bytes, 'f', 0) : "") + "}";
            f.write(R"({"format": "memx.profile/1", "profiles": [{"gpu": "h100-sxm", "model": "gpt3-1.3b", "tp": 1,
                "microBatch": 2, "seqLength": 2048, "layers": [)"
                    + layers + "]}]}");
            return f.fileName();
        };
        const QString bad = write("bad.json", 2 * 1e6), good = write("good.json", 2 * 150e6);
        const Run r = runMemx({"profile", "import", "--format", "json", "--project", tmp.filePath("p.memx"), bad});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("bad.json") && r.err.contains("layer 1, activationBytes")
                     && r.err.contains("contradict the shape of model gpt3-1.3b"),
                 r.err.constData());
        QVERIFY(!QFile::exists(tmp.filePath("p.memx")));
        QCOMPARE(runMemx({"profile", "import", "--format", "json", "--project", tmp.filePath("p.memx"), good}).code, 0);
    }

    void errors()
    {
        QTemporaryDir tmp;
        const QString cluster = kSamples + "/h100-8x.json";
        QCOMPARE(runMemx({"profile", "run-simulated", "--project", tmp.filePath("x.memx")}).code, 2); // no mode
        QCOMPARE(runMemx({"profile", "run-simulated", "--top", "2"}).code, 2); // needs cluster/model
        QCOMPARE(runMemx({"profile", "plan", "--cluster", cluster}).code, 2);
        QCOMPARE(runMemx({"profile", "plan", "--cluster", cluster, "--model", "gpt3-1.3b", "--tp", "1,x"}).code, 2);
        QFile bad(tmp.filePath("bad.json"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write(R"({"format": "memx.profilejobs/1", "jobs": [{"id": "a", "kind": "sideways"}]})");
        bad.close();
        const Run r
            = runMemx({"profile", "run-simulated", "--project", tmp.filePath("x.memx"), "--jobs", bad.fileName()});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("/jobs/0/kind"), r.err.constData());
        QVERIFY(!QFile::exists(tmp.filePath("x.memx")));
        QCOMPARE(runMemx({"profile", "augment", "--project", tmp.filePath("none.memx")}).code, 1);
    }
};

QTEST_GUILESS_MAIN(TestProfileCli)
#include "tst_profilecli.moc"
