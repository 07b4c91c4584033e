// Sailor (Strati, Zhang, Manos, Sanchez Periz, Hu, Chen, Buzcu, Han, Delgado, Klimovic, SOSP'25,
// arXiv 2504.17096), re-implemented from the published method as ../shared/reference/baselines.md
// (section 3) describes it; none of Sailor's code is used.
//
// Search space (planner.cpp / planner_utils.cpp as the paper describes them):
// - PP degree 1 .. min(layers, 16, GPUs). Sailor goes up to L; 16 caps the work (a 32-layer model
//   at pp > 16 has stages of one or two layers, which Sailor's own runs never pick: its best plans
//   in the reference trace have pp <= 7). The cap is reported in a note when it cuts the space.
// - Uniform layer split (get_stages): L / pp per stage, the extra layers on the later stages.
// - One global micro-batch size per plan from the profiled set, context.microBatchSizes(8).
// - DP degree (replicas per stage, the same on every stage: with one micro-batch size that is how
//   every MemX stage carries the same samples per step): heuristic H2 keeps only values that change
//   the number of micro-batches B = gbs / (dp x mbs); with MemX's whole micro-batches that is every
//   dp dividing gbs / mbs (each gives a different B).
// - Per stage a list of DP replicas, each with its own GPU type and TP degree (heterogeneous
//   replicas inside one stage), each inside one node. TP of a type for a stage (heuristic H1) lies
//   in [min TP, max TP]: min TP = the smallest TP with which the stage fits (check_stage_fits),
//   max TP = doubling from 1 while each doubling speeds the stage up by >= SPEEDUP_THRESHOLD 1.5.
// - Resource allocation is co-optimised: a plan may leave GPUs idle (validatePlan accepts that).
//
// Search (simplified from Sailor's DP over (mbs, pp, start_layer, data_par, resources)): for each
// (mbs, pp, dp) and each bound tau on a replica's stage compute time (every distinct comp value of
// the allowed (type, TP) options), every replica takes, per type, the smallest allowed TP whose
// compute is <= tau; replicas are packed stage by stage, greedily, each to the first node with
// room by one of these orders: fewest GPUs, then the slowest (one pass) or the fastest (another)
// type that meets tau; or (one pass per order of the device types, up to 5 types) the types in
// that order along the pipeline. Ties go to the node the previous replica used (so a stage's
// replicas share a node and its all-reduce stays intra-node), then to node order. Each distinct
// packing is a candidate, costed with the full model below. Sailor's exact DP over the remaining
// resources (and its zone/region and cost-objective dimensions) is not re-implemented: one cluster,
// one zone, objective = throughput.
//
// Cost (runtime simulator), ms:
//   T_pp   = (B - 1) max_s (comp_s + comm_s) + sum_s comm_s + sum_s comp_s + max_s update_s
//   comp_s = max over the stage's replicas of sum_{l in s} (fwd + bwd)[gpu, tp, mb][l]
//            (layerCosts: embedding on stage 0, head on the last)
//   comm_s = activation send to s + 1 (not on the last stage) + gradient send to s - 1 (not on
//            the first), each mb x seq x hidden x 2 bytes (bf16, mb = the largest replica
//            micro-batch of the two stages) over the bottleneck sender-receiver pair: the slowest
//            Link::transferSeconds (latency + bytes / bandwidthAt(bytes), the measured curve when
//            the link has one: Sailor's fitted bandwidth-vs-size idea) over the node pairs of the two
//            stages (the intra-node link when both replicas share a node)
//   update_s = the stage's optimizer ms on one TP rank (layerCosts optimizer ms; max over replicas)
//   T_sync = max over stages of a ring all-reduce of the stage's gradients: over buckets of 5e8
//            parameters (DeepSpeed's default bucket), each 2 (d - 1) x t(bucket bytes / d),
//            t from the bottleneck pair of the stage's replica nodes, d = the stage's replicas.
//            Gradients are 4 bytes per parameter (fp32, as Sailor's 24 B/param memory breakdown
//            counts them); the shard is the stage's parameters at its smallest replica TP (the
//            largest per-rank shard). The tp rings of a stage run in parallel without sharing a link.
//   T_iter = T_pp + T_sync (a MemX plan is one of Sailor's pipelines: its max over pipelines, and
//            the inter-pipeline sync term, have one member and vanish).
// Memory (check_stage_fits): per replica GPU 24 B x P_stage + act_mem x mb x (pp - stage index)
//   + 2 GiB (TP 1) or 3 GiB (TP > 1); see sailorReplicaMemoryBytes. peakBytes = the largest over
//   the plan's GPUs, peakUtilisation = that / that GPU's capacity, fits = every GPU fits.
// Objective: maximum throughput gbs / T_iter (plans using fewer GPUs compete on throughput too).
//
// Estimating any MemX plan: every replica is costed at its own (type, TP, micro-batch) (Sailor
// has one global micro-batch; a plan with mixed ones is costed replica by replica). Not modelled,
// as Sailor models none of them: activation recomputation (costed and sized as without), ZeRO /
// the distributed optimizer / FSDP (24 B/param whatever the sharding), sequence parallelism,
// context parallelism (a replica is costed as TP tp on the whole sequence), interleaving (plain
// 1F1B), FP8, overlap of the gradient reduction with backward (T_sync is added in full); MoE
// layers are costed by their layerCosts figures like dense ones.
#include "memx/evaluation/baseline_sailor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace memx {

