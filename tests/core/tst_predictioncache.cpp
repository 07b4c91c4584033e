// Hash-signature prediction cache: invariances of the canonical signature, sensitivity to what
// changes cost, collision safety, context invalidation, persistence.
#include "memx/io/formats.h"
#include "memx/predict/predictioncache.h"
#include "memx/search/search.h"
#include "memx/store/memorystore.h"

#include <QTest>

#include <limits>

#include <algorithm>
#include <map>

using namespace memx;

static const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters";

/// 8 A100 (2 nodes "a100-0", "a100-1") + 8 MI250X ("mi250x") + 4 H100 ("h100").
static Cluster cluster20()
{
    return loadCluster(kSamples + "/paper-20gpu-nvidia-amd.json");
}

static Replica rep(const std::string &node, std::vector<int> gpus, int mb)
{
    Replica r;
    r.node = node;
    r.tp = static_cast<int>(gpus.size());
    r.gpus = std::move(gpus);
    r.microBatch = mb;
    return r;
}

/// llama2-7b (32 layers), 3 stages: A100 x8 (DP 4 across both nodes, TP 2), MI250X (DP 2, TP 4),
/// H100 (DP 1, TP 4). Every stage moves 8 samples per step: 4 x 2, 2 x 4, 1 x 8.
static Plan basePlan()
{
    Plan p;
    p.name = "base";
    p.globalBatch = 64;
    Stage a;
    a.firstLayer = 0;
    a.layerCount = 12;
    a.replicas
        = {rep("a100-0", {0, 1}, 2), rep("a100-0", {2, 3}, 2), rep("a100-1", {0, 1}, 2), rep("a100-1", {2, 3}, 2)};
    Stage m;
    m.firstLayer = 12;
    m.layerCount = 10;
    m.recompute.method = RecomputeMethod::Selective;
    m.replicas = {rep("mi250x", {0, 1, 2, 3}, 4), rep("mi250x", {4, 5, 6, 7}, 4)};
    Stage h;
    h.firstLayer = 22;
    h.layerCount = 10;
    h.replicas = {rep("h100", {0, 1, 2, 3}, 8)};
    p.stages = {a, m, h};
    return p;
}

class TestPredictionCache : public QObject {
    Q_OBJECT

private slots:
    void basePlanIsValid()
    {
        Diagnostics d("plan");
        validatePlan(basePlan(), cluster20(), resolveModel("llama2-7b"), d);
        QVERIFY2(d.empty(), d.empty() ? "" : d.items().front().message.c_str());
    }

    void invariances_data()
    {
        QTest::addColumn<int>("variant");
        QTest::newRow("renumber identical nodes (a100-0 <-> a100-1)") << 0;
        QTest::newRow("permute identical replicas") << 1;
        QTest::newRow("other GPU indices inside a node") << 2;
        QTest::newRow("plan name") << 3;
        QTest::newRow("renumber nodes and permute replicas") << 4;
    }
    void invariances()
    {
        QFETCH(int, variant);
        const Cluster c = cluster20();
        const Plan base = basePlan();
        Plan p = base;
        auto swapNodes = [&] {
            for (Replica &r : p.stages[0].replicas)
                r.node = r.node == "a100-0" ? "a100-1" : "a100-0";
        };
        switch (variant) {
        case 0:
            swapNodes();
            break;
        case 1:
            std::reverse(p.stages[0].replicas.begin(), p.stages[0].replicas.end());
            std::swap(p.stages[1].replicas[0], p.stages[1].replicas[1]);
            break;
        case 2:
            p.stages[0].replicas[0].gpus = {2, 3};
            p.stages[0].replicas[1].gpus = {0, 1};
            break;
        case 3:
            p.name = "renamed";
            break;
        case 4:
            swapNodes();
            std::rotate(p.stages[0].replicas.begin(), p.stages[0].replicas.begin() + 1, p.stages[0].replicas.end());
            break;
        }
        QVERIFY(!(p == base));
        const PlanSignature a = planSignature(base, c), b = planSignature(p, c);
        QCOMPARE(b.key, a.key);
        QCOMPARE(b.hash, a.hash);
        // And the analytic cost agrees that nothing changed (the invariance is real).
        const Model m = resolveModel("llama2-7b");
        const PlanEstimate ea = estimatePlan(base, c, m, nullptr, CostOptions {});
        const PlanEstimate eb = estimatePlan(p, c, m, nullptr, CostOptions {});
        QCOMPARE(eb.iterationTimeMs, ea.iterationTimeMs);
        QCOMPARE(eb.peakBytes, ea.peakBytes);
    }

