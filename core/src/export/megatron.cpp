// Upstream Megatron-LM export (torchrun launch script per node) and the Slurm wrapper around it.
// Flag names: ../shared/reference/launch-and-formulas.md sections 1 and 3 (see docs/export.md).
#include "exportcommon.h"

#include "memx/export/megatronargs.h"
#include "memx/util/jsonreader.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace memx::exportdetail {
namespace {

/// Marks where a refusal may point to FlagScale; replaced by finishHints once it is known whether
/// the FlagScale export accepts the plan (so the hint is never false).
const char *kFlagScaleHint = "\x01";

void finishHints(const ExportRequest &request, const Diagnostics &d, Diagnostics &diags)
{
    const std::string hint = flagScaleAccepts(request)
        ? " - use the FlagScale export (--format flagscale), which supports it"
        : " - the FlagScale export (--format flagscale) refuses this plan too";
    Diagnostics out(d.file());
    for (const Diagnostic &x : d.items()) {
        std::string m = x.message;
        const size_t at = m.find(kFlagScaleHint);
        if (at != std::string::npos)
            m.replace(at, 1, hint);
        out.error(x.pointer, m);
    }
    diags.append(out);
}

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

std::string stageList(const std::vector<int> &stages)
{
    std::string out = stages.size() == 1 ? "stage " : "stages ";
    for (size_t i = 0; i < stages.size(); ++i)
        out += (i ? ", " : "") + std::to_string(stages[i]);
    return out;
}

/// Global rank -> slot for one rank order. `tpPpDp`: rank = t + TP*(s + PP*d), else t + TP*(d + DP*s).
std::vector<RankSlot> rankSlots(const Plan &plan, int tp, int dp, bool tpPpDp)
{
    const int pp = plan.pp();
    std::vector<RankSlot> slots(static_cast<size_t>(tp * dp * pp));
    for (int s = 0; s < pp; ++s)
        for (int d = 0; d < dp; ++d)
            for (int t = 0; t < tp; ++t) {
                const Replica &r = plan.stages[static_cast<size_t>(s)].replicas[static_cast<size_t>(d)];
                const int rank = tpPpDp ? t + tp * (s + pp * d) : t + tp * (d + dp * s);
                slots[static_cast<size_t>(rank)] = {s, d, t, r.node, r.gpus[static_cast<size_t>(t)]};
            }
    return slots;
}

/// Cuts the rank sequence into torchrun nodes of `nproc` ranks each; empty `why` on success.
std::vector<NodeLaunch> cutIntoNodes(const Cluster &cluster, const std::vector<RankSlot> &slots, int nproc,
                                     std::string &why)
{
    std::vector<NodeLaunch> nodes;
    std::set<std::string> seen;
    for (size_t first = 0; first < slots.size(); first += static_cast<size_t>(nproc)) {
        NodeLaunch n;
        n.node = slots[first].node;
        n.nodeRank = static_cast<int>(nodes.size());
        n.device = deviceOfNode(cluster, n.node);
        n.firstGlobalRank = static_cast<int>(first);
        for (size_t i = first; i < first + static_cast<size_t>(nproc) && i < slots.size(); ++i) {
            if (slots[i].node != n.node) {
                why = "global ranks " + std::to_string(first) + "-" + std::to_string(first + nproc - 1) + " (node rank "
                    + std::to_string(n.nodeRank) + ") would have to run on both '" + n.node + "' and '" + slots[i].node
                    + "'";
                return {};
            }
            n.slots.push_back(slots[i]);
        }
        if (!seen.insert(n.node).second) {
            why = "node '" + n.node + "' would need two node ranks (its GPUs are not one contiguous block of ranks)";
            return {};
        }
        nodes.push_back(std::move(n));
    }
    return nodes;
}

/// One recompute setting for every stage (Megatron-LM has no per-stage recompute): fills
/// shape.recompute / recomputeLayers, records why not otherwise.
void checkJobRecompute(const Plan &plan, MegatronShape &shape, Diagnostics &d)
{
    std::set<RecomputeMethod> methods;
    for (const Stage &st : plan.stages)
        methods.insert(st.recompute.method);
    if (methods.size() > 1) {
        std::string list;
        for (size_t s = 0; s < plan.stages.size(); ++s)
            list += (s ? ", " : "") + std::string("stage ") + std::to_string(s) + " "
                + toString(plan.stages[s].recompute.method);
        d.error("/stages",
                "expected the same recompute method on every stage (upstream Megatron-LM applies one "
                "setting to all stages), found "
                    + list + kFlagScaleHint);
    } else if (*methods.begin() == RecomputeMethod::Selective) {
        shape.recompute = JobRecompute::Selective;
    } else if (*methods.begin() == RecomputeMethod::Full) {
        // Effective recomputed layers per stage r_i; "--recompute-method block N" gives min(N, L_i).
        bool all = true;
        int n = 0;
        for (const Stage &st : plan.stages) {
            const int r = normalisedRecompute(st.recompute, st.layerCount).layers;
            all = all && r == 0;
            n = std::max(n, r == 0 ? st.layerCount : r);
        }
        if (all) {
            shape.recompute = JobRecompute::FullUniform;
        } else {
            shape.recompute = JobRecompute::FullBlock;
            shape.recomputeLayers = n;
            for (size_t s = 0; s < plan.stages.size(); ++s) {
                const Stage &st = plan.stages[s];
                const int r = normalisedRecompute(st.recompute, st.layerCount).layers;
                const int want = r == 0 ? st.layerCount : r;
                if (std::min(n, st.layerCount) != want) {
                    d.error(jsonPointerJoin("/stages", s) + "/recompute/layers",
                            "expected " + std::to_string(std::min(n, st.layerCount))
                                + " recomputed layers (upstream Megatron-LM's \"--recompute-method block "
                                + std::to_string(n) + "\" recomputes the first " + std::to_string(n)
                                + " layers of every stage), found " + std::to_string(want) + kFlagScaleHint);
                    break;
                }
            }
        }
    }
}

} // namespace

