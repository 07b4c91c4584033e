#include "memx/search/search.h"

#include "memx/cost/features.h"
#include "memx/cost/linkkey.h"
#include "memx/cost/linktable.h"
#include "memx/util/diagnostic.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

namespace memx {

namespace {

constexpr size_t kBasesPerChunk = 32;

/// How often the progress callback is called (and so a cancel seen), in set-up (pipeline
/// enumeration, kernel tables) and while the chunks are evaluated.
constexpr auto kPollInterval = std::chrono::milliseconds(10);

/// The progress callback during set-up, before the number of base configurations is known: calls
/// it with (0, 0) on the first poll and then at most every kPollInterval, and remembers a
/// cancel (the callback returned false), so that cancel is honoured before the first chunk too.
class SetupPoll {
public:
    explicit SetupPoll(const ProgressFn &progress)
        : mProgress(progress)
    {
    }

    /// True once the caller asked to stop. Cheap enough to call per pipeline shape or kernel.
    bool cancelled()
    {
        if (mCancelled || !mProgress)
            return mCancelled;
        const auto now = std::chrono::steady_clock::now();
        if (mPolled && now - mLast < kPollInterval)
            return false;
        mPolled = true;
        mLast = now;
        mCancelled = !mProgress(0, 0);
        return mCancelled;
    }

private:
    const ProgressFn &mProgress;
    std::chrono::steady_clock::time_point mLast {};
    bool mPolled = false;
    bool mCancelled = false;
};

/// Static description of one stage of a pipeline shape, resolved against the cluster. A mixed
/// stage has a second part (group2 >= 0): dp2 replicas on another group, after the first part's.
struct StageShape {
    int group = 0;
    int deviceType = 0; ///< index into SearchResult::deviceTypes (it decides the stage's recompute)
    int tpIndex = 0; ///< index into the kernel table's TP list
    int tp = 1;
    int dp = 1; ///< replicas of both parts
    int gpus = 0; ///< GPUs of both parts
    double capacityBytes = 0; ///< first part's device
    int group2 = -1, deviceType2 = 0;
    int dp1 = 1, dp2 = 0; ///< replicas of each part
    double capacity2 = 0;
    double w1 = 1, w2 = 1; ///< per-sample speed weights of the micro-batch split (mixedMicroBatches)
    std::vector<int> nodes; ///< global node indices of the slice (both parts)
    std::vector<Link> dpLinks;
    int dpFlows = 1; ///< rings sharing the busiest NIC during the DP reduction (dpNicFlows)
    bool mixed() const { return group2 >= 0; }
};

struct PipelineShape {
    std::vector<StageShape> stages;
    std::vector<std::vector<Link>> p2pLinks; ///< per boundary i -> i+1
    std::vector<Link> wrapLinks; ///< last stage -> first (the interleaved schedule's extra send)
    int maxDp = 1;
    /// Per (micro-batch index x distributed-optimizer index): the launch target runs the
    /// pipeline with that batch and optimizer (checkLaunchTarget on a plan of it). Empty: all do.
    std::vector<char> launchOk;
    /// Per device type: some stage's recompute is that type's choice; empty when every type is.
    std::vector<char> decidingType;
};

/// Everything precomputed before the hot loop; read-only while threads run.
struct Context {
    const SearchRequest *req = nullptr;
    /// Links among / between node sets by node class, built once per search (set-up linear in nodes).
    const LinkTable *links = nullptr;
    int layers = 0;
    int gbs = 0;
    int maxMb = 1;
    std::vector<int> tpValues;
    std::vector<PipelineShape> pipelines;
    // layerKernels[(group * nTp + tpIndex) * (maxMb + 1) + mb]
    std::vector<LayerKernel> layerKernels;
    std::vector<char> layerKernelValid;
    // memKernels[((group * nTp + tpIndex) * (maxMb + 1) + mb) * 2 + (p > 1)]: per group, since the
    // device decides the attention backend, measured activation bytes and runtime overheads
    std::vector<MemoryKernel> memKernels;
    /// FP8 plans (SearchSpaceOptions::fp8): per (CP index, TP index, micro-batch) 1 when the GEMM
    /// shapes are ones FP8 cannot run (fp8ShapeProblem). Empty without FP8.
    std::vector<char> fp8Bad;
    bool fp8Refused(size_t cpIndex, int tpIndex, int mb) const
    {
        return !fp8Bad.empty()
            && fp8Bad[(cpIndex * tpValues.size() + static_cast<size_t>(tpIndex)) * (maxMb + 1) + mb] != 0;
    }
    std::vector<double> groupPeakTflops; ///< per cluster group, for the learned predictor's features
    double modelParams = 0;
    size_t nMbs = 0, nRcCombos = 0, nRc = 0, nDist = 0, nTypes = 0, nV = 1, nCp = 1;
    /// The space also offers the plain optimizer: a distributed-optimizer base whose stages all
    /// have DP 1 is then the same plan (sharding over one rank changes nothing) and is pruned.
    bool hasPlainOptimizer = false;
    bool hasUnshardedChoice = false; ///< the space offers None or Optimizer (below Megatron-FSDP)
    LaunchTarget target = LaunchTarget::Any;
    uint64_t totalBases = 0;

    size_t groups = 0; ///< node groups of the cluster (the kernel tables' second index)
    /// Kernels of context-parallel choice `cpIndex` (SearchSpaceOptions::contextParallel).
    const LayerKernel &lk(int group, int tpIndex, int mb, size_t cpIndex = 0) const
    {
        return layerKernels[((cpIndex * groups + static_cast<size_t>(group)) * tpValues.size() + tpIndex) * (maxMb + 1)
                            + mb];
    }
    const MemoryKernel &mk(int group, int tpIndex, int mb, int p, size_t cpIndex = 0) const
    {
        return memKernels[(((cpIndex * groups + static_cast<size_t>(group)) * tpValues.size() + tpIndex) * (maxMb + 1)
                           + mb)
                              * 2
                          + (p > 1 ? 1 : 0)];
    }
};

struct ChunkOut {
    std::vector<double> t, m, b, bytes;
    std::vector<uint32_t> base, offset;
    std::vector<uint8_t> layers;
    std::vector<float> feats;
    PruneCounts pruned;
    uint64_t enumerated = 0;

    /// Empty, keeping the capacity (a streamed search reuses one per worker).
    void clear()
    {
        t.clear();
        m.clear();
        b.clear();
        bytes.clear();
        base.clear();
        offset.clear();
        layers.clear();
        feats.clear();
        pruned = PruneCounts {};
        enumerated = 0;
    }
};

struct Decoded {
    size_t pipeline = 0, mbIndex = 0, rcCombo = 0, distIndex = 0, vIndex = 0, cpIndex = 0;
};

/// Mixed radix, the last varying fastest: pipeline, micro-batch, recompute combination, context
/// parallelism, virtual stages, distributed optimizer. With one choice of virtual stages and of
/// CP the indices are those of a search without these dimensions.
Decoded decode(uint64_t base, size_t nMbs, size_t nRcCombos, size_t nDist, size_t nV, size_t nCp)
{
    Decoded d;
    d.distIndex = base % nDist;
    base /= nDist;
    d.vIndex = base % nV;
    base /= nV;
    d.cpIndex = base % nCp;
    base /= nCp;
    d.rcCombo = base % nRcCombos;
    base /= nRcCombos;
    d.mbIndex = base % nMbs;
    d.pipeline = base / nMbs;
    return d;
}

RecomputeMethod rcForType(size_t combo, int type, size_t nRc, const std::vector<RecomputeMethod> &choices)
{
    for (int i = 0; i < type; ++i)
        combo /= nRc;
    return choices[combo % nRc];
}

/// Largest-remainder rounding of positive weights to integers >= 1 summing to `total`.
void proportionalSplit(const double *weights, int p, int total, int *out)
{
    double sum = 0;
    for (int i = 0; i < p; ++i)
        sum += weights[i];
    int assigned = 0;
    double rem[64];
    for (int i = 0; i < p; ++i) {
        const double x = (total - p) * weights[i] / sum; // 1 layer each is reserved
        out[i] = 1 + static_cast<int>(std::floor(x));
        rem[i] = x - std::floor(x);
        assigned += out[i];
    }
    while (assigned < total) {
        int best = 0;
        for (int i = 1; i < p; ++i)
            if (rem[i] > rem[best])
                best = i;
        ++out[best];
        rem[best] = -1;
        ++assigned;
    }
}

/// A streamed search's configurations of completed chunks (SearchRequest::stream): a buffer that
/// drops what can no longer be shown whenever it holds too many rows. Rows carry their position in
/// the full enumeration (chunk << 32 | row), so the kept set and its order do not depend on which
/// worker saw which chunk (docs/search.md section 4.1).
/// rank()'s log score of (t, m, b) plus a constant of the space (its normalisers).
inline double unnormalisedScore(const ObjectiveWeights &o, double t, double m, double b)
{
    return o.time * std::log(std::max(t, 1e-300)) + o.memory * std::log(std::max(m, 1e-300))
        + o.balance * std::log(1.0 + std::max(0.0, b));
}

/// Rounding tolerance of a top-K threshold `kth`: rank()'s normalised score differs from the
/// unnormalised one by a constant plus a few ulps of the logarithms.
inline double scoreTolerance(const ObjectiveWeights &o, double kth)
{
    return 1e-9 * (1.0 + o.time + o.memory + o.balance) * (1.0 + std::abs(kth));
}

struct StreamKeeper {
    const StreamOptions *opt = nullptr;
    /// Filter of incoming rows, from the last compaction: per objective the top-K threshold (a row
    /// above every one is in no top K), some front points (a row one of them dominates is on no
    /// front), and the largest T, M, B seen (the first row with a new largest is always kept).
    std::vector<double> kth;
    std::vector<std::array<double, 3>> guards;
    double maxSeen[3] = {0, 0, 0};
    bool seen = false;
    std::vector<double> t, m, b, bytes;
    std::vector<uint32_t> base, offset;
    std::vector<uint64_t> key;
    std::vector<uint8_t> layers;
    PruneCounts pruned;
    uint64_t enumerated = 0, evaluated = 0;
    size_t compactAt = 0; ///< rows at which the next compaction runs

    size_t size() const { return t.size(); }
    size_t lengthOf(size_t row) const
    {
        return (row + 1 < offset.size() ? offset[row + 1] : layers.size()) - offset[row];
    }

    /// Whether row (t, m, b) can still be kept; updates the largest values seen.
    bool admit(double rt, double rm, double rb)
    {
        const double v[3] = {rt, rm, rb};
        bool pass = !seen;
        for (int k = 0; k < 3; ++k)
            if (!seen || v[k] > maxSeen[k]) {
                maxSeen[k] = v[k];
                pass = true;
            }
        seen = true;
        if (pass || kth.empty())
            return true;
        for (size_t o = 0; o < kth.size(); ++o) {
            const ObjectiveWeights &w = opt->objectives[o];
            if (unnormalisedScore(w, rt, rm, rb) <= kth[o] + scoreTolerance(w, kth[o]))
                return true;
        }
        for (const std::array<double, 3> &g : guards)
            if (g[0] <= rt && g[1] <= rm && g[2] <= rb && (g[0] < rt || g[1] < rm || g[2] < rb))
                return false;
        return true;
    }

    void add(const ChunkOut &co, size_t chunk)
    {
        for (size_t r = 0; r < co.t.size(); ++r) {
            if (!admit(co.t[r], co.m[r], co.b[r]))
                continue;
            t.push_back(co.t[r]);
            m.push_back(co.m[r]);
            b.push_back(co.b[r]);
            bytes.push_back(co.bytes[r]);
            base.push_back(co.base[r]);
            offset.push_back(static_cast<uint32_t>(layers.size()));
            const size_t end = r + 1 < co.offset.size() ? co.offset[r + 1] : co.layers.size();
            layers.insert(layers.end(), co.layers.begin() + co.offset[r], co.layers.begin() + end);
            key.push_back(static_cast<uint64_t>(chunk) << 32 | r);
        }
        enumerated += co.enumerated;
        pruned += co.pruned;
        evaluated += co.t.size();
        if (compactAt == 0)
            compactAt = std::max<size_t>(opt->bufferRows, 1024);
        if (size() >= compactAt) {
            compact();
            compactAt = std::max(compactAt, 2 * size()); // a large front must not make every chunk compact
        }
    }

    void append(StreamKeeper &&o)
    {
        const uint32_t shift = static_cast<uint32_t>(layers.size());
        t.insert(t.end(), o.t.begin(), o.t.end());
        m.insert(m.end(), o.m.begin(), o.m.end());
        b.insert(b.end(), o.b.begin(), o.b.end());
        bytes.insert(bytes.end(), o.bytes.begin(), o.bytes.end());
        base.insert(base.end(), o.base.begin(), o.base.end());
        key.insert(key.end(), o.key.begin(), o.key.end());
        for (uint32_t off : o.offset)
            offset.push_back(off + shift);
        layers.insert(layers.end(), o.layers.begin(), o.layers.end());
        enumerated += o.enumerated;
        pruned += o.pruned;
        evaluated += o.evaluated;
        o = StreamKeeper();
    }

    /// Rows in enumeration order (after append).
    void sortByKey()
    {
        std::vector<uint32_t> order(size());
        std::iota(order.begin(), order.end(), 0u);
        std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return key[x] < key[y]; });
        std::vector<char> keep(size(), 1);
        rebuild(order, keep);
    }

