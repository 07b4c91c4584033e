#include "memx/cost/costmodel.h"

#include "memx/profile/layerprofile.h"
#include "memx/util/diagnostic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace memx {

namespace {

double maxEfficiency(const GpuSpec &device, const CostOptions &o)
{
    if (device.measuredComputeEfficiency && *device.measuredComputeEfficiency > 0)
        return *device.measuredComputeEfficiency;
    if (device.vendor == "NVIDIA")
        return o.nvidiaEfficiency;
    if (device.vendor == "AMD")
        return o.amdEfficiency;
    return o.otherEfficiency;
}

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
    const double mlp = 2.0 * h * f * (s.swiglu ? 3.0 : 2.0);
    const double core = 2.0 * q * s.seqLength;
    return tokens * (linear + mlp + core) / tp;
}

double headForwardFlops(const Model &model, int tp, int microBatch)
{
    // logits: 2*h*V per token (section 1.9: 6*h*V for fwd+bwd).
    const double tokens = static_cast<double>(microBatch) * model.shape.seqLength;
    return tokens * 2.0 * model.shape.hidden * model.shape.vocab / tp;
}

double effectiveFlopsPerSecond(const GpuSpec &device, const Model &model, double layerFlops, const CostOptions &options)
{
    const bool bf16 = model.training.precision == Precision::BF16;
    const double peak = device.peakTflops(bf16).value_or(device.peakTflops(!bf16).value_or(1.0)) * 1e12;
    const double eff = maxEfficiency(device, options) * layerFlops / (layerFlops + options.halfSaturationFlops);
    return peak * eff;
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

LayerKernel makeLayerKernel(const GpuSpec &device, const Link &intraLink, const Model &model, int tp, int microBatch,
                            bool sequenceParallel, const ProfileSet *profiles, const CostOptions &options)
{
    const ModelShape &s = model.shape;
    const int L = s.layers;
    LayerKernel k;
    k.forwardPrefixMs.assign(static_cast<size_t>(L) + 1, 0.0);
    k.backwardPrefixMs.assign(static_cast<size_t>(L) + 1, 0.0);

    const double fwdFlops = layerForwardFlops(model, tp, microBatch);
    // Selective (core_attn) recompute re-runs the attention score part only.
    const double coreFlops
        = static_cast<double>(microBatch) * s.seqLength * 2.0 * model.kvChannels() * s.heads * s.seqLength / tp;
    k.selectiveFraction = fwdFlops > 0 ? coreFlops / fwdFlops : 0;

    const LayerProfile *prof = nullptr;
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
        // Section 5: t_fwd = FLOPs / (peak x efficiency), t_bwd = 2 t_fwd.
        const double fwdMs = fwdFlops / effectiveFlopsPerSecond(device, model, fwdFlops, options) * 1e3;
        for (int i = 0; i < L; ++i) {
            k.forwardPrefixMs[i + 1] = k.forwardPrefixMs[i] + fwdMs;
            k.backwardPrefixMs[i + 1] = k.backwardPrefixMs[i] + 2.0 * fwdMs;
        }
        const double headFlops = headForwardFlops(model, tp, microBatch);
        k.headForwardMs = headFlops / effectiveFlopsPerSecond(device, model, headFlops, options) * 1e3;
        k.headBackwardMs = 2.0 * k.headForwardMs;
        // Embedding: a gather of b*s*h 16-bit values, memory bound.
        const double memBw = device.memoryBandwidthGBps.value_or(1000.0) * 1e9;
        k.embeddingForwardMs = static_cast<double>(microBatch) * s.seqLength * s.hidden * 2.0 / memBw * 1e3;
        k.embeddingBackwardMs = 2.0 * k.embeddingForwardMs;
    }
    const double memBw = device.memoryBandwidthGBps.value_or(1000.0) * 1e9 * options.optimizerBandwidthEfficiency;
    k.optimizerMsPerParam = options.optimizerBytesPerParam / memBw * 1e3;

    // Section 5, TP: per layer per micro-batch 2 all-reduces forward + 2 backward of b*s*h*2
    // bytes (with SP the same volume as all-gathers + reduce-scatters); full recompute adds
    // the 2 forward all-reduces again.
    if (tp > 1) {
        const double bytes = static_cast<double>(microBatch) * s.seqLength * s.hidden * 2.0;
        const double one
            = sequenceParallel ? 2.0 * allGatherMs(tp, bytes, intraLink) : allReduceMs(tp, bytes, intraLink);
        k.tpCommPerLayerMs = 4.0 * one;
        k.tpCommRecomputePerLayerMs = 2.0 * one;
    }
    return k;
}

