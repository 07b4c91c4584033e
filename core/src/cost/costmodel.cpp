#include "memx/cost/costmodel.h"

#include "memx/cost/compute.h"
#include "memx/cost/linktable.h"

#include "memx/profile/layerprofile.h"
#include "memx/util/diagnostic.h"
#include "memx/util/hash.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace memx {

namespace {

double normSize(const Model &m)
{
    return m.shape.normalization == Normalization::RMSNorm ? 1.0 : 2.0;
}

} // namespace

double layerForwardFlops(const Model &model, int tp, int microBatch)
{
    // Section 1.9 (num_floating_point_operations), forward third of the x6 factor, i.e. x2:
    // linear attention 2*[h*(q + 2*kv*g) + q*h] per token, core attention 2*q*s per token
    // (causal half of QK^T and AV), MLP 2*h*f*(3 if SwiGLU else 2) per token.
    const ModelShape &s = model.shape;
    const double h = s.hidden, kv = model.kvChannels(), q = kv * s.heads, g = s.kvGroups, f = s.ffnHidden;
    const double tokens = static_cast<double>(microBatch) * s.seqLength;
    const double linear = 2.0 * (h * (q + 2.0 * kv * g) + q * h);
    // MoE: the shared expert and topK routed experts per token, plus the router (2 h E).
    const double mlp = s.isMoe()
        ? 2.0 * h * (s.swiglu ? 3.0 : 2.0) * (s.moe.sharedExpertFfnHidden + s.moe.topK * s.moe.expertFfnHidden)
            + 2.0 * h * s.moe.experts
        : 2.0 * h * f * (s.swiglu ? 3.0 : 2.0);
    const double core = 2.0 * q * s.seqLength;
    return tokens * (linear + mlp + core) / tp;
}

double headForwardFlops(const Model &model, int tp, int microBatch)
{
    // logits: 2*h*V per token (section 1.9: 6*h*V for fwd+bwd).
    const double tokens = static_cast<double>(microBatch) * model.shape.seqLength;
    return tokens * 2.0 * model.shape.hidden * model.shape.vocab / tp;
}

double allReduceMs(int n, double bytes, const Link &link)
{
    if (n <= 1 || bytes <= 0)
        return 0;
    const double bw = link.bandwidthAt(bytes) * 1e9;
    const double k = 2.0 * (n - 1) / n;
    return (k * bytes / bw + 2.0 * (n - 1) * link.latencyUs * 1e-6) * 1e3;
}

double allGatherMs(int n, double bytes, const Link &link)
{
    if (n <= 1 || bytes <= 0)
        return 0;
    const double bw = link.bandwidthAt(bytes) * 1e9;
    const double k = static_cast<double>(n - 1) / n;
    return (k * bytes / bw + (n - 1) * link.latencyUs * 1e-6) * 1e3;
}

double moeAllToAllMs(const Model &model, int tp, int microBatch, int contextParallel, bool sequenceParallel, int ep,
                     int local, const Link &intra, const Link &inter, int flows)
{
    const ModelShape &s = model.shape;
    if (!s.isMoe() || ep <= 1)
        return 0;
    const double tokens
        = static_cast<double>(microBatch) * s.seqLength / std::max(1, contextParallel) / (sequenceParallel ? tp : 1);
    const double bytes = tokens * s.moe.topK * s.hidden * 2.0; // the rank's routed copies, 16-bit
    local = std::clamp(local, 1, ep);
    const double near = bytes * (local - 1) / ep, far = bytes * (ep - local) / ep;
    const auto wireMs = [](const Link &l, double b) {
        const double bw = l.bandwidthAt(b);
        return b > 0 && bw > 0 ? b / (bw * 1e9) * 1e3 : 0.0;
    };
    // The node's NIC carries `flows` ranks' far shares at once.
    const double ms = std::max(wireMs(intra, near), wireMs(inter, far * std::max(1, flows)));
    const double latency = (local - 1) * intra.latencyUs + (ep - local) * inter.latencyUs;
    return 2.0 * (ms + latency * 1e-3); // dispatch + combine
}

namespace {

/// The exposed communication of one layer's context-parallel exchange (per micro-batch, on the
/// node's intra-node link; CP groups stay inside a node), into k.cpComm*. Local K/V of a rank:
/// 2 tensors x b x (s / cp) x kv channels x KV groups / tp x 2 bytes.
/// - p2p (ring attention): cp - 1 ring steps, each sending the K/V block on while the previous
///   block's attention runs; only what the step's attention does not cover is exposed.
///   Backward sends K/V and their gradients (2x) against the backward attention.
/// - all_gather: gather the whole K/V before attention (forward, again in backward) and
///   reduce-scatter its gradient; nothing overlaps.
/// - a2a (Ulysses): all-to-alls of Q, K, V in and of the output back (forward), the same volume
///   of gradients in backward; nothing overlaps.
void contextParallelComm(LayerKernel &k, const Model &model, int tp, int microBatch, int cp, CpComm comm,
                         const Link &link, AttentionBackend attention, const ComputeParams &params)
{
    const ModelShape &s = model.shape;
    const double d = model.kvChannels();
    const double tokens = static_cast<double>(microBatch) * s.seqLength / cp;
    const double kvBytes = 2.0 * tokens * d * s.kvGroups / tp * 2.0;
    double fwd = 0, bwd = 0;
    switch (comm) {
    case CpComm::P2P: {
        // Attention seconds of one ring step: the rank's attention over one K/V block.
        const double scores = static_cast<double>(microBatch) * s.heads / tp * s.seqLength * s.seqLength / cp;
        const double attnFwd = storesNoScores(attention)
            ? 2.0 * scores * d / (params.peakFlops * params.attentionEfficiency)
            : 4.0 * scores * d / (params.peakFlops * params.gemmEfficiency);
        const double stepFwd = attnFwd / cp * 1e3, stepBwd = 2.5 * attnFwd / cp * 1e3;
        const double sendFwd = link.transferSeconds(kvBytes) * 1e3, sendBwd = link.transferSeconds(2.0 * kvBytes) * 1e3;
        fwd = (cp - 1) * std::max(0.0, sendFwd - stepFwd);
        bwd = (cp - 1) * std::max(0.0, sendBwd - stepBwd);
        break;
    }
    case CpComm::AllGather:
        fwd = allGatherMs(cp, kvBytes * cp, link);
        bwd = 2.0 * allGatherMs(cp, kvBytes * cp, link);
        break;
    case CpComm::A2A: {
        const double q = d * s.heads / tp, kv = d * s.kvGroups / tp;
        const double bytes = tokens * (2.0 * q + 2.0 * kv) * 2.0; // Q, K, V in + output out
        fwd = allGatherMs(cp, bytes, link);
        bwd = allGatherMs(cp, bytes, link);
        break;
    }
    }
    k.cpCommPerLayerMs = fwd + bwd;
    k.cpCommRecomputePerLayerMs = fwd;
}

} // namespace

