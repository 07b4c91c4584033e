// Plan export (Megatron-LM, FlagScale, Slurm, JSON): golden files, Megatron round trip, refusals,
// FlagScale rules, atomic writing and the `memx export` command.
#include "memx/export/export.h"
#include "memx/export/megatronargs.h"
#include "memx/export/quoting.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"
#include "memx/util/hash.h"
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
    const int cp = a.contextParallel;
    const int dp = world / (a.tp * a.pp * cp);
    p.globalBatch = a.globalBatch;
    p.sequenceParallel = a.sequenceParallel;
    p.distributedOptimizer = a.distributedOptimizer;
    p.overlapGradReduce = a.overlapGradReduce;
    p.fp8 = a.fp8;
    p.fsdp = a.fsdp;
    p.overlapParamGather = a.overlapParamGather;
    p.virtualStages = a.virtualStages;
    p.contextParallel = cp;
    p.cpComm = a.cpComm;
    p.expertParallel = a.expertParallel;
    p.expertTensorParallel = a.expertTensorParallel;
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
            r.gpus.assign(static_cast<size_t>(a.tp * cp), -1);
        }
        p.stages.push_back(st);
    }
    for (const LaunchScript &s : scripts) {
        if (static_cast<int>(s.visibleDevices.size()) != s.nprocPerNode)
            problems += "node " + s.nodeName + ": visible devices do not match --nproc_per_node\n";
        for (int l = 0; l < s.nprocPerNode && l < static_cast<int>(s.visibleDevices.size()); ++l) {
            // torchrun: global rank = node rank x nproc + local rank; then Megatron's rank order.
            const int g = s.nodeRank * s.nprocPerNode + l;
            // tp fastest, then cp, then dp and pp (or pp and dp with --use-tp-pp-dp-mapping).
            const int t = g % a.tp, c = (g / a.tp) % cp, rest = g / a.tp / cp;
            const int stage = a.tpPpDpMapping ? rest % a.pp : rest / dp;
            const int d = a.tpPpDpMapping ? rest / a.pp : rest % dp;
            Replica &r = p.stages[static_cast<size_t>(stage)].replicas[static_cast<size_t>(d)];
            r.node = s.nodeName;
            r.gpus[static_cast<size_t>(c * a.tp + t)] = s.visibleDevices[static_cast<size_t>(l)];
        }
    }
    return p;
}

struct ToolRun {
    bool started = false;
    int exitCode = -1;
    std::string out, err;
};

/// Runs `program args` with `input` on stdin (nothing generated is executed: the tools only read it).
ToolRun runTool(const QString &program, const QStringList &args, const std::string &input, const QString &workDir = {})
{
    ToolRun r;
    QProcess p;
    if (!workDir.isEmpty())
        p.setWorkingDirectory(workDir);
    p.start(program, args);
    if (!p.waitForStarted())
        return r;
    r.started = true;
    p.write(QByteArray::fromStdString(input));
    p.closeWriteChannel();
    if (!p.waitForFinished(60000))
        return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput().toStdString();
    r.err = p.readAllStandardError().toStdString();
    return r;
}

/// Several YAML documents (a JSON array of strings) parsed in one run, as a JSON array.
std::optional<nlohmann::json> parseYamls(const nlohmann::json &docs, std::string &why)
{
    ToolRun r;
    for (const QString &python : {QStringLiteral("python3"), QStringLiteral("/usr/bin/python3")}) {
        r = runTool(python,
                    {QStringLiteral("-c"),
                     QStringLiteral("import sys, json, yaml\n"
                                    "json.dump([yaml.safe_load(d) for d in json.load(sys.stdin)], sys.stdout)")},
                    docs.dump());
        if (r.started && r.err.find("No module named") == std::string::npos)
            break;
    }
    if (!r.started || r.err.find("No module named") != std::string::npos) {
        why = "skip: python3 with the yaml module (python3-yaml) is not installed";
        return std::nullopt;
    }
    if (r.exitCode != 0) {
        why = "YAML does not parse: " + r.err;
        return std::nullopt;
    }
    return nlohmann::json::parse(r.out);
}

