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

PlannedSearch planSearch(PlannedSearchRequest request, const SearchProject *project,
                         const PlannedSearchOptions &options)
{
    PlannedSearch s;
    s.options = options;
    SearchRequest &search = request.search;
    if (project) {
        search.profiles = project->profiles;
        if (project->calibration) {
            applyCalibration(*project->calibration, search.cluster, search.cost);
            if (request.baseline) {
                // The cluster's devices are calibrated: the baseline's too, so that they compare equal.
                CostOptions scratch;
                applyCalibration(*project->calibration, *request.baseline, scratch);
            }
            s.calibrated = true;
        }
        s.predictor = project->predictor;
    }
    search.collectFeatures = s.predictor != nullptr;
    request.maxBases = options.maxBases;
    s.subsetPlan = planSubsets(request);
    if (s.predictor && options.useCache) {
        for (const SearchRequest &r : s.subsetPlan.requests)
            s.resultKeys.push_back(searchRequestKey(r, s.predictor->digest()));
        s.predictionContext
            = predictionContext(search.cluster, search.model, &search.profiles, search.cost, s.predictor->digest());
    }
    s.narrowed = s.subsetPlan.narrowed;
    s.request = std::move(request);
    return s;
}

std::optional<SearchResult> SearchMemo::find(const SearchRequestKey &key)
{
    std::lock_guard<std::mutex> lock(mMutex);
    return mResults.find(key);
}

void SearchMemo::insert(const SearchRequestKey &key, const SearchResult &result)
{
    std::lock_guard<std::mutex> lock(mMutex);
    mResults.insert(key, result);
}

namespace {

void add(LearnedSearchStats &to, const LearnedSearchStats &s)
{
    to.configurations += s.configurations;
    to.cacheHits += s.cacheHits;
    to.predicted += s.predicted;
    to.signatureMs += s.signatureMs;
    to.predictMs += s.predictMs;
    to.totalMs += s.totalMs;
}

/// The search of one subset with the project's predictor and caches (a SubsetSearch).
class ProjectSubsetSearch {
public:
    ProjectSubsetSearch(PlannedSearch &s, Store *caches, const std::function<void(PlannedSearchPhase)> &onPhase,
                        SearchMemo *memo)
        : mS(s)
        , mCaches(s.usesCache() ? caches : nullptr)
        , mOnPhase(onPhase)
        , mMemo(memo)
    {
    }

    SearchResult operator()(const SearchRequest &sub, const ProgressFn &progress)
    {
        ++mS.subsetSearches;
        std::optional<SearchRequestKey> memoKey;
        if (mMemo) {
            memoKey = searchRequestKey(sub, mS.predictor ? mS.predictor->digest() : 0);
            if (std::optional<SearchResult> hit = mMemo->find(*memoKey)) {
                ++mS.subsetsReused;
                if (mS.predictor) {
                    mS.learned.configurations += hit->size();
                    mS.learned.cacheHits += hit->size();
                }
                return std::move(*hit);
            }
        }
        SearchResult res = search(sub, progress);
        if (memoKey && !res.cancelled)
            mMemo->insert(*memoKey, res);
        return res;
    }

    /// Writes the updated prediction cache back (after every subset: the results first, so a
    /// MemoryStore transaction snapshots no large cache).
    void finish()
    {
        if (mCache && !mS.result.cancelled) {
            savePredictionCache(*mCaches, *mCache);
            mS.cacheUsed = true;
        }
    }

private:
    SearchResult search(const SearchRequest &sub, const ProgressFn &progress)
    {
        std::optional<SearchRequestKey> key;
        if (mCaches) {
            key = searchRequestKey(sub, mS.predictor->digest());
            if (std::optional<SearchResult> hit = loadSearchResult(*mCaches, *key, &mS.warnings)) {
                ++mS.subsetsFromCache;
                mS.cacheUsed = true;
                mS.learned.configurations += hit->size();
                mS.learned.cacheHits += hit->size();
                return std::move(*hit);
            }
        }
        if (mOnPhase)
            mOnPhase(PlannedSearchPhase::Search);
        SearchResult res = runSearch(sub, progress);
        if (mS.predictor && !res.cancelled) {
            if (mOnPhase)
                mOnPhase(PlannedSearchPhase::Predict);
            predict(res, key, progress);
        }
        // The features were only the predictor's input (kFeatureCount floats per configuration).
        res.features.clear();
        res.features.shrink_to_fit();
        return res;
    }

    /// The learned predictor over a subset's result, through the project's prediction cache.
    /// Cancelled: the result keeps its analytic figures and is marked cancelled.
    void predict(SearchResult &res, const std::optional<SearchRequestKey> &key, const ProgressFn &progress)
    {
        if (mCaches && !mCache)
            mCache = loadPredictionCache(*mCaches, mS.predictionContext, &mS.warnings);
        mS.predictor->setThreads(res.threads);
        try {
            add(mS.learned, applyLearnedPredictor(res, *mS.predictor, mCache ? &*mCache : nullptr, 65536, progress));
        } catch (const Cancelled &) {
            res.cancelled = true;
            return;
        }
        if (key) {
            saveSearchResult(*mCaches, *key, res);
            mS.cacheUsed = true;
        }
    }

    PlannedSearch &mS;
    Store *mCaches;
    const std::function<void(PlannedSearchPhase)> &mOnPhase;
    SearchMemo *mMemo;
    std::optional<PredictionCache> mCache;
};

} // namespace

void runPlannedSearch(PlannedSearch &s, Store *caches, const ProgressFn &progress,
                      const std::function<void(PlannedSearchPhase)> &onPhase, SearchMemo *memo)
{
    const auto t0 = std::chrono::steady_clock::now();
    ProjectSubsetSearch run(s, caches, onPhase, memo);
    PlannedSearchResult out = runPlannedSearch(s.request, s.subsetPlan, progress, std::ref(run));
    static_cast<PlannedSearchResult &>(s) = std::move(out);
    run.finish();
    s.resultFromCache = s.subsetSearches > 0 && s.subsetsFromCache == s.subsetSearches;
    s.wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

PlannedSearch plannedSearch(PlannedSearchRequest request, const SearchProject *project, Store *caches,
                            const PlannedSearchOptions &options, const ProgressFn &progress,
                            const std::function<void(PlannedSearchPhase)> &onPhase)
{
    PlannedSearch s = planSearch(std::move(request), project, options);
    runPlannedSearch(s, caches, progress, onPhase);
    return s;
}

void copySearchCaches(const Store &project, const PlannedSearch &search, Store &snapshot)
{
    if (!search.usesCache())
        return;
    if (auto index = project.blob(kSearchResultBlobKind, kSearchResultIndexKey))
        snapshot.putBlob(kSearchResultBlobKind, kSearchResultIndexKey, *index);
    bool every = true;
    for (const SearchRequestKey &k : search.resultKeys) {
        const std::string result = searchResultBlobKey(k);
        if (auto b = project.blob(kSearchResultBlobKind, result))
            snapshot.putBlob(kSearchResultBlobKind, result, *b);
        else
            every = false;
    }
    if (every) // stored results are all the search will read (the prediction cache can be the largest blob)
        return;
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