LayerKernel makeLayerKernel(const GpuSpec &device, const Link &intraLink, const Model &model, int tp, int microBatch,
                            bool sequenceParallel, const ProfileSet *profiles, const CostOptions &options,
                            int contextParallel, CpComm cpComm, bool fp8, ExpertLayout experts)
{
    const ModelShape &s = model.shape;
    const int L = s.layers;
    const int cp = std::max(1, contextParallel);
    // A profile is measured at the whole sequence per GPU in 16-bit on a dense model: it describes
    // neither a CP rank, FP8 GEMMs nor an expert layout.
    if (cp > 1 || fp8 || s.isMoe())
        profiles = nullptr;
    LayerKernel k;
    k.forwardPrefixMs.assign(static_cast<size_t>(L) + 1, 0.0);
    k.backwardPrefixMs.assign(static_cast<size_t>(L) + 1, 0.0);

    const double fwdFlops = layerForwardFlops(model, tp, microBatch) / cp;
    // Selective (core_attn) recompute re-runs the attention score part only.
    const double coreFlops
        = static_cast<double>(microBatch) * s.seqLength * 2.0 * model.kvChannels() * s.heads * s.seqLength / tp / cp;
    k.selectiveFraction = fwdFlops > 0 ? coreFlops / fwdFlops : 0;

    const LayerProfile *prof = nullptr;
    std::optional<LayerSeconds> layer; // kernel-level model only (no profile)
    if (profiles)
        prof = profiles->find(ProfileKey {device.id, model.id, tp, microBatch, s.seqLength});
    if (prof && static_cast<int>(prof->layers.size()) == L + 2) {
        k.profiled = true;
        k.optimizerPrefixMs.assign(static_cast<size_t>(L) + 1, 0.0);
        for (int i = 0; i < L; ++i) {
            const LayerMeasurement &m = prof->layers[static_cast<size_t>(i) + 1];
            k.forwardPrefixMs[i + 1] = k.forwardPrefixMs[i] + m.forwardMs;
            k.backwardPrefixMs[i + 1] = k.backwardPrefixMs[i] + m.backwardMs;
            k.optimizerPrefixMs[i + 1] = k.optimizerPrefixMs[i] + m.optimizerMs;
        }
        k.embeddingForwardMs = prof->layers.front().forwardMs;
        k.embeddingBackwardMs = prof->layers.front().backwardMs;
        k.embeddingOptimizerMs = prof->layers.front().optimizerMs;
        k.headForwardMs = prof->layers.back().forwardMs;
        k.headBackwardMs = prof->layers.back().backwardMs;
        k.headOptimizerMs = prof->layers.back().optimizerMs;
    } else {
        // Kernel-level model (memx/cost/compute.h): GEMMs with tile and wave quantisation,
        // attention by backend, memory-bound kernels, the host time of each pass.
        const ComputeParams params = computeParams(device, model, options);
        layer = transformerLayerSeconds(params, model, tp, microBatch, sequenceParallel,
                                        resolveAttention(model, device), options, cp, fp8, experts);
        if (cp > 1) {
            // The CP exchange is more framework ops per layer: a ring step (send, receive,
            // block attention, softmax correction) per peer, or the gather / the all-to-alls.
            const double steps = cpComm == CpComm::P2P ? cp - 1.0 : cpComm == CpComm::A2A ? 2.0 : 1.0;
            layer->host.forward += steps * options.opsPerContextParallelStep * params.hostOpSeconds;
            layer->host.backward += 2.0 * steps * options.opsPerContextParallelStep * params.hostOpSeconds;
        }
        const PassSeconds pass = layer->pass();
        for (int i = 0; i < L; ++i) {
            k.forwardPrefixMs[i + 1] = k.forwardPrefixMs[i] + pass.forward * 1e3;
            k.backwardPrefixMs[i + 1] = k.backwardPrefixMs[i] + pass.backward * 1e3;
        }
        // The output layer and the embedding see the rank's seqLength / cp tokens.
        Model rankTokens = model;
        rankTokens.shape.seqLength = std::max(1, s.seqLength / cp);
        const PassSeconds head = headSeconds(params, rankTokens, tp, microBatch, options);
        k.headForwardMs = head.forward * 1e3;
        k.headBackwardMs = head.backward * 1e3;
        const PassSeconds emb = embeddingSeconds(params, rankTokens, microBatch, options);
        k.embeddingForwardMs = emb.forward * 1e3;
        k.embeddingBackwardMs = emb.backward * 1e3;
    }
    const double memBw = device.memoryBandwidthGBps.value_or(1000.0) * 1e9 * options.optimizerBandwidthEfficiency;
    k.optimizerMsPerParam = options.optimizerBytesPerParam / memBw * 1e3;
    if (fp8 && device.denseFp8Tflops) {
        // The first micro-batch casts every linear weight to FP8 with its transpose; the others
        // reuse the copies (Megatron passes is_first_microbatch to TE). Once per iteration.
        const double castBw = device.memoryBandwidthGBps.value_or(1000.0) * 1e9 * options.memoryBoundEfficiency;
        k.fp8WeightCastMsPerParam = options.fp8CastBytesPerElement / castBw * 1e3;
    }

    // Section 5, TP: per layer per micro-batch 2 all-reduces forward + 2 backward of b*s*h*2
    // bytes (with SP the same volume as all-gathers + reduce-scatters); full recompute adds
    // the 2 forward all-reduces again.
    // A profile measured inside its TP group already contains these collectives.
    if (tp > 1 && !(prof && k.profiled && prof->includesTpCommunication)) {
        const double bytes = static_cast<double>(microBatch) * s.seqLength / cp * s.hidden * 2.0;
        const double one
            = sequenceParallel ? 2.0 * allGatherMs(tp, bytes, intraLink) : allReduceMs(tp, bytes, intraLink);
        double fwd = 2.0 * one;
        if (s.isMoe()) {
            // Attention's pair, the shared expert's, and the routed copies' gather / reduce-scatter
            // in the expert-TP group (etp of the TP ranks: their topK x s / tp tokens each).
            const int etp = experts.resolvedEtp(tp);
            const double routed = bytes * s.moe.topK * etp / tp;
            fwd = one + (s.moe.sharedExpertFfnHidden > 0 ? one : 0.0)
                + (etp > 1 ? 2.0 * allGatherMs(etp, routed, intraLink) : 0.0);
        }
        double bwd = fwd;
        if (layer) {
            // The collectives queue on the GPU stream behind the pass's kernels while the host
            // keeps issuing ops: a host-bound pass hides them. Only the part beyond
            // max(host, kernels) adds to the step.
            // Each collective is one more framework op on the host.
            const PassSeconds pass = layer->pass();
            const double collectiveHost = 2.0 * options.hostOpMicroseconds * 1e-6;
            fwd = std::max(layer->host.forward + collectiveHost, layer->gpu.forward + fwd * 1e-3) * 1e3
                - pass.forward * 1e3;
            bwd = std::max(layer->host.backward + collectiveHost, layer->gpu.backward + bwd * 1e-3) * 1e3
                - pass.backward * 1e3;
        }
        k.tpCommPerLayerMs = fwd + bwd;
        k.tpCommRecomputePerLayerMs = fwd;
    }
    if (cp > 1 && layer)
        contextParallelComm(k, model, tp, microBatch, cp, cpComm, intraLink, resolveAttention(model, device),
                            computeParams(device, model, options));
    return k;
}

