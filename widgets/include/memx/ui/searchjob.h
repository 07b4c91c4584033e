#pragma once

#include "memx/search/plannedsearch.h"
#include "memx/search/search.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

class QTimer;

namespace memx::ui {

/// What a finished background search hands to the views: the core result (flat cached metrics;
/// re-ranking never re-searches), its exact Pareto front and the snapshot it ran on. Immutable
/// and shared between threads.
struct SearchOutcome {
    quint64 jobId = 0;
    memx::SearchRequest request; ///< the copied snapshot (cluster, model, profiles, options)
    memx::SearchResult result; ///< every searched subset of node groups, over the whole cluster
    std::vector<uint32_t> front; ///< memx::paretoFront(result), ascending indices
    double wallMs = 0; ///< search + Pareto front, wall clock in the worker
    // What the planned search (memx/search/plannedsearch.h) found around the result.
    memx::LaunchTarget target = memx::LaunchTarget::Any;
    bool targetFromCluster = true;
    std::string targetReason;
    std::vector<memx::IdleSubset> subsets;
    std::vector<std::string> notes;
    std::optional<memx::NoPlanAdvice> advice; ///< set when nothing fits
    size_t subsetsReused = 0; ///< subsets whose whole result came from the job's result cache

    /// "" or e.g. "idle: mi250x (8 GPUs)" for result index `index`.
    std::string idleText(size_t index) const;
};

/// Runs memx::runPlannedSearch (the launch target, idle node groups, one runSearch per subset) on
/// a copied request in a worker thread (QtConcurrent::run + QFutureWatcher), with throttled
/// progress, cancellation and supersession (CONVENTIONS rule 9). Subset results are kept in an
/// in-memory memx::SearchResultCache shared by the job's workers: a re-search after an edit
/// reuses every subset that did not change (e.g. the cluster before an added node, the baseline):
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

    /// Starts a planned search of `request` (copied); cancels and supersedes the running one.
    /// Returns the new job id (ids grow by one per start()).
    quint64 start(memx::PlannedSearchRequest request);
    /// The same with the cluster's default target.
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
    struct Cache;
    void pollProgress();
    void onWorkerDone(std::shared_ptr<Running> job);

    quint64 mCurrentId = 0;
    std::shared_ptr<Running> mRunning; // current job (null when idle)
    std::vector<std::shared_ptr<Running>> mAll; // every job whose worker has not returned yet
    std::shared_ptr<const SearchOutcome> mLast;
    std::shared_ptr<Cache> mCache; // shared with the workers
    QTimer *mProgressTimer = nullptr;
};

} // namespace memx::ui

Q_DECLARE_METATYPE(std::shared_ptr<const memx::ui::SearchOutcome>)
