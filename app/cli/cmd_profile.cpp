// memx profile import | list | coverage: the project's measured data.
#include "command.h"
#include "searchoptions.h"
#include "terminal.h"

#include "memx/io/formats.h"
#include "memx/profiling/augment.h"
#include "memx/profiling/coverage.h"
#include "memx/profiling/megatronlog.h"
#include "memx/profiling/minimalset.h"
#include "memx/profiling/profileio.h"
#include "memx/profiling/runtableimporter.h"
#include "memx/profiling/sailorimporter.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/fileio.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace memx::cli {
namespace {

constexpr const char *kDefaultProject = "memx-project.memx";

const char *kImportUsage
    = R"txt(Usage: memx profile import --format sailor|megatron|runs-csv|vtrain|csv|json [--project FILE] [OPTIONS] SOURCE...

Imports measurements into a project file (created when absent; default ./memx-project.memx).
Everything from one command goes in one transaction: if any SOURCE is bad, nothing is written.

Formats:
  sailor     SOURCE is the public Sailor dataset folder (profiles/, network/, training-configs/,
             measured-runs/): models, per-layer profiles, network fits and measured runs.
  megatron   SOURCE is a Megatron-LM training log; needs --plan, --cluster and --model.
             With --manifest M (from `memx profile plan`), SOURCE is the folder the jobs wrote
             their logs to: per-layer jobs become profiles, end-to-end jobs runs.
             Iteration time = mean of the "elapsed time per iteration (ms)" lines after skipping
             the first --skip (default 1) as warm-up; peak memory = max over ranks of
             "max allocated" (allocator peak).
  runs-csv   SOURCE is a table of measured end-to-end runs with the columns of the public
             megatron-tutorials h100_runs.csv (docs/profiles.md): one run per row, OOM rows
             kept as out-of-memory runs; rows the plan format cannot express yet (context
             parallelism, interleaved schedule) are listed as warnings, not imported.
  vtrain     SOURCE is vTrain's ground_truth_single.csv (iteration times of one A100 node,
             recompute on); --gpu overrides the device (default a100-80gb-sxm).
  csv, json  MemX profile files (docs/formats-profiles.md).

Options:
  --project FILE   project file (default ./memx-project.memx)
  --plan FILE      (megatron) the plan the log ran
  --cluster FILE   (megatron) the cluster it ran on
  --model ID|FILE  (megatron) model preset id or model file
  --manifest FILE  (megatron) manifest.json of `memx profile plan`: match logs to its jobs
  --skip N         (megatron) warm-up iteration lines to skip (default 1; with --manifest
                   each job's warm-up iterations)
  --group LABEL    (megatron) hardware group label stored with the run
  --run-id ID      (megatron, one SOURCE) run id (default: the log's file name)
  --gpu ID         (runs-csv) catalogue device the runs ran on (default h100-sxm)
  --vocab N        (runs-csv) tokenizer vocabulary (default 50257, GPT-2 BPE)
  --attention A    (runs-csv) attention backend of the runs (default auto)
  --memory-unit B  (runs-csv) bytes per unit of mem_GB_per_gpu (default 1048576000: the
                   tutorial's GB is nvidia-smi MiB / 1000)
  --json           print the summary as JSON
)txt";

const char *kListUsage = R"txt(Usage: memx profile list [--project FILE] [--json]

Lists what a project holds: models, clusters, per-layer profiles (per GPU and model: TP degrees,
micro-batch sizes, origin), measured runs per hardware group, network measurements.
)txt";

const char *kRemoveUsage = R"txt(Usage: memx profile remove [--project FILE] --run ID
       memx profile remove [--project FILE] --profile GPU/MODEL/tpN/mbN/seqN

Removes one measured run (by its id, as `profile list --json` shows it) or one per-layer profile
(by its key: GPU id, model id, TP degree, micro-batch size, sequence length, written as in the
"/profiles/..." pointer of an error message, e.g. a100-80gb-sxm/llama2-7b/tp2/mb1/seq4096).
The record is deleted without being read, so a record the project cannot read any more can be
removed too. Stored search results and predictions do not need clearing: their keys include the
profiles. Exit status 1 when there is no such record (nothing is changed).
)txt";

const char *kCoverageUsage
    = R"txt(Usage: memx profile coverage [--project FILE] [--cluster NAME|FILE] [--model ID] [--json]

