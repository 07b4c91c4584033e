#include "memx/predict/learnedsearch.h"

#include <chrono>
#include <cmath>
#include <stdexcept>

namespace memx {

LearnedSearchStats applyLearnedPredictor(SearchResult &res, const LearnedPredictor &predictor, PredictionCache *cache,
                                         size_t batchRows)
{
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const size_t n = res.size();
    if (res.features.size() != n * kFeatureCount)
        throw std::invalid_argument("applyLearnedPredictor: the search result has no features (set "
                                    "SearchRequest::collectFeatures)");
    LearnedSearchStats st;
    st.configurations = n;
    std::vector<CachedPrediction> out(n);
    std::vector<uint32_t> misses;
    std::vector<CompactSignature> missSigs;
    if (cache) {
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
                misses.push_back(static_cast<uint32_t>(i));
                missSigs.push_back(sig);
            }
        }
    } else {
        misses.resize(n);
        for (size_t i = 0; i < n; ++i)
            misses[i] = static_cast<uint32_t>(i);
    }
    const auto t1 = Clock::now();
    std::vector<float> x, tl, ml, ts, ms;
    batchRows = std::max<size_t>(1, batchRows);
    for (size_t b0 = 0; b0 < misses.size(); b0 += batchRows) {
        const size_t rows = std::min(batchRows, misses.size() - b0);
        x.resize(rows * kFeatureCount);
        for (size_t r = 0; r < rows; ++r)
            std::copy_n(res.features.begin() + static_cast<std::ptrdiff_t>(misses[b0 + r]) * kFeatureCount,
                        kFeatureCount, x.begin() + static_cast<std::ptrdiff_t>(r * kFeatureCount));
        predictor.predictLogRatios(x.data(), rows, tl, ml, ts, ms);
        for (size_t r = 0; r < rows; ++r)
            out[misses[b0 + r]] = CachedPrediction {tl[r], ml[r], ts[r], ms[r]};
    }
    st.predicted = misses.size();
    const auto t2 = Clock::now();
    if (cache)
        for (size_t k = 0; k < misses.size(); ++k)
            cache->insert(missSigs[k], out[misses[k]]);
    res.timeSpread.resize(n);
    res.memSpread.resize(n);
    res.oomRisk.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const double ft = std::exp(static_cast<double>(out[i].timeLogRatio));
        const double fm = std::exp(static_cast<double>(out[i].memLogRatio));
        res.timeMs[i] *= ft;
        res.peakMemory[i] *= fm;
        res.peakBytes[i] *= fm;
        res.timeSpread[i] = out[i].timeSpread;
        res.memSpread[i] = out[i].memSpread;
        res.oomRisk[i] = isOomRisk(res.peakMemory[i], out[i].memSpread);
    }
    res.predictor = predictor.describe();
    const auto t3 = Clock::now();
    st.signatureMs = std::chrono::duration<double, std::milli>(t1 - t0).count();
    st.predictMs = std::chrono::duration<double, std::milli>(t2 - t1).count();
    st.totalMs = std::chrono::duration<double, std::milli>(t3 - t0).count();
    return st;
}

} // namespace memx