AttentionBackend resolveAttention(const Model &model, const GpuSpec &device)
{
    if (model.training.attention != AttentionBackend::Auto)
        return model.training.attention;
    return device.flashAttention ? AttentionBackend::Flash : AttentionBackend::Unfused;
}

std::string costOptionsSignature(const CostOptions &o)
{
    std::string s;
    for (double v : {o.nvidiaGemmEfficiency,
                     o.amdGemmEfficiency,
                     o.otherGemmEfficiency,
                     o.attentionKernelEfficiency,
                     o.memoryBoundEfficiency,
                     static_cast<double>(o.gemmTile),
                     o.hostOpMicroseconds,
                     o.opsPerLayerForward,
                     o.opsPerLayerBackward,
                     o.opsPerHead,
                     o.opsPerEmbedding,
                     o.iterationOverheadMs,
                     o.optimizerBandwidthEfficiency,
                     o.optimizerBytesPerParam,
                     o.gradReduceBytesPerParam,
                     o.runtimeContextBytes,
                     o.communicatorBytesPerGroup,
                     o.allocatorReserveFraction,
                     static_cast<double>(o.vocabDivisibleBy),
                     o.opsPerContextParallelStep,
                     o.p2pOpOverheadMs,
                     o.overlapContention,
                     o.fp8GemmEfficiencyScale,
                     o.fp8CastBytesPerElement,
                     o.fp8OpsPerLayerForward,
                     o.fp8OpsPerLayerBackward,
                     o.fp8WeightCacheBytesPerParam})
        s += exactNumber(v) + " ";
    return s;
}

bool storesNoScores(AttentionBackend resolved)
{
    return resolved == AttentionBackend::Flash || resolved == AttentionBackend::Fused;
}

long long paddedVocab(const Model &model, int tp, const CostOptions &options)
{
    const long long multiple = static_cast<long long>(std::max(1, options.vocabDivisibleBy)) * std::max(1, tp);
    return (model.shape.vocab + multiple - 1) / multiple * multiple;
}

double peakOfKind(const PlanEstimate &e, MemoryKind kind)
{
    double peak = 0;
    for (const GpuMemory &g : e.gpus)
        peak = std::max(peak,
                        kind == MemoryKind::AllocatorMax   ? g.allocatedBytes
                            : kind == MemoryKind::Reserved ? g.reservedBytes
                                                           : g.totalBytes);
    return peak;
}

const char *toString(MemoryVerdict v)
{
    switch (v) {
    case MemoryVerdict::Fits:
        return "fits";
    case MemoryVerdict::Risk:
        return "risk of OOM";
    case MemoryVerdict::DoesNotFit:
        break;
    }
    return "does not fit";
}

MemoryVerdict memoryVerdict(double peakUtilisation, double relativeSpread)
{
    const double u = std::max(0.0, relativeSpread);
    if (peakUtilisation * (1.0 + u) < 1.0)
        return MemoryVerdict::Fits;
    if (peakUtilisation * (1.0 - u) > 1.0)
        return MemoryVerdict::DoesNotFit;
    return MemoryVerdict::Risk;
}

namespace {

/// Mean measured activation bytes of one transformer layer (layers[1..L]), or 0 when the
/// profile has none.
double measuredLayerActivationBytes(const LayerProfile &prof, int layers)
{
    if (static_cast<int>(prof.layers.size()) != layers + 2)
        return 0;
    double sum = 0;
    for (int i = 1; i <= layers; ++i) {
        const auto &a = prof.layers[static_cast<size_t>(i)].activationBytes;
        if (!a || *a <= 0)
            return 0;
        sum += *a;
    }
    return sum / layers;
}

} // namespace

