// Metis (Um, Oh, Kang, Lee, Kim, Kim, Kim, Muzzammil, Jeon, USENIX ATC'24), re-implemented from
// the published method as ../shared/reference/baselines.md (section 2) describes it; none of
// Metis' code is used (CC BY-NC 4.0).
//
// Refusal: Metis' device groups are powers of two, so a cluster whose GPU total is not a power of
// two has no group shape (the published planner crashes in InterStagePlanGenerator at 20 GPUs):
// no plan, and the refusal says so. Nothing is silently fixed.
//
// Search space:
// - Node sequence: every order of the cluster's device types along the pipeline; the ranks are
//   the GPUs of the first type's nodes (node order), then the second type's, and so on.
// - Stages 1 .. min(GPUs, layers); per stage count every device-group shape: powers of two summing
//   to the GPUs, none below kMetisVariance x N / stages ("Key idea 1"), and each shape's distinct
//   orders along the pipeline, at most kMaxGroupOrders of them ("Key idea 2" caps the
//   permutations; Metis merges equal smallest groups, here the orders past the cap are dropped,
//   with a note). Group k takes the next `size` ranks.
// - Micro-batches B: every divisor of the global batch with at least one sequence per replica;
//   a stage carries gbs / B sequences per micro-batch step.
// - Per stage (dp, tp): starting from (group size, 1), Metis' intra-stage generator repeatedly
//   halves dp and doubles tp on the stage with the least memory headroom ("prefer DP over TP");
//   every step is a candidate (those that do not fit are costed out by the memory check; a stage
//   with more replicas than the micro-batch has sequences takes the step first). A
//   replica is tp consecutive ranks and must lie in one node (MemX runs TP inside a node); tp must
//   divide the heads and KV groups. A step that cannot be expressed ends the walk.
// - Per-replica batch (DataLoadBalancer): in a stage the gbs / B sequences are split over the
//   replicas in proportion to 1 / t(type, tp, bs = 1), largest remainder; replica batches above
//   kMaxReplicaBatch are not profiled (the candidate is dropped, as Metis drops a KeyError).
// - Layer split (LayerComputeBalancer): proportional to each stage's relative compute speed
//   (1 / its slowest replica's per-layer time) through 7 sub-units per layer, rounded back, then a
//   local adjust (one layer at a time to a neighbour while the slowest stage gets faster). If a
//   stage's demand (sum of its layers' profiled memory x kMetisMemoryCoefficient 5.0) exceeds the
//   summed memory of its group, that stage's capacity is cut in proportion and the layers are
//   re-split, up to 3 attempts; still over -> the candidate is dropped.
//
// Cost (HeteroCostEstimator), ms:
//   T = (B - 1) max_s L_s + sum_s L_s + max_s Opt_s + max_s DP_s + sum_s PP_s
//   L_s  = max over the stage's replicas of sum_{l in s} (fwd + bwd)[type, tp, b] (embedding on the
//          first stage, head on the last), the replica batch b decomposed into powers of two and the
//          profiled times of each part summed (Metis' rule for a non-profiled batch)
//   DP_s = 2 (d - 1) / (d BW) x P_s x 2 bytes, P_s the stage's parameters on one TP rank (the
//          profile's per-TP-rank count; Metis' P_s / tp), d its replicas
//   PP_s = mbs x seq x hidden x 2 bytes / BW for every stage but the last, mbs its largest replica
//          batch (the vocab-sized output is never sent: MemX stages end on a transformer layer)
//   Opt_s = the optimizer time of the stage's parameters on one TP rank (its slowest replica):
//          the profile's optimizer ms per layer (Metis scales one profiled optimizer time by
//          2 / tp x layers_s / L; the shared profiles give it per layer already)
//   fb_sync and batch_gen: 0 (the shared profiles have no such figures).
//   BW: the slowest link among the group's nodes (DP) or between the two stages' nodes (PP), each
//   link's nominal bandwidth. Metis' published GPUCluster.get_inter_bandwidth() returns the
//   intra-node bandwidth; this re-implementation keeps that behaviour on purpose (it is the
//   planner as published): a link between two nodes is priced at the slower of the two nodes'
//   intra-node bandwidths, so inter-node links look as fast as NVLink. The pick's notes say so.
// Memory: per GPU, sum over its stage's layers of the profiled layer memory (Metis'
//   layer_memory_total_mb: 16 B / parameter + the layer's activations of one micro-batch at its
//   batch), plus the embedding on the first stage and the head with its logits on the last; no
//   pipeline in-flight factor, no recompute. fits = every GPU's figure <= its capacity; this is
//   also the headroom the dp -> tp walk reads.
// Objective: minimum T among candidates that fit.
//
// Estimating any MemX plan: every replica at its own (type, tp, micro-batch); B =
// plan.microBatches(). Not modelled (Metis models none): recomputation (costed and sized as
// without), ZeRO / the distributed optimizer / FSDP, sequence and context parallelism,
// interleaving, FP8, gradient-reduction overlap; MoE layers are costed by their profile figures.
#include "memx/evaluation/baseline_metis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace memx {