    /// Keeps the rows StreamOptions describes (a superset of what the whole enumeration would
    /// keep among these rows' positions: see StreamOptions), in their current order.
    void compact()
    {
        const size_t n = size();
        std::vector<char> keep(n, 0);
        const std::vector<uint32_t> front = paretoFront(MetricView {t.data(), m.data(), b.data(), n});
        for (uint32_t i : front)
            keep[i] = 1;
        guards.clear();
        const size_t nGuards = std::min<size_t>(front.size(), 16);
        for (size_t g = 0; g < nGuards; ++g) {
            const uint32_t i = front[g * front.size() / nGuards];
            guards.push_back({t[i], m[i], b[i]});
        }
        kth.clear();
        // The first row (by key) with the largest T, M and B: the objective's normalisers.
        size_t at[3] = {0, 0, 0};
        for (size_t i = 1; i < n; ++i) {
            const double v[3] = {t[i], m[i], b[i]}, w[3] = {t[at[0]], m[at[1]], b[at[2]]};
            for (int k = 0; k < 3; ++k)
                if (v[k] > w[k] || (v[k] == w[k] && key[i] < key[at[k]]))
                    at[k] = i;
        }
        if (n > 0)
            for (size_t k : at)
                keep[k] = 1;
        std::vector<double> score(n);
        for (const ObjectiveWeights &o : opt->objectives) {
            if (n <= opt->topK) {
                std::fill(keep.begin(), keep.end(), 1);
                kth.clear(); // fewer rows than K: no threshold yet
                break;
            }
            for (size_t i = 0; i < n; ++i)
                score[i] = unnormalisedScore(o, t[i], m[i], b[i]);
            std::vector<double> sorted = score;
            std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(opt->topK - 1), sorted.end());
            const double q = sorted[opt->topK - 1];
            const double tol = scoreTolerance(o, q);
            for (size_t i = 0; i < n; ++i)
                if (score[i] <= q + tol)
                    keep[i] = 1;
            kth.push_back(q);
        }
        std::vector<uint32_t> order(n);
        std::iota(order.begin(), order.end(), 0u);
        rebuild(order, keep);
    }

private:
    void rebuild(const std::vector<uint32_t> &order, const std::vector<char> &keep)
    {
        StreamKeeper out;
        out.opt = opt;
        out.pruned = pruned;
        out.enumerated = enumerated;
        out.evaluated = evaluated;
        out.compactAt = compactAt;
        out.kth = std::move(kth);
        out.guards = std::move(guards);
        std::copy(maxSeen, maxSeen + 3, out.maxSeen);
        out.seen = seen;
        for (uint32_t i : order) {
            if (!keep[i])
                continue;
            out.t.push_back(t[i]);
            out.m.push_back(m[i]);
            out.b.push_back(b[i]);
            out.bytes.push_back(bytes[i]);
            out.base.push_back(base[i]);
            out.key.push_back(key[i]);
            out.offset.push_back(static_cast<uint32_t>(out.layers.size()));
            const size_t len = lengthOf(i);
            out.layers.insert(out.layers.end(), layers.begin() + offset[i], layers.begin() + offset[i] + len);
        }
        *this = std::move(out);
    }
};

/// Context parallelism of size `cpv` applies to pipeline `ps`: every stage's DP group splits into
/// replicas of tp x cp GPUs inside one node, the sequence into 2 x cp chunks, and (a2a) each TP
/// rank's heads over the CP ranks; no mixed stage.
bool contextParallelFits(const SearchRequest &r, const PipelineShape &ps, int cpv)
{
    const ModelShape &shape = r.model.shape;
    if (shape.seqLength % (2 * cpv) != 0)
        return false;
    for (const StageShape &s : ps.stages) {
        if (s.mixed() || s.dp % cpv != 0
            || r.cluster.groups[static_cast<size_t>(s.group)].gpusPerNode % (s.tp * cpv) != 0)
            return false;
        if (r.space.cpComm == CpComm::A2A && ((shape.heads / s.tp) % cpv != 0 || (shape.kvGroups / s.tp) % cpv != 0))
            return false;
    }
    return true;
}

class Evaluator {
public:
    explicit Evaluator(const Context &ctx)
        : c(ctx)
        , r(*ctx.req)
    {
    }

    void runBase(uint64_t baseIndex, ChunkOut &out)
    {
        const Decoded d = decode(baseIndex, c.nMbs, c.nRcCombos, c.nDist, c.nV, c.nCp);
        const PipelineShape &ps = c.pipelines[d.pipeline];
        const int p = static_cast<int>(ps.stages.size());
        const int mb = r.space.microBatches[d.mbIndex];
        const int v = r.space.virtualStages[d.vIndex];
        const int cpv = r.space.contextParallel[d.cpIndex];
        cpNow = cpv;
        const DpSharding shard = r.space.dpSharding[d.distIndex];
        if (d.pipeline != dpCachePipeline || d.mbIndex != dpCacheMb) {
            dpCachePipeline = d.pipeline;
            dpCacheMb = d.mbIndex;
            dpCache.assign(static_cast<size_t>(p) * (c.layers + 1) * 2,
                           DpComm {std::numeric_limits<double>::quiet_NaN(), 0.0});
        }
        auto prune = [&](uint64_t &reason) {
            ++out.enumerated;
            ++reason;
        };
        if (uint64_t *reason = shardingPruned(shard, ps, p, out))
            return prune(*reason);
        if (!ps.decidingType.empty()) {
            // A device type whose choice decides no stage (it is only a mixed stage's second
            // part): any other choice than its first is the same plan again.
            size_t combo = d.rcCombo;
            for (size_t t = 0; t < c.nTypes; ++t, combo /= c.nRc)
                if (!ps.decidingType[t] && combo % c.nRc != 0)
                    return prune(out.pruned.duplicates);
        }
        // Context parallelism: each stage's DP group of s.dp TP groups becomes s.dp / cp replicas
        // of tp x cp GPUs of one node (gradients still reduce over all s.dp, the distributed
        // optimizer shards over them). Not with mixed stages.
        if (cpv > 1 && !contextParallelFits(r, ps, cpv))
            return prune(out.pruned.divisibility);
        const int stepSamples = mb * (ps.maxDp / cpv);
        if (c.gbs % stepSamples != 0 && !r.space.roundGlobalBatch)
            return prune(out.pruned.divisibility);
        const int m = c.gbs % stepSamples == 0 ? c.gbs / stepSamples : roundedMicroBatchCount(c.gbs, stepSamples);
        planBatch = m * stepSamples;
        // The interleaved schedule (Megatron-LM): pp > 2, micro-batches in groups of pp, every
        // stage a whole number of chunks of `v` layers (at least one chunk each).
        if (v > 1 && (p < 3 || m % p != 0 || c.layers % v != 0 || c.layers / v < p))
            return prune(out.pruned.divisibility);
        unit = v;
        for (int i = 0; i < p; ++i) {
            const StageShape &s = ps.stages[static_cast<size_t>(i)];
            if (!s.mixed()) {
                const int replicas = s.dp / cpv;
                if (stepSamples % replicas != 0)
                    return prune(out.pruned.divisibility);
                mbs[i] = stepSamples / replicas;
                mbs2[i] = 0;
            } else {
                const auto split = mixedMicroBatches(stepSamples, s.dp1, s.dp2, s.w1, s.w2);
                if (!split)
                    return prune(out.pruned.divisibility);
                mbs[i] = split->first;
                mbs2[i] = split->second;
            }
            if (std::max(mbs[i], mbs2[i]) > c.maxMb)
                return prune(out.pruned.microBatchLimit);
            if (c.fp8Refused(d.cpIndex, s.tpIndex, mbs[i])
                || (mbs2[i] > 0 && c.fp8Refused(d.cpIndex, s.tpIndex, mbs2[i])))
                return prune(out.pruned.divisibility);
        }
        if (!ps.launchOk.empty()
            && !ps.launchOk[((d.mbIndex * c.nCp + d.cpIndex) * c.nV + d.vIndex) * c.nDist + d.distIndex])
            return prune(out.pruned.launcher);
        for (int i = 0; i < p; ++i)
            methods[i] = rcForType(d.rcCombo, ps.stages[static_cast<size_t>(i)].deviceType, c.nRc, r.space.recompute);
        if (!recomputeAllowed(c.target, methods, static_cast<size_t>(p)))
            return prune(out.pruned.launcher);
        anyFull = false;
        noneOffered = std::find(r.space.recompute.begin(), r.space.recompute.end(), RecomputeMethod::None)
            != r.space.recompute.end();
        for (int i = 0; i < p; ++i) {
            const StageShape &s = ps.stages[static_cast<size_t>(i)];
            rc[i].method = methods[i];
            rc[i].layers = 0;
            anyFull = anyFull || methods[i] == RecomputeMethod::Full;
            inFlight[i] = inFlightMicroBatches(p, i, m, v);
            groups[i] = (s.tp > 1) + (cpv > 1) + (s.dp > 1) + (p > 1);
            // Per-layer time (speed) and linear memory model for the splits, per part.
            double slowest = 0;
            maxLayers[i] = 1 << 30;
            for (int part = 0; part < (s.mixed() ? 2 : 1); ++part) {
                const int g = part ? s.group2 : s.group;
                const int b = part ? mbs2[i] : mbs[i];
                kern[part][i] = &c.lk(g, s.tpIndex, b, d.cpIndex);
                mem[part][i] = &c.mk(g, s.tpIndex, b, p, d.cpIndex);
                const ReplicaStep all = replicaStep(*kern[part][i], 0, c.layers, false, false, rc[i]);
                slowest = std::max(slowest, all.total());
                const MemoryBreakdown m0
                    = gpuMemory(*mem[part][i], 0, i == 0, i == p - 1, rc[i], inFlight[i], s.dp, shard, groups[i]);
                const MemoryBreakdown m1
                    = gpuMemory(*mem[part][i], 1, i == 0, i == p - 1, rc[i], inFlight[i], s.dp, shard, groups[i]);
                const double slope = m1.total() - m0.total();
                memBase[part][i] = m0.total();
                memSlope[part][i] = slope;
                if (methods[i] == RecomputeMethod::Full) {
                    // Bytes one layer adds when it is not recomputed (whole activations kept
                    // instead of its input): the step of the partial-recompute memory line.
                    const auto two = [&](int k) {
                        return gpuMemory(*mem[part][i], 2, false, false, {RecomputeMethod::Full, k}, inFlight[i], s.dp,
                                         shard, groups[i])
                            .total();
                    };
                    keptLayerBytes[part][i] = two(1) - two(2);
                }
                const double room = (part ? s.capacity2 : s.capacityBytes) - m0.total();
                maxLayers[i] = std::min(maxLayers[i],
                                        room < slope ? 0 : static_cast<int>(std::min(1e6, std::floor(room / slope))));
            }
            speed[i] = c.layers / slowest;
        }
        // P2P of stage i: one activation of its largest micro-batch (s / cp tokens, / tp with SP)
        // to the next stage, and with interleaving from the last stage to the first.
        const auto sendMs = [&](int i, const std::vector<Link> &links) {
            const double bytes = static_cast<double>(std::max(mbs[i], mbs2[i])) * r.model.shape.seqLength / cpv
                * r.model.shape.hidden * 2.0 / (r.space.sequenceParallel ? ps.stages[static_cast<size_t>(i)].tp : 1);
            return worstTransferMs(links, bytes) + r.cost.p2pOpOverheadMs;
        };
        for (int i = 0; i + 1 < p; ++i)
            p2p[i] = sendMs(i, ps.p2pLinks[static_cast<size_t>(i)]);
        wrapP2p = v > 1 ? sendMs(p - 1, ps.wrapLinks) : 0.0;

        candidateSplits(p, out);
        const bool partial = anyFull && r.space.partialRecompute;
        for (int ci = 0; ci < nCand; ++ci) {
            ++out.enumerated;
            const uint8_t *split = &cand[ci * 64];
            if (!evaluateSplit(ps, split, p, m, v, shard, baseIndex, out, nullptr) || !partial)
                continue;
            // Partial recompute: the same split with the fewest recomputed layers that fit (only
            // when every layer recomputed fits; fewer can only need more memory).
            ++out.enumerated;
            uint8_t k[64];
            if (!fewestRecomputedLayers(ps, split, p, v, shard, k)) {
                ++out.pruned.duplicates;
                continue;
            }
            for (int i = 0; i < p; ++i)
                if (methods[i] == RecomputeMethod::Full)
                    rc[i] = k[i] == 0 ? Recompute {} : Recompute {RecomputeMethod::Full, k[i] == split[i] ? 0 : k[i]};
            evaluateSplit(ps, split, p, m, v, shard, baseIndex, out, k);
            for (int i = 0; i < p; ++i)
                rc[i] = {methods[i], 0};
        }
    }

private:
    /// The prune counter of a sharding choice that adds nothing or cannot run on this pipeline;
    /// nullptr to keep it.
    uint64_t *shardingPruned(DpSharding shard, const PipelineShape &ps, int p, ChunkOut &out) const
    {
        if (shard == DpSharding::Optimizer && ps.maxDp == 1 && c.hasPlainOptimizer)
            return &out.pruned.duplicates;
        // Megatron-FSDP: one stage (no pipeline parallelism), and at DP 1 nothing to shard.
        if (shard >= DpSharding::Gradients && p > 1)
            return &out.pruned.launcher;
        // MoE: validatePlan refuses Megatron-FSDP with experts (not modelled).
        if (shard >= DpSharding::Gradients && c.req->model.shape.isMoe())
            return &out.pruned.launcher;
        if (shard >= DpSharding::Gradients && ps.maxDp == 1 && c.hasUnshardedChoice)
            return &out.pruned.duplicates;
        return nullptr;
    }

