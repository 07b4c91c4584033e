// Scale: the real memx binary on the 512-GPU sample. Peak RSS is read from the kernel's
// accounting of the finished child (wait4 -> rusage.ru_maxrss, KiB); cancel latency is the time
// from SIGINT to the process's exit. Bounds are generous (shared, loaded CI machines, ASan builds
// use ~2-3x the memory); docs/reliability.md has the measured figures.
#include "memx/io/formats.h"
#include "memx/search/search.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <spawn.h>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <unistd.h>
#include <vector>

extern char **environ;

static const std::string kCluster512 = MEMX_SOURCE_DIR "/sample_clusters/cross-vendor-512gpu.json";

struct Child {
    int exitCode = -1;
    int signal = 0;
    long peakRssKiB = 0;
    double wallMs = 0;
    double cancelLatencyMs = -1; ///< SIGINT -> exit, when a SIGINT was sent
    std::string out;
};

/// Runs memx with `args`, stdout to a file; with `sigintAfterMs` >= 0 sends SIGINT after that long.
static Child runMemx(const std::vector<std::string> &args, const QString &outFile, int sigintAfterMs = -1)
{
    std::vector<std::string> all {MEMX_CLI_PATH};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char *> argv;
    for (std::string &s : all)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const QByteArray outPath = outFile.toLocal8Bit();
    posix_spawn_file_actions_addopen(&fa, 1, outPath.constData(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    QElapsedTimer t;
    t.start();
    if (posix_spawn(&pid, MEMX_CLI_PATH, &fa, nullptr, argv.data(), environ) != 0)
        qFatal("cannot start memx");
    posix_spawn_file_actions_destroy(&fa);
    Child c;
    int status = 0;
    rusage ru {};
    if (sigintAfterMs >= 0) {
        // Poll so that a search that finishes early is noticed (then no SIGINT is sent).
        while (t.elapsed() < sigintAfterMs) {
            if (wait4(pid, &status, WNOHANG, &ru) == pid)
                goto done;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        const qint64 sent = t.nsecsElapsed();
        ::kill(pid, SIGINT);
        wait4(pid, &status, 0, &ru);
        c.cancelLatencyMs = static_cast<double>(t.nsecsElapsed() - sent) / 1e6;
    } else {
        wait4(pid, &status, 0, &ru);
    }
done:
    c.wallMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
    c.peakRssKiB = ru.ru_maxrss;
    if (WIFEXITED(status))
        c.exitCode = WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        c.signal = WTERMSIG(status);
    QFile f(outFile);
    if (f.open(QIODevice::ReadOnly))
        c.out = f.readAll().toStdString();
    return c;
}

static QJsonObject parse(const Child &c)
{
    QJsonParseError e {};
    const QJsonDocument d = QJsonDocument::fromJson(QByteArray::fromStdString(c.out), &e);
    if (e.error != QJsonParseError::NoError)
        qFatal("memx printed no JSON: %s", c.out.substr(0, 400).c_str());
    return d.object();
}

/// Generous bounds: an instrumented (ASan) build uses more memory and time.
static bool sanitized()
{
#if defined(__SANITIZE_ADDRESS__)
    return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return true;
#endif
#endif
    return std::getenv("ASAN_OPTIONS") != nullptr;
}

class TestScale : public QObject
{
    Q_OBJECT
    QTemporaryDir mTmp;

private slots:
    /// The 512-GPU sample with the default options: its ~48 M base configurations exceed the
    /// default budget (500 k), so the space is narrowed (reported), the search completes and
    /// memory stays bounded.
    void search512CompletesWithBoundedMemory()
    {
        const Child c = runMemx({"search", "--cluster", kCluster512, "--model", "llama2-7b", "--top", "3", "--json"},
                                mTmp.filePath(QStringLiteral("s512.json")));
        QCOMPARE(c.exitCode, 0);
        const QJsonObject j = parse(c);
        QVERIFY(!j[QStringLiteral("cancelled")].toBool());
        QVERIFY2(!j[QStringLiteral("narrowed")].toArray().isEmpty(), "a > 10 M space must be narrowed");
        const double evaluated = j[QStringLiteral("counts")].toObject()[QStringLiteral("evaluated")].toDouble();
        QVERIFY(evaluated > 0);
        QCOMPARE(j[QStringLiteral("top")].toArray().size(), 3);
        qInfo("512-GPU search: %.0f configurations evaluated, %.0f ms wall, peak RSS %ld MiB, narrowed: %s", evaluated,
              c.wallMs, c.peakRssKiB / 1024,
              QJsonDocument(j[QStringLiteral("narrowed")].toArray()).toJson(QJsonDocument::Compact).constData());
        const long boundMiB = sanitized() ? 6144 : 2048;
        QVERIFY2(c.peakRssKiB / 1024 < boundMiB, qPrintable(QStringLiteral("peak RSS %1 MiB").arg(c.peakRssKiB / 1024)));
    }

    /// Ctrl-C (SIGINT) during a long search: the process reports a cancelled search and exits
    /// promptly.
    void sigintCancelsPromptly()
    {
        if (sanitized())
            QSKIP("under ASan the uncancellable setup phase outlasts the 1.5 s wait (see docs/reliability.md); "
                  "coreCancelLatency covers cancel there");
        // A wide space on the 512-GPU sample that takes far longer than the 1.5 s we wait.
        const Child c = runMemx({"search", "--cluster", kCluster512, "--model", "llama2-7b", "--radius", "3",
                                 "--max-bases", "4000000", "--threads", "2", "--top", "1", "--json"},
                                mTmp.filePath(QStringLiteral("cancel.json")), 1500);
        QVERIFY2(c.cancelLatencyMs >= 0, "the search finished before SIGINT: make the space wider");
        QCOMPARE(c.signal, 0); // handled, not killed by the signal
        const QJsonObject j = parse(c);
        QVERIFY(j[QStringLiteral("cancelled")].toBool());
        qInfo("SIGINT -> exit: %.1f ms (peak RSS %ld MiB)", c.cancelLatencyMs, c.peakRssKiB / 1024);
        // The bound is generous on purpose: CTest runs tests in parallel on 2 cores, and the search's
        // set-up phase (before the first progress call) is not cancellable yet (docs/reliability.md).
        // Uncancelled, this space runs for minutes, so the bound still catches a cancel that is ignored.
        QVERIFY2(c.cancelLatencyMs < (sanitized() ? 20000 : 10000), qPrintable(QString::number(c.cancelLatencyMs)));
    }

    /// In-process: the time from a cancel request (another thread sets the flag the progress
    /// callback returns) to runSearch returning, on the narrowed 512-GPU space with 2 threads.
    void coreCancelLatency()
    {
        using Clock = std::chrono::steady_clock;
        memx::SearchRequest req;
        // Under ASan the 512-GPU setup alone takes minutes; the 20-GPU sample's space still runs
        // for seconds there.
        req.cluster = memx::loadCluster(sanitized() ? MEMX_SOURCE_DIR "/sample_clusters/paper-20gpu-nvidia-amd.json"
                                                    : kCluster512);
        req.model = memx::resolveModel("llama2-7b");
        req.threads = 2;
        memx::narrowToBudget(req, 4000000);
        std::vector<double> latenciesMs, setupMs;
        for (int attempt = 0; attempt < 3; ++attempt) {
            // A separate thread requests the cancel (as the GUI's Cancel button or Ctrl-C does)
            // 100-300 ms into the evaluation; the search sees it at its next check. The setup
            // before the first progress call (pipeline enumeration, kernel tables) is timed apart.
            std::atomic<bool> cancel {false};
            std::atomic<long long> firstCallNs {-1};
            Clock::time_point cancelAt {};
            const auto start = Clock::now();
            std::thread canceller([&] {
                while (firstCallNs.load() < 0)
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                std::this_thread::sleep_for(std::chrono::milliseconds(100 + 100 * attempt));
                cancelAt = Clock::now();
                cancel = true;
            });
            const memx::SearchResult r = memx::runSearch(req, [&](size_t, size_t) {
                long long unset = -1;
                firstCallNs.compare_exchange_strong(unset, (Clock::now() - start).count());
                return !cancel.load();
            });
            setupMs.push_back(static_cast<double>(firstCallNs.load()) / 1e6);
            const auto end = Clock::now();
            canceller.join();
            QVERIFY2(end > cancelAt, "the search finished before it was cancelled");
            QVERIFY(r.cancelled);
            latenciesMs.push_back(std::chrono::duration<double, std::milli>(end - cancelAt).count());
        }
        std::sort(latenciesMs.begin(), latenciesMs.end());
        qInfo("core cancel latency (3 runs): %.1f / %.1f / %.1f ms; setup before the first progress call: %.0f / "
              "%.0f / %.0f ms", latenciesMs[0], latenciesMs[1], latenciesMs[2], setupMs[0], setupMs[1], setupMs[2]);
        // 100 ms is the target on an idle machine; a loaded shared CI machine gets slack.
        // Measured 40-90 ms; generous because other tests share the 2 cores. Without the per-base
        // cancel check a chunk takes seconds, which this bound still catches.
        QVERIFY2(latenciesMs[1] < (sanitized() ? 2000 : 1000), qPrintable(QString::number(latenciesMs[1])));
    }

    /// Lifting the budget on the 48 M-base space (the user asked for it): memory grows with the
    /// configurations evaluated (~50 bytes each), so after 8 s of evaluation it must still be far
    /// from exhausting the machine, and SIGINT must still stop it.
    void hugeSpaceNeverExhaustsMemory()
    {
        if (sanitized())
            QSKIP("memory figures of an ASan build are not comparable");
        const Child c = runMemx({"search", "--cluster", kCluster512, "--model", "llama2-7b", "--max-bases",
                                 "100000000", "--threads", "2", "--top", "1", "--json"},
                                mTmp.filePath(QStringLiteral("huge.json")), 8000);
        qInfo("budget lifted to 100 M: exit %d, peak RSS %ld MiB, %.0f ms, SIGINT -> exit %.0f ms", c.exitCode,
              c.peakRssKiB / 1024, c.wallMs, c.cancelLatencyMs);
        QCOMPARE(c.signal, 0);
        QVERIFY2(c.peakRssKiB / 1024 < 4096, qPrintable(QStringLiteral("peak RSS %1 MiB").arg(c.peakRssKiB / 1024)));
    }
};

QTEST_GUILESS_MAIN(TestScale)
#include "tst_scale.moc"