MemoryKernel makeMemoryKernel(const Model &model, const GpuSpec &device, int tp, int microBatch, bool sequenceParallel,
                              int pipelineStages, const ProfileSet *profiles, const CostOptions &options,
                              int contextParallel, bool fp8, ExpertLayout experts)
{
    const double cp = std::max(1, contextParallel);
    fp8 = fp8 && device.denseFp8Tflops.has_value();
    if (cp > 1 || fp8 || model.shape.isMoe())
        profiles = nullptr; // measured at the whole sequence per GPU, in 16-bit, on a dense model
    const ModelShape &s = model.shape;
    MemoryKernel k;
    const double h = s.hidden, a = s.heads, g = s.kvGroups, f = s.ffnHidden;
    const double V = static_cast<double>(paddedVocab(model, tp, options));
    const double norms = 2.0 * h * normSize(model);
    // Section 1.8: attention + MLP weights are TP-sharded, norms are replicated.
    k.layerParams = (static_cast<double>(model.paramsPerLayer()) - norms) / tp + norms;
    const MoeShape &moe = s.moe;
    const double ep = std::max(1, experts.ep), etp = experts.resolvedEtp(tp);
    if (s.isMoe()) {
        // Router replicated (like the norms), the rest of the dense part over TP, the experts over
        // ep x etp.
        const double expertsAll = static_cast<double>(model.expertParamsPerLayer());
        const double router = h * moe.experts;
        k.layerExpertParams = expertsAll / (ep * etp);
        k.layerParams = (static_cast<double>(model.paramsPerLayer()) - norms - router - expertsAll) / tp + norms
            + router + k.layerExpertParams;
    }
    // Word embedding (padded vocabulary) is sharded over TP; a learned position embedding is not.
    k.embeddingParams
        = V * h / tp + (s.positionEmbedding == PositionEmbedding::Learned ? static_cast<double>(s.seqLength) * h : 0.0);
    // Output layer: its own weight when untied; with tied embeddings and p > 1 the last stage
    // keeps a copy of the word embedding (Megatron's shared embedding). Plus the final norm.
    double out = 0;
    if (!s.tiedEmbeddings || pipelineStages > 1)
        out = h * V / tp;
    k.headParams = out + normSize(model) * h;

    // Section 4, Korthikanti Table 2 generalised: per layer, sbh x (10 replicated + sharded/t)
    // with sharded = attention 4 + 4g/a (Q, K, V, context; K/V shrunk by g/a for GQA) +
    // MLP 4f/h (two f-wide tensors; SwiGLU keeps three: 6f/h). For f = 4h, g = a: 10 + 24/t.
    // Unfused attention adds the score/softmax/dropout term 5as/(ht); flash/fused kernels never
    // store it (they keep only the softmax statistics, b x a x s fp32, negligible).
    k.attention = resolveAttention(model, device);
    // Context parallelism: every stored tensor holds the rank's s / cp tokens; an unfused score
    // tensor is (s / cp) x s, so the score term keeps the whole s.
    const double sbh = static_cast<double>(s.seqLength) / cp * microBatch * h;
    // MoE: the shared expert's (f-wide) tensors, and per routed copy (topK per token, spread over
    // the stage's ranks like the tokens) the expert FC1 input and FC2 output (2 h each, 16-bit),
    // the activation's input and output ((up + 1) fe), plus the router's fp32 logits and
    // probabilities (8 E bytes per token, of the rank's s / tp tokens with SP).
    const double mlpUnits = s.isMoe() ? (s.swiglu ? 6.0 : 4.0) * moe.sharedExpertFfnHidden / h
            + moe.topK * (4.0 + 2.0 * (s.swiglu ? 3.0 : 2.0) * moe.expertFfnHidden / h) + 8.0 * moe.experts / h
                                      : (s.swiglu ? 6.0 : 4.0) * f / h;
    const double sharded = 4.0 + 4.0 * g / a + mlpUnits;
    const double scores = storesNoScores(k.attention) ? 0.0 : 5.0 * a * s.seqLength / h;
    const double selective = sequenceParallel ? sbh * (10.0 + sharded) / tp : sbh * (10.0 + sharded / tp);
    double none = selective + sbh * scores / tp;
    double sel = selective;
    if (fp8) {
        // Transformer Engine saves the FP8 cast of each GEMM input for the weight gradient instead
        // of the 16-bit tensor: the two norm outputs (QKV and FC1 inputs, replicated without SP)
        // and the FC2 input (f per token) drop from 2 bytes to 1. The projection's input is the
        // attention output, which flash/fused attention keeps in 16-bit for its own backward: its
        // FP8 copy is one byte more there (unfused attention does not need it: one byte less).
        const double q = static_cast<double>(model.kvChannels()) * a;
        const double replicatedDelta = -2.0 / (sequenceParallel ? tp : 1);
        const double fc2Input = s.isMoe() ? moe.sharedExpertFfnHidden + moe.topK * moe.expertFfnHidden : f;
        const double shardedDelta = (-fc2Input + (storesNoScores(k.attention) ? q : -q)) / h / tp;
        const double delta = sbh * (replicatedDelta + shardedDelta);
        none += delta;
        sel += delta;
        // The FP8 weight copies (weight + transpose) of the four linear layers, per TP rank.
        const double d = model.kvChannels(), kvw = d * g;
        const double mlpW = s.isMoe() ? moe.sharedExpertFfnHidden : f;
        const double linear = h * (q + 2.0 * kvw) + q * h + h * mlpW * (s.swiglu ? 2.0 : 1.0) + mlpW * h;
        k.fp8WeightBytesPerLayer = options.fp8WeightCacheBytesPerParam * (linear / tp + k.layerExpertParams);
    }
    const LayerProfile *prof
        = profiles ? profiles->find(ProfileKey {device.id, model.id, tp, microBatch, s.seqLength}) : nullptr;
    if (const double measured = prof ? measuredLayerActivationBytes(*prof, s.layers) : 0.0; measured > 0) {
        // Measured bytes win: they are what the run's kernels really kept (attention backend,
        // fusions, dropout masks). Selective recompute drops the formula's score term from them.
        k.activationsMeasured = true;
        sel = std::max(measured - sbh * scores / tp, 0.5 * measured);
        none = measured;
    }
    k.layerActivationBytes[static_cast<int>(RecomputeMethod::Selective)] = sel;
    k.layerActivationBytes[static_cast<int>(RecomputeMethod::None)] = none;
    // Full recompute keeps the layer input only: 2sbh (2sbh/t with SP).
    k.layerActivationBytes[static_cast<int>(RecomputeMethod::Full)] = 2.0 * sbh / (sequenceParallel ? tp : 1);
    k.fullWorkingSetBytes = k.layerActivationBytes[static_cast<int>(RecomputeMethod::None)];
    // Input ids (8 bytes each) + embedding dropout mask (1 byte per element), per micro-batch.
    k.embeddingActivationBytes = 8.0 * s.seqLength / cp * microBatch + sbh;
    // Last stage at the loss: the 16-bit logits of the output layer (2 bytes) and their fp32 copy
    // in vocab-parallel cross-entropy (4 bytes, kept as the softmax for backward) over the padded
    // vocabulary, plus the fp32 gradient of the output layer's input (4 sbh).
    k.logitsBytes = (6.0 * sbh * V / h + 4.0 * sbh) / tp;

    const GpuSpec::RuntimeMemory &rm = device.runtimeMemory;
    k.contextBytes = rm.contextGiB ? *rm.contextGiB * 1073741824.0 : options.runtimeContextBytes;
    k.communicatorBytesPerGroup
        = rm.communicatorGiB ? *rm.communicatorGiB * 1073741824.0 : options.communicatorBytesPerGroup;
    k.reserveFraction = rm.reserveFraction.value_or(options.allocatorReserveFraction);
    return k;
}

ReplicaStep replicaStep(const LayerKernel &k, int first, int count, bool hasEmbedding, bool hasHead, Recompute rc)
{
    ReplicaStep r;
    const int last = first + count;
    const double fwdLayers = k.forwardPrefixMs[last] - k.forwardPrefixMs[first];
    r.forwardMs = fwdLayers + (hasEmbedding ? k.embeddingForwardMs : 0) + (hasHead ? k.headForwardMs : 0);
    r.backwardMs = k.backwardPrefixMs[last] - k.backwardPrefixMs[first] + (hasEmbedding ? k.embeddingBackwardMs : 0)
        + (hasHead ? k.headBackwardMs : 0);
    r.tpCommMs = count * k.tpCommPerLayerMs;
    r.cpCommMs = count * k.cpCommPerLayerMs;
    if (rc.method == RecomputeMethod::Full) {
        // "block": the first n layers of the stage are recomputed (n = 0 means all).
        const int n = recomputedLayers(rc, count);
        r.recomputeMs = k.forwardPrefixMs[first + n] - k.forwardPrefixMs[first];
        r.tpCommMs += n * k.tpCommRecomputePerLayerMs;
        r.cpCommMs += n * k.cpCommRecomputePerLayerMs;
    } else if (rc.method == RecomputeMethod::Selective) {
        r.recomputeMs = k.selectiveFraction * fwdLayers;
    }
    return r;
}

double inFlightMicroBatches(int p, int stage, int m, int virtualStages)
{
    if (virtualStages <= 1)
        return std::min(p - stage, m);
    const long long v = virtualStages;
    const long long chunks = std::min<long long>(m * v, 2LL * (p - stage - 1) + (v - 1) * p + 1);
    return static_cast<double>(chunks) / static_cast<double>(v);
}