bool analyseMegatron(const ExportRequest &request, MegatronShape &shape, Diagnostics &diags)
{
    const Plan &plan = request.plan;
    const Cluster &cluster = request.cluster;
    Diagnostics d(planFileName(request));
    validatePlan(plan, cluster, request.model, d);
    if (!d.empty()) {
        diags.append(d);
        return false;
    }

    // One device type, on a vendor upstream Megatron-LM runs on.
    std::map<int, std::vector<int>> stagesByDevice;
    for (int s = 0; s < plan.pp(); ++s)
        for (const Replica &r : plan.stages[static_cast<size_t>(s)].replicas) {
            auto &v = stagesByDevice[deviceOfNode(cluster, r.node)];
            if (v.empty() || v.back() != s)
                v.push_back(s);
        }
    if (stagesByDevice.size() > 1) {
        std::string list;
        for (const auto &[dev, stages] : stagesByDevice)
            list += (list.empty() ? "" : ", ") + printableText(cluster.devices[static_cast<size_t>(dev)].id) + " ("
                + stageList(stages) + ")";
        d.error("/stages",
                "expected one device type for the whole job (upstream Megatron-LM runs homogeneous jobs), "
                "found "
                    + std::to_string(stagesByDevice.size()) + ": " + list + kFlagScaleHint);
    }
    for (const auto &[dev, stages] : stagesByDevice) {
        const GpuSpec &spec = cluster.devices[static_cast<size_t>(dev)];
        if (spec.vendor != "NVIDIA" && spec.vendor != "AMD")
            d.error(jsonPointerJoin("/stages", static_cast<size_t>(stages.front())),
                    "expected NVIDIA (CUDA) or AMD (ROCm) GPUs for upstream Megatron-LM, found "
                        + printableText(spec.vendor) + " " + printableText(spec.id)
                        + " (it needs the vendor's own fork)" + kFlagScaleHint);
    }

    // Same TP and micro-batch on every replica, same DP on every stage.
    const Replica &first = plan.stages.front().replicas.front();
    shape.tp = first.tp;
    shape.microBatch = first.microBatch;
    shape.dp = plan.stages.front().dp();
    shape.pp = plan.pp();
    for (size_t s = 0; s < plan.stages.size(); ++s) {
        const Stage &st = plan.stages[s];
        const std::string sp = jsonPointerJoin("/stages", s);
        if (st.dp() != shape.dp)
            d.error(sp + "/replicas",
                    "expected " + std::to_string(shape.dp) + (shape.dp == 1 ? " replica" : " replicas")
                        + " like stage 0 (upstream Megatron-LM has one data-parallel size), "
                          "found "
                        + std::to_string(st.dp()) + kFlagScaleHint);
        for (size_t i = 0; i < st.replicas.size(); ++i) {
            const Replica &r = st.replicas[i];
            const std::string rp = jsonPointerJoin(sp + "/replicas", i);
            if (r.tp != shape.tp) {
                d.error(rp + "/tp",
                        "expected TP " + std::to_string(shape.tp)
                            + " like /stages/0/replicas/0 (upstream Megatron-LM has one "
                              "--tensor-model-parallel-size), found "
                            + std::to_string(r.tp) + kFlagScaleHint);
                break;
            }
        }
        for (size_t i = 0; i < st.replicas.size(); ++i) {
            const Replica &r = st.replicas[i];
            if (r.microBatch != shape.microBatch) {
                d.error(jsonPointerJoin(sp + "/replicas", i) + "/microBatch",
                        "expected micro-batch " + std::to_string(shape.microBatch)
                            + " like /stages/0/replicas/0 (upstream Megatron-LM has one --micro-batch-size), found "
                            + std::to_string(r.microBatch) + kFlagScaleHint);
                break;
            }
        }
    }

    checkJobRecompute(request.plan, shape, d);

    // Layer split.
    for (const Stage &st : plan.stages)
        shape.stageLayers.push_back(st.layerCount);
    const bool even = std::all_of(shape.stageLayers.begin(), shape.stageLayers.end(),
                                  [&](int n) { return n == shape.stageLayers.front(); });
    if (!even && request.options.splitStyle == LayerSplitStyle::FirstLast) {
        for (size_t s = 2; s + 1 < shape.stageLayers.size(); ++s)
            if (shape.stageLayers[s] != shape.stageLayers[1]) {
                d.error(jsonPointerJoin("/stages", s) + "/layerCount",
                        "expected " + std::to_string(shape.stageLayers[1])
                            + " layers like stage 1 (--decoder-first/last-pipeline-num-layers only let the first and "
                              "last stages differ), found "
                            + std::to_string(shape.stageLayers[s])
                            + " - use the layout style (--pipeline-model-parallel-layout, Megatron core_v0.13.0+)");
                break;
            }
    }

    if (!d.empty()) {
        finishHints(request, d, diags);
        return false;
    }

    // Rank placement: torchrun gives node rank r the global ranks r*nproc .. r*nproc+nproc-1.
    std::map<std::string, int> gpusPerNode;
    for (const Stage &st : plan.stages)
        for (const Replica &r : st.replicas)
            gpusPerNode[r.node] += r.tp;
    shape.nprocPerNode = gpusPerNode.begin()->second;
    for (const auto &[node, n] : gpusPerNode)
        if (n != shape.nprocPerNode) {
            std::string list;
            for (const auto &[nn, c] : gpusPerNode)
                list += (list.empty() ? "" : ", ") + printableText(nn) + " " + std::to_string(c);
            d.error("/stages",
                    "expected the same number of GPUs on every node of the plan (torchrun starts the "
                    "same --nproc_per_node processes on each node), found "
                        + list);
            diags.append(d);
            return false;
        }
    std::string whyDp, whyPp;
    shape.nodes = cutIntoNodes(cluster, rankSlots(plan, shape.tp, shape.dp, false), shape.nprocPerNode, whyDp);
    shape.tpPpDpOrder = false;
    if (shape.nodes.empty()) {
        shape.nodes = cutIntoNodes(cluster, rankSlots(plan, shape.tp, shape.dp, true), shape.nprocPerNode, whyPp);
        shape.tpPpDpOrder = true;
    }
    if (shape.nodes.empty()) {
        d.error("/stages",
                "the plan's GPU placement cannot be written as torchrun rank order: in Megatron's "
                "tp-cp-ep-dp-pp order "
                    + whyDp + ", and in tp-cp-ep-pp-dp order (--use-tp-pp-dp-mapping) " + whyPp
                    + "; put each node's GPUs into consecutive replicas of the same stages");
        diags.append(d);
        return false;
    }
    shape.device = shape.nodes.front().device;
    shape.globalBatch = plan.globalBatch;
    shape.microBatches = plan.microBatches();
    shape.bf16 = chooseBf16(request, shape.precisionNote);
    return true;
}