namespace {

constexpr double kBytesPerValue = 2; // fp16 activations and gradients
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kMaxGroupOrders = 24; // orders of one group shape along the pipeline
constexpr int kMaxReplicaBatch = 64; // replica batches above this are not "profiled"
constexpr int kMemoryAttempts = 3;
constexpr uint64_t kConfigBudget = 100000; // candidates costed at most
constexpr size_t kMaxTypeOrders = 120; // 5 device types

/// Per (device, tp, power-of-two batch): prefix sums of the layer times and the other figures.
struct Profile {
    std::vector<double> prefixMs; ///< prefixMs[l] = sum of fwd + bwd of layers [0, l)
    double embeddingMs = 0, headMs = 0;
    double layerOptMs = 0, embeddingOptMs = 0, headOptMs = 0;
    double layerParams = 0, embeddingParams = 0, headParams = 0;
    double layerActBytes = 0, embeddingActBytes = 0, logitsBytes = 0; ///< per sequence
};

class MetisInputs {
public:
    explicit MetisInputs(const BaselineContext &context)
        : mContext(context)
        , mNodes(static_cast<int>(context.nodes().size()))
    {
        for (int n = 0; n < mNodes; ++n)
            mIntra.push_back(bytesPerMs(context.link(n, n)));
    }
    const BaselineContext &context() const { return mContext; }
    int nodeIndex(const std::string &name) const { return mContext.nodeIndex(name); }
    /// Metis' bandwidth between two nodes: get_inter_bandwidth returns the intra-node figure, so
    /// a pair costs at the slower of the two intra-node bandwidths (bytes per ms).
    double bandwidth(int a, int b) const
    {
        return std::min(mIntra[static_cast<size_t>(a)], mIntra[static_cast<size_t>(b)]);
    }
    const Profile &profile(int device, int tp, int batch) const
    {
        const auto key = std::make_tuple(device, tp, batch);
        auto it = mProfiles.find(key);
        if (it != mProfiles.end())
            return it->second;
        const BaselineLayerCosts &c = mContext.layerCosts(device, tp, batch);
        Profile p;
        p.prefixMs.assign(c.layerForwardMs.size() + 1, 0.0);
        for (size_t l = 0; l < c.layerForwardMs.size(); ++l)
            p.prefixMs[l + 1] = p.prefixMs[l] + c.layerForwardMs[l] + c.layerBackwardMs[l];
        p.embeddingMs = c.embeddingForwardMs + c.embeddingBackwardMs;
        p.headMs = c.headForwardMs + c.headBackwardMs;
        p.layerOptMs = c.layerOptimizerMs;
        p.embeddingOptMs = c.embeddingOptimizerMs;
        p.headOptMs = c.headOptimizerMs;
        p.layerParams = c.layerParams;
        p.embeddingParams = c.embeddingParams;
        p.headParams = c.headParams;
        const double mb = std::max(1, c.microBatch);
        p.layerActBytes = c.layerActivationBytes / mb;
        p.embeddingActBytes = c.embeddingActivationBytes / mb;
        p.logitsBytes = c.logitsBytes / mb;
        return mProfiles.emplace(key, std::move(p)).first->second;
    }
    /// Time of layers [first, first + count) (+ embedding / head) at replica batch b: b split
    /// into powers of two, the profiled time of each part summed.
    double computeMs(int device, int tp, int b, int first, int count, bool isFirst, bool isLast) const
    {
        double t = 0;
        for (int part = 1; part <= b; part <<= 1)
            if (b & part) {
                const Profile &p = profile(device, tp, part);
                const size_t hi = std::min(p.prefixMs.size() - 1, static_cast<size_t>(first + count));
                t += p.prefixMs[hi] - p.prefixMs[static_cast<size_t>(std::max(0, first))];
                t += (isFirst ? p.embeddingMs : 0.0) + (isLast ? p.headMs : 0.0);
            }
        return t;
    }
    /// Profiled memory of one GPU of a replica (Metis' layer_memory_total sums).
    double memoryBytes(int device, int tp, int b, int count, bool isFirst, bool isLast) const
    {
        const Profile &p = profile(device, tp, 1);
        double m = count * (16.0 * p.layerParams + p.layerActBytes * b);
        if (isFirst)
            m += 16.0 * p.embeddingParams + p.embeddingActBytes * b;
        if (isLast)
            m += 16.0 * p.headParams + p.logitsBytes * b;
        return m;
    }
    static double bytesPerMs(const Link &link)
    {
        const double gbps = link.bandwidthGBps > 0 ? link.bandwidthGBps : link.bandwidthAt(1e9);
        return gbps * 1e6;
    }

private:
    const BaselineContext &mContext;
    int mNodes;
    std::vector<double> mIntra;
    mutable std::map<std::tuple<int, int, int>, Profile> mProfiles;
};

/// One replica as the estimator sees it.
struct ReplicaView {
    int device = 0, node = 0, tp = 1, batch = 1;
};

/// A stage: its layers and replicas.
struct StageView {
    int first = 0, count = 0;
    std::vector<ReplicaView> replicas;
};

struct Costed {
    double timeMs = kInf;
    double peakBytes = 0, peakUtilisation = 0;
    bool fits = true;
};

Costed costStages(const MetisInputs &in, const std::vector<StageView> &stages, int B)
{
    const BaselineContext &ctx = in.context();
    const ModelShape &shape = ctx.model().shape;
    const size_t P = stages.size();
    Costed c;
    double maxL = 0, sumL = 0, maxOpt = 0, maxDp = 0, sumPp = 0;
    for (size_t s = 0; s < P; ++s) {
        const StageView &st = stages[s];
        const bool isFirst = s == 0, isLast = s + 1 == P;
        double L = 0, opt = 0, params = 0, dpBw = kInf, ppBw = kInf;
        int maxBatch = 0;
        for (const ReplicaView &r : st.replicas) {
            L = std::max(L, in.computeMs(r.device, r.tp, r.batch, st.first, st.count, isFirst, isLast));
            const Profile &p = in.profile(r.device, r.tp, 1);
            opt = std::max(opt,
                           st.count * p.layerOptMs + (isFirst ? p.embeddingOptMs : 0.0) + (isLast ? p.headOptMs : 0.0));
            params = std::max(
                params, st.count * p.layerParams + (isFirst ? p.embeddingParams : 0.0) + (isLast ? p.headParams : 0.0));
            maxBatch = std::max(maxBatch, r.batch);
            for (const ReplicaView &o : st.replicas)
                dpBw = std::min(dpBw, in.bandwidth(r.node, o.node));
            if (!isLast)
                for (const ReplicaView &o : stages[s + 1].replicas)
                    ppBw = std::min(ppBw, in.bandwidth(r.node, o.node));
            const double mem = in.memoryBytes(r.device, r.tp, r.batch, st.count, isFirst, isLast);
            const double cap = ctx.memoryBytes(r.device);
            c.peakBytes = std::max(c.peakBytes, mem);
            c.peakUtilisation = std::max(c.peakUtilisation, cap > 0 ? mem / cap : kInf);
            c.fits = c.fits && mem <= cap;
        }
        const double d = static_cast<double>(st.replicas.size());
        const double dp = d > 1 ? 2.0 * (d - 1) / (d * dpBw) * params * kBytesPerValue : 0.0;
        const double pp = isLast ? 0.0 : double(maxBatch) * shape.seqLength * shape.hidden * kBytesPerValue / ppBw;
        maxL = std::max(maxL, L);
        sumL += L;
        maxOpt = std::max(maxOpt, opt);
        maxDp = std::max(maxDp, dp);
        sumPp += pp;
    }
    c.timeMs = (B - 1) * maxL + sumL + maxOpt + maxDp + sumPp;
    return c;
}

/// One (type order, group order, B) point and its walk state.
struct Point {
    std::vector<std::pair<int, int>> ranks; ///< (node, gpu) in the type order
    std::vector<int> groups; ///< group size of every stage
    int B = 1;
};

/// What Metis searches on the context's cluster and keeps of it.
class MetisSearch {
public:
    MetisSearch(const BaselineContext &context, size_t topN, const ProgressFn &progress)
        : mIn(context)
        , mContext(context)
        , mTopN(std::max<size_t>(1, topN))
        , mProgress(progress)
    {
    }
    BaselinePick run();

private:
    bool walk(const Point &pt);
    bool buildStages(const Point &pt, const std::vector<int> &tps, std::vector<StageView> &out) const;
    bool splitLayers(std::vector<StageView> &stages) const;
    bool balanceBatches(std::vector<StageView> &stages, int stageBatch) const;
    int leastHeadroom(const std::vector<StageView> &stages) const;
    void offer(const std::vector<StageView> &stages, int B);
    BaselinePick finish(BaselinePick &pick);

