// Crash safety: a process killed with SIGKILL while it writes the user's data leaves the previous
// complete data (or the new complete data), never a mix:
//  - `memx profile import` of a large CSV into an existing project (SQLite transaction + WAL),
//  - SqliteStore::saveAs over an existing project (backup to a temporary file + rename),
//  - writeFileAtomically of a large cluster JSON (temporary file + fsync + rename).
// Kill moments are drawn from a seeded generator between 0 and 80 % of the measured duration of
// one uninterrupted write (it varies with load), so every phase of the write is hit. The helper processes for saveAs
// and writeFileAtomically are this executable started with a "--child-..." argument.
#include "memx/io/formats.h"
#include "memx/profiling/profileio.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/fileio.h"
#include "memx/util/jsonreader.h"

#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <filesystem>
#include <random>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace memx;
using nlohmann::json;
namespace fs = std::filesystem;

static const std::string kSmallCsv = MEMX_SOURCE_DIR "/tests/data/profiles/small.csv";
static std::string gSelf; // this executable, for the helper processes
constexpr unsigned kSeed = 20261130;

/// ASan/UBSan builds run the writers ~50x slower: smaller workloads keep the test within Qt's
/// 5-minute limit there (the kill moments still cover the whole write).
#if defined(__SANITIZE_ADDRESS__) // GCC
#define MEMX_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) // clang (the asan preset)
#define MEMX_TEST_SANITIZED 1
#endif
#endif
static constexpr bool kSanitized =
#if defined(MEMX_TEST_SANITIZED)
    true;
#else
    false;
#endif
static const int kImportProfiles = kSanitized ? 200 : 4000;
static const int kSaveAsProfiles = kSanitized ? 300 : 6000;
static const size_t kDescriptionBytes = kSanitized ? (8u << 20) : (40u << 20);
constexpr int kKills = 8;

/// Every record of a project as one JSON text (opening it must succeed).
static std::string projectContent(const std::string &path)
{
    SqliteStore s(path, false);
    json j;
    for (const auto &id : s.modelIds())
        j["models"].push_back(toJson(*s.model(id)));
    for (const auto &n : s.clusterNames())
        j["clusters"].push_back(toJson(*s.cluster(n)));
    const ProfileSet profiles = s.profiles(); // the set must outlive the loop over its profiles
    for (const LayerProfile &p : profiles.profiles())
        j["profiles"].push_back(toJson(p));
    for (const MeasuredRun &r : s.runs())
        j["runs"].push_back(toJson(r));
    return j.dump();
}

/// A CSV with `profiles` three-layer profiles (models big-0 .. big-N-1), a few MB.
static std::string bigCsv(int profiles)
{
    std::string s = std::string(kProfileCsvHeader) + "\n";
    for (int p = 0; p < profiles; ++p)
        for (int layer = 0; layer < 3; ++layer)
            s += "A100-80,big-" + std::to_string(p) + ",2,1,2048," + std::to_string(layer) + ","
                + std::to_string(0.5 + layer) + ",1.0,0.2,102760448,201326592\n";
    return s;
}

/// Starts `program args`, kills it with SIGKILL after `delayMs` (if still running); returns true
/// when it was killed, false when it had already finished.
static bool runAndKill(const QString &program, const QStringList &args, int delayMs)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    p.start(program, args);
    if (!p.waitForStarted(10000))
        qFatal("cannot start %s", qPrintable(program));
    if (p.waitForFinished(delayMs))
        return false;
    ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
    p.waitForFinished(10000);
    return true;
}

static int elapsedMsOf(const QString &program, const QStringList &args)
{
    QElapsedTimer t;
    t.start();
    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    p.start(program, args);
    if (!p.waitForFinished(300000) || p.exitCode() != 0)
        qFatal("%s %s failed: %s", qPrintable(program), qPrintable(args.join(QLatin1Char(' '))),
               p.readAllStandardOutput().constData());
    return static_cast<int>(t.elapsed());
}

class TestCrashSafety : public QObject {
    Q_OBJECT

    QTemporaryDir mTmp;

    std::string tmp(const char *name) const { return mTmp.filePath(QString::fromLatin1(name)).toStdString(); }

private slots:
    void initTestCase() { QVERIFY(mTmp.isValid()); }

    /// kill -9 during `memx profile import` of a large CSV into an existing project.
    void killDuringImport()
    {
        const std::string big = tmp("big.csv");
        writeFileAtomically(big, bigCsv(kImportProfiles));
        const std::string original = tmp("original.memx");
        const QString memx = QStringLiteral(MEMX_CLI_PATH);
        auto importArgs = [&](const std::string &project, const std::string &csv) {
            return QStringList {QStringLiteral("profile"),   QStringLiteral("import"),
                                QStringLiteral("--format"),  QStringLiteral("csv"),
                                QStringLiteral("--project"), QString::fromStdString(project),
                                QString::fromStdString(csv)};
        };
        elapsedMsOf(memx, importArgs(original, kSmallCsv));
        const std::string oldContent = projectContent(original);
        // The complete new content: the same import, not interrupted.
        const std::string full = tmp("full.memx");
        fs::copy_file(original, full);
        const int importMs = elapsedMsOf(memx, importArgs(full, big));
        const std::string newContent = projectContent(full);
        QVERIFY(newContent != oldContent);
        qInfo("one uninterrupted import of %d profiles: %d ms", kImportProfiles, importMs);

        std::mt19937 rng(kSeed);
        int killed = 0, sawOld = 0, sawNew = 0;
        for (int i = 0; i < kKills; ++i) {
            const std::string work = tmp("work.memx");
            for (const char *suffix : {"", "-wal", "-shm"})
                fs::remove(work + suffix);
            fs::copy_file(original, work);
            const int delay = std::uniform_int_distribution<int>(0, importMs * 4 / 5)(rng);
            killed += runAndKill(memx, importArgs(work, big), delay);
            const std::string now = projectContent(work); // throws (fails the test) if it cannot open
            QVERIFY2(now == oldContent || now == newContent,
                     qPrintable(QStringLiteral("kill after %1 ms left a mix of old and new content").arg(delay)));
            (now == oldContent ? sawOld : sawNew)++;
        }
        qInfo("import: %d of %d runs killed; afterwards %d held the old, %d the new content", killed, kKills, sawOld,
              sawNew);
        QVERIFY2(killed >= 2, "too few runs were killed before they finished: inconclusive");
        QVERIFY(sawOld >= 1);
    }

