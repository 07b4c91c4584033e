#include "memx/ui/searchjob.h"

#include "memx/predict/searchresultcache.h"
#include "memx/search/objective.h"

#include <QFutureWatcher>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <chrono>
#include <exception>
#include <mutex>

namespace memx::ui {

std::string SearchOutcome::idleText(size_t index) const
{
    for (const memx::IdleSubset &s : subsets)
        if (index >= s.first && index < s.first + s.count)
            return memx::idleText(result.cluster, s);
    return {};
}

/// Whole subset results of earlier searches (analytic), shared by the workers of one job object.
struct SearchJob::Cache {
    std::mutex mutex;
    memx::SearchResultCache results {4};
};

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
    mCache = std::make_shared<Cache>();
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
    memx::PlannedSearchRequest planned;
    planned.search = std::move(request);
    return start(std::move(planned));
}

quint64 SearchJob::start(memx::PlannedSearchRequest request)
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
    auto work = [state, cache = mCache, request = std::move(request)]() -> std::shared_ptr<SearchOutcome> {
        const auto t0 = std::chrono::steady_clock::now();
        auto outcome = std::make_shared<SearchOutcome>();
        outcome->jobId = state->id;
        size_t reused = 0;
        // A subset whose request equals an earlier one (the full key is compared) is reused whole.
        auto subset = [&cache, &reused](const memx::SearchRequest &r, const memx::ProgressFn &f) {
            const memx::SearchRequestKey key = memx::searchRequestKey(r, 0);
            {
                std::lock_guard<std::mutex> lock(cache->mutex);
                if (std::optional<memx::SearchResult> hit = cache->results.find(key)) {
                    ++reused;
                    return std::move(*hit);
                }
            }
            memx::SearchResult res = memx::runSearch(r, f);
            if (!res.cancelled) {
                std::lock_guard<std::mutex> lock(cache->mutex);
                cache->results.insert(key, res);
            }
            return res;
        };
        try {
            memx::PlannedSearchResult planned = memx::runPlannedSearch(
                request,
                [state](size_t done, size_t total) {
                    state->done.store(done, std::memory_order_relaxed);
                    state->total.store(total, std::memory_order_relaxed);
                    return !state->cancel.load(std::memory_order_relaxed);
                },
                subset);
            outcome->result = std::move(planned.result);
            outcome->target = planned.target;
            outcome->targetFromCluster = planned.targetFromCluster;
            outcome->targetReason = std::move(planned.targetReason);
            outcome->subsets = std::move(planned.subsets);
            outcome->notes = std::move(planned.notes);
            outcome->advice = std::move(planned.advice);
            outcome->subsetsReused = reused;
            if (!outcome->result.cancelled && !state->cancel)
                outcome->front = memx::paretoFront(outcome->result);
        } catch (const std::exception &e) {
            state->error = QString::fromStdString(e.what());
            return nullptr;
        }
        outcome->request = request.search;
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