    void sensitivity_data()
    {
        QTest::addColumn<int>("variant");
        QTest::newRow("layer split") << 0;
        QTest::newRow("recompute") << 1;
        QTest::newRow("micro-batch / TP") << 2;
        QTest::newRow("distributed optimizer") << 3;
        QTest::newRow("DP group on one node instead of two") << 4;
        QTest::newRow("device (stage order swapped)") << 5;
        QTest::newRow("global batch") << 6;
    }
    void sensitivity()
    {
        QFETCH(int, variant);
        const Cluster c = cluster20();
        Plan p = basePlan();
        switch (variant) {
        case 0:
            p.stages[0].layerCount = 11;
            p.stages[1].firstLayer = 11;
            p.stages[1].layerCount = 11;
            break;
        case 1:
            p.stages[2].recompute.method = RecomputeMethod::Full;
            break;
        case 2:
            // A100 stage: 8 replicas of TP 1 x mb 1
            p.stages[0].replicas.clear();
            for (int n = 0; n < 2; ++n)
                for (int g = 0; g < 4; ++g)
                    p.stages[0].replicas.push_back(rep("a100-" + std::to_string(n), {g}, 1));
            break;
        case 3:
            p.distributedOptimizer = true;
            break;
        case 4:
            // A100 stage uses DP 2 on a100-0 only with mb 4; the other node idles (a different plan).
            p.stages[0].replicas = {rep("a100-0", {0, 1}, 4), rep("a100-0", {2, 3}, 4)};
            break;
        case 5:
            std::swap(p.stages[1].replicas, p.stages[2].replicas);
            break;
        case 6:
            p.globalBatch = 128;
            break;
        }
        QVERIFY(planSignature(p, c).key != planSignature(basePlan(), c).key);
        QVERIFY(planSignature(p, c).hash != planSignature(basePlan(), c).hash);
    }

    /// Two different keys forced into one hash bucket: both stored, each found by its own key,
    /// a lookup of a third key with that hash is a (counted) miss.
    void collisionSafety()
    {
        PredictionCache cache(1);
        const PlanSignature a {7, "key-a"}, b {7, "key-b"}, x {7, "key-x"};
        cache.insert(a, {0.1f, 0.2f, 0.01f, 0.02f});
        cache.insert(b, {0.3f, 0.4f, 0.03f, 0.04f});
        QCOMPARE(cache.size(), size_t(2));
        QCOMPARE(cache.find(a)->timeLogRatio, 0.1f);
        QCOMPARE(cache.find(b)->timeLogRatio, 0.3f);
        QVERIFY(!cache.find(x).has_value());
        QCOMPARE(cache.collisions(), std::uint64_t(1));
        QCOMPARE(cache.hits(), std::uint64_t(2));
        QCOMPARE(cache.misses(), std::uint64_t(1));
        // Re-inserting a key replaces its value, not the neighbour's.
        cache.insert(a, {0.5f, 0.5f, 0.f, 0.f});
        QCOMPARE(cache.size(), size_t(2));
        QCOMPARE(cache.find(a)->timeLogRatio, 0.5f);
        QCOMPARE(cache.find(b)->timeLogRatio, 0.3f);
    }

