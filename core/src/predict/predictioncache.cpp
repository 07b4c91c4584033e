#include "memx/predict/predictioncache.h"

#include "memx/io/formats.h"
#include "memx/profiling/profileio.h"
#include "memx/store/store.h"
#include "memx/util/bytes.h"
#include "memx/util/hash.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>

namespace memx {

PlanSignature makeSignature(std::string key)
{
    PlanSignature s;
    s.hash = fnv1a64(key);
    s.key = std::move(key);
    return s;
}

PlanSignature planSignature(const Plan &plan, const Cluster &cluster, const CostOptions &cost)
{
    const std::vector<Node> nodes = cluster.nodes();
    std::map<std::string, int> nodeByName;
    for (size_t i = 0; i < nodes.size(); ++i)
        nodeByName[nodes[i].name] = static_cast<int>(i);
    auto nodeIndex = [&](const std::string &name) {
        auto it = nodeByName.find(name);
        if (it == nodeByName.end())
            throw std::invalid_argument("plan '" + plan.name + "' names node '" + name + "', which cluster '"
                                        + cluster.name + "' does not have");
        return it->second;
    };
    std::vector<std::vector<int>> allStageNodes;
    std::vector<int> stageTp;
    for (const Stage &st : plan.stages) {
        allStageNodes.emplace_back();
        stageTp.push_back(1);
        for (const Replica &r : st.replicas) {
            allStageNodes.back().push_back(nodeIndex(r.node));
            stageTp.back() = std::max(stageTp.back(), r.tp);
        }
    }
    const std::vector<int> flows = dpNicFlows(allStageNodes, stageTp);
    std::string key = "gbs=" + std::to_string(plan.globalBatch) + ";m=" + std::to_string(plan.microBatches())
        + ";do=" + std::to_string(static_cast<int>(dpShardingOf(plan))) + ";sp=" + (plan.sequenceParallel ? "1" : "0");
    // Only when used, so the keys of plans without them stay those stored before.
    if (plan.virtualStages > 1)
        key += ";vp=" + std::to_string(plan.virtualStages);
    if (plan.overlapGradReduce || plan.overlapParamGather)
        key += std::string(";ov=") + (plan.overlapGradReduce ? "g" : "") + (plan.overlapParamGather ? "p" : "");
    if (plan.contextParallel > 1)
        key += ";cp=" + std::to_string(plan.contextParallel) + toString(plan.cpComm);
    if (plan.fp8 != Fp8Format::Off)
        key += std::string(";fp8=") + toString(plan.fp8);
    for (size_t i = 0; i < plan.stages.size(); ++i) {
        const Stage &st = plan.stages[i];
        std::vector<std::string> reps;
        std::vector<int> stageNodes;
        for (const Replica &r : st.replicas) {
            const int ni = nodeIndex(r.node);
            stageNodes.push_back(ni);
            const Node &n = nodes[static_cast<size_t>(ni)];
            reps.push_back(cluster.devices[static_cast<size_t>(n.device)].id + "/" + linkDescriptor(n.intraLink) + "/t"
                           + std::to_string(r.tp) + "/b" + std::to_string(r.microBatch));
        }
        std::sort(reps.begin(), reps.end());
        key += "|L" + std::to_string(st.firstLayer) + "+" + std::to_string(st.layerCount)
            + ";rc=" + toString(st.recompute.method) + ":" + std::to_string(st.recompute.layers) + ";R[";
        for (size_t r = 0; r < reps.size(); ++r)
            key += (r ? "," : "") + reps[r];
        // The gradients reduce over DP x CP ranks (estimatePlan), so a CP group has a DP class too.
        key += "];dp="
            + (st.dp() * std::max(1, plan.contextParallel) > 1
                   ? linkClass(linksAmong(stageNodes, nodes, cluster, cost)) + "/f" + std::to_string(flows[i])
                   : std::string("-"));
        if (i + 1 < plan.stages.size()) {
            std::vector<int> next;
            for (const Replica &r : plan.stages[i + 1].replicas)
                next.push_back(nodeIndex(r.node));
            key += ";p2p=" + linkClass(linksBetween(stageNodes, next, nodes, cluster, cost));
        }
    }
    return makeSignature(std::move(key));
}

std::uint64_t predictionContext(const Cluster &cluster, const Model &model, const ProfileSet *profiles,
                                const CostOptions &cost, std::uint64_t predictorDigest)
{
    std::string s = "memx.prediction-context/1\n";
    std::vector<std::string> devices;
    for (const GpuSpec &d : cluster.devices)
        devices.push_back(toJson(d).dump());
    std::sort(devices.begin(), devices.end());
    for (const std::string &d : devices)
        s += d + "\n";
    s += toJson(model).dump() + "\n";
    if (profiles) {
        std::string p;
        for (const LayerProfile &lp : profiles->profiles())
            p += toJson(lp).dump();
        s += "profiles " + fnv1a64Hex(p) + "\n";
    }
    s += "cost " + costOptionsSignature(cost);
    s += "\npredictor " + std::to_string(predictorDigest);
    return fnv1a64(s);
}

PredictionCache::PredictionCache(std::uint64_t context)
    : mContext(context)
{
}

bool PredictionCache::setContext(std::uint64_t context)
{
    if (context == mContext)
        return false;
    clear();
    mContext = context;
    return true;
}

void PredictionCache::clear()
{
    mBuckets.clear();
    mSize = 0;
    mCompact.clear();
    mCompactSize = 0;
    mClasses.clear();
    mClassIds.clear();
}

std::uint64_t hashWords(const std::uint32_t *words, size_t n)
{
    std::uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; ++i)
        for (int b = 0; b < 4; ++b) {
            h ^= (words[i] >> (8 * b)) & 0xffu;
            h *= 1099511628211ull;
        }
    return h;
}

