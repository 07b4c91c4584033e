// Megatron-LM log importer and the MemX CSV / JSON profile formats.
#include "memx/io/formats.h"
#include "memx/profiling/megatronlog.h"
#include "memx/profiling/profileio.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"

#include <QTest>

#include <cstring>

#include <cmath>

using namespace memx;

static const std::string kData = MEMX_SOURCE_DIR "/tests/data/profiles";

/// First diagnostic of loading `fn`, or a failure marker.
template<typename F> static Diagnostic firstProblem(F fn)
{
    try {
        fn();
    } catch (const LoadError &e) {
        return e.diagnostics().front();
    }
    return {"", "", "<no error>"};
}

class TestImporters : public QObject {
    Q_OBJECT

private slots:
    void megatronLogParses()
    {
        const std::string path = kData + "/megatron/gpt3-1.3b-tp4dp2.log";
        const MegatronLogSummary s = parseMegatronLog(readTextFile(path), path);
        QCOMPARE(s.iterationTimesMs.size(), size_t(8));
        QCOMPARE(s.iterationNumbers.front(), 1);
        QCOMPARE(s.iterationNumbers.back(), 8);
        QVERIFY(s.warnings.empty());
        // Skip the warm-up line: (1210.4+1205.6+1198.2+1201.8+1203.0+1199.5+1207.9)/7 = 8426.4/7 = 1203.7714...
        QVERIFY(std::abs(s.meanIterationMs(1) - 8426.4 / 7) < 1e-9);
        // All 8: (5234.1 + 8426.4) / 8 = 1707.5625
        QVERIFY(std::abs(s.meanIterationMs(0) - 1707.5625) < 1e-9);
        // Rank 4's later report (19001.5 MB) is the peak; MB are MiB: 19001 * 1048576 + 0.5 * 1048576 = 19923992576 +
        // 524288 = 19924516864 bytes.
        QCOMPARE(*s.peakAllocatedBytes(), 19924516864.0);
        QCOMPARE(s.maxAllocatedBytesByRank.size(), size_t(2));
        QCOMPARE(s.maxReservedBytesByRank[1].second, 21504.0 * 1048576);
    }

    void megatronRunImports()
    {
        const Cluster c = loadCluster(MEMX_SOURCE_DIR "/sample_clusters/h100-8x.json");
        const Plan p = loadPlan(kData + "/plan-h100-tp4dp2.json");
        const Model m = resolveModel("gpt3-1.3b");
        MegatronImportOptions o;
        o.skipIterations = 2;
        o.group = "h100/gpt3";
        const MeasuredRun r = importMegatronLog(kData + "/megatron/gpt3-1.3b-tp4dp2.log", p, c, m, o);
        // Skipping 2: (8426.4 - 1210.4) / 6 = 1202.6666...
        QVERIFY(std::abs(r.iterationTimeMs - 7216.0 / 6) < 1e-9);
        QVERIFY(r.memoryKind == MemoryKind::AllocatorMax);
        QCOMPARE(r.id, std::string("gpt3-1.3b-tp4dp2.log"));
        QCOMPARE(r.clusterName, c.name);
        QCOMPARE(r.group, std::string("h100/gpt3"));
        // Too many skipped iterations: a clear error, not a NaN.
        o.skipIterations = 8;
        const Diagnostic d
            = firstProblem([&] { importMegatronLog(kData + "/megatron/gpt3-1.3b-tp4dp2.log", p, c, m, o); });
        QVERIFY2(d.message.find("8 iteration line(s); skipping 8") != std::string::npos, d.message.c_str());
        // A plan that does not fit the model is rejected.
        const Diagnostic d2 = firstProblem(
            [&] { importMegatronLog(kData + "/megatron/gpt3-1.3b-tp4dp2.log", p, c, resolveModel("llama2-7b")); });
        QVERIFY2(d2.message.find("does not fit") != std::string::npos, d2.message.c_str());
    }

    void megatronTruncatedAndBrokenLogs()
    {
        const std::string trunc = kData + "/megatron/truncated.log";
        const MegatronLogSummary s = parseMegatronLog(readTextFile(trunc), trunc);
        QCOMPARE(s.iterationTimesMs.size(), size_t(2));
        QCOMPARE(s.warnings.size(), size_t(1));
        QCOMPARE(s.warnings[0].pointer, std::string("line 17"));
        QVERIFY(s.warnings[0].message.find("truncated") != std::string::npos);

        const std::string bad = kData + "/megatron/bad-number.log";
        const Diagnostic d = firstProblem([&] { parseMegatronLog(readTextFile(bad), bad); });
        QCOMPARE(d.file, bad);
        QCOMPARE(d.pointer, std::string("line 19"));
        QVERIFY(d.message.find("elapsed time per iteration") != std::string::npos);

        const std::string none = kData + "/megatron/no-iterations.log";
        const Diagnostic d2 = firstProblem([&] { parseMegatronLog(readTextFile(none), none); });
        QVERIFY(d2.message.find("no iteration line") != std::string::npos);
    }

