// Galvatron (Miao, Wang, Zhang, Shao, Nie, Cui, VLDB'22; Galvatron-BMW's memory-balanced pipeline
// division), re-implemented from the published method as ../shared/reference/baselines.md
// (section 5) describes it; none of Galvatron's code is used.
//
// Homogeneous assumption: Galvatron has one memory_constraint and one hardware profile. Here the
// memory constraint is the smallest device memory of the cluster and the profile the most common
// device type by GPU count (ties: the type met first in node order), galvatronHardware. All N
// GPUs are planned as if identical; the returned MemX plan places the ranks in node order (TP
// fastest, then DP, then PP: stage s gets ranks [s dp tp, (s + 1) dp tp)), so in reality its stages
// land on various types, while its estimate uses the single profile.
//
// Search space: tasks over (pp, tp, dp) with pp x tp x dp = N, tp a power of two dividing the heads
// and KV groups whose groups of consecutive ranks stay inside a node, pp <= layers, dp dividing
// gbs; chunks B = every divisor of gbs / dp with mbs = gbs / (dp B) <= 16 (the micro-batch sizes
// Galvatron profiles). Per task the DP type in {DDP, ZeRO-2, ZeRO-3} (ZeRO only with dp > 1) and
// the PP division {even, memory-balanced}; per stage the checkpoint (recompute) count from the
// knapsack: the fewest checkpointed layers with which the stage fits the budget. Pipeline type
// 1F1B (pipedream_flush). Galvatron's per-layer TP, SP, CP and DP type are NOT implemented: one TP
// and one DP type for the whole model, SP off (on only where MemX requires it: MoE with TP > 1),
// and the per-layer checkpoint flags become a per-stage count (Megatron's block method recomputes
// the first r layers of a stage; the layers are identical in memory, so the knapsack over layers
// x memory reduces to the fewest r, galvatronRecomputeLayers). Global-batch range: only the
// context's gbs.
// MemX mapping of the DP types: DDP -> no sharding; ZeRO-2 -> Megatron's distributed optimizer
// (MemX expresses ZeRO-2 proper, Megatron-FSDP optim_grads, only without pipeline parallelism, so
// the distributed optimizer stands in for every pp); ZeRO-3 -> Megatron-FSDP optim_grads_params,
// which MemX runs only with a single stage on dense models: ZeRO-3 is skipped for pp > 1 and for
// MoE models (counted in a note).
//
// PP division: even (galvatronEvenDivision) and memory-balanced (galvatronMemoryBalancedDivision:
// fill the stages to the even division's mean stage memory, reject a division with a stage above
// 1.3 x that mean), both costed; the better under Galvatron's cost is kept (both are costed and
// ranked; every costed candidate counts as a configuration examined). The balanced division is
// computed on the memory without checkpointing, then each stage's checkpoint count is chosen.
//
// Cost (ms; costmodel_coe = 1), per stage s with layers l in s and a single profile
// (layerCosts(profile device, tp, mbs)):
//   fct_s = sum_l layerForwardMs[l] (+ embedding forward on stage 0, head forward on the last):
//           the profiled per-layer forward replaces Galvatron's linear fit of forward ms against
//           batch; TP communication is inside the profiled layer time (Galvatron's six fitted
//           all-gather / reduce-scatter latencies per layer are not added separately).
//   bct_s = 2 fct_s (bct_fct_coe = 2) + the forward of each checkpointed layer (recompute).
//   p2p_s = 2 x mbs x seq x hidden x 2 B / bw_p2p when pp > 1 (activation forward + gradient back;
//           summed over the stages: Galvatron's pp x 2 x mbs x s x h x 2 bytes), bw_p2p = the
//           slowest link between the nodes of any two adjacent stages (one p2p coefficient).
//   t_s   = fct_s + bct_s + p2p_s per micro-batch.
//   dp_s  = 2 (d - 1) / d x 2 B x P_s / bw_s: param_MB (fp32 params, 4 B) halved for mixed precision,
//           P_s the stage's parameters on one TP rank (embedding / head included), bw_s the slowest
//           link of the stage's DP group (the pairs of its replicas' nodes, the intra-node link of a
//           node with two or more of them), Link::bandwidthAt(message) without latency (a per-MB
//           time); ZeRO-3 moves 1.5 x that (reduce-scatter + two all-gathers instead of an
//           all-reduce), ZeRO-2 the same as DDP (reduce-scatter + all-gather).
//   tail_s = galvatronReduceTailMs(bct_s, dp_s): the reduction overlaps the last backward; the
//           overlapped part min(bct, dp) runs 1.1256x slower (overlap_coe), the rest is exposed.
//   T     = galvatronPipelineMs(t, B) + max_s tail_s, where the pipeline term is
//           max(sum_s t_s + t_last (B - 1), sum_s t_s / 3 + (B - 1) max_s t_s + 2 sum_s t_s / 3).
// Not modelled: the optimizer step, ZeRO-3's per-micro-batch parameter all-gathers beyond the 1.5x
// factor, inter-layer strategy transition costs (one strategy for all layers: none arise).
// Memory (bytes per GPU of stage s, galvatronStageMemory): 16 B/param model states (Galvatron's
// 4 x param_MB) x the ZeRO ratio (ZeRO-3 1/d + 0.003, ZeRO-2 7/8 (1/d + 0.003) + 1/8) on the TP
// rank's parameters, plus per-sample activations (or the checkpointed input) x mbs x
// min(pp - s, B) in-flight micro-batches; the embedding on stage 0, the head and one micro-batch
// of logits on the last. Budget = the smallest device memory, less 20% when it exceeds 20 GiB.
// fits = peak <= budget; peakUtilisation = peak / the smallest device memory.
// Objective: maximum throughput (minimum T) among the plans that fit. The returned plans set
// overlapGradReduce (Galvatron's runtime overlaps the gradient reduction, as its cost assumes).
// Progress: one unit per task; at most 200,000 candidates are costed (a note says when the
// configuration budget stops the search).
//
// Estimating any MemX plan: its own pp, per-stage layers, DP degree (replicas), TP and micro-batch
// of every replica (a stage mixing them takes its slowest / largest replica), recompute count
// (full recompute; selective recompute is costed as none: Galvatron checkpoints whole layers) and
// ZeRO type (none -> DDP, distributed optimizer or FSDP optim_grads -> ZeRO-2, optim_grads_params
// -> ZeRO-3), B = plan.microBatches(), links of the plan's real nodes, all with the single
// profile: it ignores the real device types. Not modelled: interleaving (plain 1F1B), context
// parallelism (a replica is costed as TP tp on the whole sequence), sequence parallelism, FP8,
// expert parallelism (MoE layers costed by their layerCosts figures), the overlap flags (Galvatron
// always overlaps the gradient reduction).
#include "memx/evaluation/baseline_galvatron.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace memx {