namespace {

constexpr double kSpeedupThreshold = 1.5; // SPEEDUP_THRESHOLD of heuristic H1
constexpr double kBytesPerParam = 24; // Adam 8 + fp32 copy 4 + grads 4 + comm buffers 4 + DeepSpeed copies 4
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kFrameworkTp1 = 2 * kGiB, kFrameworkTpN = 3 * kGiB; // planner's constants
constexpr double kActivationBytes = 2; // bf16 activations / activation gradients between stages
constexpr double kGradientBytes = 4; // fp32 gradients in the all-reduce (see the header comment)
constexpr double kBucketParams = 5e8; // DeepSpeed's all-reduce bucket
constexpr int kMaxPp = 16;
constexpr size_t kMaxTypeOrders = 5; // device types whose every order along the pipeline is tried
constexpr uint64_t kConfigBudget = 1000000; // candidates costed at most
constexpr uint64_t kProgressEvery = 256;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The cluster-wide inputs: node indices by name and every pair's link (the context's).
class SailorInputs {
public:
    explicit SailorInputs(const BaselineContext &context)
        : mContext(context)
    {
    }
    int nodeIndex(const std::string &name) const { return mContext.nodeIndex(name); }
    /// ms to move `bytes` once from node a to node b (the intra-node link when a == b).
    double transferMs(int a, int b, double bytes) const { return 1e3 * mContext.link(a, b).transferSeconds(bytes); }

private:
    const BaselineContext &mContext;
};

/// One stage of a plan as Sailor's simulator sees it.
struct StageView {
    double compMs = 0, updateMs = 0;
    std::vector<int> nodes; ///< distinct nodes of its replicas
    std::vector<int> sharedNodes; ///< nodes holding two or more of its replicas
    int maxMicroBatch = 0;
    int minTp = 0;
    int dp = 0;
    double shardParams = 0; ///< parameters on one TP rank at minTp
};

/// The slowest transfer of `bytes` between a node of `from` and a node of `to` (ms).
double bottleneckMs(const SailorInputs &in, const std::vector<int> &from, const std::vector<int> &to, double bytes)
{
    double worst = 0;
    for (int a : from)
        for (int b : to)
            worst = std::max(worst, in.transferMs(a, b, bytes));
    return worst;
}

