#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memx {

struct Cluster;
struct Model;
class Diagnostics;

enum class RecomputeMethod { None, Selective, Full };
const char *toString(RecomputeMethod v);

/// How the GPUs of a context-parallel group exchange attention inputs (Megatron-LM's
/// `--cp-comm-type`): P2P rotates K/V blocks around a ring overlapped with attention (ring
/// attention), AllGather gathers the whole K/V before attention, A2A re-shards Q/K/V from the
/// sequence to the head dimension with all-to-alls (DeepSpeed-Ulysses).
enum class CpComm { P2P, AllGather, A2A };
const char *toString(CpComm v); ///< "p2p", "all_gather", "a2a" (Megatron-LM's spelling)
/// "p2p", "all_gather" or "a2a"; nullopt for anything else.
std::optional<CpComm> cpCommFromString(const std::string &text);

/// FP8 training with Transformer Engine (Megatron-LM's --fp8-format): the four GEMMs of every
/// transformer layer (QKV, projection, FC1, FC2; forward, data and weight gradient) run in FP8 with
/// delayed scaling. Hybrid: E4M3 forward, E5M2 gradients (what NVIDIA's recipes use); E4M3: both.
/// Attention, the output layer and the embedding stay 16-bit. Off: no FP8.
enum class Fp8Format { Off, Hybrid, E4M3 };
const char *toString(Fp8Format v); ///< "off", "hybrid", "e4m3"
/// "off", "hybrid" or "e4m3"; nullopt for anything else.
std::optional<Fp8Format> fp8FromString(const std::string &text);

/// How far the data-parallel group shards the training state (the ZeRO stages). None: every DP
/// rank keeps weights, gradients and optimizer state (plain DDP). Optimizer: Megatron-LM's
/// distributed optimizer (fp32 master weights and Adam moments sharded). Gradients and Parameters
/// are Megatron-FSDP's `--data-parallel-sharding-strategy optim_grads` / `optim_grads_params`:
/// the gradients are reduce-scattered into shards after every micro-batch's backward pass, and with
/// Parameters the bf16 weights are sharded too and all-gathered per layer in the forward and the
/// backward pass of every micro-batch.
enum class DpSharding : unsigned char { None = 0, Optimizer = 1, Gradients = 2, Parameters = 3 };
/// "none", "optim", "optim_grads", "optim_grads_params" (Megatron-FSDP's spelling; none = no_shard)
const char *toString(DpSharding v);
/// One of toString's names; nullopt for anything else.
std::optional<DpSharding> dpShardingFromString(const std::string &text);

/// Why Transformer Engine cannot run the FP8 GEMMs of `model` at TP `tp`, micro-batch
/// `microBatch` and context-parallel size `contextParallel` (TE's assert_dim_for_fp8_exec: the
/// tokens of a GEMM a multiple of 8, its input features of 16, its output features of 8), or ""
/// when it can. One rule for validatePlan and the search.
std::string fp8ShapeProblem(const Model &model, int tp, int microBatch, int contextParallel);

/// Activation recomputation of one stage.
struct Recompute {
    RecomputeMethod method = RecomputeMethod::None;
    /// With Full: how many of the stage's layers are recomputed (Megatron's "block" method);
    /// 0 means all of them.
    int layers = 0;

    bool operator==(const Recompute &) const = default;
};

/// Layers of a `layerCount`-layer stage that `rc` recomputes in full (0 without full recompute).
inline int recomputedLayers(Recompute rc, int layerCount)
{
    if (rc.method != RecomputeMethod::Full)
        return 0;
    return rc.layers > 0 && rc.layers < layerCount ? rc.layers : layerCount;
}

/// One data-parallel replica of a stage: `tp` x Plan::contextParallel GPUs of one node,
/// tensor-parallel together (and context-parallel: each TP group holds 1/cp of every sequence).
struct Replica {
    std::string node; ///< expanded node name (see Cluster::nodes())
    /// GPU indices within the node; size() == tp x Plan::contextParallel, in Megatron-LM's rank
    /// order (TP fastest, then CP): GPU tp x c + t is TP rank t of CP rank c.
    std::vector<int> gpus;
    int tp = 1;
    int microBatch = 1; ///< sequences per micro-batch on this replica

    bool operator==(const Replica &) const = default;
};

/// One pipeline stage: a contiguous range of transformer layers served by its replicas.
struct Stage {
    int firstLayer = 0;
    int layerCount = 0;
    Recompute recompute;
    std::vector<Replica> replicas;

    int dp() const { return static_cast<int>(replicas.size()); }
    /// Sequences one micro-batch step carries through this stage (sum of replica micro-batches).
    int samplesPerStep() const;

    bool operator==(const Stage &) const = default;
};

