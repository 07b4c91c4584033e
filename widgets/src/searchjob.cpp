#include "memx/ui/searchjob.h"

#include "memx/search/objective.h"

#include <QFutureWatcher>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <chrono>
#include <exception>

namespace memx::ui {

/// State shared by the GUI thread and one worker: plain atomics, no Qt objects.
struct SearchJob::Running {
    quint64 id = 0;
    bool userCancelled = false; // GUI thread only
    std::atomic<bool> cancel {false};
    std::atomic<quint64> done {0};
    std::atomic<quint64> total {0};
    QFutureWatcher<std::shared_ptr<SearchOutcome>> *watcher = nullptr;
    QString error; // written by the worker before its future finishes, read after
};

SearchJob::SearchJob(QObject *parent)
    : QObject(parent)
{
    qRegisterMetaType<std::shared_ptr<const memx::ui::SearchOutcome>>();
    mProgressTimer = new QTimer(this);
    mProgressTimer->setInterval(ProgressIntervalMs);
    connect(mProgressTimer, &QTimer::timeout, this, &SearchJob::pollProgress);
}

SearchJob::~SearchJob()
{
    for (const auto &job : mAll) {
        job->cancel = true;
        job->watcher->disconnect(this);
    }
    for (const auto &job : mAll)
        job->watcher->waitForFinished();
}

quint64 SearchJob::start(memx::SearchRequest request)
{
    if (mRunning)
        mRunning->cancel = true; // superseded: its result will be dropped
    auto job = std::make_shared<Running>();
    job->id = ++mCurrentId;
    job->watcher = new QFutureWatcher<std::shared_ptr<SearchOutcome>>(this);
    mRunning = job;
    mAll.push_back(job);
    connect(job->watcher, &QFutureWatcherBase::finished, this, [this, job] { onWorkerDone(job); });

    Running *state = job.get(); // outlives the worker: mAll keeps it until onWorkerDone
    auto work = [state, request = std::move(request)]() -> std::shared_ptr<SearchOutcome> {
        const auto t0 = std::chrono::steady_clock::now();
        auto outcome = std::make_shared<SearchOutcome>();
        outcome->jobId = state->id;
        try {
            outcome->result = memx::runSearch(request, [state](size_t done, size_t total) {
                state->done.store(done, std::memory_order_relaxed);
                state->total.store(total, std::memory_order_relaxed);
                return !state->cancel.load(std::memory_order_relaxed);
            });
            if (!outcome->result.cancelled && !state->cancel)
                outcome->front = memx::paretoFront(outcome->result);
        } catch (const std::exception &e) {
            state->error = QString::fromStdString(e.what());
            return nullptr;
        }
        outcome->request = request;
        outcome->wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return outcome;
    };
    job->watcher->setFuture(QtConcurrent::run(std::move(work)));
    mProgressTimer->start();
    emit started(job->id);
    emit progress(job->id, 0, 0);
    return job->id;
}

void SearchJob::cancel()
{
    if (!mRunning)
        return;
    mRunning->userCancelled = true;
    mRunning->cancel = true;
}

bool SearchJob::isRunning() const
{
    return mRunning != nullptr;
}

void SearchJob::pollProgress()
{
    if (!mRunning) {
        mProgressTimer->stop();
        return;
    }
    emit progress(mRunning->id, mRunning->done.load(), mRunning->total.load());
}

void SearchJob::onWorkerDone(std::shared_ptr<Running> job)
{
    std::erase(mAll, job);
    job->watcher->deleteLater();
    if (job != mRunning)
        return; // superseded by a newer start(): drop the stale result
    mRunning.reset();
    mProgressTimer->stop();
    std::shared_ptr<SearchOutcome> outcome = job->watcher->result();
    if (!outcome) {
        emit failed(job->id, job->error);
        return;
    }
    if (job->cancel || outcome->result.cancelled) {
        emit cancelled(job->id);
        return;
    }
    emit progress(job->id, job->total.load(), job->total.load());
    mLast = outcome;
    emit finished(mLast);
}

} // namespace memx::ui
