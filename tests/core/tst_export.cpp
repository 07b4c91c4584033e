// Plan export (Megatron-LM, FlagScale, Slurm, JSON): golden files, Megatron round trip, refusals,
// FlagScale rules, atomic writing and the `memx export` command.
#include "memx/export/export.h"
#include "memx/util/hash.h"
#include "memx/export/megatronargs.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"
#include "memx/util/jsonreader.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <set>
#include <sstream>

using namespace memx;

static const std::string kRoot = MEMX_SOURCE_DIR;
static const std::string kData = kRoot + "/tests/data/export";
static const std::string kGolden = kData + "/golden";

namespace {

struct Case {
    std::string name, cluster, model, plan;
    LayerSplitStyle split = LayerSplitStyle::Layout;
    std::set<std::string> refused;
};

struct Cases {
    std::string date, outputDir;
    std::vector<Case> cases;
};

const Cases &cases()
{
    static const Cases c = [] {
        Cases out;
        const nlohmann::json j = readJsonFile(kData + "/cases.json");
        out.date = j.at("date");
        out.outputDir = j.at("outputDir");
        for (const auto &c : j.at("cases")) {
            Case k {c.at("name"), c.at("cluster"), c.at("model"), c.at("plan"), LayerSplitStyle::Layout, {}};
            if (c.value("splitStyle", "") == "first-last")
                k.split = LayerSplitStyle::FirstLast;
            for (const auto &f : c.at("refused"))
                k.refused.insert(f.get<std::string>());
            out.cases.push_back(k);
        }
        return out;
    }();
    return c;
}

const Case &caseNamed(const std::string &name)
{
    for (const Case &c : cases().cases)
        if (c.name == name)
            return c;
    throw std::runtime_error("no export case " + name);
}

ExportRequest requestFor(const Case &c, ExportFormat format)
{
    ExportRequest r;
    r.cluster = loadCluster(kRoot + "/" + c.cluster);
    r.model = resolveModel(c.model);
    r.plan = loadPlan(kRoot + "/" + c.plan);
    r.planFile = c.plan;
    r.format = format;
    r.options.date = cases().date;
    r.options.outputDir = cases().outputDir;
    r.options.splitStyle = c.split;
    return r;
}

/// The error lines of a refused export, or "" when it succeeded.
std::string refusal(const ExportRequest &r)
{
    try {
        exportPlan(r);
        return {};
    } catch (const LoadError &e) {
        std::string out;
        for (const Diagnostic &d : e.diagnostics())
            out += d.toString() + "\n";
        return out;
    }
}

bool updateGoldens()
{
    return qEnvironmentVariable("MEMX_UPDATE_GOLDEN") == QLatin1String("1");
}

/// Files under `dir`, relative, sorted.
std::set<std::string> filesUnder(const std::string &dir)
{
    std::set<std::string> out;
    const QString base = QString::fromStdString(dir);
    QDirIterator it(base, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
    while (it.hasNext())
        out.insert(QDir(base).relativeFilePath(it.next()).toStdString());
    return out;
}

std::string readFile(const std::string &path)
{
    try {
        return readTextFile(path);
    } catch (const LoadError &) {
        return "<missing " + path + ">";
    }
}

/// The plan as the Megatron scripts describe it (see docs/export.md, "Round trip").
Plan planFromScripts(const std::vector<ExportFile> &files, const Plan &original, std::string &problems)
{
    Plan p;
    p.name = original.name;
    std::vector<LaunchScript> scripts;
    std::vector<MegatronArgs> args;
    for (const ExportFile &f : files) {
        if (f.path.rfind("launch-node", 0) != 0)
            continue;
        Diagnostics d(f.path);
        scripts.push_back(parseLaunchScript(f.content, d));
        args.push_back(parseMegatronArgs(scripts.back().megatronArgs, d));
        for (const Diagnostic &x : d.items())
            problems += x.toString() + "\n";
    }
    if (scripts.empty()) {
        problems += "no launch scripts\n";
        return p;
    }
    const MegatronArgs &a = args.front();
    for (const LaunchScript &s : scripts)
        if (s.megatronArgs != scripts.front().megatronArgs)
            problems += "node " + s.nodeName + " has different Megatron arguments\n";
    const int world = scripts.front().nnodes * scripts.front().nprocPerNode;
    if (static_cast<int>(scripts.size()) != scripts.front().nnodes)
        problems += "expected one script per node\n";
    const int dp = world / (a.tp * a.pp);
    p.globalBatch = a.globalBatch;
    p.sequenceParallel = a.sequenceParallel;
    p.distributedOptimizer = a.distributedOptimizer;
    int first = 0;
    for (int s = 0; s < a.pp; ++s) {
        Stage st;
        st.firstLayer = first;
        st.layerCount = a.stageLayers.at(static_cast<size_t>(s));
        st.recompute = a.stageRecompute.at(static_cast<size_t>(s));
        first += st.layerCount;
        st.replicas.assign(static_cast<size_t>(dp), Replica {});
        for (Replica &r : st.replicas) {
            r.tp = a.tp;
            r.microBatch = a.microBatch;
            r.gpus.assign(static_cast<size_t>(a.tp), -1);
        }
        p.stages.push_back(st);
    }
    for (const LaunchScript &s : scripts) {
        if (static_cast<int>(s.visibleDevices.size()) != s.nprocPerNode)
            problems += "node " + s.nodeName + ": visible devices do not match --nproc_per_node\n";
        for (int l = 0; l < s.nprocPerNode && l < static_cast<int>(s.visibleDevices.size()); ++l) {
            // torchrun: global rank = node rank x nproc + local rank; then Megatron's rank order.
            const int g = s.nodeRank * s.nprocPerNode + l;
            const int t = g % a.tp, rest = g / a.tp;
            const int stage = a.tpPpDpMapping ? rest % a.pp : rest / dp;
            const int d = a.tpPpDpMapping ? rest / a.pp : rest % dp;
            Replica &r = p.stages[static_cast<size_t>(stage)].replicas[static_cast<size_t>(d)];
            r.node = s.nodeName;
            r.gpus[static_cast<size_t>(t)] = s.visibleDevices[static_cast<size_t>(l)];
        }
    }
    return p;
}

} // namespace

class TestExport : public QObject {
    Q_OBJECT

private slots:
    void hashIsFnv1a()
    {
        // Published FNV-1a 64 test vectors (Fowler/Noll/Vo reference test suite).
        QCOMPARE(fnv1a64Hex(""), std::string("cbf29ce484222325"));
        QCOMPARE(fnv1a64Hex("a"), std::string("af63dc4c8601ec8c"));
        QCOMPARE(fnv1a64Hex("foobar"), std::string("85944171f73967e8"));
        // Key order does not matter, values do.
        QCOMPARE(jsonHash(nlohmann::json::parse(R"({"a":1,"b":2})")),
                 jsonHash(nlohmann::json::parse(R"({"b":2,"a":1})")));
        QVERIFY(jsonHash(nlohmann::json::parse(R"({"a":1})")) != jsonHash(nlohmann::json::parse(R"({"a":2})")));
    }

