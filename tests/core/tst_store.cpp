// Project store (MemoryStore, SqliteStore) and the Sailor dataset importer.
#include "memx/io/formats.h"
#include "memx/profiling/profileio.h"
#include "memx/profiling/sailorimporter.h"
#include "memx/store/memorystore.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/diagnostic.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

using namespace memx;

static const std::string kSailor = MEMX_SHARED_DIR "/data/public/sailor";
static const std::string kData = MEMX_SOURCE_DIR "/tests/data/profiles";

static LayerProfile sampleProfile(int mbs, ProfileOrigin origin = ProfileOrigin::Measured)
{
    LayerProfile p;
    p.key = {"a100-80gb-sxm", "gpt3-1.3b", 2, mbs, 2048};
    for (int i = 0; i < 5; ++i)
        p.layers.push_back(
            {0.5 * i + mbs, 1.0 * i + 2 * mbs, 0.1, 1e6 * i, i == 0 ? std::nullopt : std::optional(3e7)});
    p.origin = origin;
    p.source = "unit-test";
    return p;
}

static MeasuredRun sampleRun()
{
    MeasuredRun r;
    r.id = "run-1";
    r.cluster = loadCluster(MEMX_SOURCE_DIR "/sample_clusters/h100-8x.json");
    r.clusterName = r.cluster.name;
    r.plan = loadPlan(MEMX_SOURCE_DIR "/tests/data/profiles/plan-h100-tp4dp2.json");
    r.modelId = "gpt3-1.3b";
    r.iterationTimeMs = 1234.5;
    r.peakMemoryBytes = 3.25e10;
    r.memoryKind = MemoryKind::Reserved;
    r.source = "log.txt";
    r.date = "2025-01-02";
    r.group = "h100/gpt3";
    return r;
}

static NetworkMeasurement sampleNetwork()
{
    NetworkMeasurement m;
    m.scope = LinkScope::InterNode;
    m.senderGpu = m.receiverGpu = "h100-sxm";
    m.senderGpusPerNode = m.receiverGpusPerNode = 8;
    m.curve = {{1024, 0.5}, {1 << 20, 20.25}, {1 << 30, 45}};
    m.capGBps = 45;
    m.source = "nccl-tests";
    return m;
}

class TestStore : public QObject {
    Q_OBJECT

    QTemporaryDir mTmp;

    std::unique_ptr<Store> makeStore(const QString &kind, const QString &file = "p.memx")
    {
        if (kind == "memory")
            return std::make_unique<MemoryStore>();
        return std::make_unique<SqliteStore>(mTmp.filePath(file).toStdString());
    }

    static void fillStore(Store &s)
    {
        s.putCluster(loadCluster(MEMX_SOURCE_DIR "/sample_clusters/h100-8x.json"));
        s.putModel(resolveModel("gpt3-1.3b"));
        s.putProfile(sampleProfile(1));
        s.putProfile(sampleProfile(4, ProfileOrigin::Interpolated));
        s.putRun(sampleRun());
        s.putNetwork(sampleNetwork());
        s.putBlob("predictor", "default", {0, 1, 2, 255});
    }

private slots:
    void initTestCase() { QVERIFY(mTmp.isValid()); }