    /// The base's candidate splits into cand / nCand, in whole chunks of `unit` layers (1 without
    /// interleaving): the compute-proportional split, its neighbours (1..neighbourRadius chunks
    /// moved across a boundary) and the memory-aware split; the pruned ones counted into `out`.
    void candidateSplits(int p, ChunkOut &out)
    {
        nCand = 0;
        int prop[64];
        const int units = c.layers / unit;
        proportionalSplit(speed, p, units, prop);
        addCandidate(prop, p);
        for (int j = 0; j + 1 < p; ++j)
            for (int delta = -r.space.neighbourRadius; delta <= r.space.neighbourRadius; ++delta) {
                if (delta == 0)
                    continue;
                int split[64];
                std::copy(prop, prop + p, split);
                split[j] -= delta;
                split[j + 1] += delta;
                if (split[j] < 1 || split[j + 1] < 1) {
                    ++out.enumerated;
                    ++out.pruned.layers;
                    continue;
                }
                addCandidate(split, p);
            }
        // The memory-aware split last, so it can be checked against all others.
        if (r.space.memoryAwareSplit) {
            int capSum = 0;
            for (int i = 0; i < p; ++i)
                capSum += std::min(maxLayers[i] / unit, units);
            if (capSum >= units) {
                int split[64];
                memoryAwareSplit(p, split, units);
                addCandidate(split, p, true);
            }
        }
        out.pruned.duplicates += nDuplicates;
        out.enumerated += nDuplicates;
        nDuplicates = 0;
        out.pruned.layers += nTooDeep; // a stage over kMaxStageLayers: counted, never wrapped
        out.enumerated += nTooDeep;
        nTooDeep = 0;
    }

    /// `units` per stage: chunks of `unit` layers.
    void addCandidate(const int *units, int p, bool checkDuplicates = false)
    {
        int split[64];
        for (int i = 0; i < p; ++i)
            split[i] = units[i] * unit;
        // Layer counts are stored in 8 bits (SearchResult::layerCounts): refuse, don't wrap.
        for (int i = 0; i < p; ++i)
            if (split[i] > kMaxStageLayers) {
                ++nTooDeep;
                return;
            }
        if (checkDuplicates) {
            for (int ci = 0; ci < nCand; ++ci) {
                bool same = true;
                for (int i = 0; i < p && same; ++i)
                    same = cand[ci * 64 + i] == split[i];
                if (same) {
                    ++nDuplicates;
                    return;
                }
            }
        }
        if (static_cast<size_t>(nCand + 1) * 64 > cand.size())
            cand.resize(cand.size() * 2 + 64 * 64);
        for (int i = 0; i < p; ++i)
            cand[nCand * 64 + i] = static_cast<uint8_t>(split[i]);
        ++nCand;
    }

    /// Water-filling: speed-proportional targets, capped by what fits in memory; the excess
    /// goes to the stages with room, again in proportion to speed. In chunks of `unit` layers:
    /// `total` chunks, stage i holds at most maxLayers[i] / unit.
    void memoryAwareSplit(int p, int *out, int total)
    {
        double target[64];
        bool capped[64];
        int cap[64];
        for (int i = 0; i < p; ++i) {
            capped[i] = false;
            cap[i] = maxLayers[i] / unit;
        }
        int remaining = total;
        for (int iter = 0; iter < p; ++iter) {
            double sum = 0;
            for (int i = 0; i < p; ++i)
                if (!capped[i])
                    sum += speed[i];
            bool changed = false;
            for (int i = 0; i < p; ++i)
                if (!capped[i]) {
                    target[i] = remaining * speed[i] / sum;
                    if (target[i] > cap[i]) {
                        capped[i] = true;
                        target[i] = cap[i];
                        changed = true;
                    }
                }
            if (!changed)
                break;
            remaining = total;
            for (int i = 0; i < p; ++i)
                if (capped[i])
                    remaining -= static_cast<int>(target[i]);
        }
        // Round down, then hand out the remaining layers to the stages with room, largest
        // fractional part first; every stage keeps at least one layer.
        int assigned = 0;
        double frac[64];
        for (int i = 0; i < p; ++i) {
            out[i] = std::max(1, static_cast<int>(std::floor(target[i])));
            frac[i] = target[i] - std::floor(target[i]);
            assigned += out[i];
        }
        while (assigned < total) {
            int best = -1;
            for (int i = 0; i < p; ++i)
                if (out[i] < cap[i] && (best < 0 || frac[i] > frac[best]))
                    best = i;
            if (best < 0)
                best = 0;
            ++out[best];
            frac[best] = -1;
            ++assigned;
        }
        // Stages whose target was below one layer were raised to one: take the excess back from
        // the stages with more than one layer, the one furthest over its memory cap first. (Taking
        // it only from the stage furthest over its cap stopped when that stage held a single
        // layer, and the split covered more layers than the model has: issue 22.) p <= L, so a
        // stage with more than one layer exists while assigned > L.
        while (assigned > total) {
            int best = -1;
            for (int i = 0; i < p; ++i)
                if (out[i] > 1 && (best < 0 || out[i] - cap[i] > out[best] - cap[best]))
                    best = i;
            --out[best];
            --assigned;
        }
    }

    /// Memory of part `part` of stage i holding n layers under rc[i]: the base's linear model, or
    /// for a stage whose recompute a partial variant changed (`partial`) the model itself.
    double stageBytes(int part, int i, int n, int p, const StageShape &s, DpSharding shard, bool partial) const
    {
        if (!partial || methods[i] != RecomputeMethod::Full)
            return memBase[part][i] + n * memSlope[part][i];
        return gpuMemory(*mem[part][i], n, i == 0, i == p - 1, rc[i], inFlight[i], s.dp, shard, groups[i]).total();
    }

    /// The fewest recomputed layers per stage of a Full choice that fit, into k (0: none): from
    /// the memory line M(k) = M(all) + (n - k) x keptLayerBytes, in whole model chunks with the
    /// interleaved schedule, one count for every stage on Megatron-LM (its "block" k applies to
    /// every stage, min(k, layers)); each checked with gpuMemory. False when that is every layer
    /// of every such stage (the configuration already evaluated), or no layer of any while the
    /// space offers the "none" choice (that plan's base is in the space).
    bool fewestRecomputedLayers(const PipelineShape &ps, const uint8_t *split, int p, int v, DpSharding shard,
                                uint8_t *k)
    {
        int need[64];
        int uniform = 1; // Megatron-LM: recomputed layers per model chunk, at least one
        for (int i = 0; i < p; ++i) {
            need[i] = 0;
            if (methods[i] != RecomputeMethod::Full)
                continue;
            const StageShape &s = ps.stages[static_cast<size_t>(i)];
            const int n = split[i];
            for (int part = 0; part < (s.mixed() ? 2 : 1); ++part) {
                const double room = (part ? s.capacity2 : s.capacityBytes) - (memBase[part][i] + n * memSlope[part][i]);
                const double per = keptLayerBytes[part][i];
                const int kept = per > 0 ? static_cast<int>(std::min<double>(n, std::floor(room / per))) : n;
                need[i] = std::max(need[i], n - std::max(0, kept));
            }
            need[i] = std::min(n, (need[i] + v - 1) / v * v);
            uniform = std::max(uniform, (need[i] + v - 1) / v);
        }
        const bool megatron = c.target == LaunchTarget::Megatron;
        if (megatron && noneOffered) {
            // One block count for the job, at least one layer per chunk: when every stage fits
            // without recompute, that is the "none" base's plan (a variant would only be slower).
            bool allFitWithout = true;
            for (int i = 0; i < p && allFitWithout; ++i)
                allFitWithout = methods[i] != RecomputeMethod::Full || fitsWithRecomputed(ps, i, split[i], p, 0, shard);
            if (allFitWithout)
                return false;
        }
        int maxChunks = 0;
        for (int i = 0; i < p; ++i)
            if (methods[i] == RecomputeMethod::Full)
                maxChunks = std::max(maxChunks, split[i] / v);
        for (;;) {
            bool fewer = false, retry = false;
            for (int i = 0; i < p && !retry; ++i) {
                k[i] = 0;
                if (methods[i] != RecomputeMethod::Full)
                    continue;
                const int n = split[i];
                int ki = megatron ? v * std::min(uniform, n / v) : need[i];
                // The line is exact to rounding: confirm with the model, one chunk more if it says
                // no (on Megatron-LM: one more layer per chunk for every stage).
                while (ki < n && !fitsWithRecomputed(ps, i, n, p, ki, shard)) {
                    if (megatron) {
                        retry = true;
                        break;
                    }
                    ki = std::min(n, ki + v);
                }
                // The line counts the full-recompute working set (one layer's whole activations
                // during its recompute), which a stage without recompute does not need: it may
                // fit with none where the line says some.
                if (!megatron && ki > 0 && fitsWithRecomputed(ps, i, n, p, 0, shard))
                    ki = 0;
                k[i] = static_cast<uint8_t>(ki);
                fewer = fewer || ki < n;
            }
            if (!retry)
                return fewer && !sameAsWholeTypes(ps, split, k, p);
            if (++uniform >= maxChunks)
                return false; // every stage recomputes all its layers
        }
    }

    /// Whether the variant `k` is a plan of per-type recompute after all, which another base gives:
    /// some device type of a Full choice recomputes no layer on any of its stages while the space
    /// offers "none" (the base with that type on none), or every such type recomputes every layer
    /// of its stages (the whole-stage configuration itself).
    bool sameAsWholeTypes(const PipelineShape &ps, const uint8_t *split, const uint8_t *k, int p)
    {
        // Per device type: bit 0 some stage recomputes nothing, bit 1 some stage all, bit 2 some part.
        typeState.assign(c.nTypes, 0);
        for (int i = 0; i < p; ++i) {
            if (methods[i] != RecomputeMethod::Full)
                continue;
            uint8_t &t = typeState[static_cast<size_t>(ps.stages[static_cast<size_t>(i)].deviceType)];
            t |= k[i] == 0 ? 1 : k[i] >= split[i] ? 2 : 4;
        }
        bool allWhole = true;
        for (uint8_t t : typeState) {
            if (t == 1 && noneOffered)
                return true;
            allWhole = allWhole && (t == 0 || t == 2);
        }
        return allWhole;
    }

    /// Whether stage i of n layers fits with `k` of them recomputed (0: no recompute).
    bool fitsWithRecomputed(const PipelineShape &ps, int i, int n, int p, int k, DpSharding shard)
    {
        const StageShape &s = ps.stages[static_cast<size_t>(i)];
        rc[i] = k == 0 ? Recompute {} : Recompute {RecomputeMethod::Full, k};
        bool fits = true;
        for (int part = 0; part < (s.mixed() ? 2 : 1) && fits; ++part)
            fits = stageBytes(part, i, n, p, s, shard, true) <= (part ? s.capacity2 : s.capacityBytes);
        rc[i] = {methods[i], 0};
        return fits;
    }

