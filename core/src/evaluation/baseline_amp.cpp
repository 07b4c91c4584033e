// AMP (Li, Wang, Xing, Zhang, NeurIPS'22, arXiv 2210.07297), re-implemented from the published
// method as ../shared/reference/baselines.md (section 4) describes it; none of AMP's code is used.
//
// Search space (amp_no_placement_strategy): every (mp, dp, pp) with mp x dp x pp = all GPUs of the
// cluster, pp <= layers, and every micro-batch size mbs that divides gbs / dp (all divisors, as
// AMP enumerates them: 4 x 4 GPUs at gbs 32 gives its 53 candidates). Placement is AMP's default
// rank map: mp fastest, then dp, then pp over the cluster's GPUs in node order, so stage s gets
// ranks [s dp mp, (s + 1) dp mp) and replica d of it ranks s dp mp + d mp + [0, mp). AMP's
// simulated-annealing placement variants (sa.py neighbor / cool_down) are NOT implemented: every
// candidate uses the default rank map. A MemX replica lies inside one node, so (mp, dp, pp) whose
// TP groups would span two nodes are skipped (counted in a note), as are mp that do not divide
// the heads (MemX cannot run them; AMP's GPT-2 never met that case).
//
// Cost (ms), per candidate:
//   cost = (B - 1) max_s E_s + sum_s E_s + sum_cuts c + max_s DP_s
//   E_s  = sum_{l in s} e_l, e_l = mbs x 3 x t_fwd(l, mp)      (backward assumed 2 x forward)
//   t_fwd = the per-sample forward time at micro-batch 1 (layerCosts(device, mp, 1)), averaged
//          over the cluster's device types weighted by their share of the GPUs (AMP hard-codes
//          0.75 P3 + 0.25 G4 for its 3 + 1 nodes); the embedding joins the first stage, the head
//          the last, as AMP's layer list has them. No stage uses its own device type.
//   c    = mbs x seq x hidden x 2 bytes / bw per cut. AMP's vocab-sized volume (mbs s v / mp)
//          appears only for a cut right after the output layer; MemX stages always end on a
//          transformer layer and the head sits on the last stage, so no cut carries it.
//   DP_s = 2 (dp - 1) / (dp bw) x params_s x 2 bytes, params_s = 12 h^2 / mp per transformer layer
//          plus h v / mp for the embedding on the first stage (AMP's own count for its tied GPT-2:
//          no norms, biases or separate output layer, whatever the real model has).
//   bw   = the slowest link of the cluster: the minimum over every pair of nodes (the intra-node
//          link when the cluster is one node), nominal bandwidth, no latency (AMP's scalar
//          bandwidth dictionary).
//   B    = gbs / (dp x mbs) micro-batches.
// Memory: none (AMP has no memory model): hasMemory = false, fits = true, so its pick may OOM.
// Objective: minimum cost.
//
// Estimating any MemX plan: each stage is costed with its own replicas: e_l of a stage is the
// slowest replica's mb x 3 x t_fwd(l, tp) (AMP has one mp and one mbs; with uniform replicas this
// is its formula), its dp is its replica count, its DP volume uses its smallest TP (the largest
// shard), its cut volume its largest replica micro-batch, B = plan.microBatches(). AMP models no
// recompute (a recomputing plan costs the same as without), no context parallelism (a replica is
// costed as TP tp on the full sequence), no sequence parallelism, interleaving, FP8, distributed
// optimizer / FSDP, overlap of the gradient reduction, and counts MoE layers as dense 12 h^2.
#include "memx/evaluation/baseline_amp.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <utility>

