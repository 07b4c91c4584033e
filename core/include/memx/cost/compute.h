#pragma once

#include "memx/cluster/gpuspec.h"
#include "memx/model/model.h"

namespace memx {

struct CostOptions;

/// How an MoE layer's experts are laid out over the ranks (Plan::expertParallel, Plan::expertTp):
/// each rank holds experts / ep experts, each split `etp` ways. Ignored for a dense model.
struct ExpertLayout {
    int ep = 1;
    int etp = 0; ///< 0: the replica's TP (Megatron-LM's default)
    int resolvedEtp(int tp) const { return etp > 0 ? etp : tp; }
    bool operator==(const ExpertLayout &) const = default;
};

/// Figures of the kernel-level compute model for one device (computeParams).
struct ComputeParams {
    double peakFlops = 0; ///< dense peak in the model's precision, FLOP/s
    double hbmBytesPerSecond = 0; ///< memory bandwidth, bytes/s
    double gemmEfficiency = 0; ///< fraction of peak a large, perfectly tiled GEMM reaches
    double attentionEfficiency = 0; ///< fraction of peak of flash/fused attention kernels
    double memoryBoundEfficiency = 0; ///< achieved fraction of HBM bandwidth of elementwise kernels
    double hostOpSeconds = 0; ///< host cost of one framework op (dispatch, autograd, launch)
    int computeUnits = 0; ///< SMs / CUs the tiles of one GEMM are spread over
    int tile = 128; ///< GEMM output tile edge (M and N are padded up to it)
    /// Dense FP8 peak, FLOP/s (GpuSpec::denseFp8Tflops; 0: no FP8) and the fraction of it an FP8
    /// GEMM reaches: gemmEfficiency x CostOptions::fp8GemmEfficiencyScale.
    double fp8PeakFlops = 0;
    double fp8GemmEfficiency = 0;
    double fp8CastBytesPerElement = 0; ///< CostOptions::fp8CastBytesPerElement
};

/// The device's compute figures: measured/calibrated ones where the GpuSpec has them
/// (measuredComputeEfficiency), else CostOptions' per-vendor defaults.
ComputeParams computeParams(const GpuSpec &device, const Model &model, const CostOptions &options);

/// Seconds of one GEMM (m x k) x (k x n) on the device: 2mnk FLOPs at gemmEfficiency x tile
/// quantisation (padding of M and N to whole tiles) x wave quantisation (the last wave of tiles
/// leaves compute units idle) x a short-reduction penalty k / (k + 96).
double gemmSeconds(const ComputeParams &p, double m, double n, double k);

/// Forward and backward seconds of one transformer layer for one micro-batch on one of `tp`
/// ranks, kernel by kernel: the four GEMMs (QKV, projection, FC1, FC2; backward: data and
/// weight gradients), core attention (unfused: batched QK^T and PV GEMMs + the s x s softmax /
/// dropout tensors through HBM; flash/fused: causal-half FLOPs at attentionEfficiency, backward
/// 2.5x), memory-bound kernels (norms, fused bias-dropout-adds, activation) at HBM bandwidth,
/// split over the TP ranks with sequence parallelism; and the host time of the pass's framework ops.
struct PassSeconds {
    double forward = 0, backward = 0;
};
/// One layer's passes on the device (`gpu`, kernels only) and on the host (`host`, framework ops
/// x hostOpSeconds). The host runs ahead of the GPU inside a pass, so a pass takes the larger of
/// the two; collectives issued in the pass (TP) queue on the GPU side (makeLayerKernel).
struct LayerSeconds {
    PassSeconds gpu, host;
    PassSeconds pass() const; ///< max(gpu, host) per pass
};
/// `contextParallel` > 1: one rank of a context-parallel group (seqLength / cp tokens, queries
/// against the whole sequence); its communication is makeLayerKernel's.
/// `fp8` (Plan::fp8, on a device with p.fp8PeakFlops): the four linear GEMMs run at the FP8 peak
/// x fp8GemmEfficiency (same tile/wave model), every GEMM operand that is not cached is cast to
/// FP8 by a memory-bound kernel (forward: the four inputs; backward: the four output gradients;
/// fp8CastBytesPerElement each), and the casts and scaling updates are more host ops
/// (CostOptions::fp8OpsPerLayerForward / Backward). Attention stays 16-bit.
/// MoE (Model::shape.moe): the MLP is the router GEMM (the rank's tokens x experts), the shared
/// expert (TP-split like a dense MLP) and the rank's experts / ep experts as grouped GEMMs whose
/// token count per expert is balanced routing's tokens x topK x ep x etp / (tp x experts), every
/// expert's rows padded to whole tiles; the token permutation and un-permutation through HBM;
/// CostOptions::opsPerMoeLayerForward / Backward more host ops. Its all-to-alls are
/// moeAllToAllMs' (memx/cost/costmodel.h).
LayerSeconds transformerLayerSeconds(const ComputeParams &p, const Model &model, int tp, int microBatch,
                                     bool sequenceParallel, AttentionBackend attention, const CostOptions &options,
                                     int contextParallel = 1, bool fp8 = false, ExpertLayout experts = {});
/// Output layer (final norm, logits GEMM over the padded vocabulary, fp32 cross-entropy).
PassSeconds headSeconds(const ComputeParams &p, const Model &model, int tp, int microBatch, const CostOptions &options);
/// Embedding lookup (a gather of b x s x h 16-bit values, memory bound) and its scatter-add.
PassSeconds embeddingSeconds(const ComputeParams &p, const Model &model, int microBatch, const CostOptions &options);

} // namespace memx
