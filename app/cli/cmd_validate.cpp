#include "command.h"

#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"
#include "memx/util/jsonreader.h"

#include <iostream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx validate FILE... [--cluster CLUSTER --model MODEL] [--json]

Checks MemX files (cluster, model, plan, catalogue; the kind is read from each file's "format"
field). Prints one line per problem, naming the file, the JSON pointer of the field, what was
expected and what was found. A plan is also checked against a cluster and a model when both
--cluster and --model are given.

Options:
  --cluster FILE   cluster to check plans against
  --model ID|FILE  model preset id or model file to check plans against
  --json           print the result as JSON
Exit status: 0 when every file is valid, 1 otherwise.
)";

int run(const std::vector<std::string> &argv)
{
    Args args(argv, {"cluster", "model"}, {"json"});
    if (args.positional().empty())
        throw UsageError {"expected at least one FILE"};
    std::optional<Cluster> cluster;
    std::optional<Model> model;
    if (args.value("cluster"))
        cluster = loadCluster(*args.value("cluster"));
    if (args.value("model"))
        model = resolveModel(*args.value("model"));

    nlohmann::json report = nlohmann::json::array();
    int invalid = 0;
    for (const std::string &file : args.positional()) {
        std::vector<Diagnostic> problems;
        std::string kind = "unknown", summary;
        try {
            const nlohmann::json j = readJsonFile(file);
            Diagnostics diags(file);
            const std::string format = j.is_object() && j.contains("format") && j["format"].is_string()
                ? j["format"].get<std::string>()
                : std::string();
            if (format == kClusterFormat) {
                kind = "cluster";
                Cluster c = parseCluster(j, builtinCatalogue(), diags);
                if (diags.empty())
                    summary = "cluster \"" + c.name + "\": " + std::to_string(c.totalNodes()) + " nodes, "
                        + std::to_string(c.totalGpus()) + " GPUs";
            } else if (format == kModelFormat) {
                kind = "model";
                Model m = parseModel(j, diags);
                if (diags.empty())
                    summary = "model \"" + m.name + "\": " + std::to_string(m.totalParams() / 1000000) + "M parameters";
            } else if (format == kPlanFormat) {
                kind = "plan";
                Plan p = parsePlan(j, diags);
                if (diags.empty() && cluster && model)
                    validatePlan(p, *cluster, *model, diags);
                if (diags.empty())
                    summary = "plan: " + std::to_string(p.pp()) + " stages, " + std::to_string(p.totalGpus()) + " GPUs"
                        + (cluster && model ? "" : " (structure only: give --cluster and --model)");
            } else if (format == kCatalogueFormat) {
                kind = "catalogue";
                Catalogue c = parseCatalogue(readTextFile(file), file);
                summary = "catalogue: " + std::to_string(c.devices().size()) + " devices";
            } else {
                diags.error("/format",
                            "expected \"" + std::string(kClusterFormat) + "\", \"" + kModelFormat + "\", \""
                                + kPlanFormat + "\" or \"" + kCatalogueFormat + "\", found "
                                + (j.is_object() && j.contains("format") ? describeJson(j["format"])
                                                                         : std::string("no format field")));
            }
            problems = diags.items();
        } catch (const LoadError &e) {
            problems = e.diagnostics();
        }
        if (!problems.empty())
            ++invalid;
        nlohmann::json entry {{"file", file}, {"kind", kind}, {"valid", problems.empty()}};
        nlohmann::json list = nlohmann::json::array();
        for (const Diagnostic &d : problems) {
            list.push_back({{"pointer", d.pointer}, {"message", d.message}});
            if (!args.has("json"))
                std::cout << "error: " << d.toString() << "\n";
        }
        entry["problems"] = list;
        report.push_back(entry);
        if (problems.empty() && !args.has("json"))
            std::cout << "ok: " << file << ": " << summary << "\n";
    }
    if (args.has("json"))
        std::cout << nlohmann::json {{"files", report}, {"invalid", invalid}}.dump(2) << "\n";
    return invalid == 0 ? Ok : Failure;
}

CommandRegistration reg({"validate", "check cluster, model, plan and catalogue files", kUsage, &run});

} // namespace
} // namespace memx::cli
