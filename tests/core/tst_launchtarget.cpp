// Launch targets (memx/export/launchtarget.h): the search under a target ranks exactly the plans
// that target's real exporter writes, the default target follows the cluster, and the per-stage
// recompute rules.
#include "memx/export/export.h"
#include "memx/export/launchtarget.h"
#include "memx/io/formats.h"
#include "memx/search/search.h"
#include "memx/util/diagnostic.h"

#include <QTest>

#include <set>

using namespace memx;

static const std::string kRoot = MEMX_SOURCE_DIR;

namespace {

Cluster clusterFromJson(const std::string &text)
{
    Diagnostics d("inline cluster");
    Cluster c = parseCluster(nlohmann::json::parse(text), builtinCatalogue(), d);
    d.throwIfAny();
    return c;
}

/// Two AMD device types: one vendor, no FlagScale adaptation.
Cluster amdPair()
{
    return clusterFromJson(R"({"format": "memx.cluster/1", "name": "MI300X + MI250X",
        "nodes": [{"name": "mi300x", "gpu": "mi300x", "gpus": 8},
                  {"name": "mi250x", "gpu": "mi250x", "gpus": 8}],
        "network": {"interNode": {"bandwidthGBps": 25, "latencyUs": 5}}})");
}

/// The NVIDIA part of the 20-GPU consumer sample: A100 80GB (8 per node) + RTX 4090 (4 per node).
Cluster nvidiaConsumer()
{
    Cluster c = loadCluster(kRoot + "/sample_clusters/paper-20gpu-mixed-consumer.json");
    c.groups.erase(c.groups.begin() + 1); // the MI250X node
    return c;
}

Cluster namedCluster(const QString &name)
{
    if (name == "h100-8x")
        return loadCluster(kRoot + "/sample_clusters/h100-8x.json");
    if (name == "a100-h100")
        return loadCluster(kRoot + "/tests/data/export/a100-h100.cluster.json");
    if (name == "amd-pair")
        return amdPair();
    return nvidiaConsumer();
}

/// The plan as JSON without its name: two plans of different searches compare equal when they
/// are the same plan.
std::string planText(Plan p)
{
    p.name.clear();
    return toJson(p).dump();
}

bool hasMixedStage(const Plan &plan, const Cluster &cluster)
{
    for (const Stage &s : plan.stages)
        for (const Replica &r : s.replicas)
            if (cluster.findNode(r.node)->device != cluster.findNode(s.replicas.front().node)->device)
                return true;
    return false;
}

/// The real export of `plan` to `target` succeeds.
bool exports(const Plan &plan, const Cluster &cluster, const Model &model, LaunchTarget target)
{
    ExportRequest r;
    r.plan = plan;
    r.cluster = cluster;
    r.model = model;
    r.format = target == LaunchTarget::Megatron ? ExportFormat::Megatron : ExportFormat::FlagScale;
    r.options.date = "2025-01-01T00:00:00Z";
    try {
        return !exportPlan(r).empty();
    } catch (const LoadError &) {
        return false;
    }
}

} // namespace

class TestLaunchTarget : public QObject {
    Q_OBJECT

private slots:
    void names()
    {
        for (LaunchTarget t : {LaunchTarget::Megatron, LaunchTarget::FlagScale, LaunchTarget::Any})
            QCOMPARE(parseLaunchTarget(toString(t)), std::optional<LaunchTarget>(t));
        QVERIFY(!parseLaunchTarget("deepspeed"));
        QCOMPARE(launchersText({}), std::string("no launcher"));
        QCOMPARE(launchersText({LaunchTarget::Megatron, LaunchTarget::FlagScale}), std::string("megatron, flagscale"));
    }

    void recomputeRules()
    {
        using R = RecomputeMethod;
        const auto allowed = [](LaunchTarget t, std::vector<R> v) { return recomputeAllowed(t, v.data(), v.size()); };
        QVERIFY(allowed(LaunchTarget::Megatron, {R::Full, R::Full}));
        QVERIFY(!allowed(LaunchTarget::Megatron, {R::Full, R::None}));
        QVERIFY(allowed(LaunchTarget::FlagScale, {R::Full, R::None, R::Full})); // per-stage full on/off
        QVERIFY(allowed(LaunchTarget::FlagScale, {R::Selective, R::Selective}));
        QVERIFY(!allowed(LaunchTarget::FlagScale, {R::Selective, R::None}));
        QVERIFY(!allowed(LaunchTarget::FlagScale, {R::Full, R::Selective}));
        QVERIFY(allowed(LaunchTarget::Any, {R::Full, R::Selective, R::None}));
        QVERIFY(recomputeRefusal(LaunchTarget::FlagScale, {R::Full, R::Selective})->find("selective recompute on all")
                != std::string::npos);
        QVERIFY(!recomputeRefusal(LaunchTarget::Megatron, {R::None, R::None}));
    }