namespace memx {

namespace {

constexpr double kBytesPerValue = 2; // fp16 activations and gradients, as AMP counts them
constexpr size_t kConfigBudget = 1000000; // candidates costed at most
constexpr size_t kProgressEvery = 256;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// GPUs of each device type (index into Cluster::devices) over the cluster's nodes.
std::map<int, int> gpusPerDevice(const BaselineContext &context)
{
    std::map<int, int> out;
    for (const Node &n : context.nodes())
        out[n.device] += n.gpus;
    return out;
}

/// A link's nominal bandwidth in bytes per ms (AMP keeps one number per link).
double bytesPerMs(const Link &link)
{
    const double gbps = link.bandwidthGBps > 0 ? link.bandwidthGBps : link.bandwidthAt(1e9);
    return gbps * 1e6;
}

/// The slowest link of the cluster (bytes per ms): the minimum over every pair of nodes, the
/// intra-node link when the cluster is one node; 0 without nodes.
double slowestBandwidth(const BaselineContext &context)
{
    const int n = static_cast<int>(context.nodes().size());
    if (n == 0)
        return 0;
    if (n == 1)
        return bytesPerMs(context.link(0, 0));
    double bw = kInf;
    for (int a = 0; a < n; ++a)
        for (int b = a + 1; b < n; ++b)
            bw = std::min(bw, bytesPerMs(context.link(a, b)));
    return bw;
}

/// One pipeline stage as AMP's formula sees it.
struct StageView {
    int first = 0, count = 0;
    int dp = 1;
    int minTp = 1; ///< the largest parameter shard (DP volume)
    int maxMicroBatch = 1; ///< the activation volume it sends at its cut
    std::vector<std::pair<int, int>> kinds; ///< distinct (tp, microBatch) of its replicas
};

/// The cluster-wide inputs of AMP's cost model, read once.
class AmpInputs {
public:
    explicit AmpInputs(const BaselineContext &context)
        : mContext(context)
        , mBandwidth(slowestBandwidth(context))
    {
    }
    double bandwidth() const { return mBandwidth; }
    /// Prefix sums of ampLayerForwardMs(mp): [0] = 0, [k + 1] = sum of entries 0..k.
    const std::vector<double> &prefix(int mp)
    {
        auto it = mPrefix.find(mp);
        if (it != mPrefix.end())
            return it->second;
        const std::vector<double> w = ampLayerForwardMs(mContext, mp);
        std::vector<double> p(w.size() + 1, 0.0);
        for (size_t i = 0; i < w.size(); ++i)
            p[i + 1] = p[i] + w[i];
        return mPrefix.emplace(mp, std::move(p)).first->second;
    }
    /// Forward ms of one sample through transformer layers [first, first + count) at TP mp, with
    /// the embedding / head when the stage is the first / last.
    double stageForwardMs(int mp, int first, int count, bool isFirst, bool isLast)
    {
        const std::vector<double> &p = prefix(mp);
        const size_t L = p.size() - 3;
        double ms = p[static_cast<size_t>(1 + first + count)] - p[static_cast<size_t>(1 + first)];
        if (isFirst)
            ms += p[1] - p[0];
        if (isLast)
            ms += p[L + 2] - p[L + 1];
        return ms;
    }

private:
    const BaselineContext &mContext;
    double mBandwidth;
    std::map<int, std::vector<double>> mPrefix;
};

/// AMP's cost (ms) of a pipeline of `stages` running `microBatches` micro-batches.
double ampCost(AmpInputs &in, const Model &model, const std::vector<StageView> &stages, int microBatches)
{
    const double h = model.shape.hidden, v = model.shape.vocab, seq = model.shape.seqLength;
    const double bw = in.bandwidth();
    double maxE = 0, sumE = 0, cuts = 0, maxDp = 0;
    for (size_t k = 0; k < stages.size(); ++k) {
        const StageView &s = stages[k];
        const bool isFirst = k == 0, isLast = k + 1 == stages.size();
        double e = 0; // the slowest replica's mbs x 3 x t_fwd over the stage's layers
        for (const auto &[tp, mb] : s.kinds)
            e = std::max(e, mb * 3.0 * in.stageForwardMs(tp, s.first, s.count, isFirst, isLast));
        maxE = std::max(maxE, e);
        sumE += e;
        if (!isLast)
            cuts += s.maxMicroBatch * seq * h * kBytesPerValue / bw;
        const double params = s.count * 12.0 * h * h / s.minTp + (isFirst ? h * v / s.minTp : 0.0);
        if (s.dp > 1)
            maxDp = std::max(maxDp, 2.0 * (s.dp - 1) / (s.dp * bw) * params * kBytesPerValue);
    }
    return (microBatches - 1) * maxE + sumE + cuts + maxDp;
}

/// The stages of a search candidate with layer counts `counts`.
std::vector<StageView> candidateStages(const AmpCandidate &c, const std::vector<int> &counts)
{
    std::vector<StageView> out;
    int first = 0;
    for (int n : counts) {
        StageView s;
        s.first = first;
        s.count = n;
        s.dp = c.dp;
        s.minTp = c.mp;
        s.maxMicroBatch = c.mbs;
        s.kinds = {{c.mp, c.mbs}};
        out.push_back(std::move(s));
        first += n;
    }
    return out;
}

/// The stages of any MemX plan, or an error when AMP's formula cannot cost it.
std::vector<StageView> planStages(const Plan &plan, int layers, std::string &error)
{
    std::vector<StageView> out;
    int next = 0;
    for (size_t k = 0; k < plan.stages.size(); ++k) {
        const Stage &st = plan.stages[k];
        if (st.firstLayer != next || st.layerCount < 1 || st.replicas.empty()) {
            error = "stage " + std::to_string(k) + " does not continue the layer sequence with at least one layer "
                + "and one replica";
            return {};
        }
        StageView s;
        s.first = st.firstLayer;
        s.count = st.layerCount;
        s.dp = st.dp();
        s.minTp = std::numeric_limits<int>::max();
        s.maxMicroBatch = 0;
        for (const Replica &r : st.replicas) {
            if (r.tp < 1 || r.microBatch < 1) {
                error = "stage " + std::to_string(k) + " has a replica without a positive TP and micro-batch";
                return {};
            }
            s.minTp = std::min(s.minTp, r.tp);
            s.maxMicroBatch = std::max(s.maxMicroBatch, r.microBatch);
            if (std::find(s.kinds.begin(), s.kinds.end(), std::make_pair(r.tp, r.microBatch)) == s.kinds.end())
                s.kinds.emplace_back(r.tp, r.microBatch);
        }
        next += st.layerCount;
        out.push_back(std::move(s));
    }
    if (next != layers) {
        error = "the stages cover " + std::to_string(next) + " of the model's " + std::to_string(layers) + " layers";
        return {};
    }
    return out;
}

/// The MemX plan of candidate `c` with layer counts `counts`, on AMP's default rank map.
Plan candidatePlan(const BaselineContext &context, const std::vector<std::pair<int, int>> &ranks, const AmpCandidate &c,
                   const std::vector<int> &counts)
{
    Plan plan;
    plan.name = "AMP mp" + std::to_string(c.mp) + " dp" + std::to_string(c.dp) + " pp" + std::to_string(c.pp) + " mbs"
        + std::to_string(c.mbs);
    plan.globalBatch = context.globalBatch();
    int first = 0;
    for (int s = 0; s < c.pp; ++s) {
        Stage st;
        st.firstLayer = first;
        st.layerCount = counts[static_cast<size_t>(s)];
        first += st.layerCount;
        for (int d = 0; d < c.dp; ++d) {
            const size_t base = static_cast<size_t>((s * c.dp + d) * c.mp);
            Replica r;
            r.node = context.nodes()[static_cast<size_t>(ranks[base].first)].name;
            r.tp = c.mp;
            r.microBatch = c.mbs;
            for (size_t t = 0; t < static_cast<size_t>(c.mp); ++t)
                r.gpus.push_back(ranks[base + t].second);
            st.replicas.push_back(std::move(r));
        }
        plan.stages.push_back(std::move(st));
    }
    return plan;
}

/// The notes on what AMP's space left out on this cluster, and how it costs.
std::vector<std::string> spaceNotes(const BaselineContext &context, const AmpSpace &space, double bandwidth)
{
    std::vector<std::string> notes;
    notes.push_back("AMP places ranks by its default rank map (mp fastest, then dp, then pp over the GPUs in node "
                    "order); its simulated-annealing placement search is not re-implemented");
    const auto skipped = [&](int n, const std::string &why) {
        if (n > 0)
            notes.push_back("skipped " + std::to_string(n) + " of " + std::to_string(space.triples)
                            + " (mp, dp, pp) splits of the " + std::to_string(space.gpus) + " GPUs: " + why);
    };
    skipped(space.crossNode, "a tensor-parallel group would span two nodes (a MemX replica stays inside one node)");
    skipped(space.headsMismatch, "mp does not divide the model's attention heads / KV groups");
    skipped(space.tooManyStages, "more pipeline stages than the model's layers");
    skipped(space.batchMismatch,
            "dp does not divide the global batch of " + std::to_string(context.globalBatch()) + " sequences");
    std::string mix;
    const std::map<int, int> perDevice = gpusPerDevice(context);
    for (const auto &[device, n] : perDevice) {
        char share[32];
        std::snprintf(share, sizeof share, "%.0f%% ", 100.0 * n / std::max(1, space.gpus));
        mix += (mix.empty() ? "" : " + ") + std::string(share)
            + context.cluster().devices[static_cast<size_t>(device)].id;
    }
    char bw[32];
    std::snprintf(bw, sizeof bw, "%.3g", bandwidth / 1e6);
    notes.push_back("layer times are AMP's GPU-share-weighted average (" + mix
                    + "), every transfer at the slowest link (" + bw
                    + " GB/s); AMP has no memory model, so its plans are not checked against GPU memory");
    return notes;
}

/// Why AMP has no plan for this cluster, in the user's words.
std::string refusalOf(const BaselineContext &context, const AmpSpace &space)
{
    return "AMP splits all " + std::to_string(space.gpus)
        + " GPUs into mp x dp x pp with every tensor-parallel group inside a node, mp dividing the heads, pp <= "
        + std::to_string(context.model().shape.layers) + " layers and dp dividing the global batch of "
        + std::to_string(context.globalBatch()) + "; none of the " + std::to_string(space.triples)
        + " splits qualifies on this cluster";
}

/// One costed candidate.
struct Scored {
    AmpCandidate candidate;
    const std::vector<int> *counts = nullptr;
    double cost = 0;
};

} // namespace

std::vector<double> ampLayerForwardMs(const BaselineContext &context, int mp)
{
    const int L = context.model().shape.layers;
    std::vector<double> out(static_cast<size_t>(L + 2), 0.0);
    const std::map<int, int> perDevice = gpusPerDevice(context);
    int total = 0;
    for (const auto &[device, n] : perDevice)
        total += n;
    for (const auto &[device, n] : perDevice) {
        if (n <= 0)
            continue;
        const double w = static_cast<double>(n) / total;
        const BaselineLayerCosts &c = context.layerCosts(device, mp, 1);
        out[0] += w * c.embeddingForwardMs;
        for (int l = 0; l < L && static_cast<size_t>(l) < c.layerForwardMs.size(); ++l)
            out[static_cast<size_t>(1 + l)] += w * c.layerForwardMs[static_cast<size_t>(l)];
        out[static_cast<size_t>(L + 1)] += w * c.headForwardMs;
    }
    return out;
}

std::vector<int> ampPartition(const std::vector<double> &layerMs, int pp, double layerParams, double embeddingParams)
{
    const int L = static_cast<int>(layerMs.size()) - 2;
    if (pp < 1 || L < 1 || pp > L)
        return {};
    std::vector<double> p(layerMs.size() + 1, 0.0);
    for (size_t i = 0; i < layerMs.size(); ++i)
        p[i + 1] = p[i] + layerMs[i];
    // Stage k holding transformer layers [i, j): its time and its all-reduce volume.
    const auto stageMs = [&](int k, int i, int j) {
        return p[static_cast<size_t>(1 + j)] - p[static_cast<size_t>(1 + i)] + (k == 0 ? layerMs.front() : 0.0)
            + (k == pp - 1 ? layerMs.back() : 0.0);
    };
    const auto stageVolume
        = [&](int k, int i, int j) { return (j - i) * layerParams + (k == 0 ? embeddingParams : 0.0); };
    const size_t W = static_cast<size_t>(L + 1);
    const auto at = [&](int k, int j) { return static_cast<size_t>(k) * W + static_cast<size_t>(j); };
    // Pass 1 (pipe_ast): f[k][j] = the smallest largest stage time of stages 0..k over layers [0, j).
    std::vector<double> f(static_cast<size_t>(pp) * W, kInf);
    for (int j = 1; j <= L - pp + 1; ++j)
        f[at(0, j)] = stageMs(0, 0, j);
    for (int k = 1; k < pp; ++k)
        for (int j = k + 1; j <= L - (pp - 1 - k); ++j)
            for (int i = k; i < j; ++i)
                f[at(k, j)] = std::min(f[at(k, j)], std::max(f[at(k - 1, i)], stageMs(k, i, j)));
    // Pass 2: among the splits whose every stage stays within that minimum (relative 1e-12 for
    // rounding), the smallest largest all-reduce volume; g[k][j] as f, `from` its last cut.
    const double bound = f[at(pp - 1, L)] * (1 + 1e-12);
    std::vector<double> g(static_cast<size_t>(pp) * W, kInf);
    std::vector<int> from(static_cast<size_t>(pp) * W, -1);
    for (int j = 1; j <= L - pp + 1; ++j)
        if (stageMs(0, 0, j) <= bound)
            g[at(0, j)] = stageVolume(0, 0, j);
    for (int k = 1; k < pp; ++k)
        for (int j = k + 1; j <= L - (pp - 1 - k); ++j)
            for (int i = k; i < j; ++i) {
                if (g[at(k - 1, i)] == kInf || stageMs(k, i, j) > bound)
                    continue;
                const double v = std::max(g[at(k - 1, i)], stageVolume(k, i, j));
                if (v < g[at(k, j)]) {
                    g[at(k, j)] = v;
                    from[at(k, j)] = i;
                }
            }
    if (!(g[at(pp - 1, L)] < kInf))
        return {}; // only with non-finite layer times
    std::vector<int> counts(static_cast<size_t>(pp), 0);
    int j = L;
    for (int k = pp - 1; k > 0; --k) {
        const int i = from[at(k, j)];
        counts[static_cast<size_t>(k)] = j - i;
        j = i;
    }
    counts[0] = j;
    return counts;
}

AmpSpace ampSpace(const BaselineContext &context)
{
    AmpSpace space;
    const std::vector<std::pair<int, int>> &ranks = context.rankMap();
    const ModelShape &shape = context.model().shape;
    const int gbs = context.globalBatch();
    space.gpus = static_cast<int>(ranks.size());
    if (space.gpus == 0)
        return space;
    for (int mp : baselineDivisors(space.gpus)) {
        const bool cross = baselineTpGroupsCrossNodes(ranks, mp);
        for (int dp : baselineDivisors(space.gpus / mp)) {
            const int pp = space.gpus / mp / dp;
            ++space.triples;
            if (cross)
                ++space.crossNode;
            else if (shape.heads % mp != 0 || shape.kvGroups % mp != 0)
                ++space.headsMismatch;
            else if (pp > shape.layers)
                ++space.tooManyStages;
            else if (gbs <= 0 || gbs % dp != 0)
                ++space.batchMismatch;
            else
                for (int mbs : baselineDivisors(gbs / dp))
                    space.candidates.push_back({mp, dp, pp, mbs});
        }
    }
    return space;
}

BaselineEstimate ampEstimate(const Plan &plan, const BaselineContext &context)
{
    BaselineEstimate e;
    e.hasMemory = false; // AMP has no memory model
    e.fits = true;
    if (plan.stages.empty()) {
        e.error = "the plan has no pipeline stages";
        return e;
    }
    const int microBatches = plan.microBatches();
    if (microBatches < 1) {
        e.error = "the global batch is not a whole number of micro-batch steps";
        return e;
    }
    std::vector<StageView> stages = planStages(plan, context.model().shape.layers, e.error);
    if (stages.empty())
        return e;
    AmpInputs in(context);
    if (!(in.bandwidth() > 0)) {
        e.error = "the cluster has no link with a bandwidth";
        return e;
    }
    e.timeMs = ampCost(in, context.model(), stages, microBatches);
    e.ok = true;
    return e;
}

BaselinePick ampPlan(const BaselineContext &context, size_t topN, const ProgressFn &progress)
{
    BaselinePick pick;
    const AmpSpace space = ampSpace(context);
    AmpInputs in(context);
    pick.notes = spaceNotes(context, space, in.bandwidth());
    if (space.candidates.empty() || !(in.bandwidth() > 0)) {
        pick.refusal = in.bandwidth() > 0 ? refusalOf(context, space) : "the cluster has no link with a bandwidth";
        return pick;
    }
    const size_t total = std::min(space.candidates.size(), kConfigBudget);
    if (total < space.candidates.size())
        pick.notes.push_back("costed the first " + std::to_string(total) + " of "
                             + std::to_string(space.candidates.size()) + " candidates (configuration budget)");
    const Model &model = context.model();
    const double h = model.shape.hidden;
    std::map<std::pair<int, int>, std::vector<int>> partitions; // (mp, pp) -> layer counts
    std::vector<Scored> scored;
    scored.reserve(total);
    for (size_t i = 0; i < total; ++i) {
        if (i % kProgressEvery == 0 && progress && !progress(i, total)) {
            pick.cancelled = true;
            return pick;
        }
        const AmpCandidate &c = space.candidates[i];
        // The split minimises max_s E_s (then the largest all-reduce volume); E_s scales with
        // mbs and neither depends on dp, so one split serves every candidate with this (mp, pp).
        auto it = partitions.find({c.mp, c.pp});
        if (it == partitions.end()) {
            std::vector<double> w(in.prefix(c.mp).size() - 1);
            for (size_t k = 0; k < w.size(); ++k)
                w[k] = in.prefix(c.mp)[k + 1] - in.prefix(c.mp)[k];
            it = partitions
                     .emplace(std::make_pair(c.mp, c.pp),
                              ampPartition(w, c.pp, 12 * h * h / c.mp, h * model.shape.vocab / c.mp))
                     .first;
        }
        if (it->second.empty())
            continue;
        const int microBatches = context.globalBatch() / (c.dp * c.mbs);
        scored.push_back({c, &it->second, ampCost(in, model, candidateStages(c, it->second), microBatches)});
        ++pick.configsExamined;
    }
    if (progress && !progress(total, total)) {
        pick.cancelled = true;
        return pick;
    }
    if (scored.empty()) {
        pick.refusal = "AMP's layer partition failed on every candidate (non-finite layer times)";
        return pick;
    }
    std::stable_sort(scored.begin(), scored.end(), [](const Scored &a, const Scored &b) { return a.cost < b.cost; });
    const std::vector<std::pair<int, int>> &ranks = context.rankMap();
    for (size_t k = 0; k < scored.size() && k < std::max<size_t>(1, topN); ++k)
        pick.top.push_back(candidatePlan(context, ranks, scored[k].candidate, *scored[k].counts));
    pick.plan = pick.top.front();
    pick.predicted = ampEstimate(pick.plan, context);
    pick.hasPlan = true;
    return pick;
}

} // namespace memx
