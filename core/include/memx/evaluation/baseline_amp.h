#pragma once

// AMP (Li, Wang, Xing, Zhang, NeurIPS'22, arXiv 2210.07297) re-implemented from its published
// method (../shared/reference/baselines.md, section 4): the pure pieces the tests check directly.
// ampEstimate / ampPlan are declared in baselines.h.

#include "memx/evaluation/baselines.h"

#include <vector>

namespace memx {

/// One point of AMP's search space: model (tensor) parallel, data parallel and pipeline degrees
/// with mp x dp x pp = all GPUs of the cluster, and the micro-batch size.
struct AmpCandidate {
    int mp = 1, dp = 1, pp = 1, mbs = 1;

    bool operator==(const AmpCandidate &) const = default;
};

/// AMP's space (amp_no_placement_strategy) on the context's cluster, as far as MemX can express it.
struct AmpSpace {
    int gpus = 0; ///< all GPUs of the cluster (AMP always uses every one)
    std::vector<AmpCandidate> candidates; ///< in enumeration order: mp, then dp, then mbs ascending
    int triples = 0; ///< (mp, dp, pp) with mp x dp x pp = gpus
    int crossNode = 0; ///< triples skipped: a TP group of AMP's default rank map would span two nodes
    int headsMismatch = 0; ///< triples skipped: mp does not divide the attention heads / KV groups
    int batchMismatch = 0; ///< triples skipped: dp does not divide the global batch
    int tooManyStages = 0; ///< triples skipped: pp exceeds the transformer layers
};
AmpSpace ampSpace(const BaselineContext &context);

/// AMP's per-layer forward time (ms, one sample, i.e. micro-batch 1) at TP `mp`: the average over
/// the cluster's device types weighted by each type's share of the GPUs (AMP's 0.75 P3 + 0.25 G4
/// rule generalised). layers + 2 entries: [0] embedding, [1 + l] transformer layer l, [layers + 1]
/// the head (output layer + loss).
std::vector<double> ampLayerForwardMs(const BaselineContext &context, int mp);

/// AMP's layer partition (pipe_ast): the contiguous split of the transformer layers into `pp`
/// non-empty stages (the embedding, `layerMs[0]`, on the first stage, the head, `layerMs.back()`,
/// on the last) that minimises the largest stage time sum, i.e. AMP's pipeline cost
/// (B - 1) x max_s + sum_s (the sum is the same for every split). Among the splits that reach that
/// minimum it takes one with the smallest largest data-parallel all-reduce volume
/// (layerParams per transformer layer, embeddingParams on the first stage). Returns the layer
/// count of every stage; empty when pp < 1 or pp > layers.
std::vector<int> ampPartition(const std::vector<double> &layerMs, int pp, double layerParams, double embeddingParams);

} // namespace memx
