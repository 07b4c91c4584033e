// The planned search: target, idle node groups, one runSearch per subset, merge, notes, advice
// (memx/search/plannedsearch.h, docs/search.md section 2.2).
#include "memx/search/plannedsearch.h"

#include "memx/search/batchsuggestion.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

namespace memx {

Cluster subCluster(const Cluster &cluster, const std::vector<int> &usedNodes)
{
    Cluster out = cluster;
    out.groups.clear();
    std::map<std::string, std::string> renamed;
    for (size_t g = 0; g < cluster.groups.size(); ++g) {
        const int used = g < usedNodes.size() ? usedNodes[g] : cluster.groups[g].count;
        if (used <= 0)
            continue;
        NodeGroup ng = cluster.groups[g];
        ng.count = std::min(used, ng.count);
        for (int i = 0; i < ng.count; ++i)
            renamed[nodeName(cluster.groups[g], i)] = nodeName(ng, i);
        out.groups.push_back(std::move(ng));
    }
    for (LinkOverride &o : out.network.overrides)
        for (std::string *name : {&o.a, &o.b})
            if (const auto it = renamed.find(*name); it != renamed.end())
                *name = it->second;
    return out;
}

SearchResult mergeSubsetResults(const Cluster &cluster, const std::vector<std::vector<int>> &usedNodes,
                                std::vector<SearchResult> &&results)
{
    if (results.size() != usedNodes.size())
        throw std::invalid_argument("mergeSubsetResults: one node list per result expected");
    SearchResult m;
    m.cluster = cluster;
    for (const NodeGroup &g : cluster.groups) {
        const std::string &id = cluster.deviceOf(g).id;
        if (std::find(m.deviceTypes.begin(), m.deviceTypes.end(), id) == m.deviceTypes.end())
            m.deviceTypes.push_back(id);
    }
    if (results.empty())
        return m;
    const SearchResult &r0 = results.front();
    m.model = r0.model;
    m.globalBatch = r0.globalBatch;
    m.sequenceParallel = r0.sequenceParallel;
    m.overlapDataParallel = r0.overlapDataParallel;
    m.fp8 = r0.fp8;
    m.roundGlobalBatch = r0.roundGlobalBatch;
    m.microBatchSizes = r0.microBatchSizes;
    m.recomputeChoices = r0.recomputeChoices;
    m.dpShardingChoices = r0.dpShardingChoices;
    m.virtualStageChoices = r0.virtualStageChoices;
    m.contextParallelChoices = r0.contextParallelChoices;
    m.cpComm = r0.cpComm;
    m.predictor = r0.predictor;
    m.threads = 1;
    const size_t nRc = m.recomputeChoices.size();
    uint64_t pipelines = 0;
    bool features = true, learned = true;
    for (const SearchResult &r : results) {
        if (r.microBatchSizes != m.microBatchSizes || r.recomputeChoices != m.recomputeChoices
            || r.dpShardingChoices != m.dpShardingChoices || r.virtualStageChoices != m.virtualStageChoices
            || r.contextParallelChoices != m.contextParallelChoices || r.cpComm != m.cpComm
            || r.globalBatch != m.globalBatch || r.roundGlobalBatch != m.roundGlobalBatch)
            throw std::invalid_argument("mergeSubsetResults: the subsets were searched over different spaces");
        pipelines += r.pipelines.size();
        features = features && (r.size() == 0 || !r.features.empty());
        learned = learned && r.timeSpread.size() == r.size() && r.predictor == m.predictor;
    }
    // One subset on every group with the cluster's device types (e.g. --target any): its result
    // already has the merged layout. Taken as it is (copying the rows of a wide 512-GPU space row
    // by row took ~0.5 s, after a Ctrl-C too).
    if (results.size() == 1 && results[0].deviceTypes == m.deviceTypes && usedNodes[0].size() == cluster.groups.size()
        && std::all_of(usedNodes[0].begin(), usedNodes[0].end(), [](int n) { return n > 0; })) {
        SearchResult r = std::move(results[0]);
        results.clear();
        r.cluster = cluster;
        r.threads = std::max(1, r.threads);
        if (!learned) {
            r.timeSpread.clear();
            r.memSpread.clear();
            r.oomRisk.clear();
            r.extrapolating.clear();
        } else if (r.extrapolating.size() != r.size()) {
            r.extrapolating.assign(r.size(), 0);
        }
        if (!features)
            r.features.clear();
        return r;
    }
    long double bases = static_cast<long double>(pipelines) * m.microBatchSizes.size() * m.dpShardingChoices.size()
        * m.virtualStageChoices.size() * m.contextParallelChoices.size();
    for (size_t t = 0; t < m.deviceTypes.size(); ++t)
        bases *= static_cast<long double>(nRc);
    if (bases > 4294967295.0L)
        throw std::invalid_argument("the idle-group subsets together have more than 2^32 base configurations; narrow "
                                    "the space (fewer TP degrees, stages per group or recompute choices)");
    size_t rows = 0;
    for (const SearchResult &r : results)
        rows += r.size();
    m.pipelines.reserve(static_cast<size_t>(pipelines));
    m.baseOf.reserve(rows);
    m.splitOffset.reserve(rows);
    for (size_t k = 0; k < results.size(); ++k) {
        SearchResult &r = results[k];
        std::vector<int> groupOf; // sub-cluster group -> cluster group
        for (size_t g = 0; g < cluster.groups.size(); ++g)
            if (g < usedNodes[k].size() && usedNodes[k][g] > 0)
                groupOf.push_back(static_cast<int>(g));
        std::vector<size_t> typeOf; // sub type -> merged type
        for (const std::string &t : r.deviceTypes)
            typeOf.push_back(
                static_cast<size_t>(std::find(m.deviceTypes.begin(), m.deviceTypes.end(), t) - m.deviceTypes.begin()));
        const size_t offset = m.pipelines.size();
        for (SearchResult::Pipeline &pl : r.pipelines) {
            for (SearchStage &s : pl.stages) {
                s.group = groupOf.at(static_cast<size_t>(s.group));
                if (s.group2 >= 0)
                    s.group2 = groupOf.at(static_cast<size_t>(s.group2));
            }
            m.pipelines.push_back(std::move(pl));
        }
        const uint32_t shift = static_cast<uint32_t>(m.layerCounts.size());
        for (size_t i = 0; i < r.size(); ++i) {
            SearchResult::BaseParts b = r.decodeBase(r.baseOf[i]);
            size_t combo = b.recompute, full = 0;
            for (size_t t = 0; t < r.deviceTypes.size(); ++t, combo /= nRc)
                full += (combo % nRc) * static_cast<size_t>(std::pow(static_cast<double>(nRc), typeOf[t]) + 0.5);
            b.pipeline += offset;
            b.recompute = full;
            m.baseOf.push_back(static_cast<uint32_t>(m.encodeBase(b)));
            m.splitOffset.push_back(r.splitOffset[i] + shift);
        }
        m.layerCounts.insert(m.layerCounts.end(), r.layerCounts.begin(), r.layerCounts.end());
        for (auto [to, from] : {std::pair {&m.timeMs, &r.timeMs}, std::pair {&m.peakMemory, &r.peakMemory},
                                std::pair {&m.imbalance, &r.imbalance}, std::pair {&m.peakBytes, &r.peakBytes}})
            to->insert(to->end(), from->begin(), from->end());
        if (features)
            m.features.insert(m.features.end(), r.features.begin(), r.features.end());
        if (learned) {
            m.timeSpread.insert(m.timeSpread.end(), r.timeSpread.begin(), r.timeSpread.end());
            m.memSpread.insert(m.memSpread.end(), r.memSpread.begin(), r.memSpread.end());
            m.oomRisk.insert(m.oomRisk.end(), r.oomRisk.begin(), r.oomRisk.end());
            if (r.extrapolating.size() == r.size())
                m.extrapolating.insert(m.extrapolating.end(), r.extrapolating.begin(), r.extrapolating.end());
            else
                m.extrapolating.insert(m.extrapolating.end(), r.size(), 0);
        }
        m.enumerated += r.enumerated;
        m.pruned += r.pruned;
        m.evaluated += r.evaluated;
        m.streamed = m.streamed || r.streamed;
        m.cancelled = m.cancelled || r.cancelled;
        m.enumerateEvaluateMs += r.enumerateEvaluateMs;
        m.threads = std::max(m.threads, r.threads);
        r = SearchResult(); // release it early
    }
    if (!learned) {
        m.timeSpread.clear();
        m.memSpread.clear();
        m.oomRisk.clear();
        m.extrapolating.clear();
    }
    return m;
}

const IdleSubset &PlannedSearchResult::subsetOf(size_t index) const
{
    for (const IdleSubset &s : subsets)
        if (index >= s.first && index < s.first + s.count)
            return s;
    throw std::out_of_range("configuration " + std::to_string(index) + " is in no subset");
}

int idleGpus(const Cluster &cluster, const IdleSubset &subset)
{
    int idle = 0;
    for (size_t g = 0; g < cluster.groups.size() && g < subset.usedNodes.size(); ++g)
        idle += (cluster.groups[g].count - subset.usedNodes[g]) * cluster.groups[g].gpusPerNode;
    return idle;
}

int PlannedSearchResult::idleGpus(size_t index) const
{
    return memx::idleGpus(result.cluster, subsetOf(index));
}

namespace {

std::string idleGroupsText(const Cluster &cluster, const std::vector<int> &used)
{
    std::string out;
    for (size_t g = 0; g < cluster.groups.size(); ++g) {
        const NodeGroup &ng = cluster.groups[g];
        const int idle = ng.count - used[g];
        if (idle <= 0)
            continue;
        out += (out.empty() ? "" : ", ") + ng.name;
        if (used[g] > 0)
            out += " (" + std::to_string(idle) + " of " + std::to_string(ng.count) + " nodes, "
                + std::to_string(idle * ng.gpusPerNode) + " GPUs)";
        else
            out += " (" + std::to_string(idle * ng.gpusPerNode) + " GPUs)";
    }
    return out;
}

} // namespace

std::string idleText(const Cluster &cluster, const IdleSubset &subset)
{
    const std::string idle = idleGroupsText(cluster, subset.usedNodes);
    return idle.empty() ? std::string() : "idle: " + idle;
}

std::string PlannedSearchResult::idleText(size_t index) const
{
    return memx::idleText(result.cluster, subsetOf(index));
}

namespace {

/// One subset to search, and where it came from.
struct Candidate {
    std::vector<int> used;
    std::string label;
    int parent = -1; ///< the subset (index) it leaves more groups idle than
};

/// Per-GPU time of one layer and one sequence (TP 1, micro-batch 1): larger is slower.
double groupSlowness(const SearchRequest &req, const NodeGroup &g)
{
    const ProfileSet *profiles = req.profiles.empty() ? nullptr : &req.profiles;
    const LayerKernel k = makeLayerKernel(req.cluster.deviceOf(g), req.cluster.intraLink(g), req.model, 1, 1,
                                          req.space.sequenceParallel, profiles, req.cost);
    return k.forwardPrefixMs[1] + k.backwardPrefixMs[1];
}

/// A group the search may use: the target runs its device and, for FP8 plans, the device has FP8.
bool groupUsable(const SearchRequest &req, LaunchTarget target, const GpuSpec &dev)
{
    return targetRunsDevice(target, dev) && (req.space.fp8 == Fp8Format::Off || dev.denseFp8Tflops.has_value());
}

/// The subsets: per base set of groups the target can run together (every usable group for
/// FlagScale and Any; per vendor and GPUs per node for Megatron-LM, whose jobs need both equal),
/// the set itself and then the slowest 1..maxIdle groups idle; the baseline before them.
std::vector<Candidate> idleCandidates(const PlannedSearchRequest &req, LaunchTarget target)
{
    const Cluster &cl = req.search.cluster;
    const size_t G = cl.groups.size();
    std::map<std::string, std::vector<int>> sets; // key -> groups, in cluster order
    std::vector<std::string> unusable;
    for (size_t g = 0; g < G; ++g) {
        const GpuSpec &dev = cl.deviceOf(cl.groups[g]);
        if (!groupUsable(req.search, target, dev)) {
            unusable.push_back(cl.groups[g].name + " ("
                               + (targetRunsDevice(target, dev) ? dev.id + ", no FP8" : dev.vendor) + ")");
            continue;
        }
        const std::string key = target == LaunchTarget::Megatron
            ? dev.vendor + " GPUs, " + std::to_string(cl.groups[g].gpusPerNode) + " per node"
            : std::string();
        sets[key].push_back(static_cast<int>(g));
    }
    std::string cannot;
    for (const std::string &u : unusable)
        cannot += (cannot.empty() ? "" : ", ") + u;
    std::vector<Candidate> out;
    // The baseline first: a re-search looks its (cached) result up before anything new is stored.
    if (req.baseline) {
        const Cluster &b = *req.baseline;
        bool prefix = b.groups.size() == G && b.devices == cl.devices && b.network == cl.network;
        Candidate c;
        c.used.assign(G, 0);
        for (size_t g = 0; prefix && g < G; ++g) {
            NodeGroup x = b.groups[g], y = cl.groups[g];
            prefix = x.count <= y.count;
            x.count = y.count = 0;
            x.x = y.x = x.y = y.y = 0;
            prefix = prefix && x == y;
            c.used[g] = groupUsable(req.search, target, cl.deviceOf(cl.groups[g])) ? b.groups[g].count : 0;
        }
        if (prefix) {
            c.label = "the cluster before the edit";
            out.push_back(c);
        }
    }
    for (const auto &[key, groups] : sets) {
        Candidate base;
        base.used.assign(G, 0);
        for (int g : groups)
            base.used[static_cast<size_t>(g)] = cl.groups[static_cast<size_t>(g)].count;
        base.label = unusable.empty() && sets.size() == 1
            ? "every group"
            : (sets.size() > 1 ? "the " + key : "every group " + std::string(toString(target)) + " runs");
        const int root = static_cast<int>(out.size());
        out.push_back(base);
        std::vector<int> bySpeed = groups;
        std::vector<double> slow(G, 0);
        for (int g : groups)
            slow[static_cast<size_t>(g)] = groupSlowness(req.search, cl.groups[static_cast<size_t>(g)]);
        std::stable_sort(bySpeed.begin(), bySpeed.end(), [&](int a, int b) {
            return slow[static_cast<size_t>(a)] != slow[static_cast<size_t>(b)]
                ? slow[static_cast<size_t>(a)] > slow[static_cast<size_t>(b)]
                : a > b;
        });
        Candidate c = base;
        for (int k = 0; k < req.maxIdleGroups && k + 1 < static_cast<int>(bySpeed.size()); ++k) {
            const int g = bySpeed[static_cast<size_t>(k)];
            c.used[static_cast<size_t>(g)] = 0;
            c.label = base.label + " but the slowest " + (k ? std::to_string(k + 1) + " (" : "(");
            for (int j = 0; j <= k; ++j)
                c.label += (j ? ", " : "") + cl.groups[static_cast<size_t>(bySpeed[static_cast<size_t>(j)])].name;
            c.label += ")";
            c.parent = root;
            out.push_back(c);
        }
    }
    // Each subset once, and never an empty one.
    std::vector<Candidate> unique;
    std::map<std::vector<int>, int> seen;
    std::vector<int> indexOf(out.size(), -1);
    for (size_t i = 0; i < out.size(); ++i) {
        const bool empty = std::all_of(out[i].used.begin(), out[i].used.end(), [](int n) { return n == 0; });
        if (empty)
            continue;
        if (const auto it = seen.find(out[i].used); it != seen.end()) {
            indexOf[i] = it->second; // the same subset: its first occurrence stands for it
            continue;
        }
        indexOf[i] = static_cast<int>(unique.size());
        seen.emplace(out[i].used, indexOf[i]);
        unique.push_back(out[i]);
        if (unique.back().parent >= 0)
            unique.back().parent = indexOf[static_cast<size_t>(unique.back().parent)];
    }
    return unique;
}

std::string ms(double v)
{
    std::ostringstream o;
    o << std::fixed << std::setprecision(1) << v << " ms";
    return o.str();
}

/// What the idle subsets say: slow groups that make every plan slower, groups without which
/// plans fit at all.
std::vector<std::string> idleNotes(const PlannedSearchResult &p)
{
    std::vector<std::string> notes;
    for (const IdleSubset &s : p.subsets) {
        if (s.parent < 0 || s.bestTimeMs <= 0)
            continue;
        const IdleSubset &parent = p.subsets[static_cast<size_t>(s.parent)];
        std::vector<int> extra(s.usedNodes.size());
        for (size_t g = 0; g < extra.size(); ++g)
            extra[g] = parent.usedNodes[g] - s.usedNodes[g];
        std::string idle;
        for (size_t g = 0; g < extra.size(); ++g)
            if (extra[g] > 0)
                idle += (idle.empty() ? "" : ", ") + p.result.cluster.groups[g].name + " ("
                    + std::to_string(extra[g] * p.result.cluster.groups[g].gpusPerNode) + " x "
                    + p.result.cluster.deviceOf(p.result.cluster.groups[g]).id + ")";
        if (parent.bestTimeMs <= 0)
            notes.push_back("with " + parent.label + " no plan fits; leaving " + idle + " idle, "
                            + std::to_string(s.count) + " do (best " + ms(s.bestTimeMs) + ")");
        else if (s.bestTimeMs < parent.bestTimeMs)
            notes.push_back("leaving " + idle + " idle gives a faster plan: best " + ms(s.bestTimeMs) + " against "
                            + ms(parent.bestTimeMs) + " with " + parent.label
                            + " - adding those GPUs makes every plan slower");
    }
    return notes;
}

} // namespace

namespace {

/// Spreads one progress callback over several searches, weighted by their base bounds.
class SpanProgress {
public:
    SpanProgress(const ProgressFn &progress, std::vector<uint64_t> weights)
        : mProgress(progress)
        , mWeights(std::move(weights))
    {
        for (uint64_t w : mWeights)
            mTotal += std::max<uint64_t>(w, 1);
    }
    /// The callback for search `k`.
    ProgressFn part(size_t k)
    {
        return [this, k](size_t done, size_t total) {
            if (!mProgress)
                return true;
            const double w = static_cast<double>(std::max<uint64_t>(mWeights[k], 1));
            const double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
            const double at = static_cast<double>(doneBefore(k)) + w * std::min(1.0, frac);
            return mProgress(static_cast<size_t>(at), static_cast<size_t>(mTotal));
        };
    }

private:
    uint64_t doneBefore(size_t k) const
    {
        uint64_t s = 0;
        for (size_t i = 0; i < k; ++i)
            s += std::max<uint64_t>(mWeights[i], 1);
        return s;
    }
    const ProgressFn &mProgress;
    std::vector<uint64_t> mWeights;
    uint64_t mTotal = 0;
};

/// The reason most candidates were pruned for.
std::string dominantReason(const PruneCounts &p)
{
    const uint64_t most = std::max({p.divisibility, p.microBatchLimit, p.layers, p.outOfMemory, p.launcher});
    if (most == 0)
        return "empty space";
    if (most == p.outOfMemory)
        return "out of memory";
    if (most == p.divisibility)
        return "divisibility";
    if (most == p.microBatchLimit)
        return "micro-batch limit";
    if (most == p.layers)
        return "layers";
    return "launcher";
}

std::string joinInts(const std::vector<int> &v)
{
    std::string out;
    for (size_t i = 0; i < v.size(); ++i)
        out += (i ? ", " : "") + std::to_string(v[i]);
    return out;
}

std::string dpDegrees(const SearchResult &r)
{
    std::set<int> dps;
    for (const SearchResult::Pipeline &pl : r.pipelines) {
        int d = 1;
        for (const SearchStage &s : pl.stages)
            d = std::max(d, s.dp);
        dps.insert(d);
    }
    std::vector<int> v(dps.begin(), dps.end());
    if (v.size() > 8)
        v.resize(8);
    return joinInts(v) + (dps.size() > 8 ? ", ..." : "");
}

/// Searches `gbs` with the same target and subsets (no advice): does it give plans?
bool givesPlans(const PlannedSearchRequest &req, int gbs, const SubsetSearch &search, const ProgressFn &progress,
                bool &cancelled)
{
    PlannedSearchRequest r = req;
    r.search.globalBatch = gbs;
    r.maxVerifiedBatches = -1; // no advice of its own
    const PlannedSearchResult p = runPlannedSearch(r, progress, search);
    cancelled = p.result.cancelled;
    return p.result.size() > 0;
}

NoPlanAdvice adviseDivisibility(const PlannedSearchRequest &req, const PlannedSearchResult &p,
                                const SubsetSearch &search, const ProgressFn &progress, bool &cancelled)
{
    NoPlanAdvice a;
    a.reason = dominantReason(p.result.pruned);
    const int gbs = p.result.globalBatch;
    const int cap = std::max(1, req.search.space.maxReplicaMicroBatch);
    a.microBatches = workableMicroBatches(p.result, gbs, cap, 64);
    const std::vector<int> steps = stepSizesOf(p.result, cap);
    std::vector<int> below, above;
    int tried = 0;
    for (int g : nearestGlobalBatches(gbs, steps, 24)) {
        if (g == gbs || tried >= req.maxVerifiedBatches || cancelled)
            continue;
        std::vector<int> &side = g < gbs ? below : above;
        if (!side.empty())
            continue;
        ++tried;
        if (givesPlans(req, g, search, progress, cancelled))
            side.push_back(g);
        if (!below.empty() && !above.empty())
            break;
    }
    for (int g : below)
        a.globalBatches.push_back(g);
    for (int g : above)
        a.globalBatches.push_back(g);
    std::sort(a.globalBatches.begin(), a.globalBatches.end(), [&](int x, int y) {
        return std::abs(x - gbs) != std::abs(y - gbs) ? std::abs(x - gbs) < std::abs(y - gbs) : x < y;
    });
    std::ostringstream o;
    if (a.reason == "micro-batch limit")
        o << "every replica would need a micro-batch over " << cap << " (--max-mbs) to carry the global batch " << gbs
          << "; ";
    else
        o << "the global batch " << gbs << " is not a multiple of any pipeline's sequences per step (micro-batch x "
          << "DP, DP " << dpDegrees(p.result) << ", micro-batches " << joinInts(req.search.space.microBatches) << "); ";
    if (!a.globalBatches.empty()) {
        std::string list;
        for (size_t i = 0; i < a.globalBatches.size(); ++i)
            list += (i ? " or " : "") + std::to_string(a.globalBatches[i]);
        o << "global batch " << list << " gives plans (--gbs)";
    } else {
        o << "no nearby global batch was found to give plans";
    }
    if (!a.microBatches.empty()) {
        std::vector<int> outside;
        for (int b : a.microBatches)
            if (std::find(req.search.space.microBatches.begin(), req.search.space.microBatches.end(), b)
                == req.search.space.microBatches.end())
                outside.push_back(b);
        if (!outside.empty())
            o << "; at " << gbs << ", micro-batch " << joinInts(outside) << " divides it (--mbs)";
    } else if (a.reason == "divisibility") {
        o << "; no micro-batch size from 1 to 64 makes a step that divides " << gbs;
    }
    a.text = o.str();
    return a;
}

NoPlanAdvice adviseMemory(const PlannedSearchRequest &req, const PlannedSearchResult &p, const SubsetSearch &search,
                          const ProgressFn &progress, bool &cancelled)
{
    NoPlanAdvice a;
    a.reason = "out of memory";
    PlannedSearchRequest wide = req;
    wide.maxVerifiedBatches = -1;
    SearchSpaceOptions &w = wide.search.space;
    std::vector<std::string> added;
    if (std::find(w.microBatches.begin(), w.microBatches.end(), 1) == w.microBatches.end()) {
        w.microBatches.insert(w.microBatches.begin(), 1);
        added.push_back("micro-batch 1 (--mbs)");
    }
    if (std::find(w.recompute.begin(), w.recompute.end(), RecomputeMethod::Full) == w.recompute.end()) {
        w.recompute.push_back(RecomputeMethod::Full);
        added.push_back("full recompute (--recompute)");
    }
    if (std::find(w.dpSharding.begin(), w.dpSharding.end(), DpSharding::Optimizer) == w.dpSharding.end()) {
        w.dpSharding.push_back(DpSharding::Optimizer);
        added.push_back("the distributed optimizer (--dp-sharding optim)");
    }
    if (std::find(w.dpSharding.begin(), w.dpSharding.end(), DpSharding::Parameters) == w.dpSharding.end()) {
        w.dpSharding.push_back(DpSharding::Parameters);
        added.push_back("Megatron-FSDP sharding the weights (--dp-sharding optim_grads_params)");
    }
    std::ostringstream o;
    o << "every candidate runs out of memory (" << p.result.pruned.outOfMemory << " pruned)";
    if (!added.empty() && !cancelled) {
        const PlannedSearchResult r = runPlannedSearch(wide, progress, search);
        cancelled = r.result.cancelled;
        std::string list;
        for (const std::string &x : added)
            list += (list.empty() ? "" : ", ") + x;
        if (r.result.size() > 0) // evaluated: every plan that fits (a streamed result keeps only the best)
            o << "; with " << list << " " << std::max<uint64_t>(r.result.evaluated, r.result.size()) << " plans fit";
        else
            o << "; even with " << list << " none fits";
    }
    o << "; otherwise the model needs more GPU memory: larger GPUs, more of them, or a shorter sequence";
    a.text = o.str();
    return a;
}

NoPlanAdvice advise(const PlannedSearchRequest &req, const PlannedSearchResult &p, const SubsetSearch &search,
                    const ProgressFn &progress, bool &cancelled)
{
    const std::string reason = dominantReason(p.result.pruned);
    if (reason == "divisibility" || reason == "micro-batch limit")
        return adviseDivisibility(req, p, search, progress, cancelled);
    if (reason == "out of memory")
        return adviseMemory(req, p, search, progress, cancelled);
    NoPlanAdvice a;
    a.reason = reason;
    if (reason == "empty space") {
        a.text = "the search space is empty; widen --stages, --tp or --mbs";
    } else if (reason == "launcher" && p.subsets.empty() && req.search.space.fp8 != Fp8Format::Off) {
        a.text = "no GPU of the cluster trains in FP8 (" + p.targetReason
            + "); search without --fp8, or add Hopper/Ada/CDNA3-class GPUs";
    } else if (reason == "launcher") {
        a.text = std::string("the target (") + toString(p.target) + ") runs none of the candidates ("
            + (p.subsets.empty() ? "none of the cluster's GPUs" : "none of the plans") + "): " + p.targetReason
            + "; --target any searches the cost model's whole space (no launcher)";
    } else {
        const Cluster &cl = req.search.cluster;
        const int layers = req.search.model.shape.layers;
        if (cl.groups.size() > static_cast<size_t>(layers))
            a.text = "every pipeline has at least one stage per node group (or per mixed pair of groups), and the "
                     "cluster's "
                + std::to_string(cl.groups.size()) + " groups are more than the model's " + std::to_string(layers)
                + " layers; use a cluster with fewer groups (larger nodes) or a deeper model";
        else
            a.text = "no layer split gives every stage between 1 and " + std::to_string(kMaxStageLayers)
                + " layers; try other --stages per group";
    }
    return a;
}

} // namespace

SubsetPlan planSubsets(const PlannedSearchRequest &request)
{
    SubsetPlan out;
    const Cluster &cl = request.search.cluster;
    if (cl.groups.empty() || cl.totalGpus() <= 0)
        throw std::invalid_argument("cluster '" + cl.name + "' has no GPUs to search over");
    if (request.autoTarget) {
        const DefaultTarget d = defaultLaunchTarget(cl);
        out.target = d.target;
        out.targetReason = d.reason;
    } else {
        out.target = request.search.space.target;
        out.targetFromCluster = false;
        std::string cannot;
        for (const NodeGroup &g : cl.groups)
            if (!targetRunsDevice(out.target, cl.deviceOf(g)))
                cannot += (cannot.empty() ? "" : ", ") + g.name + " (" + cl.deviceOf(g).vendor + ")";
        out.targetReason = "chosen by the user"
            + (cannot.empty() ? std::string() : "; it cannot run " + cannot + ", which stay idle");
    }
    if (request.search.space.fp8 != Fp8Format::Off) {
        std::string noFp8;
        for (const NodeGroup &g : cl.groups)
            if (targetRunsDevice(out.target, cl.deviceOf(g)) && !cl.deviceOf(g).denseFp8Tflops)
                noFp8 += (noFp8.empty() ? "" : ", ") + g.name + " (" + cl.deviceOf(g).id + ")";
        if (!noFp8.empty())
            out.targetReason += "; FP8 plans leave the groups without FP8 idle: " + noFp8;
    }
    size_t largest = 0;
    for (const Candidate &c : idleCandidates(request, out.target)) {
        out.subsets.push_back({c.used, c.label, c.parent});
        SearchRequest r = request.search;
        r.cluster = subCluster(cl, c.used);
        r.space.target = out.target;
        if (baseConfigurationBound(r) > baseConfigurationBound(out.requests.empty() ? r : out.requests[largest]))
            largest = out.requests.size();
        out.requests.push_back(std::move(r));
    }
    if (request.maxBases > 0 && !out.requests.empty()) {
        // One space for every subset (the merge needs the same decoding tables): narrowed until
        // the largest subset fits.
        SearchRequest big = out.requests[largest];
        out.narrowed = narrowToBudget(big, request.maxBases);
        for (SearchRequest &r : out.requests)
            r.space = big.space;
    }
    return out;
}

PlannedSearchResult runPlannedSearch(const PlannedSearchRequest &request, const ProgressFn &progress,
                                     const SubsetSearch &search)
{
    return runPlannedSearch(request, planSubsets(request), progress, search);
}

PlannedSearchResult runPlannedSearch(const PlannedSearchRequest &request, const SubsetPlan &plan,
                                     const ProgressFn &progress, const SubsetSearch &search)
{
    PlannedSearchResult out;
    const Cluster &cl = request.search.cluster;
    out.target = plan.target;
    out.targetFromCluster = plan.targetFromCluster;
    out.targetReason = plan.targetReason;
    out.narrowed = plan.narrowed;
    const std::vector<SearchRequest> &requests = plan.requests;
    std::vector<uint64_t> weights;
    for (const SearchRequest &r : requests)
        weights.push_back(baseConfigurationBound(r));
    SpanProgress span(progress, weights);
    const SubsetSearch run
        = search ? search : SubsetSearch([](const SearchRequest &r, const ProgressFn &f) { return runSearch(r, f); });
    std::vector<SearchResult> results;
    std::vector<std::vector<int>> used;
    for (size_t k = 0; k < plan.subsets.size(); ++k) {
        SearchResult r = run(requests[k], span.part(k));
        IdleSubset s;
        s.usedNodes = plan.subsets[k].usedNodes;
        s.label = plan.subsets[k].label;
        s.parent = plan.subsets[k].parent;
        s.count = r.size();
        s.enumerated = r.enumerated;
        s.evaluated = r.evaluated;
        for (size_t i = 0; i < r.size(); ++i)
            s.bestTimeMs = i == 0 ? r.timeMs[i] : std::min(s.bestTimeMs, r.timeMs[i]);
        out.subsets.push_back(s);
        used.push_back(plan.subsets[k].usedNodes);
        const bool cancelled = r.cancelled;
        results.push_back(std::move(r));
        if (cancelled)
            break;
    }
    size_t first = 0;
    for (IdleSubset &s : out.subsets) {
        s.first = first;
        first += s.count;
    }
    out.result = mergeSubsetResults(cl, used, std::move(results));
    if (plan.subsets.empty()) {
        // The target runs none of the groups: an empty result that still names the request.
        out.result.model = request.search.model;
        out.result.globalBatch
            = request.search.globalBatch > 0 ? request.search.globalBatch : request.search.model.training.globalBatch;
        out.result.microBatchSizes = request.search.space.microBatches;
        out.result.recomputeChoices = request.search.space.recompute;
        out.result.dpShardingChoices = request.search.space.dpSharding;
        out.result.pruned.launcher = cl.groups.size();
        out.result.enumerated = cl.groups.size();
    }
    if (out.result.cancelled)
        return out;
    out.notes = idleNotes(out);
    if (request.search.space.mixedStages && out.target == LaunchTarget::FlagScale) {
        std::set<std::string> types;
        for (const NodeGroup &g : cl.groups)
            if (targetRunsDevice(out.target, cl.deviceOf(g)))
                types.insert(cl.deviceOf(g).id);
        if (types.size() > 1)
            out.notes.push_back("no stage mixes device types in its data-parallel group: a FlagScale process mesh "
                                "has one device type (--target megatron runs one vendor's types at one shape, "
                                "--target any prices the mix)");
    }
    if (out.result.size() == 0 && request.maxVerifiedBatches >= 0) {
        bool cancelled = false;
        out.advice = advise(request, out, run, progress, cancelled);
        if (cancelled)
            out.result.cancelled = true;
    }
    return out;
}

} // namespace memx