    void defaultTargetFollowsTheCluster_data()
    {
        QTest::addColumn<QString>("cluster");
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("reason");
        QTest::newRow("homogeneous") << "h100-8x"
                                     << "megatron"
                                     << "one device type";
        QTest::newRow("NVIDIA types") << "a100-h100"
                                      << "flagscale"
                                      << "FlagScale heterogeneous meshes";
        QTest::newRow("AMD types") << "amd-pair"
                                   << "megatron"
                                   << "one vendor (AMD)";
        QTest::newRow("NVIDIA + AMD") << "paper-20gpu-nvidia-amd"
                                      << "flagscale"
                                      << "it cannot run mi250x (mi250x, AMD), which stay idle";
        QTest::newRow("Gaudi + AMD") << "gaudi-amd"
                                     << "megatron"
                                     << "mixed vendors that FlagScale does not run";
        QTest::newRow("Gaudi alone") << "gaudi"
                                     << "any"
                                     << "no launcher runs Intel GPUs";
    }

    void defaultTargetFollowsTheCluster()
    {
        QFETCH(QString, cluster);
        QFETCH(QString, target);
        QFETCH(QString, reason);
        Cluster c;
        if (cluster == "paper-20gpu-nvidia-amd")
            c = loadCluster(kRoot + "/sample_clusters/paper-20gpu-nvidia-amd.json");
        else if (cluster == "gaudi-amd" || cluster == "gaudi")
            c = clusterFromJson(std::string(R"({"format": "memx.cluster/1", "name": "g", "nodes": [
                {"name": "g", "gpu": "gaudi2", "gpus": 8})")
                                + (cluster == "gaudi" ? "" : R"(, {"name": "m", "gpu": "mi250x", "gpus": 8})")
                                + R"(], "network": {"interNode": {"bandwidthGBps": 25, "latencyUs": 5}}})");
        else
            c = namedCluster(cluster);
        const DefaultTarget d = defaultLaunchTarget(c);
        QCOMPARE(QString(toString(d.target)), target);
        QVERIFY2(d.reason.find(reason.toStdString()) != std::string::npos, d.reason.c_str());
    }

    /// For every plan of several searches: the search under a target keeps exactly the plans that
    /// target's real exporter writes. Checked both ways against the target-free (Any) search of
    /// the same space: every plan of the target search exports; every Any plan the exporter
    /// accepts is in the target search (mixed stages under Megatron carry uniform micro-batches,
    /// which the Any search's proportional split may not produce, so those are checked one way).
    void searchAcceptedEqualsExportAccepted_data()
    {
        QTest::addColumn<QString>("cluster");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("expect"); // some, all or none of the plans launch
        for (const char *m : {"llama2-7b", "gpt3-1.3b", "llama3-8b"}) {
            // One device type on one node: every plan is uniform, Megatron-LM runs them all.
            QTest::newRow((std::string("h100-8x megatron ") + m).c_str()) << "h100-8x" << m << "megatron"
                                                                          << "all";
            QTest::newRow((std::string("a100-h100 flagscale ") + m).c_str()) << "a100-h100" << m << "flagscale"
                                                                             << "some";
            QTest::newRow((std::string("a100-h100 megatron ") + m).c_str()) << "a100-h100" << m << "megatron"
                                                                            << "some";
        }
        QTest::newRow("h100-8x flagscale") << "h100-8x"
                                           << "llama3-8b"
                                           << "flagscale"
                                           << "all";
        QTest::newRow("amd-pair megatron") << "amd-pair"
                                           << "llama2-7b"
                                           << "megatron"
                                           << "some";
        // No ROCm adaptation in upstream FlagScale.
        QTest::newRow("amd-pair flagscale") << "amd-pair"
                                            << "llama2-7b"
                                            << "flagscale"
                                            << "none";
        QTest::newRow("nvidia-consumer flagscale") << "nvidia-consumer"
                                                   << "gpt3-1.3b"
                                                   << "flagscale"
                                                   << "some";
        // 8 GPUs per A100 node, 4 per RTX node: torchrun's one --nproc_per_node cannot start both.
        QTest::newRow("nvidia-consumer megatron") << "nvidia-consumer"
                                                  << "llama3-8b"
                                                  << "megatron"
                                                  << "none";
    }

