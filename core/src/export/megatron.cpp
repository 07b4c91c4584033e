// Upstream Megatron-LM export (torchrun launch script per node) and the Slurm wrapper around it.
// Flag names: ../shared/reference/launch-and-formulas.md sections 1 and 3 (see docs/export.md).
#include "exportcommon.h"

#include "memx/export/megatronargs.h"
#include "memx/util/jsonreader.h"

#include <algorithm>
#include <sstream>

namespace memx::exportdetail {
namespace {

/// A Megatron-LM argument value as one shell word (layouts contain '|' and '*').
std::string argWord(const std::string &value)
{
    for (char c : value) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.'
            || c == '-' || c == '_' || c == '/' || c == ',' || c == ':' || c == '=';
        if (!plain)
            return shellQuote(value);
    }
    return value;
}

} // namespace

namespace {

/// Megatron-LM's flattened layout of `layers` per pipeline rank (reference section 1.3); with
/// `virtualStages` v > 1 it lists the p x v virtual stages in schedule order, virtual stage
/// j x p + i holding layers[i] / v layers of rank i.
std::string layoutString(const std::vector<int> &layers, int virtualStages)
{
    std::string out = "E";
    const size_t p = layers.size();
    const int v = std::max(1, virtualStages);
    for (size_t c = 0; c < p * static_cast<size_t>(v); ++c) {
        if (c)
            out += "|";
        out += "t*" + std::to_string(layers[c % p] / v);
    }
    return out + "L";
}

/// The Megatron-LM arguments, one (flag, value) per entry (value empty for switches).
std::vector<std::pair<std::string, std::string>> megatronFlags(const ExportRequest &request, const MegatronShape &m)
{
    const Plan &plan = request.plan;
    std::vector<std::pair<std::string, std::string>> f;
    auto add = [&](std::string flag, std::string value = {}) { f.emplace_back(std::move(flag), std::move(value)); };
    add("--tensor-model-parallel-size", std::to_string(m.tp));
    add("--pipeline-model-parallel-size", std::to_string(m.pp));
    if (m.tpPpDpOrder)
        add("--use-tp-pp-dp-mapping");
    if (plan.sequenceParallel && m.tp > 1)
        add("--sequence-parallel");
    if (plan.contextParallel > 1) {
        add("--context-parallel-size", std::to_string(plan.contextParallel));
        add("--cp-comm-type", toString(plan.cpComm));
    }
    if (request.model.shape.isMoe()) {
        add("--expert-model-parallel-size", std::to_string(std::max(1, plan.expertParallel)));
        if (plan.expertTensorParallel > 0) // else Megatron-LM's default: the TP size
            add("--expert-tensor-parallel-size", std::to_string(plan.expertTensorParallel));
    }
    const bool even
        = std::all_of(m.stageLayers.begin(), m.stageLayers.end(), [&](int n) { return n == m.stageLayers.front(); });
    const int v = std::max(1, plan.virtualStages);
    if (even && v > 1) {
        add("--num-layers-per-virtual-pipeline-stage", std::to_string(m.stageLayers.front() / v));
    } else if (!even) {
        if (request.options.splitStyle == LayerSplitStyle::Layout) {
            add("--pipeline-model-parallel-layout", layoutString(m.stageLayers, v));
        } else {
            add("--decoder-first-pipeline-num-layers", std::to_string(m.stageLayers.front()));
            add("--decoder-last-pipeline-num-layers", std::to_string(m.stageLayers.back()));
        }
    }
    add("--micro-batch-size", std::to_string(m.microBatch));
    add("--global-batch-size", std::to_string(m.globalBatch));
    if (plan.distributedOptimizer)
        add("--use-distributed-optimizer");
    if (plan.fsdp != DpSharding::None) {
        // Megatron-FSDP as upstream's examples/megatron_fsdp run it; fp32 main gradients and
        // gradient reduction (what the memory and time model count).
        add("--use-megatron-fsdp");
        add("--data-parallel-sharding-strategy", toString(plan.fsdp));
        add("--ckpt-format", "fsdp_dtensor");
        add("--no-gradient-accumulation-fusion");
        add("--megatron-fsdp-main-grads-dtype", "fp32");
        add("--megatron-fsdp-grad-comm-dtype", "fp32");
    }
    if (plan.overlapGradReduce)
        add("--overlap-grad-reduce");
    if (plan.overlapParamGather)
        add("--overlap-param-gather");
    switch (m.recompute) {
    case JobRecompute::None:
        break;
    case JobRecompute::Selective:
        add("--recompute-granularity", "selective");
        break;
    case JobRecompute::FullUniform:
        add("--recompute-granularity", "full");
        add("--recompute-method", "uniform");
        add("--recompute-num-layers", "1");
        break;
    case JobRecompute::FullBlock:
        add("--recompute-granularity", "full");
        add("--recompute-method", "block");
        add("--recompute-num-layers", std::to_string(m.recomputeLayers));
        break;
    }
    for (auto &p : megatronShapeFlags(request.model))
        f.push_back(std::move(p));
    add("--optimizer", request.model.training.optimizer == Optimizer::SGD ? "sgd" : "adam");
    if (m.bf16) {
        add("--bf16");
    } else {
        add("--fp16");
        add("--initial-loss-scale", "65536");
        add("--loss-scale-window", "1000");
        add("--hysteresis", "2");
        add("--min-loss-scale", "1");
    }
    if (plan.fp8 != Fp8Format::Off) {
        // Transformer Engine's delayed scaling as NVIDIA's FP8 recipes set it
        // (examples/llama/train_llama3_8b_h100_fp8.sh; the ROCm guide's MI300 flags).
        add("--transformer-impl", "transformer_engine");
        add("--fp8-format", toString(plan.fp8));
        add("--fp8-recipe", "delayed");
        add("--fp8-amax-history-len", "1024");
        add("--fp8-amax-compute-algo", "max");
    }
    add("--attention-softmax-in-fp32");
    const GpuSpec &dev = request.cluster.devices[static_cast<size_t>(m.device)];
    if (dev.vendor == "AMD")
        add("--no-gradient-accumulation-fusion");
    add("--distributed-backend", "nccl");
    return f;
}

std::string headerLines(const ExportRequest &request, const std::string &what)
{
    std::ostringstream o;
    o << "# " << printableText(what) << "\n";
    o << "# Generated by memx " << MEMX_VERSION << " on " << printableText(exportDate(request.options))
      << " from plan \"" << printableText(request.plan.name) << "\"\n";
    o << "#   cluster \"" << printableText(request.cluster.name) << "\", model " << printableText(request.model.id)
      << "\n";
    o << "#   " << printableText(request.plan.summary(request.cluster)) << "\n";
    return o.str();
}

std::string launchScript(const ExportRequest &request, const MegatronShape &m, const NodeLaunch &n,
                         const std::vector<std::pair<std::string, std::string>> &flags)
{
    const GpuSpec &dev = request.cluster.devices[static_cast<size_t>(n.device)];
    const std::string masterAddr
        = request.options.masterAddr.empty() ? m.nodes.front().node : request.options.masterAddr;
    std::ostringstream o;
    o << "#!/usr/bin/env bash\n";
    o << headerLines(request,
                     "Megatron-LM launch script for node rank " + std::to_string(n.nodeRank) + " of "
                         + std::to_string(m.nodes.size()) + ": " + n.node + " (" + std::to_string(n.localRanks.size())
                         + " x " + dev.id + ", " + dev.vendor + ")");
    o << "#\n# Run the script of each node on that node (any order); node rank 0 hosts the rendezvous:\n";
    o << "#   MASTER_ADDR=<address of " << printableText(m.nodes.front().node)
      << "> MASTER_PORT=" << request.options.masterPort << " bash launch-node" << n.nodeRank
      << ".sh [extra Megatron-LM flags]\n";
    o << "# Set MEGATRON_DIR to the Megatron-LM checkout, DATA_ARGS / TRAIN_ARGS to replace the defaults below.\n#\n";
    o << "# Global ranks " << n.firstGlobalRank << "-" << n.firstGlobalRank + static_cast<int>(n.localRanks.size()) - 1
      << " run here (global rank = node rank x " << m.nprocPerNode << " + local rank). Megatron rank order "
      << (request.plan.contextParallel > 1 ? "tp-cp-ep-" + std::string(m.tpPpDpOrder ? "pp-dp" : "dp-pp")
                  + ": rank = tp + " + std::to_string(m.tp) + " x (cp + " + std::to_string(request.plan.contextParallel)
                  + (m.tpPpDpOrder ? " x (stage + " + std::to_string(m.pp) + " x replica))"
                                   : " x (replica + " + std::to_string(m.dp) + " x stage))")
              : m.tpPpDpOrder ? "tp-cp-ep-pp-dp: rank = tp + " + std::to_string(m.tp) + " x (stage + "
                  + std::to_string(m.pp) + " x replica)"
                              : "tp-cp-ep-dp-pp: rank = tp + " + std::to_string(m.tp) + " x (replica + "
                  + std::to_string(m.dp) + " x stage)")
      << ".\n";
    for (size_t i = 0; i < n.localRanks.size(); ++i) {
        const RankSlot &s = n.localRanks[i];
        o << "#   local rank " << i << " -> GPU " << s.gpu << ": stage " << s.stage << " (layers "
          << request.plan.stages[static_cast<size_t>(s.stage)].firstLayer << "-"
          << request.plan.stages[static_cast<size_t>(s.stage)].firstLayer
                + request.plan.stages[static_cast<size_t>(s.stage)].layerCount - 1
          << "), replica " << s.replica << ", tp rank " << s.tpRank;
        if (request.plan.contextParallel > 1)
            o << ", cp rank " << s.cpRank;
        o << "\n";
    }
    if (!m.precisionNote.empty())
        o << "# Precision: fp16 because " << m.precisionNote << ".\n";
    o << "set -euo pipefail\n\n";
    o << "NODE_NAME=" << shellQuote(n.node) << "\n";
    o << "if [ -z \"${MASTER_ADDR:-}\" ]; then MASTER_ADDR=" << shellQuote(masterAddr) << "; fi\n";
    o << "MASTER_PORT=\"${MASTER_PORT:-" << request.options.masterPort << "}\"\n";
    o << "MEGATRON_DIR=\"${MEGATRON_DIR:-.}\"\n";
    o << "if [ -z \"${DATA_ARGS:-}\" ]; then DATA_ARGS="
      << shellQuote(request.options.dataArgs.empty() ? defaultDataArgs(request.model) : request.options.dataArgs)
      << "; fi\n";
    o << "if [ -z \"${TRAIN_ARGS:-}\" ]; then TRAIN_ARGS="
      << shellQuote(request.options.trainArgs.empty() ? defaultTrainArgs() : request.options.trainArgs) << "; fi\n\n";
    if (request.plan.fsdp != DpSharding::None)
        o << "# Megatron-FSDP needs CUDA_DEVICE_MAX_CONNECTIONS unset (its communication runs on its own streams).\n"
             "unset CUDA_DEVICE_MAX_CONNECTIONS\n";
    else
        o << "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
    o << "export OMP_NUM_THREADS=\"${OMP_NUM_THREADS:-4}\"\n";
    if (dev.vendor == "AMD") {
        o << "# ROCm Megatron-LM environment (ROCm/Megatron-LM examples/llama/train_llama3.sh)\n";
        for (const auto &[k, v] : rocmEnvironment())
            o << "export " << k << "=" << v << "\n";
    }
    if (m.nodes.size() > 1)
        o << "# Multi-node: name the network interface when the default route is not the training network.\n"
             "if [ -n \"${SOCKET_IFNAME:-}\" ]; then\n"
             "    export NCCL_SOCKET_IFNAME=\"$SOCKET_IFNAME\" GLOO_SOCKET_IFNAME=\"$SOCKET_IFNAME\"\n"
             "fi\n";
    std::vector<int> gpus;
    for (const RankSlot &s : n.localRanks)
        gpus.push_back(s.gpu);
    o << "export " << visibleDevicesVariable(dev) << "=" << joinInts(gpus) << "\n\n";
    o << "MEGATRON_ARGS=(\n";
    for (const auto &[flag, value] : flags) {
        o << "    " << flag;
        if (!value.empty())
            o << " " << argWord(value);
        o << "\n";
    }
    o << ")\n\n";
    o << "echo \"memx: node rank " << n.nodeRank << " ($NODE_NAME), global ranks " << n.firstGlobalRank << "-"
      << n.firstGlobalRank + static_cast<int>(n.localRanks.size()) - 1 << ", rendezvous $MASTER_ADDR:$MASTER_PORT\"\n";
    o << "# DATA_ARGS and TRAIN_ARGS are split into words on purpose.\n";
    o << "# shellcheck disable=SC2086\n";
    o << "exec torchrun \\\n";
    o << "    --nnodes " << m.nodes.size() << " \\\n";
    o << "    --node_rank " << n.nodeRank << " \\\n";
    o << "    --nproc_per_node " << m.nprocPerNode << " \\\n";
    o << "    --rdzv_backend static \\\n";
    o << "    --master_addr \"$MASTER_ADDR\" \\\n";
    o << "    --master_port \"$MASTER_PORT\" \\\n";
    o << "    \"$MEGATRON_DIR\"/" << shellQuote(request.options.megatronEntrypoint) << " \\\n";
    o << "    \"${MEGATRON_ARGS[@]}\" $DATA_ARGS $TRAIN_ARGS \"$@\"\n";
    return o.str();
}

} // namespace