    void contextInvalidation()
    {
        const Cluster c = cluster20();
        const Model m = resolveModel("llama2-7b");
        const std::uint64_t ctx = predictionContext(c, m, nullptr, CostOptions {}, 11);
        PredictionCache cache(ctx);
        cache.insert(planSignature(basePlan(), c), {1, 1, 0, 0});
        QVERIFY(!cache.setContext(ctx));
        QCOMPARE(cache.size(), size_t(1));
        // A new predictor, another model, other cost options: another context, cache dropped.
        QVERIFY(predictionContext(c, m, nullptr, CostOptions {}, 12) != ctx);
        QVERIFY(predictionContext(c, resolveModel("llama2-13b"), nullptr, CostOptions {}, 11) != ctx);
        CostOptions other;
        other.nvidiaGemmEfficiency = 0.6;
        QVERIFY(predictionContext(c, m, nullptr, other, 11) != ctx);
        ProfileSet profiles;
        LayerProfile lp;
        lp.key = ProfileKey {"a100-40gb-sxm", "llama2-7b", 1, 1, 4096};
        profiles.add(lp);
        QVERIFY(predictionContext(c, m, &profiles, CostOptions {}, 11) != ctx);
        // Adding a node of a type already present keeps the context (its plans get new keys).
        Cluster bigger = c;
        bigger.groups[2].count = 2;
        QCOMPARE(predictionContext(bigger, m, nullptr, CostOptions {}, 11), ctx);
        QVERIFY(cache.setContext(ctx + 1));
        QCOMPARE(cache.size(), size_t(0));
    }

    /// The compact words of a search configuration identify it exactly as its text key does: over
    /// every configuration of a small space, key -> words and words -> key are both functions.
    /// Then a compact entry survives serialisation.
    void compactWordsMatchKeys()
    {
        SearchRequest req;
        req.cluster = cluster20();
        req.model = resolveModel("llama2-7b");
        req.space.stagesPerGroup = {1, 2};
        req.space.microBatches = {1, 2};
        req.space.tensorParallel = {1, 2, 4};
        req.threads = 1;
        const SearchResult res = runSearch(req);
        QVERIFY(res.size() > 1000);
        PredictionCache cache(5);
        std::vector<std::vector<std::uint32_t>> ids(res.pipelines.size());
        for (size_t p = 0; p < res.pipelines.size(); ++p)
            for (size_t s = 0; s < res.pipelines[p].stages.size(); ++s) {
                ids[p].push_back(cache.internClass("R" + res.pipelines[p].replicaKey(s)));
                ids[p].push_back(cache.internClass("D" + res.pipelines[p].dpClass[s]));
                ids[p].push_back(cache.internClass("P" + res.pipelines[p].p2pClass[s]));
            }
        std::map<std::string, std::vector<std::uint32_t>> byKey;
        std::map<std::vector<std::uint32_t>, std::string> byWords;
        std::vector<std::uint32_t> w;
        for (size_t i = 0; i < res.size(); ++i) {
            res.signatureWords(i, ids, w);
            const std::string key = res.signatureKey(i);
            auto [a, newKey] = byKey.emplace(key, w);
            auto [b, newWords] = byWords.emplace(w, key);
            QVERIFY2(a->second == w, qPrintable(QString::fromStdString("two word forms for key " + key)));
            QVERIFY2(b->second == key,
                     qPrintable(QString::fromStdString("one word form for " + key + " and " + b->second)));
        }
        QCOMPARE(byKey.size(), byWords.size());
        res.signatureWords(0, ids, w);
        CompactSignature sig {hashWords(w.data(), w.size()), w};
        cache.insert(sig, {0.5f, 0.25f, 0.125f, 0.0625f});
        QVERIFY(cache.find(sig).has_value());
        CompactSignature other = sig;
        other.words.back() ^= 1; // same hash bucket forced: compared word by word
        other.hash = sig.hash;
        QVERIFY(!cache.find(other).has_value());
        QCOMPARE(cache.collisions(), std::uint64_t(1));
        const PredictionCache back = PredictionCache::deserialize(cache.serialize());
        QCOMPARE(back.size(), size_t(1));
        QCOMPARE(back.classString(ids[0][0]), cache.classString(ids[0][0]));
        PredictionCache back2 = back;
        QCOMPARE(*back2.find(sig), (CachedPrediction {0.5f, 0.25f, 0.125f, 0.0625f}));
        QCOMPARE(back2.serialize(), cache.serialize());
    }