    /// Evaluates one split of the base (rc[] holds its recompute; `partial`: the recomputed
    /// layers of a partial-recompute variant, stored after the layer counts). False when pruned.
    bool evaluateSplit(const PipelineShape &ps, const uint8_t *split, int p, int m, int v, DpSharding shard,
                       uint64_t baseIndex, ChunkOut &out, const uint8_t *partial)
    {
        fsdpNow = 0;
        // Cheap pre-filter from the linear memory model (one layer of slack for rounding; the
        // exact check below decides the borderline case).
        for (int i = 0; i < p; ++i)
            if (split[i] > maxLayers[i] + 1) {
                ++out.pruned.outOfMemory;
                return false;
            }
        double maxUtil = 0, maxBytes = 0, sumU = 0, sumW = 0;
        double util[128], weight[128];
        int nUtil = 0;
        int first = 0;
        double maxDp = 0, maxOpt = 0, steps[64];
        DpOverlapStage *ov = overlapBuf; // per evaluator: no 64-stage construction per split
        for (int i = 0; i < p; ++i) {
            const StageShape &s = ps.stages[static_cast<size_t>(i)];
            const int n = split[i];
            const bool hasEmb = i == 0, hasHead = i == p - 1;
            const int parts = s.mixed() ? 2 : 1;
            steps[i] = 0;
            double optMs = 0;
            const double share = shard != DpSharding::None ? 1.0 / s.dp : 1.0;
            for (int part = 0; part < parts; ++part) {
                // gpuMemory is linear in the layer count: base + n x slope (same value to rounding).
                const double total = stageBytes(part, i, n, p, s, shard, partial != nullptr);
                const double capacity = part ? s.capacity2 : s.capacityBytes;
                if (total > capacity) {
                    ++out.pruned.outOfMemory;
                    return false;
                }
                const int gpus = part ? s.dp2 * s.tp : s.dp1 * s.tp;
                util[nUtil] = total / capacity;
                weight[nUtil] = gpus;
                maxUtil = std::max(maxUtil, util[nUtil]);
                maxBytes = std::max(maxBytes, total);
                sumU += util[nUtil] * gpus;
                sumW += gpus;
                ++nUtil;

                const LayerKernel &k = *kern[part][i];
                const ReplicaStep rs = replicaStep(k, first, n, hasEmb, hasHead, rc[i]);
                if (part == 0 || rs.total() > steps[i]) {
                    steps[i] = rs.total();
                    ov[i].forwardMs = rs.forwardMs + 0.5 * (rs.tpCommMs + rs.cpCommMs);
                    ov[i].backwardMs = rs.backwardMs + rs.recomputeMs + 0.5 * (rs.tpCommMs + rs.cpCommMs);
                }
                const MemoryKernel &mk = *mem[part][i];
                const double psi
                    = n * mk.layerParams + (hasEmb ? mk.embeddingParams : 0) + (hasHead ? mk.headParams : 0);
                const double cast = n * mk.layerParams * k.fp8WeightCastMsPerParam; // FP8 weight copies
                if (!k.optimizerPrefixMs.empty())
                    optMs = std::max(optMs,
                                     (k.optimizerPrefixMs[first + n] - k.optimizerPrefixMs[first]
                                      + (hasEmb ? k.embeddingOptimizerMs : 0) + (hasHead ? k.headOptimizerMs : 0))
                                             * share
                                         + cast);
                else
                    optMs = std::max(optMs, psi * share * k.optimizerMsPerParam + cast);
                // DP gradient bytes from the first part (estimatePlan: replica 0's device; the
                // parameter count depends on TP only).
                if (part == 0) {
                    ov[i].comm = {};
                    ov[i].params = psi;
                    ov[i].dp = s.dp / cpNow; // Megatron's dp group (without CP) sizes the buckets
                    ov[i].p2pMs = i + 1 < p ? p2p[i] : 0.0;
                }
                if (part == 0 && s.dp > 1) {
                    // The same for every recompute choice of the (pipeline, micro-batch): cached per
                    // stage, layer count and optimizer (dpCache, reset in runBase).
                    DpComm &slot = dpCache[(static_cast<size_t>(i) * (c.layers + 1) + n) * 2
                                           + (shard != DpSharding::None ? 1 : 0)];
                    if (std::isnan(slot.reduceMs))
                        slot = dpCommMs(s.dp, psi, r.cost.gradReduceBytesPerParam, shard != DpSharding::None, s.dpLinks,
                                        s.dpFlows);
                    ov[i].comm = slot;
                    maxDp = std::max(maxDp, slot.total());
                }
            }
            maxOpt = std::max(maxOpt, optMs);
            first += n;
        }
        if (shard >= DpSharding::Gradients) {
            // Megatron-FSDP (one stage): the per-micro-batch traffic joins the step (estimatePlan).
            const FsdpComm f = fsdpMicroBatchComm(shard, ov[0].comm, ov[0].forwardMs, ov[0].backwardMs, split[0] + 2,
                                                  r.cost.overlapContention);
            fsdpNow = f.microBatchMs;
            steps[0] += f.microBatchMs;
            ov[0].comm = f.iteration;
            maxDp = f.iteration.total();
        }
        if (r.space.overlapDataParallel) {
            double exposed[64];
            maxDp = exposedDpSyncMs(ov, p, true, shard != DpSharding::None, exposed, r.cost.overlapContention);
        }
        const double pipe = pipelineMakespanMs(p, m, steps, p2p, r.cost.exposedP2pFraction, v, wrapP2p);
        const double mean = sumU / sumW;
        double var = 0;
        for (int i = 0; i < nUtil; ++i)
            var += weight[i] * (util[i] - mean) * (util[i] - mean);
        out.t.push_back(pipe + maxDp + maxOpt + r.cost.iterationOverheadMs);
        out.m.push_back(maxUtil);
        out.b.push_back(mean > 0 ? std::sqrt(var / sumW) / mean : 0);
        out.bytes.push_back(maxBytes);
        out.base.push_back(static_cast<uint32_t>(baseIndex));
        out.offset.push_back(static_cast<uint32_t>(out.layers.size()));
        out.layers.insert(out.layers.end(), split, split + p);
        if (partial)
            out.layers.insert(out.layers.end(), partial, partial + p);
        if (r.collectFeatures)
            collectFeatures(ps, split, p, m, shard, pipe, maxDp, maxOpt, maxUtil, out);
        return true;
    }

    /// The learned predictor's inputs, computed exactly as featureInputs(estimatePlan(...)) does.
    void collectFeatures(const PipelineShape &ps, const uint8_t *split, int p, int m, DpSharding shard, double pipe,
                         double maxDp, double maxOpt, double maxUtil, ChunkOut &out)
    {
        PlanFeatureInputs in;
        in.pipelineMs = pipe;
        in.dpSyncMs = maxDp;
        in.optimizerMs = maxOpt;
        in.iterationTimeMs = out.t.back();
        in.imbalance = out.b.back();
        in.peakUtilisation = maxUtil;
        in.microBatches = m;
        in.stages = p;
        in.distributedOptimizer = shard != DpSharding::None;
        in.sequenceParallel = r.space.sequenceParallel;
        in.modelParams = c.modelParams;
        in.layers = r.model.shape.layers;
        in.hidden = r.model.shape.hidden;
        in.seqLength = r.model.shape.seqLength;
        in.globalBatch = planBatch;
        in.minDp = 1 << 30;
        in.maxDp = 0;
        in.maxTp = 0;
        in.totalGpus = 0;
        int first = 0, bn = 0, pk = 0, bnPart = 0, pkPart = 0;
        double bnStep = 0, pkBytes = 0;
        ReplicaStep bnParts;
        MemoryBreakdown pkMem;
        double simF[64], simB[64], simC[64];
        for (int i = 0; i < p; ++i) {
            const StageShape &s = ps.stages[static_cast<size_t>(i)];
            const int n = split[i];
            const bool hasEmb = i == 0, hasHead = i == p - 1;
            // The slowest replica sets the stage (the first part wins a tie: its replicas come first).
            ReplicaStep st = replicaStep(*kern[0][i], first, n, hasEmb, hasHead, rc[i]);
            int slowPart = 0;
            if (s.mixed()) {
                const ReplicaStep st2 = replicaStep(*kern[1][i], first, n, hasEmb, hasHead, rc[i]);
                if (st2.total() > st.total()) {
                    st = st2;
                    slowPart = 1;
                }
            }
            const double step = st.total() + (i == 0 ? fsdpNow : 0.0); // + Megatron-FSDP traffic
            simF[i] = st.forwardMs + 0.5 * st.tpCommMs;
            simB[i] = st.backwardMs + st.recomputeMs + 0.5 * st.tpCommMs;
            simC[i] = i + 1 < p ? p2p[i] : 0.0;
            if (step > 0) {
                in.maxTpStepsPerMs = std::max(in.maxTpStepsPerMs, 8.0 * (s.tp - 1) * n / step);
                in.maxTpCommFrac = std::max(in.maxTpCommFrac, st.tpCommMs / step);
            }
            if (i == 0 || step > bnStep) {
                bn = i;
                bnStep = step;
                bnParts = st;
                bnPart = slowPart;
            }
            for (int part = 0; part < (s.mixed() ? 2 : 1); ++part) {
                const MemoryBreakdown mb
                    = gpuMemory(*mem[part][i], n, hasEmb, hasHead, rc[i], inFlight[i], s.dp, shard, groups[i]);
                if ((i == 0 && part == 0) || mb.total() > pkBytes) {
                    pk = i;
                    pkPart = part;
                    pkBytes = mb.total();
                    pkMem = mb;
                }
            }
            in.maxStepMs = std::max(in.maxStepMs, step);
            in.sumStepMs += step;
            if (i + 1 < p) {
                in.maxP2pMs = std::max(in.maxP2pMs, p2p[i]);
                in.sumP2pMs += p2p[i];
            }
            in.maxDp = std::max(in.maxDp, s.dp / cpNow);
            in.minDp = std::min(in.minDp, s.dp / cpNow);
            in.maxTp = std::max(in.maxTp, s.tp);
            in.totalGpus += s.gpus;
            switch (rc[i].method) {
            case RecomputeMethod::None:
                ++in.recomputeNone;
                break;
            case RecomputeMethod::Selective:
                ++in.recomputeSelective;
                break;
            case RecomputeMethod::Full:
                ++in.recomputeFull;
                break;
            }
            first += n;
        }
        const StageShape &b = ps.stages[static_cast<size_t>(bn)];
        in.bnForwardMs = bnParts.forwardMs;
        in.bnBackwardMs = bnParts.backwardMs;
        in.bnRecomputeMs = bnParts.recomputeMs;
        in.bnTpCommMs = bnParts.tpCommMs;
        in.bnTp = b.tp;
        in.bnDp = b.dp / cpNow;
        in.bnMicroBatch = bnPart ? mbs2[bn] : mbs[bn];
        in.bnPeakTflops = c.groupPeakTflops[static_cast<size_t>(bnPart ? b.group2 : b.group)];
        const StageShape &k = ps.stages[static_cast<size_t>(pk)];
        in.pkParams = pkMem.params;
        in.pkGrads = pkMem.grads;
        in.pkOptimizer = pkMem.optimizer;
        in.pkActivations = pkMem.activations;
        in.pkOverhead = pkMem.overhead;
        in.pkTotal = pkMem.total();
        in.pkCapacity = pkPart ? k.capacity2 : k.capacityBytes;
        in.pkStage = pk;
        in.pkTp = k.tp;
        in.pkDp = k.dp / cpNow;
        in.pkMicroBatch = pkPart ? mbs2[pk] : mbs[pk];
        in.pkInFlight = static_cast<int>(std::ceil(inFlight[pk] - 1e-9));
        in.pkLayers = split[pk];
        in.pipelineSimMs = oneFOneBMakespanMs(simF, simB, simC, p, m);
        const size_t at = out.feats.size();
        out.feats.resize(at + kFeatureCount);
        encodeFeatures(in, out.feats.data() + at);
    }

    const Context &c;
    const SearchRequest &r;
    int mbs[64] = {}, mbs2[64] = {}; ///< per stage: micro-batch of the first / second part's replicas
    int planBatch = 0; ///< the current base's global batch (the request's, or rounded)
    /// DP synchronisation time per (stage, layer count, optimizer) of one (pipeline, micro-batch):
    /// it depends on neither the recompute choice nor the rest of the split. NaN: not computed yet.
    std::vector<DpComm> dpCache;
    DpOverlapStage overlapBuf[64]; ///< evaluateSplit's per-stage DP figures (exposedDpSyncMs)
    size_t dpCachePipeline = SIZE_MAX, dpCacheMb = SIZE_MAX;
    RecomputeMethod methods[64] = {};
    Recompute rc[64];
    bool anyFull = false; ///< some stage of the base has a Full choice
    /// The space offers the "none" choice (SearchSpaceOptions::recompute holds None).
    bool noneOffered = false;
    std::vector<uint8_t> typeState; ///< sameAsWholeTypes' per-device-type scratch
    double keptLayerBytes[2][64] = {}; ///< [part][stage] with Full: bytes a layer not recomputed adds
    const LayerKernel *kern[2][64] = {}; ///< [part][stage]
    const MemoryKernel *mem[2][64] = {};
    double inFlight[64] = {};
    int unit = 1; ///< layers per chunk of the splits: the base's virtual stages (1 without interleaving)
    double fsdpNow = 0; ///< Megatron-FSDP exposed traffic per micro-batch of the split (stage 0)
    int cpNow = 1; ///< the base's context-parallel size (replicas of a stage = s.dp / cpNow)
    double wrapP2p = 0; ///< interleaved: the last stage's send to the first
    int groups[64] = {};
    double speed[64] = {};
    int maxLayers[64] = {};
    double p2p[64] = {};
    double memBase[2][64] = {};
    double memSlope[2][64] = {};
    std::vector<uint8_t> cand = std::vector<uint8_t>(64 * 128);
    int nCand = 0;
    uint64_t nDuplicates = 0;
    uint64_t nTooDeep = 0; ///< candidate splits with a stage over kMaxStageLayers
};

/// The TP degrees of the space that divide the model's heads and KV groups, each once.
std::vector<int> usableTpDegrees(const SearchRequest &req)
{
    std::vector<int> out;
    for (int t : req.space.tensorParallel)
        if (t >= 1 && req.model.shape.heads > 0 && req.model.shape.heads % t == 0 && req.model.shape.kvGroups % t == 0
            && std::find(out.begin(), out.end(), t) == out.end())
            out.push_back(t);
    return out;
}

/// One entry of the pipeline order: a node group, or two groups of different device types whose
/// slices share stages (a mixed unit: each stage's DP group has replicas on both).
struct Unit {
    int a = -1, b = -1; ///< group indices; b = -1 for a single group
};

/// (slices, TP index) choices of a unit: the slice count divides every part's GPUs into slices of
/// whole nodes or of a node's divisor; TP divides every part's GPUs per node and slice.
std::vector<std::pair<int, int>> unitOptions(const Cluster &cl, const SearchSpaceOptions &space,
                                             const std::vector<int> &tpValues, const Unit &u)
{
    std::vector<std::pair<int, int>> out;
    for (int s : space.stagesPerGroup) {
        bool ok = s >= 1;
        for (int g : {u.a, u.b}) {
            if (g < 0 || !ok)
                continue;
            const NodeGroup &ng = cl.groups[static_cast<size_t>(g)];
            const int total = ng.gpusPerNode * ng.count;
            ok = total % s == 0 && ((total / s) % ng.gpusPerNode == 0 || ng.gpusPerNode % (total / s) == 0);
        }
        if (!ok)
            continue;
        for (size_t ti = 0; ti < tpValues.size(); ++ti) {
            const int t = tpValues[ti];
            bool fits = true;
            for (int g : {u.a, u.b})
                if (g >= 0) {
                    const NodeGroup &ng = cl.groups[static_cast<size_t>(g)];
                    fits = fits && ng.gpusPerNode % t == 0 && (ng.gpusPerNode * ng.count / s) % t == 0;
                }
            if (fits)
                out.push_back({s, static_cast<int>(ti)});
        }
    }
    return out;
}

