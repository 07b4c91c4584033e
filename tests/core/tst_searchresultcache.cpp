// Whole-search result cache: what the request key depends on (and what it must not), exact
// round trip of a result, collision safety, LRU eviction, persistence in a project store.
#include "memx/io/formats.h"
#include "memx/predict/projectpredictor.h"
#include "memx/predict/searchresultcache.h"
#include "memx/search/search.h"
#include "memx/store/memorystore.h"

#include <QTest>

using namespace memx;

static const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters";

/// 20-GPU NVIDIA + AMD sample, llama2-7b, a small space (a few thousand configurations).
static SearchRequest smallRequest()
{
    SearchRequest r;
    r.cluster = loadCluster(kSamples + "/paper-20gpu-nvidia-amd.json");
    r.model = resolveModel("llama2-7b");
    r.space.stagesPerGroup = {1};
    r.space.microBatches = {1, 2};
    r.space.tensorParallel = {2, 4};
    r.threads = 1;
    return r;
}

static void compareResults(const SearchResult &a, const SearchResult &b)
{
    QCOMPARE(a.size(), b.size());
    QCOMPARE(a.enumerated, b.enumerated);
    QCOMPARE(a.evaluated, b.evaluated);
    QCOMPARE(a.pruned.total(), b.pruned.total());
    QVERIFY(a.timeMs == b.timeMs); // bit-exact
    QVERIFY(a.peakMemory == b.peakMemory);
    QVERIFY(a.imbalance == b.imbalance);
    QVERIFY(a.peakBytes == b.peakBytes);
    QVERIFY(a.timeSpread == b.timeSpread);
    QVERIFY(a.memSpread == b.memSpread);
    QVERIFY(a.oomRisk == b.oomRisk);
    QCOMPARE(a.predictor, b.predictor);
    for (size_t i = 0; i < a.size(); i += std::max<size_t>(1, a.size() / 50)) {
        QCOMPARE(toJson(a.materialize(i)).dump(), toJson(b.materialize(i)).dump());
        QCOMPARE(a.signatureKey(i), b.signatureKey(i));
    }
}

class TestSearchResultCache : public QObject {
    Q_OBJECT

private slots:
    void keyInvariances()
    {
        const SearchRequest base = smallRequest();
        const SearchRequestKey k = searchRequestKey(base, 42);
        QCOMPARE(k.hash, fnv1a64Check(k.key));
        // Not in the key: thread count, feature collection (a cached result carries none).
        SearchRequest r = base;
        r.threads = 2;
        r.collectFeatures = true;
        QCOMPARE(searchRequestKey(r, 42).key, k.key);
        // A cluster read from a file with its keys in another order is the same JSON value.
        QCOMPARE(searchRequestKey(base, 42).hash, k.hash);
    }

    void keySensitivity_data()
    {
        QTest::addColumn<int>("change");
        QTest::newRow("predictor") << 0;
        QTest::newRow("one more node") << 1;
        QTest::newRow("model") << 2;
        QTest::newRow("global batch") << 3;
        QTest::newRow("tp list") << 4;
        QTest::newRow("recompute list") << 5;
        QTest::newRow("cost option") << 6;
        QTest::newRow("profiles") << 7;
        QTest::newRow("node renamed") << 8;
        QTest::newRow("sequence parallel") << 9;
    }
    void keySensitivity()
    {
        QFETCH(int, change);
        const SearchRequest base = smallRequest();
        SearchRequest r = base;
        std::uint64_t digest = 42;
        switch (change) {
        case 0:
            digest = 43;
            break;
        case 1:
            r.cluster.groups[2].count += 1;
            break;
        case 2:
            r.model = resolveModel("llama2-13b");
            break;
        case 3:
            r.globalBatch = 512;
            break;
        case 4:
            r.space.tensorParallel = {4};
            break;
        case 5:
            r.space.recompute = {RecomputeMethod::Full};
            break;
        case 6:
            r.cost.amdGemmEfficiency = 0.36;
            break;
        case 7: {
            LayerProfile lp;
            lp.key = ProfileKey {"h100-sxm", "llama2-7b", 1, 1, 4096};
            r.profiles.add(lp);
            break;
        }
        case 8:
            r.cluster.groups[2].name += "x";
            break; // plans name nodes: a cached result would be wrong
        case 9:
            r.space.sequenceParallel = true;
            break;
        }
        QVERIFY(searchRequestKey(r, digest).key != searchRequestKey(base, 42).key);
        QVERIFY(searchRequestKey(r, digest).hash != searchRequestKey(base, 42).hash);
    }

