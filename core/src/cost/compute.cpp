#include "memx/cost/compute.h"

#include "memx/cost/costmodel.h"

#include <algorithm>
#include <cmath>

namespace memx {

namespace {

double ceilTo(double x, double t)
{
    return std::ceil(x / t - 1e-12) * t;
}

} // namespace

ComputeParams computeParams(const GpuSpec &device, const Model &model, const CostOptions &o)
{
    ComputeParams p;
    const bool bf16 = model.training.precision == Precision::BF16;
    p.peakFlops = device.peakTflops(bf16).value_or(device.peakTflops(!bf16).value_or(1.0)) * 1e12;
    p.hbmBytesPerSecond = device.memoryBandwidthGBps.value_or(1000.0) * 1e9;
    const double vendorEff = device.vendor == "NVIDIA" ? o.nvidiaGemmEfficiency
        : device.vendor == "AMD"                       ? o.amdGemmEfficiency
                                                       : o.otherGemmEfficiency;
    p.gemmEfficiency = device.measuredComputeEfficiency && *device.measuredComputeEfficiency > 0
        ? *device.measuredComputeEfficiency
        : vendorEff;
    p.attentionEfficiency = p.gemmEfficiency * o.attentionKernelEfficiency;
    p.memoryBoundEfficiency = o.memoryBoundEfficiency;
    p.hostOpSeconds = o.hostOpMicroseconds * 1e-6;
    p.computeUnits = device.computeUnits.value_or(device.vendor == "AMD" ? 110 : 108);
    p.tile = std::max(1, o.gemmTile);
    if (device.denseFp8Tflops && *device.denseFp8Tflops > 0) {
        p.fp8PeakFlops = *device.denseFp8Tflops * 1e12;
        p.fp8GemmEfficiency = p.gemmEfficiency * o.fp8GemmEfficiencyScale;
    }
    p.fp8CastBytesPerElement = o.fp8CastBytesPerElement;
    return p;
}

double gemmSeconds(const ComputeParams &p, double m, double n, double k)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return 0;
    const double t = p.tile;
    const double tileUtil = (m * n) / (ceilTo(m, t) * ceilTo(n, t));
    const double tiles = std::ceil(m / t - 1e-12) * std::ceil(n / t - 1e-12);
    const double cu = std::max(1, p.computeUnits);
    const double waveUtil = tiles / (std::ceil(tiles / cu - 1e-12) * cu);
    const double kDepth = k / (k + 96.0);
    return 2.0 * m * n * k / (p.peakFlops * p.gemmEfficiency * tileUtil * waveUtil * kDepth);
}

PassSeconds LayerSeconds::pass() const
{
    return {std::max(gpu.forward, host.forward), std::max(gpu.backward, host.backward)};
}

