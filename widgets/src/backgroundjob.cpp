#include "memx/ui/backgroundjob.h"

#include "memx/util/diagnostic.h"

#include <QStringList>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

namespace memx::ui {

JobControl::JobControl()
    : mProgress([this](size_t done, size_t total) {
        mDone.store(done, std::memory_order_relaxed);
        mTotal.store(total, std::memory_order_relaxed);
        return !mCancel.load(std::memory_order_relaxed);
    })
{
}

void JobControl::setPhase(int index)
{
    mDone.store(0, std::memory_order_relaxed);
    mTotal.store(0, std::memory_order_relaxed);
    mPhase.store(index, std::memory_order_relaxed);
}

namespace {

/// Every problem of a LoadError, one per line (at most 20).
QString diagnosticsText(const memx::LoadError &e)
{
    QStringList lines;
    for (const memx::Diagnostic &d : e.diagnostics())
        lines << QString::fromStdString(d.toString());
    return lines.mid(0, 20).join(QLatin1Char('\n'));
}

} // namespace

BackgroundJobBase::BackgroundJobBase(QObject *parent)
    : QObject(parent)
{
    mTimer = new QTimer(this);
    mTimer->setInterval(ProgressIntervalMs);
    connect(mTimer, &QTimer::timeout, this, &BackgroundJobBase::poll);
}

BackgroundJobBase::~BackgroundJobBase()
{
    for (const auto &job : mAll) {
        job->control.mCancel = true;
        job->watcher.disconnect(this);
    }
    for (const auto &job : mAll)
        job->watcher.waitForFinished();
}

quint64 BackgroundJobBase::launch(std::shared_ptr<Job> job, std::function<void(Job &)> work)
{
    if (mRunning)
        mRunning->control.mCancel = true; // superseded: its result will be dropped
    job->id = ++mCurrentId;
    mRunning = job;
    mAll.push_back(job);
    // A weak reference: the watcher is the job's, a strong one would keep the job alive forever.
    connect(&job->watcher, &QFutureWatcherBase::finished, this, [this, weak = std::weak_ptr<Job>(job)] {
        if (const std::shared_ptr<Job> j = weak.lock())
            onWorkerDone(j);
    });
    Job *state = job.get(); // outlives the worker: mAll keeps it until onWorkerDone
    job->watcher.setFuture(QtConcurrent::run([state, work = std::move(work)] {
        try {
            work(*state);
        } catch (const memx::Cancelled &) {
            state->workerCancelled = true;
        } catch (const memx::LoadError &e) {
            state->error = diagnosticsText(e);
        } catch (const std::exception &e) {
            state->error = QString::fromUtf8(e.what());
        }
    }));
    mTimer->start();
    emit started(job->id);
    emit progress(job->id, 0, 0);
    return job->id;
}

void BackgroundJobBase::cancel()
{
    if (!mRunning)
        return;
    mRunning->userCancelled = true;
    mRunning->control.mCancel = true;
}

void BackgroundJobBase::poll()
{
    if (!mRunning) {
        mTimer->stop();
        return;
    }
    Job &job = *mRunning;
    const int phase = job.control.mPhase.load(std::memory_order_relaxed);
    if (phase != job.reportedPhase) {
        job.reportedPhase = phase;
        emit phaseChanged(job.id, phase);
    }
    emit progress(job.id, job.control.mDone.load(), job.control.mTotal.load());
}

void BackgroundJobBase::onWorkerDone(const std::shared_ptr<Job> &job)
{
    const std::shared_ptr<Job> keep = job; // erased from mAll below
    std::erase(mAll, keep);
    if (keep != mRunning)
        return; // superseded by a newer start(): drop the stale result
    mRunning.reset();
    mTimer->stop();
    if (!keep->error.isEmpty()) {
        emit failed(keep->id, keep->error);
        return;
    }
    if (keep->workerCancelled || keep->control.mCancel) {
        emit cancelled(keep->id);
        return;
    }
    const int phase = keep->control.mPhase.load();
    if (phase != keep->reportedPhase) // a last phase change before the result
        emit phaseChanged(keep->id, keep->reportedPhase = phase);
    emit progress(keep->id, keep->control.mTotal.load(), keep->control.mTotal.load());
    deliver(*keep);
}

} // namespace memx::ui