    /// serialize -> deserialize reproduces every metric bit for bit and the same plans.
    void roundTrip()
    {
        const SearchRequest req = smallRequest();
        SearchResult res = runSearch(req);
        QVERIFY(res.size() > 500);
        // Learned-style extras, so they are covered too.
        res.timeSpread.assign(res.size(), 0.05f);
        res.memSpread.assign(res.size(), 0.02f);
        res.oomRisk.assign(res.size(), 0);
        res.oomRisk[3] = 1;
        res.predictor = "learned (test)";
        const std::vector<std::uint8_t> bytes = serializeSearchResult(res);
        const SearchResult back = deserializeSearchResult(bytes);
        compareResults(res, back);
        QCOMPARE(serializeSearchResult(back), bytes);
        // Corrupt input is an error, never a crash.
        std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 2));
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, deserializeSearchResult(cut));
        std::vector<std::uint8_t> magic = bytes;
        magic[1] = 'Y';
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, deserializeSearchResult(magic));
    }

    /// A cached search equals a fresh one (the search is deterministic), so a hit is exact.
    void hitEqualsFreshSearch()
    {
        SearchRequest req = smallRequest();
        SearchResultCache cache(2);
        const SearchRequestKey key = searchRequestKey(req, 0);
        QVERIFY(!cache.find(key).has_value());
        cache.insert(key, runSearch(req));
        req.threads = 2;
        const SearchRequestKey again = searchRequestKey(req, 0);
        const std::optional<SearchResult> hit = cache.find(again);
        QVERIFY(hit.has_value());
        QVERIFY(hit->features.empty());
        compareResults(*hit, runSearch(req));
        QCOMPARE(cache.hits(), std::uint64_t(1));
        QCOMPARE(cache.misses(), std::uint64_t(1));
    }

    void collisionSafetyAndEviction()
    {
        SearchResult a, b, c;
        a.timeMs = {1};
        b.timeMs = {2};
        c.timeMs = {3};
        SearchResultCache cache(2);
        const SearchRequestKey ka {7, "request a"}, kb {7, "request b"}, kc {8, "request c"};
        cache.insert(ka, a);
        cache.insert(kb, b);
        QCOMPARE(cache.find(ka)->timeMs.front(), 1.0);
        QCOMPARE(cache.find(kb)->timeMs.front(), 2.0);
        QVERIFY(!cache.find(SearchRequestKey {7, "request x"}).has_value());
        QVERIFY(cache.collisions() >= 2);
        cache.insert(kc, c); // evicts the least recently used (a)
        QCOMPARE(cache.size(), size_t(2));
        QVERIFY(!cache.find(ka).has_value());
        QVERIFY(cache.find(kb).has_value());
        QVERIFY(cache.find(kc).has_value());
    }

    void persistence()
    {
        const SearchRequest req = smallRequest();
        const SearchResult res = runSearch(req);
        MemoryStore store;
        const SearchRequestKey key = searchRequestKey(req, 5);
        QVERIFY(!loadSearchResult(store, key).has_value());
        saveSearchResult(store, key, res, 2);
        const std::optional<SearchResult> back = loadSearchResult(store, key);
        QVERIFY(back.has_value());
        compareResults(res, *back);
        // Another predictor: another key, no hit.
        QVERIFY(!loadSearchResult(store, searchRequestKey(req, 6)).has_value());
        // Same hash, different key (a forged collision): refused.
        QVERIFY(!loadSearchResult(store, SearchRequestKey {key.hash, key.key + " "}).has_value());
        // Keep at most 2: the oldest is dropped.
        saveSearchResult(store, SearchRequestKey {1, "one"}, res, 2);
        saveSearchResult(store, SearchRequestKey {2, "two"}, res, 2);
        QVERIFY(!loadSearchResult(store, key).has_value());
        QVERIFY(loadSearchResult(store, SearchRequestKey {1, "one"}).has_value());
        QVERIFY(loadSearchResult(store, SearchRequestKey {2, "two"}).has_value());
        // A corrupt stored entry is a miss, not an error.
        for (const std::string &k : store.blobKeys(kSearchResultBlobKind))
            if (k != "index")
                store.putBlob(kSearchResultBlobKind, k, {1, 2, 3});
        QVERIFY(!loadSearchResult(store, SearchRequestKey {1, "one"}).has_value());
        clearSearchResults(store);
        QVERIFY(store.blobKeys(kSearchResultBlobKind).empty());
    }

    /// `memx train` (savePredictor) drops every stored search result: they belong to the old model.
    void newPredictorClearsStoredResults()
    {
        MemoryStore store;
        saveSearchResult(store, SearchRequestKey {1, "one"}, runSearch(smallRequest()), 2);
        QVERIFY(!store.blobKeys(kSearchResultBlobKind).empty());
        std::vector<TrainingSample> samples(4);
        for (size_t i = 0; i < samples.size(); ++i) {
            TrainingSample &t = samples[i];
            t.runId = t.planKey = "run" + std::to_string(i);
            t.features[0] = static_cast<float>(i);
            t.analyticTimeMs = 100;
            t.measuredTimeMs = 100.0 + static_cast<double>(i);
            t.analyticPeakBytes = 1e9;
            t.measuredPeakBytes = 1.1e9;
            t.capacityBytes = 4e9;
        }
        PredictorOptions o;
        o.ensemble = 1;
        o.rounds = 2;
        savePredictor(store, LearnedPredictor::train(samples, o), {{"note", "test"}});
        QVERIFY(store.blobKeys(kSearchResultBlobKind).empty());
        QVERIFY(!loadSearchResult(store, SearchRequestKey {1, "one"}).has_value());
    }

private:
    static std::uint64_t fnv1a64Check(const std::string &s)
    {
        // FNV-1a 64 written out (offset basis 14695981039346656037, prime 1099511628211).
        std::uint64_t h = 14695981039346656037ull;
        for (unsigned char ch : s) {
            h ^= ch;
            h *= 1099511628211ull;
        }
        return h;
    }
};

QTEST_GUILESS_MAIN(TestSearchResultCache)
#include "tst_searchresultcache.moc"
