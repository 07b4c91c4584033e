#pragma once

// Galvatron (Miao et al., VLDB'22; Galvatron-BMW's memory-balanced pipeline division)
// re-implemented from its published method (../shared/reference/baselines.md, section 5): the pure
// pieces the tests check directly. galvatronEstimate / galvatronPlan are declared in baselines.h.
//
// Units: bytes and ms throughout. Galvatron counts parameter_size (param_MB) as fp32 parameters,
// 4 B each, and the model states as 4 x param_MB, i.e. 16 B per parameter (mixed-precision Adam:
// bf16 weights 2 + bf16 gradients 2 + fp32 master weights 4 + two Adam moments 8). The data-parallel
// message is param_MB halved for mixed precision: 2 B per parameter.

#include "memx/evaluation/baselines.h"

#include <string>
#include <vector>

namespace memx {

/// One search task: pipeline, tensor and data-parallel degrees over all the cluster's GPUs, and the
/// chunks (micro-batches per iteration) with their micro-batch size.
struct GalvatronTask {
    int pp = 1, tp = 1, dp = 1, chunks = 1, mbs = 1;

    bool operator==(const GalvatronTask &) const = default;
};
/// Every task on the context's cluster, in enumeration order (tp, then pp, then chunks ascending):
/// pp x tp x dp = all GPUs, tp a power of two dividing the heads and KV groups whose groups of
/// consecutive ranks (node order) stay inside a node, pp <= layers, dp dividing gbs, chunks every
/// divisor of gbs / dp with mbs = gbs / (dp chunks) <= 16.
std::vector<GalvatronTask> galvatronTasks(const BaselineContext &context);

/// Galvatron's data-parallel type of a plan (it is per layer in Galvatron; one per plan here).
enum class GalvatronDpType { Ddp, Zero2, Zero3 };
const char *toString(GalvatronDpType t); ///< "ddp", "zero2", "zero3"

/// Galvatron's single hardware view of a cluster (it has one memory_constraint and one hardware
/// profile): the memory constraint is the smallest device memory of the cluster and the profile
/// the most common device type by GPU count (ties: the type met first in node order).
struct GalvatronHardware {
    int device = -1; ///< index into Cluster::devices of the profiled type; -1 without GPUs
    int gpus = 0; ///< all GPUs of the cluster, planned as if identical
    double memoryBytes = 0; ///< the smallest device memory of the cluster
    double budgetBytes = 0; ///< galvatronBudgetBytes(memoryBytes)
    int memoryDevice = -1; ///< the device type with that smallest memory (first in node order)
};
GalvatronHardware galvatronHardware(const BaselineContext &context);

/// The usable budget of a memory constraint: 80% of it when it exceeds 20 GiB (Galvatron keeps 20%
/// for the allocator cache), else all of it.
double galvatronBudgetBytes(double memoryBytes);

/// Share of the 16 B/param model states one GPU keeps under `type` in a DP group of `d`:
/// DDP 1; ZeRO-3 1/d + 0.003; ZeRO-2 7/8 (1/d + 0.003) + 1/8 (all but the bf16 weights sharded).
double galvatronStateRatio(GalvatronDpType type, int d);

/// The memory of one GPU of a pipeline stage, split so that the recompute choice is linear:
/// with n transformer layers of which r are recomputed (checkpointed), the stage holds
///   fixedBytes + (n - r) x layerBytes + r x layerBytesRecompute.
struct GalvatronStageMemory {
    double fixedBytes = 0; ///< embedding (first stage) and head (last stage) states and activations
    double layerBytes = 0; ///< one layer without checkpointing: states + activations in flight
    double layerBytesRecompute = 0; ///< one checkpointed layer: states + its input in flight

    double bytes(int layers, int recomputed) const
    {
        return fixedBytes + (layers - recomputed) * layerBytes + recomputed * layerBytesRecompute;
    }
};
/// The memory of stage `stageIndex` of a `pp`-stage 1F1B pipeline running `microBatches`
/// micro-batches, with the figures of `costs` (one TP rank at costs.tp, costs.microBatch sequences
/// per micro-batch):
///   states  = 16 B x params on the TP rank x galvatronStateRatio(type, d)
///   act     = per-sample activation bytes (layerActivationBytes / microBatch, or the recompute
///             figure) x local batch (microBatch) x in-flight micro-batches min(pp - stageIndex, B)
///   fixed   = stage 0: 16 B x embeddingParams x ratio + embeddingActivationBytes x in-flight;
///             last stage: 16 B x headParams x ratio + logitsBytes (one micro-batch's logits).
GalvatronStageMemory galvatronStageMemory(const BaselineLayerCosts &costs, GalvatronDpType type, int d, int stageIndex,
                                          int pp, int microBatches);

/// Galvatron's per-layer checkpoint knapsack for one stage of identical layers: the fewest
/// checkpointed layers r in [0, layers] with memory.bytes(layers, r) <= budget (fewest recomputed
/// layers = least recompute time, since each adds its forward to the backward). -1 when even
/// r = layers does not fit.
int galvatronRecomputeLayers(const GalvatronStageMemory &memory, int layers, double budgetBytes);

/// Galvatron's even division (pp_division_even): layers / pp per stage, the remainder one layer
/// each on the last stages. Empty when pp < 1 or pp > layers.
std::vector<int> galvatronEvenDivision(int layers, int pp);

/// Galvatron-BMW's memory-balanced division (pp_division_memory_balanced) of `layers` identical
/// layers over the stages of `memory` (one entry per stage, stage s costing
/// memory[s].bytes(n, 0) with n layers): the average is the mean stage memory of the even
/// division; stages 0 .. pp - 2 in turn take layers while they stay within the average (at least
/// one layer each, and at least one left for every later stage); the last stage takes the rest.
/// Empty when any stage then exceeds 1.3 x the average (the cap), or pp < 1 or pp > layers.
std::vector<int> galvatronMemoryBalancedDivision(const std::vector<GalvatronStageMemory> &memory, int layers);

/// Galvatron's pipeline time from the per-micro-batch time t_s of every stage (forward +
/// backward + p2p), B micro-batches:
///   max( sum_s t_s + t_last (B - 1),  sum_s t_s / 3 + (B - 1) max_s t_s + sum_s 2 t_s / 3 )
/// the second term is the 1F1B bound: fill with forwards (1/3 of a stage time), steady state at the
/// bottleneck stage, drain with backwards (2/3).
double galvatronPipelineMs(const std::vector<double> &stageMs, int microBatches);

/// The overlap coefficient (profiled overlap_coefficient.json): the part of the last micro-batch's
/// backward that runs concurrently with the gradient reduction is this much slower.
inline constexpr double kGalvatronOverlapCoe = 1.1256;

/// The exposed tail of a stage's gradient reduction `dpMs` started with its last backward `bctMs`:
/// the overlapped part min(bct, dp) is slowed by the overlap coefficient, the rest of the reduction
/// runs alone: max(0, dp - bct) + (coe - 1) min(bct, dp).
double galvatronReduceTailMs(double bctMs, double dpMs);

} // namespace memx