/// The slowest ring hop of a stage's replicas for a message of `bytes` (ms).
double ringHopMs(const SailorInputs &in, const StageView &s, double bytes)
{
    double worst = 0;
    for (int a : s.nodes)
        for (int b : s.nodes)
            if (a != b)
                worst = std::max(worst, in.transferMs(a, b, bytes));
    for (int a : s.sharedNodes)
        worst = std::max(worst, in.transferMs(a, a, bytes));
    return worst;
}

/// Ring all-reduce of the stage's gradients over buckets of 5e8 parameters (ms).
double syncMs(const SailorInputs &in, const StageView &s)
{
    const int d = s.dp;
    if (d < 2 || !(s.shardParams > 0))
        return 0;
    const double full = std::floor(s.shardParams / kBucketParams);
    const double rest = s.shardParams - full * kBucketParams;
    double ms = 0;
    if (full > 0)
        ms += full * 2.0 * (d - 1) * ringHopMs(in, s, kBucketParams * kGradientBytes / d);
    if (rest > 0)
        ms += 2.0 * (d - 1) * ringHopMs(in, s, rest * kGradientBytes / d);
    return ms;
}

/// Parameters of layers [first, first + count) on one TP rank, with the embedding / head.
double stageParams(const BaselineLayerCosts &c, int count, bool isFirst, bool isLast)
{
    return count * c.layerParams + (isFirst ? c.embeddingParams : 0.0) + (isLast ? c.headParams : 0.0);
}

/// The stage views of `plan`, or an error when Sailor's simulator cannot cost it; tracks the
/// memory of the fullest GPU in `e`.
std::vector<StageView> stageViews(const SailorInputs &in, const Plan &plan, const BaselineContext &context,
                                  BaselineEstimate &e)
{
    const int pp = plan.pp(), layers = context.model().shape.layers;
    std::vector<StageView> out;
    int next = 0;
    double peak = -1;
    for (int k = 0; k < pp; ++k) {
        const Stage &st = plan.stages[static_cast<size_t>(k)];
        if (st.firstLayer != next || st.layerCount < 1 || st.replicas.empty()) {
            e.error = "stage " + std::to_string(k) + " does not continue the layer sequence with at least one layer "
                + "and one replica";
            return {};
        }
        next += st.layerCount;
        const bool isFirst = k == 0, isLast = k == pp - 1;
        StageView v;
        v.dp = st.dp();
        v.minTp = std::numeric_limits<int>::max();
        for (const Replica &r : st.replicas) {
            const int n = in.nodeIndex(r.node);
            if (n < 0 || r.tp < 1 || r.microBatch < 1) {
                e.error = "stage " + std::to_string(k) + " has a replica on an unknown node or without a positive "
                    + "TP and micro-batch";
                return {};
            }
            const int device = context.nodes()[static_cast<size_t>(n)].device;
            const BaselineLayerCosts &c = context.layerCosts(device, r.tp, r.microBatch);
            v.compMs = std::max(v.compMs, sailorReplicaComputeMs(c, st.firstLayer, st.layerCount, isFirst, isLast));
            v.updateMs = std::max(v.updateMs,
                                  st.layerCount * c.layerOptimizerMs + (isFirst ? c.embeddingOptimizerMs : 0.0)
                                      + (isLast ? c.headOptimizerMs : 0.0));
            if (std::find(v.nodes.begin(), v.nodes.end(), n) == v.nodes.end())
                v.nodes.push_back(n);
            else if (std::find(v.sharedNodes.begin(), v.sharedNodes.end(), n) == v.sharedNodes.end())
                v.sharedNodes.push_back(n);
            v.maxMicroBatch = std::max(v.maxMicroBatch, r.microBatch);
            if (r.tp < v.minTp) {
                v.minTp = r.tp;
                v.shardParams = stageParams(c, st.layerCount, isFirst, isLast);
            }
            const double mem
                = sailorReplicaMemoryBytes(context, device, r.tp, r.microBatch, st.firstLayer, st.layerCount, k, pp);
            const double capacity = context.memoryBytes(device);
            if (mem > capacity)
                e.fits = false;
            if (mem > peak) {
                peak = mem;
                e.peakBytes = mem;
                e.peakUtilisation = capacity > 0 ? mem / capacity : kInf;
            }
        }
        out.push_back(std::move(v));
    }
    if (next != layers) {
        e.error = "the stages cover " + std::to_string(next) + " of the model's " + std::to_string(layers) + " layers";
        return {};
    }
    return out;
}