For each model (and sequence length) and GPU type: which (TP, micro-batch) cells are measured (M),
simulated by the virtual testbed (S), interpolated or interpolable from measured/simulated
neighbours (I), or missing (-, the analytic cost model). The grid is the search's default TP
degrees and micro-batch sizes plus every profiled one; the rule is the workbench's Profiles dock's
(memx/profiling/coverage.h). With --cluster only the cluster's GPU types, TP up to their GPUs per
node; with --model only that model id.
)txt";

std::string projectPath(const Args &args)
{
    return args.value("project").value_or(kDefaultProject);
}

/// Progress on stderr, only when it is a terminal.
struct ProgressLine {
    std::string label;
    bool enabled = stderrIsTerminal();
    bool operator()(size_t done, size_t total) const
    {
        if (enabled && total > 0) {
            rawStderr() << "\r" << label << " " << done << "/" << total << " (" << (100 * done / total) << "%)   "
                        << std::flush;
            if (done == total)
                std::cerr << "\n";
        }
        return true;
    }
};

int runImport(const std::vector<std::string> &argv)
{
    Args args(argv,
              {"format", "project", "plan", "cluster", "model", "skip", "group", "run-id", "manifest", "gpu", "vocab",
               "attention", "memory-unit"},
              {"json"});
    const auto format = args.value("format");
    if (!format)
        throw UsageError {"--format is required (sailor, megatron, runs-csv, vtrain, csv or json)"};
    if (args.positional().empty())
        throw UsageError {"expected at least one SOURCE"};
    ImportBatch batch;
    if (*format == "sailor") {
        for (const std::string &dir : args.positional())
            batch.append(importSailor(dir, ProgressLine {"reading " + dir}));
    } else if (*format == "megatron" && args.has("manifest")) {
        const std::string mpath = args.require("manifest");
        const ProfileManifest manifest = parseManifest(readTextFile(mpath), mpath);
        const int skip = static_cast<int>(args.intValue("skip", 0, 1000000).value_or(-1));
        for (const std::string &dir : args.positional())
            batch.append(importManifestLogs(manifest, dir, skip, args.value("group").value_or(""),
                                            ProgressLine {"reading " + dir}));
    } else if (*format == "megatron") {
        if (!args.has("plan") || !args.has("cluster") || !args.has("model"))
            throw UsageError {"--format megatron needs --plan, --cluster and --model"};
        if (args.has("run-id") && args.positional().size() > 1)
            throw UsageError {"--run-id needs exactly one log"};
        const Plan plan = loadPlan(args.require("plan"));
        const Cluster cluster = loadCluster(args.require("cluster"));
        const Model model = resolveModel(args.require("model"));
        MegatronImportOptions o;
        o.skipIterations = static_cast<int>(args.intValue("skip", 0, 1000000).value_or(1));
        o.group = args.value("group").value_or("");
        o.runId = args.value("run-id").value_or("");
        o.warnings = &batch.warnings;
        for (const std::string &log : args.positional())
            batch.runs.push_back(importMegatronLog(log, plan, cluster, model, o));
        batch.clusters.push_back(cluster);
        batch.models.push_back(model);
    } else if (*format == "runs-csv" || *format == "vtrain") {
        RunTableOptions o = *format == "vtrain" ? vTrainOptions() : RunTableOptions {};
        o.gpu = args.value("gpu").value_or(o.gpu);
        o.vocab = static_cast<int>(args.intValue("vocab", 1, 1 << 24).value_or(o.vocab));
        o.attention = attentionOption(args).value_or(o.attention);
        o.memoryUnitBytes = static_cast<double>(
            args.intValue("memory-unit", 1, 1LL << 40).value_or(static_cast<long long>(o.memoryUnitBytes)));
        for (const std::string &file : args.positional())
            batch.append(*format == "vtrain" ? importVTrainTable(readTextFile(file), file, o)
                                             : importRunTable(readTextFile(file), file, o));
    } else if (*format == "csv" || *format == "json") {
        // Measured bytes the cost model would read must fit the model's shape: the project's
        // models, else the built-in presets (profiles of other models are not checked).
        const std::string project = projectPath(args);
        std::unique_ptr<SqliteStore> existing;
        if (std::filesystem::exists(project))
            existing = std::make_unique<SqliteStore>(project, false);
        auto modelOf = [&](const std::string &id) -> std::optional<Model> {
            if (existing)
                if (std::optional<Model> m = existing->model(id))
                    return m;
            for (const Model &m : builtinModels())
                if (m.id == id)
                    return m;
            return std::nullopt;
        };
        for (const std::string &file : args.positional()) {
            const std::string text = readTextFile(file);
            auto ps = *format == "csv" ? parseProfileCsv(text, file) : parseProfileJson(text, file);
            if (std::vector<Diagnostic> bad = profileShapeProblems(ps, modelOf, file); !bad.empty())
                throw LoadError(bad);
            batch.profiles.insert(batch.profiles.end(), ps.begin(), ps.end());
        }
    } else {
        throw UsageError {"unknown --format \"" + *format
                          + "\" (expected sailor, megatron, runs-csv, vtrain, csv or json)"};
    }

    const std::string project = projectPath(args);
    SqliteStore store(project, true);
    writeImport(store, batch, ProgressLine {"writing " + project});

    if (args.has("json")) {
        nlohmann::json warnings = nlohmann::json::array();
        for (const Diagnostic &w : batch.warnings)
            warnings.push_back({{"file", w.file}, {"pointer", w.pointer}, {"message", w.message}});
        std::cout << nlohmann::json {{"project", project},
                                     {"models", batch.models.size()},
                                     {"clusters", batch.clusters.size()},
                                     {"profiles", batch.profiles.size()},
                                     {"runs", batch.runs.size()},
                                     {"network", batch.network.size()},
                                     {"warnings", warnings}}
                         .dump(2)
                  << "\n";
        return Ok;
    }
    for (const Diagnostic &w : batch.warnings)
        std::cerr << "warning: " << w.toString() << "\n";
    std::cout << "Imported into " << project << ": " << batch.models.size() << " model(s), " << batch.clusters.size()
              << " cluster(s), " << batch.profiles.size() << " profile(s), " << batch.runs.size() << " run(s), "
              << batch.network.size() << " network measurement(s)";
    if (!batch.warnings.empty())
        std::cout << ", " << batch.warnings.size() << " warning(s)";
    std::cout << "\n";
    return Ok;
}