    /// Issue 21 items 5 and 6: what torchrun and Slurm really write. Rank and timestamp prefixes
    /// on every line parse to the same figures as the plain log; two runs concatenated use the
    /// last run only (with a warning naming the line), a number cut at the end of the file is
    /// ignored with a warning instead of averaged in.
    void megatronPrefixesRestartsAndCutNumbers_data()
    {
        QTest::addColumn<QString>("prefix");
        QTest::newRow("torchrun default0") << "[default0]:";
        QTest::newRow("torchrun rank0") << "[rank0]: ";
        QTest::newRow("timestamp") << "2025-01-15 10:02:11,123 ";
        QTest::newRow("slurm task") << "0: ";
    }
    void megatronPrefixesRestartsAndCutNumbers()
    {
        QFETCH(QString, prefix);
        const std::string path = kData + "/megatron/gpt3-1.3b-tp4dp2.log";
        const std::string plain = readTextFile(path);
        const MegatronLogSummary ref = parseMegatronLog(plain, path);
        std::string prefixed;
        for (size_t at = 0; at < plain.size();) {
            const size_t nl = plain.find('\n', at);
            prefixed += prefix.toStdString() + plain.substr(at, nl - at + 1);
            at = nl == std::string::npos ? plain.size() : nl + 1;
        }
        const MegatronLogSummary s = parseMegatronLog(prefixed, "prefixed.log");
        QVERIFY(s.iterationTimesMs == ref.iterationTimesMs);
        QVERIFY(s.maxAllocatedBytesByRank == ref.maxAllocatedBytesByRank);
        QVERIFY(s.warnings.empty());

        // Restarted: the same run twice; the mean skipping one warm-up line is the single run's,
        // not one that includes the second warm-up (5234.1 ms).
        const MegatronLogSummary twice = parseMegatronLog(prefixed + prefixed, "restarted.log");
        QCOMPARE(twice.iterationTimesMs.size(), ref.iterationTimesMs.size());
        QVERIFY(std::abs(twice.meanIterationMs(1) - ref.meanIterationMs(1)) < 1e-9);
        QCOMPARE(twice.warnings.size(), size_t(1));
        QVERIFY2(twice.warnings[0].message.find("restarted run") != std::string::npos,
                 twice.warnings[0].message.c_str());

        // Cut in the middle of the last iteration's number: not averaged in, warned about.
        const size_t last = prefixed.rfind("elapsed time per iteration (ms): ");
        const std::string cut = prefixed.substr(0, last + std::strlen("elapsed time per iteration (ms): ") + 2);
        const MegatronLogSummary c = parseMegatronLog(cut, "cut.log");
        QCOMPARE(c.iterationTimesMs.size(), ref.iterationTimesMs.size() - 1);
        QCOMPARE(c.warnings.size(), size_t(1));
        QVERIFY2(c.warnings[0].message.find("truncated last line ignored") != std::string::npos,
                 c.warnings[0].message.c_str());
    }

    void csvParsesAndRoundTrips()
    {
        const auto profiles = loadProfileFile(kData + "/small.csv");
        QCOMPARE(profiles.size(), size_t(2));
        const LayerProfile &p1 = profiles[0];
        QCOMPARE(p1.key, (ProfileKey {"a100-80gb-sxm", "toy-2l", 2, 1, 2048})); // alias resolved to the catalogue id
        QCOMPARE(p1.layers.size(), size_t(4));
        QCOMPARE(p1.layers[1].backwardMs, 6.5);
        QVERIFY(!p1.layers[0].activationBytes);
        QCOMPARE(*p1.layers[3].paramBytes, 2048.0);
        // Rows of the mbs-2 profile come in any order; layers are sorted by index.
        QCOMPARE(profiles[1].layers[3].forwardMs, 2.9);
        QCOMPARE(profiles[1].layers[0].forwardMs, 0.9);
        // CSV -> text -> CSV is exact (shortest round-trip number formatting).
        const auto again = parseProfileCsv(profilesToCsv(profiles), "again.csv");
        QCOMPARE(again.size(), profiles.size());
        for (size_t i = 0; i < again.size(); ++i) {
            QVERIFY(again[i].key == profiles[i].key);
            QVERIFY(again[i].layers == profiles[i].layers);
        }
    }

