#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memx {

struct SearchResult;

/// The one type of objective weights (CLI --weights, the GUI's sliders, settings, the document, the
/// evaluation). Weighted-product objective score = T'^time x M'^memory x B'^balance (lower is better).
/// T' = T / max T and M' = M / max M over the evaluated plans, so multiplying T or M by a
/// constant leaves the ranking unchanged. The imbalance B (a coefficient of variation, already
/// scale-free, 0 for a perfectly balanced plan) enters as the balance factor
/// B' = (1 + B) / max(1 + B): near-perfect balances then weigh as near-equal (B = 0.003 against
/// 0.004 is a 0.1% difference, not 33%), while a plan whose memory use varies by 40% across GPUs
/// weighs like one 40% slower at balance = time. (1, 0, 0) ranks by iteration time alone.
/// Weights must be >= 0; only their ratios matter. The default, (1, 0.5, 0.5), is the one documented
/// default of every front end: time first, memory headroom and balance half as much. See
/// docs/search.md section 3.
struct ObjectiveWeights {
    double time = 1.0; ///< weight of T (iteration time)
    double memory = 0.5; ///< weight of M (peak memory fraction)
    double balance = 0.5; ///< weight of B (memory imbalance)

    /// (1, 0, 0): iteration time alone.
    static constexpr ObjectiveWeights timeOnly() { return {1.0, 0.0, 0.0}; }
    bool operator==(const ObjectiveWeights &) const = default;
};

/// Flat metric arrays (T, M, B), one entry per plan. Views, not owned.
struct MetricView {
    const double *time = nullptr;
    const double *memory = nullptr;
    const double *imbalance = nullptr;
    size_t size = 0;
};
MetricView metricsOf(const SearchResult &result);

/// Normalisers of the objective: the largest T, M and 1 + B over a set of plans.
struct ObjectiveScale {
    double maxTime = 1.0;
    double maxMemory = 1.0;
    double maxBalance = 1.0; ///< max(1 + B)
};
ObjectiveScale objectiveScaleOf(const MetricView &metrics);
/// log(score) of one plan with metrics (t, m, b) against `scale` (e.g. the scale of a search result,
/// to score a plan chosen elsewhere on the same footing).
double logScore(const ObjectiveScale &scale, ObjectiveWeights objective, double t, double m, double b);
/// Throws std::invalid_argument unless every weight is finite and >= 0.
void checkObjective(ObjectiveWeights objective);

/// log(score) of every plan (same order as the metrics); a pass over cached metrics.
std::vector<double> logScores(const MetricView &metrics, ObjectiveWeights objective);
/// Indices of the `topK` best plans by score, best first (ties broken by T, then M, then B,
/// then index, so the order is total and deterministic).
std::vector<uint32_t> rank(const MetricView &metrics, ObjectiveWeights objective, size_t topK);
std::vector<uint32_t> rank(const SearchResult &result, ObjectiveWeights objective, size_t topK);
/// Exact Pareto front of (T, M, B), all minimised: the indices (ascending) of plans no other
/// plan dominates (<= in every metric and < in at least one). Identical points are all kept.
/// O(n log n): sweep in T order with a (M, B) staircase.
std::vector<uint32_t> paretoFront(const MetricView &metrics);
std::vector<uint32_t> paretoFront(const SearchResult &result);

} // namespace memx
