#include "memx/predict/searchresultcache.h"

#include "memx/io/formats.h"
#include "memx/profiling/profileio.h"
#include "memx/store/store.h"
#include "memx/util/bytes.h"
#include "memx/util/diagnostic.h"
#include "memx/util/hash.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace memx {

namespace {

template<typename T> std::string list(const std::vector<T> &v)
{
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i)
            s += ",";
        if constexpr (std::is_same_v<T, RecomputeMethod>)
            s += toString(v[i]);
        else if constexpr (std::is_same_v<T, bool>)
            s += v[i] ? "1" : "0";
        else if constexpr (std::is_same_v<T, DpSharding>) // 0 / 1 as the former distributed-optimizer flag
            s += std::to_string(static_cast<int>(v[i]));
        else
            s += std::to_string(v[i]);
    }
    return s;
}

} // namespace

SearchRequestKey searchRequestKey(const SearchRequest &r, std::uint64_t predictorDigest)
{
    std::string s = "memx.search-request/1\ncluster " + toJson(r.cluster).dump() + "\nmodel " + toJson(r.model).dump()
        + "\ngbs " + std::to_string(r.globalBatch);
    const SearchSpaceOptions &sp = r.space;
    s += "\nspace stages=" + list(sp.stagesPerGroup) + ";tp=" + list(sp.tensorParallel)
        + ";mbs=" + list(sp.microBatches) + ";maxmbs=" + std::to_string(sp.maxReplicaMicroBatch)
        + ";rc=" + list(sp.recompute) + ";do=" + list(sp.dpSharding) + ";vp=" + list(sp.virtualStages)
        + ";cp=" + list(sp.contextParallel) + toString(sp.cpComm) + ";perm=" + (sp.permuteGroups ? "1" : "0")
        + ";radius=" + std::to_string(sp.neighbourRadius) + ";memsplit=" + (sp.memoryAwareSplit ? "1" : "0")
        + ";maxstages=" + std::to_string(sp.maxStages) + ";sp=" + (sp.sequenceParallel ? "1" : "0")
        + (sp.overlapDataParallel ? ";overlap=1" : "")
        + (sp.fp8 != Fp8Format::Off ? std::string(";fp8=") + toString(sp.fp8) : std::string())
        + ";target=" + toString(sp.target) + ";mixed=" + (sp.mixedStages ? "1" : "0")
        + ";round=" + (sp.roundGlobalBatch ? "1" : "0") + ";partial=" + (sp.partialRecompute ? "1" : "0");
    if (r.stream) {
        s += "\nstream top=" + std::to_string(r.stream->topK) + ";objectives=";
        for (const ObjectiveWeights &o : r.stream->objectives)
            s += std::to_string(o.time) + "," + std::to_string(o.memory) + "," + std::to_string(o.balance) + ";";
    }
    s += "\ncost " + costOptionsSignature(r.cost);
    std::string p;
    for (const LayerProfile &lp : r.profiles.profiles())
        p += toJson(lp).dump();
    s += "\nprofiles " + std::to_string(r.profiles.size()) + " " + fnv1a64Hex(p);
    s += "\npredictor " + hex16(predictorDigest) + "\n";
    SearchRequestKey k;
    k.hash = fnv1a64(s);
    k.key = std::move(s);
    return k;
}