    /// kill -9 during SqliteStore::saveAs over an existing project (the GUI's Save As).
    void killDuringSaveAs()
    {
        const std::string source = tmp("source.memx");
        {
            SqliteStore s(source, true);
            ImportBatch b;
            b.profiles = parseProfileCsv(bigCsv(kSaveAsProfiles), "big.csv");
            writeImport(s, b);
        }
        const std::string target = tmp("target.memx");
        {
            SqliteStore s(target, true);
            ImportBatch b;
            b.profiles = parseProfileCsv(readTextFile(kSmallCsv), kSmallCsv);
            writeImport(s, b);
        }
        const std::string oldContent = projectContent(target), newContent = projectContent(source);
        const std::string pristine = tmp("target-pristine.memx");
        fs::copy_file(target, pristine);
        const QStringList args {QStringLiteral("--child-saveas"), QString::fromStdString(source),
                                QString::fromStdString(target)};
        const int saveMs = elapsedMsOf(QString::fromStdString(gSelf), args);
        QCOMPARE(projectContent(target), newContent);
        qInfo("one uninterrupted saveAs of %d profiles: %d ms", kSaveAsProfiles, saveMs);

        std::mt19937 rng(kSeed + 1);
        int killed = 0, sawOld = 0;
        for (int i = 0; i < kKills; ++i) {
            for (const char *suffix : {"", "-wal", "-shm"})
                fs::remove(target + suffix);
            fs::copy_file(pristine, target);
            const int delay = std::uniform_int_distribution<int>(0, saveMs * 4 / 5)(rng);
            killed += runAndKill(QString::fromStdString(gSelf), args, delay);
            const std::string now = projectContent(target);
            QVERIFY2(now == oldContent || now == newContent, "saveAs interrupted by SIGKILL left a mix");
            sawOld += now == oldContent;
        }
        qInfo("saveAs: %d of %d runs killed, %d left the old content", killed, kKills, sawOld);
        QVERIFY2(killed >= 2, "too few runs were killed before they finished: inconclusive");
    }

    /// kill -9 during writeFileAtomically of a large cluster JSON: the old file stays intact.
    void killDuringAtomicWrite()
    {
        const std::string path = tmp("cluster.json");
        json c = readJsonFile(MEMX_SOURCE_DIR "/sample_clusters/paper-20gpu-nvidia-amd.json");
        saveJson(c, path);
        const std::string oldText = readTextFile(path);
        const QStringList args {QStringLiteral("--child-write"), QString::fromStdString(path)};
        const int writeMs = elapsedMsOf(QString::fromStdString(gSelf), args);
        const std::string newText = readTextFile(path);
        QVERIFY(newText.size() > kDescriptionBytes);
        qInfo("one uninterrupted atomic write of %zu MiB: %d ms", newText.size() >> 20, writeMs);

        std::mt19937 rng(kSeed + 2);
        int killed = 0;
        for (int i = 0; i < kKills; ++i) {
            saveJson(c, path);
            const int delay = std::uniform_int_distribution<int>(0, writeMs * 4 / 5)(rng);
            killed += runAndKill(QString::fromStdString(gSelf), args, delay);
            const std::string now = readTextFile(path);
            QVERIFY2(now == oldText || now == newText, "an atomic write interrupted by SIGKILL left a mix");
            if (now == oldText)
                QCOMPARE(loadCluster(path).totalGpus(), 20);
        }
        QVERIFY2(killed >= 2, "too few runs were killed before they finished: inconclusive");
    }
};

/// Helper processes (run by the tests above, killed at random moments).
static int child(int argc, char **argv)
{
    const std::string mode = argv[1];
    if (mode == "--child-saveas" && argc == 4) {
        SqliteStore(argv[2], false).saveAs(argv[3]);
        return 0;
    }
    if (mode == "--child-write" && argc == 3) {
        // The 20-GPU sample with a 40 MiB (ASan: 8 MiB) description: large, and still a valid cluster.
        json c = readJsonFile(MEMX_SOURCE_DIR "/sample_clusters/paper-20gpu-nvidia-amd.json");
        c["description"] = std::string(kDescriptionBytes, 'x');
        saveJson(c, argv[2]);
        return 0;
    }
    std::fprintf(stderr, "unknown helper mode %s\n", mode.c_str());
    return 2;
}

int main(int argc, char **argv)
{
    gSelf = fs::absolute(argv[0]).string();
    if (argc >= 2 && std::string(argv[1]).rfind("--child-", 0) == 0)
        return child(argc, argv);
    TestCrashSafety t;
    return QTest::qExec(&t, argc, argv);
}

#include "tst_crashsafety.moc"