/// The YAML document parsed by a real YAML parser (PyYAML, what FlagScale's OmegaConf uses), as JSON;
/// std::nullopt when python3 with yaml is not installed (`why` starts with "skip") or it does not parse.
std::optional<nlohmann::json> parseYaml(const std::string &text, std::string &why)
{
    const auto all = parseYamls(nlohmann::json::array({text}), why);
    return all ? std::optional<nlohmann::json>(all->at(0)) : std::nullopt;
}

/// bash -n and shellcheck -S warning on a generated script; "" when both pass, "skip" when
/// shellcheck is missing.
std::string checkScript(const std::string &content)
{
    const ToolRun b = runTool(QStringLiteral("bash"), {QStringLiteral("-n")}, content);
    if (b.exitCode != 0)
        return "bash -n: " + b.err;
    const ToolRun sc = runTool(QStringLiteral("shellcheck"),
                               {QStringLiteral("-S"), QStringLiteral("warning"), QStringLiteral("-s"),
                                QStringLiteral("bash"), QStringLiteral("-")},
                               content);
    if (!sc.started)
        return "skip";
    return sc.exitCode == 0 ? std::string() : "shellcheck: " + sc.out;
}

const ExportFile *fileNamed(const std::vector<ExportFile> &files, const std::string &path)
{
    for (const ExportFile &f : files)
        if (f.path == path)
            return &f;
    return nullptr;
}

/// A script's shell structure: every single-quoted word ('...', $'...', with '\'' joins) becomes Q,
/// every comment line "#". Names may change what is inside quotes and comments, nothing else - an
/// injected $(...), `...`, ; or line break changes the skeleton.
std::vector<std::string> shellSkeleton(const std::string &script)
{
    std::vector<std::string> lines;
    std::istringstream in(script);
    for (std::string line; std::getline(in, line);) {
        const size_t first = line.find_first_not_of(' ');
        if (first != std::string::npos && line[first] == '#') {
            lines.push_back("#");
            continue;
        }
        std::string out;
        for (size_t i = 0; i < line.size();) {
            const bool ansi = line.compare(i, 2, "$'") == 0;
            if (!ansi && line[i] != '\'') {
                out += line[i++];
                continue;
            }
            i += ansi ? 2 : 1;
            while (i < line.size() && line[i] != '\'')
                i += ansi && line[i] == '\\' ? 2 : 1;
            ++i; // closing quote
            if (line.compare(i, 3, "\\''") == 0) { // '\'' continues the word: skip \', reopen
                i += 2;
                continue;
            }
            if (out.empty() || out.back() != 'Q')
                out += 'Q';
        }
        lines.push_back(out);
    }
    return lines;
}

/// Names an attacker controls: shell metacharacters, quotes, newlines, unicode, control characters.
std::vector<std::string> hostileStrings()
{
    return {"$(touch PWNED)",
            "`touch PWNED`",
            "a'b\"c\\d",
            "x; touch PWNED #",
            "line1\ntouch PWNED",
            "cr\rtouch PWNED",
            "\x1b]0;title\x07",
            "tab\there",
            "名前-ノード-ü",
            "\xc2\x85nel\xe2\x80\xa8ls",
            "${HOME}&&|<>*?[]{}!~",
            "- [x]: {y: z} # not yaml",
            "\\n not a newline",
            "del\x7f end"};
}

} // namespace

class TestExport : public QObject {
    Q_OBJECT

    /// One export of a hostile-name run: what must hold for its files.
    struct HostileExport {
        std::string label, name;
        ExportRequest request;
        std::vector<ExportFile> files;
    };