namespace {

[[noreturn]] void corrupt(const std::string &what)
{
    throw std::runtime_error("search result: " + what);
}

/// Every metric array has one entry per configuration, and every value is finite and in range
/// (a NaN would make the ranking and the Pareto front meaningless, or never terminate).
void validateMetrics(const SearchResult &r)
{
    const size_t n = r.timeMs.size();
    if (r.peakMemory.size() != n || r.imbalance.size() != n || r.peakBytes.size() != n || r.baseOf.size() != n
        || r.splitOffset.size() != n || (!r.timeSpread.empty() && r.timeSpread.size() != n)
        || (!r.memSpread.empty() && r.memSpread.size() != n) || (!r.oomRisk.empty() && r.oomRisk.size() != n)
        || (!r.extrapolating.empty() && r.extrapolating.size() != n))
        corrupt("metric arrays of different lengths");
    if (r.streamed ? r.evaluated < n : r.evaluated != n)
        corrupt("expected " + std::to_string(r.evaluated) + " evaluated configurations, found " + std::to_string(n));
    const auto check = [](const auto &values, const char *name, bool positive) {
        for (size_t i = 0; i < values.size(); ++i) {
            const double v = static_cast<double>(values[i]);
            if (!std::isfinite(v) || v < 0 || (positive && v <= 0))
                corrupt(std::string("configuration ") + std::to_string(i) + ": expected a finite "
                        + (positive ? "positive" : "non-negative") + " " + name + ", found " + std::to_string(v));
        }
    };
    check(r.timeMs, "time", true);
    check(r.peakMemory, "peak memory", false);
    check(r.imbalance, "imbalance", false);
    check(r.peakBytes, "peak bytes", false);
    check(r.timeSpread, "time spread", false);
    check(r.memSpread, "memory spread", false);
    for (size_t i = 0; i < r.oomRisk.size(); ++i)
        if (r.oomRisk[i] > 1)
            corrupt("configuration " + std::to_string(i) + ": expected an OOM risk of 0 or 1");
    for (size_t i = 0; i < r.extrapolating.size(); ++i)
        if (r.extrapolating[i] > 1)
            corrupt("configuration " + std::to_string(i) + ": expected an extrapolation flag of 0 or 1");
}

/// Every pipeline stage names a group of the stored cluster, a device type of the result and a
/// range of that group's GPUs (so materialize() never invents a node or a GPU).
void validatePipelines(const SearchResult &r)
{
    if (r.size() > 0
        && (r.microBatchSizes.empty() || r.recomputeChoices.empty() || r.dpShardingChoices.empty()
            || r.virtualStageChoices.empty() || r.contextParallelChoices.empty() || r.deviceTypes.empty()))
        corrupt("empty decoding table");
    for (int mb : r.microBatchSizes)
        if (mb < 1 || mb > (1 << 20))
            corrupt("expected micro-batch sizes from 1 to 1048576, found " + std::to_string(mb));
    if (r.globalBatch < 1)
        corrupt("expected a positive global batch, found " + std::to_string(r.globalBatch));
    for (size_t p = 0; p < r.pipelines.size(); ++p) {
        const SearchResult::Pipeline &pl = r.pipelines[p];
        const std::string where = "pipeline " + std::to_string(p);
        if (pl.stages.empty() || pl.stages.size() > static_cast<size_t>(r.model.shape.layers))
            corrupt(where + ": expected 1 to " + std::to_string(r.model.shape.layers) + " stages, found "
                    + std::to_string(pl.stages.size()));
        for (size_t si = 0; si < pl.stages.size(); ++si) {
            const SearchStage &s = pl.stages[si];
            const std::string at = where + " stage " + std::to_string(si);
            if (s.group < 0 || static_cast<size_t>(s.group) >= r.cluster.groups.size())
                corrupt(at + ": expected a node group index below " + std::to_string(r.cluster.groups.size())
                        + ", found " + std::to_string(s.group));
            if (s.mixed()
                && (static_cast<size_t>(s.group2) >= r.cluster.groups.size() || s.group2 == s.group || s.dp2 < 1
                    || s.dp2 >= s.dp || !(s.weight > 0) || !(s.weight2 > 0) || !std::isfinite(s.weight)
                    || !std::isfinite(s.weight2) || si >= pl.replicaClass2.size() || pl.replicaClass2[si].empty()))
                corrupt(at + ": malformed mixed stage");
            if (!s.mixed() && (s.group2 != -1 || s.dp2 != 0))
                corrupt(at + ": expected no second part");
            for (int part = 0; part < (s.mixed() ? 2 : 1); ++part) {
                const NodeGroup &g = r.cluster.groups[static_cast<size_t>(part ? s.group2 : s.group)];
                const std::int64_t gpus = static_cast<std::int64_t>(g.count) * g.gpusPerNode;
                const int dp = part ? s.dp2 : s.dp - s.dp2;
                if (s.tp < 1 || dp < 1 || s.slices < 1 || s.slice < 0 || s.slice >= s.slices
                    || g.gpusPerNode % s.tp != 0 || (static_cast<std::int64_t>(s.slice) + 1) * s.tp * dp > gpus)
                    corrupt(at + ": slice " + std::to_string(s.slice) + "/" + std::to_string(s.slices) + " with TP "
                            + std::to_string(s.tp) + " x DP " + std::to_string(dp) + " does not fit group '" + g.name
                            + "'");
                const std::string &dev = r.cluster.deviceOf(g).id;
                if (std::find(r.deviceTypes.begin(), r.deviceTypes.end(), dev) == r.deviceTypes.end())
                    corrupt(at + ": device type " + dev + " is not in the result's device types");
            }
        }
    }
}

/// Every configuration decodes to an existing pipeline and its layer counts cover the model.
void validateConfigurations(const SearchResult &r)
{
    // Number of base configurations = pipelines x micro-batches x recompute^types x optimizers.
    // Each factor is bounded by the blob's size, so the products below cannot overflow 64 bits
    // before the check against the 32-bit base index range.
    constexpr std::uint64_t kMaxBases = std::numeric_limits<std::uint32_t>::max();
    std::uint64_t bases = 1, nCombos = 1;
    for (const std::uint64_t f :
         {std::uint64_t(r.pipelines.size()), std::uint64_t(r.microBatchSizes.size()),
          std::uint64_t(r.dpShardingChoices.size()), std::uint64_t(r.virtualStageChoices.size()),
          std::uint64_t(r.contextParallelChoices.size())})
        if ((bases *= f) > kMaxBases)
            corrupt("implausible number of base configurations");
    for (size_t i = 0; i < r.deviceTypes.size(); ++i) {
        bases *= r.recomputeChoices.size();
        nCombos *= r.recomputeChoices.size();
        if (bases > kMaxBases)
            corrupt("implausible number of base configurations");
    }
    std::vector<int> maxDp(r.pipelines.size(), 1);
    for (size_t p = 0; p < r.pipelines.size(); ++p)
        for (const SearchStage &s : r.pipelines[p].stages)
            maxDp[p] = std::max(maxDp[p], s.dp);
    const size_t nMbs = r.microBatchSizes.size(),
                 nDist = r.dpShardingChoices.size() * r.virtualStageChoices.size() * r.contextParallelChoices.size();
    for (size_t i = 0; i < r.size(); ++i) {
        const std::string at = "configuration " + std::to_string(i);
        if (r.baseOf[i] >= bases)
            corrupt(at + ": base index " + std::to_string(r.baseOf[i]) + " out of range");
        const std::uint64_t rest = r.baseOf[i] / nDist / nCombos;
        const size_t p = rest / nMbs;
        // Context parallelism: a stage's DP TP groups are DP / cp replicas.
        const int cpv
            = r.contextParallelChoices[r.baseOf[i] / (r.dpShardingChoices.size() * r.virtualStageChoices.size())
                                       % r.contextParallelChoices.size()];
        if (maxDp[p] % cpv != 0)
            corrupt(at + ": context-parallel size " + std::to_string(cpv) + " does not divide DP "
                    + std::to_string(maxDp[p]));
        const std::int64_t step = static_cast<std::int64_t>(r.microBatchSizes[rest % nMbs]) * (maxDp[p] / cpv);
        const std::int64_t batch = r.globalBatch % step == 0 || !r.roundGlobalBatch
            ? r.globalBatch
            : roundedMicroBatchCount(r.globalBatch, static_cast<int>(step)) * step;
        if (batch % step != 0)
            corrupt(at + ": global batch " + std::to_string(batch) + " is not a multiple of " + std::to_string(step));
        const std::vector<SearchStage> &stages = r.pipelines[p].stages;
        if (r.splitOffset[i] > r.layerCounts.size() || stages.size() > r.layerCounts.size() - r.splitOffset[i])
            corrupt(at + ": layer split offset " + std::to_string(r.splitOffset[i]) + " out of range");
        // p layer counts, or 2p with the recomputed layers of a partial-recompute configuration.
        // (A next offset beyond the bytes is reported as that configuration's.)
        const size_t end = i + 1 < r.size() ? r.splitOffset[i + 1] : r.layerCounts.size();
        const size_t len = end - r.splitOffset[i];
        if (end <= r.layerCounts.size()
            && (end < r.splitOffset[i] || (len != stages.size() && len != 2 * stages.size())))
            corrupt(at + ": expected " + std::to_string(stages.size()) + " or " + std::to_string(2 * stages.size())
                    + " bytes of layer split");
        const bool partial = end <= r.layerCounts.size() && len == 2 * stages.size();
        long layers = 0;
        for (size_t si = 0; si < stages.size(); ++si) {
            const int count = r.layerCounts[r.splitOffset[i] + si];
            const SearchStage &ss = stages[si];
            const bool even = ss.mixed()
                ? mixedMicroBatches(static_cast<int>(step), ss.dp - ss.dp2, ss.dp2, ss.weight, ss.weight2).has_value()
                : step % ss.dp == 0;
            if (count < 1 || !even)
                corrupt(at + ": stage " + std::to_string(si) + " without layers or with an uneven micro-batch");
            if (partial && r.layerCounts[r.splitOffset[i] + stages.size() + si] > count)
                corrupt(at + ": stage " + std::to_string(si) + " recomputes more layers than it holds");
            layers += count;
        }
        if (layers != r.model.shape.layers)
            corrupt(at + ": expected stages covering the model's " + std::to_string(r.model.shape.layers)
                    + " layers, found " + std::to_string(layers));
    }
}

} // namespace

