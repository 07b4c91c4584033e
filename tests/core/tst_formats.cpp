// Cluster, model, plan and catalogue formats: parsing, validation messages, round trips.
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"
#include "memx/util/jsonreader.h"

#include <QDir>
#include <QTemporaryDir>
#include <QTest>

#include <set>

using namespace memx;

static const QString kSamples = QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters");
static const QString kBroken = QStringLiteral(MEMX_SOURCE_DIR "/tests/data/broken");

/// Every problem of loading `path` as `kind`, joined with newlines ("" when valid).
static std::string problemsOf(const std::string &kind, const std::string &path)
{
    try {
        if (kind == "cluster")
            loadCluster(path);
        else if (kind == "model")
            loadModel(path);
        else if (kind == "plan") {
            Plan p = loadPlan(path);
            Diagnostics d(path);
            validatePlan(p, loadCluster((kSamples + "/h100-8x.json").toStdString()), resolveModel("gpt3-1.3b"), d);
            d.throwIfAny();
        }
        return {};
    } catch (const LoadError &e) {
        return e.what();
    }
}

class TestFormats : public QObject {
    Q_OBJECT

private slots:
    void catalogueIsComplete()
    {
        const Catalogue &cat = builtinCatalogue();
        QVERIFY2(cat.devices().size() >= 18, "the catalogue needs at least 18 devices");
        std::set<std::string> vendors;
        for (const GpuSpec &d : cat.devices()) {
            vendors.insert(d.vendor);
            // Every known figure names its source.
            if (d.memoryGiB)
                QVERIFY2(d.sources.count("memoryGiB"), d.id.c_str());
            if (d.denseFp16Tflops)
                QVERIFY2(d.sources.count("denseFp16Tflops"), d.id.c_str());
        }
        QVERIFY(vendors.size() >= 5);
        // Catalogue figures from ../shared/reference/launch-and-formulas.md section 6.
        QCOMPARE(*cat.find("h100-sxm")->denseBf16Tflops, 989.4);
        QVERIFY(!cat.find("v100-32gb-sxm2")->bf16Supported);
        QCOMPARE(cat.find("mi250x")->devicesPerPackage, 2);
        QCOMPARE(*cat.find("mi250x")->memoryGiB < 65.0, true); // one GCD, not the package
        // The public dataset's GPU names resolve through aliases.
        for (const char *alias : {"A100-40", "A100-80", "GH-96", "V100-16", "RTX-3090", "RTX-2080", "Titan-RTX"})
            QVERIFY2(cat.find(alias), alias);
    }

    void catalogueRoundTrip()
    {
        const Catalogue &cat = builtinCatalogue();
        const Catalogue again = parseCatalogue(toJson(cat).dump(), "round-trip");
        QCOMPARE(again.devices().size(), cat.devices().size());
        for (size_t i = 0; i < cat.devices().size(); ++i)
            QVERIFY2(again.devices()[i] == cat.devices()[i], cat.devices()[i].id.c_str());
    }