namespace {

constexpr double kStateBytesPerParam = 16; // 4 x param_MB, param_MB counting fp32 (4 B) parameters
constexpr double kDpBytesPerParam = 2; // param_MB halved for mixed precision
constexpr double kZero3CommFactor = 1.5;
constexpr double kActivationBytes = 2; // bf16 activations between stages
constexpr double kBctFctCoe = 2;
constexpr double kCostModelCoe = 1;
constexpr double kBalanceCap = 1.3;
constexpr double kZeroShardSlack = 0.003;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kReserveAbove = 20 * kGiB;
constexpr double kReserveShare = 0.2;
constexpr int kMaxMicroBatch = 16;
constexpr uint64_t kConfigBudget = 200000; // candidates costed at most
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The cluster-wide inputs read once: the hardware view, node indices by name and every link.
class GalvatronInputs {
public:
    explicit GalvatronInputs(const BaselineContext &context)
        : mContext(context)
        , mHardware(galvatronHardware(context))
    {
    }
    const BaselineContext &context() const { return mContext; }
    const GalvatronHardware &hardware() const { return mHardware; }
    int nodeIndex(const std::string &name) const { return mContext.nodeIndex(name); }
    /// Bytes per ms of the link a -> b (intra-node when a == b) for a message of `bytes`.
    double bytesPerMs(int a, int b, double bytes) const { return 1e6 * mContext.link(a, b).bandwidthAt(bytes); }

private:
    const BaselineContext &mContext;
    GalvatronHardware mHardware;
};

GalvatronDpType dpTypeOf(const Plan &plan)
{
    switch (dpShardingOf(plan)) {
    case DpSharding::None:
        return GalvatronDpType::Ddp;
    case DpSharding::Optimizer:
    case DpSharding::Gradients:
        return GalvatronDpType::Zero2;
    case DpSharding::Parameters:
        return GalvatronDpType::Zero3;
    }
    return GalvatronDpType::Ddp;
}

/// Forward ms of one micro-batch through layers [first, first + count) of `c`, with the
/// embedding / head; `recomputeMs` gets the forward of the first `recomputed` layers.
double stageForwardMs(const BaselineLayerCosts &c, int first, int count, bool isFirst, bool isLast, int recomputed,
                      double &recomputeMs)
{
    double ms = 0;
    recomputeMs = 0;
    const int n = static_cast<int>(c.layerForwardMs.size());
    for (int l = std::max(0, first); l < first + count && l < n; ++l) {
        const double f = c.layerForwardMs[static_cast<size_t>(l)];
        ms += f;
        if (l - first < recomputed)
            recomputeMs += f;
    }
    if (isFirst)
        ms += c.embeddingForwardMs;
    if (isLast)
        ms += c.headForwardMs;
    return ms;
}

double stageParams(const BaselineLayerCosts &c, int count, bool isFirst, bool isLast)
{
    return count * c.layerParams + (isFirst ? c.embeddingParams : 0.0) + (isLast ? c.headParams : 0.0);
}

/// One stage of a plan as Galvatron's cost model sees it.
struct StageView {
    int first = 0, count = 0, recomputed = 0, dp = 1;
    std::vector<std::pair<int, int>> kinds; ///< distinct (tp, microBatch) of its replicas
    int minTp = 1, maxMicroBatch = 1;
    std::vector<int> nodes; ///< distinct nodes of its replicas
    std::vector<int> sharedNodes; ///< nodes holding two or more of its replicas
};

/// The stage views of `plan`, or an error.
std::vector<StageView> planStages(const GalvatronInputs &in, const Plan &plan, std::string &error)
{
    const int layers = in.context().model().shape.layers;
    std::vector<StageView> out;
    int next = 0;
    for (size_t k = 0; k < plan.stages.size(); ++k) {
        const Stage &st = plan.stages[k];
        if (st.firstLayer != next || st.layerCount < 1 || st.replicas.empty()) {
            error = "stage " + std::to_string(k) + " does not continue the layer sequence with at least one layer "
                + "and one replica";
            return {};
        }
        StageView v;
        v.first = st.firstLayer;
        v.count = st.layerCount;
        v.recomputed = recomputedLayers(st.recompute, st.layerCount);
        v.dp = st.dp();
        v.minTp = std::numeric_limits<int>::max();
        v.maxMicroBatch = 0;
        for (const Replica &r : st.replicas) {
            const int n = in.nodeIndex(r.node);
            if (n < 0 || r.tp < 1 || r.microBatch < 1) {
                error = "stage " + std::to_string(k) + " has a replica on an unknown node or without a positive TP "
                    + "and micro-batch";
                return {};
            }
            v.minTp = std::min(v.minTp, r.tp);
            v.maxMicroBatch = std::max(v.maxMicroBatch, r.microBatch);
            if (std::find(v.kinds.begin(), v.kinds.end(), std::make_pair(r.tp, r.microBatch)) == v.kinds.end())
                v.kinds.emplace_back(r.tp, r.microBatch);
            if (std::find(v.nodes.begin(), v.nodes.end(), n) == v.nodes.end())
                v.nodes.push_back(n);
            else if (std::find(v.sharedNodes.begin(), v.sharedNodes.end(), n) == v.sharedNodes.end())
                v.sharedNodes.push_back(n);
        }
        next += st.layerCount;
        out.push_back(std::move(v));
    }
    if (next != layers) {
        error = "the stages cover " + std::to_string(next) + " of the model's " + std::to_string(layers) + " layers";
        return {};
    }
    return out;
}

/// The slowest link (bytes per ms) of a stage's DP group for a message of `bytes`.
double dpBandwidth(const GalvatronInputs &in, const StageView &s, double bytes)
{
    double bw = kInf;
    for (int a : s.nodes)
        for (int b : s.nodes)
            if (a != b)
                bw = std::min(bw, in.bytesPerMs(a, b, bytes));
    for (int a : s.sharedNodes)
        bw = std::min(bw, in.bytesPerMs(a, a, bytes));
    return bw;
}

/// The slowest link (bytes per ms) between the nodes of any two adjacent stages.
double p2pBandwidth(const GalvatronInputs &in, const std::vector<StageView> &stages, double bytes)
{
    double bw = kInf;
    for (size_t k = 0; k + 1 < stages.size(); ++k)
        for (int a : stages[k].nodes)
            for (int b : stages[k + 1].nodes)
                bw = std::min(bw, in.bytesPerMs(a, b, bytes));
    return bw;
}

/// Galvatron's time and memory of `plan` (see the header comment).
BaselineEstimate estimateWith(const GalvatronInputs &in, const Plan &plan)
{
    BaselineEstimate e;
    e.hasMemory = true;
    const BaselineContext &context = in.context();
    const GalvatronHardware &hw = in.hardware();
    if (plan.stages.empty() || hw.device < 0) {
        e.error = plan.stages.empty() ? "the plan has no pipeline stages" : "the cluster has no GPUs";
        return e;
    }
    const int B = plan.microBatches();
    if (B < 1) {
        e.error = "the global batch is not a whole number of micro-batch steps";
        return e;
    }
    const std::vector<StageView> stages = planStages(in, plan, e.error);
    if (stages.empty())
        return e;
    const GalvatronDpType type = dpTypeOf(plan);
    const ModelShape &shape = context.model().shape;
    const int pp = static_cast<int>(stages.size());
    int maxMb = 1;
    for (const StageView &s : stages)
        maxMb = std::max(maxMb, s.maxMicroBatch);
    const double p2pBytes = static_cast<double>(maxMb) * shape.seqLength * shape.hidden * kActivationBytes;
    const double p2pMs = pp > 1 ? 2.0 * p2pBytes / p2pBandwidth(in, stages, p2pBytes) : 0.0;
    std::vector<double> stageMs;
    double maxTail = 0, peak = 0;
    for (int k = 0; k < pp; ++k) {
        const StageView &s = stages[static_cast<size_t>(k)];
        const bool isFirst = k == 0, isLast = k == pp - 1;
        double t = 0, bct = 0;
        for (const auto &[tp, mb] : s.kinds) {
            const BaselineLayerCosts &c = context.layerCosts(hw.device, tp, mb);
            double rcMs = 0;
            const double fct = stageForwardMs(c, s.first, s.count, isFirst, isLast, s.recomputed, rcMs);
            const double b = kBctFctCoe * fct + rcMs;
            t = std::max(t, fct + b + p2pMs);
            bct = std::max(bct, b);
            const GalvatronStageMemory m = galvatronStageMemory(c, type, s.dp, k, pp, B);
            peak = std::max(peak, m.bytes(s.count, s.recomputed));
        }
        stageMs.push_back(t);
        if (s.dp > 1) {
            const BaselineLayerCosts &c = context.layerCosts(hw.device, s.minTp, 1);
            const double bytes = 2.0 * (s.dp - 1) / s.dp * kDpBytesPerParam * stageParams(c, s.count, isFirst, isLast)
                * (type == GalvatronDpType::Zero3 ? kZero3CommFactor : 1.0);
            maxTail = std::max(maxTail, galvatronReduceTailMs(bct, bytes / dpBandwidth(in, s, bytes)));
        }
    }
    e.timeMs = kCostModelCoe * (galvatronPipelineMs(stageMs, B) + maxTail);
    e.peakBytes = peak;
    e.peakUtilisation = hw.memoryBytes > 0 ? peak / hw.memoryBytes : kInf;
    e.fits = peak <= hw.budgetBytes;
    e.ok = std::isfinite(e.timeMs) && e.timeMs > 0;
    if (!e.ok)
        e.error = "the layer costs or links give a non-finite time";
    return e;
}

using Task = GalvatronTask;

/// Galvatron's search state: the top plans by time and what the search skipped.
class GalvatronSearch {
public:
    GalvatronSearch(const BaselineContext &context, size_t topN, const ProgressFn &progress)
        : mIn(context)
        , mRanks(context.rankMap())
        , mTopN(std::max<size_t>(1, topN))
        , mProgress(progress)
    {
    }
    /// Every task on this cluster; counts the TP degrees skipped.
    std::vector<Task> tasks();
    /// Costs every task; false when cancelled.
    bool run(const std::vector<Task> &all);
    BaselinePick finish();

private:
    void costTask(const Task &t);
    void costDivision(const Task &t, GalvatronDpType type, const std::vector<int> &counts, bool balanced);
    Plan buildPlan(const Task &t, GalvatronDpType type, const std::vector<int> &counts,
                   const std::vector<int> &recomputed, bool balanced) const;
    void offer(Plan &&plan, double timeMs);