void validateSearchResult(const SearchResult &r)
{
    if (r.cluster.groups.empty() || r.model.shape.layers < 1)
        corrupt("no cluster or model");
    if (r.threads < 1 || r.threads > 1024)
        corrupt("expected a thread count from 1 to 1024, found " + std::to_string(r.threads));
    validateMetrics(r);
    validatePipelines(r);
    validateConfigurations(r);
}

std::vector<std::uint8_t> serializeSearchResult(const SearchResult &r)
{
    ByteWriter w({'M', 'X', 'S', 'R', 6, 0, 0, 0});
    w.u64(r.enumerated);
    w.pod(std::vector<std::uint64_t> {r.pruned.divisibility, r.pruned.microBatchLimit, r.pruned.layers,
                                      r.pruned.outOfMemory, r.pruned.duplicates, r.pruned.launcher});
    w.u64(r.evaluated);
    w.u64(r.cancelled ? 1 : 0);
    w.pod(std::vector<double> {r.enumerateEvaluateMs});
    w.u64(static_cast<std::uint64_t>(r.threads));
    w.pod(r.timeMs);
    w.pod(r.peakMemory);
    w.pod(r.imbalance);
    w.pod(r.peakBytes);
    w.pod(r.baseOf);
    w.pod(r.splitOffset);
    w.pod(r.layerCounts);
    w.u64(r.pipelines.size());
    for (const SearchResult::Pipeline &pl : r.pipelines) {
        std::vector<std::int32_t> st;
        std::vector<double> weights;
        for (const SearchStage &s : pl.stages) {
            st.insert(st.end(), {s.group, s.slice, s.slices, s.tp, s.dp, s.group2, s.dp2});
            weights.insert(weights.end(), {s.weight, s.weight2});
        }
        w.pod(st);
        w.pod(weights);
        std::vector<std::string> second = pl.replicaClass2;
        second.resize(pl.stages.size());
        for (const std::vector<std::string> *v :
             {&pl.replicaClass, &pl.dpClass, &pl.p2pClass, static_cast<const std::vector<std::string> *>(&second)}) {
            w.u64(v->size());
            for (const std::string &x : *v)
                w.str(x);
        }
    }
    w.pod(std::vector<std::int32_t>(r.microBatchSizes.begin(), r.microBatchSizes.end()));
    std::vector<std::uint8_t> rc;
    for (RecomputeMethod m : r.recomputeChoices)
        rc.push_back(static_cast<std::uint8_t>(m));
    w.pod(rc);
    std::vector<std::uint8_t> shard; // the former distributed-optimizer flags: 0 / 1 are the same values
    for (DpSharding d : r.dpShardingChoices)
        shard.push_back(static_cast<std::uint8_t>(d));
    w.pod(shard);
    w.pod(std::vector<std::int32_t>(r.virtualStageChoices.begin(), r.virtualStageChoices.end()));
    w.pod(std::vector<std::int32_t>(r.contextParallelChoices.begin(), r.contextParallelChoices.end()));
    w.u64(static_cast<std::uint64_t>(r.cpComm));
    w.u64(r.deviceTypes.size());
    for (const std::string &d : r.deviceTypes)
        w.str(d);
    w.str(toJson(r.cluster).dump());
    w.str(toJson(r.model).dump());
    w.u64(static_cast<std::uint64_t>(r.globalBatch));
    // bit 1: since version 6; bits 2-3: Fp8Format (0 off, 1 hybrid, 2 e4m3), absent before FP8
    w.u64((r.sequenceParallel ? 1u : 0u) | (r.overlapDataParallel ? 2u : 0u)
          | (static_cast<std::uint64_t>(r.fp8) << 2));
    w.u64((r.roundGlobalBatch ? 1u : 0u) | (r.streamed ? 2u : 0u));
    w.str(r.predictor);
    w.pod(r.timeSpread);
    w.pod(r.memSpread);
    w.pod(r.oomRisk);
    w.pod(r.extrapolating);
    return w.take();
}

