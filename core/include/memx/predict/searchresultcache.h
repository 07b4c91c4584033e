#pragma once

#include "memx/search/search.h"
#include "memx/util/diagnostic.h"

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <vector>

namespace memx {

class Store;

/// Blob kind of persisted search results (key = request hash, 16 hex digits; plus "index").
constexpr const char *kSearchResultBlobKind = "search-result";

/// Canonical signature of a search request: a full key (text) and its 64-bit FNV-1a hash.
///
/// The key holds, verbatim, everything runSearch's output depends on: the cluster (its JSON:
/// node groups, devices, network, so materialize() rebuilds the same plans), the model, the
/// global batch, every search-space option and every cost option, plus two digests: the profile
/// set (FNV-1a of its JSON) and the predictor (LearnedPredictor::digest(), 0 = analytic).
/// Not in the key (invariances, tested): the thread count (runSearch is deterministic for any
/// thread count), whether the caller asked for features (a cached result never carries them), and
/// the ranking weights (ranking happens after the search). A result looked up by hash is
/// returned only when the stored key equals the requested key byte for byte.
struct SearchRequestKey {
    std::uint64_t hash = 0;
    std::string key;
};

SearchRequestKey searchRequestKey(const SearchRequest &request, std::uint64_t predictorDigest);

/// Binary form of a search result ("MXSR" v3: launcher count, mixed stages, extrapolation flags; older versions
/// refused) WITHOUT its feature matrix (features are only the predictor's input; a result that was already predicted
/// does not need them).
std::vector<std::uint8_t> serializeSearchResult(const SearchResult &result);
/// Throws std::runtime_error on corrupt bytes, and on a result that fails validateSearchResult().
SearchResult deserializeSearchResult(const std::vector<std::uint8_t> &bytes);
/// Checks that a result read from outside (a blob) is safe to use: arrays of one length, finite
/// non-negative metrics (positive times), every index (base, pipeline, group, split offset) in
/// range, stages that fit their group's GPUs and layer counts that cover the model. Throws
/// std::runtime_error("search result: ...") naming the first problem.
void validateSearchResult(const SearchResult &result);

/// In-memory cache of whole search results (after the learned prediction), least recently used
/// first out. Collision-safe: the full request key is compared on every hit. Not thread-safe.
class SearchResultCache {
public:
    explicit SearchResultCache(size_t capacity = 4);

    /// The cached result for `key` (a copy, features empty), counting a hit or a miss.
    std::optional<SearchResult> find(const SearchRequestKey &key);
    /// Stores `result` (its features dropped) under `key`, evicting the least recently used.
    void insert(const SearchRequestKey &key, const SearchResult &result);
    void clear() { mEntries.clear(); }
    size_t size() const { return mEntries.size(); }

    std::uint64_t hits() const { return mHits; }
    std::uint64_t misses() const { return mMisses; }
    std::uint64_t collisions() const { return mCollisions; }

private:
    struct Entry {
        SearchRequestKey key;
        SearchResult result;
    };
    size_t mCapacity;
    std::list<Entry> mEntries; ///< most recently used first
    std::uint64_t mHits = 0, mMisses = 0, mCollisions = 0;
};

/// The project's stored result for `key` (nullopt when absent, unreadable, or stored under
/// another key with the same hash). An unreadable or invalid blob is a miss; when `warnings` is
/// given it receives one Diagnostic (pointer "search-result/<hash>") saying why it was ignored.
std::optional<SearchResult> loadSearchResult(const Store &store, const SearchRequestKey &key,
                                             std::vector<Diagnostic> *warnings = nullptr);
/// Stores `result` under `key` and keeps at most `keep` stored results (least recently saved
/// dropped; the order lives in the blob "index"). A planned search stores one result per subset
/// of node groups (up to ~4), so the default keeps two such searches (a what-if and its baseline).
void saveSearchResult(Store &store, const SearchRequestKey &key, const SearchResult &result, size_t keep = 8);
/// Removes every stored search result (e.g. when the predictor or the profiles change).
void clearSearchResults(Store &store);
/// Key of the blob (kind kSearchResultBlobKind) holding the stored result of `key`; the blob
/// kSearchResultIndexKey lists the stored ones, most recently saved first, one per line.
std::string searchResultBlobKey(const SearchRequestKey &key);
constexpr const char *kSearchResultIndexKey = "index";
/// The keys the index lists (the stored results, most recently saved first).
std::vector<std::string> storedSearchResults(const Store &store);

} // namespace memx
