// BackgroundJob: the one way the workbench runs work - result on the GUI thread, progress through
// the UI timer, cancel through the core's progress callback, supersession by id, failures with
// their message, phases; destroying a job with a running worker stops and waits for it.
#include "memx/ui/backgroundjob.h"
#include "memx/util/diagnostic.h"

#include <QSignalSpy>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <thread>

using namespace memx::ui;

namespace {
constexpr int kTimeoutMs = 30000;

/// Work that reports `steps` steps of `ms` each through the job's progress callback and returns
/// the thread it ran on; it stops (memx::Cancelled) as soon as the callback says so.
BackgroundJob<QThread *>::Work steppingWork(int steps, int ms, std::atomic<int> *reached = nullptr)
{
    return [steps, ms, reached](JobControl &control) {
        for (int i = 0; i < steps; ++i) {
            memx::reportOrThrow(control.progress(), size_t(i), size_t(steps));
            if (reached)
                *reached = i;
            std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        }
        memx::reportOrThrow(control.progress(), size_t(steps), size_t(steps));
        return QThread::currentThread();
    };
}
} // namespace

class TestBackgroundJob : public QObject {
    Q_OBJECT
private slots:
    void resultArrivesOnTheGuiThread()
    {
        BackgroundJob<QThread *> job;
        QThread *worker = nullptr, *handlerThread = nullptr;
        quint64 delivered = 0;
        job.setFinishedHandler([&](quint64 id, QThread *ranOn) {
            worker = ranOn;
            handlerThread = QThread::currentThread();
            delivered = id;
        });
        QSignalSpy progress(&job, &BackgroundJobBase::progress);
        QSignalSpy started(&job, &BackgroundJobBase::started);
        const quint64 id = job.start(steppingWork(8, 40));
        QCOMPARE(id, quint64(1));
        QCOMPARE(started.count(), 1);
        QVERIFY(job.isRunning());
        QTRY_VERIFY_WITH_TIMEOUT(delivered == id, kTimeoutMs);
        QVERIFY(!job.isRunning());
        QVERIFY(worker && worker != QThread::currentThread());
        QCOMPARE(handlerThread, QThread::currentThread());
        // The timer turned the atomics into signals: (0, 0) at the start, counts of 8 while running,
        // (8, 8) at the end.
        QVERIFY(progress.count() >= 3);
        QCOMPARE(progress.front().at(2).toULongLong(), 0ULL);
        bool midway = false;
        for (const QList<QVariant> &p : progress)
            midway |= p.at(2).toULongLong() == 8 && p.at(1).toULongLong() < 8;
        QVERIFY2(midway, "expected a progress signal while the worker ran");
        QCOMPARE(progress.back().at(1).toULongLong(), 8ULL);
    }

    void newerStartSupersedesOlder()
    {
        BackgroundJob<int> job;
        QList<quint64> delivered;
        QList<int> values;
        job.setFinishedHandler([&](quint64 id, int v) {
            delivered << id;
            values << v;
        });
        QSignalSpy cancelled(&job, &BackgroundJobBase::cancelled);
        std::atomic<bool> firstStopped {false};
        const quint64 first = job.start([&](JobControl &control) {
            while (control.progress()(0, 1))
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            firstStopped = true;
            return 1; // returned, not thrown: still dropped (superseded)
        });
        const quint64 second = job.start([](JobControl &) { return 2; });
        QCOMPARE(second, first + 1);
        QCOMPARE(job.currentJobId(), second);
        QTRY_COMPARE_WITH_TIMEOUT(delivered.size(), 1, kTimeoutMs);
        QTRY_VERIFY_WITH_TIMEOUT(firstStopped.load(), kTimeoutMs);
        QTest::qWait(200); // a late result of the first job must not arrive either
        QCOMPARE(delivered, QList<quint64> {second});
        QCOMPARE(values, QList<int> {2});
        QCOMPARE(cancelled.count(), 0); // superseded, not cancelled by the user
    }

    void cancelStopsTheWorker()
    {
        BackgroundJob<QThread *> job;
        bool delivered = false;
        job.setFinishedHandler([&](quint64, QThread *) { delivered = true; });
        QSignalSpy cancelled(&job, &BackgroundJobBase::cancelled);
        std::atomic<int> reached {-1};
        const quint64 id = job.start(steppingWork(100000, 1, &reached));
        QTRY_VERIFY_WITH_TIMEOUT(reached >= 3, kTimeoutMs);
        job.cancel();
        QVERIFY(cancelled.wait(kTimeoutMs));
        QCOMPARE(cancelled.front().at(0).toULongLong(), id);
        QVERIFY(reached < 100000 - 1);
        QVERIFY(!delivered);
        QVERIFY(!job.isRunning());
    }

    void failuresCarryTheirMessage()
    {
        BackgroundJob<int> job;
        QSignalSpy failed(&job, &BackgroundJobBase::failed);
        job.start(
            [](JobControl &) -> int { throw memx::LoadError("cluster.json", "/nodes/0/gpus", "expected 1..64"); });
        QVERIFY(failed.wait(kTimeoutMs));
        QCOMPARE(failed.front().at(1).toString(), QStringLiteral("cluster.json: /nodes/0/gpus: expected 1..64"));
        job.start([](JobControl &) -> int { throw std::invalid_argument("no GPUs"); });
        QVERIFY(failed.wait(kTimeoutMs));
        QCOMPARE(failed.back().at(1).toString(), QStringLiteral("no GPUs"));
    }

    void phasesAreReported()
    {
        BackgroundJob<int> job;
        bool done = false;
        job.setFinishedHandler([&](quint64, int) { done = true; });
        QSignalSpy phase(&job, &BackgroundJobBase::phaseChanged);
        job.start([](JobControl &control) {
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            control.setPhase(1);
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
            control.setPhase(2);
            return 0;
        });
        QTRY_VERIFY_WITH_TIMEOUT(done, kTimeoutMs);
        QVERIFY(phase.count() >= 1);
        QCOMPARE(phase.back().at(1).toInt(), 2); // the last phase arrives before the result
    }

    void destroyingAJobStopsItsWorker()
    {
        std::atomic<int> reached {-1};
        {
            BackgroundJob<QThread *> job;
            job.start(steppingWork(100000, 1, &reached));
            QTRY_VERIFY_WITH_TIMEOUT(reached >= 1, kTimeoutMs);
        } // the destructor cancels and waits
        const int at = reached;
        QTest::qWait(50);
        QCOMPARE(reached.load(), at);
    }
};

QTEST_MAIN(TestBackgroundJob)
#include "tst_backgroundjob.moc"