SearchResult deserializeSearchResult(const std::vector<std::uint8_t> &bytes)
{
    // Version 5: version 4 (version 3 - version 2's launcher prune count and mixed stages - second
    // group, its replicas, the micro-batch weights, the second parts' replica classes - and the
    // extrapolation flags - and the batch-rounding and streamed flags) and the virtual-stage
    // choices; version 6: configurations may carry their recomputed layers per stage (partial
    // recompute, SearchResult::layerCounts). Older versions are refused like any unreadable blob:
    // a miss, searched again.
    if (bytes.size() < 8 || std::memcmp(bytes.data(), "MXSR\x06\0\0\0", 8) != 0)
        throw std::runtime_error("search result: expected the MXSR version 6 header");
    ByteReader rd(bytes, "search result", 8);
    SearchResult r;
    r.enumerated = rd.u64();
    const auto pr = rd.pod<std::uint64_t>();
    if (pr.size() != 6u)
        throw std::runtime_error("search result: expected 6 prune counts");
    r.pruned = PruneCounts {pr[0], pr[1], pr[2], pr[3], pr[4], pr[5]};
    r.evaluated = rd.u64();
    r.cancelled = rd.u64() != 0;
    const auto ms = rd.pod<double>();
    r.enumerateEvaluateMs = ms.empty() ? 0.0 : ms.front();
    r.threads = static_cast<int>(rd.u64());
    r.timeMs = rd.pod<double>();
    r.peakMemory = rd.pod<double>();
    r.imbalance = rd.pod<double>();
    r.peakBytes = rd.pod<double>();
    r.baseOf = rd.pod<std::uint32_t>();
    r.splitOffset = rd.pod<std::uint32_t>();
    r.layerCounts = rd.pod<std::uint8_t>();
    const std::uint64_t np = rd.u64();
    if (np > bytes.size())
        throw std::runtime_error("search result: implausible pipeline count");
    r.pipelines.resize(np);
    for (SearchResult::Pipeline &pl : r.pipelines) {
        const size_t per = 7;
        const auto st = rd.pod<std::int32_t>();
        if (st.size() % per)
            throw std::runtime_error("search result: malformed pipeline stages");
        for (size_t i = 0; i < st.size(); i += per) {
            SearchStage s {st[i], st[i + 1], st[i + 2], st[i + 3], st[i + 4]};
            s.group2 = st[i + 5];
            s.dp2 = st[i + 6];
            pl.stages.push_back(s);
        }
        const auto weights = rd.pod<double>();
        if (weights.size() != 2 * pl.stages.size())
            throw std::runtime_error("search result: malformed mixed-stage weights");
        for (size_t i = 0; i < pl.stages.size(); ++i) {
            pl.stages[i].weight = weights[2 * i];
            pl.stages[i].weight2 = weights[2 * i + 1];
        }
        const std::vector<std::vector<std::string> *> tables {&pl.replicaClass, &pl.dpClass, &pl.p2pClass,
                                                              &pl.replicaClass2};
        for (auto *v : tables) {
            const std::uint64_t n = rd.u64();
            if (n != pl.stages.size())
                throw std::runtime_error("search result: class table does not match the stages");
            for (std::uint64_t i = 0; i < n; ++i)
                v->push_back(rd.str());
        }
    }
    const auto mbs = rd.pod<std::int32_t>();
    r.microBatchSizes.assign(mbs.begin(), mbs.end());
    for (std::uint8_t m : rd.pod<std::uint8_t>()) {
        if (m > static_cast<std::uint8_t>(RecomputeMethod::Full))
            throw std::runtime_error("search result: unknown recompute method " + std::to_string(m));
        r.recomputeChoices.push_back(static_cast<RecomputeMethod>(m));
    }
    for (std::uint8_t d : rd.pod<std::uint8_t>()) {
        if (d > static_cast<std::uint8_t>(DpSharding::Parameters))
            throw std::runtime_error("search result: unknown data-parallel sharding " + std::to_string(d));
        r.dpShardingChoices.push_back(static_cast<DpSharding>(d));
    }
    r.virtualStageChoices.clear();
    for (std::int32_t v : rd.pod<std::int32_t>()) {
        if (v < 1 || v > 1024)
            throw std::runtime_error("search result: expected virtual stages from 1 to 1024, found "
                                     + std::to_string(v));
        r.virtualStageChoices.push_back(v);
    }
    r.contextParallelChoices.clear();
    for (std::int32_t v : rd.pod<std::int32_t>()) {
        if (v < 1 || v > 1024)
            throw std::runtime_error("search result: expected context-parallel sizes from 1 to 1024, found "
                                     + std::to_string(v));
        r.contextParallelChoices.push_back(v);
    }
    if (const std::uint64_t comm = rd.u64(); comm <= static_cast<std::uint64_t>(CpComm::A2A))
        r.cpComm = static_cast<CpComm>(comm);
    else
        throw std::runtime_error("search result: unknown context-parallel exchange " + std::to_string(comm));
    const std::uint64_t nd = rd.u64();
    if (nd > bytes.size())
        throw std::runtime_error("search result: implausible device-type count");
    for (std::uint64_t i = 0; i < nd; ++i)
        r.deviceTypes.push_back(rd.str());
    {
        Diagnostics diags;
        const nlohmann::json cj = nlohmann::json::parse(rd.str(), nullptr, false);
        r.cluster = parseCluster(cj, builtinCatalogue(), diags);
        const nlohmann::json mj = nlohmann::json::parse(rd.str(), nullptr, false);
        r.model = parseModel(mj, diags);
        if (!diags.empty())
            throw std::runtime_error("search result: stored cluster/model: " + diags.items().front().toString());
    }
    r.globalBatch = static_cast<int>(rd.u64());
    const std::uint64_t spFlags = rd.u64();
    if (spFlags > 11)
        throw std::runtime_error("search result: expected sequence-parallel flags 0 to 11, found "
                                 + std::to_string(spFlags));
    r.sequenceParallel = (spFlags & 1) != 0;
    r.overlapDataParallel = (spFlags & 2) != 0;
    r.fp8 = static_cast<Fp8Format>(spFlags >> 2);
    const std::uint64_t flags = rd.u64();
    if (flags > 3)
        throw std::runtime_error("search result: expected flags 0 to 3, found " + std::to_string(flags));
    r.roundGlobalBatch = (flags & 1) != 0;
    r.streamed = (flags & 2) != 0;
    r.predictor = rd.str();
    r.timeSpread = rd.pod<float>();
    r.memSpread = rd.pod<float>();
    r.oomRisk = rd.pod<std::uint8_t>();
    r.extrapolating = rd.pod<std::uint8_t>();
    if (!rd.atEnd())
        throw std::runtime_error("search result: trailing bytes");
    validateSearchResult(r);
    return r;
}