    void persistence()
    {
        const Cluster c = cluster20();
        PredictionCache cache(99);
        cache.insert(planSignature(basePlan(), c), {0.25f, -0.5f, 0.1f, 0.2f});
        cache.insert(makeSignature("other"), {1, 2, 3, 4});
        const std::vector<std::uint8_t> bytes = cache.serialize();
        const PredictionCache back = PredictionCache::deserialize(bytes);
        QCOMPARE(back.context(), std::uint64_t(99));
        QCOMPARE(back.size(), size_t(2));
        QCOMPARE(back.serialize(), bytes);
        // Corrupt input: truncated, wrong magic, tampered key (hash no longer matches).
        std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() - 3));
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, PredictionCache::deserialize(cut));
        std::vector<std::uint8_t> magic = bytes;
        magic[0] = 'X';
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, PredictionCache::deserialize(magic));
        std::vector<std::uint8_t> tampered = bytes;
        tampered[8 + 8 + 8 + 8 + 8] ^= 0x20; // first byte of the first entry's key
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, PredictionCache::deserialize(tampered));
        // Through a store: saved under its context, a different context loads empty.
        MemoryStore store;
        savePredictionCache(store, cache);
        QCOMPARE(loadPredictionCache(store, 99).size(), size_t(2));
        QCOMPARE(loadPredictionCache(store, 98).size(), size_t(0));
        store.putBlob(kPredictionCacheBlobKind, store.blobKeys(kPredictionCacheBlobKind).front(), cut);
        QCOMPARE(loadPredictionCache(store, 99).size(), size_t(0)); // unreadable: start empty
    }

    /// Issue 21 item 2: a stored prediction holding NaN, an infinity or an absurd ratio would
    /// reach the ranking and the Pareto front; the cache is ignored with a warning instead.
    void nonFiniteValuesAreRefused_data()
    {
        QTest::addColumn<float>("value");
        QTest::addColumn<int>("field");
        QTest::newRow("NaN time ratio") << std::numeric_limits<float>::quiet_NaN() << 0;
        QTest::newRow("infinite memory ratio") << std::numeric_limits<float>::infinity() << 1;
        QTest::newRow("ratio 1e30") << 1e30f << 0;
        QTest::newRow("negative spread") << -0.5f << 2;
    }
    void nonFiniteValuesAreRefused()
    {
        QFETCH(float, value);
        QFETCH(int, field);
        PredictionCache cache(7);
        CachedPrediction v {0.1f, 0.1f, 0.1f, 0.1f};
        (field == 0 ? v.timeLogRatio : field == 1 ? v.memLogRatio : v.timeSpread) = value;
        cache.insert(makeSignature("bad"), v);
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, PredictionCache::deserialize(cache.serialize()));
        MemoryStore store;
        savePredictionCache(store, cache);
        std::vector<Diagnostic> warnings;
        QCOMPARE(loadPredictionCache(store, 7, &warnings).size(), size_t(0));
        QCOMPARE(warnings.size(), size_t(1));
        QCOMPARE(warnings[0].pointer, std::string("prediction-cache/0000000000000007"));
        QVERIFY2(warnings[0].message.find("expected finite log-ratios") != std::string::npos,
                 warnings[0].message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestPredictionCache)
#include "tst_predictioncache.moc"
