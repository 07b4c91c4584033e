#pragma once

#include "memx/util/progress.h"

#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

class QTimer;

namespace memx::ui {

/// What a job's worker may use: the core progress callback of its job and the progress phase.
/// Thread-safe (atomics only); it never touches a Qt object.
class JobControl {
public:
    JobControl();
    JobControl(const JobControl &) = delete;
    JobControl &operator=(const JobControl &) = delete;

    /// The job's memx::ProgressFn: stores (done, total) for the UI timer and returns false once the
    /// job was cancelled or superseded. Pass it to the core functions the job calls.
    const memx::ProgressFn &progress() const { return mProgress; }
    /// Starts phase `index` of the job's work (BackgroundJobBase::phaseChanged; counts reset to 0).
    void setPhase(int index);
    bool isCancelled() const { return mCancel.load(std::memory_order_relaxed); }

private:
    friend class BackgroundJobBase;
    std::atomic<bool> mCancel {false};
    std::atomic<quint64> mDone {0}, mTotal {0};
    std::atomic<int> mPhase {0};
    memx::ProgressFn mProgress;
};

/// The one way the workbench runs work in the background (hotspot's job-tracker idea): a callable
/// runs on a worker thread (QtConcurrent) on the copied snapshot it captured; its progress goes
/// through atomics that a UI-thread timer turns into progress() signals every ProgressIntervalMs;
/// cancel() asks it to stop (the core functions see their progress callback return false);
/// starting a new job supersedes the running one (it is cancelled and its result dropped: ids grow
/// by one per start); the result is delivered on the thread that owns the job (the GUI thread).
/// A worker that throws memx::Cancelled was cancelled; memx::LoadError or std::exception makes the
/// job fail with the message. BackgroundJob<Result> adds the typed result.
class BackgroundJobBase : public QObject {
    Q_OBJECT
public:
    static constexpr int ProgressIntervalMs = 100;

    explicit BackgroundJobBase(QObject *parent = nullptr);
    /// Cancels every running worker and waits for it (no signal, no result).
    ~BackgroundJobBase() override;

    /// Cancels the current job; cancelled() follows when its worker stops.
    void cancel();
    bool isRunning() const { return mRunning != nullptr; }
    /// Id of the last job started (0 before the first).
    quint64 currentJobId() const { return mCurrentId; }

signals:
    void started(quint64 jobId);
    /// Work done / total of the current job (throttled; total 0: not known yet).
    void progress(quint64 jobId, qulonglong done, qulonglong total);
    /// The current job started phase `phase` (JobControl::setPhase).
    void phaseChanged(quint64 jobId, int phase);
    /// The current job was cancelled by cancel() (not by a newer start()).
    void cancelled(quint64 jobId);
    /// The current job failed; `message` says why.
    void failed(quint64 jobId, const QString &message);

protected:
    struct Job {
        virtual ~Job() = default;
        quint64 id = 0;
        bool userCancelled = false; // GUI thread only
        bool workerCancelled = false; // the worker threw memx::Cancelled (read after it finished)
        QString error; // written by the worker before it finished, read after
        int reportedPhase = 0; // GUI thread only
        JobControl control;
        QFutureWatcher<void> watcher;
    };
    /// Runs `work` for `job` in a worker thread, superseding the running job. Returns the job's id.
    quint64 launch(std::shared_ptr<Job> job, std::function<void(Job &)> work);
    /// Hands a finished, uncancelled job's result to its receiver (GUI thread).
    virtual void deliver(Job &job) = 0;

private:
    void poll();
    void onWorkerDone(const std::shared_ptr<Job> &job);

    quint64 mCurrentId = 0;
    std::shared_ptr<Job> mRunning; // current job (null when idle)
    std::vector<std::shared_ptr<Job>> mAll; // every job whose worker has not returned yet
    QTimer *mTimer = nullptr;
};

/// A BackgroundJobBase whose work returns a `Result`, handed to the finished handler on the GUI
/// thread (never for a cancelled or superseded job).
template<typename Result> class BackgroundJob : public BackgroundJobBase {
public:
    using Work = std::function<Result(JobControl &)>;
    using Finished = std::function<void(quint64 jobId, Result result)>;

    explicit BackgroundJob(QObject *parent = nullptr)
        : BackgroundJobBase(parent)
    {
    }
    void setFinishedHandler(Finished handler) { mFinished = std::move(handler); }

    /// Starts `work` (it must own copies of everything it reads); supersedes the running job.
    quint64 start(Work work)
    {
        auto job = std::make_shared<TypedJob>();
        return launch(job,
                      [work = std::move(work)](Job &j) { static_cast<TypedJob &>(j).result.emplace(work(j.control)); });
    }

protected:
    void deliver(Job &j) override
    {
        auto &job = static_cast<TypedJob &>(j);
        if (mFinished && job.result)
            mFinished(job.id, std::move(*job.result));
    }

private:
    struct TypedJob : Job {
        std::optional<Result> result;
    };
    Finished mFinished;
};

} // namespace memx::ui
