#pragma once
// Internal helpers shared by the export writers (not installed).

#include "memx/export/export.h"
#include "memx/export/quoting.h"
#include "memx/util/diagnostic.h"

#include <string>
#include <vector>

namespace memx::exportdetail {

/// Where one global rank runs: the plan's stage / replica / tensor-parallel rank and its GPU.
struct RankSlot {
    int stage = 0;
    int replica = 0;
    int tpRank = 0;
    std::string node;
    int gpu = 0;
};

/// One torchrun launcher: a node and the ranks it runs, in local-rank order.
struct NodeLaunch {
    std::string node;
    int nodeRank = 0;
    int device = 0; ///< index into Cluster::devices
    int firstGlobalRank = 0;
    std::vector<RankSlot> slots; ///< local rank i -> slots[i]
};

/// Recompute of a whole Megatron job.
enum class JobRecompute { None, Selective, FullUniform, FullBlock };

/// A plan reduced to what upstream Megatron-LM can express.
struct MegatronShape {
    int tp = 1, dp = 1, pp = 1, microBatch = 1, globalBatch = 0, microBatches = 0;
    bool tpPpDpOrder = false; ///< ranks follow tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping)
    int nprocPerNode = 0;
    std::vector<NodeLaunch> nodes; ///< by node rank
    int device = 0; ///< the single device type (index into Cluster::devices)
    bool bf16 = true;
    std::string precisionNote; ///< why fp16 was chosen, when it was
    JobRecompute recompute = JobRecompute::None;
    int recomputeLayers = 0; ///< FullBlock: --recompute-num-layers
    std::vector<int> stageLayers;
};

/// Fills `shape` when the plan is expressible upstream; records every reason otherwise.
bool analyseMegatron(const ExportRequest &request, MegatronShape &shape, Diagnostics &diags);

/// Megatron export: one launch-node<r>.sh per node.
std::vector<ExportFile> writeMegatron(const ExportRequest &request, const MegatronShape &shape);
/// Records every plan node that cannot be a Slurm host name / hostfile entry.
void checkSlurmHostNames(const ExportRequest &request, const MegatronShape &shape, Diagnostics &diags);
/// Slurm export: the Megatron scripts + job.sbatch + slurm-node.sh + hostfile.
std::vector<ExportFile> writeSlurm(const ExportRequest &request, const MegatronShape &shape);
/// FlagScale export; records every reason it cannot and returns nothing then.
std::vector<ExportFile> writeFlagScale(const ExportRequest &request, Diagnostics &diags);
/// True when the FlagScale export accepts the plan (checkFlagScaleExpressible finds nothing).
bool flagScaleAccepts(const ExportRequest &request);

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
