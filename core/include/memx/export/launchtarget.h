#pragma once
// Launch targets: the rules a plan must follow to run on upstream Megatron-LM or as a FlagScale
// heterogeneous job, in ONE place. The search (memx/search/search.h, SearchSpaceOptions::target)
// and the exporters (memx/export/export.h) both call these functions, so every plan the search
// ranks under a target is a plan that target's export writes (docs/search.md "Launch targets",
// docs/export.md). No file is generated here; the layouts below are what the exporters write.

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace memx {

class Diagnostics;

/// The runtime a plan is launched with.
enum class LaunchTarget {
    Megatron, ///< upstream Megatron-LM: one TP, DP, micro-batch and recompute setting, one vendor
    FlagScale, ///< FlagScale's heterogeneous mode: process meshes of one device type each
    Any, ///< the cost model's whole space; a plan may have no launcher
};

/// "megatron", "flagscale" or "any".
const char *toString(LaunchTarget target);
std::optional<LaunchTarget> parseLaunchTarget(const std::string &text);

/// How Megatron-LM is told about an uneven layer split.
enum class LayerSplitStyle {
    Layout, ///< --pipeline-model-parallel-layout "Et*n0|...|t*nkL" (Megatron core_v0.13.0+)
    FirstLast, ///< --decoder-first/last-pipeline-num-layers (core_v0.10.0+; middle stages must be equal)
};

// ---- devices -------------------------------------------------------------------------------

/// Upstream Megatron-LM runs NVIDIA (CUDA) and AMD (ROCm) GPUs.
bool megatronRunsVendor(const std::string &vendor);
/// The variable FlagScale's PyTorch plug-in for `vendor` reads for the visible devices, for the
/// vendors with an upstream FlagScale adaptation that the catalogue knows (NVIDIA, Huawei Ascend,
/// Cambricon); std::nullopt for the others (AMD/ROCm, Intel Gaudi, Biren).
std::optional<std::string> flagScaleVisibleDevices(const std::string &vendor);
/// Whether `target` can run GPUs of `device` at all (Any: always).
bool targetRunsDevice(LaunchTarget target, const GpuSpec &device);
/// Whether `target` can run one stage's data-parallel group with replicas on both devices:
/// Megatron-LM when both are of one vendor (one NCCL/RCCL job; every replica then has the same
/// TP and micro-batch), never FlagScale (a process mesh has one device type), always Any.
bool targetMixesDevicesInStage(LaunchTarget target, const GpuSpec &a, const GpuSpec &b);
/// Whether `target` lets the replicas of one stage carry different micro-batches (the
/// Metis-style proportional split of a mixed stage): Any only.
bool targetSplitsMicroBatches(LaunchTarget target);

/// Whether `target` runs stages with these recompute methods (in pipeline order): Megatron-LM
/// applies one setting to every stage; FlagScale's per-stage keys switch full recompute on or off,
/// selective only for the whole job.
bool recomputeAllowed(LaunchTarget target, const RecomputeMethod *perStage, size_t stages);
/// Why not (the refusal message), or std::nullopt when recomputeAllowed.
std::optional<std::string> recomputeRefusal(LaunchTarget target, const std::vector<RecomputeMethod> &perStage);

/// What decides the structural rules of one pipeline stage, without a Plan.
struct StageFacts {
    int device = 0; ///< index into Cluster::devices
    int device2 = -1; ///< a mixed stage's second device, -1 for none
    int tp = 1;
    int dp = 1;
};
/// A quick pre-check of a pipeline shape (the search's enumeration): false when `target` cannot
/// run these stages whatever their batch, recompute and layer split - Megatron-LM: one TP, one
/// DP, one vendor it runs; FlagScale: no mixed stage, vendors it runs, each device type's stages
/// consecutive. True does not mean accepted: checkLaunchTarget decides on the plan.
bool targetMayRunPipeline(LaunchTarget target, const Cluster &cluster, const std::vector<StageFacts> &stages);

// ---- launch layouts ------------------------------------------------------------------------

/// Where one global rank runs: the plan's stage / replica / tensor-parallel rank and its GPU.
struct RankSlot {
    int stage = 0;
    int replica = 0;
    int tpRank = 0;
    std::string node;
    int gpu = 0;
    int cpRank = 0; ///< context-parallel rank (Plan::contextParallel > 1)
};

/// One launcher (a torchrun process / a hostfile line): a node and the ranks it runs, in local-rank order.
struct NodeLaunch {
    std::string node;
    int nodeRank = 0;
    int device = 0; ///< index into Cluster::devices
    int firstGlobalRank = 0;
    std::vector<RankSlot> localRanks; ///< local rank i -> localRanks[i]
};

/// Recompute of a whole Megatron job.
enum class JobRecompute { None, Selective, FullUniform, FullBlock };

/// A plan reduced to what upstream Megatron-LM can express.
struct MegatronShape {
    int tp = 1, dp = 1, pp = 1, microBatch = 1, globalBatch = 0, microBatches = 0;
    bool tpPpDpOrder = false; ///< ranks follow tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping)
    int nprocPerNode = 0;
    std::vector<NodeLaunch> nodes; ///< by node rank
    int device = 0; ///< the device of node rank 0 (index into Cluster::devices); one vendor for all
    bool bf16 = true;
    std::string precisionNote; ///< why fp16 was chosen, when it was
    JobRecompute recompute = JobRecompute::None;
    int recomputeLayers = 0; ///< FullBlock: --recompute-num-layers
    std::vector<int> stageLayers;
};

/// A FlagScale process mesh: consecutive stages with one device type, TP and DP.
struct FlagScaleMesh {
    int device = 0;
    int tp = 1;
    int dp = 1;
    std::vector<int> stages;
};

/// A plan reduced to what FlagScale's heterogeneous mode expresses.
struct FlagScaleShape {
    std::vector<FlagScaleMesh> meshes;
    std::vector<int> typeOrder; ///< device types in mesh order, each once
    std::vector<NodeLaunch> hosts; ///< hostfile order = node rank
    int microBatch = 1; ///< mesh 0's
    bool partialReduce = false;
    std::set<RecomputeMethod> methods;
};

// ---- the rules -----------------------------------------------------------------------------

/// Checks `plan` against upstream Megatron-LM's rules (validatePlan first); fills `shape` and
/// returns true when it runs, else records every reason in `diags` (with diags' file name and
/// the JSON pointer of the plan field). Refusals a FlagScale job could avoid say whether
/// analyseFlagScale accepts the plan (so the hint to FlagScale is never false).
bool analyseMegatron(const Plan &plan, const Cluster &cluster, const Model &model, LayerSplitStyle style,
                     MegatronShape &shape, Diagnostics &diags);
/// Checks `plan` against FlagScale's heterogeneous rules; fills `shape` or records every reason.
bool analyseFlagScale(const Plan &plan, const Cluster &cluster, const Model &model, FlagScaleShape &shape,
                      Diagnostics &diags);
/// Every reason `target` cannot launch `plan` (Megatron with the layout split style; Any: only
/// validatePlan's problems). Returns true when it can.
bool checkLaunchTarget(LaunchTarget target, const Plan &plan, const Cluster &cluster, const Model &model,
                       Diagnostics &diags);
/// The launchers that run `plan`, in the order Megatron-LM, FlagScale (empty: "no launcher").
std::vector<LaunchTarget> launchersOf(const Plan &plan, const Cluster &cluster, const Model &model);
/// "megatron", "flagscale", "megatron, flagscale" or "no launcher".
std::string launchersText(const std::vector<LaunchTarget> &launchers);

/// The target a search of `cluster` uses when the user names none, and why.
struct DefaultTarget {
    LaunchTarget target = LaunchTarget::Any;
    std::string reason;
};
/// One device type -> Megatron-LM (FlagScale when only FlagScale runs the vendor). Several types
/// that FlagScale all runs -> FlagScale. Several types of one vendor Megatron-LM runs (e.g. MI300X
/// + MI250X) -> Megatron-LM. Mixed vendors: FlagScale when it runs some of the groups (the others
/// stay idle, and the reason says so), else Megatron-LM on one vendor's groups, else Any (no
/// launcher; the reason says why).
DefaultTarget defaultLaunchTarget(const Cluster &cluster);

} // namespace memx