MemoryBreakdown gpuMemory(const MemoryKernel &k, int layerCount, bool hasEmbedding, bool hasHead, Recompute rc,
                          double inFlight, int dp, DpSharding sharding, int groups, int expertDp)
{
    MemoryBreakdown m;
    const double params
        = layerCount * k.layerParams + (hasEmbedding ? k.embeddingParams : 0) + (hasHead ? k.headParams : 0);
    const double d = std::max(dp, 1);
    // MoE: the experts' state shards over the expert data-parallel group (expertDp), not dp:
    // shardedParams counts them at the dp they would have, scaled by dp / expertDp.
    const double expertScale = expertDp > 0 ? d / expertDp : 1.0;
    const double shardedParams = params + layerCount * k.layerExpertParams * (expertScale - 1.0);
    // Section 1.8: 18 bytes/param = 2 (bf16 weight) + 4 (fp32 main grad) + 12 (fp32 master + Adam m, v);
    // distributed optimizer: 6 + 12/d; Megatron-FSDP optim_grads: 2 + 16/d, optim_grads_params: 18/d,
    // plus the units in flight (the largest unit: a layer, the embedding or the output layer).
    // (Independent of layerCount, so the memory stays linear in it: the search's memory line.)
    const double unit = std::max({k.layerParams, hasEmbedding ? k.embeddingParams : 0.0, hasHead ? k.headParams : 0.0});
    if (sharding == DpSharding::Parameters)
        m.params = 2.0 * shardedParams / d + 2.0 * (2.0 * unit + k.fp8WeightBytesPerLayer);
    else
        m.params = 2.0 * params + layerCount * k.fp8WeightBytesPerLayer; // + FP8 weight copies (Plan::fp8)
    m.grads = sharding >= DpSharding::Gradients ? 4.0 * shardedParams / d + 2.0 * 4.0 * unit : 4.0 * params;
    m.optimizer = sharding != DpSharding::None ? 12.0 * shardedParams / d : 12.0 * params;

    double perMicroBatch = 0;
    double working = 0;
    switch (rc.method) {
    case RecomputeMethod::None:
        perMicroBatch = layerCount * k.layerActivationBytes[0];
        break;
    case RecomputeMethod::Selective:
        perMicroBatch = layerCount * k.layerActivationBytes[1];
        break;
    case RecomputeMethod::Full: {
        const int n = recomputedLayers(rc, layerCount);
        perMicroBatch = n * k.layerActivationBytes[2] + (layerCount - n) * k.layerActivationBytes[0];
        working = k.fullWorkingSetBytes;
        break;
    }
    }
    if (hasEmbedding)
        perMicroBatch += k.embeddingActivationBytes;
    m.activations = inFlight * perMicroBatch + working + (hasHead ? k.logitsBytes : 0);
    const double allocatorPeak = m.params + m.grads + m.optimizer + m.activations;
    m.reserve = k.reserveFraction * allocatorPeak;
    m.overhead = k.contextBytes + groups * k.communicatorBytesPerGroup + m.reserve;
    return m;
}

Link crossVendorLink(const Link &l, const GpuSpec &da, const GpuSpec &db, const CostOptions &o)
{
    if (da.vendor == db.vendor)
        return l;
    // NCCL and RCCL do not talk to each other: the bytes go device -> host -> TCP -> host -> device.
    Link h;
    h.bandwidthGBps = std::min(l.bandwidthAt(64e6), o.cpuTransportGBps);
    h.latencyUs = l.latencyUs + o.cpuTransportLatencyUs;
    return h;
}

Link nodeLink(const Node &a, const Node &b, const Cluster &cluster, const CostOptions &o)
{
    return crossVendorLink(cluster.interNodeLink(a, b), cluster.devices[static_cast<size_t>(a.device)],
                           cluster.devices[static_cast<size_t>(b.device)], o);
}

std::vector<Link> linksAmong(const std::vector<int> &nodeIdx, const std::vector<Node> &nodes, const Cluster &cluster,
                             const CostOptions &options)
{
    return LinkTable(cluster, nodes, options).linksAmong(nodeIdx);
}

std::vector<Link> linksBetween(const std::vector<int> &a, const std::vector<int> &b, const std::vector<Node> &nodes,
                               const Cluster &cluster, const CostOptions &options)
{
    return LinkTable(cluster, nodes, options).linksBetween(a, b);
}

double sharedAllReduceMs(int n, double bytes, const Link &link, int flows)
{
    Link shared = link;
    const double f = std::max(1, flows);
    shared.bandwidthGBps = link.bandwidthAt(bytes) / f;
    shared.curve.clear();
    return allReduceMs(n, bytes, shared);
}

double sharedAllGatherMs(int n, double bytes, const Link &link, int flows)
{
    Link shared = link;
    const double f = std::max(1, flows);
    shared.bandwidthGBps = link.bandwidthAt(bytes) / f;
    shared.curve.clear();
    return allGatherMs(n, bytes, shared);
}

DpComm dpCommMs(int dp, double params, double gradBytesPerParam, bool sharded, const std::vector<Link> &links,
                int flows)
{
    DpComm worst;
    const double gradBytes = params * gradBytesPerParam;
    for (const Link &l : links) {
        DpComm c;
        if (sharded) {
            c.reduceMs = sharedAllGatherMs(dp, gradBytes, l, flows); // reduce-scatter: the same bytes
            c.gatherMs = sharedAllGatherMs(dp, params * 2.0, l, flows);
        } else
            c.reduceMs = sharedAllReduceMs(dp, gradBytes, l, flows);
        if (c.total() > worst.total())
            worst = c;
    }
    return worst;
}

double dpBucketParams(int dp)
{
    return std::max(40e6, 1e6 * std::max(dp, 1));
}

namespace {

/// What stays exposed of `commMs` in `buckets` serial pieces overlapped with `computeMs` that
/// produces (or consumes) the pieces in order: max(C/B, C - w (B-1)/B).
double bucketedExposedMs(double commMs, double computeMs, double buckets)
{
    return std::max(commMs / buckets, commMs - computeMs * (buckets - 1) / buckets);
}

} // namespace

FsdpComm fsdpMicroBatchComm(DpSharding sharding, const DpComm &full, double forwardMs, double backwardMs, double units,
                            double contention)
{
    FsdpComm f;
    const double u = std::max(1.0, units);
    if (sharding == DpSharding::Gradients) {
        const double rs = full.reduceMs, e = rs > 0 ? bucketedExposedMs(rs, backwardMs, u) : 0.0;
        f.microBatchMs = e + contention * (rs - e);
        f.iteration.gatherMs = full.gatherMs;
    } else if (sharding == DpSharding::Parameters) {
        const double ag = full.gatherMs, bwd = full.gatherMs + full.reduceMs;
        const double e1 = ag > 0 ? bucketedExposedMs(ag, forwardMs, u) : 0.0;
        const double e2 = bwd > 0 ? bucketedExposedMs(bwd, backwardMs, u) : 0.0;
        f.microBatchMs = e1 + e2 + contention * ((ag - e1) + (bwd - e2));
    } else
        f.iteration = full;
    return f;
}

double exposedDpSyncMs(const DpOverlapStage *stages, int p, bool overlapGradReduce, bool overlapParamGather,
                       double *exposed, double contention)
{
    double drain = 0, fill = 0, worst = 0;
    for (int i = 0; i < p; ++i) {
        const DpOverlapStage &s = stages[i];
        double reduce = s.comm.reduceMs, gather = s.comm.gatherMs;
        const double buckets = std::max(1.0, std::ceil(s.params / dpBucketParams(s.dp) - 1e-9));
        if (overlapGradReduce && reduce > 0)
            reduce = i == 0 ? bucketedExposedMs(reduce, s.backwardMs, buckets) : std::max(0.0, reduce - drain);
        if (overlapParamGather && gather > 0)
            gather = i == 0 ? bucketedExposedMs(gather, s.forwardMs, buckets) : std::max(0.0, gather - fill);
        exposed[i] = reduce + gather + contention * (s.comm.total() - reduce - gather);
        worst = std::max(worst, exposed[i]);
        drain += s.backwardMs + s.p2pMs;
        fill += s.forwardMs + s.p2pMs;
    }
    return worst;
}

