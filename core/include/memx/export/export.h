#pragma once

#include "memx/cluster/cluster.h"
#include "memx/export/launchtarget.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace memx {

class Diagnostics;

/// What a plan is exported to.
enum class ExportFormat {
    Megatron, ///< one torchrun launch script per node running upstream Megatron-LM
    FlagScale, ///< FlagScale heterogeneous experiment + train YAML and a hostfile with type=
    Slurm, ///< the Megatron scripts plus an sbatch script and a DeepSpeed-style hostfile
    Json, ///< the plan with its predicted metrics and provenance
};

const char *toString(ExportFormat format);
/// "megatron", "flagscale", "slurm" or "json"; std::nullopt otherwise.
std::optional<ExportFormat> parseExportFormat(const std::string &text);

/// Knobs of an export. Defaults give scripts that run as they are with mock data.
struct ExportOptions {
    std::string masterAddr; ///< default MASTER_ADDR; empty: the plan's node of node rank 0
    int masterPort = 29500; ///< default MASTER_PORT
    LayerSplitStyle splitStyle = LayerSplitStyle::Layout;
    std::string megatronEntrypoint = "pretrain_gpt.py"; ///< Megatron-LM training script on the nodes
    std::string flagscaleEntrypoint = "./flagscale/train/train_gpt.py"; ///< FlagScale task entrypoint
    /// Data/tokenizer arguments (Megatron) - empty: mock data with a NullTokenizer of the model's vocabulary.
    std::string dataArgs;
    /// Training-length / learning-rate arguments (Megatron) - empty: a short default run.
    std::string trainArgs;
    /// Folder the exported files will live in on the nodes (FlagScale hostfile path, sbatch script
    /// location). Not used to write files.
    std::string outputDir = ".";
    std::string jobName; ///< empty: "memx-" + the plan's name
    std::string predictor = "analytic"; ///< name of what produced the metrics (JSON provenance)
    std::string date; ///< ISO 8601 UTC written in headers/provenance; empty: now
};

/// Everything an export needs: value types only.
struct ExportRequest {
    Plan plan;
    Cluster cluster;
    Model model;
    ExportFormat format = ExportFormat::Megatron;
    ExportOptions options;
    /// Predicted metrics (a JSON object from the cost model / predictor), written by the JSON export.
    std::optional<nlohmann::json> metrics;
    /// Name of the plan file, used in error messages ("plan" when empty).
    std::string planFile;
};

/// One generated file.
struct ExportFile {
    std::string path; ///< relative to the output folder, '/'-separated
    std::string content;
    bool executable = false;

    bool operator==(const ExportFile &) const = default;
};

/// Generates the files of `request.format`. Throws LoadError listing every reason when the plan is
/// invalid for the cluster/model or cannot be expressed in the format (each with the JSON pointer
/// of the plan field concerned).
std::vector<ExportFile> exportPlan(const ExportRequest &request);

/// Records in `diags` every reason the plan cannot run on upstream Megatron-LM (nothing when it can):
/// analyseMegatron (memx/export/launchtarget.h) with the request's split style.
void checkMegatronExpressible(const ExportRequest &request, Diagnostics &diags);
/// Records in `diags` every reason the plan cannot run as a FlagScale heterogeneous job
/// (analyseFlagScale).
void checkFlagScaleExpressible(const ExportRequest &request, Diagnostics &diags);

/// Writes `files` into `dir` (created when missing). Checks every file first: when any target
/// exists (and `force` is false), is a directory, or has an unsafe path, nothing at all is written
/// and LoadError lists every such file. Each file is written atomically (temporary + rename);
/// executable files get mode 0755. Returns the full paths written, in order.
std::vector<std::string> writeExportFiles(const std::vector<ExportFile> &files, const std::string &dir, bool force);

/// The current time as ISO 8601 UTC ("2025-01-31T12:00:00Z").
std::string currentUtcIso8601();

} // namespace memx