/// Sailor's estimate of `plan` with the inputs read once.
BaselineEstimate estimateWith(const SailorInputs &in, const Plan &plan, const BaselineContext &context)
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
    const std::vector<StageView> stages = stageViews(in, plan, context, e);
    if (stages.empty())
        return e;
    const ModelShape &shape = context.model().shape;
    const size_t P = stages.size();
    // Boundary b sits between stages b and b + 1: the activation goes forward over it, the
    // gradient of that activation comes back, both the same size.
    std::vector<double> boundaryMs(P > 0 ? P - 1 : 0, 0.0);
    for (size_t b = 0; b + 1 < P; ++b) {
        const int mb = std::max(stages[b].maxMicroBatch, stages[b + 1].maxMicroBatch);
        const double bytes = static_cast<double>(mb) * shape.seqLength * shape.hidden * kActivationBytes;
        boundaryMs[b] = bottleneckMs(in, stages[b].nodes, stages[b + 1].nodes, bytes);
    }
    double maxStep = 0, sumComm = 0, sumComp = 0, maxUpdate = 0, maxSync = 0;
    for (size_t s = 0; s < P; ++s) {
        const double comm = (s + 1 < P ? boundaryMs[s] : 0.0) + (s > 0 ? boundaryMs[s - 1] : 0.0);
        maxStep = std::max(maxStep, stages[s].compMs + comm);
        sumComm += comm;
        sumComp += stages[s].compMs;
        maxUpdate = std::max(maxUpdate, stages[s].updateMs);
        maxSync = std::max(maxSync, syncMs(in, stages[s]));
    }
    e.timeMs = (B - 1) * maxStep + sumComm + sumComp + maxUpdate + maxSync;
    e.ok = std::isfinite(e.timeMs);
    if (!e.ok)
        e.error = "the layer costs or links give a non-finite time";
    return e;
}

/// The allowed (TP, compute ms) options of every device type for one stage, ascending TP.
struct StageOptions {
    std::map<int, std::vector<std::pair<int, double>>> byDevice;
};

/// The options of every stage of a uniform `counts` split at micro-batch `mbs`.
std::vector<StageOptions> stageOptions(const BaselineContext &context, const std::set<int> &devices, int mbs,
                                       const std::vector<int> &counts)
{
    const int pp = static_cast<int>(counts.size());
    std::vector<StageOptions> out(counts.size());
    int first = 0;
    for (int k = 0; k < pp; ++k) {
        const int count = counts[static_cast<size_t>(k)];
        for (int device : devices) {
            const SailorTpBounds b = sailorTpBounds(context, device, mbs, first, count, k, pp);
            std::vector<std::pair<int, double>> opts;
            for (int tp : b.allowed)
                opts.emplace_back(
                    tp, sailorReplicaComputeMs(context.layerCosts(device, tp, mbs), first, count, k == 0, k == pp - 1));
            if (!opts.empty())
                out[static_cast<size_t>(k)].byDevice.emplace(device, std::move(opts));
        }
        first += count;
    }
    return out;
}

