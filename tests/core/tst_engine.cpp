// The features both front ends share (core/engine, profiling/coverage, testbed/testbedjobs): the
// planned search against its parts composed by hand (budget, project, predictor, caches), its
// cache snapshot against searching on the project directly, cancel in each phase; training as
// `memx train` composed it; the one coverage rule on hand-built profiles; the testbed job loop
// against the testbed called directly.
#include "memx/engine/plannedsearch.h"
#include "memx/engine/training.h"
#include "memx/io/formats.h"
#include "memx/predict/predictioncache.h"
#include "memx/predict/projectpredictor.h"
#include "memx/profiling/coverage.h"
#include "memx/search/objective.h"
#include "memx/store/memorystore.h"
#include "memx/testbed/testbedjobs.h"

#include <QTest>

#include <algorithm>
#include <set>

using namespace memx;

namespace {

const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters";

SearchRequest baseRequest()
{
    SearchRequest req;
    req.cluster = loadCluster(kSamples + "/paper-20gpu-nvidia-amd.json");
    req.model = resolveModel("llama2-7b");
    req.space.stagesPerGroup = {1};
    req.space.tensorParallel = {2, 4};
    req.space.microBatches = {1, 2};
    req.space.recompute = {RecomputeMethod::None, RecomputeMethod::Full};
    req.space.dpSharding = {DpSharding::Optimizer};
    req.threads = 2;
    return req;
}

/// The request the tests search: pipelines deeper than any training run's (stages 1 and 2 per
/// group), so some configurations extrapolate and some do not.
SearchRequest searchRequest()
{
    SearchRequest req = baseRequest();
    req.space.stagesPerGroup = {1, 2};
    return req;
}

/// The planned search of `r` as one plain search: target any (the cost model's whole space, as
/// runSearch), no idle subsets, no advice; so it can be compared with runSearch composed by hand.
PlannedSearchRequest asPlanned(SearchRequest r)
{
    PlannedSearchRequest p;
    r.space.target = LaunchTarget::Any;
    p.search = std::move(r);
    p.autoTarget = false;
    p.maxIdleGroups = 0;
    p.maxVerifiedBatches = -1;
    return p;
}

TrainOptions smallTraining()
{
    TrainOptions o;
    o.predictor.ensemble = 3;
    o.predictor.rounds = 40;
    o.folds = 0;
    return o;
}

/// A project: 16 testbed runs of plans spread over the time ranking of a one-stage-per-group space.
MemoryStore &trainingProject()
{
    static MemoryStore store;
    static bool made = false;
    if (made)
        return store;
    made = true;
    const SearchRequest req = baseRequest();
    const SearchResult res = runSearch(req);
    const std::vector<uint32_t> order = rank(res, ObjectiveWeights::timeOnly(), res.size());
    std::vector<Plan> plans;
    for (size_t k = 0; k < 16; ++k) {
        Plan p = res.materialize(order[k * (order.size() - 1) / 15]);
        p.name = "p" + std::to_string(k);
        plans.push_back(std::move(p));
    }
    const TestbedBatch runs = runTestbedJobs(VirtualTestbed(3), req.cluster, req.model, {}, plans);
    writeImport(store, runs.batch);
    const TrainOutcome t = trainProjectPredictor(store, smallTraining());
    savePredictor(store, t.predictor, t.metrics);
    return store;
}

bool sameFigures(const SearchResult &a, const SearchResult &b)
{
    return a.timeMs == b.timeMs && a.peakMemory == b.peakMemory && a.imbalance == b.imbalance
        && a.peakBytes == b.peakBytes && a.timeSpread == b.timeSpread && a.memSpread == b.memSpread
        && a.oomRisk == b.oomRisk && a.extrapolating == b.extrapolating && a.predictor == b.predictor;
}

std::set<std::string> blobKeysOf(const Store &s, const char *kind)
{
    const std::vector<std::string> v = s.blobKeys(kind);
    return {v.begin(), v.end()};
}

LayerProfile profile(int tp, int mbs, ProfileOrigin origin, int seq = 2048)
{
    LayerProfile p;
    p.key = {"a100-40gb-sxm", "toy", tp, mbs, seq};
    p.origin = origin;
    for (int i = 0; i < 4; ++i)
        p.layers.push_back({1.0 * mbs / tp, 2.0 * mbs / tp, 0.1, 1000.0 / tp, 500.0 * mbs});
    return p;
}

} // namespace