MemoryKernel makeMemoryKernel(const Model &model, int tp, int microBatch, bool sequenceParallel, int pipelineStages,
                              const CostOptions &options)
{
    const ModelShape &s = model.shape;
    MemoryKernel k;
    const double h = s.hidden, V = s.vocab, a = s.heads, g = s.kvGroups, f = s.ffnHidden;
    const double norms = 2.0 * h * normSize(model);
    // Section 1.8: attention + MLP weights are TP-sharded, norms are replicated.
    k.layerParams = (static_cast<double>(model.paramsPerLayer()) - norms) / tp + norms;
    k.embeddingParams = static_cast<double>(model.embeddingParams()) / tp;
    // Output layer: its own weight when untied; with tied embeddings and p > 1 the last stage
    // keeps a copy of the word embedding (Megatron's shared embedding). Plus the final norm.
    double out = 0;
    if (!s.tiedEmbeddings || pipelineStages > 1)
        out = h * V / tp;
    k.headParams = out + normSize(model) * h;

    // Section 4, Korthikanti Table 2 generalised: per layer, sbh x (10 replicated + sharded/t)
    // with sharded = attention 4 + 4g/a (Q, K, V, context; K/V shrunk by g/a for GQA) +
    // MLP 4f/h (two f-wide tensors; SwiGLU keeps three: 6f/h). For f = 4h, g = a: 10 + 24/t.
    // No recompute adds the score/softmax/dropout term 5as/(ht) unless FlashAttention.
    const double sbh = static_cast<double>(s.seqLength) * microBatch * h;
    const double sharded = 4.0 + 4.0 * g / a + (s.swiglu ? 6.0 : 4.0) * f / h;
    const double scores = options.flashAttention ? 0.0 : 5.0 * a * s.seqLength / h;
    const double selective = sequenceParallel ? sbh * (10.0 + sharded) / tp : sbh * (10.0 + sharded / tp);
    k.layerActivationBytes[static_cast<int>(RecomputeMethod::Selective)] = selective;
    k.layerActivationBytes[static_cast<int>(RecomputeMethod::None)] = selective + sbh * scores / tp;
    // Full recompute keeps the layer input only: 2sbh (2sbh/t with SP).
    k.layerActivationBytes[static_cast<int>(RecomputeMethod::Full)] = 2.0 * sbh / (sequenceParallel ? tp : 1);
    k.fullWorkingSetBytes = k.layerActivationBytes[static_cast<int>(RecomputeMethod::None)];
    // Input ids (8 bytes each) + embedding dropout mask (1 byte per element), per micro-batch.
    k.embeddingActivationBytes = 8.0 * s.seqLength * microBatch + sbh;
    // Logits + cross-entropy on the last stage: 4 sbh (1 + V/h) / t (fp32).
    k.logitsBytes = 4.0 * sbh * (1.0 + V / h) / tp;
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
    if (rc.method == RecomputeMethod::Full) {
        // "block": the first n layers of the stage are recomputed (n = 0 means all).
        const int n = rc.layers > 0 ? std::min(rc.layers, count) : count;
        r.recomputeMs = k.forwardPrefixMs[first + n] - k.forwardPrefixMs[first];
        r.tpCommMs += n * k.tpCommRecomputePerLayerMs;
    } else if (rc.method == RecomputeMethod::Selective) {
        r.recomputeMs = k.selectiveFraction * fwdLayers;
    }
    return r;
}

MemoryBreakdown gpuMemory(const MemoryKernel &k, int layerCount, bool hasEmbedding, bool hasHead, Recompute rc,
                          int inFlight, int dp, bool distributedOptimizer, int groups, const CostOptions &o)
{
    MemoryBreakdown m;
    const double params
        = layerCount * k.layerParams + (hasEmbedding ? k.embeddingParams : 0) + (hasHead ? k.headParams : 0);
    // Section 1.8: 18 bytes/param = 2 (bf16 weight) + 4 (fp32 main grad) + 12 (fp32 master + Adam m, v);
    // distributed optimizer: 6 + 12/d.
    m.params = 2.0 * params;
    m.grads = 4.0 * params;
    m.optimizer = 12.0 * params / (distributedOptimizer ? std::max(dp, 1) : 1);

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
        const int n = rc.layers > 0 ? std::min(rc.layers, layerCount) : layerCount;
        perMicroBatch = n * k.layerActivationBytes[2] + (layerCount - n) * k.layerActivationBytes[0];
        working = k.fullWorkingSetBytes;
        break;
    }
    }
    if (hasEmbedding)
        perMicroBatch += k.embeddingActivationBytes;
    m.activations = inFlight * perMicroBatch + working + (hasHead ? k.logitsBytes : 0);
    const double allocatorPeak = m.params + m.grads + m.optimizer + m.activations;
    m.overhead
        = o.runtimeContextBytes + groups * o.communicatorBytesPerGroup + o.allocatorReserveFraction * allocatorPeak;
    return m;
}