    void goldens_data()
    {
        QTest::addColumn<QString>("caseName");
        QTest::addColumn<QString>("format");
        for (const Case &c : cases().cases)
            for (const char *f : {"megatron", "flagscale", "slurm", "json"})
                QTest::newRow((c.name + "/" + f).c_str()) << QString::fromStdString(c.name) << QString(f);
    }

    void goldens()
    {
        QFETCH(QString, caseName);
        QFETCH(QString, format);
        const Case &c = caseNamed(caseName.toStdString());
        const std::string fmt = format.toStdString();
        ExportRequest r = requestFor(c, *parseExportFormat(fmt));
        if (r.format == ExportFormat::Json)
            r.metrics = nlohmann::json {{"iterationTimeMs", 1234.5}, {"peakMemoryGiB", {{"a", 30.25}}}};
        const std::string refusedPath = kGolden + "/" + c.name + "/" + fmt + ".refused.txt";
        const std::string dir = kGolden + "/" + c.name + "/" + fmt;
        const bool expectRefused = c.refused.count(fmt) > 0;
        const std::string why = refusal(r);
        QVERIFY2(expectRefused == !why.empty(),
                 (fmt + (expectRefused ? " should have been refused" : " was refused:\n" + why)).c_str());
        if (updateGoldens()) {
            QDir(QString::fromStdString(dir)).removeRecursively();
            QFile::remove(QString::fromStdString(refusedPath));
            QDir().mkpath(QString::fromStdString(kGolden + "/" + c.name));
            if (expectRefused)
                writeFileAtomically(refusedPath, why);
            else
                writeExportFiles(exportPlan(r), dir, true);
            QSKIP("golden files rewritten");
        }
        if (expectRefused) {
            QCOMPARE(why, readFile(refusedPath));
            return;
        }
        const std::vector<ExportFile> files = exportPlan(r);
        std::set<std::string> produced;
        for (const ExportFile &f : files) {
            produced.insert(f.path);
            const std::string golden = readFile(dir + "/" + f.path);
            QVERIFY2(f.content == golden,
                     ("differs from the golden file " + dir + "/" + f.path
                      + " (run with MEMX_UPDATE_GOLDEN=1 after checking the change)\n--- generated:\n" + f.content)
                         .c_str());
        }
        QCOMPARE(produced, filesUnder(dir));
        // Every generated shell script is valid bash (bash -n parses without running).
        for (const ExportFile &f : files) {
            if (!f.executable)
                continue;
            QProcess bash;
            bash.start(QStringLiteral("bash"), {QStringLiteral("-n")});
            QVERIFY(bash.waitForStarted());
            bash.write(QByteArray::fromStdString(f.content));
            bash.closeWriteChannel();
            QVERIFY(bash.waitForFinished(10000));
            QVERIFY2(bash.exitCode() == 0, (f.path + ": " + bash.readAllStandardError().toStdString()).c_str());
        }
        // Deterministic: a second export is byte-identical.
        QVERIFY(exportPlan(r) == files);
    }

