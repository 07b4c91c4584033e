#pragma once

#include "memx/cluster/cluster.h"
#include "memx/cost/costmodel.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"
#include "memx/profile/layerprofile.h"
#include "memx/util/progress.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace memx {

/// The published auto-parallelism planners re-implemented from their papers and the facts in
/// ../shared/reference/baselines.md (docs/evaluation.md, "Published planners"). Each has its own
/// search space and its own cost model; none of their code is used.
enum class Baseline {
    Metis, ///< Um et al., USENIX ATC'24
    Amp, ///< Li et al., NeurIPS'22
    Sailor, ///< Strati et al., SOSP'25
    Galvatron, ///< Miao et al., VLDB'22 (Galvatron-BMW's memory-balanced pipeline division)
};
inline constexpr Baseline kBaselines[] = {Baseline::Metis, Baseline::Amp, Baseline::Sailor, Baseline::Galvatron};
const char *baselineId(Baseline b); ///< "metis", "amp", "sailor", "galvatron"
const char *baselineName(Baseline b); ///< "Metis", "AMP", "Sailor", "Galvatron"
/// One line: what the planner searches and how it costs a plan.
const char *baselineDescription(Baseline b);

/// What one profiling run of a planner measures for one (device, TP, micro-batch): per-layer
/// times and memory. Every planner reads the same figures, so only the methods differ: MemX's
/// layer and memory kernels (the project's measured per-layer profiles where they hold the key,
/// else the analytic compute model) stand in for each planner's own profiler.
struct BaselineLayerCosts {
    int tp = 1, microBatch = 1;
    /// Transformer layer l (0-based) forward / backward of one micro-batch, ms, measured inside
    /// its TP group (TP collectives included, as the planners' profilers measure them).
    std::vector<double> layerForwardMs, layerBackwardMs;
    double embeddingForwardMs = 0, embeddingBackwardMs = 0;
    double headForwardMs = 0, headBackwardMs = 0; ///< output layer + loss
    /// Optimizer step of one transformer layer's parameters on one TP rank, ms (no sharding).
    double layerOptimizerMs = 0;
    double embeddingOptimizerMs = 0, headOptimizerMs = 0;
    double layerParams = 0, embeddingParams = 0, headParams = 0; ///< parameters on one TP rank
    /// Activation bytes one layer keeps for backward per micro-batch: without recompute and with
    /// full recompute (the layer input only).
    double layerActivationBytes = 0, layerActivationBytesRecompute = 0;
    double embeddingActivationBytes = 0; ///< per in-flight micro-batch on the first stage
    double logitsBytes = 0; ///< logits + loss working set on the last stage
    /// A profiled-layer-memory figure as a PyTorch-hook profiler records it (Metis'
    /// layer_memory_total_mb): parameters, gradients and Adam state in mixed precision
    /// (16 B / param) plus the layer's activations for one micro-batch.
    double layerMemoryTotalBytes = 0;
    bool measured = false; ///< the times came from a measured profile of the project
};

/// Everything a planner plans for, and the shared "profiles" it reads.
class BaselineContext {
public:
    BaselineContext(const Cluster &cluster, const Model &model, int globalBatch, const ProfileSet *profiles,
                    const CostOptions &cost);

    const Cluster &cluster() const { return mCluster; }
    const Model &model() const { return mModel; }
    const std::vector<Node> &nodes() const { return mNodes; }
    int globalBatch() const { return mGlobalBatch; }
    const CostOptions &cost() const { return mCost; }
    const ProfileSet *profiles() const { return mProfiles; }
    /// The costs of device type `device` (index into Cluster::devices) at (tp, microBatch),
    /// computed once and cached (not thread-safe).
    const BaselineLayerCosts &layerCosts(int device, int tp, int microBatch) const;
    /// Link between two nodes (indices into nodes()); the intra-node link when a == b. Every
    /// pair is resolved once, on the first call (not thread-safe).
    const Link &link(int a, int b) const;
    /// Index into nodes() of the node named `name`, -1 when there is none.
    int nodeIndex(const std::string &name) const;
    /// (node index, GPU within the node) of every global rank: the cluster's GPUs in node order,
    /// the rank map AMP and Galvatron assume.
    const std::vector<std::pair<int, int>> &rankMap() const { return mRanks; }
    double memoryBytes(int device) const; ///< capacity of a device type