    /// GPU definitions loaded next to the catalogue (the GUI's "Load GPUs..."): the shipped sample
    /// loads and plans as a cluster's own devices; what a cluster would refuse, the loader refuses
    /// first, naming the field.
    void customDevicesLoadAndPlan()
    {
        const std::string sample = MEMX_SOURCE_DIR "/sample_gpus/blackwell-mi355x.json";
        const std::vector<GpuSpec> devices = loadCustomDevices(sample);
        QCOMPARE(devices.size(), size_t(3));
        for (const GpuSpec &d : devices) {
            QVERIFY(d.custom);
            QVERIFY(!d.verified); // vendor figures, to calibrate
            QVERIFY(d.memoryGiB && d.denseBf16Tflops && d.memoryBandwidthGBps);
            QVERIFY(!builtinCatalogue().find(d.id));
        }
        QCOMPARE(devices[2].id, std::string("mi355x"));
        QCOMPARE(*devices[2].memoryGiB, 287.98);
        // A cluster of them reads back with the devices inline (what the workbench saves).
        Cluster c = loadCluster((kSamples + "/h100-8x.json").toStdString());
        c.devices = devices; // the h100 group's device is the catalogue's again on reading
        NodeGroup g = c.groups.front();
        c.groups.front().gpu = "b200-sxm";
        g.name = "mi355x";
        g.gpu = "mi355x";
        c.groups.push_back(g);
        Diagnostics diags("blackwell.json");
        const Cluster back = parseCluster(toJson(c), builtinCatalogue(), diags);
        try {
            diags.throwIfAny();
        } catch (const LoadError &e) {
            QFAIL(e.what());
        }
        QCOMPARE(back.groups.size(), size_t(2));
        QCOMPARE(back.groups[0].gpu, std::string("b200-sxm"));
        QVERIFY(back.devices[size_t(back.deviceIndex("mi355x"))] == devices[2]);

        const auto problem = [](const std::string &text) {
            try {
                parseCustomDevices(text, "my-gpus.json");
            } catch (const LoadError &e) {
                return std::string(e.what());
            }
            return std::string();
        };
        const std::string head = R"({"format": "memx.catalogue/1", "devices": [)";
        std::string e = problem(head + R"({"id": "h100-sxm", "vendor": "NVIDIA", "name": "mine", "memoryGiB": 80}]})");
        QVERIFY2(e.find("my-gpus.json") != std::string::npos && e.find("/devices/0/id") != std::string::npos
                     && e.find("H100 SXM5 80GB") != std::string::npos,
                 e.c_str());
        e = problem(head + R"({"id": "x1", "aliases": ["A100-80"], "vendor": "X", "name": "x", "memoryGiB": 8}]})");
        QVERIFY2(e.find("/devices/0/aliases/0") != std::string::npos, e.c_str());
        e = problem(head + R"({"id": "x1", "vendor": "X", "name": "x", "memoryGiB": null}]})");
        QVERIFY2(e.find("/devices/0/memoryGiB") != std::string::npos, e.c_str());
        e = problem(head + "]}");
        QVERIFY2(e.find("/devices") != std::string::npos && e.find("at least one") != std::string::npos, e.c_str());
        e = problem(R"({"format": "memx.cluster/1"})");
        QVERIFY2(e.find("memx.catalogue/1") != std::string::npos, e.c_str());
        e = problem(head + R"({"id": "x1", "vendor": "X", "name": "x", "memoryGiB": 8, "denseFp16Tflops": 100}]})");
        QVERIFY2(e.empty(), e.c_str());
        // Ids name files and command-line values: no '/', spaces or a leading '.'.
        for (const char *bad : {"../x", "my gpu", ".hidden", "a/b", "-x"}) {
            e = problem(head + R"({"id": ")" + bad + R"(", "vendor": "X", "name": "x", "memoryGiB": 8}]})");
            QVERIFY2(e.find("/devices/0/id") != std::string::npos && e.find("letters, digits") != std::string::npos,
                     e.c_str());
        }
        for (const char *good : {"b300-sxm", "MI355X", "gpu_2.1", "9x"})
            QVERIFY2(isValidDeviceId(good), good);
    }