    void megatronRoundTrip_data()
    {
        QTest::addColumn<QString>("caseName");
        QTest::addColumn<int>("style");
        for (const Case &c : cases().cases)
            if (!c.refused.count("megatron")) {
                QTest::newRow((c.name + "/layout").c_str()) << QString::fromStdString(c.name) << 0;
                QTest::newRow((c.name + "/first-last").c_str()) << QString::fromStdString(c.name) << 1;
            }
    }

    void megatronRoundTrip()
    {
        QFETCH(QString, caseName);
        QFETCH(int, style);
        ExportRequest r = requestFor(caseNamed(caseName.toStdString()), ExportFormat::Megatron);
        r.options.splitStyle = style ? LayerSplitStyle::FirstLast : LayerSplitStyle::Layout;
        const std::vector<ExportFile> files = exportPlan(r);
        std::string problems;
        const Plan back = planFromScripts(files, r.plan, problems);
        QVERIFY2(problems.empty(), problems.c_str());
        Plan want = r.plan;
        for (Stage &s : want.stages)
            s.recompute = normalisedRecompute(s.recompute, s.layerCount);
        QVERIFY2(
            back == want,
            ("round trip differs:\n  plan:    " + toJson(want).dump() + "\n  scripts: " + toJson(back).dump()).c_str());
        // Precision: --bf16 only when every device supports BF16 (V100 does not).
        bool allBf16 = true;
        for (const GpuSpec &d : r.cluster.devices)
            allBf16 = allBf16 && d.bf16Supported;
        Diagnostics d;
        const MegatronArgs a = parseMegatronArgs(parseLaunchScript(files.front().content, d).megatronArgs, d);
        QCOMPARE(a.bf16, allBf16 && r.model.training.precision == Precision::BF16);
        QCOMPARE(a.fp16, !a.bf16);
    }

