#pragma once

// Sailor (Strati et al., SOSP'25, arXiv 2504.17096) re-implemented from its published method
// (../shared/reference/baselines.md, section 3): the pure pieces the tests check directly.
// sailorEstimate / sailorPlan are declared in baselines.h.

#include "memx/evaluation/baselines.h"

#include <vector>

namespace memx {

/// Sailor's uniform layer split (get_stages): layers / pp layers per stage, and the
/// layers % pp extra layers one each on the LAST stages (they hold fewer micro-batches in flight,
/// so the extra layers ease memory pressure): 24 layers over 5 stages -> 4, 5, 5, 5, 5.
/// Empty when pp < 1 or pp > layers.
std::vector<int> sailorUniformSplit(int layers, int pp);

/// Forward + backward ms of one micro-batch through one replica of a stage (Sailor's comp_s of one
/// replica): transformer layers [first, first + count) of `costs`, plus the embedding when the
/// stage is the first and the head (output layer + loss) when it is the last.
double sailorReplicaComputeMs(const BaselineLayerCosts &costs, int first, int count, bool isFirst, bool isLast);

/// Sailor's memory of one GPU of a replica of device `device` at TP `tp` and micro-batch
/// `microBatch` serving stage `stageIndex` (layers [first, first + count)) of a `pp`-stage
/// pipeline (check_stage_fits / get_memory_footprint_on_gpu):
///   24 B x P_stage + act_mem x microBatch x (pp - stageIndex) + framework constant,
/// P_stage = parameters of the stage on one TP rank (embedding on stage 0, head on the last),
/// act_mem = the activation bytes of the stage's layers at micro-batch 1 (layerCosts(device, tp,
/// 1): layerActivationBytes per layer, the embedding's on stage 0, the logits on the last),
/// framework constant 2 GiB at TP 1 and 3 GiB at TP > 1.
double sailorReplicaMemoryBytes(const BaselineContext &context, int device, int tp, int microBatch, int first,
                                int count, int stageIndex, int pp);

/// Sailor's TP bounds (heuristic H1) of one device type for one stage.
struct SailorTpBounds {
    /// Smallest TP (a candidate below) with which the stage fits in the device's memory; 0 when
    /// none does (the type cannot hold the stage).
    int minTp = 0;
    /// Largest TP reached by doubling from 1 while each doubling speeds the stage's compute up by
    /// at least SPEEDUP_THRESHOLD = 1.5 (comp(tp) / comp(2 tp) >= 1.5).
    int maxTp = 0;
    /// TP degrees the stage's replicas of this type may use: the candidates in
    /// [minTp, max(minTp, maxTp)] (empty when minTp == 0).
    std::vector<int> allowed;
};
/// TP candidates of device `device`: powers of two up to the GPUs of its largest node (TP stays
/// inside a node) that divide the model's heads and KV groups.
std::vector<int> sailorTpCandidates(const BaselineContext &context, int device);
SailorTpBounds sailorTpBounds(const BaselineContext &context, int device, int microBatch, int first, int count,
                              int stageIndex, int pp);

} // namespace memx