class TestEngine : public QObject {
    Q_OBJECT

private slots:
    /// The planned search = narrowToBudget + the project's profiles + runSearch with features +
    /// applyLearnedPredictor (what cmd_search.cpp composed by hand before), bit for bit; the
    /// extrapolation flags = LearnedPredictor::extrapolation of each configuration's features.
    void plannedSearchEqualsItsParts()
    {
        MemoryStore project = trainingProject(); // a copy: no caches written into the shared one
        const SearchProject context = loadSearchProject(project);
        QVERIFY(context.predictor);
        QCOMPARE(context.profiles.size(), project.profiles().size());
        PlannedSearchOptions noCache;
        noCache.useCache = false;
        const PlannedSearch s = plannedSearch(asPlanned(searchRequest()), &context, &project, noCache);
        QVERIFY(!s.cancelled());
        QVERIFY(s.usesPredictor());
        QVERIFY(!s.usesCache());
        QVERIFY(s.result.features.empty()); // dropped after the prediction

        SearchRequest byHand = searchRequest();
        byHand.profiles = project.profiles();
        byHand.collectFeatures = true;
        QCOMPARE(narrowToBudget(byHand, kDefaultMaxBases), s.narrowed);
        SearchResult ref = runSearch(byHand);
        const LearnedPredictor predictor = *loadPredictor(project);
        applyLearnedPredictor(ref, predictor, nullptr);
        QCOMPARE(ref.size(), s.result.size());
        QVERIFY(sameFigures(ref, s.result));
        QCOMPARE(s.learned.predicted, ref.size());

        size_t outside = 0;
        for (size_t i = 0; i < ref.size(); ++i) {
            const bool flag = !predictor.extrapolation(ref.features.data() + i * kFeatureCount).empty();
            QCOMPARE(bool(s.result.extrapolating[i]), flag);
            outside += flag;
            const PlanFigures f = planFigures(s.result, i);
            QVERIFY(f.learned);
            QCOMPARE(f.timeMs, ref.timeMs[i]);
            QCOMPARE(f.timeSpread, double(ref.timeSpread[i]));
            QCOMPARE(f.oomRisk, isOomRisk(ref.peakMemory[i], ref.memSpread[i]));
            QCOMPARE(f.extrapolating, flag);
            if (flag) // widened to at least kExtrapolationSpread
                QVERIFY(ref.timeSpread[i] >= float(kExtrapolationSpread)
                        && ref.memSpread[i] >= float(kExtrapolationSpread));
        }
        QVERIFY2(outside > 0 && outside < ref.size(), "expected configurations on both sides of the envelope");
        qInfo("%zu of %zu configurations extrapolate", outside, ref.size());

        // Without a project: the analytic search of the narrowed request.
        const PlannedSearch analytic = plannedSearch(asPlanned(searchRequest()), nullptr, nullptr);
        QVERIFY(!analytic.usesPredictor());
        QCOMPARE(analytic.result.predictor, std::string("analytic"));
        QVERIFY(!planFigures(analytic.result, 0).learned);
        SearchRequest plain = searchRequest();
        narrowToBudget(plain, kDefaultMaxBases);
        QCOMPARE(runSearch(plain).timeMs, analytic.result.timeMs);
    }

    /// The project's calibration is applied to the searched cluster and cost options.
    void plannedSearchAppliesCalibration()
    {
        SearchProject context;
        Calibration cal;
        cal.hostOpMicroseconds = 123;
        DeviceCalibration dev;
        dev.device = "mi250x";
        dev.gemmEfficiency = 0.42;
        cal.devices.push_back(dev);
        context.calibration = cal;
        const PlannedSearch s = planSearch(asPlanned(searchRequest()), &context);
        QVERIFY(s.calibrated);
        SearchRequest byHand = searchRequest();
        applyCalibration(cal, byHand.cluster, byHand.cost);
        QVERIFY(s.request.search.cluster == byHand.cluster);
        QVERIFY(!(s.request.search.cluster == searchRequest().cluster)); // the MI250X's figures changed
        QCOMPARE(s.request.search.cost.hostOpMicroseconds, 123.0);
    }