    void layoutGrammar_data()
    {
        QTest::addColumn<QString>("layout");
        QTest::addColumn<int>("pp");
        QTest::addColumn<QString>("expected"); // comma-separated layers per stage, or "error"
        // Reference section 1.3: "[6,2,4] becomes Et*6|t*2|t*4L"; empty stages are allowed.
        QTest::newRow("reference example") << "Et*6|t*2|t*4L" << 3 << "6,2,4";
        QTest::newRow("commas and groups") << "E,t,t|(tt)*2,t|t*5,L" << 3 << "2,5,5";
        QTest::newRow("empty stage") << "E||t*12|L" << 4 << "0,0,12,0";
        QTest::newRow("missing L") << "Et*6|t*4|t*2" << 3 << "error";
        QTest::newRow("wrong layer count") << "Et*6|t*4|t*1L" << 3 << "error";
        QTest::newRow("virtual stages") << "Et*3|t*3|t*3|t*3L" << 2 << "error";
    }

    void layoutGrammar()
    {
        QFETCH(QString, layout);
        QFETCH(int, pp);
        QFETCH(QString, expected);
        Diagnostics d;
        const MegatronArgs a
            = parseMegatronArgs({"--num-layers", "12", "--pipeline-model-parallel-size", std::to_string(pp),
                                 "--micro-batch-size", "1", "--pipeline-model-parallel-layout", layout.toStdString()},
                                d);
        if (expected == QLatin1String("error")) {
            QVERIFY2(!d.empty(), "expected a parse error");
            return;
        }
        QVERIFY2(d.empty(), d.empty() ? "" : d.items().front().message.c_str());
        QStringList got;
        for (int n : a.stageLayers)
            got << QString::number(n);
        QCOMPARE(got.join(QLatin1Char(',')), expected);
    }

    void megatronRefusals_data()
    {
        QTest::addColumn<QString>("caseName");
        QTest::addColumn<QString>("mutation");
        QTest::addColumn<QString>("expected");
        QTest::newRow("heterogeneous sample: device types") << "paper-20gpu-hetero"
                                                            << ""
                                                            << "expected one device type";
        QTest::newRow("heterogeneous sample: TP") << "paper-20gpu-hetero"
                                                  << ""
                                                  << "/stages/2/replicas/0/tp: expected TP 4";
        QTest::newRow("heterogeneous sample: DP") << "paper-20gpu-hetero"
                                                  << ""
                                                  << "/stages/2/replicas: expected 1 replica like stage 0";
        QTest::newRow("heterogeneous sample: micro-batch") << "paper-20gpu-hetero"
                                                           << ""
                                                           << "/stages/2/replicas/0/microBatch: expected micro-batch 4";
        QTest::newRow("heterogeneous sample: recompute") << "paper-20gpu-hetero"
                                                         << ""
                                                         << "stage 0 full, stage 1 full, stage 2 none, stage 3 none";
        QTest::newRow("points to FlagScale") << "paper-20gpu-hetero"
                                             << ""
                                             << "--format flagscale";
        QTest::newRow("per-stage block counts") << "h100-8x-tp2pp2dp2"
                                                << "block 3 and 5"
                                                << "/stages/1/recompute/layers: expected 5 recomputed layers";
        QTest::newRow("first/last with uneven middle") << "h100-8x-tp2pp2dp2"
                                                       << "pp4 uneven middle"
                                                       << "/stages/2/layerCount: expected 7 layers like stage 1";
        QTest::newRow("placement") << "v100-2x8-tp4pp2dp2"
                                   << "swap stage 1 nodes"
                                   << "cannot be written as torchrun rank order";
        QTest::newRow("unequal GPUs per node") << "v100-2x8-tp4pp2dp2"
                                               << "stage 1 replica 1 on v100-0"
                                               << "expected the same number of GPUs on every node";
        QTest::newRow("invalid plan") << "h100-8x-tp2pp2dp2"
                                      << "reuse GPU"
                                      << "GPU 0 of node 'dgx-h100' is already used";
        QTest::newRow("non-CUDA vendor") << "h100-8x-tp2pp2dp2"
                                         << "gaudi2"
                                         << "expected NVIDIA (CUDA) or AMD (ROCm)";
    }