std::vector<int> dpNicFlows(const std::vector<std::vector<int>> &stageNodes, const std::vector<int> &stageTp)
{
    std::map<int, int> perNode;
    std::vector<bool> spans(stageNodes.size());
    for (size_t i = 0; i < stageNodes.size(); ++i) {
        const std::set<int> uniq(stageNodes[i].begin(), stageNodes[i].end());
        spans[i] = uniq.size() > 1;
        if (spans[i])
            for (int n : uniq)
                perNode[n] += stageTp[i];
    }
    std::vector<int> flows(stageNodes.size(), 1);
    for (size_t i = 0; i < stageNodes.size(); ++i)
        if (spans[i])
            for (int n : stageNodes[i])
                flows[i] = std::max(flows[i], perNode[n]);
    return flows;
}

double pipelineMakespanMs(int p, int m, const double *stepMs, const double *p2pMs, double exposed, int virtualStages,
                          double wrapP2pMs)
{
    const double v = std::max(1, virtualStages);
    const bool wraps = virtualStages > 1 && p > 1;
    double slowest = 0, sumStep = 0, sumP2p = 0, maxP2p = wraps ? wrapP2pMs : 0.0;
    for (int i = 0; i < p; ++i) {
        double in = i > 0 ? p2pMs[i - 1] : 0.0, out = i + 1 < p ? p2pMs[i] : 0.0;
        if (wraps && i == 0)
            in = wrapP2pMs;
        if (wraps && i == p - 1)
            out = wrapP2pMs;
        // Steady state: every micro-batch (every chunk of it, interleaved) a stage receives and
        // sends both ways (activation in, activation out, gradient in, gradient out); blocking
        // sends add to its step.
        slowest = std::max(slowest, stepMs[i] + v * exposed * (in + out));
        sumStep += stepMs[i];
        if (i + 1 < p) {
            sumP2p += p2pMs[i];
            maxP2p = std::max(maxP2p, p2pMs[i]);
        }
    }
    if (!wraps)
        return (m - 1) * std::max(slowest, maxP2p) + sumStep + 2.0 * sumP2p;
    return (m - 1.0 / v) * std::max(slowest, v * maxP2p) + sumStep / v + 2.0 * sumP2p;
}

double worstCollectiveMs(const std::vector<Link> &links, int n, double bytes, double (*fn)(int, double, const Link &))
{
    double worst = 0;
    for (const Link &l : links)
        worst = std::max(worst, fn(n, bytes, l));
    return worst;
}

double worstTransferMs(const std::vector<Link> &links, double bytes)
{
    double worst = 0;
    for (const Link &l : links)
        worst = std::max(worst, l.transferSeconds(bytes) * 1e3);
    return worst;
}

namespace {

/// estimatePlan's phases over one plan: per replica its step, memory and optimizer time; per
/// stage its DP gradient synchronisation and its send to the next stage; then the pipeline and
/// the plan's memory figures.
class PlanEstimator {
public:
    PlanEstimator(const Plan &plan, const Cluster &cluster, const Model &model, const ProfileSet *profiles,
                  const CostOptions &options)
        : plan(plan)
        , cluster(cluster)
        , model(model)
        , profiles(profiles)
        , options(options)
        , nodes(cluster.nodes())
        , linkTable(cluster, nodes, options)
        , p(plan.pp())
        , sharding(dpShardingOf(plan))
    {
        for (size_t i = 0; i < nodes.size(); ++i)
            nodeByName[nodes[i].name] = static_cast<int>(i);
    }

    PlanEstimate run()
    {
        PlanEstimate e;
        const int m = plan.microBatches();
        e.microBatches = m;
        e.stages.resize(static_cast<size_t>(p));
        const std::vector<int> flows = nicFlows();
        std::vector<double> steps(static_cast<size_t>(p)), sends(static_cast<size_t>(std::max(p - 1, 1)), 0.0);
        std::vector<DpOverlapStage> overlap(static_cast<size_t>(p));
        std::vector<int> lastStageNodes;
        for (int i = 0; i < p; ++i) {
            const Stage &st = plan.stages[static_cast<size_t>(i)];
            StageEstimate &se = e.stages[static_cast<size_t>(i)];
            se.stage = i;
            se.firstLayer = st.firstLayer;
            se.layerCount = st.layerCount;
            se.microBatchesInFlight = static_cast<int>(std::ceil(inFlightMicroBatches(p, i, m, v) - 1e-9));
            se.profiled = true;
            std::vector<int> stageNodes;
            for (size_t r = 0; r < st.replicas.size(); ++r)
                stageNodes.push_back(replica(i, r, se, e.gpus));
            if (model.shape.isMoe() && plan.expertParallel > 1) {
                // The expert-parallel all-to-alls: forward, backward (the same again) and the
                // forward of every fully recomputed layer.
                const int n = recomputedLayers(st.recompute, st.layerCount);
                se.moeCommMs = moeAllToAllPerLayerMs(st, stageNodes) * (2.0 * st.layerCount + n);
                se.stepMs += se.moeCommMs;
            }
            DpOverlapStage &ov = overlap[static_cast<size_t>(i)];
            ov.dp = st.dp();
            ov.forwardMs = se.forwardMs + 0.5 * (se.tpCommMs + se.cpCommMs + se.moeCommMs);
            ov.backwardMs = se.backwardMs + se.recomputeMs + 0.5 * (se.tpCommMs + se.cpCommMs + se.moeCommMs);
            if (st.dp() * cp > 1)
                ov.comm = dpSyncMs(i, stageNodes, flows[static_cast<size_t>(i)], ov.params);
            if (sharding >= DpSharding::Gradients) {
                // Megatron-FSDP (a single stage): the per-micro-batch traffic joins the step.
                const FsdpComm f
                    = fsdpMicroBatchComm(sharding, ov.comm, ov.forwardMs, ov.backwardMs,
                                         st.layerCount + (i == 0) + (i == p - 1), options.overlapContention);
                se.fsdpCommMs = f.microBatchMs;
                se.stepMs += f.microBatchMs;
                ov.comm = f.iteration;
            }
            steps[static_cast<size_t>(i)] = se.stepMs;
            if (i == p - 1)
                lastStageNodes = stageNodes;
            if (i + 1 < p) {
                se.p2pMs = p2pMs(i, stageNodes, i + 1);
                sends[static_cast<size_t>(i)] = se.p2pMs;
                ov.p2pMs = se.p2pMs;
            }
        }
        std::vector<double> exposed(static_cast<size_t>(p), 0.0);
        exposedDpSyncMs(overlap.data(), p, plan.overlapGradReduce, plan.overlapParamGather, exposed.data(),
                        options.overlapContention);
        for (int i = 0; i < p; ++i)
            e.stages[static_cast<size_t>(i)].dpSyncMs = exposed[static_cast<size_t>(i)];
        // Section 5, heterogeneous 1F1B with blocking sends (pipelineMakespanMs); interleaved:
        // the last rank also sends to the first.
        const double wrap = v > 1 && p > 1 ? p2pMs(p - 1, lastStageNodes, 0) : 0.0;
        e.pipelineMs = pipelineMakespanMs(p, m, steps.data(), sends.data(), options.exposedP2pFraction, v, wrap);
        for (StageEstimate &se : e.stages) {
            se.bubbleMs = e.pipelineMs - m * se.stepMs;
            e.dpSyncMs = std::max(e.dpSyncMs, se.dpSyncMs);
            e.optimizerMs = std::max(e.optimizerMs, se.optimizerMs);
        }
        e.iterationTimeMs = e.pipelineMs + e.dpSyncMs + e.optimizerMs + options.iterationOverheadMs;
        summariseMemory(e);
        return e;
    }

private:
    const LayerKernel &kernelFor(int node, int tp, int mbs)
    {
        auto key = std::make_tuple(node, tp, mbs);
        auto it = kernels.find(key);
        if (it == kernels.end()) {
            const Node &n = nodes[static_cast<size_t>(node)];
            it = kernels
                     .emplace(key,
                              makeLayerKernel(cluster.devices[static_cast<size_t>(n.device)], n.intraLink, model, tp,
                                              mbs, plan.sequenceParallel, profiles, options, cp, plan.cpComm,
                                              plan.fp8 != Fp8Format::Off, experts))
                     .first;
        }
        return it->second;
    }