std::vector<Link> linksAmong(const std::vector<int> &nodeIdx, const std::vector<Node> &nodes, const Cluster &cluster)
{
    std::set<int> uniq(nodeIdx.begin(), nodeIdx.end());
    std::vector<Link> links;
    if (uniq.size() == 1) {
        links.push_back(nodes[static_cast<size_t>(*uniq.begin())].intraLink);
        return links;
    }
    for (int a : uniq)
        for (int b : uniq)
            if (a < b) {
                Link l = cluster.interNodeLink(nodes[static_cast<size_t>(a)], nodes[static_cast<size_t>(b)]);
                if (std::find(links.begin(), links.end(), l) == links.end())
                    links.push_back(std::move(l));
            }
    return links;
}

std::vector<Link> linksBetween(const std::vector<int> &a, const std::vector<int> &b, const std::vector<Node> &nodes,
                               const Cluster &cluster)
{
    std::vector<Link> links;
    for (int x : std::set<int>(a.begin(), a.end()))
        for (int y : std::set<int>(b.begin(), b.end())) {
            Link l = x == y ? nodes[static_cast<size_t>(x)].intraLink
                            : cluster.interNodeLink(nodes[static_cast<size_t>(x)], nodes[static_cast<size_t>(y)]);
            if (std::find(links.begin(), links.end(), l) == links.end())
                links.push_back(std::move(l));
        }
    return links;
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

PlanEstimate estimatePlan(const Plan &plan, const Cluster &cluster, const Model &model, const ProfileSet *profiles,
                          const CostOptions &options)
{
    {
        Diagnostics diags;
        validatePlan(plan, cluster, model, diags);
        if (!diags.empty())
            throw std::invalid_argument("plan '" + plan.name + "' is not valid for cluster '" + cluster.name
                                        + "': " + diags.items().front().pointer + ": " + diags.items().front().message);
    }
    const std::vector<Node> nodes = cluster.nodes();
    std::map<std::string, int> nodeByName;
    for (size_t i = 0; i < nodes.size(); ++i)
        nodeByName[nodes[i].name] = static_cast<int>(i);

    PlanEstimate e;
    const int p = plan.pp();
    const int m = plan.microBatches();
    e.microBatches = m;
    const ModelShape &s = model.shape;

    std::map<std::tuple<int, int, int>, LayerKernel> kernels; // (node, tp, mbs)
    auto kernelFor = [&](int node, int tp, int mbs) -> const LayerKernel & {
        auto key = std::make_tuple(node, tp, mbs);
        auto it = kernels.find(key);
        if (it == kernels.end()) {
            const Node &n = nodes[static_cast<size_t>(node)];
            it = kernels
                     .emplace(key,
                              makeLayerKernel(cluster.devices[static_cast<size_t>(n.device)], n.intraLink, model, tp,
                                              mbs, plan.sequenceParallel, profiles, options))
                     .first;
        }
        return it->second;
    };

    e.stages.resize(static_cast<size_t>(p));
    double maxStep = 0, sumStep = 0, sumP2p = 0, maxP2p = 0;
    for (int i = 0; i < p; ++i) {
        const Stage &st = plan.stages[static_cast<size_t>(i)];
        StageEstimate &se = e.stages[static_cast<size_t>(i)];
        se.stage = i;
        se.firstLayer = st.firstLayer;
        se.layerCount = st.layerCount;
        se.microBatchesInFlight = std::min(p - i, m);
        const bool first = i == 0, last = i == p - 1;
        const int dp = st.dp();
        se.profiled = true;
        double worstOpt = 0;
        std::vector<int> stageNodes;
        for (size_t r = 0; r < st.replicas.size(); ++r) {
            const Replica &rep = st.replicas[r];
            const int ni = nodeByName.at(rep.node);
            stageNodes.push_back(ni);
            const LayerKernel &k = kernelFor(ni, rep.tp, rep.microBatch);
            se.profiled = se.profiled && k.profiled;
            const ReplicaStep step = replicaStep(k, st.firstLayer, st.layerCount, first, last, st.recompute);
            if (r == 0 || step.total() > se.stepMs) {
                se.stepMs = step.total();
                se.forwardMs = step.forwardMs;
                se.backwardMs = step.backwardMs;
                se.recomputeMs = step.recomputeMs;
                se.tpCommMs = step.tpCommMs;
                se.slowestReplica = static_cast<int>(r);
            }
            // Memory of this replica's GPUs.
            const MemoryKernel mk = makeMemoryKernel(model, rep.tp, rep.microBatch, plan.sequenceParallel, p, options);
            const int groups = (rep.tp > 1) + (dp > 1) + (p > 1);
            const MemoryBreakdown mb = gpuMemory(mk, st.layerCount, first, last, st.recompute, se.microBatchesInFlight,
                                                 dp, plan.distributedOptimizer, groups, options);
            const Node &node = nodes[static_cast<size_t>(ni)];
            const GpuSpec &dev = cluster.devices[static_cast<size_t>(node.device)];
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
                g.totalBytes = mb.total();
                g.capacityBytes = dev.memoryBytes();
                g.headroomBytes = g.capacityBytes - g.totalBytes;
                g.oom = g.headroomBytes < 0;
                e.gpus.push_back(g);
            }
            // Optimizer step: measured per-layer update times, else HBM-bound analytic.
            const double localParams
                = st.layerCount * mk.layerParams + (first ? mk.embeddingParams : 0) + (last ? mk.headParams : 0);
            const double optShare = plan.distributedOptimizer ? 1.0 / dp : 1.0;
            double optMs;
            if (!k.optimizerPrefixMs.empty())
                optMs = (k.optimizerPrefixMs[st.firstLayer + st.layerCount] - k.optimizerPrefixMs[st.firstLayer]
                         + (first ? k.embeddingOptimizerMs : 0) + (last ? k.headOptimizerMs : 0))
                    * optShare;
            else
                optMs = localParams * optShare * k.optimizerMsPerParam;
            worstOpt = std::max(worstOpt, optMs);
        }
        // DP gradient synchronisation over the bottleneck link of the replica set (section 5).
        if (dp > 1) {
            const Replica &r0 = st.replicas.front();
            const MemoryKernel mk = makeMemoryKernel(model, r0.tp, r0.microBatch, plan.sequenceParallel, p, options);
            const double psi
                = st.layerCount * mk.layerParams + (first ? mk.embeddingParams : 0) + (last ? mk.headParams : 0);
            const double gradBytes = psi * options.gradReduceBytesPerParam;
            const std::vector<Link> links = linksAmong(stageNodes, nodes, cluster);
            if (plan.distributedOptimizer)
                se.dpSyncMs = worstCollectiveMs(links, dp, gradBytes, &allGatherMs)
                    + worstCollectiveMs(links, dp, psi * 2.0, &allGatherMs);
            else
                se.dpSyncMs = worstCollectiveMs(links, dp, gradBytes, &allReduceMs);
        }
        se.optimizerMs = worstOpt;
        maxStep = std::max(maxStep, se.stepMs);
        sumStep += se.stepMs;
        // P2P to the next stage: one activation of b*s*h*2 bytes (/t with SP) over the slowest
        // link between the two stages' nodes.
        if (!last) {
            const Stage &nx = plan.stages[static_cast<size_t>(i) + 1];
            int maxMb = 0, minTp = 1 << 20;
            for (const Replica &r : st.replicas) {
                maxMb = std::max(maxMb, r.microBatch);
                minTp = std::min(minTp, r.tp);
            }
            const double bytes
                = static_cast<double>(maxMb) * s.seqLength * s.hidden * 2.0 / (plan.sequenceParallel ? minTp : 1);
            std::vector<int> nextNodes;
            for (const Replica &r : nx.replicas)
                nextNodes.push_back(nodeByName.at(r.node));
            const double worst = worstTransferMs(linksBetween(stageNodes, nextNodes, nodes, cluster), bytes);
            se.p2pMs = worst;
            sumP2p += worst;
            maxP2p = std::max(maxP2p, worst);
        }
    }
    // Section 5, heterogeneous 1F1B: (m-1) max_i step_i + sum_i step_i + fill/drain sends
    // (forward and backward, 2 per boundary). A link slower than the slowest stage bounds the
    // steady state instead.
    e.pipelineMs = (m - 1) * std::max(maxStep, maxP2p) + sumStep + 2.0 * sumP2p;
    for (StageEstimate &se : e.stages) {
        se.bubbleMs = e.pipelineMs - m * se.stepMs;
        e.dpSyncMs = std::max(e.dpSyncMs, se.dpSyncMs);
        e.optimizerMs = std::max(e.optimizerMs, se.optimizerMs);
    }
    e.iterationTimeMs = e.pipelineMs + e.dpSyncMs + e.optimizerMs;

    double sum = 0;
    for (const GpuMemory &g : e.gpus) {
        const double u = g.utilisation();
        e.peakUtilisation = std::max(e.peakUtilisation, u);
        e.peakBytes = std::max(e.peakBytes, g.totalBytes);
        e.oom = e.oom || g.oom;
        sum += u;
    }
    const double n = static_cast<double>(e.gpus.size());
    if (n > 0) {
        const double mean = sum / n;
        double var = 0;
        for (const GpuMemory &g : e.gpus)
            var += (g.utilisation() - mean) * (g.utilisation() - mean);
        e.imbalance = mean > 0 ? std::sqrt(var / n) / mean : 0;
    }
    return e;
}

} // namespace memx
