#include "memx/ui/searchjob.h"

#include "memx/predict/searchresultcache.h"
#include "memx/search/objective.h"

#include <chrono>
#include <stdexcept>

namespace memx::ui {

SearchJob::SearchJob(QObject *parent)
    : QObject(parent)
{
    qRegisterMetaType<std::shared_ptr<const memx::ui::SearchOutcome>>();
    mJob = new BackgroundJob<std::shared_ptr<SearchOutcome>>(this);
    connect(mJob, &BackgroundJobBase::started, this, &SearchJob::started);
    connect(mJob, &BackgroundJobBase::progress, this, &SearchJob::progress);
    connect(mJob, &BackgroundJobBase::cancelled, this, &SearchJob::cancelled);
    connect(mJob, &BackgroundJobBase::failed, this, &SearchJob::failed);
    connect(mJob, &BackgroundJobBase::phaseChanged, this, [this](quint64 id, int phase) {
        if (phase == int(memx::PlannedSearchPhase::Predict))
            emit predicting(id);
    });
    mJob->setFinishedHandler([this](quint64, std::shared_ptr<SearchOutcome> outcome) {
        mLast = std::move(outcome);
        emit finished(mLast);
    });
}

SearchJob::~SearchJob() = default; // the BackgroundJob child cancels and waits

quint64 SearchJob::start(memx::PlannedSearch planned, std::shared_ptr<memx::MemoryStore> caches)
{
    // The id the job will get: the worker stamps it into the outcome.
    const quint64 id = mJob->currentJobId() + 1;
    auto work = [id, planned = std::move(planned), caches, memo = mMemo](JobControl &control) mutable {
        auto outcome = std::make_shared<SearchOutcome>();
        static_cast<memx::PlannedSearch &>(*outcome) = std::move(planned);
        outcome->jobId = id;
        outcome->caches = caches;
        memx::runPlannedSearch(
            *outcome, caches.get(), control.progress(),
            [&control](memx::PlannedSearchPhase phase) { control.setPhase(int(phase)); }, memo.get());
        if (outcome->result.cancelled || control.isCancelled())
            throw memx::Cancelled();
        const auto t0 = std::chrono::steady_clock::now();
        outcome->front = memx::paretoFront(outcome->result);
        outcome->wallMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return outcome;
    };
    return mJob->start(std::move(work));
}

quint64 SearchJob::start(memx::SearchRequest request)
{
    memx::PlannedSearchRequest planned;
    planned.search = std::move(request);
    return start(std::move(planned));
}

quint64 SearchJob::start(memx::PlannedSearchRequest request)
{
    try {
        return start(memx::planSearch(std::move(request), nullptr));
    } catch (const std::exception &e) {
        // An unusable request (e.g. a cluster without GPUs) fails like a search: failed() says why.
        const std::string message = e.what();
        return mJob->start(
            [message](JobControl &) -> std::shared_ptr<SearchOutcome> { throw std::invalid_argument(message); });
    }
}

void SearchJob::cancel()
{
    mJob->cancel();
}

bool SearchJob::isRunning() const
{
    return mJob->isRunning();
}

quint64 SearchJob::currentJobId() const
{
    return mJob->currentJobId();
}

} // namespace memx::ui