    /// Rings sharing the busiest NIC during each stage's DP reduction.
    std::vector<int> nicFlows() const
    {
        std::vector<std::vector<int>> allStageNodes(static_cast<size_t>(p));
        std::vector<int> stageTp(static_cast<size_t>(p), 1);
        for (int i = 0; i < p; ++i)
            for (const Replica &r : plan.stages[static_cast<size_t>(i)].replicas) {
                allStageNodes[static_cast<size_t>(i)].push_back(nodeByName.at(r.node));
                stageTp[static_cast<size_t>(i)] = std::max(stageTp[static_cast<size_t>(i)], r.tp);
            }
        return dpNicFlows(allStageNodes, stageTp);
    }

    /// Replica r of stage i: its step (the slowest replica sets the stage's), its GPUs' memory
    /// (appended to `gpus`) and its optimizer step (the slowest sets the stage's). Returns its node.
    int replica(int i, size_t r, StageEstimate &se, std::vector<GpuMemory> &gpus)
    {
        const Stage &st = plan.stages[static_cast<size_t>(i)];
        const bool first = i == 0, last = i == p - 1;
        const int dp = st.dp();
        const Replica &rep = st.replicas[r];
        const int ni = nodeByName.at(rep.node);
        const LayerKernel &k = kernelFor(ni, rep.tp, rep.microBatch);
        se.profiled = se.profiled && k.profiled;
        const ReplicaStep step = replicaStep(k, st.firstLayer, st.layerCount, first, last, st.recompute);
        if (r == 0 || step.total() > se.stepMs) {
            se.stepMs = step.total();
            se.forwardMs = step.forwardMs;
            se.backwardMs = step.backwardMs;
            se.recomputeMs = step.recomputeMs;
            se.tpCommMs = step.tpCommMs;
            se.cpCommMs = step.cpCommMs;
            se.slowestReplica = static_cast<int>(r);
        }
        // Memory of this replica's GPUs.
        const Node &node = nodes[static_cast<size_t>(ni)];
        const GpuSpec &dev = cluster.devices[static_cast<size_t>(node.device)];
        const MemoryKernel mk = makeMemoryKernel(model, dev, rep.tp, rep.microBatch, plan.sequenceParallel, p, profiles,
                                                 options, cp, plan.fp8 != Fp8Format::Off, experts);
        // Communicators: TP, CP (the K/V exchange), DP x CP (gradients), PP; MoE: the expert-parallel
        // group, the expert data-parallel group and the expert-TP group where they differ.
        const int edp = expertDataParallel(plan, st), etp = plan.expertTp(rep.tp);
        const bool moe = model.shape.isMoe();
        const int groups = (rep.tp > 1) + (cp > 1) + (dp * cp > 1) + (p > 1)
            + (moe ? (plan.expertParallel > 1) + (edp > 1 && edp != dp * cp) + (etp > 1 && etp != rep.tp) : 0);
        const MemoryBreakdown mb
            = gpuMemory(mk, st.layerCount, first, last, st.recompute,
                        inFlightMicroBatches(p, i, plan.microBatches(), v), dp * cp, sharding, groups, moe ? edp : 0);
        for (int gpu : rep.gpus) {
            GpuMemory g;
            g.node = rep.node;
            g.gpuIndex = gpu;
            g.device = dev.id;
            g.stage = i;
            g.replica = static_cast<int>(r);
            g.paramsBytes = mb.params;
            g.gradsBytes = mb.grads;
            g.optimizerBytes = mb.optimizer;
            g.activationBytes = mb.activations;
            g.overheadBytes = mb.overhead;
            g.allocatedBytes = mb.allocated();
            g.reservedBytes = mb.allocated() + mb.reserve;
            g.totalBytes = mb.total();
            g.attention = mk.attention;
            g.activationsMeasured = mk.activationsMeasured;
            g.capacityBytes = dev.memoryBytes();
            g.headroomBytes = g.capacityBytes - g.totalBytes;
            g.oom = g.headroomBytes < 0;
            gpus.push_back(g);
        }
        // Optimizer step: measured per-layer update times, else HBM-bound analytic.
        const double localParams
            = st.layerCount * mk.layerParams + (first ? mk.embeddingParams : 0) + (last ? mk.headParams : 0);
        const double optShare = sharding != DpSharding::None ? 1.0 / (dp * cp) : 1.0;
        // MoE with the distributed optimizer: the experts' part updates 1 / edp of itself.
        const double expertShare = sharding != DpSharding::None ? 1.0 / edp : 1.0;
        const double expertParams = st.layerCount * mk.layerExpertParams;
        double optMs;
        if (!k.optimizerPrefixMs.empty())
            optMs = (k.optimizerPrefixMs[st.firstLayer + st.layerCount] - k.optimizerPrefixMs[st.firstLayer]
                     + (first ? k.embeddingOptimizerMs : 0) + (last ? k.headOptimizerMs : 0))
                * optShare;
        else
            optMs = ((localParams - expertParams) * optShare + expertParams * expertShare) * k.optimizerMsPerParam;
        optMs += st.layerCount * mk.layerParams * k.fp8WeightCastMsPerParam; // not sharded: every rank casts its own
        se.optimizerMs = std::max(se.optimizerMs, optMs);
        return ni;
    }