LayerSeconds transformerLayerSeconds(const ComputeParams &p, const Model &model, int tp, int microBatch,
                                     bool sequenceParallel, AttentionBackend attention, const CostOptions &o,
                                     int contextParallel, bool fp8, ExpertLayout experts)
{
    fp8 = fp8 && p.fp8PeakFlops > 0;
    const ModelShape &s = model.shape;
    // Context parallelism: each rank holds seqLength / cp tokens of every sequence; its queries
    // attend to the keys of the whole sequence (load-balanced causal chunks), so the attention
    // work per rank is 1/cp of the whole, like every other kernel.
    const double cp = std::max(1, contextParallel);
    const double T = static_cast<double>(microBatch) * s.seqLength / cp, h = s.hidden, f = s.ffnHidden;
    const double d = model.kvChannels(), q = d * s.heads, kv = d * s.kvGroups;
    const double headsLocal = static_cast<double>(s.heads) / tp, seq = s.seqLength;
    struct G {
        double m, n, k;
    };
    const double up = s.swiglu ? 2.0 : 1.0; // FC1 outputs per FFN unit (gate + up with SwiGLU)
    // Dense: QKV, projection, FC1, FC2. MoE: the shared expert's FC1 / FC2 replace the MLP (the
    // routed experts follow); a zero-width shared expert adds nothing (gemmSeconds of 0).
    const double mlpWidth = s.isMoe() ? s.moe.sharedExpertFfnHidden : f;
    const G gemms[] = {{T, (q + 2 * kv) / tp, h}, {T, h, q / tp}, {T, mlpWidth * up / tp, h}, {T, h, mlpWidth / tp}};
    ComputeParams linear = p; // the four linear GEMMs: FP8 with `fp8`
    if (fp8) {
        linear.peakFlops = p.fp8PeakFlops;
        linear.gemmEfficiency = p.fp8GemmEfficiency;
    }
    PassSeconds gpu;
    double castIn = 0, castGrad = 0; // FP8: elements cast per pass (GEMM inputs; output gradients)
    for (const G &g : gemms) {
        if (g.n <= 0 || g.k <= 0)
            continue; // no shared expert
        gpu.forward += gemmSeconds(linear, g.m, g.n, g.k);
        gpu.backward += gemmSeconds(linear, g.m, g.k, g.n) + gemmSeconds(linear, g.k, g.n, g.m); // data + weight grad
        castIn += g.m * g.k;
        castGrad += g.m * g.n;
    }
    double moeActBytes = 0; // MoE: the routed experts' activation function, through HBM
    if (s.isMoe()) {
        const MoeShape &e = s.moe;
        const double ep = std::max(1, experts.ep), etp = experts.resolvedEtp(tp);
        const double local = static_cast<double>(e.experts) / ep, fe = e.expertFfnHidden;
        // Balanced routing: the rank's share of the stage's token copies, over its local experts.
        const double perExpert = T * e.topK * ep * etp / (tp * e.experts);
        const double rows = ceilTo(perExpert, p.tile) * local; // grouped GEMM: every expert's rows padded
        const G fc[] = {{rows, fe * up / etp, h}, {rows, h, fe / etp}};
        for (const G &g : fc) {
            gpu.forward += gemmSeconds(linear, g.m, g.n, g.k);
            // Data gradient on the padded rows; weight gradient: one k = perExpert reduction per expert.
            gpu.backward += gemmSeconds(linear, g.m, g.k, g.n) + gemmSeconds(linear, g.k * local, g.n, perExpert);
            castIn += perExpert * local * g.k;
            castGrad += perExpert * local * g.n;
        }
        // Router (the rank's tokens: s / tp with sequence parallelism), 16-bit GEMM.
        const double routed = T / (sequenceParallel ? tp : 1);
        gpu.forward += gemmSeconds(p, routed, e.experts, h);
        gpu.backward += gemmSeconds(p, routed, h, e.experts) + gemmSeconds(p, h, e.experts, routed);
        // Permute (read the tokens, write topK copies) and un-permute (read the copies, write the
        // weighted sum), 16-bit, on the rank's routed tokens; the expert activation over fe / etp.
        moeActBytes = 2.0 * 2.0 * routed * h * (1.0 + e.topK) + 2.0 * perExpert * local * fe / etp * (up + 1.0);
    }
    // Elements of the (s / cp) x s score tensor per local head (s x s without CP).
    const double scores = microBatch * headsLocal * seq * seq / cp;
    if (storesNoScores(attention)) {
        // Causal flash attention computes half of QK^T and PV: 2 x 2 x s^2 d / 2 per head;
        // backward recomputes QK^T and runs 4 more products (2.5x).
        const double flops = 2.0 * scores * d;
        gpu.forward += flops / (p.peakFlops * p.attentionEfficiency);
        gpu.backward += 2.5 * flops / (p.peakFlops * p.attentionEfficiency);
    } else {
        // Batched QK^T (s x s x d) and PV (s x d x s) over every local head and sequence, and the
        // score, softmax, dropout mask and dropout output through HBM (~11 bytes per element).
        const double count = microBatch * headsLocal, rows = seq / cp;
        const double qk = gemmSeconds(p, ceilTo(rows, p.tile) * count, seq, d) * rows / ceilTo(rows, p.tile);
        const double pv = gemmSeconds(p, ceilTo(rows, p.tile) * count, d, seq) * rows / ceilTo(rows, p.tile);
        const double bytes = 11.0 * scores;
        gpu.forward += qk + pv + bytes / (p.hbmBytesPerSecond * p.memoryBoundEfficiency);
        gpu.backward += 2.0 * (qk + pv) + 2.0 * bytes / (p.hbmBytesPerSecond * p.memoryBoundEfficiency);
    }
    // Memory-bound kernels, 16-bit, as Megatron fuses them by default: 2 norms (read + write,
    // 2 x 2 x 2Th), 2 bias-dropout-add kernels (read input and residual, write output and the
    // 1-byte mask: 3.5 x 2Th each; the attention dropout runs inside flash/fused attention or
    // with the scores above), the activation over f (read + write). With sequence parallelism
    // the norms and the bias-dropout-adds run on s / tp tokens per rank (Korthikanti et al.
    // 2022); without it every TP rank repeats them on the whole sequence.
    const double sbh2 = 2.0 * T * h / (sequenceParallel ? tp : 1);
    const double actBytes = 2.0 * T * mlpWidth * (s.swiglu ? 3.0 : 2.0) / tp + moeActBytes;
    const double bytes = 4.0 * sbh2 + 7.0 * sbh2 + actBytes;
    gpu.forward += bytes / (p.hbmBytesPerSecond * p.memoryBoundEfficiency);
    gpu.backward += 2.0 * bytes / (p.hbmBytesPerSecond * p.memoryBoundEfficiency);
    PassSeconds host {o.opsPerLayerForward * p.hostOpSeconds, o.opsPerLayerBackward * p.hostOpSeconds};
    if (s.isMoe()) {
        host.forward += o.opsPerMoeLayerForward * p.hostOpSeconds;
        host.backward += o.opsPerMoeLayerBackward * p.hostOpSeconds;
    }
    if (fp8) {
        // Transformer Engine casts each GEMM input (forward) and each output gradient (backward) to
        // FP8 with its transpose; with sequence parallelism the QKV / FC1 inputs are cast on the
        // rank's s / tp tokens before the gather (the other operands are whole on every rank).
        if (sequenceParallel)
            castIn -= 2.0 * T * h * (1.0 - 1.0 / tp);
        const double bw = p.hbmBytesPerSecond * p.memoryBoundEfficiency;
        gpu.forward += castIn * p.fp8CastBytesPerElement / bw;
        gpu.backward += castGrad * p.fp8CastBytesPerElement / bw;
        host.forward += o.fp8OpsPerLayerForward * p.hostOpSeconds;
        host.backward += o.fp8OpsPerLayerBackward * p.hostOpSeconds;
    }
    // Host: the framework issues its ops one by one; tiny kernels wait for it.
    return {gpu, host};
}