    /// Micro-batch sizes the planners try: powers of two up to `max` (and <= global batch).
    std::vector<int> microBatchSizes(int max = 8) const;

private:
    Cluster mCluster; // copies: a context may outlive the caller's cluster and model
    Model mModel;
    int mGlobalBatch;
    const ProfileSet *mProfiles;
    CostOptions mCost;
    std::vector<Node> mNodes;
    std::unordered_map<std::string, int> mIndex;
    std::vector<std::pair<int, int>> mRanks;
    mutable std::vector<Link> mLinks; // nodes x nodes, filled on the first link() call
    mutable std::map<std::tuple<int, int, int>, BaselineLayerCosts> mCache;
};

/// Every divisor of n, ascending (n > 0).
std::vector<int> baselineDivisors(int n);
/// Whether groups of `tp` consecutive ranks of `ranks` (BaselineContext::rankMap) span two nodes.
bool baselineTpGroupsCrossNodes(const std::vector<std::pair<int, int>> &ranks, int tp);

/// A planner's own prediction for a plan.
struct BaselineEstimate {
    bool ok = false; ///< false: the planner cannot cost this plan (error says why)
    std::string error;
    double timeMs = 0; ///< predicted iteration time
    bool hasMemory = false; ///< false: the planner has no memory model (AMP)
    double peakBytes = 0; ///< predicted peak of the fullest GPU
    double peakUtilisation = 0; ///< that peak / the GPU's capacity (its own capacity rule)
    bool fits = true; ///< its memory check passes (always true without a memory model)
};

/// What a planner returns for a cluster.
struct BaselinePick {
    bool hasPlan = false;
    std::string refusal; ///< why there is no plan (e.g. Metis on a non-power-of-two cluster)
    Plan plan; ///< its best plan under its own objective, as a valid MemX plan
    BaselineEstimate predicted; ///< its own prediction of `plan`
    std::vector<Plan> top; ///< its top plans, best first (top[0] == plan)
    uint64_t configsExamined = 0; ///< candidates its cost model evaluated
    std::vector<std::string> notes;
    bool cancelled = false;
};

/// `b`'s cost model on any valid MemX plan (features it does not model are ignored; what it
/// cannot cost at all gives ok = false).
BaselineEstimate baselineEstimate(Baseline b, const Plan &plan, const BaselineContext &context);
/// `b`'s search on the context's cluster, its best `topN` plans by its own objective.
/// `progress(done, total)` is called from this thread; returning false cancels.
BaselinePick baselinePlan(Baseline b, const BaselineContext &context, size_t topN = 10,
                          const ProgressFn &progress = {});

// Each planner, declared for the dispatcher and the tests (core/src/evaluation/baseline_*.cpp).
BaselineEstimate metisEstimate(const Plan &plan, const BaselineContext &context);
BaselinePick metisPlan(const BaselineContext &context, size_t topN, const ProgressFn &progress);
BaselineEstimate ampEstimate(const Plan &plan, const BaselineContext &context);
BaselinePick ampPlan(const BaselineContext &context, size_t topN, const ProgressFn &progress);
BaselineEstimate sailorEstimate(const Plan &plan, const BaselineContext &context);
BaselinePick sailorPlan(const BaselineContext &context, size_t topN, const ProgressFn &progress);
BaselineEstimate galvatronEstimate(const Plan &plan, const BaselineContext &context);
BaselinePick galvatronPlan(const BaselineContext &context, size_t topN, const ProgressFn &progress);

} // namespace memx