/// The ways to arrange the groups into units: every group alone first (the pipelines of a search
/// without mixed stages, in the same order), then - when the space and the target allow - one
/// partition per pair of groups of different device types that can share stages (at most one
/// mixed unit per pipeline; docs/search.md 2.1).
std::vector<std::vector<Unit>> unitPartitions(const SearchRequest &req, const std::vector<int> &tpValues)
{
    const Cluster &cl = req.cluster;
    const int G = static_cast<int>(cl.groups.size());
    std::vector<std::vector<Unit>> out(1);
    for (int g = 0; g < G; ++g)
        out[0].push_back({g, -1});
    if (!req.space.mixedStages)
        return out;
    for (int a = 0; a < G; ++a)
        for (int b = a + 1; b < G; ++b) {
            const GpuSpec &da = cl.deviceOf(cl.groups[static_cast<size_t>(a)]);
            const GpuSpec &db = cl.deviceOf(cl.groups[static_cast<size_t>(b)]);
            if (da.id == db.id || !targetMixesDevicesInStage(req.space.target, da, db)
                || unitOptions(cl, req.space, tpValues, {a, b}).empty())
                continue;
            std::vector<Unit> units;
            for (int g = 0; g < G; ++g)
                if (g == a)
                    units.push_back({a, b});
                else if (g != b)
                    units.push_back({g, -1});
            out.push_back(std::move(units));
        }
    return out;
}

/// Adds the pipeline shape of `order` (unit indices) with the chosen (slices, TP) per unit.
void addPipeline(Context &ctx, SearchResult &res, const std::vector<Node> &nodes, const std::vector<int> &firstNode,
                 const std::vector<Unit> &units, const std::vector<int> &order,
                 const std::vector<std::pair<int, int>> &chosen)
{
    const SearchRequest &r = *ctx.req;
    const Cluster &cl = r.cluster;
    auto typeOf = [&](int g) {
        const std::string &id = cl.deviceOf(cl.groups[static_cast<size_t>(g)]).id;
        return static_cast<int>(std::find(res.deviceTypes.begin(), res.deviceTypes.end(), id)
                                - res.deviceTypes.begin());
    };
    PipelineShape ps;
    SearchResult::Pipeline rp;
    for (int u : order) {
        const Unit &un = units[static_cast<size_t>(u)];
        const auto [slices, ti] = chosen[static_cast<size_t>(u)];
        for (int sl = 0; sl < slices; ++sl) {
            StageShape s;
            s.tpIndex = ti;
            s.tp = ctx.tpValues[static_cast<size_t>(ti)];
            s.dp = s.gpus = 0;
            for (int part = 0; part < (un.b >= 0 ? 2 : 1); ++part) {
                const int g = part ? un.b : un.a;
                const NodeGroup &ng = cl.groups[static_cast<size_t>(g)];
                const int n = ng.gpusPerNode * ng.count / slices;
                const int start = sl * n;
                for (int nd = start / ng.gpusPerNode; nd <= (start + n - 1) / ng.gpusPerNode; ++nd)
                    s.nodes.push_back(firstNode[static_cast<size_t>(g)] + nd);
                (part ? s.dp2 : s.dp1) = n / s.tp;
                (part ? s.capacity2 : s.capacityBytes) = cl.deviceOf(ng).memoryBytes();
                (part ? s.deviceType2 : s.deviceType) = typeOf(g);
                s.dp += n / s.tp;
                s.gpus += n;
            }
            s.group = un.a;
            s.group2 = un.b;
            s.dpLinks = ctx.links->linksAmong(s.nodes);
            ps.maxDp = std::max(ps.maxDp, s.dp);
            SearchStage st {un.a, sl, slices, s.tp, s.dp};
            st.group2 = un.b;
            st.dp2 = s.dp2;
            rp.stages.push_back(st);
            ps.stages.push_back(std::move(s));
        }
    }
    for (size_t i = 0; i + 1 < ps.stages.size(); ++i)
        ps.p2pLinks.push_back(ctx.links->linksBetween(ps.stages[i].nodes, ps.stages[i + 1].nodes));
    if (ps.stages.size() > 2)
        ps.wrapLinks = ctx.links->linksBetween(ps.stages.back().nodes, ps.stages.front().nodes);
    {
        std::vector<std::vector<int>> stageNodes;
        std::vector<int> stageTp;
        for (const StageShape &s : ps.stages) {
            stageNodes.push_back(s.nodes);
            stageTp.push_back(s.tp);
        }
        const std::vector<int> flows = dpNicFlows(stageNodes, stageTp);
        for (size_t i = 0; i < ps.stages.size(); ++i)
            ps.stages[i].dpFlows = flows[i];
    }
    for (size_t i = 0; i < ps.stages.size(); ++i) {
        const StageShape &s = ps.stages[i];
        rp.replicaClass.push_back(res.deviceTypes[static_cast<size_t>(s.deviceType)] + "/"
                                  + linkDescriptor(nodes[static_cast<size_t>(s.nodes.front())].intraLink));
        // A group's nodes share one intra-node link: the last node is one of the second part's.
        rp.replicaClass2.push_back(s.mixed() ? res.deviceTypes[static_cast<size_t>(s.deviceType2)] + "/"
                                           + linkDescriptor(nodes[static_cast<size_t>(s.nodes.back())].intraLink)
                                             : std::string());
        rp.dpClass.push_back(s.dp > 1 ? linkClass(s.dpLinks) + "/f" + std::to_string(s.dpFlows) : std::string("-"));
        rp.p2pClass.push_back(i + 1 < ps.stages.size() ? linkClass(ps.p2pLinks[i]) : std::string());
    }
    ctx.pipelines.push_back(std::move(ps));
    res.pipelines.push_back(std::move(rp));
}

/// Enumerates the pipeline shapes; false when cancelled through `poll` (then partly filled).
bool buildPipelines(Context &ctx, SearchResult &res, const std::vector<Node> &nodes, SetupPoll &poll)
{
    const SearchRequest &r = *ctx.req;
    const Cluster &cl = r.cluster;
    const int G = static_cast<int>(cl.groups.size());
    const int maxStages = std::min(r.space.maxStages > 0 ? r.space.maxStages : ctx.layers, std::min(ctx.layers, 64));
    // First global node index of each group.
    std::vector<int> firstNode(static_cast<size_t>(G), 0);
    for (int g = 1; g < G; ++g)
        firstNode[g] = firstNode[g - 1] + cl.groups[g - 1].count;

    for (const std::vector<Unit> &units : unitPartitions(r, ctx.tpValues)) {
        const size_t U = units.size();
        std::vector<std::vector<std::pair<int, int>>> options(U);
        bool usable = true;
        for (size_t u = 0; u < U; ++u) {
            options[u] = unitOptions(cl, r.space, ctx.tpValues, units[u]);
            usable = usable && !options[u].empty();
        }
        if (!usable)
            continue; // a unit that cannot be used at all: no pipelines of this partition
        std::vector<int> order(U);
        std::iota(order.begin(), order.end(), 0);
        std::vector<size_t> choice(U, 0);
        std::vector<std::pair<int, int>> chosen(U);
        do {
            std::fill(choice.begin(), choice.end(), 0);
            while (true) {
                if (poll.cancelled())
                    return false;
                int p = 0;
                for (size_t u = 0; u < U; ++u) {
                    chosen[u] = options[u][choice[u]];
                    p += chosen[u].first;
                }
                if (p <= maxStages) {
                    addPipeline(ctx, res, nodes, firstNode, units, order, chosen);
                } else {
                    res.pruned.layers += 1; // counted once per pipeline shape (all its bases)
                    res.enumerated += 1;
                }
                int u = static_cast<int>(U) - 1;
                while (u >= 0 && ++choice[static_cast<size_t>(u)] == options[static_cast<size_t>(u)].size()) {
                    choice[static_cast<size_t>(u)] = 0;
                    --u;
                }
                if (u < 0)
                    break;
            }
        } while (r.space.permuteGroups && std::next_permutation(order.begin(), order.end()));
    }
    return true;
}

/// A replica's time per layer and sequence at micro-batch 1 (fwd + bwd + TP): the inverse of the
/// speed weight of a mixed stage's part.
double perLayerMs(const LayerKernel &k)
{
    return k.forwardPrefixMs[1] + k.backwardPrefixMs[1] + k.tpCommPerLayerMs;
}

/// After the kernel tables, per pipeline shape: the speed weights of mixed stages (uniform unless
/// the target splits micro-batches), the device types that decide a stage's recompute, and the
/// launch target's rules - a pipeline the target never runs (targetMayRunPipeline) is dropped and
/// pruned once for "launcher"; otherwise checkLaunchTarget judges a plan of it per (micro-batch,
/// optimizer) with every stage on the first recompute choice (the rules do not depend on the
/// layer split, and recompute is checked per base). False when cancelled.
bool preparePipelines(Context &ctx, SearchResult &res, SetupPoll &poll)
{
    const SearchRequest &r = *ctx.req;
    const bool weighted = targetSplitsMicroBatches(r.space.target);
    size_t kept = 0;
    for (size_t pi = 0; pi < ctx.pipelines.size(); ++pi) {
        if (poll.cancelled())
            return false;
        PipelineShape &ps = ctx.pipelines[pi];
        SearchResult::Pipeline &rp = res.pipelines[pi];
        std::vector<char> deciding(ctx.nTypes, 0);
        bool anyMixed = false;
        std::vector<StageFacts> facts;
        for (size_t i = 0; i < ps.stages.size(); ++i) {
            StageShape &s = ps.stages[i];
            deciding[static_cast<size_t>(s.deviceType)] = 1;
            const auto device
                = [&](int g) { return r.cluster.deviceIndex(r.cluster.groups[static_cast<size_t>(g)].gpu); };
            facts.push_back({device(s.group), s.mixed() ? device(s.group2) : -1, s.tp, s.dp});
            if (!s.mixed())
                continue;
            anyMixed = true;
            if (weighted) {
                s.w1 = 1.0 / perLayerMs(ctx.lk(s.group, s.tpIndex, 1));
                s.w2 = 1.0 / perLayerMs(ctx.lk(s.group2, s.tpIndex, 1));
            }
            rp.stages[i].weight = s.w1;
            rp.stages[i].weight2 = s.w2;
        }
        if (anyMixed && std::find(deciding.begin(), deciding.end(), 0) != deciding.end())
            ps.decidingType = deciding;
        if (r.space.target != LaunchTarget::Any) {
            if (!targetMayRunPipeline(r.space.target, r.cluster, facts)) {
                ++res.pruned.launcher; // counted once per pipeline shape (all its bases)
                ++res.enumerated;
                continue;
            }
            const int p = static_cast<int>(ps.stages.size());
            if ((ctx.layers + p - 1) / p > kMaxStageLayers) {
                // Every split of it has a stage over kMaxStageLayers: pruned for "layers" per split.
                ps.launchOk.clear();
                if (kept != pi) {
                    ctx.pipelines[kept] = std::move(ps);
                    res.pipelines[kept] = std::move(rp);
                }
                ++kept;
                continue;
            }
            ps.launchOk.assign(ctx.nMbs * ctx.nCp * ctx.nV * ctx.nDist, 0);
            for (size_t vi = 0; vi < ctx.nV; ++vi) {
                // An even split in whole chunks of v layers (v = 1: plain 1F1B).
                const int v = r.space.virtualStages[vi], units = ctx.layers / v;
                if (ctx.layers % v != 0 || units < p)
                    continue; // pruned for "divisibility" before the launcher is asked
                std::vector<uint8_t> even(static_cast<size_t>(p), static_cast<uint8_t>(units / p * v));
                for (int i = 0; i < units % p; ++i)
                    even[static_cast<size_t>(i)] = static_cast<uint8_t>(even[static_cast<size_t>(i)] + v);
                for (size_t ci = 0; ci < ctx.nCp; ++ci) {
                    const int cpv = r.space.contextParallel[ci];
                    if (cpv > 1 && !contextParallelFits(r, ps, cpv))
                        continue; // pruned for "divisibility" before the launcher is asked
                    for (size_t mb = 0; mb < ctx.nMbs; ++mb)
                        for (size_t di = 0; di < ctx.nDist; ++di) {
                            const uint64_t base = res.encodeBase({pi, mb, 0, di, vi, ci});
                            Diagnostics why;
                            ps.launchOk[((mb * ctx.nCp + ci) * ctx.nV + vi) * ctx.nDist + di] = checkLaunchTarget(
                                r.space.target, res.planOfBase(base, even.data()), r.cluster, r.model, why);
                        }
                }
            }
        }
        if (kept != pi) {
            ctx.pipelines[kept] = std::move(ps);
            res.pipelines[kept] = std::move(rp);
        }
        ++kept;
    }
    ctx.pipelines.resize(kept);
    res.pipelines.resize(kept);
    return true;
}

} // namespace

