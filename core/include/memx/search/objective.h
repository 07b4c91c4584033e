#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memx {

struct SearchResult;

/// Weights of the weighted-product objective score = T'^wt x M'^wm x B'^wb (lower is better),
/// where X' = max(X, 1e-6 x max X) / max X is the metric normalised by its largest value over
/// the evaluated plans (the floor keeps a perfectly balanced plan, B = 0, from collapsing the
/// product to 0). Multiplying any metric by a constant leaves the ranking unchanged;
/// (1, 0, 0) ranks by iteration time alone. Weights must be >= 0.
struct Objective {
    double wt = 1.0;
    double wm = 0.0;
    double wb = 0.0;
};

/// Flat metric arrays (T, M, B), one entry per plan. Views, not owned.
struct MetricView {
    const double *time = nullptr;
    const double *memory = nullptr;
    const double *imbalance = nullptr;
    size_t size = 0;
};
MetricView metricsOf(const SearchResult &result);

/// log(score) of every plan (same order as the metrics); a pass over cached metrics.
std::vector<double> logScores(const MetricView &metrics, Objective objective);
/// Indices of the `topK` best plans by score, best first (ties broken by T, then M, then B,
/// then index, so the order is total and deterministic).
std::vector<uint32_t> rank(const MetricView &metrics, Objective objective, size_t topK);
std::vector<uint32_t> rank(const SearchResult &result, Objective objective, size_t topK);
/// Exact Pareto front of (T, M, B), all minimised: the indices (ascending) of plans no other
/// plan dominates (<= in every metric and < in at least one). Identical points are all kept.
/// O(n log n): sweep in T order with a (M, B) staircase.
std::vector<uint32_t> paretoFront(const MetricView &metrics);
std::vector<uint32_t> paretoFront(const SearchResult &result);

} // namespace memx