std::uint32_t PredictionCache::internClass(const std::string &cls)
{
    auto [it, added] = mClassIds.try_emplace(cls, static_cast<std::uint32_t>(mClasses.size()));
    if (added)
        mClasses.push_back(cls);
    return it->second;
}

std::optional<CachedPrediction> PredictionCache::find(const CompactSignature &sig)
{
    auto it = mCompact.find(sig.hash);
    if (it != mCompact.end()) {
        for (const CompactEntry &e : it->second)
            if (e.words == sig.words) {
                ++mHits;
                return e.value;
            }
        ++mCollisions;
    }
    ++mMisses;
    return std::nullopt;
}

void PredictionCache::insert(const CompactSignature &sig, const CachedPrediction &value)
{
    std::vector<CompactEntry> &bucket = mCompact[sig.hash];
    for (CompactEntry &e : bucket)
        if (e.words == sig.words) {
            e.value = value;
            return;
        }
    bucket.push_back({sig.words, value});
    ++mCompactSize;
}

std::optional<CachedPrediction> PredictionCache::find(const PlanSignature &sig)
{
    auto it = mBuckets.find(sig.hash);
    if (it != mBuckets.end()) {
        for (const Entry &e : it->second)
            if (e.key == sig.key) {
                ++mHits;
                return e.value;
            }
        ++mCollisions;
    }
    ++mMisses;
    return std::nullopt;
}

void PredictionCache::insert(const PlanSignature &sig, const CachedPrediction &value)
{
    std::vector<Entry> &bucket = mBuckets[sig.hash];
    for (Entry &e : bucket)
        if (e.key == sig.key) {
            e.value = value;
            return;
        }
    bucket.push_back({sig.key, value});
    ++mSize;
}

std::vector<std::uint8_t> PredictionCache::serialize() const
{
    ByteWriter w({'M', 'X', 'P', 'C', 2, 0, 0, 0});
    w.u64(mContext);
    w.u64(mSize);
    const auto value = [&w](const CachedPrediction &p) {
        const float v[4] = {p.timeLogRatio, p.memLogRatio, p.timeSpread, p.memSpread};
        w.raw(v, sizeof v);
    };
    // Sorted by (hash, key): identical caches serialise to identical bytes.
    std::vector<std::pair<std::uint64_t, const Entry *>> all;
    for (const auto &[h, bucket] : mBuckets)
        for (const Entry &e : bucket)
            all.push_back({h, &e});
    std::sort(all.begin(), all.end(), [](const auto &a, const auto &b) {
        return a.first != b.first ? a.first < b.first : a.second->key < b.second->key;
    });
    for (const auto &[h, e] : all) {
        w.u64(h);
        w.str(e->key);
        value(e->value);
    }
    w.u64(mClasses.size());
    for (const std::string &c : mClasses)
        w.str(c);
    w.u64(mCompactSize);
    std::vector<std::pair<std::uint64_t, const CompactEntry *>> compact;
    for (const auto &[h, bucket] : mCompact)
        for (const CompactEntry &e : bucket)
            compact.push_back({h, &e});
    std::sort(compact.begin(), compact.end(), [](const auto &a, const auto &b) {
        return a.first != b.first ? a.first < b.first : a.second->words < b.second->words;
    });
    if (!compact.empty())
        w.reserve(compact.size() * (8 + 16 + 4 * compact.front().second->words.size()));
    for (const auto &[h, e] : compact) {
        w.u64(e->words.size());
        w.u32s(e->words.data(), e->words.size());
        value(e->value);
    }
    return w.take();
}