/// Every distinct compute time of the options: the bounds tau the packing is tried with.
std::vector<double> thresholds(const std::vector<StageOptions> &stages)
{
    std::vector<double> out;
    for (const StageOptions &s : stages)
        for (const auto &[device, opts] : s.byDevice)
            for (const auto &[tp, ms] : opts)
                out.push_back(ms);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

/// How a packing ranks the nodes a replica may go to (after its smallest TP within the bound).
struct Order {
    enum Kind { SlowFirst, FastFirst, TypeSequence };
    Kind kind = SlowFirst;
    /// TypeSequence: the rank of every device index (lower first), e.g. fill the H100s, then the
    /// A100s, then the MI250Xs along the pipeline.
    std::map<int, int> rank;
};

/// One packing of replicas onto the cluster's GPUs.
struct Packing {
    const BaselineContext &context;
    const std::vector<StageOptions> &options;
    const std::vector<int> &counts;
    int mbs = 1, dp = 1;
    const Order &order;
};

/// The rank of node n for a replica with option o: SlowFirst / FastFirst take the fewest GPUs,
/// then the slowest / fastest type that meets the bound; TypeSequence the type's place in the order.
std::pair<int, double> nodeRank(const Order &order, int device, const std::pair<int, double> &o)
{
    switch (order.kind) {
    case Order::SlowFirst:
        return {o.first, -o.second};
    case Order::FastFirst:
        return {o.first, o.second};
    case Order::TypeSequence:
        break;
    }
    return {order.rank.at(device), 0.0};
}

/// The smallest allowed TP of `opts` whose compute is within tau (nullptr when none).
const std::pair<int, double> *choiceWithin(const std::vector<std::pair<int, double>> &opts, double tau)
{
    for (const auto &o : opts)
        if (o.second <= tau * (1 + 1e-12))
            return &o;
    return nullptr;
}

/// Packs dp replicas per stage with every replica's compute within tau (see the header comment);
/// false when the GPUs run out.
bool pack(const Packing &p, double tau, Plan &plan)
{
    const std::vector<Node> &nodes = p.context.nodes();
    std::vector<int> used(nodes.size(), 0);
    int cursor = -1, first = 0;
    plan.stages.clear();
    for (size_t k = 0; k < p.counts.size(); ++k) {
        Stage st;
        st.firstLayer = first;
        st.layerCount = p.counts[k];
        first += st.layerCount;
        for (int r = 0; r < p.dp; ++r) {
            int best = -1;
            std::tuple<int, double, bool, size_t, int> bestKey;
            for (size_t n = 0; n < nodes.size(); ++n) {
                const auto it = p.options[k].byDevice.find(nodes[n].device);
                if (it == p.options[k].byDevice.end())
                    continue;
                const std::pair<int, double> *o = choiceWithin(it->second, tau);
                if (!o || used[n] + o->first > nodes[n].gpus)
                    continue;
                const auto [primary, secondary] = nodeRank(p.order, nodes[n].device, *o);
                const auto key = std::make_tuple(primary, secondary, static_cast<int>(n) != cursor, n, o->first);
                if (best < 0 || key < bestKey) {
                    best = static_cast<int>(n);
                    bestKey = key;
                }
            }
            if (best < 0)
                return false;
            Replica rep;
            rep.node = nodes[static_cast<size_t>(best)].name;
            rep.tp = std::get<4>(bestKey);
            rep.microBatch = p.mbs;
            for (int g = 0; g < rep.tp; ++g)
                rep.gpus.push_back(used[static_cast<size_t>(best)] + g);
            used[static_cast<size_t>(best)] += rep.tp;
            cursor = best;
            st.replicas.push_back(std::move(rep));
        }
        plan.stages.push_back(std::move(st));
    }
    return true;
}

/// A search point: micro-batch size, pipeline degree, replicas per stage.
struct Triple {
    int mbs = 1, pp = 1, dp = 1;
};

/// Sailor's search state: the top plans by throughput and what the search skipped.
class SailorSearch {
public:
    SailorSearch(const BaselineContext &context, size_t topN, const ProgressFn &progress)
        : mContext(context)
        , mInputs(context)
        , mTopN(std::max<size_t>(1, topN))
        , mProgress(progress)
    {
        for (const Node &n : context.nodes()) {
            mDevices.insert(n.device);
            mGpus += n.gpus;
        }
        mOrders.push_back({Order::SlowFirst, {}});
        mOrders.push_back({Order::FastFirst, {}});
        // Every order of the device types along the pipeline (up to 5 types: 120 orders).
        std::vector<int> types(mDevices.begin(), mDevices.end());
        mTypeOrders = types.size() > 1 && types.size() <= kMaxTypeOrders;
        if (mTypeOrders)
            do {
                Order order {Order::TypeSequence, {}};
                for (size_t i = 0; i < types.size(); ++i)
                    order.rank[types[i]] = static_cast<int>(i);
                mOrders.push_back(std::move(order));
            } while (std::next_permutation(types.begin(), types.end()));
    }
    int gpus() const { return mGpus; }
    /// Every (mbs, pp, dp) Sailor tries on this cluster; sets ppCapped.
    std::vector<Triple> triples();
    /// Costs every packing of one (mbs, pp) for its dp values; false when cancelled.
    bool run(const std::vector<Triple> &all);
    BaselinePick finish();

private:
    void costPackings(const Triple &t, const std::vector<StageOptions> &options, const std::vector<int> &counts);
    void offer(Plan &&plan, double timeMs);

    const BaselineContext &mContext;
    SailorInputs mInputs;
    size_t mTopN;
    const ProgressFn &mProgress;
    std::set<int> mDevices;
    std::vector<Order> mOrders;
    bool mTypeOrders = false;
    int mGpus = 0;
    bool mPpCapped = false, mBudgetHit = false, mCancelled = false;
    uint64_t mExamined = 0, mUnfit = 0;
    std::vector<std::pair<double, Plan>> mTop; ///< ascending time, distinct plans
};

std::vector<Triple> SailorSearch::triples()
{
    const int L = mContext.model().shape.layers, gbs = mContext.globalBatch();
    const int maxPp = std::min({L, kMaxPp, mGpus});
    mPpCapped = std::min(L, mGpus) > kMaxPp;
    std::vector<Triple> out;
    for (int mbs : mContext.microBatchSizes(8))
        for (int pp = 1; pp <= maxPp; ++pp)
            for (int dp = 1; dp * pp <= mGpus; ++dp)
                if (gbs % (dp * mbs) == 0)
                    out.push_back({mbs, pp, dp});
    return out;
}

void SailorSearch::offer(Plan &&plan, double timeMs)
{
    if (mTop.size() >= mTopN && timeMs >= mTop.back().first)
        return;
    for (const auto &[t, p] : mTop)
        if (p == plan)
            return;
    const auto at = std::upper_bound(mTop.begin(), mTop.end(), timeMs,
                                     [](double v, const std::pair<double, Plan> &e) { return v < e.first; });
    mTop.insert(at, {timeMs, std::move(plan)});
    if (mTop.size() > mTopN)
        mTop.pop_back();
}

void SailorSearch::costPackings(const Triple &t, const std::vector<StageOptions> &options,
                                const std::vector<int> &counts)
{
    std::vector<Plan> last(mOrders.size()); // the previous packing of each order: bounds often repeat it
    for (double tau : thresholds(options))
        for (size_t o = 0; o < mOrders.size(); ++o) {
            if (mExamined >= kConfigBudget) {
                mBudgetHit = true;
                return;
            }
            Plan plan;
            plan.name
                = "Sailor mbs" + std::to_string(t.mbs) + " pp" + std::to_string(t.pp) + " dp" + std::to_string(t.dp);
            plan.globalBatch = mContext.globalBatch();
            Plan &previous = last[o];
            if (!pack({mContext, options, counts, t.mbs, t.dp, mOrders[o]}, tau, plan) || plan == previous)
                continue;
            previous = plan;
            const BaselineEstimate e = estimateWith(mInputs, plan, mContext);
            ++mExamined;
            if (!e.ok || !e.fits) {
                ++mUnfit;
                continue;
            }
            offer(std::move(plan), e.timeMs);
        }
}

bool SailorSearch::run(const std::vector<Triple> &all)
{
    std::vector<StageOptions> options;
    std::vector<int> counts;
    int optMbs = -1, optPp = -1;
    uint64_t reported = 0;
    for (size_t i = 0; i < all.size() && !mBudgetHit; ++i) {
        if ((i == 0 || mExamined - reported >= kProgressEvery) && mProgress) {
            reported = mExamined;
            if (!mProgress(i, all.size()))
                return !(mCancelled = true);
        }
        const Triple &t = all[i];
        if (t.mbs != optMbs || t.pp != optPp) {
            counts = sailorUniformSplit(mContext.model().shape.layers, t.pp);
            options = stageOptions(mContext, mDevices, t.mbs, counts);
            optMbs = t.mbs;
            optPp = t.pp;
        }
        // A stage no type can hold (at any allowed TP) rules the whole (mbs, pp) out.
        if (std::any_of(options.begin(), options.end(), [](const StageOptions &s) { return s.byDevice.empty(); }))
            continue;
        costPackings(t, options, counts);
    }
    if (mProgress && !mProgress(all.size(), all.size()))
        return !(mCancelled = true);
    return true;
}

BaselinePick SailorSearch::finish()
{
    BaselinePick pick;
    pick.configsExamined = mExamined;
    pick.cancelled = mCancelled;
    pick.notes.push_back("Sailor splits layers uniformly (the extra layers on the later stages), uses one "
                         "micro-batch size per plan, gives each replica its own GPU type and a TP between the "
                         "smallest that fits and the largest whose doublings each speed the stage up 1.5x, and may "
                         "leave GPUs idle; replicas are packed greedily per bound on the stage compute time "
                         "(Sailor's DP over remaining resources, zones and cost objectives is not re-implemented)");
    if (!mTypeOrders && mDevices.size() > kMaxTypeOrders)
        pick.notes.push_back("with more than " + std::to_string(kMaxTypeOrders)
                             + " device types the packings by device-type order were not tried (search cap)");
    if (mPpCapped)
        pick.notes.push_back("pipeline degrees above " + std::to_string(kMaxPp) + " were not tried (search cap)");
    if (mBudgetHit)
        pick.notes.push_back("the search stopped after " + std::to_string(kConfigBudget)
                             + " costed candidates (configuration budget)");
    if (mCancelled)
        return pick;
    if (mTop.empty()) {
        pick.refusal = mGpus == 0
            ? "the cluster has no GPUs"
            : "Sailor's memory model (24 bytes per parameter for weights, gradients and Adam state with no ZeRO "
              "sharding or recomputation, the activations of every in-flight micro-batch, 2-3 GiB framework "
              "overhead) finds no uniform split into up to "
                + std::to_string(kMaxPp) + " stages whose every stage fits on this cluster's GPUs";
        return pick;
    }
    for (auto &[t, p] : mTop)
        pick.top.push_back(std::move(p));
    pick.plan = pick.top.front();
    pick.predicted = sailorEstimate(pick.plan, mContext);
    pick.hasPlan = true;
    if (const int used = pick.plan.totalGpus(); used < mGpus)
        pick.notes.push_back("Sailor's best plan uses " + std::to_string(used) + " of the cluster's "
                             + std::to_string(mGpus) + " GPUs (it co-optimises the allocation)");
    if (mUnfit > 0)
        pick.notes.push_back(std::to_string(mUnfit) + " costed candidates failed Sailor's memory check");
    return pick;
}

} // namespace

