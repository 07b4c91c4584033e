#pragma once

#include "memx/predict/learnedpredictor.h"
#include "memx/predict/predictioncache.h"
#include "memx/search/search.h"

#include <cstddef>

namespace memx {

/// What applyLearnedPredictor did.
struct LearnedSearchStats {
    size_t configurations = 0;
    size_t cacheHits = 0;
    size_t predicted = 0; ///< rows sent to XGBoost (cache misses)
    double signatureMs = 0; ///< building signatures + cache lookups
    double predictMs = 0; ///< batched XGBoost prediction
    double totalMs = 0;
    double hitRate() const { return configurations ? static_cast<double>(cacheHits) / configurations : 0.0; }
};

/// Replaces the analytic T, M and peak bytes of every configuration of `result` (searched with
/// SearchRequest::collectFeatures) by the learned predictor's: T x exp(time ratio), M and peak
/// bytes x exp(memory ratio) (one ratio per plan, so B, a coefficient of variation, is unchanged).
/// Fills timeSpread / memSpread / oomRisk / extrapolating and result.predictor. With a `cache`
/// (whose context the caller set with predictionContext), configurations whose canonical signature
/// is cached are not predicted again, and new predictions are added. Prediction runs in batches of
/// `batchRows` rows (one XGBoost call per member per batch). Deterministic.
/// `progress(done, total)` counts predicted rows, once per batch; when it returns false this
/// throws Cancelled, leaving `result` as it was and adding no entry to `cache`.
/// Throws std::invalid_argument when the result carries no features.
LearnedSearchStats applyLearnedPredictor(SearchResult &result, const LearnedPredictor &predictor,
                                         PredictionCache *cache, size_t batchRows = 65536,
                                         const ProgressFn &progress = {});

} // namespace memx