    /// Every generated script passes bash -n and shellcheck (one shellcheck run for all of them);
    /// every YAML parses to the intended values (one parser run); the hostfile has one line per
    /// host; nothing generated is executed.
    void checkHostileFiles(const std::vector<HostileExport> &exports)
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        QStringList scripts;
        nlohmann::json yamls = nlohmann::json::array();
        std::vector<std::pair<const HostileExport *, const ExportFile *>> yamlOf;
        for (const HostileExport &x : exports)
            for (const ExportFile &f : x.files) {
                if (f.executable) {
                    const ToolRun b = runTool(QStringLiteral("bash"), {QStringLiteral("-n")}, f.content);
                    QVERIFY2(b.exitCode == 0, (x.label + ": " + f.path + ": bash -n: " + b.err).c_str());
                    const QString path = tmp.path() + QStringLiteral("/s%1.sh").arg(scripts.size());
                    writeFileAtomically(path.toStdString(), f.content);
                    scripts << path;
                    Diagnostics d;
                    const LaunchScript s = parseLaunchScript(f.content, d);
                    if (f.path.rfind("launch-node", 0) == 0 && x.name.find_first_of("\n\r") == std::string::npos)
                        QVERIFY2(d.empty() && s.nprocPerNode == 8, (x.label + ": " + f.path).c_str());
                }
                if (f.path == "hostfile")
                    QCOMPARE(std::count(f.content.begin(), f.content.end(), '\n'),
                             std::ptrdiff_t(1 + x.request.cluster.totalNodes()));
                if (f.path.size() > 5 && f.path.substr(f.path.size() - 5) == ".yaml") {
                    yamls.push_back(f.content);
                    yamlOf.emplace_back(&x, &f);
                }
                if (f.path == "plan.json") {
                    const nlohmann::json j = nlohmann::json::parse(f.content);
                    QCOMPARE(j.at("name").get<std::string>(), x.request.plan.name);
                    QCOMPARE(j.at("provenance").at("cluster").get<std::string>(), x.request.cluster.name);
                }
            }
        if (!scripts.isEmpty()) {
            const ToolRun sc = runTool(QStringLiteral("shellcheck"),
                                       QStringList {QStringLiteral("-S"), QStringLiteral("warning")} + scripts, {});
            if (!sc.started)
                QSKIP("shellcheck is not installed");
            QVERIFY2(sc.exitCode == 0, ("shellcheck: " + sc.out).c_str());
        }
        if (yamls.empty())
            return;
        std::string why;
        const auto parsed = parseYamls(yamls, why);
        if (!parsed && why.rfind("skip", 0) == 0)
            QSKIP(why.c_str());
        QVERIFY2(parsed && parsed->size() == yamls.size(), why.c_str());
        for (size_t i = 0; i < yamlOf.size(); ++i) {
            const HostileExport &x = *yamlOf[i].first;
            const nlohmann::json &y = (*parsed)[i];
            const std::string where = x.label + ": " + yamlOf[i].second->path;
            QVERIFY2(y.is_object(), (where + ": " + y.dump()).c_str());
            if (yamlOf[i].second->path != "conf/memx.yaml") {
                QVERIFY2(y.size() == 3, where.c_str()); // system, model, data: no key injected
                continue;
            }
            QVERIFY2(y.size() == 4, where.c_str()); // defaults, experiment, action, hydra
            const nlohmann::json &e = y.at("experiment");
            const ExportOptions &o = x.request.options;
            QCOMPARE(e.at("runner").at("master_addr").get<std::string>(),
                     o.masterAddr.empty() ? std::string("a100-0") : o.masterAddr);
            QCOMPARE(e.at("runner").at("hostfile").get<std::string>(), o.outputDir + "/hostfile");
            QCOMPARE(e.at("task").at("entrypoint").get<std::string>(), o.flagscaleEntrypoint);
        }
    }

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
        // Every generated shell script is valid bash (bash -n parses without running) and shellcheck-clean.
        for (const ExportFile &f : files) {
            if (!f.executable)
                continue;
            const std::string problem = checkScript(f.content);
            if (problem == "skip")
                qWarning("shellcheck is not installed: only bash -n was run");
            else
                QVERIFY2(problem.empty(), (f.path + ": " + problem).c_str());
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
                // An uneven interleaved split has no first-last form (refused, tested below).
                ExportRequest r = requestFor(c, ExportFormat::Megatron);
                r.options.splitStyle = LayerSplitStyle::FirstLast;
                if (refusal(r).empty())
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
        // p x v virtual stages: stage j x p + i is rank i's chunk j.
        QTest::newRow("virtual stages") << "Et*3|t*2|t*4|t*3L" << 2 << "7,5";
        QTest::newRow("not p x v stages") << "Et*3|t*3|t*3|t*3L" << 3 << "error";
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
        QTest::newRow("heterogeneous sample: vendors") << "paper-20gpu-hetero"
                                                       << ""
                                                       << "/stages: expected GPUs of one vendor for the whole job";
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
        QTest::newRow("FlagScale refuses it too") << "paper-20gpu-hetero"
                                                  << ""
                                                  << "the FlagScale export (--format flagscale) refuses this plan too";
        QTest::newRow("points to FlagScale") << "a100-h100-hetero"
                                             << ""
                                             << "use the FlagScale export (--format flagscale), which supports it";
        QTest::newRow("per-stage block counts") << "h100-8x-tp2pp2dp2"
                                                << "block 3 and 5"
                                                << "/stages/1/recompute/layers: expected 5 recomputed layers";
        QTest::newRow("block counts per model chunk") << "h100-6x-tp2pp3-vpp2-block"
                                                      << "block 5 on stage 1"
                                                      << "/stages/1/recompute/layers: expected 6 recomputed layers "
                                                         "(upstream Megatron-LM's \"--recompute-method block 3\" "
                                                         "recomputes the first 3 layers of every model chunk, 2 per "
                                                         "stage), found 5";
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
        QTest::newRow("uneven interleaved in first-last style") << "h100-6x-tp2pp3-vpp2-uneven"
                                                                << "first-last"
                                                                << "/virtualStages: expected 1 with an uneven split in "
                                                                   "the first-last style";
        QTest::newRow("context parallelism needs flash/fused attention")
            << "h100-8x-tp2cp2dp2-a2a"
            << "unfused"
            << "/contextParallel: expected 1 with unfused attention on h100-sxm (Megatron-LM's context parallelism "
               "runs inside flash/fused attention), found 2";
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
        } else if (m == "block 5 on stage 1") {
            r.plan.stages[1].recompute = {RecomputeMethod::Full, 5};
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
        } else if (m == "first-last") {
            r.options.splitStyle = LayerSplitStyle::FirstLast;
        } else if (m == "unfused") {
            r.model.training.attention = AttentionBackend::Unfused;
        } else if (m == "gaudi2") {
            r.cluster.devices[0] = *builtinCatalogue().find("gaudi2");
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
        // a100-h100-hetero by hand: stages 0+1 on the two A100 nodes (TP4 DP1) form mesh 0 with pp 2,
        // the H100 stage is TP2 DP2: meshes [4,1,1,1,2, 2,1,1,2,1], split [10,8,14], world 4*2 + 2*2 = 12.
        // MBS = 2 (mesh 0); mesh 1 runs dp_0*MBS/dp_1 = 2/2 = 1 = the plan's micro-batch.
        // m = 64 / 2 = 32 micro-batches: per-stage recompute [1, 32, flag].
        ExportRequest r = requestFor(caseNamed("a100-h100-hetero"), ExportFormat::FlagScale);
        const std::vector<ExportFile> files = exportPlan(r);
        QCOMPARE(files.size(), size_t(3));
        const std::string &train = files[1].content;
        auto has = [&](const std::string &s) {
            QVERIFY2(train.find(s) != std::string::npos, ("train YAML lacks: " + s).c_str());
        };
        has("hetero_process_meshes: [4, 1, 1, 1, 2, 2, 1, 1, 2, 1]");
        has("hetero_pipeline_layer_split: [10, 8, 14]");
        has("hetero_device_types: [\"a100-40gb-sxm\", \"h100-sxm\"]");
        has("micro_batch_size: 2");
        has("hetero_use_cpu_communication: false"); // one vendor: NCCL everywhere
        has("recompute_granularity_per_stage_micro_batch:\n      - [1, 32, 1]\n      - [1, 32, 1]\n      - [1, 32, "
            "0]\n");
        has("recompute_method_per_stage_micro_batch:\n      - [1, 32, 0]\n      - [1, 32, 1]\n      - [1, 32, 0]\n");
        has("recompute_num_layers_per_stage_micro_batch:\n      - [1, 32, 1]\n      - [1, 32, 4]\n      - [1, 32, "
            "0]\n");
    }

    void quotingRoundTrips()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        std::vector<std::string> names = hostileStrings();
        names.push_back("");
        names.push_back("plain-name_1.2");
        for (const std::string &n : names) {
            // bash reads the quoted word back as exactly the name; printf only prints its argument.
            const ToolRun b = runTool(QStringLiteral("bash"), {}, "printf '%s' " + shellQuote(n) + "\n", tmp.path());
            QVERIFY2(b.exitCode == 0, b.err.c_str());
            QCOMPARE(b.out, n);
            const std::string p = printableText(n);
            for (unsigned char c : p)
                QVERIFY2(c >= 0x20 && c != 0x7f, ("control character left in " + p).c_str());
            for (const char *lineBreak : {"\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9"}) // YAML line breaks
                QVERIFY(p.find(lineBreak) == std::string::npos);
        }
        QCOMPARE(QDir(tmp.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries), QStringList());
        QCOMPARE(printableText("a\nb\x1b[31m\\"), std::string("a\\nb\\e[31m\\\\"));
        QCOMPARE(printableText("a\\nb\x01", false), std::string("a\\nb\\x01"));
        QCOMPARE(printableText("\xff"), std::string("\\xff"));
        // YAML: every name parses back to itself inside a mapping and a flow sequence.
        std::string doc = "values:\n";
        for (const std::string &n : names)
            doc += "  - " + yamlQuote(n) + "\n";
        doc += "flow: [" + yamlQuote(names[0]) + ", " + yamlQuote(names[2]) + "]\n";
        std::string why;
        const auto j = parseYaml(doc, why);
        if (!j && why.rfind("skip", 0) == 0)
            QSKIP(why.c_str());
        QVERIFY2(j, (why + "\n" + doc).c_str());
        QCOMPARE(j->at("values").size(), names.size());
        for (size_t i = 0; i < names.size(); ++i)
            QCOMPARE(j->at("values")[i].get<std::string>(), names[i]);
        QCOMPARE(j->at("flow")[1].get<std::string>(), names[2]);
        // Host names: what a hostfile line and ssh accept.
        QVERIFY(!hostNameProblem("node-01.example.org"));
        QVERIFY(!hostNameProblem("10.0.0.1"));
        QVERIFY(!hostNameProblem("fe80::1"));
        for (const char *bad : {"", "a b", "a\nb", "-oProxyCommand=x", "#x", "a#b", "$(x)", "名前"})
            QVERIFY2(hostNameProblem(bad), bad);
    }

    void flagscaleStarts()
    {
        // What FlagScale's runner needs to start (flagscale/runner/runner_train.py): a *_VISIBLE_DEVICES
        // per host (it counts them for nproc_per_node) and checkpoint.save_interval (it always adds --save).
        ExportRequest r = requestFor(caseNamed("a100-h100-hetero"), ExportFormat::FlagScale);
        const std::vector<ExportFile> files = exportPlan(r);
        std::string why;
        const auto exp = parseYaml(fileNamed(files, "conf/memx.yaml")->content, why);
        if (!exp && why.rfind("skip", 0) == 0)
            QSKIP(why.c_str());
        QVERIFY2(exp, why.c_str());
        const auto train = parseYaml(fileNamed(files, "conf/train/memx.yaml")->content, why);
        QVERIFY2(train, why.c_str());
        const nlohmann::json &envs = exp->at("experiment").at("envs");
        const std::map<std::string, std::string> want {
            {"a100-0", "0,1,2,3"}, {"a100-1", "0,1,2,3"}, {"h100", "2,3,0,1"}};
        QCOMPARE(envs.at("node_specific").size(), want.size());
        for (const auto &[host, gpus] : want)
            QCOMPARE(envs.at("node_specific").at(host).at("CUDA_VISIBLE_DEVICES").get<std::string>(), gpus);
        // Hostfile hosts = node_specific hosts, in rank order, slots = visible devices.
        QCOMPARE(fileNamed(files, "hostfile")->content,
                 std::string("# ip slots type=xxx  (FlagScale hostfile; order = node rank = rank order)\n"
                             "a100-0 slots=4 type=a100-40gb-sxm\na100-1 slots=4 type=a100-40gb-sxm\n"
                             "h100 slots=4 type=h100-sxm\n"));
        QCOMPARE(exp->at("experiment").at("runner").at("nproc_per_node").get<int>(), 4);
        QCOMPARE(exp->at("experiment").at("runner").at("master_addr").get<std::string>(), std::string("a100-0"));
        QCOMPARE(exp->at("experiment").at("runner").at("hostfile").get<std::string>(), cases().outputDir + "/hostfile");
        const nlohmann::json &sys = train->at("system");
        QCOMPARE(sys.at("checkpoint").at("save_interval").get<int>(), train->at("model").at("train_iters").get<int>());
        QCOMPARE(train->at("model").at("rotary_base").get<int>(), 500000); // llama3-8b
        QCOMPARE(train->at("model").at("position_embedding_type").get<std::string>(), std::string("rope"));
        QCOMPARE(sys.at("hetero").at("hetero_use_cpu_communication").get<bool>(), false); // NVIDIA only
        QVERIFY(sys.at("hetero").at("hetero_device_types") == nlohmann::json({"a100-40gb-sxm", "h100-sxm"}));
        // The Megatron refusal of this plan points to FlagScale, which accepts it.
        r.format = ExportFormat::Megatron;
        QVERIFY2(refusal(r).find("use the FlagScale export (--format flagscale), which supports it")
                     != std::string::npos,
                 refusal(r).c_str());
    }

    void flagscaleOtherVendors()
    {
        // NVIDIA + Ascend: per-vendor visible-devices variable, gloo between the vendors.
        ExportRequest r = requestFor(caseNamed("a100-h100-hetero"), ExportFormat::FlagScale);
        r.cluster.devices[1] = *builtinCatalogue().find("ascend-910b");
        r.cluster.groups[1].gpu = "ascend-910b";
        std::string why = refusal(r);
        QVERIFY2(why.empty(), why.c_str());
        const std::vector<ExportFile> files = exportPlan(r);
        const auto exp = parseYaml(files[0].content, why);
        if (!exp && why.rfind("skip", 0) == 0)
            QSKIP(why.c_str());
        QVERIFY2(exp, why.c_str());
        const nlohmann::json &ns = exp->at("experiment").at("envs").at("node_specific");
        QCOMPARE(ns.at("h100").at("ASCEND_RT_VISIBLE_DEVICES").get<std::string>(), std::string("2,3,0,1"));
        QVERIFY(!ns.at("h100").contains("CUDA_VISIBLE_DEVICES"));
        QCOMPARE(ns.at("a100-0").at("CUDA_VISIBLE_DEVICES").get<std::string>(), std::string("0,1,2,3"));
        QVERIFY(files[1].content.find("hetero_use_cpu_communication: true") != std::string::npos);
        QVERIFY(files[2].content.find("h100 slots=4 type=ascend-910b\n") != std::string::npos);
        // NVIDIA + AMD (the 20-GPU sample) and AMD alone: upstream FlagScale has no ROCm adaptation.
        for (const char *c : {"paper-20gpu-hetero", "mi250x-tp2pp2dp2-firstlast"}) {
            why = refusal(requestFor(caseNamed(c), ExportFormat::FlagScale));
            QVERIFY2(why.find("FlagScale has no AMD/ROCm adaptation") != std::string::npos, why.c_str());
        }
        // ...and the Megatron refusal of the mixed plan does not send the user to FlagScale.
        why = refusal(requestFor(caseNamed("paper-20gpu-hetero"), ExportFormat::Megatron));
        QVERIFY(why.find("which supports it") == std::string::npos);
        QVERIFY2(why.find("the FlagScale export (--format flagscale) refuses this plan too") != std::string::npos,
                 why.c_str());
    }

    void rotaryBase()
    {
        // --rotary-base for RoPE models: Llama-2 10000 (Megatron's default, written anyway), Llama-3 500000.
        for (const auto &[model, base] : {std::pair {"llama2-7b", "10000"}, std::pair {"llama3-8b", "500000"}}) {
            ExportRequest r = requestFor(caseNamed("h100-8x-tp2pp2dp2"), ExportFormat::Megatron);
            r.model = resolveModel(model);
            Diagnostics d;
            const LaunchScript s = parseLaunchScript(exportPlan(r).front().content, d);
            QVERIFY(d.empty());
            const auto &a = s.megatronArgs;
            const auto it = std::find(a.begin(), a.end(), "--rotary-base");
            QVERIFY2(it != a.end() && it + 1 != a.end(), model);
            QCOMPARE(*(it + 1), std::string(base));
            QVERIFY(std::find(a.begin(), a.end(), "rope") != a.end());
        }
        // The model file field: optional, > 0, written only when it is not the default.
        Diagnostics d("m.json");
        nlohmann::json j = toJson(resolveModel("llama3-8b"));
        QCOMPARE(j.at("shape").at("rotaryBase").get<int>(), 500000);
        QVERIFY(!toJson(resolveModel("llama2-7b")).at("shape").contains("rotaryBase"));
        QCOMPARE(parseModel(j, d).shape.rotaryBase, 500000);
        j["shape"]["rotaryBase"] = 0;
        parseModel(j, d);
        QVERIFY(d.size() == 1 && d.items()[0].pointer == "/shape/rotaryBase");
    }

    void hostileNames_data()
    {
        QTest::addColumn<QString>("format");
        QTest::addColumn<QString>("field");
        for (const char *f : {"megatron", "slurm", "flagscale", "json"})
            for (const char *field : {"plan", "cluster", "model", "node", "masterAddr", "outputDir", "entrypoint"})
                QTest::newRow((std::string(f) + "/" + field).c_str()) << QString(f) << QString(field);
    }

    void hostileNames()
    {
        QFETCH(QString, format);
        QFETCH(QString, field);
        const ExportFormat fmt = *parseExportFormat(format.toStdString());
        const std::string fld = field.toStdString();
        const bool hetero = fmt == ExportFormat::FlagScale;
        std::vector<HostileExport> exports;
        const auto withName = [&](const std::string &name) {
            ExportRequest r = requestFor(caseNamed(hetero ? "a100-h100-hetero" : "h100-8x-tp2pp2dp2"), fmt);
            const std::string node = hetero ? "h100" : "dgx-h100"; // a group of one node
            if (fld == "plan")
                r.plan.name = name;
            else if (fld == "cluster")
                r.cluster.name = name;
            else if (fld == "model")
                r.model.id = r.model.name = name;
            else if (fld == "masterAddr")
                r.options.masterAddr = name;
            else if (fld == "outputDir")
                r.options.outputDir = "/opt/" + name;
            else if (fld == "entrypoint")
                r.options.megatronEntrypoint = r.options.flagscaleEntrypoint = name;
            else if (fld == "node") {
                for (NodeGroup &g : r.cluster.groups)
                    if (g.name == node)
                        g.name = name;
                for (Stage &s : r.plan.stages)
                    for (Replica &x : s.replicas)
                        if (x.node == node)
                            x.node = name;
            }
            return r;
        };
        // The same export with a harmless name: hostile scripts must have its shell structure exactly.
        const std::vector<ExportFile> benign = exportPlan(withName("benign"));
        for (const std::string &name : hostileStrings()) {
            const ExportRequest r = withName(name);
            const std::string label = fld + " = \"" + printableText(name) + "\"";
            const std::string why = refusal(r);
            if (fld == "node" && (fmt == ExportFormat::Slurm || fmt == ExportFormat::FlagScale)) {
                // Host names go into hostfiles and ssh/Slurm host lists: refused with the reason.
                QVERIFY2(why.find("/node: cannot be a") != std::string::npos, (label + ": " + why).c_str());
                for (unsigned char c : why)
                    QVERIFY2(c >= 0x20 || c == '\n', (label + ": raw control character in " + why).c_str());
                continue;
            }
            QVERIFY2(why.empty(), (label + ": " + why).c_str());
            exports.push_back({label, name, r, exportPlan(r)});
            for (const ExportFile &f : exports.back().files) {
                const ExportFile *b = fileNamed(benign, f.path);
                QVERIFY2(b, (label + ": unexpected file " + f.path).c_str());
                if (f.executable)
                    QVERIFY2(shellSkeleton(f.content) == shellSkeleton(b->content),
                             (label + ": " + f.path
                              + ": the name changed the shell structure (not only quoted "
                                "words and comments):\n"
                              + f.content)
                                 .c_str());
            }
        }
        checkHostileFiles(exports);
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
                                 root + QStringLiteral("/tests/data/export/a100-h100.cluster.json"),
                                 QStringLiteral("--model"),
                                 QStringLiteral("llama3-8b"),
                                 QStringLiteral("--plan"),
                                 root + QStringLiteral("/tests/data/export/a100-h100-hetero.plan.json")};
        QCOMPARE(run(het + QStringList {"--format", "megatron", "--out", hetOut}, &so, &se), 1);
        QVERIFY2(se.contains(QStringLiteral("expected 1 replica like stage 0")), qPrintable(se));
        QVERIFY(!QDir(hetOut).exists());
        QCOMPARE(run(het + QStringList {"--format", "flagscale", "--out", hetOut}, &so, &se), 0);
        QVERIFY(QFile::exists(hetOut + QStringLiteral("/hostfile")));
        // Names with terminal control sequences are printed escaped (no raw ESC/BEL reaches the terminal).
        nlohmann::json hostile = readJsonFile(kData + "/a100-h100-hetero.plan.json");
        hostile["name"] = "\x1b]0;pwned\x07";
        hostile["stages"][2]["replicas"][0]["node"] = "h100\x1b[2J\r";
        const QString hostilePlan = tmp.path() + QStringLiteral("/hostile.plan.json");
        writeFileAtomically(hostilePlan.toStdString(), hostile.dump());
        QStringList hostileArgs = het;
        hostileArgs.last() = hostilePlan;
        QCOMPARE(run(hostileArgs + QStringList {"--format", "flagscale", "--out", hetOut + "2"}, &so, &se), 1);
        QVERIFY2(se.contains(QStringLiteral("h100\\e[2J\\r")), qPrintable(se));
        QVERIFY(!se.contains(QChar(0x1b)) && !se.contains(QChar('\r')) && !se.contains(QChar(0x07)));
        // Bad format: usage error.
        QCOMPARE(run(het + QStringList {"--format", "deepspeed", "--out", hetOut}, &so, &se), 2);
    }
};

QTEST_GUILESS_MAIN(TestExport)
#include "tst_export.moc"
