#pragma once

#include "memx/cluster/cluster.h"
#include "memx/cost/compute.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"
#include "memx/profile/measuredrun.h"

#include <optional>
#include <string>
#include <vector>

namespace memx {

class ProfileSet;

/// Tunable figures of the analytic cost model. Defaults are documented in docs/search.md.
///
/// Peak memory: the model predicts the DEVICE-USED peak (what NVML / `nvidia-smi` / the public
/// dataset's `max_mem` report): the allocator peak (weights, gradients, optimizer states,
/// activations) plus the runtime context, the communicator buffers and an allocator reserve.
struct CostOptions {
    // ---- compute (the kernel-level model of memx/cost/compute.h) ----
    /// Fraction of peak dense FLOP/s a large, perfectly tiled GEMM reaches, per vendor, used when
    /// the device has no GpuSpec::measuredComputeEfficiency (calibrated or measured).
    double nvidiaGemmEfficiency = 0.70;
    double amdGemmEfficiency = 0.55;
    double otherGemmEfficiency = 0.45;
    /// Flash/fused attention kernels reach this fraction of the device's GEMM efficiency.
    double attentionKernelEfficiency = 0.6;
    /// Achieved fraction of HBM bandwidth of memory-bound kernels (norms, dropouts, softmax).
    double memoryBoundEfficiency = 0.7;
    /// GEMM output tile edge for tile and wave quantisation.
    int gemmTile = 128;
    /// Host cost of one framework op (Python, autograd, dispatch, launch), microseconds, and the
    /// ops of one layer's forward / backward, the output layer and the embedding: a pass takes
    /// at least ops x this (small micro-batches and high TP are host-bound).
    double hostOpMicroseconds = 40;
    double opsPerLayerForward = 24;
    double opsPerLayerBackward = 36;
    double opsPerHead = 8;
    double opsPerEmbedding = 4;
    /// Extra framework ops of one context-parallel exchange step per layer forward (backward:
    /// twice): a ring step of p2p (send, receive, block attention, softmax correction) per peer,
    /// the gather of all_gather, each pair of all-to-alls of a2a.
    double opsPerContextParallelStep = 4;
    /// Extra framework ops of one MoE layer's forward / backward beyond a dense layer's: router
    /// (GEMM, softmax, top-k, auxiliary loss), permutation, the two all-to-alls, the grouped
    /// expert GEMMs and activation, un-permutation (Megatron-core's MoELayer with the alltoall
    /// dispatcher, counted op by op).
    double opsPerMoeLayerForward = 20;
    double opsPerMoeLayerBackward = 30;
    /// Fixed host work per iteration (optimizer launch, gradient-norm reduction, logging), ms.
    double iterationOverheadMs = 2.0;
    /// Achieved fraction of HBM bandwidth of the (memory-bound) optimizer step.
    double optimizerBandwidthEfficiency = 0.8;
    /// HBM bytes touched per parameter by one Adam step (read grad, master, m, v; write master,
    /// m, v and the 16-bit weight: 7 x 4 + 2).
    double optimizerBytesPerParam = 30;

    // ---- FP8 (Plan::fp8: Transformer Engine, delayed scaling) ----
    /// FP8 GEMMs reach this fraction of the device's (BF16) GEMM efficiency, of the FP8 peak. A
    /// physical estimate, not a fit (no FP8 run is in the public data): on H100 large cuBLASLt FP8
    /// GEMMs run ~1.7x their BF16 twins at twice the peak, so 0.85.
    double fp8GemmEfficiencyScale = 0.85;
    /// HBM bytes per element of a cast to FP8 with its transpose (read 2, write 1 + 1).
    double fp8CastBytesPerElement = 4;
    /// Extra framework ops per layer pass: the casts and the scaling-factor bookkeeping.
    double fp8OpsPerLayerForward = 4;
    double fp8OpsPerLayerBackward = 4;
    /// Bytes per linear-layer weight TE keeps as FP8 copies while an iteration runs (the weight and
    /// its transpose, cast at the first micro-batch and reused by the others).
    double fp8WeightCacheBytesPerParam = 2;

