#include "memx/engine/plannedsearch.h"

#include "memx/predict/predictioncache.h"
#include "memx/predict/projectpredictor.h"

#include <algorithm>
#include <chrono>

namespace memx {

SearchProject loadSearchProject(const Store &store)
{
    SearchProject p;
    p.profiles = store.profiles();
    p.calibration = loadCalibration(store);
    if (std::optional<LearnedPredictor> learned = loadPredictor(store))
        p.predictor = std::make_shared<const LearnedPredictor>(std::move(*learned));
    return p;
}

PlannedSearch planSearch(SearchRequest request, const SearchProject *project, const PlannedSearchOptions &options)
{
    PlannedSearch s;
    s.options = options;
    if (project) {
        request.profiles = project->profiles;
        if (project->calibration) {
            applyCalibration(*project->calibration, request.cluster, request.cost);
            s.calibrated = true;
        }
        s.predictor = project->predictor;
    }
    request.collectFeatures = s.predictor != nullptr;
    s.narrowed = narrowToBudget(request, options.maxBases);
    if (s.predictor && options.useCache) {
        s.resultKey = searchRequestKey(request, s.predictor->digest());
        s.predictionContext
            = predictionContext(request.cluster, request.model, &request.profiles, request.cost, s.predictor->digest());
    }
    s.request = std::move(request);
    return s;
}

namespace {

/// The stored result of an identical request, when `caches` holds one.
bool reuseStoredResult(PlannedSearch &s, const Store *caches)
{
    if (!caches || !s.resultKey)
        return false;
    std::optional<SearchResult> hit = loadSearchResult(*caches, *s.resultKey, &s.warnings);
    if (!hit)
        return false;
    s.result = std::move(*hit);
    s.resultFromCache = true;
    s.cacheUsed = true;
    s.learned.configurations = s.result.size();
    s.learned.cacheHits = s.result.size();
    return true;
}

/// The learned predictor over the search's result, through the project's prediction cache.
/// Cancelled: the result keeps its analytic figures and is marked cancelled.
void predict(PlannedSearch &s, Store *caches, const ProgressFn &progress)
{
    s.predictor->setThreads(s.result.threads);
    std::optional<PredictionCache> cache;
    if (caches && s.resultKey)
        cache = loadPredictionCache(*caches, s.predictionContext, &s.warnings);
    try {
        s.learned = applyLearnedPredictor(s.result, *s.predictor, cache ? &*cache : nullptr, 65536, progress);
    } catch (const Cancelled &) {
        s.result.cancelled = true;
        return;
    }
    if (cache) {
        s.cacheUsed = true;
        // The result first: its transaction then snapshots a MemoryStore without the (large) new
        // prediction cache.
        saveSearchResult(*caches, *s.resultKey, s.result);
        savePredictionCache(*caches, *cache);
    }
}

} // namespace

void runPlannedSearch(PlannedSearch &s, Store *caches, const ProgressFn &progress,
                      const std::function<void(PlannedSearchPhase)> &onPhase)
{
    const auto t0 = std::chrono::steady_clock::now();
    if (!reuseStoredResult(s, caches)) {
        if (onPhase)
            onPhase(PlannedSearchPhase::Search);
        s.result = runSearch(s.request, progress);
        if (s.predictor && !s.result.cancelled) {
            if (onPhase)
                onPhase(PlannedSearchPhase::Predict);
            predict(s, caches, progress);
        }
        // The features were only the predictor's input (kFeatureCount floats per configuration).
        s.result.features.clear();
        s.result.features.shrink_to_fit();
    }
    s.wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

PlannedSearch plannedSearch(SearchRequest request, const SearchProject *project, Store *caches,
                            const PlannedSearchOptions &options, const ProgressFn &progress,
                            const std::function<void(PlannedSearchPhase)> &onPhase)
{
    PlannedSearch s = planSearch(std::move(request), project, options);
    runPlannedSearch(s, caches, progress, onPhase);
    return s;
}

void copySearchCaches(const Store &project, const PlannedSearch &search, Store &snapshot)
{
    if (!search.resultKey)
        return;
    if (auto index = project.blob(kSearchResultBlobKind, kSearchResultIndexKey))
        snapshot.putBlob(kSearchResultBlobKind, kSearchResultIndexKey, *index);
    const std::string result = searchResultBlobKey(*search.resultKey);
    if (auto b = project.blob(kSearchResultBlobKind, result)) {
        // A stored result is all the search will read (the prediction cache can be the largest blob).
        snapshot.putBlob(kSearchResultBlobKind, result, *b);
        return;
    }
    const std::string context = predictionCacheBlobKey(search.predictionContext);
    if (auto b = project.blob(kPredictionCacheBlobKind, context))
        snapshot.putBlob(kPredictionCacheBlobKind, context, *b);
}

void mergeSearchCaches(const Store &snapshot, Store &project)
{
    // Blob by blob, not in one transaction (a MemoryStore's begin() copies every blob it holds):
    // each blob is verified when read, so a merge cut short leaves caches that are still valid -
    // an index naming a result that is not there is a miss, a result no index names is unused.
    const std::vector<std::string> index = storedSearchResults(snapshot);
    for (const std::string &key : snapshot.blobKeys(kPredictionCacheBlobKind))
        project.putBlob(kPredictionCacheBlobKind, key, *snapshot.blob(kPredictionCacheBlobKind, key));
    for (const std::string &key : snapshot.blobKeys(kSearchResultBlobKind))
        if (key != kSearchResultIndexKey)
            project.putBlob(kSearchResultBlobKind, key, *snapshot.blob(kSearchResultBlobKind, key));
    if (auto b = snapshot.blob(kSearchResultBlobKind, kSearchResultIndexKey)) {
        project.putBlob(kSearchResultBlobKind, kSearchResultIndexKey, *b);
        for (const std::string &key : project.blobKeys(kSearchResultBlobKind))
            if (key != kSearchResultIndexKey && std::find(index.begin(), index.end(), key) == index.end())
                project.removeBlob(kSearchResultBlobKind, key);
    }
}

PlanFigures planFigures(const SearchResult &r, size_t i)
{
    PlanFigures f;
    f.timeMs = r.timeMs[i];
    f.peakMemory = r.peakMemory[i];
    f.imbalance = r.imbalance[i];
    f.peakBytes = r.peakBytes[i];
    f.learned = r.timeSpread.size() == r.size() && r.size() > 0;
    if (f.learned) {
        f.timeSpread = r.timeSpread[i];
        f.memSpread = r.memSpread[i];
        f.oomRisk = r.oomRisk[i] != 0;
        f.extrapolating = i < r.extrapolating.size() && r.extrapolating[i] != 0;
    }
    return f;
}

} // namespace memx
