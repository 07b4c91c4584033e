// Whole-search result cache: what the request key depends on (and what it must not), exact
// round trip of a result, collision safety, LRU eviction, persistence in a project store.
#include "memx/io/formats.h"
#include "memx/predict/projectpredictor.h"
#include "memx/predict/searchresultcache.h"
#include "memx/search/objective.h"
#include "memx/search/search.h"
#include "memx/store/memorystore.h"
#include "memx/util/bytes.h"

#include <QFile>
#include <QTest>

#include <limits>

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
    QVERIFY(a.extrapolating == b.extrapolating);
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
            r.space.sequenceParallel = !r.space.sequenceParallel;
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
        res.extrapolating.assign(res.size(), 0);
        res.extrapolating[5] = 1;
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
        // Older blobs (version 1: no launcher count, no mixed stages, no extrapolation flags;
        // version 2: one or the other; version 3: no batch-rounding / streamed flags) are refused:
        // a miss, searched again.
        for (std::uint8_t version : {1, 2, 3}) {
            std::vector<std::uint8_t> old = bytes;
            old[4] = version;
            try {
                deserializeSearchResult(old);
                QFAIL("an older blob was accepted");
            } catch (const std::runtime_error &e) {
                QCOMPARE(std::string(e.what()), std::string("search result: expected the MXSR version 6 header"));
            }
        }
    }

    /// Reproducers of issue 21 item 2: a blob that decodes but holds a NaN time (paretoFront never
    /// returned), an out-of-range index (plans with "mb0" or node "?", or vector::_M_range_check),
    /// layer counts that do not cover the model. Each is refused by name, never used.
    void invalidBlobsAreRefused_data()
    {
        QTest::addColumn<int>("damage");
        QTest::addColumn<QString>("message");
        QTest::newRow("NaN time") << 0 << "configuration 3: expected a finite positive time, found nan";
        QTest::newRow("infinite memory") << 1
                                         << "configuration 0: expected a finite non-negative peak memory, found inf";
        QTest::newRow("base index") << 2 << "configuration 1: base index 4000000000 out of range";
        QTest::newRow("group index") << 3 << "pipeline 0 stage 0: expected a node group index below 3, found 7";
        QTest::newRow("split offset") << 4 << "configuration 2: layer split offset 4294967295 out of range";
        QTest::newRow("layer count") << 5 << "configuration 0: expected stages covering the model's 32 layers";
        QTest::newRow("micro-batch 0") << 6 << "expected micro-batch sizes from 1 to 1048576, found 0";
        QTest::newRow("slice beyond group") << 7 << "pipeline 0 stage 0: slice 9/1 with TP";
        QTest::newRow("negative spread") << 8 << "configuration 0: expected a finite non-negative time spread";
        QTest::newRow("count mismatch") << 9 << "expected 99 evaluated configurations";
        QTest::newRow("extrapolation flag") << 10 << "configuration 1: expected an extrapolation flag of 0 or 1";
        QTest::newRow("extrapolation flags count") << 11 << "metric arrays of different lengths";
        QTest::newRow("recomputed layers") << 12 << "recomputes more layers than it holds";
        QTest::newRow("split bytes") << 13 << "bytes of layer split";
    }
    void invalidBlobsAreRefused()
    {
        QFETCH(int, damage);
        QFETCH(QString, message);
        static const SearchResult good = runSearch(smallRequest());
        QVERIFY(good.size() > 10);
        SearchResult r = good;
        switch (damage) {
        case 0:
            r.timeMs[3] = std::numeric_limits<double>::quiet_NaN();
            break;
        case 1:
            r.peakMemory[0] = std::numeric_limits<double>::infinity();
            break;
        case 2:
            r.baseOf[1] = 4000000000u;
            break;
        case 3:
            r.pipelines[0].stages[0].group = 7;
            break;
        case 4:
            r.splitOffset[2] = 0xffffffffu;
            break;
        case 5:
            r.layerCounts[r.splitOffset[0]] += 1;
            break;
        case 6:
            r.microBatchSizes[0] = 0;
            break;
        case 7:
            r.pipelines[0].stages[0].slice = 9;
            break;
        case 8:
            r.timeSpread.assign(r.size(), -1.0f);
            break;
        case 9:
            r.evaluated = 99;
            break;
        case 10:
            r.extrapolating.assign(r.size(), 0);
            r.extrapolating[1] = 2;
            break;
        case 11:
            r.extrapolating.assign(r.size() - 1, 0);
            break;
        case 12: { // a partial-recompute configuration recomputing 200 layers of a stage
            size_t i = 0;
            while (i < r.size() && !r.recomputedLayersOf(i))
                ++i;
            QVERIFY(i < r.size());
            const size_t p = r.pipelines[r.decodeBase(r.baseOf[i]).pipeline].stages.size();
            r.layerCounts[r.splitOffset[i] + p] = 200;
            break;
        }
        case 13: // the last configuration one byte longer than its stages
            r.layerCounts.push_back(1);
            break;
        }
        try {
            deserializeSearchResult(serializeSearchResult(r));
            QFAIL("a damaged result was accepted");
        } catch (const std::runtime_error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
        }
        // Through the project: a miss with a warning naming the blob, never a result.
        MemoryStore store;
        const SearchRequestKey key {3, "request"};
        saveSearchResult(store, key, r);
        std::vector<Diagnostic> warnings;
        QVERIFY(!loadSearchResult(store, key, &warnings).has_value());
        QCOMPARE(warnings.size(), size_t(1));
        QCOMPARE(warnings[0].pointer, std::string("search-result/0000000000000003"));
        QVERIFY2(QString::fromStdString(warnings[0].message).contains(message), warnings[0].message.c_str());
        // The undamaged result still loads (the check does not refuse real results).
        saveSearchResult(store, key, good);
        warnings.clear();
        QVERIFY(loadSearchResult(store, key, &warnings).has_value());
        QVERIFY(warnings.empty());
    }

    /// Every single-byte corruption of a real blob (sampled positions, every bit of the byte
    /// flipped) is either refused with std::runtime_error or decodes to a result whose every
    /// configuration materialises to a plan on the stored cluster: never a crash.
    void corruptedBlobNeverCrashes()
    {
        SearchRequest req = smallRequest();
        req.space.tensorParallel = {4};
        const SearchResult res = runSearch(req);
        const std::vector<std::uint8_t> bytes = serializeSearchResult(res);
        int refused = 0, accepted = 0;
        const size_t stride = std::max<size_t>(1, bytes.size() / 1500);
        for (size_t at = 8; at < bytes.size(); at += stride) {
            std::vector<std::uint8_t> bad = bytes;
            bad[at] ^= 0xff;
            try {
                const SearchResult back = deserializeSearchResult(bad);
                for (size_t i = 0; i < back.size(); i += std::max<size_t>(1, back.size() / 40)) {
                    const Plan p = back.materialize(i);
                    for (const Stage &st : p.stages)
                        for (const Replica &rep : st.replicas) {
                            QVERIFY(rep.microBatch >= 1);
                            QVERIFY(back.cluster.findNode(rep.node).has_value());
                        }
                }
                (void)paretoFront(back);
                ++accepted;
            } catch (const std::runtime_error &) {
                ++refused;
            }
        }
        QVERIFY(refused > 0);
        qInfo("%d corruptions refused, %d decoded to a usable result", refused, accepted);
    }

    /// The fuzz target's seed corpus (tests/fuzz/corpus/searchresultcache) holds real blobs of a
    /// small search, a bare body and one with its key prefix as stored in a project: both must
    /// still be accepted (a format change must refresh them: run this test with
    /// MEMX_WRITE_FUZZ_SEED=<folder> to write new ones).
    void fuzzSeedCorpusIsARealBlob()
    {
        SearchRequest req;
        req.cluster = loadCluster(kSamples + "/h100-8x.json");
        req.model = resolveModel("llama2-7b");
        req.space.stagesPerGroup = {1, 2};
        req.space.microBatches = {1};
        req.space.tensorParallel = {4, 8};
        req.space.recompute = {RecomputeMethod::None};
        req.threads = 1;
        const SearchResult res = runSearch(req);
        QVERIFY(res.size() >= 2);
        ByteWriter w;
        w.str("seed request");
        std::vector<std::uint8_t> keyed = w.take();
        const std::vector<std::uint8_t> body = serializeSearchResult(res);
        keyed.insert(keyed.end(), body.begin(), body.end());
        QVERIFY(keyed.size() < 65536); // ci-extra.sh fuzzes with -max_len=65536
        const QByteArray out = qgetenv("MEMX_WRITE_FUZZ_SEED");
        if (!out.isEmpty()) {
            for (const auto &[name, bytes] :
                 {std::pair {"real-body.mxsr", body}, std::pair {"real-keyed.mxsr", keyed}}) {
                QFile f(QString::fromUtf8(out) + QLatin1Char('/') + QLatin1String(name));
                QVERIFY(f.open(QIODevice::WriteOnly));
                f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<qint64>(bytes.size()));
            }
        }
        const QString dir = QStringLiteral(MEMX_SOURCE_DIR "/tests/fuzz/corpus/searchresultcache/");
        for (const char *name : {"real-body.mxsr", "real-keyed.mxsr"}) {
            QFile f(dir + QLatin1String(name));
            QVERIFY2(f.open(QIODevice::ReadOnly), name);
            const QByteArray data = f.readAll();
            const std::vector<std::uint8_t> bytes(data.begin(), data.end());
            if (std::string(name) == "real-body.mxsr") {
                QCOMPARE(deserializeSearchResult(bytes).size(), res.size());
            } else {
                MemoryStore store;
                store.putBlob(kSearchResultBlobKind, "0000000000000001", bytes);
                QVERIFY(loadSearchResult(store, SearchRequestKey {1, "seed request"}).has_value());
            }
        }
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