SearchResultCache::SearchResultCache(size_t capacity)
    : mCapacity(std::max<size_t>(1, capacity))
{
}

std::optional<SearchResult> SearchResultCache::find(const SearchRequestKey &key)
{
    for (auto it = mEntries.begin(); it != mEntries.end(); ++it) {
        if (it->key.hash != key.hash)
            continue;
        if (it->key.key != key.key) {
            ++mCollisions;
            continue;
        }
        mEntries.splice(mEntries.begin(), mEntries, it);
        ++mHits;
        return mEntries.front().result;
    }
    ++mMisses;
    return std::nullopt;
}

void SearchResultCache::insert(const SearchRequestKey &key, const SearchResult &result)
{
    mEntries.remove_if([&](const Entry &e) { return e.key.hash == key.hash && e.key.key == key.key; });
    Entry e {key, result};
    e.result.features.clear();
    e.result.features.shrink_to_fit();
    mEntries.push_front(std::move(e));
    while (mEntries.size() > mCapacity)
        mEntries.pop_back();
}

namespace {

constexpr const char *kIndexKey = kSearchResultIndexKey;

std::vector<std::string> readIndex(const Store &store)
{
    std::vector<std::string> keys;
    if (auto b = store.blob(kSearchResultBlobKind, kIndexKey)) {
        std::string s(b->begin(), b->end());
        size_t at = 0;
        while (at < s.size()) {
            const size_t nl = s.find('\n', at);
            const std::string k = s.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
            if (!k.empty())
                keys.push_back(k);
            if (nl == std::string::npos)
                break;
            at = nl + 1;
        }
    }
    return keys;
}

} // namespace