namespace {

/// Refuses a request runSearch cannot search (std::invalid_argument naming what is wrong).
void checkSearchRequest(const SearchRequest &req, int globalBatch)
{
    if (req.cluster.groups.empty() || req.cluster.totalGpus() <= 0)
        throw std::invalid_argument("cluster '" + req.cluster.name + "' has no GPUs to search over");
    {
        long long nodeCount = 0, gpuCount = 0;
        for (const NodeGroup &g : req.cluster.groups) {
            nodeCount += g.count;
            gpuCount += static_cast<long long>(g.count) * g.gpusPerNode;
        }
        if (nodeCount > kMaxSearchNodes || gpuCount > kMaxSearchGpus)
            throw std::invalid_argument("cluster '" + req.cluster.name + "' has " + std::to_string(nodeCount)
                                        + " nodes and " + std::to_string(gpuCount) + " GPUs; the search takes at most "
                                        + std::to_string(kMaxSearchNodes) + " nodes and "
                                        + std::to_string(kMaxSearchGpus) + " GPUs");
    }
    if (globalBatch <= 0)
        throw std::invalid_argument("expected a positive global batch, found " + std::to_string(globalBatch));
    if (req.model.shape.layers <= 0 || req.model.shape.heads <= 0)
        throw std::invalid_argument("model '" + req.model.id + "' has no layers or heads");
    if (req.stream && (req.collectFeatures || req.stream->topK < 1 || req.stream->objectives.empty()))
        throw std::invalid_argument("a streamed search needs top K >= 1 and an objective, and collects no features");
    if (req.stream)
        for (const ObjectiveWeights &o : req.stream->objectives)
            checkObjective(o);
    if (req.space.microBatches.empty() || req.space.recompute.empty() || req.space.dpSharding.empty()
        || req.space.tensorParallel.empty() || req.space.stagesPerGroup.empty())
        throw std::invalid_argument("every search dimension needs at least one value");
    for (int v : req.space.microBatches)
        if (v < 1)
            throw std::invalid_argument("micro-batch sizes must be positive, found " + std::to_string(v));
    if (req.model.shape.isMoe() && !req.space.sequenceParallel)
        for (int t : req.space.tensorParallel)
            if (t > 1)
                throw std::invalid_argument(
                    "model '" + req.model.id
                    + "' has experts: Megatron-LM needs sequence parallelism with TP > 1 on MoE models; search "
                      "with sequence parallelism on or TP 1 only");
    if (req.space.fp8 != Fp8Format::Off)
        for (const NodeGroup &g : req.cluster.groups)
            if (!req.cluster.deviceOf(g).denseFp8Tflops)
                throw std::invalid_argument(
                    "FP8 (" + std::string(toString(req.space.fp8)) + ") needs every GPU to train in FP8, but group '"
                    + g.name + "' (" + req.cluster.deviceOf(g).id
                    + ") has none (no denseFp8Tflops in the catalogue); the planned search leaves such groups idle");
}

/// The per-layer time and memory kernels of every group x TP x micro-batch (memory per pipeline
/// position class too). False when cancelled through `poll`.
bool buildKernelTables(Context &ctx, SetupPoll &poll)
{
    const SearchRequest &req = *ctx.req;
    const ProfileSet *profiles = req.profiles.empty() ? nullptr : &req.profiles;
    const size_t G = req.cluster.groups.size(), nTp = ctx.tpValues.size(), nCp = req.space.contextParallel.size();
    ctx.groups = G;
    // Per context-parallel choice (index ci), group, TP and micro-batch: Context::lk / mk.
    ctx.layerKernels.resize(nCp * G * nTp * (ctx.maxMb + 1));
    for (size_t ci = 0; ci < nCp; ++ci)
        for (size_t g = 0; g < G; ++g) {
            const NodeGroup &ng = req.cluster.groups[g];
            const Link intra = req.cluster.intraLink(ng);
            for (size_t ti = 0; ti < nTp; ++ti)
                for (int mb = 1; mb <= ctx.maxMb; ++mb) {
                    if (poll.cancelled())
                        return false;
                    ctx.layerKernels[((ci * G + g) * nTp + ti) * (ctx.maxMb + 1) + mb]
                        = makeLayerKernel(req.cluster.deviceOf(ng), intra, req.model, ctx.tpValues[ti], mb,
                                          req.space.sequenceParallel, profiles, req.cost, req.space.contextParallel[ci],
                                          req.space.cpComm, req.space.fp8 != Fp8Format::Off);
                }
        }
    if (req.space.fp8 != Fp8Format::Off) {
        ctx.fp8Bad.assign(nCp * nTp * (ctx.maxMb + 1), 0);
        for (size_t ci = 0; ci < nCp; ++ci)
            for (size_t ti = 0; ti < nTp; ++ti)
                for (int mb = 1; mb <= ctx.maxMb; ++mb)
                    ctx.fp8Bad[(ci * nTp + ti) * (ctx.maxMb + 1) + mb]
                        = !fp8ShapeProblem(req.model, ctx.tpValues[ti], mb, req.space.contextParallel[ci]).empty();
    }
    ctx.memKernels.resize(nCp * G * nTp * (ctx.maxMb + 1) * 2);
    for (size_t ci = 0; ci < nCp; ++ci)
        for (size_t g = 0; g < G; ++g)
            for (size_t ti = 0; ti < nTp; ++ti)
                for (int mb = 1; mb <= ctx.maxMb; ++mb)
                    for (int pg = 0; pg < 2; ++pg)
                        ctx.memKernels[(((ci * G + g) * nTp + ti) * (ctx.maxMb + 1) + mb) * 2 + pg]
                            = makeMemoryKernel(req.model, req.cluster.deviceOf(req.cluster.groups[g]), ctx.tpValues[ti],
                                               mb, req.space.sequenceParallel, pg ? 2 : 1, profiles, req.cost,
                                               req.space.contextParallel[ci], req.space.fp8 != Fp8Format::Off);
    return true;
}

/// A streamed search's result: one final compaction over every worker's kept rows.
void finishStreamed(SearchResult &res, std::vector<StreamKeeper> &keepers, const StreamOptions &options)
{
    // One final compaction over every worker's rows in enumeration order: the kept set is
    // what the whole enumeration keeps, whatever the thread count.
    StreamKeeper all;
    all.opt = &options;
    for (StreamKeeper &k : keepers)
        all.append(std::move(k));
    all.sortByKey();
    all.compact();
    res.streamed = true;
    res.enumerated += all.enumerated;
    res.pruned += all.pruned;
    res.timeMs = std::move(all.t);
    res.peakMemory = std::move(all.m);
    res.imbalance = std::move(all.b);
    res.peakBytes = std::move(all.bytes);
    res.baseOf = std::move(all.base);
    res.splitOffset = std::move(all.offset);
    res.layerCounts = std::move(all.layers);
    res.evaluated = all.evaluated;
}

/// Concatenates the completed chunks' rows into the result's flat arrays, in chunk order (so the
/// result does not depend on the thread count), releasing each chunk as it goes.
void gatherChunks(SearchResult &res, std::vector<ChunkOut> &chunks, const std::vector<char> &chunkDone,
                  bool collectFeatures)
{
    size_t total = 0, totalLayers = 0;
    for (size_t ci = 0; ci < chunks.size(); ++ci)
        if (chunkDone[ci]) {
            total += chunks[ci].t.size();
            totalLayers += chunks[ci].layers.size();
        }
    res.timeMs.reserve(total);
    res.peakMemory.reserve(total);
    res.imbalance.reserve(total);
    res.peakBytes.reserve(total);
    res.baseOf.reserve(total);
    res.splitOffset.reserve(total);
    res.layerCounts.reserve(totalLayers);
    if (collectFeatures)
        res.features.reserve(total * kFeatureCount);
    for (size_t ci = 0; ci < chunks.size(); ++ci) {
        if (!chunkDone[ci])
            continue;
        ChunkOut &c = chunks[ci];
        const uint32_t shift = static_cast<uint32_t>(res.layerCounts.size());
        res.timeMs.insert(res.timeMs.end(), c.t.begin(), c.t.end());
        res.peakMemory.insert(res.peakMemory.end(), c.m.begin(), c.m.end());
        res.imbalance.insert(res.imbalance.end(), c.b.begin(), c.b.end());
        res.peakBytes.insert(res.peakBytes.end(), c.bytes.begin(), c.bytes.end());
        res.baseOf.insert(res.baseOf.end(), c.base.begin(), c.base.end());
        for (uint32_t o : c.offset)
            res.splitOffset.push_back(o + shift);
        res.layerCounts.insert(res.layerCounts.end(), c.layers.begin(), c.layers.end());
        res.features.insert(res.features.end(), c.feats.begin(), c.feats.end());
        res.enumerated += c.enumerated;
        res.pruned += c.pruned;
        ChunkOut().t.swap(c.t); // release memory early
        c = ChunkOut();
    }
}

} // namespace

namespace {

/// What the evaluation phase hands back: the chunks (completed ones flagged) or, streamed, each
/// worker's kept rows; the thread count used and whether the callback cancelled it.
struct Evaluation {
    std::vector<ChunkOut> chunks;
    std::vector<char> chunkDone;
    std::vector<StreamKeeper> keepers;
    int threads = 1;
    bool cancelled = false;
};

/// Evaluates every base of `ctx` over fixed chunks on a worker pool; the calling thread polls
/// `progress` every 10 ms (a false return cancels: workers stop before their next base).
Evaluation evaluateChunks(const Context &ctx, const SearchRequest &req, const ProgressFn &progress)
{
    const size_t nChunks = static_cast<size_t>((ctx.totalBases + kBasesPerChunk - 1) / kBasesPerChunk);
    // Streamed: each worker evaluates into one reused chunk and keeps what can be shown.
    const bool streaming = req.stream.has_value();
    std::vector<ChunkOut> chunks(streaming ? 0 : nChunks);
    std::vector<char> chunkDone(streaming ? 0 : nChunks, 0);
    std::atomic<size_t> next {0};
    std::atomic<size_t> basesDone {0};
    std::atomic<bool> cancel {false};
    std::mutex mu;
    std::condition_variable cv;
    int threads = req.threads > 0 ? req.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    threads = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(nChunks, 1)));
    std::atomic<int> running {threads};
    std::vector<StreamKeeper> keepers(streaming ? static_cast<size_t>(threads) : 0);
    for (StreamKeeper &k : keepers)
        k.opt = &*req.stream;
    auto worker = [&](size_t wi) {
        Evaluator ev(ctx);
        ChunkOut local;
        while (!cancel.load(std::memory_order_relaxed)) {
            const size_t ci = next.fetch_add(1);
            if (ci >= nChunks)
                break;
            const uint64_t b0 = ci * kBasesPerChunk;
            const uint64_t b1 = std::min<uint64_t>(b0 + kBasesPerChunk, ctx.totalBases);
            if (streaming)
                local.clear();
            ChunkOut &co = streaming ? local : chunks[ci];
            const size_t guess = static_cast<size_t>(b1 - b0) * 8;
            co.t.reserve(guess);
            co.m.reserve(guess);
            co.b.reserve(guess);
            co.bytes.reserve(guess);
            co.base.reserve(guess);
            co.offset.reserve(guess);
            co.layers.reserve(guess * 8);
            if (req.collectFeatures)
                co.feats.reserve(guess * kFeatureCount);
            // Cancel is also checked per base: a chunk can take seconds on large clusters, and
            // cancel must take effect within ~100 ms (tests/cli/tst_scale.cpp). A chunk cut short
            // is dropped whole, so a cancelled result holds complete chunks only.
            uint64_t b = b0;
            for (; b < b1 && !cancel.load(std::memory_order_relaxed); ++b)
                ev.runBase(b, co);
            if (b < b1)
                break;
            if (streaming)
                keepers[wi].add(co, ci);
            else
                chunkDone[ci] = 1;
            basesDone.fetch_add(static_cast<size_t>(b1 - b0));
        }
        if (running.fetch_sub(1) == 1) {
            std::lock_guard<std::mutex> lock(mu);
            cv.notify_all();
        }
    };
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i)
        pool.emplace_back(worker, static_cast<size_t>(i));
    {
        // The callback is polled every 10 ms: a cancel waits at most that long to be seen.
        std::unique_lock<std::mutex> lock(mu);
        while (running.load() > 0) {
            cv.wait_for(lock, kPollInterval);
            if (progress && !cancel.load()) {
                lock.unlock();
                const bool go = progress(basesDone.load(), static_cast<size_t>(ctx.totalBases));
                lock.lock();
                if (!go)
                    cancel = true;
            }
        }
    }
    for (std::thread &t : pool)
        t.join();
    Evaluation out;
    out.chunks = std::move(chunks);
    out.chunkDone = std::move(chunkDone);
    out.keepers = std::move(keepers);
    out.threads = threads;
    out.cancelled = cancel.load();
    return out;
}

} // namespace