std::vector<ExportFile> writeMegatron(const ExportRequest &request, const MegatronShape &shape)
{
    const auto flags = megatronFlags(request, shape);
    std::vector<ExportFile> files;
    for (const NodeLaunch &n : shape.nodes)
        files.push_back(
            {"launch-node" + std::to_string(n.nodeRank) + ".sh", launchScript(request, shape, n, flags), true});
    return files;
}

std::vector<ExportFile> writeSlurm(const ExportRequest &request, const MegatronShape &shape)
{
    std::vector<ExportFile> files = writeMegatron(request, shape);
    const GpuSpec &dev = request.cluster.devices[static_cast<size_t>(shape.device)];
    std::string planNodes;
    for (const NodeLaunch &n : shape.nodes)
        planNodes += (planNodes.empty() ? "" : " ") + n.node;
    const std::string dir = request.options.outputDir.empty() ? "." : request.options.outputDir;

    std::ostringstream s;
    s << "#!/bin/bash\n";
    s << "#SBATCH --job-name=" << jobName(request) << "\n";
    s << "#SBATCH --nodes=" << shape.nodes.size() << "\n";
    s << "#SBATCH --ntasks-per-node=1\n";
    s << "#SBATCH --gres=gpu:" << shape.nprocPerNode << "\n";
    s << "#SBATCH --exclusive\n";
    s << "#SBATCH --output=" << jobName(request) << "-%j.out\n";
    s << "# Optional: pin the plan's nodes when they are the real Slurm host names\n";
    s << "##SBATCH --nodelist=";
    for (size_t i = 0; i < shape.nodes.size(); ++i)
        s << (i ? "," : "") << printableText(shape.nodes[i].node);
    s << "\n";
    s << headerLines(request,
                     "Slurm batch script (one torchrun launcher per node, " + std::to_string(shape.nodes.size()) + " x "
                         + std::to_string(shape.nprocPerNode) + " " + dev.id + ")");
    s << "#\n# Submit from any folder: sbatch " << printableText(dir) << "/job.sbatch\n";
    s << "# Node ranks: when every plan node below is a host of the allocation, each host runs the script of\n"
         "# its own plan node (the plan's GPU choice is kept); otherwise node rank = SLURM_NODEID.\n";
    s << "set -euo pipefail\n\n";
    s << "export MEMX_EXPORT_DIR=" << shellQuote(dir) << "\n";
    s << "export MEMX_PLAN_NODES=" << shellQuote(planNodes) << "\n";
    s << "HOSTS=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\")\n";
    s << "export MEMX_MATCH_BY_NAME=1\n";
    s << "for n in $MEMX_PLAN_NODES; do\n";
    s << "    echo \"$HOSTS\" | grep -qx \"$n\" || MEMX_MATCH_BY_NAME=0\n";
    s << "done\n";
    s << "if [ \"$MEMX_MATCH_BY_NAME\" = 1 ]; then\n";
    s << "    if [ -z \"${MASTER_ADDR:-}\" ]; then MASTER_ADDR=" << shellQuote(shape.nodes.front().node) << "; fi\n";
    s << "else\n";
    s << "    MASTER_ADDR=\"${MASTER_ADDR:-$(echo \"$HOSTS\" | head -n1)}\"\n";
    s << "fi\n";
    s << "export MASTER_ADDR\n";
    s << "export MASTER_PORT=\"${MASTER_PORT:-" << request.options.masterPort << "}\"\n\n";
    s << "srun --nodes=" << shape.nodes.size() << " --ntasks-per-node=1 --kill-on-bad-exit=1 \\\n";
    s << "    bash \"$MEMX_EXPORT_DIR/slurm-node.sh\"\n";
    files.push_back({"job.sbatch", s.str(), true});

    std::ostringstream n;
    n << "#!/usr/bin/env bash\n";
    n << "# Started once per node by job.sbatch: picks this node's rank and runs its launch-node<rank>.sh.\n";
    n << "# Generated by memx " << MEMX_VERSION << " on " << exportDate(request.options) << ".\n";
    n << "set -euo pipefail\n\n";
    n << "rank=\"\"\n";
    n << "if [ \"${MEMX_MATCH_BY_NAME:-0}\" = 1 ]; then\n";
    n << "    host=$(hostname -s)\n";
    n << "    i=0\n";
    n << "    for name in $MEMX_PLAN_NODES; do\n";
    n << "        if [ \"$name\" = \"$host\" ]; then rank=$i; fi\n";
    n << "        i=$((i + 1))\n";
    n << "    done\n";
    n << "fi\n";
    n << "rank=\"${rank:-$SLURM_NODEID}\"\n";
    n << "exec bash \"$MEMX_EXPORT_DIR/launch-node${rank}.sh\"\n";
    files.push_back({"slurm-node.sh", n.str(), true});

    std::ostringstream h;
    h << "# DeepSpeed / OpenMPI hostfile: host slots=<GPUs used>, in node-rank order\n";
    for (const NodeLaunch &nl : shape.nodes)
        h << nl.node << " slots=" << nl.localRanks.size() << "\n";
    files.push_back({"hostfile", h.str(), false});
    return files;
}

void checkSlurmHostNames(const ExportRequest &request, const MegatronShape &shape, Diagnostics &diags)
{
    Diagnostics d(planFileName(request));
    for (const NodeLaunch &n : shape.nodes)
        if (const auto why = hostNameProblem(n.node))
            d.error(jsonPointerJoin(jsonPointerJoin("/stages", static_cast<size_t>(n.localRanks.front().stage))
                                        + "/replicas",
                                    static_cast<size_t>(n.localRanks.front().replica))
                        + "/node",
                    "cannot be a Slurm host (job.sbatch matches it against scontrol show hostnames, the hostfile "
                    "lists it): "
                        + *why);
    diags.append(d);
}

} // namespace memx::exportdetail
