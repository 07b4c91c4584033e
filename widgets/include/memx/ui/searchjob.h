#pragma once

#include "memx/search/search.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <vector>

class QTimer;

namespace memx::ui {

/// What a finished background search hands to the views: the core result (flat cached metrics;
/// re-ranking never re-searches), its exact Pareto front and the snapshot it ran on. Immutable
/// and shared between threads.
struct SearchOutcome {
    quint64 jobId = 0;
    memx::SearchRequest request; ///< the copied snapshot (cluster, model, profiles, options)
    memx::SearchResult result;
    std::vector<uint32_t> front; ///< memx::paretoFront(result), ascending indices
    double wallMs = 0; ///< search + Pareto front, wall clock in the worker
};

/// Runs memx::runSearch on a copied SearchRequest in a worker thread (QtConcurrent::run +
/// QFutureWatcher), with throttled progress, cancellation and supersession (CONVENTIONS rule 9):
/// start() cancels the running job, gives the new one a higher id, and results of older jobs are
/// dropped when they arrive. The core progress callback only stores (done, total) in atomics
/// and reads the cancel flag; a UI-thread timer turns the atomics into progress() signals every
/// ProgressIntervalMs, so the worker never touches Qt objects. All signals are emitted on the
/// thread that owns the job (the GUI thread).
class SearchJob : public QObject {
    Q_OBJECT
public:
    static constexpr int ProgressIntervalMs = 100;

    explicit SearchJob(QObject *parent = nullptr);
    /// Cancels a running job and waits for its worker to return (the result is dropped).
    ~SearchJob() override;

    /// Starts a search of `request` (copied); cancels and supersedes the running one. Returns the
    /// new job id (ids grow by one per start()).
    quint64 start(memx::SearchRequest request);
    /// Cancels the current job (cancelled() follows when its worker stops).
    void cancel();
    bool isRunning() const;
    quint64 currentJobId() const { return mCurrentId; }
    /// The last result delivered by finished() (null before the first).
    std::shared_ptr<const SearchOutcome> lastOutcome() const { return mLast; }

signals:
    void started(quint64 jobId);
    /// Base configurations done / total of the current job (throttled).
    void progress(quint64 jobId, qulonglong done, qulonglong total);
    /// The current job finished (never emitted for a superseded job).
    void finished(std::shared_ptr<const memx::ui::SearchOutcome> outcome);
    /// The current job was cancelled by cancel() (not by a newer start()).
    void cancelled(quint64 jobId);
    /// The current job failed, e.g. an unusable request (no GPUs); `message` says why.
    void failed(quint64 jobId, const QString &message);

private:
    struct Running;
    void pollProgress();
    void onWorkerDone(std::shared_ptr<Running> job);

    quint64 mCurrentId = 0;
    std::shared_ptr<Running> mRunning; // current job (null when idle)
    std::vector<std::shared_ptr<Running>> mAll; // every job whose worker has not returned yet
    std::shared_ptr<const SearchOutcome> mLast;
    QTimer *mProgressTimer = nullptr;
};

} // namespace memx::ui

Q_DECLARE_METATYPE(std::shared_ptr<const memx::ui::SearchOutcome>)
