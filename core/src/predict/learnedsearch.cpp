#include "memx/predict/learnedsearch.h"

#include <chrono>
#include <cmath>
#include <stdexcept>

namespace memx {
namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double, std::milli>(b - a).count();
}

/// The configurations still to predict and their compact signatures.
struct Lookup {
    std::vector<uint32_t> misses;
    std::vector<CompactSignature> missSigs;
};

/// Phase 1: every configuration's compact signature looked up in `cache` (hits go to `out`);
/// without a cache every configuration is a miss.
Lookup lookUpCached(const SearchResult &res, PredictionCache *cache, std::vector<CachedPrediction> &out,
                    LearnedSearchStats &st)
{
    Lookup l;
    const size_t n = res.size();
    if (!cache) {
        l.misses.resize(n);
        for (size_t i = 0; i < n; ++i)
            l.misses[i] = static_cast<uint32_t>(i);
        return l;
    }
    // Class strings are interned once per pipeline; each configuration then costs a few words.
    std::vector<std::vector<uint32_t>> classIds(res.pipelines.size());
    for (size_t p = 0; p < res.pipelines.size(); ++p) {
        const SearchResult::Pipeline &pl = res.pipelines[p];
        for (size_t s = 0; s < pl.stages.size(); ++s) {
            classIds[p].push_back(cache->internClass("R" + pl.replicaKey(s)));
            classIds[p].push_back(cache->internClass("D" + pl.dpClass[s]));
            classIds[p].push_back(cache->internClass("P" + pl.p2pClass[s]));
        }
    }
    CompactSignature sig;
    for (size_t i = 0; i < n; ++i) {
        res.signatureWords(i, classIds, sig.words);
        sig.hash = hashWords(sig.words.data(), sig.words.size());
        if (auto hit = cache->find(sig)) {
            out[i] = *hit;
            ++st.cacheHits;
        } else {
            l.misses.push_back(static_cast<uint32_t>(i));
            l.missSigs.push_back(sig);
        }
    }
    return l;
}

/// Phase 2: the misses predicted in batches of `batchRows` rows.
void predictMisses(const SearchResult &res, const LearnedPredictor &predictor, const std::vector<uint32_t> &misses,
                   size_t batchRows, const ProgressFn &progress, std::vector<CachedPrediction> &out)
{
    std::vector<float> x, tl, ml, ts, ms;
    batchRows = std::max<size_t>(1, batchRows);
    for (size_t b0 = 0; b0 < misses.size(); b0 += batchRows) {
        reportOrThrow(progress, b0, misses.size());
        const size_t rows = std::min(batchRows, misses.size() - b0);
        x.resize(rows * kFeatureCount);
        for (size_t r = 0; r < rows; ++r)
            std::copy_n(res.features.begin() + static_cast<std::ptrdiff_t>(misses[b0 + r]) * kFeatureCount,
                        kFeatureCount, x.begin() + static_cast<std::ptrdiff_t>(r * kFeatureCount));
        predictor.predictLogRatios(x.data(), rows, tl, ml, ts, ms);
        for (size_t r = 0; r < rows; ++r)
            out[misses[b0 + r]] = CachedPrediction {tl[r], ml[r], ts[r], ms[r]};
    }
    reportOrThrow(progress, misses.size(), misses.size());
}

/// Phase 3: the analytic figures of `res` replaced by the learned ones.
void applyPredictions(SearchResult &res, const LearnedPredictor &predictor, const std::vector<CachedPrediction> &out)
{
    const size_t n = res.size();
    res.timeSpread.resize(n);
    res.memSpread.resize(n);
    res.oomRisk.resize(n);
    res.extrapolating.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const double ft = std::exp(static_cast<double>(out[i].timeLogRatio));
        const double fm = std::exp(static_cast<double>(out[i].memLogRatio));
        res.timeMs[i] *= ft;
        res.peakMemory[i] *= fm;
        res.peakBytes[i] *= fm;
        res.timeSpread[i] = out[i].timeSpread;
        res.memSpread[i] = out[i].memSpread;
        res.oomRisk[i] = isOomRisk(res.peakMemory[i], out[i].memSpread);
        // From the features, not the cache: a cached prediction carries no flag.
        res.extrapolating[i] = predictor.isExtrapolating(res.features.data() + i * kFeatureCount);
    }
    res.predictor = predictor.describe();
}

} // namespace

LearnedSearchStats applyLearnedPredictor(SearchResult &res, const LearnedPredictor &predictor, PredictionCache *cache,
                                         size_t batchRows, const ProgressFn &progress)
{
    const auto t0 = Clock::now();
    const size_t n = res.size();
    if (res.features.size() != n * kFeatureCount)
        throw std::invalid_argument("applyLearnedPredictor: the search result has no features (set "
                                    "SearchRequest::collectFeatures)");
    LearnedSearchStats st;
    st.configurations = n;
    std::vector<CachedPrediction> out(n);
    const Lookup lookup = lookUpCached(res, cache, out, st);
    const auto t1 = Clock::now();
    predictMisses(res, predictor, lookup.misses, batchRows, progress, out); // Cancelled: nothing changed yet
    st.predicted = lookup.misses.size();
    const auto t2 = Clock::now();
    if (cache)
        for (size_t k = 0; k < lookup.misses.size(); ++k)
            cache->insert(lookup.missSigs[k], out[lookup.misses[k]]);
    applyPredictions(res, predictor, out);
    const auto t3 = Clock::now();
    st.signatureMs = msBetween(t0, t1);
    st.predictMs = msBetween(t1, t2);
    st.totalMs = msBetween(t0, t3);
    return st;
}

} // namespace memx