SqliteStore openExisting(const Args &args)
{
    const std::string path = projectPath(args);
    if (!std::filesystem::exists(path))
        throw LoadError(path, "", "no such project file (create one with 'memx profile import', or pass --project)");
    return SqliteStore(path, false);
}

std::string joinInts(const std::set<int> &v)
{
    std::string s;
    for (int x : v)
        s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
}

int runList(const std::vector<std::string> &argv)
{
    Args args(argv, {"project"}, {"json"});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    SqliteStore store = openExisting(args);
    const ProfileSet profiles = store.profiles();
    const auto runs = store.runs();
    const auto network = store.networkMeasurements();

    struct Group {
        std::set<int> tps, mbs, seqs;
        std::map<std::string, int> origins;
    };
    std::map<std::pair<std::string, std::string>, Group> groups;
    for (const LayerProfile &p : profiles.profiles()) {
        Group &g = groups[{p.key.model, p.key.gpu}];
        g.tps.insert(p.key.tp);
        g.mbs.insert(p.key.microBatch);
        g.seqs.insert(p.key.seqLength);
        ++g.origins[toString(p.origin)];
    }
    std::map<std::string, std::vector<const MeasuredRun *>> runGroups;
    for (const MeasuredRun &r : runs)
        runGroups[r.group].push_back(&r);

    if (args.has("json")) {
        nlohmann::json j;
        j["project"] = store.path();
        j["schemaVersion"] = store.fileSchemaVersion();
        j["models"] = store.modelIds();
        j["clusters"] = store.clusterNames();
        nlohmann::json ps = nlohmann::json::array();
        for (const LayerProfile &p : profiles.profiles())
            ps.push_back({{"gpu", p.key.gpu},
                          {"model", p.key.model},
                          {"tp", p.key.tp},
                          {"microBatch", p.key.microBatch},
                          {"seqLength", p.key.seqLength},
                          {"origin", toString(p.origin)},
                          {"layers", p.layers.size()},
                          {"source", p.source}});
        j["profiles"] = ps;
        nlohmann::json rs = nlohmann::json::array();
        for (const MeasuredRun &r : runs)
            rs.push_back(
                {{"id", r.id},
                 {"group", r.group},
                 {"model", r.modelId},
                 {"cluster", r.clusterName},
                 {"gpus", r.plan.totalGpus()},
                 {"iterationTimeMs", r.iterationTimeMs},
                 {"peakMemoryBytes", r.peakMemoryBytes ? nlohmann::json(*r.peakMemoryBytes) : nlohmann::json()},
                 {"memoryKind", toString(r.memoryKind)},
                 {"source", r.source}});
        j["runs"] = rs;
        j["networkMeasurements"] = network.size();
        std::cout << j.dump(2) << "\n";
        return Ok;
    }
    std::cout << "Project " << store.path() << " (schema " << store.fileSchemaVersion() << ")\n";
    std::cout << "  models:   ";
    for (const std::string &m : store.modelIds())
        std::cout << m << " ";
    std::cout << "\n  clusters: " << store.clusterNames().size() << "\n\n";
    std::cout << "  Profiles (" << profiles.size() << "):\n";
    std::cout << "    " << std::left << std::setw(22) << "MODEL" << std::setw(16) << "GPU" << std::setw(12) << "TP"
              << std::setw(22) << "MICRO-BATCH"
              << "ORIGIN\n";
    for (const auto &[key, g] : groups) {
        std::string origins;
        for (const auto &[o, n] : g.origins)
            origins += (origins.empty() ? "" : ", ") + std::to_string(n) + " " + o;
        std::cout << "    " << std::setw(22) << key.first << std::setw(16) << key.second << std::setw(12)
                  << joinInts(g.tps) << std::setw(22) << joinInts(g.mbs) << origins << "\n";
    }
    std::cout << "\n  Measured runs (" << runs.size() << "):\n";
    for (const auto &[group, rs] : runGroups) {
        std::set<int> gpus;
        for (const MeasuredRun *r : rs)
            gpus.insert(r->plan.totalGpus());
        std::cout << "    " << std::setw(30) << (group.empty() ? "(no group)" : group) << std::right << std::setw(4)
                  << rs.size() << " runs on " << joinInts(gpus) << " GPUs\n"
                  << std::left;
    }
    std::cout << "\n  Network measurements: " << network.size() << "\n";
    return Ok;
}

