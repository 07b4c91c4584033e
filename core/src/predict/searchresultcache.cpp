#include "memx/predict/searchresultcache.h"

#include "memx/io/formats.h"
#include "memx/profile/profileio.h"
#include "memx/store/store.h"
#include "memx/util/bytes.h"
#include "memx/util/diagnostic.h"
#include "memx/util/hash.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
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
    s += "\nspace stages=" + list(sp.stagesPerGroup) + ";tp=" + list(sp.tensorParallel) + ";mbs="
        + list(sp.microBatches) + ";maxmbs=" + std::to_string(sp.maxReplicaMicroBatch) + ";rc=" + list(sp.recompute)
        + ";do=" + list(sp.distributedOptimizer) + ";perm=" + (sp.permuteGroups ? "1" : "0")
        + ";radius=" + std::to_string(sp.neighbourRadius) + ";memsplit=" + (sp.memoryAwareSplit ? "1" : "0")
        + ";maxstages=" + std::to_string(sp.maxStages) + ";sp=" + (sp.sequenceParallel ? "1" : "0");
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

std::vector<std::uint8_t> serializeSearchResult(const SearchResult &r)
{
    ByteWriter w({'M', 'X', 'S', 'R', 1, 0, 0, 0});
    w.u64(r.enumerated);
    w.pod(std::vector<std::uint64_t> {r.pruned.divisibility, r.pruned.microBatchLimit, r.pruned.layers,
                                      r.pruned.outOfMemory, r.pruned.duplicates});
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
        for (const SearchStage &s : pl.stages)
            st.insert(st.end(), {s.group, s.slice, s.slices, s.tp, s.dp});
        w.pod(st);
        for (const auto *v : {&pl.replicaClass, &pl.dpClass, &pl.p2pClass}) {
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
    w.pod(std::vector<std::uint8_t>(r.distOptChoices.begin(), r.distOptChoices.end()));
    w.u64(r.deviceTypes.size());
    for (const std::string &d : r.deviceTypes)
        w.str(d);
    w.str(toJson(r.cluster).dump());
    w.str(toJson(r.model).dump());
    w.u64(static_cast<std::uint64_t>(r.globalBatch));
    w.u64(r.sequenceParallel ? 1 : 0);
    w.str(r.predictor);
    w.pod(r.timeSpread);
    w.pod(r.memSpread);
    w.pod(r.oomRisk);
    return w.take();
}

SearchResult deserializeSearchResult(const std::vector<std::uint8_t> &bytes)
{
    if (bytes.size() < 8 || std::memcmp(bytes.data(), "MXSR\x01\0\0\0", 8) != 0)
        throw std::runtime_error("search result: expected the MXSR version 1 header");
    ByteReader rd(bytes, "search result", 8);
    SearchResult r;
    r.enumerated = rd.u64();
    const auto pr = rd.pod<std::uint64_t>();
    if (pr.size() != 5)
        throw std::runtime_error("search result: expected 5 prune counts");
    r.pruned = PruneCounts {pr[0], pr[1], pr[2], pr[3], pr[4]};
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
        const auto st = rd.pod<std::int32_t>();
        if (st.size() % 5)
            throw std::runtime_error("search result: malformed pipeline stages");
        for (size_t i = 0; i < st.size(); i += 5)
            pl.stages.push_back(SearchStage {st[i], st[i + 1], st[i + 2], st[i + 3], st[i + 4]});
        for (auto *v : {&pl.replicaClass, &pl.dpClass, &pl.p2pClass}) {
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
    for (std::uint8_t d : rd.pod<std::uint8_t>())
        r.distOptChoices.push_back(d != 0);
    const std::uint64_t nd = rd.u64();
    if (nd > bytes.size())
        throw std::runtime_error("search result: implausible device-type count");
    for (std::uint64_t i = 0; i < nd; ++i)
        r.deviceTypes.push_back(rd.str());
    {
        Diagnostics diags;
        const nlohmann::json cj = nlohmann::json::parse(rd.str(), nullptr, false);
        r.cluster = parseCluster(cj, Catalogue::builtin(), diags);
        const nlohmann::json mj = nlohmann::json::parse(rd.str(), nullptr, false);
        r.model = parseModel(mj, diags);
        if (!diags.empty())
            throw std::runtime_error("search result: stored cluster/model: " + diags.items().front().toString());
    }
    r.globalBatch = static_cast<int>(rd.u64());
    r.sequenceParallel = rd.u64() != 0;
    r.predictor = rd.str();
    r.timeSpread = rd.pod<float>();
    r.memSpread = rd.pod<float>();
    r.oomRisk = rd.pod<std::uint8_t>();
    if (!rd.atEnd())
        throw std::runtime_error("search result: trailing bytes");
    const size_t n = r.timeMs.size();
    if (r.peakMemory.size() != n || r.imbalance.size() != n || r.peakBytes.size() != n || r.baseOf.size() != n
        || r.splitOffset.size() != n || (!r.timeSpread.empty() && r.timeSpread.size() != n)
        || (!r.memSpread.empty() && r.memSpread.size() != n) || (!r.oomRisk.empty() && r.oomRisk.size() != n))
        throw std::runtime_error("search result: metric arrays of different lengths");
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

constexpr const char *kIndexKey = "index";

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

std::optional<SearchResult> loadSearchResult(const Store &store, const SearchRequestKey &key)
{
    const auto bytes = store.blob(kSearchResultBlobKind, hex16(key.hash));
    if (!bytes)
        return std::nullopt;
    try {
        ByteReader rd(*bytes, "search result");
        if (rd.str() != key.key)
            return std::nullopt; // another request with the same hash
        const std::vector<std::uint8_t> rest(bytes->begin() + static_cast<std::ptrdiff_t>(rd.pos()), bytes->end());
        return deserializeSearchResult(rest);
    } catch (const std::exception &) {
        return std::nullopt; // an unreadable entry is only lost time
    }
}

void saveSearchResult(Store &store, const SearchRequestKey &key, const SearchResult &result, size_t keep)
{
    ByteWriter w;
    w.str(key.key);
    std::vector<std::uint8_t> bytes = w.take();
    const std::vector<std::uint8_t> body = serializeSearchResult(result);
    bytes.insert(bytes.end(), body.begin(), body.end());
    const std::string name = hex16(key.hash);
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

} // namespace memx