namespace {

std::string layoutString(const std::vector<int> &layers)
{
    std::string out = "E";
    for (size_t s = 0; s < layers.size(); ++s) {
        if (s)
            out += "|";
        out += "t*" + std::to_string(layers[s]);
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
    const bool even
        = std::all_of(m.stageLayers.begin(), m.stageLayers.end(), [&](int n) { return n == m.stageLayers.front(); });
    if (!even) {
        if (request.options.splitStyle == LayerSplitStyle::Layout) {
            add("--pipeline-model-parallel-layout", layoutString(m.stageLayers));
        } else {
            add("--decoder-first-pipeline-num-layers", std::to_string(m.stageLayers.front()));
            add("--decoder-last-pipeline-num-layers", std::to_string(m.stageLayers.back()));
        }
    }
    add("--micro-batch-size", std::to_string(m.microBatch));
    add("--global-batch-size", std::to_string(m.globalBatch));
    if (plan.distributedOptimizer)
        add("--use-distributed-optimizer");
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
                         + std::to_string(m.nodes.size()) + ": " + n.node + " (" + std::to_string(n.slots.size())
                         + " x " + dev.id + ", " + dev.vendor + ")");
    o << "#\n# Run the script of each node on that node (any order); node rank 0 hosts the rendezvous:\n";
    o << "#   MASTER_ADDR=<address of " << printableText(m.nodes.front().node)
      << "> MASTER_PORT=" << request.options.masterPort << " bash launch-node" << n.nodeRank
      << ".sh [extra Megatron-LM flags]\n";
    o << "# Set MEGATRON_DIR to the Megatron-LM checkout, DATA_ARGS / TRAIN_ARGS to replace the defaults below.\n#\n";
    o << "# Global ranks " << n.firstGlobalRank << "-" << n.firstGlobalRank + static_cast<int>(n.slots.size()) - 1
      << " run here (global rank = node rank x " << m.nprocPerNode << " + local rank). Megatron rank order "
      << (m.tpPpDpOrder ? "tp-cp-ep-pp-dp: rank = tp + " + std::to_string(m.tp) + " x (stage + " + std::to_string(m.pp)
                  + " x replica)"
                        : "tp-cp-ep-dp-pp: rank = tp + " + std::to_string(m.tp) + " x (replica + "
                  + std::to_string(m.dp) + " x stage)")
      << ".\n";
    for (size_t i = 0; i < n.slots.size(); ++i) {
        const RankSlot &s = n.slots[i];
        o << "#   local rank " << i << " -> GPU " << s.gpu << ": stage " << s.stage << " (layers "
          << request.plan.stages[static_cast<size_t>(s.stage)].firstLayer << "-"
          << request.plan.stages[static_cast<size_t>(s.stage)].firstLayer
                + request.plan.stages[static_cast<size_t>(s.stage)].layerCount - 1
          << "), replica " << s.replica << ", tp rank " << s.tpRank << "\n";
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
    for (const RankSlot &s : n.slots)
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
      << n.firstGlobalRank + static_cast<int>(n.slots.size()) - 1 << ", rendezvous $MASTER_ADDR:$MASTER_PORT\"\n";
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
        h << nl.node << " slots=" << nl.slots.size() << "\n";
    files.push_back({"hostfile", h.str(), false});
    return files;
}

void checkSlurmHostNames(const ExportRequest &request, const MegatronShape &shape, Diagnostics &diags)
{
    Diagnostics d(planFileName(request));
    for (const NodeLaunch &n : shape.nodes)
        if (const auto why = hostNameProblem(n.node))
            d.error(
                jsonPointerJoin(jsonPointerJoin("/stages", static_cast<size_t>(n.slots.front().stage)) + "/replicas",
                                static_cast<size_t>(n.slots.front().replica))
                    + "/node",
                "cannot be a Slurm host (job.sbatch matches it against scontrol show hostnames, the hostfile "
                "lists it): "
                    + *why);
    diags.append(d);
}

} // namespace memx::exportdetail