    GalvatronInputs mIn;
    std::vector<std::pair<int, int>> mRanks;
    size_t mTopN;
    const ProgressFn &mProgress;
    int mTpCrossNode = 0, mTpHeads = 0;
    uint64_t mExamined = 0, mUnfit = 0, mZero3Skipped = 0, mBalancedRejected = 0, mBalancedUsed = 0;
    bool mBudgetHit = false, mCancelled = false;
    std::vector<std::pair<double, Plan>> mTop; ///< ascending time, distinct plans
};

std::vector<Task> GalvatronSearch::tasks()
{
    const BaselineContext &context = mIn.context();
    const ModelShape &shape = context.model().shape;
    int maxNode = 0;
    for (const Node &n : context.nodes())
        maxNode = std::max(maxNode, n.gpus);
    const int N = static_cast<int>(mRanks.size());
    for (int tp = 1; tp <= maxNode && N > 0 && N % tp == 0; tp *= 2)
        if (shape.heads % tp != 0 || shape.kvGroups % tp != 0)
            ++mTpHeads;
        else if (baselineTpGroupsCrossNodes(mRanks, tp))
            ++mTpCrossNode;
    return galvatronTasks(context);
}

void GalvatronSearch::offer(Plan &&plan, double timeMs)
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

Plan GalvatronSearch::buildPlan(const Task &t, GalvatronDpType type, const std::vector<int> &counts,
                                const std::vector<int> &recomputed, bool balanced) const
{
    const BaselineContext &context = mIn.context();
    Plan plan;
    plan.name = "Galvatron pp" + std::to_string(t.pp) + " tp" + std::to_string(t.tp) + " dp" + std::to_string(t.dp)
        + " mbs" + std::to_string(t.mbs) + " " + toString(type) + (balanced ? " bmw" : " even");
    plan.globalBatch = context.globalBatch();
    setDpSharding(plan,
                  type == GalvatronDpType::Ddp         ? DpSharding::None
                      : type == GalvatronDpType::Zero2 ? DpSharding::Optimizer
                                                       : DpSharding::Parameters);
    plan.overlapGradReduce = true; // Galvatron overlaps the gradient reduction with the backward
    plan.sequenceParallel = context.model().shape.isMoe() && t.tp > 1; // MemX requires SP there
    int first = 0;
    for (int s = 0; s < t.pp; ++s) {
        Stage st;
        st.firstLayer = first;
        st.layerCount = counts[static_cast<size_t>(s)];
        first += st.layerCount;
        const int r = recomputed[static_cast<size_t>(s)];
        if (r > 0)
            st.recompute = {RecomputeMethod::Full, r == st.layerCount ? 0 : r};
        for (int d = 0; d < t.dp; ++d) {
            const size_t base = static_cast<size_t>((s * t.dp + d) * t.tp);
            Replica rep;
            rep.node = context.nodes()[static_cast<size_t>(mRanks[base].first)].name;
            rep.tp = t.tp;
            rep.microBatch = t.mbs;
            for (size_t g = 0; g < static_cast<size_t>(t.tp); ++g)
                rep.gpus.push_back(mRanks[base + g].second);
            st.replicas.push_back(std::move(rep));
        }
        plan.stages.push_back(std::move(st));
    }
    return plan;
}

void GalvatronSearch::costDivision(const Task &t, GalvatronDpType type, const std::vector<int> &counts, bool balanced)
{
    if (mExamined >= kConfigBudget) {
        mBudgetHit = true;
        return;
    }
    ++mExamined;
    const GalvatronHardware &hw = mIn.hardware();
    const BaselineLayerCosts &c = mIn.context().layerCosts(hw.device, t.tp, t.mbs);
    std::vector<int> recomputed;
    for (int s = 0; s < t.pp; ++s) {
        const GalvatronStageMemory m = galvatronStageMemory(c, type, t.dp, s, t.pp, t.chunks);
        const int r = galvatronRecomputeLayers(m, counts[static_cast<size_t>(s)], hw.budgetBytes);
        if (r < 0) {
            ++mUnfit;
            return;
        }
        recomputed.push_back(r);
    }
    Plan plan = buildPlan(t, type, counts, recomputed, balanced);
    const BaselineEstimate e = estimateWith(mIn, plan);
    if (!e.ok || !e.fits) {
        ++mUnfit;
        return;
    }
    offer(std::move(plan), e.timeMs);
}

void GalvatronSearch::costTask(const Task &t)
{
    const BaselineContext &context = mIn.context();
    const int L = context.model().shape.layers;
    const std::vector<int> even = galvatronEvenDivision(L, t.pp);
    if (even.empty())
        return;
    std::vector<GalvatronDpType> types {GalvatronDpType::Ddp};
    if (t.dp > 1) {
        types.push_back(GalvatronDpType::Zero2);
        if (t.pp == 1 && !context.model().shape.isMoe())
            types.push_back(GalvatronDpType::Zero3);
        else
            ++mZero3Skipped;
    }
    const BaselineLayerCosts &c = context.layerCosts(mIn.hardware().device, t.tp, t.mbs);
    for (GalvatronDpType type : types) {
        costDivision(t, type, even, false);
        if (t.pp < 2)
            continue;
        std::vector<GalvatronStageMemory> memory;
        for (int s = 0; s < t.pp; ++s)
            memory.push_back(galvatronStageMemory(c, type, t.dp, s, t.pp, t.chunks));
        const std::vector<int> balanced = galvatronMemoryBalancedDivision(memory, L);
        if (balanced.empty())
            ++mBalancedRejected;
        else if (balanced != even) {
            ++mBalancedUsed;
            costDivision(t, type, balanced, true);
        }
    }
}

bool GalvatronSearch::run(const std::vector<Task> &all)
{
    for (size_t i = 0; i < all.size() && !mBudgetHit; ++i) {
        // One unit per task (a task costs at most 6 candidates).
        if (mProgress && !mProgress(i, all.size()))
            return !(mCancelled = true);
        costTask(all[i]);
    }
    if (mProgress && !mProgress(all.size(), all.size()))
        return !(mCancelled = true);
    return true;
}

std::string gib(double bytes)
{
    char s[32];
    std::snprintf(s, sizeof s, "%.1f GiB", bytes / kGiB);
    return s;
}

BaselinePick GalvatronSearch::finish()
{
    BaselinePick pick;
    pick.configsExamined = mExamined;
    pick.cancelled = mCancelled;
    const BaselineContext &context = mIn.context();
    const GalvatronHardware &hw = mIn.hardware();
    if (hw.device >= 0) {
        int profiled = 0;
        for (const Node &n : context.nodes())
            profiled += n.device == hw.device ? n.gpus : 0;
        pick.notes.push_back(
            "Galvatron is homogeneous: it plans all " + std::to_string(hw.gpus)
            + " GPUs as one type, with the memory "
              "constraint of the smallest device ("
            + context.cluster().devices[static_cast<size_t>(hw.memoryDevice)].id + ", " + gib(hw.memoryBytes)
            + "; budget " + gib(hw.budgetBytes)
            + (hw.budgetBytes < hw.memoryBytes ? " after its 20% allocator reserve" : "")
            + ") and the hardware profile of the most common type ("
            + context.cluster().devices[static_cast<size_t>(hw.device)].id + ", " + std::to_string(profiled) + " of "
            + std::to_string(hw.gpus)
            + " GPUs); ranks are placed in node order, so its stages land on other types than it costs");
    }
    pick.notes.push_back("one TP degree and one DP type for every layer (Galvatron's per-layer TP, SP and DP "
                         "strategies are not implemented; SP off), checkpointing as the fewest recomputed layers per "
                         "stage that fit; layer forward times from the profile instead of Galvatron's linear fit, TP "
                         "communication inside them; ZeRO-2 runs as Megatron's distributed optimizer");
    if (mZero3Skipped > 0)
        pick.notes.push_back("ZeRO-3 was not tried on " + std::to_string(mZero3Skipped)
                             + " tasks: MemX runs it (Megatron-FSDP optim_grads_params) only with one pipeline stage "
                               "on dense models");
    if (mTpCrossNode > 0 || mTpHeads > 0)
        pick.notes.push_back("skipped " + std::to_string(mTpCrossNode + mTpHeads)
                             + " TP degrees: their groups of consecutive ranks would span two nodes or they do not "
                               "divide the attention heads / KV groups");
    if (mBalancedUsed + mBalancedRejected > 0)
        pick.notes.push_back("memory-balanced (BMW) divisions: " + std::to_string(mBalancedUsed)
                             + " costed against the even one, " + std::to_string(mBalancedRejected)
                             + " rejected by the 1.3x cap");
    if (mBudgetHit)
        pick.notes.push_back("the search stopped after " + std::to_string(kConfigBudget)
                             + " costed candidates (configuration budget)");
    if (mCancelled)
        return pick;
    if (mTop.empty()) {
        pick.refusal = hw.device < 0 ? "the cluster has no GPUs"
                                     : "no (pp, tp, dp, chunks) of all " + std::to_string(hw.gpus)
                + " GPUs, with any DP type and checkpointing, fits Galvatron's memory budget of " + gib(hw.budgetBytes)
                + " per GPU (the smallest device's memory)";
        return pick;
    }
    for (auto &[t, p] : mTop)
        pick.top.push_back(std::move(p));
    pick.plan = pick.top.front();
    pick.predicted = estimateWith(mIn, pick.plan);
    pick.hasPlan = true;
    if (mUnfit > 0)
        pick.notes.push_back(std::to_string(mUnfit) + " costed candidates failed Galvatron's memory check");
    return pick;
}

} // namespace

