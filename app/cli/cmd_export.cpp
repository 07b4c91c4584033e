#include "command.h"
#include "searchoptions.h"

#include "memx/export/export.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"
#include "memx/util/jsonreader.h"

#include <filesystem>
#include <iostream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx export --cluster CLUSTER --model MODEL --plan PLAN --format FORMAT --out DIR
                   [--force] [--master-addr HOST] [--master-port N] [--split-style layout|first-last]
                   [--metrics FILE] [--predictor NAME] [--date ISO8601] [--json]

Writes launch configurations for a plan into DIR (created when missing).

Formats:
  megatron   one torchrun launch script per node for upstream Megatron-LM (launch-node<r>.sh);
             refused, with the reasons, when the plan needs per-stage TP/DP, several device
             types or per-stage recompute - use flagscale then
  flagscale  FlagScale heterogeneous experiment + train YAML (conf/) and a hostfile with type=
  slurm      the Megatron scripts plus job.sbatch (one launcher per node) and a DeepSpeed hostfile
  json       plan.json: the plan, its predicted metrics (--metrics) and provenance

Options:
  --cluster CLUSTER     cluster file
  --gpus FILE           custom GPU definitions (memx.catalogue/1, e.g. sample_gpus/) the cluster
                        may name; repeatable
  --model MODEL         model preset id (e.g. llama2-7b) or model file
  --attention A         attention backend: auto (per device: flash on Ampere/Hopper/CDNA2+,
                        unfused on V100/Turing), flash, fused or unfused (default: the model's)
  --plan PLAN           plan file (memx.plan/1)
  --out DIR             output folder; every file is written atomically
  --force               overwrite existing files (otherwise nothing is written when any exists)
  --master-addr HOST    default MASTER_ADDR in the scripts (default: the plan's first node)
  --master-port N       default MASTER_PORT (default 29500)
  --split-style S       uneven layer splits as --pipeline-model-parallel-layout ("layout", Megatron
                        core_v0.13.0+, default) or --decoder-first/last-pipeline-num-layers ("first-last")
  --metrics FILE        JSON object of predicted metrics to include in the json export
  --predictor NAME      what produced the metrics (default "analytic")
  --date ISO8601        date written into the files (default: now, UTC)
  --json                print the written files as JSON
)";

int run(const std::vector<std::string> &argv)
{
    Args args(argv,
              {"cluster", "gpus", "model", "plan", "format", "out", "master-addr", "master-port", "split-style",
               "metrics", "predictor", "date", "attention"},
              {"force", "json"});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument '" + args.positional().front() + "'"};
    const std::string formatText = args.require("format");
    const auto format = parseExportFormat(formatText);
    if (!format)
        throw UsageError {"--format expects megatron, flagscale, slurm or json, found '" + formatText + "'"};
    const std::string out = args.require("out");

    ExportRequest request;
    request.format = *format;
    request.cluster = loadClusterOption(args);
    request.model = modelOption(args);
    request.planFile = args.require("plan");
    request.plan = loadPlan(request.planFile);
    if (auto addr = args.value("master-addr"))
        request.options.masterAddr = *addr;
    if (auto port = args.intValue("master-port", 1, 65535))
        request.options.masterPort = static_cast<int>(*port);
    if (auto style = args.value("split-style")) {
        if (*style == "layout")
            request.options.splitStyle = LayerSplitStyle::Layout;
        else if (*style == "first-last")
            request.options.splitStyle = LayerSplitStyle::FirstLast;
        else
            throw UsageError {"--split-style expects layout or first-last, found '" + *style + "'"};
    }
    if (auto metrics = args.value("metrics"))
        request.metrics = readJsonFile(*metrics);
    if (auto predictor = args.value("predictor"))
        request.options.predictor = *predictor;
    if (auto date = args.value("date"))
        request.options.date = *date;
    std::error_code ec;
    const std::filesystem::path absOut = std::filesystem::absolute(out, ec);
    request.options.outputDir = ec ? out : absOut.lexically_normal().string();

    std::vector<ExportFile> files;
    try {
        files = exportPlan(request);
    } catch (const LoadError &) {
        std::cerr << "memx export: the plan cannot be exported as " << formatText << ":\n";
        throw;
    }
    const std::vector<std::string> written = writeExportFiles(files, out, args.has("force"));
    if (args.has("json")) {
        nlohmann::json j;
        j["format"] = formatText;
        j["out"] = out;
        j["files"] = written;
        std::cout << j.dump(2) << "\n";
    } else {
        std::cout << "Wrote " << written.size() << " file" << (written.size() == 1 ? "" : "s") << " (" << formatText
                  << ") to " << out << ":\n";
        for (const std::string &w : written)
            std::cout << "  " << w << "\n";
    }
    return Ok;
}

CommandRegistration reg({"export", "write launch configurations for a plan (megatron, flagscale, slurm, json)", kUsage,
                         &run});

} // namespace
} // namespace memx::cli