PassSeconds headSeconds(const ComputeParams &p, const Model &model, int tp, int microBatch, const CostOptions &o)
{
    const double T = static_cast<double>(microBatch) * model.shape.seqLength, h = model.shape.hidden;
    const double V = static_cast<double>(paddedVocab(model, tp, o)) / tp;
    const double bw = p.hbmBytesPerSecond * p.memoryBoundEfficiency;
    // Logits GEMM; fp32 cross-entropy reads the 16-bit logits, writes and re-reads the fp32 softmax.
    const double ce = (2.0 + 4.0 + 4.0) * T * V / bw;
    const double fwd = gemmSeconds(p, T, V, h) + ce;
    const double bwd = gemmSeconds(p, T, h, V) + gemmSeconds(p, h, V, T) + ce;
    return {std::max(fwd, o.opsPerHead * p.hostOpSeconds), std::max(bwd, o.opsPerHead * p.hostOpSeconds)};
}

PassSeconds embeddingSeconds(const ComputeParams &p, const Model &model, int microBatch, const CostOptions &o)
{
    const double bytes = 3.0 * 2.0 * microBatch * model.shape.seqLength * model.shape.hidden;
    const double fwd = bytes / (p.hbmBytesPerSecond * p.memoryBoundEfficiency);
    return {std::max(fwd, o.opsPerEmbedding * p.hostOpSeconds),
            std::max(2.0 * fwd, o.opsPerEmbedding * p.hostOpSeconds)};
}

} // namespace memx
