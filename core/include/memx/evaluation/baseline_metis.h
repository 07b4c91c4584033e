#pragma once

// Metis (Um et al., USENIX ATC'24) re-implemented from its published method
// (../shared/reference/baselines.md, section 2): the pure pieces the tests check directly.
// metisEstimate / metisPlan are declared in baselines.h.

#include "memx/evaluation/baselines.h"

#include <vector>

namespace memx {

/// Metis' "Key idea 1" pruning: a device group smaller than this share of N / stages is dropped.
inline constexpr double kMetisVariance = 0.5;
/// Stage memory demand x this coefficient is checked against the group's summed memory.
inline constexpr double kMetisMemoryCoefficient = 5.0;
/// Sub-units every layer is split into for the fractional compute balancing.
inline constexpr int kMetisSubUnits = 7;

/// Whether n is a power of two (Metis' device groups and GPU totals must be).
bool metisPowerOfTwo(int n);

/// Metis' device-group shapes for `stages` stages of `gpus` GPUs (gen_device_group_shapes): every
/// multiset of powers of two summing to `gpus` with exactly `stages` members, none smaller than
/// kMetisVariance x gpus / stages; each returned non-increasing. Empty when gpus is not a power of
/// two or no shape exists.
std::vector<std::vector<int>> metisGroupShapes(int gpus, int stages);

/// The distinct orders of one shape along the pipeline, at most `cap` (lexicographic from the
/// ascending order); `capped` is set when more exist.
std::vector<std::vector<int>> metisGroupOrders(const std::vector<int> &shape, size_t cap, bool &capped);

/// DataLoadBalancer: `batch` sequences split over replicas in proportion to `weights` (1 / the
/// replica's per-sample time), largest-remainder rounding, every replica at least 1 (the largest
/// share gives way). Empty when batch < weights.size() or a weight is not positive.
std::vector<int> metisBalanceBatch(int batch, const std::vector<double> &weights);

/// LayerComputeBalancer's proportional step: `layers` split over stages in proportion to
/// `capacity` (relative compute speed) through kMetisSubUnits sub-units per layer, largest
/// remainder, rounded back to whole layers (nearest), every stage at least one layer, the sum
/// mended on the stages whose rounding erred most. Empty when layers < capacity.size().
std::vector<int> metisProportionalSplit(int layers, const std::vector<double> &capacity);

} // namespace memx