std::vector<GalvatronTask> galvatronTasks(const BaselineContext &context)
{
    const ModelShape &shape = context.model().shape;
    const std::vector<std::pair<int, int>> &ranks = context.rankMap();
    const int N = static_cast<int>(ranks.size()), gbs = context.globalBatch();
    int maxNode = 0;
    for (const Node &n : context.nodes())
        maxNode = std::max(maxNode, n.gpus);
    std::vector<GalvatronTask> out;
    if (N == 0 || gbs <= 0)
        return out;
    for (int tp = 1; tp <= maxNode && N % tp == 0; tp *= 2) {
        if (shape.heads % tp != 0 || shape.kvGroups % tp != 0 || baselineTpGroupsCrossNodes(ranks, tp))
            continue;
        for (int pp : baselineDivisors(N / tp)) {
            const int dp = N / tp / pp;
            if (pp > shape.layers || gbs % dp != 0)
                continue;
            for (int chunks : baselineDivisors(gbs / dp)) {
                const int mbs = gbs / dp / chunks;
                if (mbs <= kMaxMicroBatch)
                    out.push_back({pp, tp, dp, chunks, mbs});
            }
        }
    }
    return out;
}

const char *toString(GalvatronDpType t)
{
    switch (t) {
    case GalvatronDpType::Ddp:
        return "ddp";
    case GalvatronDpType::Zero2:
        return "zero2";
    case GalvatronDpType::Zero3:
        return "zero3";
    }
    return "?";
}