    /// One merge rule for every set of custom files (CLI --gpus, the workbench's loaded GPUs).
    void customDevicesMergeByTheLaterDefinition()
    {
        const auto device = [](const std::string &id, std::vector<std::string> aliases, double gib) {
            GpuSpec d;
            d.id = id;
            d.name = "GPU " + id;
            d.vendor = "X";
            d.aliases = std::move(aliases);
            d.memoryGiB = gib;
            d.custom = true;
            return d;
        };
        std::vector<GpuSpec> known;
        mergeCustomDevices(known, {device("x1", {"X-One"}, 8), device("x2", {}, 16)}, "a.json");
        QCOMPARE(known.size(), size_t(2));
        // A later definition of x1 replaces it in place (and may drop or change its aliases).
        mergeCustomDevices(known, {device("x1", {"x-uno"}, 24)}, "b.json");
        QCOMPARE(known.size(), size_t(2));
        QCOMPARE(known[0].id, std::string("x1"));
        QCOMPARE(*known[0].memoryGiB, 24.0);
        const Catalogue merged(known);
        QVERIFY(merged.find("X-UNO") == &merged.devices()[0]);
        QVERIFY(!merged.find("X-One")); // the replaced definition's alias is gone
        // An alias or id another device already answers to (case-insensitively, as lookups do) is
        // refused, naming the file and the field, and nothing changes.
        const std::vector<GpuSpec> before = known;
        try {
            mergeCustomDevices(known, {device("x3", {"ok", "X-UNO"}, 8), device("X2", {}, 8)}, "c.json");
            QFAIL("an alias of x1 and the id of x2 were accepted");
        } catch (const LoadError &e) {
            const std::string what = e.what();
            QCOMPARE(e.diagnostics().size(), size_t(2));
            QVERIFY2(what.find("c.json: /devices/0/aliases/1") != std::string::npos
                         && what.find("GPU x1") != std::string::npos,
                     what.c_str());
            QVERIFY2(what.find("c.json: /devices/1/id") != std::string::npos, what.c_str());
        }
        QVERIFY(known == before);
        // catalogueWithCustomDevices applies the same rule across --gpus files.
        QTemporaryDir dir;
        const auto write = [&](const QString &name, const std::string &text) {
            const std::string path = (dir.path() + u'/' + name).toStdString();
            writeFileAtomically(path, text);
            return path;
        };
        const std::string head = R"({"format": "memx.catalogue/1", "devices": [)";
        const std::string a = write(
            QStringLiteral("a.json"),
            head
                + R"({"id": "x1", "aliases": ["shared"], "vendor": "X", "name": "x", "memoryGiB": 8, "denseFp16Tflops": 100}]})");
        const std::string b = write(
            QStringLiteral("b.json"),
            head
                + R"({"id": "x2", "aliases": ["Shared"], "vendor": "X", "name": "y", "memoryGiB": 8, "denseFp16Tflops": 100}]})");
        const std::string a2
            = write(QStringLiteral("a2.json"),
                    head + R"({"id": "x1", "vendor": "X", "name": "x", "memoryGiB": 12, "denseFp16Tflops": 100}]})");
        QCOMPARE(*catalogueWithCustomDevices({a, a2}).find("x1")->memoryGiB, 12.0);
        try {
            catalogueWithCustomDevices({a, b});
            QFAIL("two files sharing an alias were accepted");
        } catch (const LoadError &e) {
            QVERIFY2(std::string(e.what()).find("b.json: /devices/0/aliases/0") != std::string::npos, e.what());
        }
    }

    void samplesLoadAndRoundTrip_data()
    {
        QTest::addColumn<QString>("file");
        for (const QString &f : QDir(kSamples).entryList({QStringLiteral("*.json")}))
            QTest::newRow(qPrintable(f)) << kSamples + QLatin1Char('/') + f;
    }

    void samplesLoadAndRoundTrip()
    {
        QFETCH(QString, file);
        const Cluster c = loadCluster(file.toStdString());
        QVERIFY(c.totalGpus() > 0);
        QTemporaryDir dir;
        const std::string out = (dir.path() + QStringLiteral("/c.json")).toStdString();
        saveJson(toJson(c), out);
        const Cluster again = loadCluster(out);
        QVERIFY(again == c);
    }

    void sampleSizes()
    {
        auto gpus = [](const char *f) {
            return loadCluster((kSamples + QLatin1Char('/') + QLatin1String(f)).toStdString()).totalGpus();
        };
        QCOMPARE(gpus("paper-20gpu-nvidia-amd.json"), 20);
        QCOMPARE(gpus("paper-20gpu-mixed-consumer.json"), 20);
        QCOMPARE(gpus("paper-40gpu-nvidia-amd.json"), 40);
        QCOMPARE(gpus("paper-60gpu-mixed-consumer.json"), 60);
        QCOMPARE(gpus("h100-8x.json"), 8);
        QCOMPARE(gpus("cross-vendor-512gpu.json"), 512);
    }

