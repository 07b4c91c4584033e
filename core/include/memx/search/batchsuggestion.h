#pragma once
// Which global and micro-batch sizes a search space can run: pure arithmetic over the pipeline
// shapes of a search result (no evaluation). The planned search's "nothing fits" advice uses it
// (memx/search/plannedsearch.h); a search that rounds the global batch can use the same rule.

#include "memx/search/search.h"

#include <vector>

namespace memx {

/// Sequences one micro-batch step carries through a pipeline of `result` (micro-batch b x the
/// largest DP), for every pipeline and micro-batch size of the result whose every stage divides
/// it within `maxReplicaMicroBatch` (a stage's DP divides it; a mixed stage's parts can split it,
/// mixedMicroBatches). A global batch is workable for such a pipeline exactly when it is a
/// multiple of the step. Sorted, each once.
std::vector<int> stepSizesOf(const SearchResult &result, int maxReplicaMicroBatch);

/// The same for micro-batch sizes 1..maxMicroBatch instead of the result's own: the micro-batch
/// sizes b for which some pipeline's step divides `globalBatch`. Sorted.
std::vector<int> workableMicroBatches(const SearchResult &result, int globalBatch, int maxReplicaMicroBatch,
                                      int maxMicroBatch);

/// The `count` positive multiples of any of `stepSizes` nearest to `globalBatch` (itself when it
/// is one), nearest first, the smaller first between two at the same distance.
std::vector<int> nearestGlobalBatches(int globalBatch, const std::vector<int> &stepSizes, size_t count);

} // namespace memx