    void storesAndReadsBack_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::newRow("memory") << "memory";
        QTest::newRow("sqlite") << "sqlite";
    }
    void storesAndReadsBack()
    {
        QFETCH(QString, kind);
        auto s = makeStore(kind, "readback.memx");
        fillStore(*s);
        const Cluster c = loadCluster(MEMX_SOURCE_DIR "/sample_clusters/h100-8x.json");
        QVERIFY(s->cluster(c.name) == c);
        QCOMPARE(s->clusterNames(), std::vector<std::string> {c.name});
        QVERIFY(s->model("gpt3-1.3b") == resolveModel("gpt3-1.3b"));
        QVERIFY(!s->model("nope"));
        QVERIFY(s->profile(sampleProfile(1).key) == sampleProfile(1));
        QCOMPARE(s->profiles().size(), size_t(2));
        QVERIFY(s->run("run-1") == sampleRun());
        QCOMPARE(s->runs().size(), size_t(1));
        QVERIFY(s->networkMeasurements().front() == sampleNetwork());
        QVERIFY((s->blob("predictor", "default") == std::vector<std::uint8_t> {0, 1, 2, 255}));
        QCOMPARE(s->blobKeys("predictor"), std::vector<std::string> {"default"});
        // Replacing by key keeps one copy.
        LayerProfile changed = sampleProfile(1);
        changed.layers[1].forwardMs = 99;
        s->putProfile(changed);
        QCOMPARE(s->profiles().size(), size_t(2));
        QCOMPARE(s->profile(changed.key)->layers[1].forwardMs, 99.0);
        QCOMPARE(s->removeProfiles(ProfileOrigin::Interpolated), size_t(1));
        QCOMPARE(s->profiles().size(), size_t(1));
        s->removeBlob("predictor", "default");
        QVERIFY(!s->blob("predictor", "default"));
    }

    void transactionsRollBack_data() { storesAndReadsBack_data(); }
    void transactionsRollBack()
    {
        QFETCH(QString, kind);
        auto s = makeStore(kind, "rollback.memx");
        s->putProfile(sampleProfile(1));
        {
            StoreTransaction tx(*s);
            s->putProfile(sampleProfile(2));
            s->putRun(sampleRun());
            QVERIFY(s->inTransaction());
            // no commit: the guard rolls back
        }
        QVERIFY(!s->inTransaction());
        QCOMPARE(s->profiles().size(), size_t(1));
        QVERIFY(s->runs().empty());
        {
            StoreTransaction tx(*s);
            s->putProfile(sampleProfile(2));
            tx.commit();
        }
        QCOMPARE(s->profiles().size(), size_t(2));
        s->begin();
        QVERIFY_THROWS_EXCEPTION(std::logic_error, s->begin());
        s->rollback();
    }

    void failedImportLeavesStoreUnchanged_data() { storesAndReadsBack_data(); }
    void failedImportLeavesStoreUnchanged()
    {
        QFETCH(QString, kind);
        auto s = makeStore(kind, "halfway.memx");
        fillStore(*s);
        const ProfileSet before = s->profiles();
        ImportBatch batch;
        for (int mbs = 8; mbs < 40; ++mbs)
            batch.profiles.push_back(sampleProfile(mbs));
        batch.runs.push_back(sampleRun());
        batch.runs.back().id = "run-2";
        // Cancelled half-way through the writes: the one convention, memx::Cancelled.
        size_t calls = 0;
        QVERIFY_THROWS_EXCEPTION(Cancelled, writeImport(*s, batch, [&](size_t done, size_t total) {
                                     ++calls;
                                     return done < total / 2;
                                 }));
        QCOMPARE(calls, batch.itemCount() / 2);
        QVERIFY(s->profiles() == before);
        QVERIFY(!s->run("run-2"));
        // A write that fails half-way (an invalid item after valid ones) throws and changes nothing.
        batch.profiles[20].key.gpu.clear();
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, writeImport(*s, batch));
        QVERIFY(s->profiles() == before);
        QVERIFY(!s->inTransaction());
        // The same batch without the bad item goes in whole.
        batch.profiles.erase(batch.profiles.begin() + 20);
        writeImport(*s, batch);
        QCOMPARE(s->profiles().size(), before.size() + batch.profiles.size());
        QVERIFY(s->run("run-2"));
    }

    void sqliteFileIsDurableAndVersioned()
    {
        const std::string path = mTmp.filePath("durable.memx").toStdString();
        {
            SqliteStore s(path);
            QCOMPARE(s.fileSchemaVersion(), 0); // a new file is migrated from version 0
            fillStore(s);
            // WAL journal: the log file exists while the store is open.
            QVERIFY2(std::filesystem::exists(path + "-wal"), "expected WAL journal mode");
        }
        {
            SqliteStore s(path, false);
            QCOMPARE(s.fileSchemaVersion(), SqliteStore::schemaVersion());
            QVERIFY(s.run("run-1") == sampleRun());
            // Atomic save-as: a complete copy appears under the new name.
            s.saveAs(mTmp.filePath("copy.memx").toStdString());
        }
        SqliteStore copy(mTmp.filePath("copy.memx").toStdString(), false);
        QVERIFY(copy.run("run-1") == sampleRun());
        QVERIFY(copy.profiles() == SqliteStore(path, false).profiles());
        QVERIFY(std::filesystem::directory_iterator(mTmp.path().toStdString())
                != std::filesystem::directory_iterator());
        for (const auto &e : std::filesystem::directory_iterator(mTmp.path().toStdString()))
            QVERIFY2(e.path().filename().string().find(".tmp-") == std::string::npos, "temporary file left behind");
    }

    void rejectsNewerSchemaAndForeignFiles()
    {
        const std::string path = mTmp.filePath("newer.memx").toStdString();
        {
            SqliteStore s(path);
            s.putModel(resolveModel("gpt3-1.3b"));
        }
        {
            // user_version lives at byte offset 60 of the SQLite header (big-endian).
            std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(60);
            const char v[4] = {0, 0, 0, 99};
            f.write(v, 4);
        }
        try {
            SqliteStore s(path, false);
            QFAIL("opening a newer schema must fail");
        } catch (const LoadError &e) {
            QVERIFY2(std::string(e.what()).find("schema version 99, newer") != std::string::npos, e.what());
            QCOMPARE(e.diagnostics().front().file, path);
        }
        const std::string text = mTmp.filePath("text.memx").toStdString();
        std::ofstream(text) << "this is not a database, just some text that is long enough to have a header......"
                               "...................................................................";
        QVERIFY_THROWS_EXCEPTION(LoadError, SqliteStore(text, false));
        QVERIFY_THROWS_EXCEPTION(LoadError, SqliteStore(mTmp.filePath("absent.memx").toStdString(), false));
    }

    /// Issue 21 item 6: messages a user can act on, and files that stay as they were.
    void projectFileMessages()
    {
        const auto refused = [](const std::string &path) -> std::string {
            try {
                SqliteStore s(path, false);
                (void)s.runs();
            } catch (const LoadError &e) {
                return e.diagnostics().front().message;
            } catch (const std::runtime_error &e) {
                return e.what();
            }
            return "opened";
        };
        // A 0-byte file is not turned into a project.
        const std::string empty = mTmp.filePath("empty.memx").toStdString();
        std::ofstream(empty).flush();
        QCOMPARE(refused(empty), std::string("not a MemX project file (the file is empty)"));
        QCOMPARE(std::filesystem::file_size(empty), std::uintmax_t(0));

        // user_version reset to 0 on a project: not "table schema_migrations already exists".
        const std::string reset = mTmp.filePath("reset.memx").toStdString();
        {
            SqliteStore s(reset);
            s.putRun(sampleRun());
        }
        {
            std::fstream f(reset, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(60);
            const char v[4] = {0, 0, 0, 0};
            f.write(v, 4);
        }
        const std::string r = refused(reset);
        QVERIFY2(r.find("schema version (PRAGMA user_version) is 0 although it holds MemX tables") != std::string::npos
                     && r.find("PRAGMA user_version=1") != std::string::npos
                     && r.find("already exists") == std::string::npos,
                 r.c_str());

        // A dropped column: not a raw SQL error.
        const std::string dropped = mTmp.filePath("dropped.memx").toStdString();
        {
            SqliteStore s(dropped);
            s.putRun(sampleRun());
        }
        {
            sqlite3 *db = nullptr;
            QCOMPARE(sqlite3_open(dropped.c_str(), &db), SQLITE_OK);
            QCOMPARE(sqlite3_exec(db, "ALTER TABLE runs DROP COLUMN json", nullptr, nullptr, nullptr), SQLITE_OK);
            sqlite3_close(db);
        }
        const std::string d = refused(dropped);
        QVERIFY2(d.find("the project file's tables are not those of a MemX project (no such column: json")
                     != std::string::npos,
                 d.c_str());

        // chmod 444: listed read-only; a write says so.
        const std::string ro = mTmp.filePath("readonly.memx").toStdString();
        {
            SqliteStore s(ro);
            s.putRun(sampleRun());
        }
        std::filesystem::permissions(ro,
                                     std::filesystem::perms::owner_read | std::filesystem::perms::group_read
                                         | std::filesystem::perms::others_read);
        {
            SqliteStore s(ro, false);
            QCOMPARE(s.runs().size(), size_t(1));
            try {
                s.putModel(resolveModel("gpt3-1.3b"));
                QFAIL("a write to a read-only project succeeded");
            } catch (const std::runtime_error &e) {
                QVERIFY2(std::string(e.what()).find("the project file is read-only") != std::string::npos, e.what());
            }
        }
        std::filesystem::permissions(ro, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
    }

    // ---- Sailor dataset ----

    void sailorFitMatchesHandArithmetic()
    {
        // GH-96 intra-node, 4 GPUs: [-0.75177369, 26.46781337, 82.0621593], cap 250558342885.70334 bytes/s.
        const std::vector<double> c = {-0.75177369, 26.46781337, 82.0621593};
        // At 1e6 bytes x = 0: the constant term.
        QCOMPARE(sailorFitGBps(c, 250558342885.70334, 1e6), 82.0621593);
        // At 4e6 bytes x = 2: -0.75177369*4 + 26.46781337*2 + 82.0621593 = -3.00709476 + 52.93562674 + 82.0621593 =
        // 131.99069128
        QVERIFY(std::abs(sailorFitGBps(c, 250558342885.70334, 4e6) - 131.99069128) < 1e-6);
        // At 1 GiB x = 30 - log2(1e6) = 10.068; the polynomial (272.3) exceeds the cap: 250.558 GB/s.
        QVERIFY(std::abs(sailorFitGBps(c, 250558342885.70334, 1073741824.0) - 250.55834288570334) < 1e-9);
        // At 1 KiB the polynomial is negative (-256): floored at 1% of the cap.
        QVERIFY(std::abs(sailorFitGBps(c, 250558342885.70334, 1024) - 2.5055834288570334) < 1e-9);
    }

    void sailorImportsEverything()
    {
        if (!std::filesystem::exists(kSailor))
            QSKIP("public Sailor data not found at MEMX_SHARED_DIR/data/public/sailor");
        size_t lastDone = 0, lastTotal = 0;
        const ImportBatch b = importSailor(kSailor, [&](size_t done, size_t total) {
            lastDone = done;
            lastTotal = total;
            return true;
        });
        QCOMPARE(lastDone, lastTotal);
        // 213 (model, GPU, micro-batch, TP) entries in layer_times.json (counted with a jq/python one-liner).
        QCOMPARE(b.profiles.size(), size_t(213));
        QCOMPARE(b.runs.size(), size_t(41)); // 26 gh200-main + 15 gh200-rerun plan_config files
        QCOMPARE(b.models.size(), size_t(4));
        // 17 intra-node + 24 homogeneous inter-node + 1016 multi-zone fits (the homo "intra" duplicates
        // intra_node_bandwidths.json).
        QCOMPARE(b.network.size(), size_t(1057));

        // OPT-350 on GH-96, mbs 1, TP 1, layer 25 (head): [0.002068, 0.002109, 0.001337] s.
        const LayerProfile *p = nullptr;
        for (const LayerProfile &x : b.profiles)
            if (x.key == ProfileKey {"gh200-96gb", "sailor-opt-350", 1, 1, 2048})
                p = &x;
        QVERIFY(p);
        QCOMPARE(p->layers.size(), size_t(26));
        QVERIFY(std::abs(p->layers[25].forwardMs - 2.068) < 1e-9);
        QVERIFY(std::abs(p->layers[25].optimizerMs - 1.337) < 1e-9);
        // GPT-Neo-2.7, A100-40, mbs 2, TP 2, layer 5: memory params 157383680 B, activations 388005888 B/sample x 2.
        for (const LayerProfile &x : b.profiles)
            if (x.key == ProfileKey {"a100-40gb-sxm", "sailor-gpt-neo-2.7", 2, 2, 2048}) {
                QCOMPARE(*x.layers[5].paramBytes, 157383680.0);
                QCOMPARE(*x.layers[5].activationBytes, 2 * 388005888.0);
                QVERIFY(std::abs(x.layers[5].backwardMs - 12.448) < 1e-9);
            }
        // LLAMA-3-8 has 35 entries for 32 layers: the final norm is folded into the head (with a warning).
        for (const LayerProfile &x : b.profiles)
            if (x.key.model == "sailor-llama-3-8")
                QCOMPARE(x.layers.size(), size_t(34));

        // The GPT-Neo model comes from the training config: 32 heads, vocab 128256.
        for (const Model &m : b.models)
            if (m.id == "sailor-gpt-neo-2.7") {
                QCOMPARE(m.shape.heads, 32);
                QCOMPARE(m.shape.vocab, 128256);
                QCOMPARE(m.training.globalBatch, 2048);
            }

        // measured-runs/gh200-main/OPT-350/N4/plan_config_N4_D2.json: 2 stages x DP 2, TP 4, mbs 1, gbs 64.
        const MeasuredRun *run = nullptr;
        for (const MeasuredRun &r : b.runs)
            if (r.id == "sailor/gh200-main/OPT-350/N4/plan_config_N4_D2")
                run = &r;
        QVERIFY(run);
        QCOMPARE(run->iterationTimeMs, 1445.23);
        QCOMPARE(*run->peakMemoryBytes, 7976517632.0);
        QVERIFY(run->memoryKind == MemoryKind::DeviceUsed);
        QCOMPARE(run->group, std::string("gh200-main/OPT-350"));
        QCOMPARE(run->cluster.totalGpus(), 16);
        QCOMPARE(run->plan.pp(), 2);
        // Stage 0 holds entries 0..11 = embedding + transformer layers 0..10; stage 1 entries 12..25 = layers 11..23 +
        // head.
        QCOMPARE(run->plan.stages[0].firstLayer, 0);
        QCOMPARE(run->plan.stages[0].layerCount, 11);
        QCOMPARE(run->plan.stages[1].firstLayer, 11);
        QCOMPARE(run->plan.stages[1].layerCount, 13);
        QCOMPARE(run->plan.stages[1].replicas[1].node, std::string("gh-96-3"));
        QCOMPARE(run->plan.stages[1].replicas[1].gpus, (std::vector<int> {0, 1, 2, 3}));
        QCOMPARE(run->plan.microBatches(), 32); // 64 / (2 replicas x mbs 1)
        // The cluster's inter-node link is the measured GH-96 4-GPU curve, capped at 22.93 GB/s (multizone fit).
        QVERIFY(!run->cluster.network.interNode.curve.empty());

        // The 5 GPT-Neo files with "29" for 19 import with a warning naming the element.
        int typo = 0;
        for (const Diagnostic &w : b.warnings)
            if (w.message.find("not contiguous") != std::string::npos) {
                ++typo;
                QCOMPARE(w.pointer, std::string("/pipeline_list/0/layers_per_stage/2/3"));
            }
        QCOMPARE(typo, 5);
        for (const MeasuredRun &r : b.runs)
            if (r.id == "sailor/gh200-main/GPT-NEO/N4/plan_config_N4_D1") {
                QCOMPARE(r.plan.stages[2].firstLayer, 15);
                QCOMPARE(r.plan.stages[2].layerCount, 9);
            }

        // Round trip through a project file.
        const std::string path = mTmp.filePath("sailor.memx").toStdString();
        {
            SqliteStore s(path);
            writeImport(s, b);
        }
        SqliteStore s(path, false);
        QCOMPARE(s.profiles().size(), b.profiles.size());
        for (const LayerProfile &x : b.profiles)
            QVERIFY(s.profile(x.key) == x);
        const auto runs = s.runs();
        QCOMPARE(runs.size(), b.runs.size());
        for (const MeasuredRun &r : b.runs)
            QVERIFY2(s.run(r.id) == r, r.id.c_str());
        QCOMPARE(s.networkMeasurements().size(), b.network.size());
        for (const Model &m : b.models)
            QVERIFY(s.model(m.id) == m);
    }

    void sailorErrorsArePrecise()
    {
        try {
            importSailor(kData + "/sailor-bad-gpu");
            QFAIL("an unknown GPU must fail");
        } catch (const LoadError &e) {
            const Diagnostic &d = e.diagnostics().front();
            QVERIFY2(d.file.find("layer_times.json") != std::string::npos, e.what());
            QCOMPARE(d.pointer, std::string("/OPT-350/B300-7"));
            QVERIFY2(d.message.find("unknown GPU \"B300-7\"") != std::string::npos, e.what());
        }
        QVERIFY_THROWS_EXCEPTION(LoadError, importSailor(kData + "/does-not-exist"));
    }
};

QTEST_GUILESS_MAIN(TestStore)
#include "tst_store.moc"