GalvatronHardware galvatronHardware(const BaselineContext &context)
{
    GalvatronHardware hw;
    std::vector<int> order; // device types in node order
    std::map<int, int> gpus;
    for (const Node &n : context.nodes()) {
        if (n.gpus <= 0)
            continue;
        if (gpus.find(n.device) == gpus.end())
            order.push_back(n.device);
        gpus[n.device] += n.gpus;
        hw.gpus += n.gpus;
    }
    for (int device : order) {
        if (hw.device < 0 || gpus[device] > gpus[hw.device])
            hw.device = device;
        const double mem = context.memoryBytes(device);
        if (hw.memoryDevice < 0 || mem < hw.memoryBytes) {
            hw.memoryDevice = device;
            hw.memoryBytes = mem;
        }
    }
    hw.budgetBytes = galvatronBudgetBytes(hw.memoryBytes);
    return hw;
}

double galvatronBudgetBytes(double memoryBytes)
{
    return memoryBytes > kReserveAbove ? (1 - kReserveShare) * memoryBytes : memoryBytes;
}

double galvatronStateRatio(GalvatronDpType type, int d)
{
    const double shard = 1.0 / std::max(1, d) + kZeroShardSlack;
    switch (type) {
    case GalvatronDpType::Ddp:
        return 1;
    case GalvatronDpType::Zero2:
        return 7.0 / 8.0 * shard + 1.0 / 8.0;
    case GalvatronDpType::Zero3:
        return shard;
    }
    return 1;
}

