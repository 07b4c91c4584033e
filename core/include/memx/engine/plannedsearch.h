#pragma once

#include "memx/cost/calibration.h"
#include "memx/predict/learnedpredictor.h"
#include "memx/predict/learnedsearch.h"
#include "memx/predict/searchresultcache.h"
#include "memx/search/plannedsearch.h"
#include "memx/search/search.h"
#include "memx/store/store.h"
#include "memx/util/diagnostic.h"
#include "memx/util/progress.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace memx {

/// Budget of base configurations a planned search narrows its space to (`--max-bases`).
constexpr std::uint64_t kDefaultMaxBases = 500000;

/// What a project contributes to a search, read once from its store: the per-layer profiles, the
/// cost-model calibration (`memx profile calibrate`) and the learned predictor (`memx train`). A
/// value: copy it (or share it) into a worker; the predictor is immutable and thread-safe.
struct SearchProject {
    ProfileSet profiles;
    std::optional<Calibration> calibration;
    std::shared_ptr<const LearnedPredictor> predictor; ///< null: the analytic cost model
};

/// Reads `store`'s search context. Throws std::runtime_error naming the blob when the stored
/// predictor or calibration cannot be read.
SearchProject loadSearchProject(const Store &store);

struct PlannedSearchOptions {
    std::uint64_t maxBases = kDefaultMaxBases; ///< narrowToBudget's budget
    /// With a predictor: read and write the project's prediction cache and its stored result of an
    /// identical earlier search (`--no-cache` turns it off).
    bool useCache = true;
};

enum class PlannedSearchPhase {
    Search, ///< enumerate and evaluate (progress: base configurations)
    Predict, ///< the learned predictor over every configuration (progress: rows predicted)
};

/// One project search: what `memx search`, `memx compare` and the workbench's SearchJob run. The
/// search floor's planned search (memx/search/plannedsearch.h: launch target, idle subsets, notes,
/// advice) with the project's profiles, calibration, learned predictor and caches. planSearch()
/// fills the "planned" block, runPlannedSearch() the PlannedSearchResult base and the "run" block.
struct PlannedSearch : PlannedSearchResult {
    // -- planned --
    /// As searched: the project's profiles, the calibration applied to the cluster (and the
    /// baseline), the budget (maxBases), features asked for with a predictor.
    PlannedSearchRequest request;
    SubsetPlan subsetPlan; ///< the subsets and their (narrowed) requests
    PlannedSearchOptions options;
    std::shared_ptr<const LearnedPredictor> predictor; ///< null: analytic
    bool calibrated = false; ///< the project's calibration was applied
    /// With a predictor and useCache: the stored-result key of each subset and the prediction
    /// cache's context (the whole cluster's).
    std::vector<SearchRequestKey> resultKeys;
    std::uint64_t predictionContext = 0;
    // -- run --
    LearnedSearchStats learned; ///< what the predictor did (zeros for the analytic model)
    size_t subsetSearches = 0; ///< subset searches run or reused (advice verification included)
    size_t subsetsFromCache = 0; ///< of them, stored results of the project reused whole
    size_t subsetsReused = 0; ///< of them, results of the in-memory SearchMemo reused whole
    bool resultFromCache = false; ///< every subset came from the project (no search, no prediction)
    bool cacheUsed = false; ///< the caches were read and, unless cancelled, written
    std::vector<Diagnostic> warnings; ///< unreadable cache blobs (ignored: a miss)
    double wallMs = 0; ///< runPlannedSearch, wall clock

    bool usesPredictor() const { return predictor != nullptr; }
    bool usesCache() const { return !resultKeys.empty(); }
    bool cancelled() const { return result.cancelled; }
};

/// Whole subset results of earlier searches, kept in memory (the workbench's: a re-search after an
/// edit reuses every subset that did not change, e.g. the cluster before an added node).
/// Thread-safe: the searches of one window share it.
class SearchMemo {
public:
    explicit SearchMemo(size_t capacity = 8)
        : mResults(capacity)
    {
    }
    std::optional<SearchResult> find(const SearchRequestKey &key);
    void insert(const SearchRequestKey &key, const SearchResult &result);

private:
    std::mutex mMutex;
    SearchResultCache mResults;
};

/// Plans `request` (cluster, model, batch, space, cost, target, idle groups, baseline as the user
/// gave them): applies the project's profiles and calibration (when `project` is given), sets the
/// budget options.maxBases, plans the subsets, and with a predictor asks the search for features
/// and computes the cache keys. Cheap (no enumeration): a UI thread may call it. Throws
/// std::invalid_argument for a cluster without GPUs.
PlannedSearch planSearch(PlannedSearchRequest request, const SearchProject *project,
                         const PlannedSearchOptions &options = {});

/// Runs a planned search, subset by subset: the stored result of an identical subset request when
/// `caches` holds one, else runSearch, then (with a predictor) the learned predictor through the
/// prediction cache of `caches`; the subset results and the updated prediction cache are stored
/// back unless the search was cancelled. `caches` may be null (no caches), e.g. without a
/// project. Progress and cancel go through `progress` (memx/util/progress.h): cancelled during a
/// search, the partial analytic result is returned with result.cancelled set; cancelled during a
/// prediction, that subset's analytic result with result.cancelled set. `onPhase` is told when a
/// phase starts. With `memo`, a subset whose whole request (and predictor) equals an earlier one's
/// is taken from it, and new subset results go into it. Throws std::invalid_argument on an
/// unusable request (runSearch's).
void runPlannedSearch(PlannedSearch &search, Store *caches, const ProgressFn &progress = {},
                      const std::function<void(PlannedSearchPhase)> &onPhase = {}, SearchMemo *memo = nullptr);

/// planSearch + runPlannedSearch.
PlannedSearch plannedSearch(PlannedSearchRequest request, const SearchProject *project, Store *caches,
                            const PlannedSearchOptions &options = {}, const ProgressFn &progress = {},
                            const std::function<void(PlannedSearchPhase)> &onPhase = {});

/// Copies the cache blobs runPlannedSearch(search, ...) reads from `project` into `snapshot`, so a
/// worker can search on the snapshot while the project stays with its owner: the index of stored
/// results, the stored result of each subset that has one and, unless every subset has one, the
/// prediction cache of its context. Nothing when `search` uses no cache. (A stored result that turns out unreadable is
/// then searched and predicted without the prediction cache: slower, not wrong.)
void copySearchCaches(const Store &project, const PlannedSearch &search, Store &snapshot);
/// Writes what a search stored in `snapshot` back into `project`: its prediction caches, stored
/// results and index; results the new index no longer lists are removed. Blob by blob (every blob
/// is verified when read, so an interrupted merge leaves valid caches).
void mergeSearchCaches(const Store &snapshot, Store &project);

/// What the front ends show of configuration `index` of a result.
struct PlanFigures {
    double timeMs = 0; ///< T
    double peakMemory = 0; ///< M
    double imbalance = 0; ///< B
    double peakBytes = 0;
    bool learned = false; ///< the figures are the learned predictor's (the next fields are set)
    double timeSpread = 0, memSpread = 0; ///< relative one-sigma spreads
    bool oomRisk = false; ///< isOomRisk(M, memory spread)
    bool extrapolating = false; ///< outside the training runs' envelope
};
PlanFigures planFigures(const SearchResult &result, size_t index);

} // namespace memx
