#include "memx/search/batchsuggestion.h"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace memx {

namespace {

/// Every stage of `pl` divides `step` samples within the replica cap.
bool pipelineDivides(const SearchResult::Pipeline &pl, int step, int maxReplicaMicroBatch)
{
    for (const SearchStage &s : pl.stages) {
        if (s.mixed()) {
            const auto split = mixedMicroBatches(step, s.dp - s.dp2, s.dp2, s.weight, s.weight2);
            if (!split || std::max(split->first, split->second) > maxReplicaMicroBatch)
                return false;
        } else if (step % s.dp != 0 || step / s.dp > maxReplicaMicroBatch) {
            return false;
        }
    }
    return true;
}

int maxDpOf(const SearchResult::Pipeline &pl)
{
    int d = 1;
    for (const SearchStage &s : pl.stages)
        d = std::max(d, s.dp);
    return d;
}

} // namespace

std::vector<int> stepSizesOf(const SearchResult &result, int maxReplicaMicroBatch)
{
    std::set<int> steps;
    for (const SearchResult::Pipeline &pl : result.pipelines)
        for (int b : result.microBatchSizes) {
            const int step = b * maxDpOf(pl);
            if (!steps.count(step) && pipelineDivides(pl, step, maxReplicaMicroBatch))
                steps.insert(step);
        }
    return {steps.begin(), steps.end()};
}

std::vector<int> workableMicroBatches(const SearchResult &result, int globalBatch, int maxReplicaMicroBatch,
                                      int maxMicroBatch)
{
    std::set<int> out;
    for (int b = 1; b <= maxMicroBatch; ++b)
        for (const SearchResult::Pipeline &pl : result.pipelines) {
            const int step = b * maxDpOf(pl);
            if (globalBatch % step == 0 && pipelineDivides(pl, step, maxReplicaMicroBatch)) {
                out.insert(b);
                break;
            }
        }
    return {out.begin(), out.end()};
}

std::vector<int> nearestGlobalBatches(int globalBatch, const std::vector<int> &stepSizes, size_t count)
{
    std::set<int> candidates;
    for (int s : stepSizes) {
        if (s < 1)
            continue;
        const int below = globalBatch / s * s;
        // The multiples around globalBatch: enough on each side for `count` answers of one step.
        for (size_t k = 0; k < count; ++k) {
            const long long lo = static_cast<long long>(below) - static_cast<long long>(k) * s;
            const long long hi = static_cast<long long>(below) + static_cast<long long>(k + 1) * s;
            if (lo >= 1)
                candidates.insert(static_cast<int>(lo));
            if (hi <= (1 << 30))
                candidates.insert(static_cast<int>(hi));
        }
    }
    std::vector<int> out(candidates.begin(), candidates.end());
    std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
        const long long da = std::llabs(static_cast<long long>(a) - globalBatch);
        const long long db = std::llabs(static_cast<long long>(b) - globalBatch);
        return da != db ? da < db : a < b;
    });
    if (out.size() > count)
        out.resize(count);
    return out;
}

} // namespace memx