    /// A second identical search reuses the stored whole result; --no-cache does not.
    void storedResultIsReused()
    {
        MemoryStore project = trainingProject();
        const SearchProject context = loadSearchProject(project);
        const PlannedSearch first = plannedSearch(asPlanned(searchRequest()), &context, &project);
        QVERIFY(first.cacheUsed && !first.resultFromCache);
        QCOMPARE(first.learned.cacheHits, size_t(0));
        QVERIFY(project.blob(kSearchResultBlobKind, searchResultBlobKey(first.resultKeys.front())));
        QVERIFY(project.blob(kPredictionCacheBlobKind, predictionCacheBlobKey(first.predictionContext)));
        const PlannedSearch second = plannedSearch(asPlanned(searchRequest()), &context, &project);
        QVERIFY(second.resultFromCache);
        QVERIFY(second.warnings.empty());
        QVERIFY(sameFigures(first.result, second.result));
        // Another global batch: a new result, every configuration a miss or a hit of the prediction cache.
        SearchRequest other = searchRequest();
        other.globalBatch = 2 * other.model.training.globalBatch;
        const PlannedSearch third = plannedSearch(asPlanned(other), &context, &project);
        QVERIFY(!third.resultFromCache);
        PlannedSearchOptions off;
        off.useCache = false;
        const PlannedSearch uncached = plannedSearch(asPlanned(searchRequest()), &context, &project, off);
        QVERIFY(!uncached.resultFromCache && !uncached.cacheUsed);
        QVERIFY(sameFigures(first.result, uncached.result));
    }

    /// Searching on a cache snapshot and merging it back leaves the project as searching on it
    /// directly does (the workbench's way: the worker never touches the document).
    void cacheSnapshotMatchesDirectSearch()
    {
        MemoryStore direct = trainingProject(), viaSnapshots = trainingProject();
        const SearchProject context = loadSearchProject(direct);
        std::vector<SearchRequestKey> keys;
        for (int k = 1; k <= 10; ++k) { // more than the 8 stored results kept
            SearchRequest req = searchRequest();
            req.globalBatch = k * 64;
            plannedSearch(asPlanned(req), &context, &direct);
            const PlannedSearch planned = planSearch(asPlanned(req), &context);
            QCOMPARE(planned.resultKeys.size(), size_t(1));
            keys.push_back(planned.resultKeys.front());
            MemoryStore snapshot;
            copySearchCaches(viaSnapshots, planned, snapshot);
            PlannedSearch run = planned;
            runPlannedSearch(run, &snapshot);
            QVERIFY(run.cacheUsed);
            mergeSearchCaches(snapshot, viaSnapshots);
        }
        for (const char *kind : {kSearchResultBlobKind, kPredictionCacheBlobKind})
            QCOMPARE(blobKeysOf(viaSnapshots, kind), blobKeysOf(direct, kind));
        // The prediction caches byte for byte; the stored results by content (they also hold the
        // search's wall time).
        for (const std::string &key : direct.blobKeys(kPredictionCacheBlobKind))
            QVERIFY(*viaSnapshots.blob(kPredictionCacheBlobKind, key) == *direct.blob(kPredictionCacheBlobKind, key));
        QCOMPARE(storedSearchResults(viaSnapshots), storedSearchResults(direct));
        QCOMPARE(storedSearchResults(direct).size(), size_t(8));
        for (const SearchRequestKey &key : keys) {
            const std::optional<SearchResult> a = loadSearchResult(direct, key),
                                              b = loadSearchResult(viaSnapshots, key);
            QCOMPARE(a.has_value(), b.has_value());
            if (a)
                QVERIFY(sameFigures(*a, *b));
        }
        QVERIFY(!loadSearchResult(direct, keys.front())); // the oldest two were dropped
        QVERIFY(loadSearchResult(direct, keys.back()));
        // The snapshot of a stored request: its result and the index (no prediction cache needed).
        SearchRequest req = searchRequest();
        req.globalBatch = 10 * 64;
        const PlannedSearch planned = planSearch(asPlanned(req), &context);
        MemoryStore snapshot;
        copySearchCaches(direct, planned, snapshot);
        QCOMPARE(blobKeysOf(snapshot, kSearchResultBlobKind),
                 (std::set<std::string> {searchResultBlobKey(planned.resultKeys.front()), kSearchResultIndexKey}));
        QVERIFY(snapshot.blobKeys(kPredictionCacheBlobKind).empty());
        PlannedSearch again = planned;
        runPlannedSearch(again, &snapshot);
        QVERIFY(again.resultFromCache);
        // Of a request not stored: the index and the prediction cache of its context.
        req.globalBatch = 64; // searched first, dropped from the 8 kept
        const PlannedSearch fresh = planSearch(asPlanned(req), &context);
        MemoryStore snapshot2;
        copySearchCaches(direct, fresh, snapshot2);
        QCOMPARE(blobKeysOf(snapshot2, kSearchResultBlobKind), (std::set<std::string> {kSearchResultIndexKey}));
        QCOMPARE(blobKeysOf(snapshot2, kPredictionCacheBlobKind),
                 (std::set<std::string> {predictionCacheBlobKey(fresh.predictionContext)}));
        PlannedSearch warm = fresh;
        runPlannedSearch(warm, &snapshot2);
        QVERIFY(!warm.resultFromCache);
        QCOMPARE(warm.learned.cacheHits, warm.result.size()); // every plan from the prediction cache
    }