SearchResult runSearch(const SearchRequest &req, const ProgressFn &progress)
{
    const auto t0 = std::chrono::steady_clock::now();
    SearchResult res;
    res.cluster = req.cluster;
    res.model = req.model;
    res.globalBatch = req.globalBatch > 0 ? req.globalBatch : req.model.training.globalBatch;
    res.sequenceParallel = req.space.sequenceParallel;
    res.overlapDataParallel = req.space.overlapDataParallel;
    res.fp8 = req.space.fp8;
    res.roundGlobalBatch = req.space.roundGlobalBatch;
    res.microBatchSizes = req.space.microBatches;
    res.recomputeChoices = req.space.recompute;
    res.dpShardingChoices = req.space.dpSharding;
    res.virtualStageChoices = req.space.virtualStages;
    res.contextParallelChoices = req.space.contextParallel;
    res.cpComm = req.space.cpComm;
    checkSearchRequest(req, res.globalBatch);
    for (const NodeGroup &g : req.cluster.groups) {
        const std::string id = req.cluster.deviceOf(g).id;
        if (std::find(res.deviceTypes.begin(), res.deviceTypes.end(), id) == res.deviceTypes.end())
            res.deviceTypes.push_back(id);
    }

    Context ctx;
    ctx.req = &req;
    ctx.layers = req.model.shape.layers;
    ctx.gbs = res.globalBatch;
    ctx.maxMb = std::max(1, req.space.maxReplicaMicroBatch);
    ctx.tpValues = usableTpDegrees(req);
    ctx.target = req.space.target;
    if (ctx.tpValues.empty())
        throw std::invalid_argument("no tensor-parallel degree divides the model's heads");

    // Set-up, before the first chunk: cancel is polled throughout (the 48 M-base space of the
    // 512-GPU sample takes ~40 s here). A result cancelled in set-up holds nothing.
    SetupPoll poll(progress);
    auto cancelledInSetup = [&] {
        res.cancelled = true;
        res.pipelines.clear();
        res.enumerated = 0;
        res.pruned = PruneCounts {};
        res.enumerateEvaluateMs
            = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return res;
    };
    if (poll.cancelled())
        return cancelledInSetup();
    const std::vector<Node> nodes = req.cluster.nodes();
    const LinkTable links(req.cluster, nodes, req.cost);
    ctx.links = &links;
    if (!buildPipelines(ctx, res, nodes, poll))
        return cancelledInSetup();
    ctx.modelParams = static_cast<double>(req.model.totalParams());
    for (const NodeGroup &g : req.cluster.groups) {
        const GpuSpec &dev = req.cluster.deviceOf(g);
        const bool bf16 = req.model.training.precision == Precision::BF16;
        ctx.groupPeakTflops.push_back(dev.peakTflops(bf16).value_or(dev.peakTflops(!bf16).value_or(0.0)));
    }

    if (!buildKernelTables(ctx, poll))
        return cancelledInSetup();

    ctx.nMbs = req.space.microBatches.size();
    ctx.nRc = req.space.recompute.size();
    ctx.nTypes = res.deviceTypes.size();
    ctx.nRcCombos = 1;
    for (size_t i = 0; i < ctx.nTypes; ++i)
        ctx.nRcCombos *= ctx.nRc;
    ctx.nDist = req.space.dpSharding.size();
    ctx.nV = req.space.virtualStages.size();
    ctx.nCp = req.space.contextParallel.size();
    ctx.hasPlainOptimizer = std::find(req.space.dpSharding.begin(), req.space.dpSharding.end(), DpSharding::None)
        != req.space.dpSharding.end();
    ctx.hasUnshardedChoice = std::any_of(req.space.dpSharding.begin(), req.space.dpSharding.end(),
                                         [](DpSharding d) { return d <= DpSharding::Optimizer; });
    if (!preparePipelines(ctx, res, poll))
        return cancelledInSetup();
    ctx.totalBases
        = static_cast<uint64_t>(ctx.pipelines.size()) * ctx.nMbs * ctx.nRcCombos * ctx.nCp * ctx.nV * ctx.nDist;
    if (ctx.totalBases > 0xFFFFFFFFull)
        throw std::invalid_argument("the search space has " + std::to_string(ctx.totalBases)
                                    + " base configurations, more than 2^32; narrow it (fewer TP degrees, "
                                      "stages per group, recompute choices or no group permutations)");

    // Parallel evaluation over fixed chunks of bases; chunk outputs are concatenated in order,
    // so the result does not depend on the thread count.
    if (poll.cancelled())
        return cancelledInSetup();
    Evaluation ev = evaluateChunks(ctx, req, progress);
    res.threads = ev.threads;
    res.cancelled = ev.cancelled;
    if (progress && !res.cancelled)
        progress(static_cast<size_t>(ctx.totalBases), static_cast<size_t>(ctx.totalBases));
    if (res.cancelled && !req.keepPartialOnCancel) {
        // Returning the pages of ~1 GB of chunk rows takes ~0.13 s (BM_CancelProfilePlan512Wide):
        // a caller that discards the result (Ctrl-C) does not wait for it; a detached thread frees them.
        std::thread([rows = std::move(ev.chunks)]() mutable { std::vector<ChunkOut>().swap(rows); }).detach();
        res.pipelines.clear();
        res.enumerateEvaluateMs
            = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return res;
    }

    if (req.stream) {
        finishStreamed(res, ev.keepers, *req.stream);
#ifndef NDEBUG
        checkSearchInvariants(res);
#endif
        res.enumerateEvaluateMs
            = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return res;
    }

    gatherChunks(res, ev.chunks, ev.chunkDone, req.collectFeatures);
    res.evaluated = res.timeMs.size();
#ifndef NDEBUG
    checkSearchInvariants(res);
#endif
    res.enumerateEvaluateMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return res;
}

uint64_t baseConfigurationBound(const SearchRequest &req)
{
    const Cluster &cl = req.cluster;
    std::vector<std::string> types;
    for (const NodeGroup &g : cl.groups) {
        const int di = cl.deviceIndex(g.gpu);
        const std::string id = di >= 0 ? cl.devices[static_cast<size_t>(di)].id : g.gpu;
        if (std::find(types.begin(), types.end(), id) == types.end())
            types.push_back(id);
    }
    const std::vector<int> tpValues = usableTpDegrees(req);
    long double pipelines = 0;
    for (const std::vector<Unit> &units : unitPartitions(req, tpValues)) {
        long double n = 1;
        for (const Unit &u : units)
            n *= static_cast<long double>(unitOptions(cl, req.space, tpValues, u).size());
        if (req.space.permuteGroups)
            for (size_t k = 2; k <= units.size(); ++k)
                n *= static_cast<long double>(k);
        pipelines += n;
    }
    long double bases = pipelines * req.space.microBatches.size() * req.space.dpSharding.size()
        * std::max<size_t>(1, req.space.virtualStages.size()) * std::max<size_t>(1, req.space.contextParallel.size());
    for (size_t i = 0; i < types.size(); ++i)
        bases *= req.space.recompute.size();
    return bases > 1.8e19L ? UINT64_MAX : static_cast<uint64_t>(bases);
}

std::vector<std::string> narrowToBudget(SearchRequest &req, uint64_t maxBases)
{
    std::vector<std::string> notes;
    SearchSpaceOptions &sp = req.space;
    auto over = [&] { return baseConfigurationBound(req) > maxBases; };
    if (over() && sp.contextParallel.size() > 1) {
        sp.contextParallel = {1};
        notes.push_back("no context parallelism");
    }
    if (over() && sp.virtualStages.size() > 1) {
        sp.virtualStages = {1};
        notes.push_back("no interleaved schedule (1 virtual stage per pipeline rank)");
    }
    if (over() && sp.mixedStages) {
        const uint64_t with = baseConfigurationBound(req);
        sp.mixedStages = false;
        if (baseConfigurationBound(req) < with)
            notes.push_back("no mixed-type stages (each stage on one node group)");
        else
            sp.mixedStages = true; // there were none: the request stays as it was
    }
    if (over() && sp.permuteGroups) {
        sp.permuteGroups = false;
        notes.push_back("kept the cluster file's group order along the pipeline (no permutations)");
    }
    while (over() && sp.tensorParallel.size() > 1) {
        auto it = std::min_element(sp.tensorParallel.begin(), sp.tensorParallel.end());
        notes.push_back("dropped TP degree " + std::to_string(*it));
        sp.tensorParallel.erase(it);
    }
    while (over() && sp.stagesPerGroup.size() > 1) {
        auto it = std::max_element(sp.stagesPerGroup.begin(), sp.stagesPerGroup.end());
        notes.push_back("dropped " + std::to_string(*it) + " stages per group");
        sp.stagesPerGroup.erase(it);
    }
    if (over()) {
        auto it = std::find(sp.recompute.begin(), sp.recompute.end(), RecomputeMethod::Selective);
        if (it != sp.recompute.end() && sp.recompute.size() > 1) {
            sp.recompute.erase(it);
            notes.push_back("dropped selective recompute");
        }
    }
    if (over() && sp.dpSharding.size() > 1) {
        sp.dpSharding = {DpSharding::Optimizer};
        notes.push_back("distributed optimizer always on");
    }
    return notes;
}

void checkSearchInvariants(const SearchResult &r)
{
    const size_t nRc = r.recomputeChoices.size();
    size_t nCombos = 1;
    for (size_t i = 0; i < r.deviceTypes.size(); ++i)
        nCombos *= nRc;
    const int layers = r.model.shape.layers;
    for (size_t i = 0; i < r.size(); ++i) {
        const auto fail = [&](const std::string &what) {
            throw std::logic_error("search invariant violated by configuration " + std::to_string(i) + " ("
                                   + r.materialize(i).summary(r.cluster) + "): " + what);
        };
        const Decoded d = decode(r.baseOf[i], r.microBatchSizes.size(), nCombos, r.dpShardingChoices.size(),
                                 r.virtualStageChoices.size(), r.contextParallelChoices.size());
        if (d.pipeline >= r.pipelines.size())
            throw std::logic_error("search invariant violated by configuration " + std::to_string(i)
                                   + ": base index beyond the pipelines");
        const SearchResult::Pipeline &pl = r.pipelines[d.pipeline];
        const uint8_t *split = &r.layerCounts.at(r.splitOffset[i]);
        int sum = 0, maxDp = 1;
        std::vector<long long> used(r.cluster.groups.size(), 0);
        for (size_t s = 0; s < pl.stages.size(); ++s) {
            const SearchStage &st = pl.stages[s];
            if (split[s] < 1 || split[s] > kMaxStageLayers)
                fail("stage " + std::to_string(s) + " holds " + std::to_string(split[s]) + " layers");
            sum += split[s];
            maxDp = std::max(maxDp, st.dp);
            used.at(static_cast<size_t>(st.group)) += static_cast<long long>(st.tp) * (st.dp - st.dp2);
            if (st.mixed())
                used.at(static_cast<size_t>(st.group2)) += static_cast<long long>(st.tp) * st.dp2;
        }
        if (sum != layers)
            fail("the stages hold " + std::to_string(sum) + " layers, the model has " + std::to_string(layers));
        if (const uint8_t *k = r.recomputedLayersOf(i))
            for (size_t s = 0; s < pl.stages.size(); ++s)
                if (k[s] > split[s])
                    fail("stage " + std::to_string(s) + " recomputes " + std::to_string(k[s]) + " of its "
                         + std::to_string(split[s]) + " layers");
        for (size_t g = 0; g < used.size(); ++g) {
            const NodeGroup &ng = r.cluster.groups[g];
            if (used[g] != static_cast<long long>(ng.gpusPerNode) * ng.count)
                fail("uses " + std::to_string(used[g]) + " of the " + std::to_string(ng.gpusPerNode * ng.count)
                     + " GPUs of node group '" + ng.name + "'");
        }
        // With CP a stage's st.dp TP groups are st.dp / cp replicas.
        const int cpv = r.contextParallelChoices.at(d.cpIndex);
        if (maxDp % cpv != 0)
            fail("CP " + std::to_string(cpv) + " does not divide DP " + std::to_string(maxDp));
        const long long step = static_cast<long long>(r.microBatchSizes[d.mbIndex]) * (maxDp / cpv);
        for (const SearchStage &st : pl.stages)
            if (!st.mixed() && (st.dp % cpv != 0 || step % (st.dp / cpv) != 0)) // a mixed stage splits by speed
                fail("DP " + std::to_string(st.dp) + " / CP " + std::to_string(cpv) + " does not divide the "
                     + std::to_string(step) + " samples per step");
        const int batch = r.globalBatchOf(i);
        if (batch % step != 0)
            fail("the global batch " + std::to_string(batch) + " is not a multiple of the " + std::to_string(step)
                 + " samples per step");
        if (batch != r.globalBatch
            && (!r.roundGlobalBatch || 2LL * std::abs(batch - r.globalBatch) > step
                || batch / step != roundedMicroBatchCount(r.globalBatch, static_cast<int>(step))))
            fail("the global batch " + std::to_string(batch) + " is not the nearest multiple of the "
                 + std::to_string(step) + " samples per step to the requested " + std::to_string(r.globalBatch));
    }
}

std::optional<std::pair<int, int>> mixedMicroBatches(int samples, int dp1, int dp2, double w1, double w2)
{
    if (dp1 < 1 || dp2 < 1 || samples < dp1 + dp2 || !(w1 > 0) || !(w2 > 0))
        return std::nullopt;
    std::optional<std::pair<int, int>> best;
    double bestPace = 0;
    for (int b1 = 1; dp1 * b1 + dp2 <= samples; ++b1) {
        const int rest = samples - dp1 * b1;
        if (rest % dp2 != 0)
            continue;
        const int b2 = rest / dp2;
        const double pace = std::max(b1 / w1, b2 / w2);
        if (!best || pace < bestPace) {
            best = std::pair<int, int>(b1, b2);
            bestPace = pace;
        }
    }
    return best;
}

PruneCounts &PruneCounts::operator+=(const PruneCounts &o)
{
    divisibility += o.divisibility;
    microBatchLimit += o.microBatchLimit;
    layers += o.layers;
    outOfMemory += o.outOfMemory;
    duplicates += o.duplicates;
    launcher += o.launcher;
    return *this;
}

std::string SearchResult::Pipeline::replicaKey(size_t stage) const
{
    if (stage >= replicaClass2.size() || replicaClass2[stage].empty())
        return replicaClass[stage];
    const SearchStage &s = stages[stage];
    return replicaClass[stage] + "*" + std::to_string(s.dp - s.dp2) + "+" + replicaClass2[stage] + "*"
        + std::to_string(s.dp2);
}

SearchResult::BaseParts SearchResult::decodeBase(uint64_t base) const
{
    size_t nCombos = 1;
    for (size_t i = 0; i < deviceTypes.size(); ++i)
        nCombos *= recomputeChoices.size();
    const Decoded d = decode(base, microBatchSizes.size(), nCombos, dpShardingChoices.size(),
                             virtualStageChoices.size(), contextParallelChoices.size());
    return {d.pipeline, d.mbIndex, d.rcCombo, d.distIndex, d.vIndex, d.cpIndex};
}

uint64_t SearchResult::encodeBase(const BaseParts &b) const
{
    uint64_t nCombos = 1;
    for (size_t i = 0; i < deviceTypes.size(); ++i)
        nCombos *= recomputeChoices.size();
    return ((((static_cast<uint64_t>(b.pipeline) * microBatchSizes.size() + b.microBatch) * nCombos + b.recompute)
                 * contextParallelChoices.size()
             + b.contextParallel)
                * virtualStageChoices.size()
            + b.virtualStages)
        * dpShardingChoices.size()
        + b.distributedOptimizer;
}

