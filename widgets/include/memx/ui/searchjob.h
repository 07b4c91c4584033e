#pragma once

#include "memx/engine/plannedsearch.h"
#include "memx/search/search.h"
#include "memx/store/memorystore.h"
#include "memx/ui/backgroundjob.h"

#include <QObject>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

namespace memx::ui {

/// What a finished background search hands to the views: the core's planned search (the request
/// as searched, the result with flat cached metrics - re-ranking never re-searches -, the learned
/// predictor it used, budget notes, cache figures), its exact Pareto front and, with a project,
/// the caches it read and updated. Immutable and shared between threads.
struct SearchOutcome : memx::PlannedSearch {
    quint64 jobId = 0;
    std::vector<uint32_t> front; ///< memx::paretoFront(result), ascending indices
    /// The project's cache blobs the search worked on (memx::copySearchCaches), updated unless the
    /// search used none; the window merges them back into the project (memx::mergeSearchCaches).
    /// Mutable: the GUI thread releases them (up to hundreds of MB) once merged, before the outcome
    /// is shared with any other thread.
    mutable std::shared_ptr<memx::MemoryStore> caches;
};

/// Runs the core's planned search (memx::runPlannedSearch: stored result, search, learned
/// predictor, caches - what `memx search --project` runs - with the launch target and idle node
/// groups; subsets that did not change since an earlier search of this job come from its
/// in-memory memx::SearchMemo) in a BackgroundJob: progress, cancel
/// and supersession (a newer start() cancels the running search and drops its result). All
/// signals are emitted on the GUI thread.
class SearchJob : public QObject {
    Q_OBJECT
public:
    static constexpr int ProgressIntervalMs = BackgroundJobBase::ProgressIntervalMs;

    explicit SearchJob(QObject *parent = nullptr);
    ~SearchJob() override;

    /// Starts the planned search `planned` (memx::planSearch) on the cache snapshot `caches` (null:
    /// no caches). Returns the new job id (ids grow by one per start()).
    quint64 start(memx::PlannedSearch planned, std::shared_ptr<memx::MemoryStore> caches = {});
    /// An analytic search of `request` without a project (planned with the default budget).
    quint64 start(memx::SearchRequest request);
    /// A planned search of `request` without a project (planned with the default budget).
    quint64 start(memx::PlannedSearchRequest request);
    /// Cancels the current job (cancelled() follows when its worker stops).
    void cancel();
    bool isRunning() const;
    quint64 currentJobId() const;
    /// The last result delivered by finished() (null before the first).
    std::shared_ptr<const SearchOutcome> lastOutcome() const { return mLast; }

signals:
    void started(quint64 jobId);
    /// Done / total of the current phase of the current job (throttled): base configurations
    /// while searching, configurations while predicting.
    void progress(quint64 jobId, qulonglong done, qulonglong total);
    /// The current job started predicting with the learned predictor (after the search).
    void predicting(quint64 jobId);
    /// The current job finished (never emitted for a superseded job).
    void finished(std::shared_ptr<const memx::ui::SearchOutcome> outcome);
    /// The current job was cancelled by cancel() (not by a newer start()).
    void cancelled(quint64 jobId);
    /// The current job failed, e.g. an unusable request (no GPUs); `message` says why.
    void failed(quint64 jobId, const QString &message);

private:
    BackgroundJob<std::shared_ptr<SearchOutcome>> *mJob = nullptr;
    std::shared_ptr<const SearchOutcome> mLast;
    /// Whole subset results of this job's earlier searches (a re-search after an edit reuses every
    /// subset that did not change), shared with the workers.
    std::shared_ptr<memx::SearchMemo> mMemo = std::make_shared<memx::SearchMemo>(8);
};

} // namespace memx::ui

Q_DECLARE_METATYPE(std::shared_ptr<const memx::ui::SearchOutcome>)