    // ---- communication ----
    /// Share of each pipeline send that sits on the 1F1B critical path: Megatron-LM's
    /// non-overlapped P2P (batch_isend_irecv + wait) blocks the stage, so every micro-batch step
    /// of a stage also waits for its sends and receives (1 = fully exposed, 0 = hidden).
    double exposedP2pFraction = 1.0;
    /// Fixed cost of one pipeline send on the critical path beyond its bytes, ms: the
    /// batch_isend_irecv call, its wait and the peer's skew. Interleaving multiplies the sends.
    /// 1 ms: the interleaved rows of megatron-tutorials tbl-401 (v = 2..18 at PP4 and PP8) lose
    /// ~1.7-2.9 ms per extra chunk step (docs/accuracy.md).
    double p2pOpOverheadMs = 1.0;
    /// Traffic between GPUs of different vendors goes through the hosts (the FlagScale export
    /// sets CPU communication there): device-to-host copy, TCP/gloo over the node's NIC,
    /// host-to-device. Effective bandwidth cap (GB/s) of that path and its per-message latency.
    double cpuTransportGBps = 8.0;
    double cpuTransportLatencyUs = 150.0;
    /// Gradient bytes per parameter in the data-parallel reduction (4 = fp32 main grads,
    /// Megatron's default; 2 with --grad-reduce-in-bf16).
    double gradReduceBytesPerParam = 4;
    /// Overlapped data-parallel collectives (Plan::overlapGradReduce / overlapParamGather) still
    /// cost compute: NCCL/RCCL kernels occupy SMs/CUs (on H100 class ~16-32 channels of 132 SMs)
    /// and HBM bandwidth while the backward runs. This fraction of every hidden millisecond is
    /// charged back (0: perfect overlap, 1: none). A physical estimate, not a fit: the SM share of
    /// a 32-channel ring on a 132-SM device.
    double overlapContention = 0.25;