namespace {

/// What one stage of a decoded base looks like: its recompute and the micro-batch of each part.
struct StageBatch {
    RecomputeMethod method = RecomputeMethod::None;
    int mb1 = 1, mb2 = 0;
};

/// Per stage of base `d`'s pipeline: recompute (the first part's device type decides) and micro-batches.
std::vector<StageBatch> stageBatches(const SearchResult &r, const Decoded &d)
{
    const SearchResult::Pipeline &pl = r.pipelines.at(d.pipeline);
    int maxDp = 1;
    for (const SearchStage &s : pl.stages)
        maxDp = std::max(maxDp, s.dp);
    const int cpv = r.contextParallelChoices.at(d.cpIndex);
    const int step = r.microBatchSizes[d.mbIndex] * (maxDp / cpv);
    std::vector<StageBatch> out;
    for (const SearchStage &ss : pl.stages) {
        const std::string &dev = r.cluster.deviceOf(r.cluster.groups[static_cast<size_t>(ss.group)]).id;
        const int type
            = static_cast<int>(std::find(r.deviceTypes.begin(), r.deviceTypes.end(), dev) - r.deviceTypes.begin());
        StageBatch b;
        b.method = rcForType(d.rcCombo, type, r.recomputeChoices.size(), r.recomputeChoices);
        if (ss.mixed()) {
            const auto split = mixedMicroBatches(step, ss.dp - ss.dp2, ss.dp2, ss.weight, ss.weight2);
            b.mb1 = split ? split->first : 1;
            b.mb2 = split ? split->second : 1;
        } else {
            b.mb1 = step / (ss.dp / cpv);
        }
        out.push_back(b);
    }
    return out;
}

} // namespace

int roundedMicroBatchCount(int globalBatch, int stepSamples)
{
    if (stepSamples < 1)
        throw std::invalid_argument("expected positive samples per step, found " + std::to_string(stepSamples));
    const long long m = (2LL * globalBatch + stepSamples) / (2LL * stepSamples); // floor(gbs / step + 1/2)
    return static_cast<int>(std::max(1LL, m));
}

int SearchResult::globalBatchOfBase(uint64_t base) const
{
    if (!roundGlobalBatch)
        return globalBatch;
    const BaseParts bp = decodeBase(base);
    int maxDp = 1;
    for (const SearchStage &s : pipelines.at(bp.pipeline).stages)
        maxDp = std::max(maxDp, s.dp);
    const int step = microBatchSizes.at(bp.microBatch) * (maxDp / contextParallelChoices.at(bp.contextParallel));
    return globalBatch % step == 0 ? globalBatch : roundedMicroBatchCount(globalBatch, step) * step;
}

std::vector<RecomputeMethod> SearchResult::recomputeOf(size_t index) const
{
    const size_t nRc = recomputeChoices.size();
    const BaseParts b = decodeBase(baseOf.at(index));
    std::vector<RecomputeMethod> out;
    for (size_t t = 0; t < deviceTypes.size(); ++t)
        out.push_back(rcForType(b.recompute, static_cast<int>(t), nRc, recomputeChoices));
    return out;
}

std::vector<std::pair<int, int>> SearchResult::stageMicroBatchesOfBase(uint64_t base) const
{
    const BaseParts bp = decodeBase(base);
    std::vector<std::pair<int, int>> out;
    for (const StageBatch &b : stageBatches(
             *this,
             {bp.pipeline, bp.microBatch, bp.recompute, bp.distributedOptimizer, bp.virtualStages, bp.contextParallel}))
        out.emplace_back(b.mb1, b.mb2);
    return out;
}

namespace {

/// Stage `stage`'s recompute: its device type's choice, with a partial-recompute configuration's
/// recomputed layers `k` (0 of n: none; n: all, written 0 as in the plan format).
Recompute stageRecompute(RecomputeMethod method, const uint8_t *k, size_t stage, int layerCount)
{
    if (method != RecomputeMethod::Full || !k)
        return {method, 0};
    if (k[stage] == 0)
        return {};
    return {RecomputeMethod::Full, k[stage] >= layerCount ? 0 : k[stage]};
}

} // namespace

const uint8_t *SearchResult::recomputedLayersOf(size_t index) const
{
    const size_t p = pipelines.at(decodeBase(baseOf.at(index)).pipeline).stages.size();
    const size_t end = index + 1 < splitOffset.size() ? splitOffset[index + 1] : layerCounts.size();
    return end - splitOffset.at(index) == 2 * p ? &layerCounts[splitOffset[index] + p] : nullptr;
}

Plan SearchResult::planOfBase(uint64_t base, const uint8_t *split, const uint8_t *recomputed) const
{
    const BaseParts bp = decodeBase(base);
    const Decoded d {bp.pipeline,      bp.microBatch,     bp.recompute, bp.distributedOptimizer,
                     bp.virtualStages, bp.contextParallel};
    const Pipeline &pl = pipelines.at(d.pipeline);
    const std::vector<StageBatch> batches = stageBatches(*this, d);
    const int cpv = contextParallelChoices.at(d.cpIndex);
    Plan plan;
    plan.contextParallel = cpv;
    plan.cpComm = cpComm;
    plan.globalBatch = globalBatchOfBase(base);
    plan.sequenceParallel = sequenceParallel;
    setDpSharding(plan, dpShardingChoices[d.distIndex]);
    plan.overlapGradReduce = overlapDataParallel;
    plan.overlapParamGather = overlapDataParallel && plan.distributedOptimizer;
    plan.fp8 = fp8;
    plan.virtualStages = virtualStageChoices.at(d.vIndex);
    int layer = 0;
    for (size_t si = 0; si < pl.stages.size(); ++si) {
        const SearchStage &ss = pl.stages[si];
        Stage st;
        st.firstLayer = layer;
        st.layerCount = split[si];
        layer += split[si];
        st.recompute = stageRecompute(batches[si].method, recomputed, si, split[si]);
        // Part 1 (group) first, then a mixed stage's part 2 (group2): the same slice of each.
        for (int part = 0; part < (ss.mixed() ? 2 : 1); ++part) {
            const NodeGroup &ng = cluster.groups[static_cast<size_t>(part ? ss.group2 : ss.group)];
            const int dp = part ? ss.dp2 : ss.dp - ss.dp2;
            const int n = ss.tp * dp;
            const int start = ss.slice * n;
            // With CP: dp / cp replicas of tp x cp consecutive GPUs (one node: the search checks
            // that tp x cp divides the GPUs per node).
            for (int r = 0; r < dp / cpv; ++r) {
                Replica rep;
                const int g0 = start + r * ss.tp * cpv;
                rep.node = nodeName(ng, g0 / ng.gpusPerNode);
                for (int k = 0; k < ss.tp * cpv; ++k)
                    rep.gpus.push_back((g0 + k) % ng.gpusPerNode);
                rep.tp = ss.tp;
                rep.microBatch = part ? batches[si].mb2 : batches[si].mb1;
                st.replicas.push_back(std::move(rep));
            }
        }
        plan.stages.push_back(std::move(st));
    }
    return plan;
}

Plan SearchResult::materialize(size_t index) const
{
    Plan plan = planOfBase(baseOf.at(index), &layerCounts.at(splitOffset.at(index)), recomputedLayersOf(index));
    plan.name = "search #" + std::to_string(index);
    return plan;
}

std::string SearchResult::signatureKey(size_t index) const
{
    const BaseParts bp = decodeBase(baseOf.at(index));
    const Decoded d {bp.pipeline,      bp.microBatch,     bp.recompute, bp.distributedOptimizer,
                     bp.virtualStages, bp.contextParallel};
    const Pipeline &pl = pipelines.at(d.pipeline);
    const int cpv = contextParallelChoices.at(d.cpIndex);
    int maxDp = 1;
    for (const SearchStage &s : pl.stages)
        maxDp = std::max(maxDp, s.dp);
    const int step = microBatchSizes[d.mbIndex] * (maxDp / cpv);
    const std::vector<StageBatch> batches = stageBatches(*this, d);
    // Same layout as planSignature() (memx/predict/predictioncache.cpp, link classes: memx/cost/linkkey.h).
    std::string key;
    key.reserve(96 * pl.stages.size() + 48);
    const int batch = globalBatchOfBase(baseOf.at(index));
    key += "gbs=" + std::to_string(batch) + ";m=" + std::to_string(batch / step) + ";do="
        + std::to_string(static_cast<int>(dpShardingChoices[d.distIndex])) + ";sp=" + (sequenceParallel ? "1" : "0");
    if (virtualStageChoices.at(d.vIndex) > 1)
        key += ";vp=" + std::to_string(virtualStageChoices[d.vIndex]);
    if (cpv > 1)
        key += ";cp=" + std::to_string(cpv) + toString(cpComm);
    int layer = 0;
    const uint8_t *split = &layerCounts.at(splitOffset.at(index));
    const uint8_t *recomputed = recomputedLayersOf(index);
    for (size_t si = 0; si < pl.stages.size(); ++si) {
        const SearchStage &ss = pl.stages[si];
        const Recompute rc = stageRecompute(batches[si].method, recomputed, si, split[si]);
        key += "|L" + std::to_string(layer) + "+" + std::to_string(split[si]) + ";rc=" + toString(rc.method) + ":"
            + std::to_string(rc.layers) + ";R[";
        // The sorted multiset of replica descriptors (a mixed stage has two kinds).
        std::string rep1 = pl.replicaClass[si] + "/t" + std::to_string(ss.tp) + "/b" + std::to_string(batches[si].mb1);
        std::string rep2;
        int n1 = (ss.dp - ss.dp2) / cpv, n2 = 0;
        if (ss.mixed()) {
            rep2 = pl.replicaClass2[si] + "/t" + std::to_string(ss.tp) + "/b" + std::to_string(batches[si].mb2);
            n2 = ss.dp2;
            if (rep2 < rep1) {
                std::swap(rep1, rep2);
                std::swap(n1, n2);
            }
        }
        for (int r = 0; r < n1; ++r)
            key += (r ? "," : "") + rep1;
        for (int r = 0; r < n2; ++r)
            key += "," + rep2;
        key += "];dp=" + pl.dpClass[si];
        if (si + 1 < pl.stages.size())
            key += ";p2p=" + pl.p2pClass[si];
        layer += split[si];
    }
    return key;
}

void SearchResult::signatureWords(size_t index, const std::vector<std::vector<uint32_t>> &classIds,
                                  std::vector<uint32_t> &out) const
{
    const size_t nRc = recomputeChoices.size();
    size_t nCombos = 1;
    for (size_t i = 0; i < deviceTypes.size(); ++i)
        nCombos *= nRc;
    const Decoded d = decode(baseOf[index], microBatchSizes.size(), nCombos, dpShardingChoices.size(),
                             virtualStageChoices.size(), contextParallelChoices.size());
    const Pipeline &pl = pipelines[d.pipeline];
    const int cpv = contextParallelChoices[d.cpIndex];
    const std::vector<uint32_t> &ids = classIds.at(d.pipeline);
    int maxDp = 1;
    for (const SearchStage &s : pl.stages)
        maxDp = std::max(maxDp, s.dp);
    const int step = microBatchSizes[d.mbIndex] * (maxDp / cpv);
    out.clear();
    const int batch
        = globalBatch % step == 0 || !roundGlobalBatch ? globalBatch : roundedMicroBatchCount(globalBatch, step) * step;
    out.push_back(static_cast<uint32_t>(batch));
    out.push_back(static_cast<uint32_t>(batch / step));
    out.push_back(static_cast<uint32_t>(dpShardingChoices[d.distIndex]));
    // Sequence parallelism in bit 0, the virtual stages above it (0 without interleaving, so the
    // words of such plans are those stored before the dimension existed).
    // CP (size from bit 12, the exchange from bit 23) when used.
    const uint32_t v = static_cast<uint32_t>(virtualStageChoices[d.vIndex]);
    const uint32_t cpBits = cpv > 1 ? (static_cast<uint32_t>(cpv) << 12) | (static_cast<uint32_t>(cpComm) << 23) : 0u;
    out.push_back((sequenceParallel ? 1u : 0u) | (v > 1 ? v << 1 : 0u) | cpBits);
    out.push_back(static_cast<uint32_t>(pl.stages.size()));
    uint32_t layer = 0;
    const uint8_t *split = &layerCounts[splitOffset[index]];
    const size_t end = index + 1 < splitOffset.size() ? splitOffset[index + 1] : layerCounts.size();
    const uint8_t *recomputed = end - splitOffset[index] == 2 * pl.stages.size() ? split + pl.stages.size() : nullptr;
    for (size_t si = 0; si < pl.stages.size(); ++si) {
        const SearchStage &ss = pl.stages[si];
        const std::string &dev = cluster.deviceOf(cluster.groups[static_cast<size_t>(ss.group)]).id;
        const int type = static_cast<int>(std::find(deviceTypes.begin(), deviceTypes.end(), dev) - deviceTypes.begin());
        int mb = step / (ss.dp / cpv);
        if (ss.mixed()) {
            const auto parts = mixedMicroBatches(step, ss.dp - ss.dp2, ss.dp2, ss.weight, ss.weight2);
            mb = parts ? parts->first : 0;
        }
        out.push_back(layer);
        out.push_back(split[si]);
        const Recompute rc
            = stageRecompute(rcForType(d.rcCombo, type, nRc, recomputeChoices), recomputed, si, split[si]);
        out.push_back(static_cast<uint32_t>(rc.method));
        out.push_back(static_cast<uint32_t>(rc.layers));
        out.push_back(ids[3 * si]);
        out.push_back(static_cast<uint32_t>(ss.tp));
        out.push_back(static_cast<uint32_t>(mb));
        out.push_back(static_cast<uint32_t>(ss.dp / cpv));
        out.push_back(ids[3 * si + 1]);
        out.push_back(ids[3 * si + 2]);
        layer += split[si];
    }
}

} // namespace memx