    void megatronRefusals()
    {
        QFETCH(QString, caseName);
        QFETCH(QString, mutation);
        QFETCH(QString, expected);
        ExportRequest r = requestFor(caseNamed(caseName.toStdString()), ExportFormat::Megatron);
        const std::string m = mutation.toStdString();
        if (m == "block 3 and 5") {
            r.plan.stages[0].recompute = {RecomputeMethod::Full, 5};
            r.plan.stages[1].recompute = {RecomputeMethod::Full, 3};
        } else if (m == "pp4 uneven middle") {
            // 32 layers as 9 | 7 | 8 | 8 over four TP2 DP1 stages.
            r.options.splitStyle = LayerSplitStyle::FirstLast;
            const int counts[] = {9, 7, 8, 8};
            std::vector<Stage> stages;
            int first = 0;
            for (int s = 0; s < 4; ++s) {
                Stage st;
                st.firstLayer = first;
                st.layerCount = counts[s];
                first += counts[s];
                st.replicas.push_back({"dgx-h100", {2 * s, 2 * s + 1}, 2, 2});
                stages.push_back(st);
            }
            r.plan.stages = stages;
            r.plan.globalBatch = 32;
        } else if (m == "swap stage 1 nodes") {
            std::swap(r.plan.stages[1].replicas[0].node, r.plan.stages[1].replicas[1].node);
        } else if (m == "stage 1 replica 1 on v100-0") {
            // TP2 everywhere; v100-0 serves three replicas (6 GPUs), v100-1 one (2 GPUs).
            r.plan.stages[0].replicas = {{"v100-0", {0, 1}, 2, 4}, {"v100-0", {2, 3}, 2, 4}};
            r.plan.stages[1].replicas = {{"v100-0", {4, 5}, 2, 4}, {"v100-1", {0, 1}, 2, 4}};
        } else if (m == "reuse GPU") {
            r.plan.stages[1].replicas[0].gpus = {0, 5};
        } else if (m == "gaudi2") {
            r.cluster.devices[0] = *Catalogue::builtin().find("gaudi2");
            r.cluster.groups[0].gpu = "gaudi2";
        }
        const std::string why = refusal(r);
        QVERIFY2(why.find(expected.toStdString()) != std::string::npos,
                 ("expected a refusal containing \"" + expected.toStdString() + "\", got:\n" + why).c_str());
        // Slurm wraps the same scripts, so it refuses the same plans.
        r.format = ExportFormat::Slurm;
        QCOMPARE(refusal(r), why);
    }

    void flagscaleRules_data()
    {
        QTest::addColumn<QString>("caseName");
        QTest::addColumn<QString>("mutation");
        QTest::addColumn<QString>("expected");
        QTest::newRow("dp_0 x MBS divisible by dp_i")
            << "paper-20gpu-bad-mbs"
            << ""
            << "dp_0 x micro_batch_size (1 x 3 = 3) must be divisible by the dp of mesh 1, found dp 2";
        QTest::newRow("uniform micro-batch in a mesh") << "paper-20gpu-hetero"
                                                       << "mbs 2+0 -> 3+1 on h100"
                                                       << "/stages/3/replicas/0/microBatch: expected micro-batch 2";
        QTest::newRow("tied embeddings need equal first/last TP")
            << "paper-20gpu-hetero"
            << "tied"
            << "first and last meshes need the same TP (4), found 2";
        QTest::newRow("device types consecutive") << "paper-20gpu-hetero"
                                                  << "a100 after mi250x"
                                                  << "a pipeline cannot return to a100-40gb-sxm";
        QTest::newRow("one device type per stage") << "paper-20gpu-hetero"
                                                   << "mixed stage"
                                                   << "a FlagScale process mesh has one device type";
        QTest::newRow("selective mixed") << "paper-20gpu-hetero"
                                         << "selective on stage 2"
                                         << "expected selective recompute on all stages or on none";
        QTest::newRow("placement") << "v100-2x8-tp4pp2dp2"
                                   << ""
                                   << "cannot be written as a FlagScale hostfile";
    }