    // ---- fixed memory overheads (not in Megatron's formula) ----
    // Defaults for devices whose GpuSpec::runtimeMemory leaves a figure unset.
    double runtimeContextBytes = 0.5 * 1073741824.0; ///< CUDA/HIP context per GPU
    double communicatorBytesPerGroup = 0.4 * 1073741824.0; ///< NCCL/RCCL buffers per TP/DP/PP group a GPU is in
    double allocatorReserveFraction = 0.10; ///< caching-allocator reserve: fragmentation + rounding, x allocator peak
    /// Relative uncertainty of the analytic device-used peak (its MAPE on the measured runs of
    /// docs/accuracy.md): the band of the fits / risk of OOM / does not fit verdict.
    double memoryUncertainty = 0.05;
    /// Megatron-LM pads the vocabulary to a multiple of this x TP (--make-vocab-size-divisible-by).
    int vocabDivisibleBy = 128;
};

/// The attention implementation a run of `model` uses on `device` (TrainingSettings::attention;
/// the CLI's `--attention` sets it): `auto` becomes flash where the device runs FlashAttention-class kernels
/// (GpuSpec::flashAttention), unfused elsewhere - what Megatron-LM's `--attention-backend auto` picks.
AttentionBackend resolveAttention(const Model &model, const GpuSpec &device);
/// Every figure of `options` that changes an estimate, as exact text: the cost part of the
/// prediction cache's context and the search result cache's request key.
std::string costOptionsSignature(const CostOptions &options);
/// True for the backends that never store the s x s score tensors (flash, fused).
bool storesNoScores(AttentionBackend resolved);
/// The vocabulary Megatron-LM allocates at TP `tp`: `vocab` rounded up to a multiple of
/// options.vocabDivisibleBy x tp.
long long paddedVocab(const Model &model, int tp, const CostOptions &options);

/// Whether a plan's memory fits, judged on its fullest GPU with the prediction's uncertainty.
enum class MemoryVerdict { Fits, Risk, DoesNotFit };
const char *toString(MemoryVerdict v); ///< "fits", "risk of OOM", "does not fit"
/// Fits when utilisation x (1 + spread) < 1, does not fit when utilisation x (1 - spread) > 1,
/// risk of OOM in between. `relativeSpread` is one sigma of the peak prediction, relative.
MemoryVerdict memoryVerdict(double peakUtilisation, double relativeSpread);

/// Time breakdown of one pipeline stage. Per-micro-batch figures are for the slowest replica.
struct StageEstimate {
    int stage = 0;
    int firstLayer = 0;
    int layerCount = 0;
    /// Micro-batches whose activations the stage holds at its peak. 1F1B: min(p - i, m);
    /// interleaved (v chunks): min(m v, 2(p - i - 1) + (v - 1) p + 1) chunks / v, rounded up.
    int microBatchesInFlight = 0;
    double forwardMs = 0; ///< per micro-batch, incl. embedding / output layer
    double backwardMs = 0; ///< per micro-batch
    double recomputeMs = 0; ///< extra forward work of recomputation, per micro-batch
    double tpCommMs = 0; ///< tensor-parallel collectives, per micro-batch (fwd + bwd + recompute)
    double cpCommMs = 0; ///< exposed context-parallel exchange, per micro-batch (fwd + bwd + recompute)
    double stepMs = 0; ///< forward + backward + recompute + TP, CP and FSDP communication, per micro-batch
    /// Megatron-FSDP's exposed per-micro-batch data-parallel traffic (fsdpMicroBatchComm), in stepMs
    double fsdpCommMs = 0;
    /// MoE: the exposed expert-parallel all-to-alls (dispatch + combine), per micro-batch, in stepMs
    double moeCommMs = 0;
    double p2pMs = 0; ///< send of one activation to the next stage (0 on the last stage)
    double dpSyncMs = 0; ///< gradient synchronisation of the stage's data-parallel group, per iteration
    double optimizerMs = 0; ///< optimizer step, per iteration
    double bubbleMs = 0; ///< idle time in the 1F1B pipeline, per iteration: pipeline time - m x stepMs
    int slowestReplica = 0; ///< index of the replica that sets stepMs
    bool profiled = false; ///< every replica's compute came from a measured profile
};

/// Memory of one GPU, bytes (device-used peak, see CostOptions).
struct GpuMemory {
    std::string node;
    int gpuIndex = 0;
    std::string device; ///< device id
    int stage = 0;
    int replica = 0;
    double paramsBytes = 0; ///< 16-bit weights
    double gradsBytes = 0; ///< fp32 main gradients
    double optimizerBytes = 0; ///< fp32 master weights + Adam moments (sharded with the distributed optimizer)
    double activationBytes = 0; ///< activations kept for the micro-batches in flight + working set + logits
    double overheadBytes = 0; ///< context + communicators + allocator reserve
    double allocatedBytes = 0; ///< allocator peak (max_memory_allocated): weights + grads + optimizer + activations
    double reservedBytes = 0; ///< allocator reserved peak (max_memory_reserved): allocated + reserve
    double totalBytes = 0; ///< device-used peak (NVML): reserved + context + communicator buffers
    AttentionBackend attention = AttentionBackend::Unfused; ///< resolved for this GPU's device
    bool activationsMeasured = false; ///< activation bytes from a measured profile, not the formula
    double capacityBytes = 0;
    double headroomBytes = 0; ///< capacity - total (negative when out of memory)
    bool oom = false;
    double utilisation() const { return capacityBytes > 0 ? totalBytes / capacityBytes : 0.0; }
};

/// Everything the analytic model says about one plan.
struct PlanEstimate {
    int microBatches = 0;
    double pipelineMs = 0; ///< 1F1B forward/backward part: (m-1) max step + sum steps + p2p fill/drain
    double dpSyncMs = 0; ///< max over stages
    double optimizerMs = 0; ///< max over stages
    double iterationTimeMs = 0; ///< pipelineMs + dpSyncMs + optimizerMs + CostOptions::iterationOverheadMs
    std::vector<StageEstimate> stages;
    std::vector<GpuMemory> gpus;
    double peakUtilisation = 0; ///< M: highest per-GPU totalBytes / capacityBytes
    double imbalance = 0; ///< B: coefficient of variation of per-GPU utilisation
    double peakBytes = 0; ///< highest per-GPU totalBytes
    bool oom = false; ///< some GPU exceeds its capacity
    int fullestGpu = -1; ///< index into gpus of the GPU with the highest utilisation
    /// Fits / risk of OOM / does not fit on the fullest GPU, with CostOptions::memoryUncertainty.
    MemoryVerdict verdict = MemoryVerdict::Fits;
    double marginBytes = 0; ///< capacity - device-used peak of the fullest GPU (negative: over)
};

/// The highest per-GPU peak of `kind` (allocator peak, reserved or device-used) in `e`.
double peakOfKind(const PlanEstimate &e, MemoryKind kind);

/// Estimates iteration time and per-GPU memory of `plan`. The plan must be valid
/// (validatePlan); throws std::invalid_argument naming the problem otherwise. `profiles` may be
/// null; when it holds a (device, model, tp, micro-batch, sequence) key, the measured per-layer
/// times replace the analytic compute times of that replica.
PlanEstimate estimatePlan(const Plan &plan, const Cluster &cluster, const Model &model, const ProfileSet *profiles,
                          const CostOptions &options);

// ---------------------------------------------------------------------------------------------
// Building blocks shared by estimatePlan and the search's fast path (so both agree exactly).

/// Per-layer costs of one replica kind: a device running `tp`-way tensor parallel with
/// micro-batch `microBatch`. Times are per micro-batch. Prefix arrays have L+1 entries:
/// forwardPrefixMs[k] = forward time of transformer layers 0..k-1.
struct LayerKernel {
    std::vector<double> forwardPrefixMs;
    std::vector<double> backwardPrefixMs;
    std::vector<double> optimizerPrefixMs; ///< only from profiles; empty = analytic optimizer
    double embeddingForwardMs = 0, embeddingBackwardMs = 0, embeddingOptimizerMs = 0;
    double headForwardMs = 0, headBackwardMs = 0, headOptimizerMs = 0;
    double selectiveFraction = 0; ///< recomputed share of a layer's forward with selective recompute
    double tpCommPerLayerMs = 0; ///< fwd + bwd TP collectives of one layer
    double tpCommRecomputePerLayerMs = 0; ///< extra TP collectives of one fully recomputed layer
    double cpCommPerLayerMs = 0; ///< exposed fwd + bwd context-parallel exchange of one layer
    double cpCommRecomputePerLayerMs = 0; ///< its forward part again for a fully recomputed layer
    double optimizerMsPerParam = 0; ///< analytic optimizer step time per local parameter
    /// FP8: the per-iteration cast of the layers' weights to FP8, per local layer parameter (0 without).
    double fp8WeightCastMsPerParam = 0;
    bool profiled = false;
};

/// Memory figures of one transformer layer / the model ends, per GPU.
struct MemoryKernel {
    double layerParams = 0; ///< parameters of one layer on one TP rank (MoE: incl. its experts' share)
    /// MoE: the part of layerParams in the rank's experts (experts / ep, each / etp), whose
    /// gradients and optimizer state shard over the expert data-parallel group; 0 when dense.
    double layerExpertParams = 0;
    double embeddingParams = 0; ///< on one TP rank of the first stage
    double headParams = 0; ///< output layer + final norm on one TP rank of the last stage
    double layerActivationBytes[3] = {0, 0, 0}; ///< stored per layer per micro-batch: none, selective, full
    double fullWorkingSetBytes = 0; ///< one layer's working set while it is recomputed (full)
    double embeddingActivationBytes = 0; ///< input ids + embedding dropout mask per in-flight micro-batch
    double logitsBytes = 0; ///< logits + cross-entropy on the last stage
    double fp8WeightBytesPerLayer = 0; ///< FP8 weight copies of one layer on one TP rank (0 without FP8)
    AttentionBackend attention = AttentionBackend::Unfused; ///< resolved for the device
    bool activationsMeasured = false; ///< layerActivationBytes come from a measured profile
    // Device-used overheads of the device (GpuSpec::runtimeMemory, else CostOptions' defaults).
    double contextBytes = 0;
    double communicatorBytesPerGroup = 0;
    double reserveFraction = 0;
};

/// Forward FLOPs of one transformer layer for `microBatch` sequences on one of `tp` ranks.
double layerForwardFlops(const Model &model, int tp, int microBatch);
/// Forward FLOPs of the output layer (logits) on one of `tp` ranks.
double headForwardFlops(const Model &model, int tp, int microBatch);

/// `contextParallel` > 1: one rank of a CP group of that size exchanging K/V by `cpComm` over
/// `intraLink` (profiles are not used: they are measured at the whole sequence).
/// `fp8` (Plan::fp8 != Off): the layers' linear GEMMs in FP8 (transformerLayerSeconds) and the
/// weights' cast once per iteration (fp8WeightCastMsPerParam); 16-bit profiles are not used.
/// `experts`: an MoE model's expert layout (transformerLayerSeconds; its TP collectives: the
/// attention's, the shared expert's, and with an expert TP > 1 the gather / reduce-scatter of the
/// routed tokens in the expert-TP group); profiles are used only for a dense model.
LayerKernel makeLayerKernel(const GpuSpec &device, const Link &intraLink, const Model &model, int tp, int microBatch,
                            bool sequenceParallel, const ProfileSet *profiles, const CostOptions &options,
                            int contextParallel = 1, CpComm cpComm = CpComm::P2P, bool fp8 = false,
                            ExpertLayout experts = {});
/// Memory figures of one transformer layer and the model ends on `device`. `profiles` may be
/// null; when it holds the (device, model, tp, micro-batch, sequence) key with measured per-layer
/// activation bytes, those replace the formula's stored bytes without recompute (selective keeps
/// the measured bytes less the formula's score term; full keeps the layer input, 2sbh).
/// `contextParallel` > 1: every activation holds seqLength / cp tokens (a score tensor
/// (s / cp) x s); profiles are not used then.
/// `fp8` on a device with FP8: the GEMM inputs kept for backward in FP8 (norm outputs and FC2
/// input: 1 byte instead of 2; the attention output's FP8 copy beside flash attention's 16-bit
/// one) and the FP8 weight copies (fp8WeightBytesPerLayer); profiles are not used then.
/// MoE (`experts`): a layer's dense part splits over TP, the router stays whole on every rank, the
/// rank holds experts / ep experts each split etp ways (layerExpertParams); the stored activations
/// replace the dense MLP's by the shared expert's, the routed token copies' (topK per token: the
/// expert FC1 input, the activation input and output, the FC2 output kept for the weighted
/// combine) and the router's fp32 logits and probabilities; profiles are not used.
MemoryKernel makeMemoryKernel(const Model &model, const GpuSpec &device, int tp, int microBatch, bool sequenceParallel,
                              int pipelineStages, const ProfileSet *profiles, const CostOptions &options,
                              int contextParallel = 1, bool fp8 = false, ExpertLayout experts = {});

/// One MoE layer's expert-parallel all-to-alls per micro-batch on one rank, forward, ms (the
/// backward sends the gradients the same way: the same time again): dispatch and combine, each
/// moving the rank's routed token copies (its tokens, s / cp / tp with sequence parallelism,
/// x topK x hidden x 2 bytes) (ep - 1) / ep to the other ranks of its group. `local` of the `ep`
/// ranks (with itself) share the rank's node: their share crosses `intra`; the rest crosses
/// `inter`, whose NIC `flows` ranks of the node use at once. Not overlapped (Megatron-LM's
/// default). 0 with ep 1.
double moeAllToAllMs(const Model &model, int tp, int microBatch, int contextParallel, bool sequenceParallel, int ep,
                     int local, const Link &intra, const Link &inter, int flows);

/// Ring all-reduce time (nccl-tests): 2(n-1)/n * bytes / B + 2(n-1) latency, ms.
double allReduceMs(int n, double bytes, const Link &link);
/// Ring reduce-scatter or all-gather time: (n-1)/n * bytes / B + (n-1) latency, ms.
double allGatherMs(int n, double bytes, const Link &link);

/// Stage compute/communication per micro-batch for one replica of `kernel` serving layers
/// [first, first + count), with embedding / output layer when `hasEmbedding` / `hasHead`.
struct ReplicaStep {
    double forwardMs = 0, backwardMs = 0, recomputeMs = 0, tpCommMs = 0, cpCommMs = 0;
    double total() const { return forwardMs + backwardMs + recomputeMs + tpCommMs + cpCommMs; }
};
ReplicaStep replicaStep(const LayerKernel &kernel, int first, int count, bool hasEmbedding, bool hasHead,
                        Recompute recompute);

/// Links a collective among GPUs on `nodeIdx` (indices into cluster.nodes()) crosses: the
/// node's intra-node link when all are on one node, else the inter-node link of every pair
/// (the host path of nodeLink between nodes of different vendors). O(nodes + node classes^2)
/// (memx/cost/linktable.h); callers that ask many times build one LinkTable instead.
std::vector<Link> linksAmong(const std::vector<int> &nodeIdx, const std::vector<Node> &nodes, const Cluster &cluster,
                             const CostOptions &options);
/// Links between two node sets (intra-node link for a shared node).
std::vector<Link> linksBetween(const std::vector<int> &a, const std::vector<int> &b, const std::vector<Node> &nodes,
                               const Cluster &cluster, const CostOptions &options);
/// The link two nodes really use: the cluster's inter-node link, or between devices of
/// different vendors the host path (min of that link and CostOptions::cpuTransportGBps, plus
/// cpuTransportLatencyUs).
Link nodeLink(const Node &a, const Node &b, const Cluster &cluster, const CostOptions &options);
/// The part of nodeLink after the cluster's link is known: `direct` itself between devices of one
/// vendor, else the host path (min of its bandwidth at 64 MB and cpuTransportGBps, + latency).
Link crossVendorLink(const Link &direct, const GpuSpec &a, const GpuSpec &b, const CostOptions &options);
/// Concurrent flows that share one node's NIC during a stage's data-parallel gradient
/// reduction: every TP rank index runs its own ring, and each ring crosses the node boundary,
/// so `tp` flows per node (x the stages on that node reducing at the same time).
/// Ring all-reduce time of `bytes` among `n` ranks whose slowest link is shared by `flows`.
double sharedAllReduceMs(int n, double bytes, const Link &link, int flows);
/// The same for reduce-scatter / all-gather.
double sharedAllGatherMs(int n, double bytes, const Link &link, int flows);

/// Data-parallel communication of one stage per iteration, on its slowest link: the gradient
/// all-reduce (reduce-scatter with the distributed optimizer) and the parameter all-gather of the
/// distributed optimizer (0 without it).
struct DpComm {
    double reduceMs = 0, gatherMs = 0;
    double total() const { return reduceMs + gatherMs; }
};
/// DpComm of `params` parameters among `dp` ranks over the worst of `links` (the link with the
/// largest total), gradients at `gradBytesPerParam`, parameters at 2 bytes.
/// `sharded`: any DpSharding beyond None (reduce-scatter + all-gather instead of all-reduce).
DpComm dpCommMs(int dp, double params, double gradBytesPerParam, bool sharded, const std::vector<Link> &links,
                int flows);

/// Megatron-FSDP's data-parallel traffic (Plan::fsdp; `full` = dpCommMs with the distributed
/// optimizer: reduce-scatter of the gradients, all-gather of the bf16 weights). Gradients: every
/// micro-batch's backward reduce-scatters its gradients, unit (layer) after unit, overlapped with
/// the rest of the backward: exposed max(C/U, C - w (U-1)/U) over U units (as exposedDpSyncMs);
/// the updated weights are all-gathered once per iteration. Parameters: the weights are gathered
/// unit by unit (prefetched) in the forward and again in the backward, where the reduce-scatter
/// runs too; nothing is left per iteration (the optimizer updates the shards in place).
/// `contention` of every hidden millisecond is charged back.
struct FsdpComm {
    double microBatchMs = 0; ///< exposed per micro-batch (added to the stage's step)
    DpComm iteration; ///< what stays per iteration (exposedDpSyncMs applies the overlap flags)
};
FsdpComm fsdpMicroBatchComm(DpSharding sharding, const DpComm &full, double forwardMs, double backwardMs, double units,
                            double contention);

/// Megatron-core's gradient bucket with --overlap-grad-reduce: max(40M, 1M x dp) parameters
/// (DistributedDataParallel; only pipeline rank 0 is bucketed, later ranks hold one bucket).
double dpBucketParams(int dp);

/// What exposedDpSyncMs needs of one stage; per-micro-batch times of its slowest replica.
struct DpOverlapStage {
    DpComm comm;
    double params = 0; ///< parameters of the stage (for the bucket count)
    int dp = 1; ///< data-parallel replicas (Megatron's dp group: bucket size)
    double forwardMs = 0, backwardMs = 0; ///< one micro-batch; backward incl. recompute
    double p2pMs = 0; ///< send to the next stage (0 on the last)
};
/// Exposed data-parallel communication per stage (written to `exposed[0..p)`), returns the max.
/// Not overlapped: reduce + gather. --overlap-grad-reduce: stage 0 reduces bucket k as soon as the
/// last micro-batch's backward has produced it and bucket k-1's collective is done, so with B
/// buckets of C/B over a backward w what stays exposed is max(C/B, C - w (B-1)/B); a later stage
/// (one bucket) starts when its own last backward ends, which precedes stage 0's by the drain
/// sum_{j<i} (backward_j + p2p_j): exposed max(0, C - drain). --overlap-param-gather: the same
/// with the next iteration's first forward (stage 0) and the pipeline fill (later stages).
/// `contention` (CostOptions::overlapContention) of every hidden millisecond is charged back.
double exposedDpSyncMs(const DpOverlapStage *stages, int p, bool overlapGradReduce, bool overlapParamGather,
                       double *exposed, double contention = 0.0);

/// Flows sharing the busiest node NIC of each stage during the data-parallel reduction:
/// per node, the sum of `stageTp` over the stages whose DP group spans several nodes and has a
/// replica on that node; per stage, the maximum over its nodes (1 for a stage inside one node).
/// `stageNodes[i]` lists the node index of each replica of stage i.
std::vector<int> dpNicFlows(const std::vector<std::vector<int>> &stageNodes, const std::vector<int> &stageTp);

/// 1F1B makespan of the forward/backward part, ms: (m - 1) x the slowest stage's step (its
/// compute plus its exposed sends and receives, or a link slower than any stage) + every
/// stage's step + the fill/drain sends (forward and backward, 2 per boundary). `p2pMs[i]` is
/// the send from stage i to i + 1 (p - 1 entries). One formula for estimatePlan and the search.
///
/// Interleaved (`virtualStages` v > 1, Narayanan et al. 2021): a micro-batch passes every rank v
/// times in chunks of step / v, so the fill and drain take 1/v of the stages' steps:
/// (m - 1/v) x the slowest + sum of steps / v + the fill/drain sends, and every rank sends and
/// receives v times per micro-batch each way, the last rank to the first too (`wrapP2pMs`).
/// Homogeneous: (m + (p - 1) / v) x step, the paper's bubble (p - 1) / v.
double pipelineMakespanMs(int p, int m, const double *stepMs, const double *p2pMs, double exposedP2pFraction,
                          int virtualStages = 1, double wrapP2pMs = 0);
/// Slowest time of `fn(n, bytes, link)` over `links`, ms.
double worstCollectiveMs(const std::vector<Link> &links, int n, double bytes, double (*fn)(int, double, const Link &));
/// Slowest one-way transfer of `bytes` over `links`, ms.
double worstTransferMs(const std::vector<Link> &links, double bytes);

/// Per-GPU memory breakdown (bytes) of one replica's GPU.
struct MemoryBreakdown {
    double params = 0, grads = 0, optimizer = 0, activations = 0, overhead = 0;
    double reserve = 0; ///< the allocator-reserve part of `overhead`
    double allocated() const { return params + grads + optimizer + activations; }
    double total() const { return params + grads + optimizer + activations + overhead; }
};
/// `localParams` = parameters on the GPU; `inFlight` = micro-batches of the whole stage held
/// (1F1B: an integer; interleaved: chunks held / v); `groups` = number of TP/CP/DP/PP
/// communicator groups the GPU belongs to; `dp` = ranks the sharded state is split over
/// (DP x CP). `sharding`: Optimizer shards the 12 B of fp32 master weights and Adam moments;
/// Gradients also the 4 B fp32 gradients (plus two units' unsharded gradients in the
/// reduce-scatter buckets); Parameters also the 2 B weights (plus two units gathered: the one
/// computing and the prefetched one, with their FP8 copies).
/// `expertDp` (MoE): ranks the experts' sharded state is split over (expertDataParallel); 0: dp.
MemoryBreakdown gpuMemory(const MemoryKernel &kernel, int layerCount, bool hasEmbedding, bool hasHead,
                          Recompute recompute, double inFlight, int dp, DpSharding sharding, int groups,
                          int expertDp = 0);
/// Micro-batches (of the whole stage) stage `stage` of `p` holds at its peak with `m`
/// micro-batches and `virtualStages` chunks per rank: min(p - stage, m) for 1F1B; for the
/// interleaved schedule Megatron-LM's warm-up chunks 2(p - stage - 1) + (v - 1) p, + 1, at most
/// m v, divided by v.
double inFlightMicroBatches(int p, int stage, int m, int virtualStages);

} // namespace memx