    void nodeGroupsExpand()
    {
        const Cluster c = loadCluster((kSamples + QStringLiteral("/paper-20gpu-nvidia-amd.json")).toStdString());
        const auto nodes = c.nodes();
        QCOMPARE(nodes.size(), size_t(4));
        QCOMPARE(nodes[0].name, std::string("a100-0"));
        QCOMPARE(nodes[1].name, std::string("a100-1"));
        QCOMPARE(nodes[2].name, std::string("mi250x"));
        QVERIFY(c.findNode("a100-1").has_value());
        QVERIFY(!c.findNode("a100").has_value());
    }

    void linkOverridesAndCurves()
    {
        const Cluster c = loadCluster((kSamples + QStringLiteral("/cross-vendor-512gpu.json")).toStdString());
        const Node h = *c.findNode("h100-0"), m = *c.findNode("mi250x-3"), a = *c.findNode("a100-2");
        QCOMPARE(c.interNodeLink(h, m).bandwidthGBps, 25.0); // group override, either order
        QCOMPARE(c.interNodeLink(m, h).bandwidthGBps, 25.0);
        QCOMPARE(c.interNodeLink(h, a).bandwidthGBps, 50.0); // default
        Link l;
        l.bandwidthGBps = 10;
        l.curve = {{1e6, 2.0}, {4e6, 6.0}, {1.6e7, 10.0}};
        QCOMPARE(l.bandwidthAt(5e5), 2.0);
        QCOMPARE(l.bandwidthAt(2e6), 4.0); // halfway in log2 between 1e6 and 4e6
        QCOMPARE(l.bandwidthAt(1e9), 10.0);
        QCOMPARE(l.transferSeconds(4e6), 4e6 / 6e9);
    }

    void modelPresets()
    {
        QVERIFY(builtinModels().size() >= 13);
        for (const Model &m : builtinModels()) {
            QTemporaryDir dir;
            const std::string out = (dir.path() + QStringLiteral("/m.json")).toStdString();
            saveJson(toJson(m), out);
            QVERIFY2(loadModel(out) == m, m.id.c_str());
        }
    }

    void parameterCounts_data()
    {
        QTest::addColumn<QString>("id");
        QTest::addColumn<double>("billions");
        // Published sizes; Megatron's count has no biases, so small models land slightly low.
        QTest::newRow("llama2-7b") << "llama2-7b" << 6.74;
        QTest::newRow("llama2-70b") << "llama2-70b" << 68.98;
        QTest::newRow("llama3-8b") << "llama3-8b" << 8.03;
        QTest::newRow("gpt3-175b") << "gpt3-175b" << 174.6;
        QTest::newRow("gpt3-13b") << "gpt3-13b" << 12.85;
    }

    void parameterCounts()
    {
        QFETCH(QString, id);
        QFETCH(double, billions);
        const Model m = resolveModel(id.toStdString());
        const double got = static_cast<double>(m.totalParams()) / 1e9;
        QVERIFY2(std::abs(got - billions) / billions < 0.01,
                 qPrintable(QStringLiteral("%1: %2 B parameters, expected %3 B").arg(id).arg(got).arg(billions)));
    }

    void perLayerCountByHand()
    {
        // Llama-2 7B layer by hand: attention 4*h^2 = 67,108,864; SwiGLU MLP 3*h*f = 135,266,304;
        // two RMSNorms 2*h = 8,192. Total 202,383,360.
        QCOMPARE(resolveModel("llama2-7b").paramsPerLayer(), 202383360LL);
        // GQA: Llama-2 70B, h=8192, 64 heads, 8 groups, kv=128: attention = h*kv*(2*64+2*8) = 150,994,944.
        const Model m = resolveModel("llama2-70b");
        QCOMPARE(m.paramsPerLayer(), 150994944LL + 3LL * 8192 * 28672 + 2 * 8192);
    }