    /// DP gradient synchronisation of stage i over the bottleneck link of its replica set
    /// (section 5): every TP rank index reduces in its own ring; rings of a node share its NIC.
    /// With CP the gradients reduce over DP x CP ranks (a replica's CP ranks share its node).
    DpComm dpSyncMs(int i, const std::vector<int> &stageNodes, int flows, double &params) const
    {
        const Stage &st = plan.stages[static_cast<size_t>(i)];
        const bool first = i == 0, last = i == p - 1;
        const int dp = st.dp() * cp;
        const Replica &r0 = st.replicas.front();
        const GpuSpec &dev0
            = cluster.devices[static_cast<size_t>(nodes[static_cast<size_t>(stageNodes.front())].device)];
        const MemoryKernel mk = makeMemoryKernel(model, dev0, r0.tp, r0.microBatch, plan.sequenceParallel, p, nullptr,
                                                 options, 1, false, experts);
        const double psi
            = st.layerCount * mk.layerParams + (first ? mk.embeddingParams : 0) + (last ? mk.headParams : 0);
        params = psi;
        const std::vector<Link> links = linkTable.linksAmong(stageNodes);
        const double expertPsi = st.layerCount * mk.layerExpertParams;
        DpComm c = dpCommMs(dp, psi - expertPsi, options.gradReduceBytesPerParam, sharding != DpSharding::None, links,
                            flows);
        if (expertPsi > 0) {
            // MoE: the experts' gradients reduce in their own (expert data-parallel) group; its
            // ranks are spread over the stage's nodes like the DP group's.
            const DpComm ex = dpCommMs(expertDataParallel(plan, st), expertPsi, options.gradReduceBytesPerParam,
                                       sharding != DpSharding::None, links, flows);
            c.reduceMs += ex.reduceMs;
            c.gatherMs += ex.gatherMs;
        }
        return c;
    }

    /// Stage st's expert-parallel all-to-all per layer forward: its tp x cp x dp ranks, replica
    /// by replica, form groups of etp x ep consecutive ranks (Megatron's tp-ep-dp expert order);
    /// a group inside one replica stays on its node, a wider one spans the replicas it covers.
    double moeAllToAllPerLayerMs(const Stage &st, const std::vector<int> &stageNodes) const
    {
        const int tp = st.replicas.front().tp, width = tp * cp, ep = plan.expertParallel;
        const int block = plan.expertTp(tp) * ep;
        const Replica &r0 = st.replicas.front();
        const Node &n0 = nodes[static_cast<size_t>(stageNodes.front())];
        if (block <= width)
            return moeAllToAllMs(model, tp, r0.microBatch, cp, plan.sequenceParallel, ep, ep, n0.intraLink,
                                 n0.intraLink, 1);
        std::map<int, int> ranksOnNode; // the stage's ranks per node: they all run their all-to-alls at once
        for (int n : stageNodes)
            ranksOnNode[n] += width;
        const int perBlock = block / width; // replicas a group spans
        double worst = 0;
        for (size_t b = 0; b + perBlock <= stageNodes.size(); b += static_cast<size_t>(perBlock)) {
            const std::vector<int> blockNodes(stageNodes.begin() + static_cast<std::ptrdiff_t>(b),
                                              stageNodes.begin() + static_cast<std::ptrdiff_t>(b) + perBlock);
            const std::vector<Link> links = linkTable.linksAmong(blockNodes);
            for (int self : blockNodes) {
                const int near = static_cast<int>(std::count(blockNodes.begin(), blockNodes.end(), self));
                const int local = ep * near / perBlock; // group members on this rank's node
                const Node &node = nodes[static_cast<size_t>(self)];
                const Replica &rep = st.replicas[b];
                for (const Link &l : links)
                    worst = std::max(worst,
                                     moeAllToAllMs(model, tp, rep.microBatch, cp, plan.sequenceParallel, ep, local,
                                                   node.intraLink, l, ranksOnNode[self]));
            }
        }
        return worst;
    }

    /// P2P from stage i to stage `to` (the next, or stage 0 from the last when interleaved): one
    /// activation of b*(s/cp)*h*2 bytes (/t with SP) over the slowest link between their nodes.
    double p2pMs(int i, const std::vector<int> &stageNodes, int to) const
    {
        const Stage &st = plan.stages[static_cast<size_t>(i)];
        const Stage &nx = plan.stages[static_cast<size_t>(to)];
        const ModelShape &s = model.shape;
        int maxMb = 0, minTp = 1 << 20;
        for (const Replica &r : st.replicas) {
            maxMb = std::max(maxMb, r.microBatch);
            minTp = std::min(minTp, r.tp);
        }
        const double bytes
            = static_cast<double>(maxMb) * s.seqLength / cp * s.hidden * 2.0 / (plan.sequenceParallel ? minTp : 1);
        std::vector<int> nextNodes;
        for (const Replica &r : nx.replicas)
            nextNodes.push_back(nodeByName.at(r.node));
        return worstTransferMs(linkTable.linksBetween(stageNodes, nextNodes), bytes) + options.p2pOpOverheadMs;
    }

    /// The fullest GPU, peak, OOM, verdict and the imbalance CV over every GPU.
    void summariseMemory(PlanEstimate &e) const
    {
        double sum = 0;
        for (const GpuMemory &g : e.gpus) {
            const double u = g.utilisation();
            if (e.fullestGpu < 0 || u > e.peakUtilisation)
                e.fullestGpu = static_cast<int>(&g - e.gpus.data());
            e.peakUtilisation = std::max(e.peakUtilisation, u);
            e.peakBytes = std::max(e.peakBytes, g.totalBytes);
            e.oom = e.oom || g.oom;
            sum += u;
        }
        if (e.fullestGpu >= 0) {
            const GpuMemory &f = e.gpus[static_cast<size_t>(e.fullestGpu)];
            e.marginBytes = f.headroomBytes;
            e.verdict = memoryVerdict(e.peakUtilisation, options.memoryUncertainty);
        }
        const double n = static_cast<double>(e.gpus.size());
        if (n > 0) {
            const double mean = sum / n;
            double var = 0;
            for (const GpuMemory &g : e.gpus)
                var += (g.utilisation() - mean) * (g.utilisation() - mean);
            e.imbalance = mean > 0 ? std::sqrt(var / n) / mean : 0;
        }
    }

    const Plan &plan;
    const Cluster &cluster;
    const Model &model;
    const ProfileSet *profiles;
    const CostOptions &options;
    const std::vector<Node> nodes;
    const LinkTable linkTable;
    const int p;
    const DpSharding sharding; ///< dpShardingOf(plan)
    const int v = std::max(1, plan.virtualStages);
    const int cp = std::max(1, plan.contextParallel);
    const ExpertLayout experts {std::max(1, plan.expertParallel), plan.expertTensorParallel};
    std::map<std::string, int> nodeByName;
    std::map<std::tuple<int, int, int>, LayerKernel> kernels; ///< (node, tp, mbs)
};

} // namespace

PlanEstimate estimatePlan(const Plan &plan, const Cluster &cluster, const Model &model, const ProfileSet *profiles,
                          const CostOptions &options)
{
    Diagnostics diags;
    validatePlan(plan, cluster, model, diags);
    if (!diags.empty())
        throw std::invalid_argument("plan '" + plan.name + "' is not valid for cluster '" + cluster.name
                                    + "': " + diags.items().front().pointer + ": " + diags.items().front().message);
    return PlanEstimator(plan, cluster, model, profiles, options).run();
}

} // namespace memx