/// The cells of one model's coverage as JSON, per GPU type.
nlohmann::json coverageJson(const std::string &model, int seqLength, const std::vector<DeviceCoverage> &devices)
{
    std::set<int> tps, mbs;
    nlohmann::json gpus = nlohmann::json::object();
    for (const DeviceCoverage &c : devices) {
        tps.insert(c.tps.begin(), c.tps.end());
        mbs.insert(c.microBatches.begin(), c.microBatches.end());
        nlohmann::json cells = nlohmann::json::array();
        for (size_t t = 0; t < c.tps.size(); ++t)
            for (size_t b = 0; b < c.microBatches.size(); ++b)
                cells.push_back(
                    {{"tp", c.tps[t]}, {"microBatch", c.microBatches[b]}, {"status", toString(c.cells[t][b])}});
        gpus[c.device] = {{"measured", c.count(CoverageStatus::Measured)},
                          {"simulated", c.count(CoverageStatus::Simulated)},
                          {"interpolated", c.count(CoverageStatus::Interpolated)},
                          {"missing", c.count(CoverageStatus::Missing)},
                          {"tp", c.tps},
                          {"microBatch", c.microBatches},
                          {"cells", cells}};
    }
    return {{"model", model}, {"seqLength", seqLength}, {"tp", tps}, {"microBatch", mbs}, {"gpus", gpus}};
}

void printCoverage(const std::string &model, int seqLength, const std::vector<DeviceCoverage> &devices)
{
    std::cout << "Model " << model << ", sequence " << seqLength
              << " (M measured, S simulated by the virtual testbed, I interpolated/interpolable, - missing)\n";
    for (const DeviceCoverage &c : devices) {
        std::cout << "  " << c.device << "\n    " << std::left << std::setw(8) << "TP\\mbs";
        for (int b : c.microBatches)
            std::cout << std::setw(5) << b;
        std::cout << "\n";
        for (size_t t = 0; t < c.tps.size(); ++t) {
            std::cout << "    " << std::setw(8) << c.tps[t];
            for (CoverageStatus s : c.cells[t])
                std::cout << std::setw(5) << static_cast<char>(s);
            std::cout << "\n";
        }
    }
    std::cout << "\n";
}