    /// Cancel while searching: the partial analytic result; while predicting: the analytic
    /// result, nothing stored.
    void cancelInEitherPhase()
    {
        MemoryStore project = trainingProject();
        const SearchProject context = loadSearchProject(project);
        PlannedSearch s = planSearch(asPlanned(searchRequest()), &context);
        runPlannedSearch(s, &project, [](size_t, size_t) { return false; });
        QVERIFY(s.cancelled());
        QCOMPARE(s.result.predictor, std::string("analytic"));

        bool predicting = false;
        std::vector<PlannedSearchPhase> phases;
        PlannedSearch p = planSearch(asPlanned(searchRequest()), &context);
        runPlannedSearch(
            p, &project, [&](size_t, size_t) { return !predicting; },
            [&](PlannedSearchPhase phase) {
                phases.push_back(phase);
                predicting = phase == PlannedSearchPhase::Predict;
            });
        QCOMPARE(phases, (std::vector<PlannedSearchPhase> {PlannedSearchPhase::Search, PlannedSearchPhase::Predict}));
        QVERIFY(p.cancelled());
        QCOMPARE(p.result.predictor, std::string("analytic"));
        QVERIFY(p.result.timeSpread.empty() && p.result.extrapolating.empty());
        SearchRequest plain = p.request.search;
        plain.collectFeatures = false;
        QCOMPARE(p.result.timeMs, runSearch(plain).timeMs);
        QVERIFY(!p.cacheUsed);
        QVERIFY(project.blobKeys(kSearchResultBlobKind).empty());
        QVERIFY(project.blobKeys(kPredictionCacheBlobKind).empty());
    }

    /// planSearch narrows as narrowToBudget does (no enumeration: the 512-GPU sample plans at once).
    void planSearchNarrowsToTheBudget()
    {
        SearchRequest req;
        req.cluster = loadCluster(kSamples + "/cross-vendor-512gpu.json");
        req.model = resolveModel("llama2-7b");
        PlannedSearchOptions o;
        o.maxBases = 20000;
        const PlannedSearch s = planSearch(asPlanned(req), nullptr, o);
        SearchRequest byHand = req;
        QCOMPARE(s.narrowed, narrowToBudget(byHand, 20000));
        QVERIFY(!s.narrowed.empty());
        QVERIFY(baseConfigurationBound(s.subsetPlan.requests.front()) <= 20000);
        QVERIFY(!s.request.search.collectFeatures);
    }