    void activationBytesAgainstTheShape()
    {
        // Korthikanti et al. per layer and sequence: flash sbh(10 + 24/t), unfused + 5 a s^2 h/(h t).
        // s = h = 1024, a = 16, t = 2: flash 23,068,672 bytes, unfused 65,011,712; accepted
        // between half the first (11,534,336) and twice the second (130,023,424).
        Model m;
        m.id = "shape";
        m.shape.seqLength = 1024;
        m.shape.hidden = 1024;
        m.shape.heads = 16;
        QVERIFY(activationBytesProblem(m, 2, 11.5e6).has_value());
        QVERIFY(!activationBytesProblem(m, 2, 11.6e6).has_value());
        QVERIFY(!activationBytesProblem(m, 2, 130.0e6).has_value());
        const std::optional<std::string> why = activationBytesProblem(m, 2, 131.0e6);
        QVERIFY(why && why->find("contradict the shape of model shape") != std::string::npos);
        // In a profile: the transformer layer that contradicts is named with the field.
        LayerProfile p;
        p.key = {"h100-sxm", "shape", 2, 4, 1024};
        p.layers.resize(4);
        p.layers[1].activationBytes = 4 * 30e6;
        p.layers[2].activationBytes = 4 * 200e6; // per sequence 200 MB: more than twice unfused
        const auto bad = profileShapeProblems(
            {p}, [&](const std::string &id) { return id == "shape" ? std::optional<Model>(m) : std::nullopt; },
            "p.json");
        QCOMPARE(bad.size(), size_t(1));
        QCOMPARE(bad[0].file, std::string("p.json"));
        QVERIFY2(bad[0].pointer.find("layer 2, activationBytes") != std::string::npos, bad[0].pointer.c_str());
        QVERIFY(profileShapeProblems(
                    {p}, [](const std::string &) { return std::optional<Model>(); }, "p.json")
                    .empty()); // unknown model: not checked
    }

    void jsonParsesAndRoundTrips()
    {
        const auto profiles = loadProfileFile(kData + "/small.json");
        QCOMPARE(profiles.size(), size_t(1));
        QCOMPARE(profiles[0].key.gpu, std::string("mi250x"));
        QCOMPARE(profiles[0].key.seqLength, 4096);
        QCOMPARE(profiles[0].source, std::string("rocprof run 17"));
        QVERIFY(!profiles[0].layers[3].paramBytes);
        QVERIFY(parseProfileJson(profilesToJsonText(profiles), "x.json") == profiles);
        // JSON -> CSV -> JSON keeps the numbers (source becomes the CSV file name).
        auto viaCsv = parseProfileCsv(profilesToCsv(profiles), "x.csv");
        QVERIFY(viaCsv[0].layers == profiles[0].layers);
    }

    void badProfilesNamePlace_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("pointer");
        QTest::addColumn<QString>("message");
        QTest::newRow("csv bad number") << "bad-number.csv"
                                        << "line 4, column forward_ms"
                                        << "expected a number, found \"abc\"";
        QTest::newRow("csv missing layer") << "missing-layer.csv"
                                           << "line 7"
                                           << "layer 1 is missing";
        QTest::newRow("csv bad header") << "bad-header.csv"
                                        << "line 2"
                                        << "expected the header";
        QTest::newRow("csv unknown gpu") << "unknown-gpu.csv"
                                         << "line 5, column gpu"
                                         << "unknown GPU \"A100-8O\"";
        QTest::newRow("json bad fields") << "bad-fields.json"
                                         << "/profiles/0/gpu"
                                         << "unknown GPU \"MI999\"";
        QTest::newRow("json not json") << "../broken/cluster-truncated.json"
                                       << "line"
                                       << "invalid JSON";
    }
    void badProfilesNamePlace()
    {
        QFETCH(QString, file);
        QFETCH(QString, pointer);
        QFETCH(QString, message);
        const std::string path = kData + "/" + file.toStdString();
        try {
            loadProfileFile(path);
            QFAIL("expected an error");
        } catch (const LoadError &e) {
            const Diagnostic &d = e.diagnostics().front();
            QCOMPARE(d.file, path);
            QVERIFY2(d.pointer.rfind(pointer.toStdString(), 0) == 0, e.what());
            QVERIFY2(d.message.find(message.toStdString()) != std::string::npos, e.what());
            if (file == "bad-fields.json") {
                // Every problem is reported, not just the first.
                const std::string all = e.what();
                QVERIFY2(all.find("/profiles/0/tp") != std::string::npos, e.what());
                QVERIFY2(all.find("/profiles/0/layers/1/backwardMs") != std::string::npos, e.what());
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestImporters)
#include "tst_importers.moc"