    void brokenFiles_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("file");
        QTest::addColumn<QStringList>("expected");
        auto row = [](const char *kind, const char *file, QStringList expected) {
            QTest::newRow(file) << QString::fromLatin1(kind) << kBroken + QLatin1Char('/') + QLatin1String(file)
                                << expected;
        };
        row("cluster", "cluster-unknown-gpu.json",
            {"/nodes/0/gpu: expected a device id from the catalogue", "found \"a100-90gb-sxm\"", "did you mean"});
        row("cluster", "cluster-negative-gpus.json", {"/nodes/0/gpus: expected an integer from 1 to 64, found -4"});
        row("cluster", "cluster-missing-network.json", {"/network: missing required field, expected an object"});
        row("cluster", "cluster-duplicate-names.json", {"/nodes/1/name: duplicate node name \"gpu-node\""});
        row("cluster", "cluster-truncated.json", {"line 4, column", "invalid JSON"});
        row("cluster", "cluster-future-format.json",
            {"/format: expected \"memx.cluster/1\", found \"memx.cluster/9\"", "version 9 is not supported"});
        row("cluster", "cluster-string-count.json",
            {"/nodes/0/gpus: expected an integer from 1 to 64, found \"8\"", "/nodes/0/gpu_count: unknown field",
             "/network/interNode/bandwidthGBps: expected a number from 1e-06 to 1e+06, found 0"});
        row("cluster", "cluster-empty.json", {"/nodes: expected at least one node group, found an empty list"});
        row("model", "model-bad-heads.json",
            {"/shape/heads: expected a divisor of hidden (1000), found 16",
             "/shape/kvGroups: expected a divisor of heads",
             "/training/precision: expected one of \"bf16\" or \"fp16\", found \"fp8\""});
        row("plan", "plan-gap-and-reuse.json",
            {"/stages/1/firstLayer: expected 10",
             "/stages/1/replicas/0/gpus/0: GPU 1 of node 'dgx-h100' is already used",
             "/stages: expected the stages to cover the model's 24 transformer layers, found 22"});
        row("plan", "plan-missing-stages.json",
            {"/globalBatch: expected an integer from 1", "/stages: missing required field"});
        row("cluster", "does-not-exist.json", {"cannot open file"});
    }

    void brokenFiles()
    {
        QFETCH(QString, kind);
        QFETCH(QString, file);
        QFETCH(QStringList, expected);
        const std::string problems = problemsOf(kind.toStdString(), file.toStdString());
        QVERIFY2(!problems.empty(), qPrintable(file + QStringLiteral(" was accepted")));
        // Every message names the file.
        QVERIFY2(problems.find(file.toStdString()) != std::string::npos, problems.c_str());
        for (const QString &e : expected)
            QVERIFY2(problems.find(e.toStdString()) != std::string::npos,
                     qPrintable(QStringLiteral("expected \"%1\" in:\n%2").arg(e, QString::fromStdString(problems))));
    }

    void planRoundTripAndValidation()
    {
        const Cluster c = loadCluster((kSamples + QStringLiteral("/paper-20gpu-nvidia-amd.json")).toStdString());
        const Model m = resolveModel("llama2-7b");
        Plan p;
        p.globalBatch = 64;
        p.sequenceParallel = true;
        p.distributedOptimizer = true;
        // Uneven split, TP differs per stage, stage 1 mixes device types.
        p.stages.push_back(
            {0, 10, {RecomputeMethod::Full, 4}, {{"a100-0", {0, 1, 2, 3}, 4, 2}, {"a100-1", {0, 1, 2, 3}, 4, 2}}});
        p.stages.push_back({10,
                            22,
                            {RecomputeMethod::Selective, 0},
                            {{"mi250x", {0, 1}, 2, 1}, {"mi250x", {2, 3}, 2, 1}, {"h100", {0, 1}, 2, 2}}});
        Diagnostics d("plan");
        validatePlan(p, c, m, d);
        QVERIFY2(d.empty(), d.empty() ? "" : d.items().front().toString().c_str());
        QCOMPARE(p.microBatches(), 16);
        QVERIFY(p.summary(c).find("mi250x TP2xDP2 mb1 + h100-sxm TP2xDP1 mb2") != std::string::npos
                || p.summary(c).find("h100-sxm TP2xDP1 mb2 + mi250x TP2xDP2 mb1") != std::string::npos);
        Diagnostics d2("rt");
        const Plan again = parsePlan(toJson(p), d2);
        QVERIFY(d2.empty());
        QVERIFY(again == p);

        // Megatron-FSDP: the field round-trips (absent when none), a wrong name is refused naming
        // the choices.
        Plan f = p;
        f.fsdp = DpSharding::Parameters;
        const nlohmann::json fj = toJson(f);
        QCOMPARE(QString::fromStdString(fj.at("fsdp").get<std::string>()), QString("optim_grads_params"));
        QVERIFY(!toJson(p).contains("fsdp"));
        Diagnostics d3("rt");
        QVERIFY(parsePlan(fj, d3) == f);
        QVERIFY(d3.empty());
        nlohmann::json bad = fj;
        bad["fsdp"] = "zero3";
        Diagnostics d4("bad.json");
        parsePlan(bad, d4);
        QVERIFY(!d4.empty());
        QCOMPARE(QString::fromStdString(d4.items().front().pointer), QString("/fsdp"));
        QVERIFY2(d4.items().front().message.find("optim_grads_params") != std::string::npos,
                 d4.items().front().message.c_str());
    }

    void clusterSizeLimits()
    {
        // Issue 21/22: a 100k-GPU cluster hung in the quadratic link set-up, a file with 1.3 M
        // node groups exhausted the GUI. Both are refused by the reader, naming the sizes.
        auto firstError = [](const nlohmann::json &j) {
            Diagnostics d("big.json");
            parseCluster(j, builtinCatalogue(), d);
            return d.empty() ? std::string("<none>") : d.items().front().pointer + ": " + d.items().front().message;
        };
        nlohmann::json j = {{"format", "memx.cluster/1"},
                            {"name", "big"},
                            {"nodes", {{{"name", "a"}, {"gpu", "h100-sxm"}, {"gpus", 8}, {"count", 12500}}}},
                            {"network", {{"interNode", {{"bandwidthGBps", 50}, {"latencyUs", 5}}}}}};
        QCOMPARE(QString::fromStdString(firstError(j)),
                 QString("/nodes: expected a cluster of at most 8192 nodes and 65536 GPUs (the planner's limits), "
                         "found 12500 nodes and 100000 GPUs"));
        j["nodes"][0]["count"] = 1024; // 8192 GPUs: accepted
        QCOMPARE(QString::fromStdString(firstError(j)), QString("<none>"));
        nlohmann::json many = nlohmann::json::array();
        for (int i = 0; i < 4097; ++i)
            many.push_back({{"name", "n" + std::to_string(i)}, {"gpu", "h100-sxm"}, {"gpus", 1}});
        j["nodes"] = many;
        QCOMPARE(QString::fromStdString(firstError(j)),
                 QString("/nodes: expected at most 4096 node groups, found 4097"));
    }

    void atomicWriteKeepsOldFileOnFailure()
    {
        QTemporaryDir dir;
        const std::string path = (dir.path() + QStringLiteral("/a.json")).toStdString();
        writeFileAtomically(path, "old");
        writeFileAtomically(path, "new");
        QCOMPARE(readTextFile(path), std::string("new"));
        // A directory in the way of the rename: the write fails and no temporary is left.
        const std::string blocked = (dir.path() + QStringLiteral("/sub")).toStdString();
        QDir(dir.path()).mkdir(QStringLiteral("sub"));
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, writeFileAtomically(blocked, "x"));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);
    }
};

QTEST_GUILESS_MAIN(TestFormats)
#include "tst_formats.moc"