    /// trainProjectPredictor = samplesFromStore + LearnedPredictor::train + crossValidate (what
    /// cmd_train.cpp composed by hand before); its snapshot trains the same model; cancel throws.
    void trainingEqualsItsParts()
    {
        const MemoryStore &project = trainingProject();
        TrainOptions o = smallTraining();
        o.folds = 3;
        std::vector<size_t> seen;
        const TrainOutcome t = trainProjectPredictor(project, o, [&](size_t done, size_t total) {
            if (total != 1000)
                return false;
            seen.push_back(done);
            return true;
        });
        QVERIFY(std::is_sorted(seen.begin(), seen.end()));
        QCOMPARE(seen.back(), size_t(1000));
        const std::vector<TrainingSample> samples = samplesFromStore(project, CostOptions {});
        const LearnedPredictor ref = LearnedPredictor::train(samples, o.predictor);
        QCOMPARE(t.predictor.digest(), ref.digest());
        QVERIFY(t.crossValidation);
        const EvaluationReport cv = crossValidate(samples, CvScheme::KFold, 3, o.predictor);
        QCOMPARE(t.crossValidation->learned.all.timeMapePct, cv.learned.all.timeMapePct);
        QCOMPARE(t.metrics["trainedOn"].get<size_t>(), ref.trainingRunIds().size());
        QVERIFY(t.metrics.contains("kfold"));

        const MemoryStore snapshot = trainingSnapshot(project);
        QVERIFY(snapshot.blobKeys(kPredictorBlobKind).empty()); // runs, profiles, models, calibration only
        QCOMPARE(snapshot.runs().size(), project.runs().size());
        QCOMPARE(trainProjectPredictor(snapshot, smallTraining()).predictor.digest(),
                 trainProjectPredictor(project, smallTraining()).predictor.digest());

        size_t calls = 0;
        QVERIFY_THROWS_EXCEPTION(Cancelled,
                                 trainProjectPredictor(project, o, [&](size_t, size_t) { return ++calls < 5; }));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, trainProjectPredictor(MemoryStore(), o));
    }

    /// The one coverage rule, cell by cell on hand-built profiles.
    void coverageRule()
    {
        ProfileSet ps;
        ps.add(profile(1, 1, ProfileOrigin::Measured));
        ps.add(profile(1, 4, ProfileOrigin::Measured));
        ps.add(profile(1, 4, ProfileOrigin::Measured)); // replaces: one profile per key
        ps.add(profile(2, 2, ProfileOrigin::Simulated));
        ps.add(profile(4, 1, ProfileOrigin::Measured));
        ps.add(profile(8, 8, ProfileOrigin::Interpolated));
        ps.add(profile(2, 4, ProfileOrigin::Measured, 4096)); // another sequence length: not this model's
        CoverageQuery q;
        q.model = "toy";
        q.seqLength = 2048;
        const std::vector<DeviceCoverage> all = profileCoverage(ps, q);
        QCOMPARE(all.size(), size_t(1));
        const DeviceCoverage &c = all.front();
        QCOMPARE(c.device, std::string("a100-40gb-sxm"));
        // Grid: default TP 1,2,4,8 and micro-batches 1,2,4 joined with the profiled ones (8).
        QCOMPARE(c.tps, (std::vector<int> {1, 2, 4, 8}));
        QCOMPARE(c.microBatches, (std::vector<int> {1, 2, 4, 8}));
        auto at = [&](int tp, int mbs) {
            const size_t t = size_t(std::find(c.tps.begin(), c.tps.end(), tp) - c.tps.begin());
            const size_t b
                = size_t(std::find(c.microBatches.begin(), c.microBatches.end(), mbs) - c.microBatches.begin());
            return c.cells[t][b];
        };
        using S = CoverageStatus;
        QCOMPARE(at(1, 1), S::Measured);
        QCOMPARE(at(1, 4), S::Measured);
        QCOMPARE(at(2, 2), S::Simulated);
        QCOMPARE(at(8, 8), S::Interpolated); // stored
        QCOMPARE(at(1, 2), S::Interpolated); // between measured mbs 1 and 4 at TP 1
        QCOMPARE(at(2, 1), S::Interpolated); // between measured TP 1 and 4 at mbs 1
        QCOMPARE(at(1, 8), S::Missing); // above the measured micro-batches: no extrapolation
        QCOMPARE(at(8, 1), S::Missing); // above the measured TP degrees
        QCOMPARE(at(2, 4), S::Missing); // only an interpolated neighbour, and the seq-4096 profile
        QCOMPARE(c.count(S::Measured), 3);

        // With a cluster: its device types only, TP up to their largest GPUs per node.
        Cluster cluster;
        cluster.name = "c";
        NodeGroup g;
        g.name = "g";
        g.gpu = "a100-40gb-sxm";
        g.gpusPerNode = 2;
        cluster.groups.push_back(g);
        g.name = "h";
        g.gpu = "h100-sxm";
        g.gpusPerNode = 4;
        cluster.groups.push_back(g);
        cluster.devices = {*builtinCatalogue().find("a100-40gb-sxm"), *builtinCatalogue().find("h100-sxm")};
        q.cluster = &cluster;
        const std::vector<DeviceCoverage> onCluster = profileCoverage(ps, q);
        QCOMPARE(onCluster.size(), size_t(2));
        QCOMPARE(onCluster[0].tps, (std::vector<int> {1, 2}));
        QCOMPARE(onCluster[1].device, std::string("h100-sxm"));
        QCOMPARE(onCluster[1].tps, (std::vector<int> {1, 2, 4}));
        QCOMPARE(onCluster[1].count(S::Missing), 3 * 3); // no profile of it: the default grid, all missing

        // With the kernels a minimal set needs: exactly those cells, the rest unused.
        const std::vector<KernelPoint> needed = {{"a100-40gb-sxm", 1, 2}, {"a100-40gb-sxm", 2, 8}};
        q.needed = &needed;
        const DeviceCoverage n = profileCoverage(ps, q).front();
        QCOMPARE(n.tps, (std::vector<int> {1, 2}));
        QCOMPARE(n.microBatches, (std::vector<int> {2, 8}));
        QCOMPARE(n.cells[0][0], S::Interpolated); // (1, 2)
        QCOMPARE(n.cells[1][1], S::Missing); // (2, 8): needed, nothing to interpolate from
        QCOMPARE(n.cells[0][1], S::Unused); // (1, 8): not needed
        QCOMPARE(n.cells[1][0], S::Simulated); // (2, 2): not needed but profiled

        QCOMPARE(profiledModels(ps), (std::vector<std::pair<std::string, int>> {{"toy", 2048}, {"toy", 4096}}));
    }

    /// runTestbedJobs = the testbed called job by job; logs only on request; cancel throws.
    void testbedJobsMatchTheTestbed()
    {
        const Cluster cluster = loadCluster(kSamples + "/h100-8x.json");
        const Model model = resolveModel("gpt3-1.3b");
        MinimalSetOptions mo;
        mo.space.tensorParallel = {1, 2};
        mo.space.microBatches = {1, 2};
        const ProfilingPlan plan = planMinimalSet(cluster, model, mo);
        SearchRequest req;
        req.cluster = cluster;
        req.model = model;
        req.space = mo.space;
        const SearchResult res = runSearch(req);
        const std::vector<Plan> plans = {res.materialize(0), res.materialize(res.size() - 1)};
        const VirtualTestbed tb(5);
        TestbedJobOptions withLogs;
        withLogs.logs = true;
        const TestbedBatch out = runTestbedJobs(tb, cluster, model, plan.jobs, plans, withLogs);
        QCOMPARE(out.results.size(), plan.jobs.size() + plans.size());
        size_t profiles = 0, runs = 0, failed = 0, logs = 0;
        for (size_t i = 0; i < plan.jobs.size(); ++i) {
            const ProfileJob &j = plan.jobs[i];
            const TestbedJobResult &r = out.results[i];
            QCOMPARE(r.job, j.id);
            if (j.kind == ProfileJobKind::PerLayer) {
                const LayerProfile p = tb.runProfilingJob(j, cluster, model);
                QVERIFY(out.batch.profiles[profiles++] == p);
                QCOMPARE(r.layerForwardMs, p.layers[1].forwardMs);
                logs += std::min(j.layerVariants.size(), j.logFiles.size());
            } else {
                const Model runModel = j.kind == ProfileJobKind::Memory
                    ? memoryCalibrationModel(model, j.layerVariants.front())
                    : model; // a memory job runs the truncated model
                const TestbedRun run = tb.runPlan(*j.plan, cluster, runModel);
                QCOMPARE(r.ok, run.ok);
                if (run.ok) {
                    QVERIFY(out.batch.runs[runs++] == run.run);
                    logs += j.logFiles.empty() ? 0 : 1;
                } else {
                    ++failed;
                }
            }
        }
        for (size_t k = 0; k < plans.size(); ++k) {
            const TestbedRun run = tb.runPlan(plans[k], cluster, model);
            QCOMPARE(out.results[plan.jobs.size() + k].ok, run.ok);
            if (run.ok)
                QVERIFY(out.batch.runs[runs++] == run.run);
            else
                ++failed;
        }
        QCOMPARE(out.batch.profiles.size(), profiles);
        QCOMPARE(out.batch.runs.size(), runs);
        QCOMPARE(out.failed(), failed);
        QCOMPARE(out.logs.size(), logs);
        QVERIFY(out.logs.front().second.find("SIMULATED") != std::string::npos);
        QVERIFY(runTestbedJobs(tb, cluster, model, plan.jobs, plans).logs.empty());
        QVERIFY_THROWS_EXCEPTION(
            Cancelled,
            runTestbedJobs(tb, cluster, model, plan.jobs, plans, {}, [](size_t done, size_t) { return done < 2; }));
    }
};

QTEST_GUILESS_MAIN(TestEngine)
#include "tst_engine.moc"