    void searchAcceptedEqualsExportAccepted()
    {
        QFETCH(QString, cluster);
        QFETCH(QString, model);
        QFETCH(QString, target);
        QFETCH(QString, expect);
        SearchRequest any;
        any.cluster = namedCluster(cluster);
        any.model = resolveModel(model.toStdString());
        any.globalBatch = 96; // a multiple of DP 3 (two A100 nodes + one H100 node at TP 4)
        any.space.microBatches = {1, 2};
        any.space.neighbourRadius = 0;
        any.threads = 2;
        // The launch rules compared on whole-stage recompute: a partial-recompute variant takes
        // its recomputed layers per stage under Any but one count for the job on Megatron-LM, so
        // the two searches' partial plans differ by design. Those of the target all export.
        any.space.partialRecompute = false;
        SearchRequest req = any;
        req.space.target = *parseLaunchTarget(target.toStdString());
        const SearchResult all = runSearch(any);
        const SearchResult under = runSearch(req);
        QCOMPARE(under.enumerated, under.evaluated + under.pruned.total());
        SearchRequest partialReq = req;
        partialReq.space.partialRecompute = true;
        const SearchResult partial = runSearch(partialReq);
        for (size_t i = 0; i < partial.size(); ++i)
            if (partial.recomputedLayersOf(i)) {
                const Plan p = partial.materialize(i);
                QVERIFY2(exports(p, any.cluster, any.model, req.space.target),
                         ("the search kept a partial-recompute plan the exporter refuses: " + p.summary(any.cluster))
                             .c_str());
            }

        std::set<std::string> kept;
        size_t mixedKept = 0;
        for (size_t i = 0; i < under.size(); ++i) {
            const Plan p = under.materialize(i);
            QVERIFY2(exports(p, any.cluster, any.model, req.space.target),
                     ("the search kept a plan the exporter refuses: " + p.summary(any.cluster)).c_str());
            kept.insert(planText(p));
            mixedKept += hasMixedStage(p, any.cluster);
        }
        size_t accepted = 0;
        for (size_t i = 0; i < all.size(); ++i) {
            const Plan p = all.materialize(i);
            const bool ok = exports(p, any.cluster, any.model, req.space.target);
            const bool in = kept.count(planText(p)) > 0;
            accepted += ok;
            QVERIFY2(ok == in,
                     ((ok ? "the exporter accepts a plan the search dropped: "
                          : "the search kept a plan the exporter refuses: ")
                      + p.summary(any.cluster))
                         .c_str());
        }
        QVERIFY(accepted <= under.size());
        QCOMPARE(under.size() - accepted <= mixedKept, true);
        if (req.space.target == LaunchTarget::FlagScale)
            QCOMPARE(mixedKept, size_t(0)); // a FlagScale mesh has one device type
        QVERIFY(all.size() > 0);
        if (expect == "none") {
            QCOMPARE(under.size(), size_t(0));
            QVERIFY(under.pruned.launcher > 0);
        } else if (expect == "all") {
            QCOMPARE(under.size(), all.size());
        } else {
            QVERIFY2(under.size() > 0, "the check is not vacuous");
            QVERIFY(under.size() < all.size());
            QVERIFY(under.pruned.launcher > 0);
        }
        qInfo("%s: %zu of %zu plans launch (%zu with a mixed-type stage)", qPrintable(QTest::currentDataTag()),
              under.size(), all.size(), mixedKept);
    }

    /// Mixed-type data-parallel groups under Megatron-LM: one vendor, one micro-batch for every
    /// replica (the slower GPU sets the pace), exported as one job.
    void megatronRunsMixedTypesAtOneShape()
    {
        SearchRequest req;
        req.cluster = namedCluster("a100-h100");
        req.model = resolveModel("llama3-8b");
        req.globalBatch = 96;
        req.space.target = LaunchTarget::Megatron;
        req.threads = 2;
        const SearchResult r = runSearch(req);
        size_t mixed = 0;
        for (size_t i = 0; i < r.size(); ++i) {
            const Plan p = r.materialize(i);
            if (!hasMixedStage(p, req.cluster))
                continue;
            ++mixed;
            for (const Stage &s : p.stages)
                for (const Replica &x : s.replicas)
                    QCOMPARE(x.microBatch, p.stages.front().replicas.front().microBatch);
        }
        QVERIFY(mixed > 0);
    }
};

QTEST_GUILESS_MAIN(TestLaunchTarget)
#include "tst_launchtarget.moc"