std::vector<int> sailorUniformSplit(int layers, int pp)
{
    if (pp < 1 || pp > layers)
        return {};
    const int base = layers / pp, extra = layers % pp;
    std::vector<int> out(static_cast<size_t>(pp), base);
    for (int k = pp - extra; k < pp; ++k)
        ++out[static_cast<size_t>(k)];
    return out;
}

double sailorReplicaComputeMs(const BaselineLayerCosts &c, int first, int count, bool isFirst, bool isLast)
{
    double ms = 0;
    const int n = static_cast<int>(std::min(c.layerForwardMs.size(), c.layerBackwardMs.size()));
    for (int l = std::max(0, first); l < first + count && l < n; ++l)
        ms += c.layerForwardMs[static_cast<size_t>(l)] + c.layerBackwardMs[static_cast<size_t>(l)];
    if (isFirst)
        ms += c.embeddingForwardMs + c.embeddingBackwardMs;
    if (isLast)
        ms += c.headForwardMs + c.headBackwardMs;
    return ms;
}

double sailorReplicaMemoryBytes(const BaselineContext &context, int device, int tp, int microBatch, int first,
                                int count, int stageIndex, int pp)
{
    (void)first; // every transformer layer has the same parameters and activations in the profile
    const BaselineLayerCosts &c = context.layerCosts(device, tp, 1);
    const bool isFirst = stageIndex == 0, isLast = stageIndex == pp - 1;
    // act_mem at micro-batch 1: the stage's layers as Sailor's llm_info.json lists them, the
    // embedding as layer 0 of stage 0 and the head (logits + loss) as the last layer.
    const double act = count * c.layerActivationBytes + (isFirst ? c.embeddingActivationBytes : 0.0)
        + (isLast ? c.logitsBytes : 0.0);
    const double inFlight = std::max(1, pp - stageIndex);
    return kBytesPerParam * stageParams(c, count, isFirst, isLast) + act * microBatch * inFlight
        + (tp > 1 ? kFrameworkTpN : kFrameworkTp1);
}