GalvatronStageMemory galvatronStageMemory(const BaselineLayerCosts &c, GalvatronDpType type, int d, int stageIndex,
                                          int pp, int microBatches)
{
    const double states = kStateBytesPerParam * galvatronStateRatio(type, d);
    const int mb = std::max(1, c.microBatch);
    const double inFlight = std::max(1, std::min(pp - stageIndex, microBatches));
    const double perSample = c.layerActivationBytes / mb, perSampleRc = c.layerActivationBytesRecompute / mb;
    GalvatronStageMemory m;
    m.layerBytes = states * c.layerParams + perSample * mb * inFlight;
    m.layerBytesRecompute = states * c.layerParams + perSampleRc * mb * inFlight;
    if (stageIndex == 0)
        m.fixedBytes += states * c.embeddingParams + c.embeddingActivationBytes * inFlight;
    if (stageIndex == pp - 1)
        m.fixedBytes += states * c.headParams + c.logitsBytes;
    return m;
}

int galvatronRecomputeLayers(const GalvatronStageMemory &memory, int layers, double budgetBytes)
{
    if (layers < 0)
        return -1;
    if (memory.bytes(layers, 0) <= budgetBytes)
        return 0;
    const double saving = memory.layerBytes - memory.layerBytesRecompute;
    if (!(saving > 0))
        return -1;
    // Each checkpointed layer saves `saving`: the fewest r with bytes(layers, r) <= budget.
    int r = static_cast<int>(std::ceil((memory.bytes(layers, 0) - budgetBytes) / saving));
    r = std::clamp(r, 1, layers);
    while (r > 1 && memory.bytes(layers, r - 1) <= budgetBytes) // rounding
        --r;
    while (r <= layers && memory.bytes(layers, r) > budgetBytes)
        ++r;
    return r <= layers ? r : -1;
}

