#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"

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
    // ---- compute ----
    /// Achieved fraction of peak dense FLOP/s on large GEMMs, per vendor, used when the device
    /// has no GpuSpec::measuredComputeEfficiency.
    double nvidiaEfficiency = 0.50;
    double amdEfficiency = 0.35;
    double otherEfficiency = 0.30;
    /// Saturating efficiency curve eff(F) = effMax * F / (F + halfSaturationFlops), where F is the
    /// forward FLOPs of one transformer layer for one micro-batch on one GPU: small GEMMs (small
    /// micro-batch, high TP, small hidden) reach a smaller fraction of peak.
    double halfSaturationFlops = 5e9;
    /// Achieved fraction of HBM bandwidth of the (memory-bound) optimizer step.
    double optimizerBandwidthEfficiency = 0.8;
    /// HBM bytes touched per parameter by one Adam step (read grad, master, m, v; write master,
    /// m, v and the 16-bit weight: 7 x 4 + 2).
    double optimizerBytesPerParam = 30;
    /// FlashAttention-style kernels: the a*s^2 attention score tensor is never stored, so
    /// "none" stores the same as "selective" (Korthikanti's 5as/h term vanishes).
    bool flashAttention = false;

    // ---- communication ----
    /// Gradient bytes per parameter in the data-parallel reduction (4 = fp32 main grads,
    /// Megatron's default; 2 with --grad-reduce-in-bf16).
    double gradReduceBytesPerParam = 4;

    // ---- fixed memory overheads (not in Megatron's formula) ----
    double runtimeContextBytes = 0.5 * 1073741824.0; ///< CUDA/HIP context per GPU
    double communicatorBytesPerGroup = 0.4 * 1073741824.0; ///< NCCL/RCCL buffers per TP/DP/PP group a GPU is in
    double allocatorReserveFraction = 0.05; ///< fragmentation + temporaries, x allocator peak
};

/// Time breakdown of one pipeline stage. Per-micro-batch figures are for the slowest replica.
struct StageEstimate {
    int stage = 0;
    int firstLayer = 0;
    int layerCount = 0;
    int microBatchesInFlight = 0; ///< 1F1B: min(p - i, m)
    double forwardMs = 0; ///< per micro-batch, incl. embedding / output layer
    double backwardMs = 0; ///< per micro-batch
    double recomputeMs = 0; ///< extra forward work of recomputation, per micro-batch
    double tpCommMs = 0; ///< tensor-parallel collectives, per micro-batch (fwd + bwd + recompute)
    double stepMs = 0; ///< forward + backward + recompute + TP communication, per micro-batch
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
    double totalBytes = 0;
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
    double iterationTimeMs = 0; ///< pipelineMs + dpSyncMs + optimizerMs
    std::vector<StageEstimate> stages;
    std::vector<GpuMemory> gpus;
    double peakUtilisation = 0; ///< M: highest per-GPU totalBytes / capacityBytes
    double imbalance = 0; ///< B: coefficient of variation of per-GPU utilisation
    double peakBytes = 0; ///< highest per-GPU totalBytes
    bool oom = false; ///< some GPU exceeds its capacity
};

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
    double optimizerMsPerParam = 0; ///< analytic optimizer step time per local parameter
    bool profiled = false;
};

/// Memory figures of one transformer layer / the model ends, per GPU.
struct MemoryKernel {
    double layerParams = 0; ///< parameters of one layer on one TP rank
    double embeddingParams = 0; ///< on one TP rank of the first stage
    double headParams = 0; ///< output layer + final norm on one TP rank of the last stage
    double layerActivationBytes[3] = {0, 0, 0}; ///< stored per layer per micro-batch: none, selective, full
    double fullWorkingSetBytes = 0; ///< one layer's working set while it is recomputed (full)
    double embeddingActivationBytes = 0; ///< input ids + embedding dropout mask per in-flight micro-batch
    double logitsBytes = 0; ///< logits + cross-entropy on the last stage
};

/// Peak dense FLOP/s x efficiency for a layer forward of `layerForwardFlops` FLOPs.
double effectiveFlopsPerSecond(const GpuSpec &device, const Model &model, double layerForwardFlops,
                               const CostOptions &options);
/// Forward FLOPs of one transformer layer for `microBatch` sequences on one of `tp` ranks.
double layerForwardFlops(const Model &model, int tp, int microBatch);
/// Forward FLOPs of the output layer (logits) on one of `tp` ranks.
double headForwardFlops(const Model &model, int tp, int microBatch);

LayerKernel makeLayerKernel(const GpuSpec &device, const Link &intraLink, const Model &model, int tp, int microBatch,
                            bool sequenceParallel, const ProfileSet *profiles, const CostOptions &options);
MemoryKernel makeMemoryKernel(const Model &model, int tp, int microBatch, bool sequenceParallel, int pipelineStages,
                              const CostOptions &options);

/// Ring all-reduce time (nccl-tests): 2(n-1)/n * bytes / B + 2(n-1) latency, ms.
double allReduceMs(int n, double bytes, const Link &link);
/// Ring reduce-scatter or all-gather time: (n-1)/n * bytes / B + (n-1) latency, ms.
double allGatherMs(int n, double bytes, const Link &link);

/// Stage compute/communication per micro-batch for one replica of `kernel` serving layers
/// [first, first + count), with embedding / output layer when `hasEmbedding` / `hasHead`.
struct ReplicaStep {
    double forwardMs = 0, backwardMs = 0, recomputeMs = 0, tpCommMs = 0;
    double total() const { return forwardMs + backwardMs + recomputeMs + tpCommMs; }
};
ReplicaStep replicaStep(const LayerKernel &kernel, int first, int count, bool hasEmbedding, bool hasHead,
                        Recompute recompute);

/// Links a collective among GPUs on `nodeIdx` (indices into cluster.nodes()) crosses: the
/// node's intra-node link when all are on one node, else the inter-node link of every pair.
std::vector<Link> linksAmong(const std::vector<int> &nodeIdx, const std::vector<Node> &nodes, const Cluster &cluster);
/// Links between two node sets (intra-node link for a shared node).
std::vector<Link> linksBetween(const std::vector<int> &a, const std::vector<int> &b, const std::vector<Node> &nodes,
                               const Cluster &cluster);
/// Slowest time of `fn(n, bytes, link)` over `links`, ms.
double worstCollectiveMs(const std::vector<Link> &links, int n, double bytes, double (*fn)(int, double, const Link &));
/// Slowest one-way transfer of `bytes` over `links`, ms.
double worstTransferMs(const std::vector<Link> &links, double bytes);

/// Per-GPU memory breakdown (bytes) of one replica's GPU.
struct MemoryBreakdown {
    double params = 0, grads = 0, optimizer = 0, activations = 0, overhead = 0;
    double total() const { return params + grads + optimizer + activations + overhead; }
};
/// `localParams` = parameters on the GPU; `inFlight` = 1F1B micro-batches held; `groups` = number
/// of TP/DP/PP communicator groups the GPU belongs to.
MemoryBreakdown gpuMemory(const MemoryKernel &kernel, int layerCount, bool hasEmbedding, bool hasHead,
                          Recompute recompute, int inFlight, int dp, bool distributedOptimizer, int groups,
                          const CostOptions &options);

} // namespace memx