    void flagscaleRules()
    {
        QFETCH(QString, caseName);
        QFETCH(QString, mutation);
        QFETCH(QString, expected);
        ExportRequest r = requestFor(caseNamed(caseName.toStdString()), ExportFormat::FlagScale);
        const std::string m = mutation.toStdString();
        if (m == "mbs 2+0 -> 3+1 on h100") {
            r.plan.stages[3].replicas[0].microBatch = 3;
            r.plan.stages[3].replicas[1].microBatch = 1;
        } else if (m == "tied") {
            r.model.shape.tiedEmbeddings = true;
        } else if (m == "a100 after mi250x") {
            // Layer ranges are kept; the serving nodes become a100-0 | h100 | mi250x | a100-1.
            std::swap(r.plan.stages[1].replicas, r.plan.stages[3].replicas);
            std::swap(r.plan.stages[1].recompute, r.plan.stages[3].recompute);
        } else if (m == "mixed stage") {
            r.plan.stages[3].replicas[1] = {"a100-1", {0, 1}, 2, 2};
            r.plan.stages[1].replicas[0] = {"a100-1", {2, 3}, 2, 4};
        } else if (m == "selective on stage 2") {
            r.plan.stages[2].recompute = {RecomputeMethod::Selective, 0};
        }
        const std::string why = refusal(r);
        QVERIFY2(why.find(expected.toStdString()) != std::string::npos,
                 ("expected a refusal containing \"" + expected.toStdString() + "\", got:\n" + why).c_str());
    }

    void flagscaleMeshes()
    {
        // paper-20gpu-hetero by hand: stages 0+1 on the two A100 nodes (TP4 DP1) form mesh 0 with pp 2,
        // the MI250X stage is TP2 DP4, the H100 stage TP2 DP2:
        //   meshes [4,1,1,1,2, 2,1,1,4,1, 2,1,1,2,1], split [10,8,8,6], world 4*2 + 2*4 + 2*2 = 20.
        // MBS = 4 (mesh 0); mesh i runs dp_0*MBS/dp_i = 4/1, 4/4 = 1, 4/2 = 2 = the plan's micro-batches.
        // m = 64 / 4 = 16 micro-batches: per-stage recompute [1, 16, flag].
        ExportRequest r = requestFor(caseNamed("paper-20gpu-hetero"), ExportFormat::FlagScale);
        const std::vector<ExportFile> files = exportPlan(r);
        QCOMPARE(files.size(), size_t(3));
        const std::string &train = files[1].content;
        auto has = [&](const std::string &s) {
            QVERIFY2(train.find(s) != std::string::npos, ("train YAML lacks: " + s).c_str());
        };
        has("hetero_process_meshes: [4, 1, 1, 1, 2, 2, 1, 1, 4, 1, 2, 1, 1, 2, 1]");
        has("hetero_pipeline_layer_split: [10, 8, 8, 6]");
        has("hetero_device_types: [\"a100-40gb-sxm\", \"mi250x\", \"h100-sxm\"]");
        has("micro_batch_size: 4");
        has("hetero_use_cpu_communication: true"); // NVIDIA + AMD
        has("recompute_granularity_per_stage_micro_batch:\n      - [1, 16, 1]\n      - [1, 16, 1]\n      - [1, 16, "
            "0]\n      - [1, 16, 0]\n");
        has("recompute_method_per_stage_micro_batch:\n      - [1, 16, 0]\n      - [1, 16, 1]\n");
        has("recompute_num_layers_per_stage_micro_batch:\n      - [1, 16, 1]\n      - [1, 16, 4]\n");
        QCOMPARE(files[2].content,
                 std::string("# ip slots type=xxx  (FlagScale hostfile; order = node rank = rank order)\n"
                             "a100-0 slots=4 type=a100-40gb-sxm\n"
                             "a100-1 slots=4 type=a100-40gb-sxm\n"
                             "mi250x slots=8 type=mi250x\n"
                             "h100 slots=4 type=h100-sxm\n"));
    }