int runCoverage(const std::vector<std::string> &argv)
{
    Args args(argv, {"project", "cluster", "model"}, {"json"});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    SqliteStore store = openExisting(args);
    std::optional<Cluster> cluster;
    if (auto c = args.value("cluster")) {
        cluster = store.cluster(*c);
        if (!cluster)
            cluster = loadCluster(*c);
    }
    const ProfileSet all = store.profiles();
    std::vector<std::pair<std::string, int>> models;
    for (const auto &m : profiledModels(all))
        if (!args.has("model") || m.first == *args.value("model"))
            models.push_back(m);
    if (args.has("model") && models.empty())
        throw LoadError(store.path(), "", "no profile of model \"" + *args.value("model") + "\" in the project");
    nlohmann::json out = nlohmann::json::array();
    for (const auto &[model, seq] : models) {
        CoverageQuery query;
        query.model = model;
        query.seqLength = seq;
        query.cluster = cluster ? &*cluster : nullptr;
        const std::vector<DeviceCoverage> devices = profileCoverage(all, query);
        if (args.has("json"))
            out.push_back(coverageJson(model, seq, devices));
        else
            printCoverage(model, seq, devices);
    }
    if (args.has("json"))
        std::cout << out.dump(2) << "\n";
    return Ok;
}

/// "GPU/MODEL/tpN/mbN/seqN" (the pointer SqliteStore puts in a profile record's errors).
ProfileKey parseProfileKey(const std::string &text)
{
    std::vector<std::string> parts;
    size_t at = 0;
    for (size_t slash; (slash = text.find('/', at)) != std::string::npos; at = slash + 1)
        parts.push_back(text.substr(at, slash - at));
    parts.push_back(text.substr(at));
    const auto number = [&](size_t i, const char *prefix) {
        const std::string &p = parts[i];
        const size_t n = std::strlen(prefix);
        if (p.compare(0, n, prefix) == 0 && p.size() > n && p.size() - n <= 9
            && std::all_of(p.begin() + static_cast<long>(n), p.end(), [](unsigned char c) { return std::isdigit(c); }))
            return std::stoi(p.substr(n));
        throw UsageError {"--profile \"" + text + "\": expected part " + std::to_string(i + 1) + " to be " + prefix
                          + "N, found \"" + p + "\""};
    };
    if (parts.size() != 5 || parts[0].empty() || parts[1].empty())
        throw UsageError {"--profile \"" + text + "\": expected GPU/MODEL/tpN/mbN/seqN"};
    return ProfileKey {parts[0], parts[1], number(2, "tp"), number(3, "mb"), number(4, "seq")};
}

int runRemove(const std::vector<std::string> &argv)
{
    Args args(argv, {"project", "run", "profile"}, {});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    if (args.has("run") == args.has("profile"))
        throw UsageError {"expected exactly one of --run ID or --profile GPU/MODEL/tpN/mbN/seqN"};
    std::optional<ProfileKey> key;
    if (args.has("profile"))
        key = parseProfileKey(args.require("profile"));
    SqliteStore store = openExisting(args);
    const std::string what = key ? "profile " + args.require("profile") : "run " + args.require("run");
    const bool removed = key ? store.removeProfile(*key) : store.removeRun(args.require("run"));
    if (!removed)
        throw LoadError(store.path(), key ? "/profiles" : "/runs", "no " + what + " in this project (nothing removed)");
    std::cout << "Removed " << what << " from " << store.path() << "\n";
    return Ok;
}

CommandRegistration regImport({"profile import", "import profiles and runs (Sailor data, Megatron logs, CSV/JSON)",
                               kImportUsage, &runImport});
CommandRegistration regList({"profile list", "list the measurements a project holds", kListUsage, &runList});
CommandRegistration regRemove({"profile remove", "remove one measured run or per-layer profile from a project",
                               kRemoveUsage, &runRemove});
CommandRegistration regCoverage({"profile coverage", "show measured/interpolated/missing TP x micro-batch per GPU",
                                 kCoverageUsage, &runCoverage});

} // namespace
} // namespace memx::cli
