#pragma once
// Internal helpers shared by the export writers (not installed).

#include "memx/export/export.h"
#include "memx/export/launchtarget.h"
#include "memx/export/quoting.h"
#include "memx/util/diagnostic.h"

#include <string>
#include <vector>

namespace memx::exportdetail {

/// Megatron export: one launch-node<r>.sh per node.
std::vector<ExportFile> writeMegatron(const ExportRequest &request, const MegatronShape &shape);
/// Records every plan node that cannot be a Slurm host name / hostfile entry.
void checkSlurmHostNames(const ExportRequest &request, const MegatronShape &shape, Diagnostics &diags);
/// Slurm export: the Megatron scripts + job.sbatch + slurm-node.sh + hostfile.
std::vector<ExportFile> writeSlurm(const ExportRequest &request, const MegatronShape &shape);
/// FlagScale export of a plan analyseFlagScale accepted: experiment YAML, train YAML, hostfile.
std::vector<ExportFile> writeFlagScale(const ExportRequest &request, const FlagScaleShape &shape);

/// The file name used in diagnostics.
std::string planFileName(const ExportRequest &request);
/// The date written into generated files (options.date or now).
std::string exportDate(const ExportOptions &options);
/// Letters, digits, "-", "_" and "." kept, runs of other characters become one "-", at most 48 characters; "plan" when
/// empty.
std::string safeName(const std::string &text);
/// Job name: options.jobName or "memx-" + safeName(plan name).
std::string jobName(const ExportRequest &request);
/// bf16 when the model asks for it and every device of the plan supports it; else fp16 and a reason.
bool chooseBf16(const ExportRequest &request, std::string &note);
/// Default data / training arguments of the Megatron command line.
std::string defaultDataArgs(const Model &model);
std::string defaultTrainArgs();
/// Model-shape flags of Megatron-LM (reference section 1.7), as (flag, value) pairs; value empty for switches.
std::vector<std::pair<std::string, std::string>> megatronShapeFlags(const Model &model);
/// Device of a plan node (index into Cluster::devices), -1 when unknown.
int deviceOfNode(const Cluster &cluster, const std::string &node);
/// Environment for ROCm Megatron-LM nodes (reference section 3.4), as (name, value) pairs.
std::vector<std::pair<std::string, std::string>> rocmEnvironment();
/// CUDA_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES, by vendor.
std::string visibleDevicesVariable(const GpuSpec &device);
/// "0,1,2"
std::string joinInts(const std::vector<int> &values, const char *sep = ",");

} // namespace memx::exportdetail