/// A parallel training plan. Stage 0 holds the embedding, the last stage the output layer.
/// Every stage processes the same number of micro-batches per iteration, so
/// globalBatch = microBatches() x samplesPerStep() of every stage.
struct Plan {
    std::string name;
    int globalBatch = 0;
    bool sequenceParallel = false;
    bool distributedOptimizer = false;
    /// Megatron-FSDP (`--use-megatron-fsdp`) with the gradients (Gradients) or also the weights
    /// (Parameters) sharded; None: no FSDP. Needs distributedOptimizer and a single stage
    /// (Megatron-FSDP runs without pipeline parallelism). dpShardingOf gives the plan's ZeRO stage.
    DpSharding fsdp = DpSharding::None;
    /// Megatron-LM's --overlap-grad-reduce: the data-parallel gradient reduction runs in buckets
    /// during the last micro-batch's backward pass (only what it cannot hide is exposed).
    bool overlapGradReduce = false;
    /// --overlap-param-gather (needs the distributed optimizer): the all-gather of the updated
    /// parameter shards runs in buckets during the next iteration's first forward pass.
    bool overlapParamGather = false;
    /// Interleaved 1F1B: model chunks per pipeline rank (Megatron-LM's virtual pipeline size;
    /// 1 = the plain 1F1B schedule). Stage i still owns layerCount layers (its firstLayer is
    /// where they would start without interleaving), but as v equal chunks: chunk j is global
    /// model chunk j x pp + i, so a micro-batch visits every rank v times and the bubble
    /// shrinks to (p-1)/v steps.
    /// Needs pp > 2, every stage's layerCount divisible by it and the micro-batches a multiple of pp.
    int virtualStages = 1;
    /// Context parallelism: GPUs that share each sequence (each holds seqLength / cp tokens);
    /// every replica has tp x cp GPUs. 1 = off.
    int contextParallel = 1;
    CpComm cpComm = CpComm::P2P; ///< with contextParallel > 1
    /// FP8 GEMMs (Transformer Engine); every GPU of the plan must support FP8
    /// (GpuSpec::denseFp8Tflops).
    Fp8Format fp8 = Fp8Format::Off;
    /// MoE (Model::shape.moe): expert parallelism (Megatron-LM's --expert-model-parallel-size):
    /// each of a stage's ranks holds experts / expertParallel of every layer's experts, and the
    /// tokens travel to their experts and back by all-to-alls in groups of expertParallel ranks.
    /// Megatron's expert rank order (tp-ep-dp): a stage's tp x cp x dp ranks form groups of
    /// expertTp x expertParallel consecutive ranks; the rest is the expert data-parallel size.
    /// 1 = no expert parallelism (every rank holds every expert).
    int expertParallel = 1;
    /// Tensor parallelism inside each expert (--expert-tensor-parallel-size); 0 = the stage's TP
    /// (Megatron-LM's default). expertTp(tp) resolves it.
    int expertTensorParallel = 0;
    std::vector<Stage> stages;

    /// The expert tensor-parallel size of a replica with `tp`.
    int expertTp(int tp) const { return expertTensorParallel > 0 ? expertTensorParallel : tp; }
    int pp() const { return static_cast<int>(stages.size()); }
    int totalGpus() const;
    /// Micro-batches per iteration (globalBatch / stage 0's samplesPerStep()); 0 if undefined.
    int microBatches() const;
    /// One line, e.g. "PP2 m16 | 0-13 a100-80gb-sxm TP4xDP2 | 14-31 mi250x TP2xDP4 rc=full".
    std::string summary(const Cluster &cluster) const;

    bool operator==(const Plan &) const = default;
};

/// Ranks of `stage` that share each expert's shard: the expert data-parallel size
/// tp x cp x dp / (expertTp x expertParallel) (Megatron-LM's expert_data_parallel_size); the
/// dense parameters are shared by dp x cp ranks. 1 for a dense model's nonexistent experts.
int expertDataParallel(const Plan &plan, const Stage &stage);

/// The plan's data-parallel sharding: fsdp when set, else Optimizer with the distributed
/// optimizer, else None.
DpSharding dpShardingOf(const Plan &plan);
/// Sets distributedOptimizer and fsdp so that dpShardingOf(plan) == s.
void setDpSharding(Plan &plan, DpSharding s);

/// Checks a plan against a cluster and a model: layers cover the model exactly once and in
/// order, replicas name existing nodes and GPUs, no GPU is used twice, TP divides the heads and
/// KV groups, TP stays within a node, micro-batch counts agree across stages, recompute layers fit,
/// FP8 only on devices with FP8 and GEMM shapes Transformer Engine accepts.
/// Every problem is recorded in `diags` with the JSON pointer of the offending plan field.
void validatePlan(const Plan &plan, const Cluster &cluster, const Model &model, Diagnostics &diags);

} // namespace memx