    MetisInputs mIn;
    const BaselineContext &mContext;
    size_t mTopN;
    const ProgressFn &mProgress;
    std::vector<std::pair<double, Plan>> mTop;
    uint64_t mCosted = 0;
    uint64_t mMemoryDropped = 0, mUnprofiled = 0, mUnfit = 0, mInexpressible = 0;
    bool mOrdersCapped = false, mBudgetHit = false, mTypesCapped = false;
};

bool tpAllowed(const Model &model, int tp)
{
    const ModelShape &s = model.shape;
    return tp >= 1 && s.heads % tp == 0 && (s.kvGroups <= 0 || s.kvGroups % tp == 0);
}

bool MetisSearch::buildStages(const Point &pt, const std::vector<int> &tps, std::vector<StageView> &out) const
{
    const std::vector<Node> &nodes = mContext.nodes();
    out.assign(pt.groups.size(), StageView {});
    size_t offset = 0;
    for (size_t s = 0; s < pt.groups.size(); ++s) {
        const int tp = tps[s], g = pt.groups[s];
        if (!tpAllowed(mContext.model(), tp) || g % tp != 0)
            return false;
        for (int r = 0; r < g / tp; ++r) {
            const auto [node, gpu] = pt.ranks[offset];
            for (int k = 1; k < tp; ++k)
                if (pt.ranks[offset + static_cast<size_t>(k)].first != node)
                    return false; // a TP group would span two nodes
            out[s].replicas.push_back({nodes[static_cast<size_t>(node)].device, node, tp, 1});
            offset += static_cast<size_t>(tp);
            (void)gpu;
        }
    }
    return true;
}

bool MetisSearch::balanceBatches(std::vector<StageView> &stages, int stageBatch) const
{
    const int L = mContext.model().shape.layers;
    for (StageView &st : stages) {
        std::vector<double> w;
        for (const ReplicaView &r : st.replicas) {
            const double t = mIn.computeMs(r.device, r.tp, 1, 0, L, false, false);
            w.push_back(t > 0 ? 1.0 / t : 0.0);
        }
        const std::vector<int> b = metisBalanceBatch(stageBatch, w);
        if (b.empty())
            return false;
        for (size_t k = 0; k < b.size(); ++k) {
            if (b[k] > kMaxReplicaBatch)
                return false;
            st.replicas[k].batch = b[k];
        }
    }
    return true;
}

bool MetisSearch::splitLayers(std::vector<StageView> &stages) const
{
    const int L = mContext.model().shape.layers;
    const size_t P = stages.size();
    std::vector<double> capacity(P);
    for (size_t s = 0; s < P; ++s) {
        double perLayer = 0;
        for (const ReplicaView &r : stages[s].replicas)
            perLayer = std::max(perLayer, mIn.computeMs(r.device, r.tp, r.batch, 0, L, false, false) / L);
        capacity[s] = perLayer > 0 ? 1.0 / perLayer : 0.0;
    }
    auto stageMs = [&](const std::vector<int> &counts, size_t s, int first) {
        double t = 0;
        for (const ReplicaView &r : stages[s].replicas)
            t = std::max(t, mIn.computeMs(r.device, r.tp, r.batch, first, counts[s], s == 0, s + 1 == P));
        return t;
    };
    for (int attempt = 0; attempt <= kMemoryAttempts; ++attempt) {
        std::vector<int> counts = metisProportionalSplit(L, capacity);
        if (counts.empty())
            return false;
        // Local adjust: move one layer from the slowest stage to a neighbour while that helps.
        for (int step = 0; step < L; ++step) {
            std::vector<double> t(P);
            int first = 0;
            for (size_t s = 0; s < P; ++s) {
                t[s] = stageMs(counts, s, first);
                first += counts[s];
            }
            const size_t worst = static_cast<size_t>(std::max_element(t.begin(), t.end()) - t.begin());
            if (counts[worst] < 2)
                break;
            bool moved = false;
            for (size_t to : {worst - 1, worst + 1}) {
                if (to >= P)
                    continue;
                std::vector<int> c2 = counts;
                --c2[worst];
                ++c2[to];
                double m2 = 0;
                int f2 = 0;
                for (size_t s = 0; s < P; ++s) {
                    m2 = std::max(m2, stageMs(c2, s, f2));
                    f2 += c2[s];
                }
                if (m2 < t[worst] - 1e-12) {
                    counts = std::move(c2);
                    moved = true;
                    break;
                }
            }
            if (!moved)
                break;
        }
        // Memory check: demand x 5 against the group's summed memory.
        bool over = false;
        int first = 0;
        for (size_t s = 0; s < P; ++s) {
            stages[s].first = first;
            stages[s].count = counts[s];
            first += counts[s];
            double demand = 0, groupMemory = 0;
            for (const ReplicaView &r : stages[s].replicas) {
                demand = std::max(demand, mIn.memoryBytes(r.device, r.tp, r.batch, counts[s], s == 0, s + 1 == P));
                groupMemory += mContext.memoryBytes(r.device) * r.tp;
            }
            demand *= kMetisMemoryCoefficient;
            if (demand > groupMemory) {
                over = true;
                capacity[s] *= groupMemory / demand;
            }
        }
        if (!over)
            return true;
    }
    return false;
}

int MetisSearch::leastHeadroom(const std::vector<StageView> &stages) const
{
    int worst = -1;
    double least = kInf;
    const size_t P = stages.size();
    for (size_t s = 0; s < P; ++s)
        for (const ReplicaView &r : stages[s].replicas) {
            const double head = mContext.memoryBytes(r.device)
                - mIn.memoryBytes(r.device, r.tp, r.batch, stages[s].count, s == 0, s + 1 == P);
            if (head < least) {
                least = head;
                worst = static_cast<int>(s);
            }
        }
    return worst;
}

void MetisSearch::offer(const std::vector<StageView> &stages, int B)
{
    const Costed c = costStages(mIn, stages, B);
    ++mCosted;
    if (!c.fits) {
        ++mUnfit;
        return;
    }
    if (!std::isfinite(c.timeMs) || (mTop.size() >= mTopN && c.timeMs >= mTop.back().first))
        return;
    Plan plan;
    plan.globalBatch = mContext.globalBatch();
    std::map<int, int> used;
    for (const StageView &st : stages) {
        Stage s;
        s.firstLayer = st.first;
        s.layerCount = st.count;
        for (const ReplicaView &r : st.replicas) {
            Replica rep;
            rep.node = mContext.nodes()[static_cast<size_t>(r.node)].name;
            rep.tp = r.tp;
            rep.microBatch = r.batch;
            for (int g = 0; g < r.tp; ++g)
                rep.gpus.push_back(used[r.node]++);
            s.replicas.push_back(std::move(rep));
        }
        plan.stages.push_back(std::move(s));
    }
    for (const auto &[t, p] : mTop)
        if (p == plan)
            return;
    mTop.emplace_back(c.timeMs, std::move(plan));
    std::stable_sort(mTop.begin(), mTop.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    if (mTop.size() > mTopN)
        mTop.pop_back();
}

/// Metis' intra-stage walk from (group, 1): every step costed. False when the budget is spent.
bool MetisSearch::walk(const Point &pt)
{
    const int stageBatch = mContext.globalBatch() / pt.B;
    std::vector<int> tps(pt.groups.size(), 1);
    for (;;) {
        if (mCosted >= kConfigBudget) {
            mBudgetHit = true;
            return false;
        }
        std::vector<StageView> stages;
        if (!buildStages(pt, tps, stages)) {
            ++mInexpressible;
            return true;
        }
        int s = -1;
        size_t widest = 0;
        for (size_t k = 0; k < stages.size(); ++k)
            if (stages[k].replicas.size() > static_cast<size_t>(stageBatch) && stages[k].replicas.size() > widest) {
                widest = stages[k].replicas.size();
                s = static_cast<int>(k);
            }
        if (s < 0) {
            // Every stage has a sequence per replica: balance, split, cost; the walk goes on from
            // the stage with the least headroom whether or not this step passed.
            if (!balanceBatches(stages, stageBatch)) {
                ++mUnprofiled;
                return true;
            }
            if (splitLayers(stages))
                offer(stages, pt.B);
            else
                ++mMemoryDropped;
            s = leastHeadroom(stages);
        }
        if (s < 0 || tps[static_cast<size_t>(s)] * 2 > pt.groups[static_cast<size_t>(s)])
            return true;
        tps[static_cast<size_t>(s)] *= 2;
    }
}

BaselinePick MetisSearch::run()
{
    BaselinePick pick;
    const std::vector<Node> &nodes = mContext.nodes();
    int gpus = 0;
    std::set<int> deviceSet;
    for (const Node &n : nodes) {
        gpus += n.gpus;
        deviceSet.insert(n.device);
    }
    if (!metisPowerOfTwo(gpus)) {
        pick.refusal = "Metis plans only clusters whose GPU total is a power of two (" + std::to_string(gpus)
            + " GPUs): no power-of-two device groups cover them (the published planner fails in "
              "InterStagePlanGenerator)";
        return pick;
    }
    const int L = mContext.model().shape.layers;
    const int gbs = mContext.globalBatch();
    std::vector<int> types(deviceSet.begin(), deviceSet.end());
    std::vector<std::vector<int>> typeOrders;
    do {
        typeOrders.push_back(types);
    } while (typeOrders.size() < kMaxTypeOrders && std::next_permutation(types.begin(), types.end()));
    mTypesCapped = std::next_permutation(types.begin(), types.end()) && typeOrders.size() >= kMaxTypeOrders;
    const int maxStages = std::min(gpus, L);
    const size_t total = typeOrders.size() * static_cast<size_t>(maxStages);
    size_t done = 0;
    bool stop = false;
    for (const std::vector<int> &order : typeOrders) {
        Point pt;
        for (int t : order)
            for (size_t n = 0; n < nodes.size(); ++n)
                if (nodes[n].device == t)
                    for (int g = 0; g < nodes[n].gpus; ++g)
                        pt.ranks.emplace_back(static_cast<int>(n), g);
        for (int stages = 1; stages <= maxStages && !stop; ++stages) {
            for (const std::vector<int> &shape : metisGroupShapes(gpus, stages)) {
                bool capped = false;
                for (const std::vector<int> &groups : metisGroupOrders(shape, kMaxGroupOrders, capped)) {
                    pt.groups = groups;
                    for (int B = 1; B <= gbs && !stop; ++B)
                        if (gbs % B == 0) {
                            pt.B = B;
                            stop = !walk(pt);
                        }
                }
                mOrdersCapped = mOrdersCapped || capped;
            }
            ++done;
            if (mProgress && !mProgress(done, total)) {
                pick.cancelled = true;
                return pick;
            }
        }
        if (stop)
            break;
    }
    return finish(pick);
}

BaselinePick MetisSearch::finish(BaselinePick &pick)
{
    pick.configsExamined = mCosted;
    pick.notes.push_back("Metis prices every link at the slower node's intra-node bandwidth (its published "
                         "GPUCluster.get_inter_bandwidth returns the intra-node figure), kept as published");
    pick.notes.push_back("per-stage (dp, tp) from Metis' greedy walk (halve dp, double tp on the stage with the "
                         "least memory headroom); replicas of a mixed group get batches in proportion to their "
                         "speed (DataLoadBalancer); memory is the profiled per-layer sum, without in-flight "
                         "micro-batches or recompute");
    auto count = [&](uint64_t n, const char *what) {
        if (n > 0)
            pick.notes.push_back(std::to_string(n) + " " + what);
    };
    count(mInexpressible,
          "walk steps ended: a tensor-parallel group would span two nodes or TP does not divide "
          "the heads");
    count(mUnprofiled, "walks ended: a replica batch above 64 sequences has no profile");
    count(mMemoryDropped, "candidates dropped by the x5 layer-memory check after 3 repartitions");
    count(mUnfit, "candidates costed that do not fit in GPU memory");
    if (mOrdersCapped)
        pick.notes.push_back("group orders along the pipeline capped at " + std::to_string(kMaxGroupOrders)
                             + " per shape (Metis' max_permute_len)");
    if (mTypesCapped)
        pick.notes.push_back("device-type orders capped at " + std::to_string(kMaxTypeOrders));
    if (mBudgetHit)
        pick.notes.push_back("search stopped at its budget of " + std::to_string(kConfigBudget) + " costed candidates");
    if (mTop.empty()) {
        pick.refusal = "no Metis candidate fits in GPU memory";
        return pick;
    }
    for (auto &[t, p] : mTop)
        pick.top.push_back(p);
    pick.plan = pick.top.front();
    pick.predicted = metisEstimate(pick.plan, mContext);
    pick.hasPlan = true;
    return pick;
}

} // namespace

bool metisPowerOfTwo(int n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

std::vector<std::vector<int>> metisGroupShapes(int gpus, int stages)
{
    std::vector<std::vector<int>> out;
    if (!metisPowerOfTwo(gpus) || stages < 1 || stages > gpus)
        return out;
    const double minSize = kMetisVariance * gpus / stages;
    std::vector<int> cur;
    // Non-increasing powers of two: `left` GPUs over `k` more groups, none above `maxPart`.
    auto rec = [&](auto &&self, int left, int k, int maxPart) -> void {
        if (k == 0) {
            if (left == 0)
                out.push_back(cur);
            return;
        }
        for (int p = maxPart; p >= 1; p >>= 1) {
            if (p < minSize)
                break;
            if (p * k < left)
                break; // the rest cannot reach `left` with parts <= p
            if (p > left - (k - 1))
                continue;
            cur.push_back(p);
            self(self, left - p, k - 1, p);
            cur.pop_back();
        }
    };
    int top = 1;
    while (top * 2 <= gpus)
        top *= 2;
    rec(rec, gpus, stages, top);
    return out;
}

std::vector<std::vector<int>> metisGroupOrders(const std::vector<int> &shape, size_t cap, bool &capped)
{
    std::vector<std::vector<int>> out;
    std::vector<int> s = shape;
    std::sort(s.begin(), s.end());
    capped = false;
    do {
        if (out.size() >= cap) {
            capped = true;
            break;
        }
        out.push_back(s);
    } while (std::next_permutation(s.begin(), s.end()));
    return out;
}

std::vector<int> metisBalanceBatch(int batch, const std::vector<double> &weights)
{
    const size_t n = weights.size();
    if (n == 0 || batch < static_cast<int>(n))
        return {};
    double sum = 0;
    for (double w : weights) {
        if (!(w > 0) || !std::isfinite(w))
            return {};
        sum += w;
    }
    std::vector<int> out(n);
    std::vector<std::pair<double, size_t>> rest;
    int given = 0;
    for (size_t k = 0; k < n; ++k) {
        const double share = batch * weights[k] / sum;
        out[k] = static_cast<int>(std::floor(share));
        given += out[k];
        rest.emplace_back(share - out[k], k);
    }
    std::stable_sort(rest.begin(), rest.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
    for (size_t k = 0; given < batch; ++k, ++given)
        ++out[rest[k % n].second];
    for (size_t k = 0; k < n; ++k)
        while (out[k] < 1) {
            const size_t big = static_cast<size_t>(std::max_element(out.begin(), out.end()) - out.begin());
            --out[big];
            ++out[k];
        }
    return out;
}

std::vector<int> metisProportionalSplit(int layers, const std::vector<double> &capacity)
{
    const size_t P = capacity.size();
    if (P == 0 || layers < static_cast<int>(P))
        return {};
    double sum = 0;
    for (double c : capacity) {
        if (!(c > 0) || !std::isfinite(c))
            return {};
        sum += c;
    }
    // Sub-units first (largest remainder), then whole layers (nearest).
    const int units = layers * kMetisSubUnits;
    std::vector<int> u(P);
    std::vector<std::pair<double, size_t>> rest;
    int given = 0;
    for (size_t s = 0; s < P; ++s) {
        const double share = units * capacity[s] / sum;
        u[s] = static_cast<int>(std::floor(share));
        given += u[s];
        rest.emplace_back(share - u[s], s);
    }
    std::stable_sort(rest.begin(), rest.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
    for (size_t k = 0; given < units; ++k, ++given)
        ++u[rest[k % P].second];
    std::vector<int> out(P);
    int total = 0;
    for (size_t s = 0; s < P; ++s) {
        out[s] = std::max(1, static_cast<int>(std::lround(static_cast<double>(u[s]) / kMetisSubUnits)));
        total += out[s];
    }
    // Mend the sum: take from / give to the stage whose rounding erred most that way.
    while (total != layers) {
        size_t best = P;
        double err = 0;
        for (size_t s = 0; s < P; ++s) {
            const double e = out[s] - static_cast<double>(u[s]) / kMetisSubUnits; // > 0: too many
            const bool ok = total > layers ? out[s] > 1 : true;
            if (ok && (best == P || (total > layers ? e > err : e < err))) {
                best = s;
                err = e;
            }
        }
        out[best] += total > layers ? -1 : 1;
        total += total > layers ? -1 : 1;
    }
    return out;
}

BaselineEstimate metisEstimate(const Plan &plan, const BaselineContext &context)
{
    BaselineEstimate e;
    e.hasMemory = true;
    if (plan.stages.empty()) {
        e.error = "the plan has no pipeline stages";
        return e;
    }
    const int B = plan.microBatches();
    if (B < 1) {
        e.error = "the global batch is not a whole number of micro-batch steps";
        return e;
    }
    const MetisInputs in(context);
    std::vector<StageView> stages;
    for (const Stage &s : plan.stages) {
        StageView v;
        v.first = s.firstLayer;
        v.count = s.layerCount;
        for (const Replica &r : s.replicas) {
            const int node = in.nodeIndex(r.node);
            if (node < 0 || r.microBatch < 1 || r.tp < 1) {
                e.error = "replica on unknown node '" + r.node + "' or with no micro-batch";
                return e;
            }
            v.replicas.push_back({context.nodes()[static_cast<size_t>(node)].device, node, r.tp, r.microBatch});
        }
        if (v.replicas.empty()) {
            e.error = "a stage has no replicas";
            return e;
        }
        stages.push_back(std::move(v));
    }
    const Costed c = costStages(in, stages, B);
    e.timeMs = c.timeMs;
    e.peakBytes = c.peakBytes;
    e.peakUtilisation = c.peakUtilisation;
    e.fits = c.fits;
    e.ok = std::isfinite(e.timeMs);
    if (!e.ok)
        e.error = "the layer costs or links give a non-finite time";
    return e;
}

BaselinePick metisPlan(const BaselineContext &context, size_t topN, const ProgressFn &progress)
{
    MetisSearch search(context, topN, progress);
    return search.run();
}

} // namespace memx