PredictionCache PredictionCache::deserialize(const std::vector<std::uint8_t> &bytes)
{
    const bool v1 = bytes.size() >= 8 && std::memcmp(bytes.data(), "MXPC\x01\0\0\0", 8) == 0;
    const bool v2 = bytes.size() >= 8 && std::memcmp(bytes.data(), "MXPC\x02\0\0\0", 8) == 0;
    if (!v1 && !v2)
        throw std::runtime_error("prediction cache: expected the MXPC version 1 or 2 header");
    ByteReader r(bytes, "prediction cache", 8);
    // A stored prediction is used as analytic x exp(ratio): a NaN, an infinity or an absurd ratio
    // would reach the ranking and the Pareto front, so it makes the whole cache unreadable.
    const auto value = [&r] {
        float v[4];
        r.raw(v, sizeof v);
        for (int i = 0; i < 4; ++i)
            if (!std::isfinite(v[i]) || std::fabs(v[i]) > kMaxCachedLogRatio || (i >= 2 && v[i] < 0))
                throw std::runtime_error("prediction cache: entry at byte " + std::to_string(r.pos() - sizeof v)
                                         + ": expected finite log-ratios within +-"
                                         + std::to_string(static_cast<int>(kMaxCachedLogRatio))
                                         + " and non-negative spreads, found " + std::to_string(v[i]));
        return CachedPrediction {v[0], v[1], v[2], v[3]};
    };
    PredictionCache c(r.u64());
    const std::uint64_t n = r.u64();
    for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t h = r.u64();
        std::string key = r.str();
        const CachedPrediction v = value();
        if (fnv1a64(key) != h)
            throw std::runtime_error("prediction cache: entry " + std::to_string(i) + " has a wrong hash");
        c.insert(PlanSignature {h, std::move(key)}, v);
    }
    if (v2) {
        const std::uint64_t nc = r.u64();
        for (std::uint64_t i = 0; i < nc; ++i)
            if (c.internClass(r.str()) != i)
                throw std::runtime_error("prediction cache: class " + std::to_string(i) + " is a duplicate");
        const std::uint64_t ne = r.u64();
        for (std::uint64_t i = 0; i < ne; ++i) {
            const std::uint64_t nw = r.u64();
            r.needItems(nw, 4);
            // Layout of SearchResult::signatureWords: 5 header words, then 10 per stage.
            if (nw < 15 || (nw - 5) % 10 != 0)
                throw std::runtime_error("prediction cache: compact entry " + std::to_string(i) + " has "
                                         + std::to_string(nw) + " words, expected 5 + 10 per stage");
            CompactSignature sig;
            sig.words.resize(nw);
            for (std::uint64_t k = 0; k < nw; ++k)
                sig.words[k] = r.u32();
            for (std::uint64_t k = 5; k < nw; k += 10)
                for (std::uint64_t cls : {k + 4, k + 8, k + 9})
                    if (sig.words[cls] >= nc)
                        throw std::runtime_error("prediction cache: compact entry " + std::to_string(i)
                                                 + " names class " + std::to_string(sig.words[cls]) + " of "
                                                 + std::to_string(nc));
            const CachedPrediction v = value();
            sig.hash = hashWords(sig.words.data(), sig.words.size());
            c.insert(sig, v);
        }
    }
    if (!r.atEnd())
        throw std::runtime_error("prediction cache: trailing bytes after " + std::to_string(n) + " entries");
    return c;
}

PredictionCache loadPredictionCache(const Store &store, std::uint64_t context, std::vector<Diagnostic> *warnings)
{
    const auto bytes = store.blob(kPredictionCacheBlobKind, hex16(context));
    if (!bytes)
        return PredictionCache(context);
    try {
        PredictionCache c = PredictionCache::deserialize(*bytes);
        if (c.context() == context)
            return c;
    } catch (const std::exception &e) {
        // An unreadable cache is only lost time: start empty (and it is overwritten when saved).
        if (warnings)
            warnings->push_back(
                Diagnostic {store.location(), std::string(kPredictionCacheBlobKind) + "/" + hex16(context),
                            std::string("ignoring the stored prediction cache (") + e.what() + "); predicting again"});
    }
    return PredictionCache(context);
}

void savePredictionCache(Store &store, const PredictionCache &cache)
{
    store.putBlob(kPredictionCacheBlobKind, predictionCacheBlobKey(cache.context()), cache.serialize());
}

std::string predictionCacheBlobKey(std::uint64_t context)
{
    return hex16(context);
}

} // namespace memx