std::optional<SearchResult> loadSearchResult(const Store &store, const SearchRequestKey &key,
                                             std::vector<Diagnostic> *warnings)
{
    const std::string name = searchResultBlobKey(key);
    const auto bytes = store.blob(kSearchResultBlobKind, name);
    if (!bytes)
        return std::nullopt;
    try {
        ByteReader rd(*bytes, "search result");
        if (rd.str() != key.key)
            return std::nullopt; // another request with the same hash
        const std::vector<std::uint8_t> rest(bytes->begin() + static_cast<std::ptrdiff_t>(rd.pos()), bytes->end());
        return deserializeSearchResult(rest);
    } catch (const std::exception &e) {
        // An unreadable entry is only lost time: a miss (the search runs and overwrites it).
        if (warnings)
            warnings->push_back(
                Diagnostic {store.location(), std::string(kSearchResultBlobKind) + "/" + name,
                            std::string("ignoring the stored search result (") + e.what() + "); searching again"});
        return std::nullopt;
    }
}

void saveSearchResult(Store &store, const SearchRequestKey &key, const SearchResult &result, size_t keep)
{
    ByteWriter w;
    w.str(key.key);
    std::vector<std::uint8_t> bytes = w.take();
    const std::vector<std::uint8_t> body = serializeSearchResult(result);
    bytes.insert(bytes.end(), body.begin(), body.end());
    const std::string name = searchResultBlobKey(key);
    std::vector<std::string> index = readIndex(store);
    index.erase(std::remove(index.begin(), index.end(), name), index.end());
    index.insert(index.begin(), name);
    StoreTransaction tx(store);
    store.putBlob(kSearchResultBlobKind, name, bytes);
    while (index.size() > std::max<size_t>(1, keep)) {
        store.removeBlob(kSearchResultBlobKind, index.back());
        index.pop_back();
    }
    std::string text;
    for (const std::string &k : index)
        text += k + "\n";
    store.putBlob(kSearchResultBlobKind, kIndexKey, std::vector<std::uint8_t>(text.begin(), text.end()));
    tx.commit();
}

void clearSearchResults(Store &store)
{
    for (const std::string &k : store.blobKeys(kSearchResultBlobKind))
        store.removeBlob(kSearchResultBlobKind, k);
}

std::string searchResultBlobKey(const SearchRequestKey &key)
{
    return hex16(key.hash);
}

std::vector<std::string> storedSearchResults(const Store &store)
{
    return readIndex(store);
}

} // namespace memx
