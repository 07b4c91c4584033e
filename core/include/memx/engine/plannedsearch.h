#pragma once

#include "memx/cost/calibration.h"
#include "memx/predict/learnedpredictor.h"
#include "memx/predict/learnedsearch.h"
#include "memx/predict/searchresultcache.h"
#include "memx/search/search.h"
#include "memx/store/store.h"
#include "memx/util/diagnostic.h"
#include "memx/util/progress.h"

#include <cstdint>
#include <functional>
#include <memory>
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

/// One planned search: what `memx search`, `memx compare` and the workbench's SearchJob run.
/// planSearch() fills the first block, runPlannedSearch() the second.
struct PlannedSearch {
    // -- planned --
    SearchRequest request; ///< as searched: the project's profiles and calibration, the narrowed space
    PlannedSearchOptions options;
    std::vector<std::string> narrowed; ///< one note per narrowing step (narrowToBudget)
    std::shared_ptr<const LearnedPredictor> predictor; ///< null: analytic
    bool calibrated = false; ///< the project's calibration was applied
    /// With a predictor and useCache: the stored-result key and the prediction cache's context.
    std::optional<SearchRequestKey> resultKey;
    std::uint64_t predictionContext = 0;
    // -- run --
    SearchResult result;
    LearnedSearchStats learned; ///< what the predictor did (zeros for the analytic model)
    bool resultFromCache = false; ///< the whole result came from the project (no search, no prediction)
    bool cacheUsed = false; ///< the caches were read and, unless cancelled, written
    std::vector<Diagnostic> warnings; ///< unreadable cache blobs (ignored: a miss)
    double wallMs = 0; ///< runPlannedSearch, wall clock

    bool usesPredictor() const { return predictor != nullptr; }
    bool cancelled() const { return result.cancelled; }
};

/// Plans `request` (cluster, model, batch, space, cost as the user gave them): applies the
/// project's profiles and calibration (when `project` is given), narrows the space to
/// options.maxBases, and with a predictor asks the search for features and computes the cache keys.
/// Cheap (no enumeration): a UI thread may call it.
PlannedSearch planSearch(SearchRequest request, const SearchProject *project, const PlannedSearchOptions &options = {});

/// Runs a planned search: the stored result of an identical request when there is one in
/// `caches`, else runSearch, then (with a predictor) the learned predictor through the prediction
/// cache of `caches`, whose updated cache and result are stored back unless the search was
/// cancelled. `caches` may be null (no caches), e.g. without a project. Progress and cancel go
/// through `progress` (memx/util/progress.h): cancelled during the search, the partial analytic
/// result is returned with result.cancelled set; cancelled during the prediction, the analytic
/// result is returned with result.cancelled set. `onPhase` is told when a phase starts.
/// Throws std::invalid_argument on an unusable request (runSearch's).
void runPlannedSearch(PlannedSearch &search, Store *caches, const ProgressFn &progress = {},
                      const std::function<void(PlannedSearchPhase)> &onPhase = {});

/// planSearch + runPlannedSearch.
PlannedSearch plannedSearch(SearchRequest request, const SearchProject *project, Store *caches,
                            const PlannedSearchOptions &options = {}, const ProgressFn &progress = {},
                            const std::function<void(PlannedSearchPhase)> &onPhase = {});

/// Copies the cache blobs runPlannedSearch(search, ...) reads from `project` into `snapshot`, so a
/// worker can search on the snapshot while the project stays with its owner: the index of stored
/// results and the stored result of its request when there is one, else the prediction cache of
/// its context. Nothing when `search` uses no cache. (A stored result that turns out unreadable is
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