    void jsonExport()
    {
        ExportRequest r = requestFor(caseNamed("paper-20gpu-hetero"), ExportFormat::Json);
        r.metrics = nlohmann::json {{"iterationTimeMs", 812.0}, {"perGpuMemoryGiB", {{"a100-0:0", 31.5}}}};
        r.options.predictor = "xgboost";
        const std::vector<ExportFile> files = exportPlan(r);
        QCOMPARE(files.size(), size_t(1));
        QCOMPARE(files[0].path, std::string("plan.json"));
        const nlohmann::json j = parseJsonText(files[0].content, "plan.json");
        Diagnostics d("plan.json");
        const Plan back = parsePlan(j, d); // the plan format accepts "metrics" and "provenance"
        QVERIFY2(d.empty(), d.empty() ? "" : d.items().front().toString().c_str());
        QVERIFY(back == r.plan);
        QVERIFY(j.at("metrics") == *r.metrics);
        const nlohmann::json &p = j.at("provenance");
        QCOMPARE(p.at("clusterHash").get<std::string>(), fnv1a64Hex(toJson(r.cluster).dump()));
        QCOMPARE(p.at("modelHash").get<std::string>(), fnv1a64Hex(toJson(r.model).dump()));
        QCOMPARE(p.at("predictor").get<std::string>(), std::string("xgboost"));
        QCOMPARE(p.at("date").get<std::string>(), cases().date);
        QCOMPARE(p.at("memxVersion").get<std::string>(), std::string(MEMX_VERSION));
        // A different cluster gives a different hash.
        ExportRequest r2 = r;
        r2.cluster.network.interNode.bandwidthGBps += 1;
        const nlohmann::json j2 = nlohmann::json::parse(exportPlan(r2)[0].content);
        QVERIFY(j2["provenance"]["clusterHash"] != p.at("clusterHash"));
        QVERIFY(j2["provenance"]["modelHash"] == p.at("modelHash"));
        // Metrics must be an object.
        r.metrics = nlohmann::json::array();
        QVERIFY(refusal(r).find("/metrics: expected the predicted metrics as a JSON object") != std::string::npos);
        // Without a date the current UTC time is written.
        r.metrics.reset();
        r.options.date.clear();
        const std::string date = nlohmann::json::parse(exportPlan(r)[0].content)["provenance"]["date"];
        QVERIFY2(date.size() == 20 && date[4] == '-' && date[10] == 'T' && date.back() == 'Z', date.c_str());
    }

    void writingIsAllOrNothing()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string dir = tmp.path().toStdString() + "/out/sub";
        std::vector<ExportFile> files = {{"a.sh", "#!/bin/sh\necho a\n", true}, {"conf/b.yaml", "b: 1\n", false}};
        const auto written = writeExportFiles(files, dir, false);
        QCOMPARE(written.size(), size_t(2));
        QCOMPARE(readTextFile(dir + "/conf/b.yaml"), std::string("b: 1\n"));
        QVERIFY(QFileInfo(QString::fromStdString(dir + "/a.sh")).isExecutable());
        QVERIFY(!QFileInfo(QString::fromStdString(dir + "/conf/b.yaml")).isExecutable());

        // Second export: a.sh exists -> refused, and the new file c.txt is not created either.
        std::vector<ExportFile> again = {{"c.txt", "c\n", false}, {"a.sh", "changed\n", true}};
        try {
            writeExportFiles(again, dir, false);
            QFAIL("expected a refusal");
        } catch (const LoadError &e) {
            QCOMPARE(e.diagnostics().size(), size_t(1));
            QCOMPARE(e.diagnostics()[0].pointer, std::string("a.sh"));
            QVERIFY(e.diagnostics()[0].message.find("--force") != std::string::npos);
        }
        QVERIFY(!QFile::exists(QString::fromStdString(dir + "/c.txt")));
        QCOMPARE(readTextFile(dir + "/a.sh"), std::string("#!/bin/sh\necho a\n"));
        // No temporary files are left behind.
        QCOMPARE(filesUnder(dir), (std::set<std::string> {"a.sh", "conf/b.yaml"}));