std::vector<int> sailorTpCandidates(const BaselineContext &context, int device)
{
    int maxGpus = 0;
    for (const Node &n : context.nodes())
        if (n.device == device)
            maxGpus = std::max(maxGpus, n.gpus);
    const ModelShape &s = context.model().shape;
    std::vector<int> out;
    for (int tp = 1; tp <= maxGpus; tp *= 2)
        if (s.heads % tp == 0 && s.kvGroups % tp == 0)
            out.push_back(tp);
    return out;
}

SailorTpBounds sailorTpBounds(const BaselineContext &context, int device, int microBatch, int first, int count,
                              int stageIndex, int pp)
{
    SailorTpBounds b;
    const std::vector<int> cands = sailorTpCandidates(context, device);
    if (cands.empty())
        return b;
    const double capacity = context.memoryBytes(device);
    for (int tp : cands)
        if (sailorReplicaMemoryBytes(context, device, tp, microBatch, first, count, stageIndex, pp) <= capacity) {
            b.minTp = tp;
            break;
        }
    const bool isFirst = stageIndex == 0, isLast = stageIndex == pp - 1;
    const auto comp = [&](int tp) {
        return sailorReplicaComputeMs(context.layerCosts(device, tp, microBatch), first, count, isFirst, isLast);
    };
    size_t i = 0;
    while (i + 1 < cands.size() && cands[i + 1] == 2 * cands[i] && comp(cands[i + 1]) > 0
           && comp(cands[i]) / comp(cands[i + 1]) >= kSpeedupThreshold)
        ++i;
    b.maxTp = cands[i];
    if (b.minTp > 0)
        for (int tp : cands)
            if (tp >= b.minTp && tp <= std::max(b.minTp, b.maxTp))
                b.allowed.push_back(tp);
    return b;
}

BaselineEstimate sailorEstimate(const Plan &plan, const BaselineContext &context)
{
    const SailorInputs in(context);
    return estimateWith(in, plan, context);
}

BaselinePick sailorPlan(const BaselineContext &context, size_t topN, const ProgressFn &progress)
{
    SailorSearch search(context, topN, progress);
    const std::vector<Triple> all = search.triples();
    search.run(all);
    return search.finish();
}

} // namespace memx
