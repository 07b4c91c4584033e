#pragma once

#include "memx/cluster/cluster.h"
#include "memx/cost/costmodel.h"
#include "memx/cost/linkkey.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"
#include "memx/profile/layerprofile.h"
#include "memx/util/diagnostic.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace memx {

/// Blob kind of persisted prediction caches (key = context hash, 16 hex digits).
constexpr const char *kPredictionCacheBlobKind = "prediction-cache";

/// Canonical signature of a plan: a full key (text) and its 64-bit FNV-1a hash.
///
/// The key describes everything the cost of a plan depends on and nothing else:
///   global:    global batch, micro-batches m, distributed optimizer, sequence parallel;
///   per stage, in pipeline order: first layer + layer count, recompute (method, k), the SORTED
///              multiset of replica descriptors (device id, the node's intra-node link class,
///              TP degree, micro-batch), the class of the links its data-parallel group spans
///              and the class of the links to the next stage.
/// A "link class" is the sorted set of distinct links (bandwidth, latency, measured curve)
/// the collective or send crosses: node names, node numbers and GPU indices never appear.
/// Invariances (tested): renumbering / renaming identical nodes, listing a stage's replicas in
/// another order, choosing other GPU indices inside a node, the plan's name. Any change of
/// device, TP, micro-batch, layer split, recompute, optimizer sharding or link class changes it.
/// Device figures, the model, profiles, cost options and the predictor are NOT in the key: they
/// form the cache's context (predictionContext).
struct PlanSignature {
    std::uint64_t hash = 0;
    std::string key;
};

PlanSignature planSignature(const Plan &plan, const Cluster &cluster, const CostOptions &cost = CostOptions {});
/// Assembles a signature from a ready key (computes the hash).
PlanSignature makeSignature(std::string key);

/// Hash of everything outside the signature that changes a prediction: the cluster's device
/// specs (not its node counts), the model, the profiles, the cost options and the predictor
/// (its digest; 0 for the analytic model). A cache whose context differs is stale.
std::uint64_t predictionContext(const Cluster &cluster, const Model &model, const ProfileSet *profiles,
                                const CostOptions &cost, std::uint64_t predictorDigest);

/// What the cache stores per plan: the learned log-ratios over the analytic estimate and their
/// spreads (so a hit reproduces a miss exactly: prediction = analytic x exp(ratio)).
struct CachedPrediction {
    float timeLogRatio = 0, memLogRatio = 0, timeSpread = 0, memSpread = 0;
    bool operator==(const CachedPrediction &) const = default;
};

/// Compact signature of a search configuration (SearchResult::signatureWords): the content of the
/// canonical key as 32-bit words, with its device/link class strings replaced by ids the cache
/// interned (PredictionCache::internClass). Same content as the text key, no string building.
struct CompactSignature {
    std::uint64_t hash = 0;
    std::vector<std::uint32_t> words;
};
/// 64-bit hash of `n` words (FNV-1a over the little-endian bytes).
std::uint64_t hashWords(const std::uint32_t *words, size_t n);

/// Hash-signature cache of predictions. Collision-safe: entries are looked up by hash and then
/// the full canonical key is compared; two keys with one hash both live in the bucket.
/// Not thread-safe.
class PredictionCache {
public:
    explicit PredictionCache(std::uint64_t context = 0);

    std::uint64_t context() const { return mContext; }
    /// Switches to `context`; drops every entry when it differs (returns true then).
    bool setContext(std::uint64_t context);

    /// The entry for `sig` (hash, then full key verified), counting a hit or a miss.
    std::optional<CachedPrediction> find(const PlanSignature &sig);
    void insert(const PlanSignature &sig, const CachedPrediction &value);

    /// Id of a class string of the compact signatures (stable for this cache, persisted with it).
    std::uint32_t internClass(const std::string &cls);
    /// Class string of an id (throws std::out_of_range on an unknown id).
    const std::string &classString(std::uint32_t id) const { return mClasses.at(id); }
    /// Compact lookup: hash, then the words compared exactly (collision-safe), counting hit/miss.
    std::optional<CachedPrediction> find(const CompactSignature &sig);
    void insert(const CompactSignature &sig, const CachedPrediction &value);

    /// Entries (text-keyed + compact).
    size_t size() const { return mSize + mCompactSize; }
    void clear();

    std::uint64_t hits() const { return mHits; }
    std::uint64_t misses() const { return mMisses; }
    /// Lookups whose hash matched an entry with a different key (a detected collision).
    std::uint64_t collisions() const { return mCollisions; }
    void resetStats() { mHits = mMisses = mCollisions = 0; }

    /// Binary form for the project store ("MXPC" v2: context, text-keyed entries, class strings,
    /// compact entries; v1 caches - without the last two parts - are still read).
    std::vector<std::uint8_t> serialize() const;
    /// Throws std::runtime_error on corrupt bytes.
    static PredictionCache deserialize(const std::vector<std::uint8_t> &bytes);

private:
    struct Entry {
        std::string key;
        CachedPrediction value;
    };
    std::uint64_t mContext = 0;
    struct CompactEntry {
        std::vector<std::uint32_t> words;
        CachedPrediction value;
    };
    std::unordered_map<std::uint64_t, std::vector<Entry>> mBuckets;
    size_t mSize = 0;
    std::unordered_map<std::uint64_t, std::vector<CompactEntry>> mCompact;
    size_t mCompactSize = 0;
    std::vector<std::string> mClasses;
    std::unordered_map<std::string, std::uint32_t> mClassIds;
    std::uint64_t mHits = 0, mMisses = 0, mCollisions = 0;
};

class Store;
/// Largest |log-ratio| (and spread) a stored prediction may hold (e^20: a factor of ~5e8).
constexpr float kMaxCachedLogRatio = 20.0f;
/// Loads the project's cache for `context` (empty cache when none is stored or it is unreadable:
/// truncated, a NaN/infinite/absurd value, a bad class id). When `warnings` is given, an
/// unreadable cache adds one Diagnostic saying why it was ignored.
PredictionCache loadPredictionCache(const Store &store, std::uint64_t context,
                                    std::vector<Diagnostic> *warnings = nullptr);
/// Stores the cache under its context.
void savePredictionCache(Store &store, const PredictionCache &cache);
/// Key of the blob (kind kPredictionCacheBlobKind) holding the cache of `context`.
std::string predictionCacheBlobKey(std::uint64_t context);

} // namespace memx