        // --force overwrites.
        writeExportFiles(again, dir, true);
        QCOMPARE(readTextFile(dir + "/a.sh"), std::string("changed\n"));
        QCOMPARE(readTextFile(dir + "/c.txt"), std::string("c\n"));

        // Unsafe paths and folders in the way are refused, all reported at once.
        std::vector<ExportFile> bad = {{"../escape.txt", "x", false}, {"/abs.txt", "x", false}, {"conf", "x", false}};
        try {
            writeExportFiles(bad, dir, true);
            QFAIL("expected a refusal");
        } catch (const LoadError &e) {
            QCOMPARE(e.diagnostics().size(), size_t(3));
        }
        QVERIFY(!QFile::exists(tmp.path() + "/out/escape.txt"));
    }

    void cliExport()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QString out = tmp.path() + QStringLiteral("/megatron");
        auto run = [&](const QStringList &args, QString *stdOut = nullptr, QString *stdErr = nullptr) {
            QProcess p;
            p.start(QStringLiteral(MEMX_CLI_PATH), args);
            if (!p.waitForFinished(30000))
                return -1;
            if (stdOut)
                *stdOut = QString::fromUtf8(p.readAllStandardOutput());
            if (stdErr)
                *stdErr = QString::fromUtf8(p.readAllStandardError());
            return p.exitCode();
        };
        const QString root = QStringLiteral(MEMX_SOURCE_DIR);
        const QStringList base = {QStringLiteral("export"),
                                  QStringLiteral("--cluster"),
                                  root + QStringLiteral("/sample_clusters/h100-8x.json"),
                                  QStringLiteral("--model"),
                                  QStringLiteral("llama2-7b"),
                                  QStringLiteral("--plan"),
                                  root + QStringLiteral("/tests/data/export/h100-8x-tp2pp2dp2.plan.json")};
        QString so, se;
        QCOMPARE(run(base + QStringList {"--format", "megatron", "--out", out, "--master-port", "30000"}, &so, &se), 0);
        QVERIFY2(so.contains(QStringLiteral("launch-node0.sh")), qPrintable(so + se));
        const std::string script = readTextFile((out + QStringLiteral("/launch-node0.sh")).toStdString());
        QVERIFY(script.find("MASTER_PORT=\"${MASTER_PORT:-30000}\"") != std::string::npos);
        // Existing files: refused without --force (exit 1), accepted with it.
        QCOMPARE(run(base + QStringList {"--format", "megatron", "--out", out}, &so, &se), 1);
        QVERIFY2(se.contains(QStringLiteral("--force")), qPrintable(se));
        QCOMPARE(run(base + QStringList {"--format", "megatron", "--out", out, "--force", "--json"}, &so, &se), 0);
        const nlohmann::json j = nlohmann::json::parse(so.toStdString());
        QCOMPARE(j.at("files").size(), size_t(1));
        // A heterogeneous plan is refused for Megatron with the reasons, and nothing is written.
        const QString hetOut = tmp.path() + QStringLiteral("/het");
        const QStringList het = {QStringLiteral("export"),
                                 QStringLiteral("--cluster"),
                                 root + QStringLiteral("/sample_clusters/paper-20gpu-nvidia-amd.json"),
                                 QStringLiteral("--model"),
                                 QStringLiteral("llama2-7b"),
                                 QStringLiteral("--plan"),
                                 root + QStringLiteral("/tests/data/export/paper-20gpu-hetero.plan.json")};
        QCOMPARE(run(het + QStringList {"--format", "megatron", "--out", hetOut}, &so, &se), 1);
        QVERIFY2(se.contains(QStringLiteral("expected one device type")), qPrintable(se));
        QVERIFY(!QDir(hetOut).exists());
        QCOMPARE(run(het + QStringList {"--format", "flagscale", "--out", hetOut}, &so, &se), 0);
        QVERIFY(QFile::exists(hetOut + QStringLiteral("/hostfile")));
        // Bad format: usage error.
        QCOMPARE(run(het + QStringList {"--format", "deepspeed", "--out", hetOut}, &so, &se), 2);
    }
};

QTEST_GUILESS_MAIN(TestExport)
#include "tst_export.moc"
