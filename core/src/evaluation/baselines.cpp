#include "memx/evaluation/baselines.h"

#include <algorithm>
#include <stdexcept>

namespace memx {

const char *baselineId(Baseline b)
{
    switch (b) {
    case Baseline::Metis:
        return "metis";
    case Baseline::Amp:
        return "amp";
    case Baseline::Sailor:
        return "sailor";
    case Baseline::Galvatron:
        return "galvatron";
    }
    return "?";
}

const char *baselineName(Baseline b)
{
    switch (b) {
    case Baseline::Metis:
        return "Metis";
    case Baseline::Amp:
        return "AMP";
    case Baseline::Sailor:
        return "Sailor";
    case Baseline::Galvatron:
        return "Galvatron";
    }
    return "?";
}

const char *baselineDescription(Baseline b)
{
    switch (b) {
    case Baseline::Metis:
        return "device-type orders, power-of-two device groups, greedy DP->TP walk, compute-proportional "
               "layers with a x5 memory check; profiled layer times, slowest-link DP";
    case Baseline::Amp:
        return "(mp, dp, pp) x micro-batch, DP layer partition, count-weighted device costs, slowest link, "
               "no memory model";
    case Baseline::Sailor:
        return "uniform split (remainder to later stages), per-stage replicas, each with its own type and TP "
               "(bounds: 1.5x speed-up, min TP that fits), 24 B/param memory, throughput";
    case Baseline::Galvatron:
        return "homogeneous TP/DP/recompute per pipeline, memory-balanced pipeline division (BMW), "
               "ZeRO-aware memory with a 20% allocator reserve";
    }
    return "?";
}

BaselineContext::BaselineContext(const Cluster &cluster, const Model &model, int globalBatch,
                                 const ProfileSet *profiles, const CostOptions &cost)
    : mCluster(cluster)
    , mModel(model)
    , mGlobalBatch(globalBatch > 0 ? globalBatch : model.training.globalBatch)
    , mProfiles(profiles)
    , mCost(cost)
    , mNodes(cluster.nodes())
{
    for (size_t n = 0; n < mNodes.size(); ++n) {
        mIndex.emplace(mNodes[n].name, static_cast<int>(n));
        for (int g = 0; g < mNodes[n].gpus; ++g)
            mRanks.emplace_back(static_cast<int>(n), g);
    }
}

const BaselineLayerCosts &BaselineContext::layerCosts(int device, int tp, int microBatch) const
{
    const auto key = std::make_tuple(device, tp, microBatch);
    auto it = mCache.find(key);
    if (it != mCache.end())
        return it->second;
    const GpuSpec &spec = mCluster.devices.at(static_cast<size_t>(device));
    Link intra;
    for (const Node &n : mNodes)
        if (n.device == device) {
            intra = n.intraLink;
            break;
        }
    const LayerKernel k = makeLayerKernel(spec, intra, mModel, tp, microBatch, false, mProfiles, mCost);
    const MemoryKernel m = makeMemoryKernel(mModel, spec, tp, microBatch, false, 1, mProfiles, mCost);
    BaselineLayerCosts c;
    c.tp = tp;
    c.microBatch = microBatch;
    const int L = mModel.shape.layers;
    c.layerForwardMs.resize(static_cast<size_t>(L));
    c.layerBackwardMs.resize(static_cast<size_t>(L));
    for (int l = 0; l < L; ++l) {
        const size_t i = static_cast<size_t>(l);
        c.layerForwardMs[i] = k.forwardPrefixMs[i + 1] - k.forwardPrefixMs[i] + 0.5 * k.tpCommPerLayerMs;
        c.layerBackwardMs[i] = k.backwardPrefixMs[i + 1] - k.backwardPrefixMs[i] + 0.5 * k.tpCommPerLayerMs;
    }
    c.embeddingForwardMs = k.embeddingForwardMs;
    c.embeddingBackwardMs = k.embeddingBackwardMs;
    c.headForwardMs = k.headForwardMs;
    c.headBackwardMs = k.headBackwardMs;
    c.layerParams = m.layerParams;
    c.embeddingParams = m.embeddingParams;
    c.headParams = m.headParams;
    if (!k.optimizerPrefixMs.empty() && L > 0) {
        c.layerOptimizerMs = k.optimizerPrefixMs[static_cast<size_t>(L)] / L;
        c.embeddingOptimizerMs = k.embeddingOptimizerMs;
        c.headOptimizerMs = k.headOptimizerMs;
    } else {
        c.layerOptimizerMs = m.layerParams * k.optimizerMsPerParam;
        c.embeddingOptimizerMs = m.embeddingParams * k.optimizerMsPerParam;
        c.headOptimizerMs = m.headParams * k.optimizerMsPerParam;
    }
    c.layerActivationBytes = m.layerActivationBytes[0];
    c.layerActivationBytesRecompute = m.layerActivationBytes[2];
    c.embeddingActivationBytes = m.embeddingActivationBytes;
    c.logitsBytes = m.logitsBytes;
    c.layerMemoryTotalBytes = 16.0 * m.layerParams + m.layerActivationBytes[0];
    c.measured = k.profiled;
    return mCache.emplace(key, std::move(c)).first->second;
}

const Link &BaselineContext::link(int a, int b) const
{
    const size_t n = mNodes.size();
    if (mLinks.empty() && n > 0) {
        mLinks.resize(n * n);
        for (size_t x = 0; x < n; ++x)
            for (size_t y = 0; y < n; ++y)
                mLinks[x * n + y] = x == y ? mNodes[x].intraLink : mCluster.interNodeLink(mNodes[x], mNodes[y]);
    }
    if (a < 0 || b < 0 || static_cast<size_t>(a) >= n || static_cast<size_t>(b) >= n)
        throw std::out_of_range("BaselineContext::link: no node " + std::to_string(std::max(a, b)));
    return mLinks[static_cast<size_t>(a) * n + static_cast<size_t>(b)];
}

int BaselineContext::nodeIndex(const std::string &name) const
{
    const auto it = mIndex.find(name);
    return it == mIndex.end() ? -1 : it->second;
}

std::vector<int> baselineDivisors(int n)
{
    std::vector<int> out;
    for (int d = 1; d <= n; ++d)
        if (n % d == 0)
            out.push_back(d);
    return out;
}

bool baselineTpGroupsCrossNodes(const std::vector<std::pair<int, int>> &ranks, int tp)
{
    const size_t step = static_cast<size_t>(std::max(1, tp));
    for (size_t first = 0; first + step <= ranks.size(); first += step)
        if (ranks[first].first != ranks[first + step - 1].first)
            return true;
    return false;
}

double BaselineContext::memoryBytes(int device) const
{
    return mCluster.devices.at(static_cast<size_t>(device)).memoryBytes();
}

std::vector<int> BaselineContext::microBatchSizes(int max) const
{
    std::vector<int> out;
    for (int m = 1; m <= max && m <= mGlobalBatch; m *= 2)
        out.push_back(m);
    return out;
}

BaselineEstimate baselineEstimate(Baseline b, const Plan &plan, const BaselineContext &context)
{
    switch (b) {
    case Baseline::Metis:
        return metisEstimate(plan, context);
    case Baseline::Amp:
        return ampEstimate(plan, context);
    case Baseline::Sailor:
        return sailorEstimate(plan, context);
    case Baseline::Galvatron:
        return galvatronEstimate(plan, context);
    }
    return {};
}

BaselinePick baselinePlan(Baseline b, const BaselineContext &context, size_t topN, const ProgressFn &progress)
{
    switch (b) {
    case Baseline::Metis:
        return metisPlan(context, topN, progress);
    case Baseline::Amp:
        return ampPlan(context, topN, progress);
    case Baseline::Sailor:
        return sailorPlan(context, topN, progress);
    case Baseline::Galvatron:
        return galvatronPlan(context, topN, progress);
    }
    return {};
}

} // namespace memx