std::vector<int> galvatronEvenDivision(int layers, int pp)
{
    if (pp < 1 || pp > layers)
        return {};
    const int base = layers / pp, extra = layers % pp;
    std::vector<int> out(static_cast<size_t>(pp), base);
    for (int k = pp - extra; k < pp; ++k)
        ++out[static_cast<size_t>(k)];
    return out;
}

std::vector<int> galvatronMemoryBalancedDivision(const std::vector<GalvatronStageMemory> &memory, int layers)
{
    const int pp = static_cast<int>(memory.size());
    const std::vector<int> even = galvatronEvenDivision(layers, pp);
    if (even.empty())
        return {};
    double avg = 0;
    for (int s = 0; s < pp; ++s)
        avg += memory[static_cast<size_t>(s)].bytes(even[static_cast<size_t>(s)], 0) / pp;
    std::vector<int> out(static_cast<size_t>(pp), 0);
    int left = layers;
    for (int s = 0; s + 1 < pp; ++s) {
        const GalvatronStageMemory &m = memory[static_cast<size_t>(s)];
        const int most = left - (pp - 1 - s); // leave one layer for every later stage
        int n = 1;
        while (n < most && m.bytes(n + 1, 0) <= avg)
            ++n;
        out[static_cast<size_t>(s)] = n;
        left -= n;
    }
    out.back() = left;
    for (int s = 0; s < pp; ++s)
        if (memory[static_cast<size_t>(s)].bytes(out[static_cast<size_t>(s)], 0) > kBalanceCap * avg)
            return {};
    return out;
}

double galvatronPipelineMs(const std::vector<double> &stageMs, int microBatches)
{
    if (stageMs.empty())
        return 0;
    double sum = 0, most = 0;
    for (double t : stageMs) {
        sum += t;
        most = std::max(most, t);
    }
    const int extra = std::max(0, microBatches - 1);
    const double gpipe = sum + stageMs.back() * extra;
    const double oneFOneB = sum / 3 + extra * most + 2 * sum / 3;
    return std::max(gpipe, oneFOneB);
}

double galvatronReduceTailMs(double bctMs, double dpMs)
{
    return std::max(0.0, dpMs - bctMs) + (kGalvatronOverlapCoe - 1) * std::min(bctMs, dpMs);
}

BaselineEstimate galvatronEstimate(const Plan &plan, const BaselineContext &context)
{
    const GalvatronInputs in(context);
    return estimateWith(in, plan);
}

BaselinePick galvatronPlan(const BaselineContext &context, size_t topN, const ProgressFn &progress)
{
    GalvatronSearch search(context, topN, progress);
    const std::vector<Task> all = search.tasks();
    search.run(all);
    return search.finish();
}

} // namespace memx
