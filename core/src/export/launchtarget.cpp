// Launch targets: Megatron-LM's and FlagScale's rules for a plan (memx/export/launchtarget.h).
// Flag names and validation rules: ../shared/reference/launch-and-formulas.md sections 1-3 and
// FlagScale's flagscale/runner/runner_train.py + train/arguments.py (see docs/export.md).
#include "memx/export/launchtarget.h"

#include "memx/cost/costmodel.h"

#include "memx/export/megatronargs.h"
#include "memx/export/quoting.h"
#include "memx/util/diagnostic.h"
#include "memx/util/jsonreader.h"

#include <algorithm>
#include <map>

namespace memx {

const char *toString(LaunchTarget target)
{
    switch (target) {
    case LaunchTarget::Megatron:
        return "megatron";
    case LaunchTarget::FlagScale:
        return "flagscale";
    case LaunchTarget::Any:
        break;
    }
    return "any";
}

std::optional<LaunchTarget> parseLaunchTarget(const std::string &text)
{
    for (LaunchTarget t : {LaunchTarget::Megatron, LaunchTarget::FlagScale, LaunchTarget::Any})
        if (text == toString(t))
            return t;
    return std::nullopt;
}

bool megatronRunsVendor(const std::string &vendor)
{
    return vendor == "NVIDIA" || vendor == "AMD";
}

std::optional<std::string> flagScaleVisibleDevices(const std::string &vendor)
{
    static const std::map<std::string, std::string> vars {
        {"NVIDIA", "CUDA_VISIBLE_DEVICES"},
        {"Huawei", "ASCEND_RT_VISIBLE_DEVICES"}, // torch_npu (hardware/Huawei_Atlas800TA3)
        {"Cambricon", "MLU_VISIBLE_DEVICES"}, // torch_mlu (hardware/Cambricon_MLU)
    };
    const auto it = vars.find(vendor);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
}

bool targetRunsDevice(LaunchTarget target, const GpuSpec &device)
{
    switch (target) {
    case LaunchTarget::Megatron:
        return megatronRunsVendor(device.vendor);
    case LaunchTarget::FlagScale:
        return flagScaleVisibleDevices(device.vendor).has_value();
    case LaunchTarget::Any:
        break;
    }
    return true;
}

bool targetMixesDevicesInStage(LaunchTarget target, const GpuSpec &a, const GpuSpec &b)
{
    switch (target) {
    case LaunchTarget::Megatron:
        return a.vendor == b.vendor && megatronRunsVendor(a.vendor);
    case LaunchTarget::FlagScale:
        return a.id == b.id;
    case LaunchTarget::Any:
        break;
    }
    return true;
}

bool targetSplitsMicroBatches(LaunchTarget target)
{
    return target == LaunchTarget::Any;
}

namespace {

std::string methodList(const std::vector<RecomputeMethod> &perStage)
{
    std::string list;
    for (size_t s = 0; s < perStage.size(); ++s)
        list += (s ? ", " : "") + std::string("stage ") + std::to_string(s) + " " + toString(perStage[s]);
    return list;
}

} // namespace

bool recomputeAllowed(LaunchTarget target, const RecomputeMethod *perStage, size_t stages)
{
    if (target == LaunchTarget::Any || stages == 0)
        return true;
    bool same = true, selective = false;
    for (size_t i = 0; i < stages; ++i) {
        same = same && perStage[i] == perStage[0];
        selective = selective || perStage[i] == RecomputeMethod::Selective;
    }
    return same || (target == LaunchTarget::FlagScale && !selective);
}

std::optional<std::string> recomputeRefusal(LaunchTarget target, const std::vector<RecomputeMethod> &perStage)
{
    if (recomputeAllowed(target, perStage.data(), perStage.size()))
        return std::nullopt;
    if (target == LaunchTarget::Megatron)
        return "expected the same recompute method on every stage (upstream Megatron-LM applies one setting to all "
               "stages), found "
            + methodList(perStage);
    return "expected selective recompute on all stages or on none (FlagScale's per-stage recompute keys choose "
           "between full and off only), found "
        + methodList(perStage);
}

bool targetMayRunPipeline(LaunchTarget target, const Cluster &cluster, const std::vector<StageFacts> &stages)
{
    if (target == LaunchTarget::Any || stages.empty())
        return true;
    std::vector<int> typeOrder;
    for (const StageFacts &s : stages) {
        for (int d : {s.device, s.device2})
            if (d >= 0 && !targetRunsDevice(target, cluster.devices[static_cast<size_t>(d)]))
                return false;
        if (target == LaunchTarget::Megatron) {
            const StageFacts &f = stages.front();
            const std::string &vendor = cluster.devices[static_cast<size_t>(f.device)].vendor;
            if (s.tp != f.tp || s.dp != f.dp || cluster.devices[static_cast<size_t>(s.device)].vendor != vendor
                || (s.device2 >= 0 && cluster.devices[static_cast<size_t>(s.device2)].vendor != vendor))
                return false;
        } else {
            if (s.device2 >= 0 && s.device2 != s.device)
                return false;
            const std::string &id = cluster.devices[static_cast<size_t>(s.device)].id;
            if (typeOrder.empty() || cluster.devices[static_cast<size_t>(typeOrder.back())].id != id) {
                for (int t : typeOrder)
                    if (cluster.devices[static_cast<size_t>(t)].id == id)
                        return false;
                typeOrder.push_back(s.device);
            }
        }
    }
    return true;
}

namespace {

const GpuSpec &deviceAt(const Cluster &cluster, int device)
{
    return cluster.devices[static_cast<size_t>(device)];
}

int deviceOfNode(const Cluster &cluster, const std::string &node)
{
    const auto n = cluster.findNode(node);
    return n ? n->device : -1;
}

// ---- Megatron-LM ---------------------------------------------------------------------------

/// Marks where a refusal may point to FlagScale; replaced by finishHints once it is known whether
/// the FlagScale export accepts the plan (so the hint is never false).
const char *kFlagScaleHint = "\x01";

void finishHints(const Plan &plan, const Cluster &cluster, const Model &model, const Diagnostics &d, Diagnostics &diags)
{
    FlagScaleShape f;
    Diagnostics ignored;
    const std::string hint = analyseFlagScale(plan, cluster, model, f, ignored)
        ? " - use the FlagScale export (--format flagscale), which supports it"
        : " - the FlagScale export (--format flagscale) refuses this plan too";
    for (const Diagnostic &x : d.items()) {
        std::string m = x.message;
        const size_t at = m.find(kFlagScaleHint);
        if (at != std::string::npos)
            m.replace(at, 1, hint);
        diags.error(x.pointer, m);
    }
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
    const int pp = plan.pp(), cp = std::max(1, plan.contextParallel);
    std::vector<RankSlot> slots(static_cast<size_t>(tp * cp * dp * pp));
    for (int s = 0; s < pp; ++s)
        for (int d = 0; d < dp; ++d)
            for (int c = 0; c < cp; ++c)
                for (int t = 0; t < tp; ++t) {
                    const Replica &r = plan.stages[static_cast<size_t>(s)].replicas[static_cast<size_t>(d)];
                    const int inner = t + tp * c; // tp fastest, then cp (Replica::gpus' order)
                    const int rank = tpPpDp ? inner + tp * cp * (s + pp * d) : inner + tp * cp * (d + dp * s);
                    slots[static_cast<size_t>(rank)] = {s, d, t, r.node, r.gpus[static_cast<size_t>(inner)], c};
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
                    + std::to_string(n.nodeRank) + ") would have to run on both '" + printableText(n.node) + "' and '"
                    + printableText(slots[i].node) + "'";
                return {};
            }
            n.localRanks.push_back(slots[i]);
        }
        if (!seen.insert(n.node).second) {
            why = "node '" + printableText(n.node)
                + "' would need two node ranks (its GPUs are not one contiguous block of ranks)";
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
    std::vector<RecomputeMethod> perStage;
    for (const Stage &st : plan.stages)
        perStage.push_back(st.recompute.method);
    if (const auto why = recomputeRefusal(LaunchTarget::Megatron, perStage)) {
        d.error("/stages", *why + kFlagScaleHint);
        return;
    }
    if (perStage.front() == RecomputeMethod::Selective) {
        shape.recompute = JobRecompute::Selective;
        return;
    }
    if (perStage.front() != RecomputeMethod::Full)
        return;
    // Effective recomputed layers per stage r_i; "--recompute-method block N" gives min(N, L_i),
    // and with v model chunks per rank v x min(N, L_i / v) (N applies to every chunk).
    const int v = std::max(1, plan.virtualStages);
    bool all = true;
    int n = 0;
    for (const Stage &st : plan.stages) {
        const int r = normalisedRecompute(st.recompute, st.layerCount).layers;
        all = all && r == 0;
        n = std::max(n, ((r == 0 ? st.layerCount : r) + v - 1) / v);
    }
    if (all) {
        shape.recompute = JobRecompute::FullUniform;
        return;
    }
    shape.recompute = JobRecompute::FullBlock;
    shape.recomputeLayers = n;
    for (size_t s = 0; s < plan.stages.size(); ++s) {
        const Stage &st = plan.stages[s];
        const int r = normalisedRecompute(st.recompute, st.layerCount).layers;
        const int want = r == 0 ? st.layerCount : r;
        const int got = v * std::min(n, st.layerCount / v);
        if (got != want) {
            d.error(jsonPointerJoin("/stages", s) + "/recompute/layers",
                    "expected " + std::to_string(got)
                        + " recomputed layers (upstream Megatron-LM's \"--recompute-method block " + std::to_string(n)
                        + "\" recomputes the first " + std::to_string(n) + " layers of every "
                        + (v > 1 ? "model chunk, " + std::to_string(v) + " per stage" : std::string("stage"))
                        + "), found " + std::to_string(want) + kFlagScaleHint);
            break;
        }
    }
}

/// One vendor upstream Megatron-LM runs (NCCL or RCCL: one collective library for the job).
void checkMegatronVendors(const Plan &plan, const Cluster &cluster, Diagnostics &d)
{
    std::map<std::string, std::vector<int>> stagesByVendor;
    std::map<std::string, int> firstDevice;
    for (int s = 0; s < plan.pp(); ++s)
        for (const Replica &r : plan.stages[static_cast<size_t>(s)].replicas) {
            const int dev = deviceOfNode(cluster, r.node);
            const std::string &vendor = deviceAt(cluster, dev).vendor;
            auto &v = stagesByVendor[vendor];
            if (v.empty() || v.back() != s)
                v.push_back(s);
            firstDevice.emplace(vendor, dev);
        }
    if (stagesByVendor.size() > 1) {
        std::string list;
        for (const auto &[vendor, stages] : stagesByVendor)
            list += (list.empty() ? "" : ", ") + printableText(vendor) + " (" + stageList(stages) + ")";
        d.error("/stages",
                "expected GPUs of one vendor for the whole job (upstream Megatron-LM runs one collective library, "
                "NCCL or RCCL, which do not talk to each other), found "
                    + std::to_string(stagesByVendor.size()) + ": " + list + kFlagScaleHint);
    }
    for (const auto &[vendor, stages] : stagesByVendor)
        if (!megatronRunsVendor(vendor)) {
            const GpuSpec &spec = deviceAt(cluster, firstDevice.at(vendor));
            d.error(jsonPointerJoin("/stages", static_cast<size_t>(stages.front())),
                    "expected NVIDIA (CUDA) or AMD (ROCm) GPUs for upstream Megatron-LM, found " + printableText(vendor)
                        + " " + printableText(spec.id) + " (it needs the vendor's own fork)" + kFlagScaleHint);
        }
}

/// Megatron-LM runs context parallelism inside Transformer Engine's flash/fused attention only.
void checkContextParallelAttention(const Plan &plan, const Cluster &cluster, const Model &model, Diagnostics &d)
{
    if (plan.contextParallel <= 1)
        return;
    for (const Stage &st : plan.stages)
        for (const Replica &r : st.replicas) {
            const int dev = deviceOfNode(cluster, r.node);
            if (dev >= 0 && !storesNoScores(resolveAttention(model, deviceAt(cluster, dev)))) {
                d.error("/contextParallel",
                        "expected 1 with unfused attention on " + printableText(deviceAt(cluster, dev).id)
                            + " (Megatron-LM's context parallelism runs inside flash/fused attention), found "
                            + std::to_string(plan.contextParallel));
                return;
            }
        }
}

/// Same TP and micro-batch on every replica, same DP on every stage.
void checkMegatronUniform(const Plan &plan, MegatronShape &shape, Diagnostics &d)
{
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
                        + " like stage 0 (upstream Megatron-LM has one data-parallel size), found "
                        + std::to_string(st.dp()) + kFlagScaleHint);
        for (size_t i = 0; i < st.replicas.size(); ++i)
            if (st.replicas[i].tp != shape.tp) {
                d.error(jsonPointerJoin(sp + "/replicas", i) + "/tp",
                        "expected TP " + std::to_string(shape.tp)
                            + " like /stages/0/replicas/0 (upstream Megatron-LM has one --tensor-model-parallel-size), "
                              "found "
                            + std::to_string(st.replicas[i].tp) + kFlagScaleHint);
                break;
            }
        for (size_t i = 0; i < st.replicas.size(); ++i)
            if (st.replicas[i].microBatch != shape.microBatch) {
                d.error(jsonPointerJoin(sp + "/replicas", i) + "/microBatch",
                        "expected micro-batch " + std::to_string(shape.microBatch)
                            + " like /stages/0/replicas/0 (upstream Megatron-LM has one --micro-batch-size), found "
                            + std::to_string(st.replicas[i].microBatch) + kFlagScaleHint);
                break;
            }
    }
}

/// --decoder-first/last-pipeline-num-layers let only the first and last stages differ.
void checkMegatronSplit(const Plan &plan, LayerSplitStyle style, MegatronShape &shape, Diagnostics &d)
{
    for (const Stage &st : plan.stages)
        shape.stageLayers.push_back(st.layerCount);
    const bool even = std::all_of(shape.stageLayers.begin(), shape.stageLayers.end(),
                                  [&](int n) { return n == shape.stageLayers.front(); });
    if (!even && plan.virtualStages > 1 && style == LayerSplitStyle::FirstLast) {
        d.error("/virtualStages",
                "expected 1 with an uneven split in the first-last style (--decoder-first/last-pipeline-num-layers "
                "do not combine with --num-layers-per-virtual-pipeline-stage), found "
                    + std::to_string(plan.virtualStages)
                    + " - use the layout style (--pipeline-model-parallel-layout)");
        return;
    }
    if (even || style != LayerSplitStyle::FirstLast)
        return;
    for (size_t s = 2; s + 1 < shape.stageLayers.size(); ++s)
        if (shape.stageLayers[s] != shape.stageLayers[1]) {
            d.error(jsonPointerJoin("/stages", s) + "/layerCount",
                    "expected " + std::to_string(shape.stageLayers[1])
                        + " layers like stage 1 (--decoder-first/last-pipeline-num-layers only let the first and last "
                          "stages differ), found "
                        + std::to_string(shape.stageLayers[s])
                        + " - use the layout style (--pipeline-model-parallel-layout, Megatron core_v0.13.0+)");
            break;
        }
}

/// torchrun gives node rank r the global ranks r*nproc .. r*nproc+nproc-1: the plan's GPUs must
/// fill whole nodes in one of Megatron's two rank orders.
bool placeMegatronRanks(const Plan &plan, const Cluster &cluster, MegatronShape &shape, Diagnostics &d)
{
    std::map<std::string, int> gpusPerNode;
    for (const Stage &st : plan.stages)
        for (const Replica &r : st.replicas)
            gpusPerNode[r.node] += r.tp * std::max(1, plan.contextParallel);
    shape.nprocPerNode = gpusPerNode.begin()->second;
    for (const auto &[node, n] : gpusPerNode)
        if (n != shape.nprocPerNode) {
            std::string list;
            for (const auto &[nn, c] : gpusPerNode)
                list += (list.empty() ? "" : ", ") + printableText(nn) + " " + std::to_string(c);
            d.error("/stages",
                    "expected the same number of GPUs on every node of the plan (torchrun starts the same "
                    "--nproc_per_node processes on each node), found "
                        + list);
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
                "the plan's GPU placement cannot be written as torchrun rank order: in Megatron's tp-cp-ep-dp-pp order "
                    + whyDp + ", and in tp-cp-ep-pp-dp order (--use-tp-pp-dp-mapping) " + whyPp
                    + "; put each node's GPUs into consecutive replicas of the same stages");
        return false;
    }
    return true;
}

// ---- FlagScale -----------------------------------------------------------------------------

/// Every stage must be one (device type, TP) so that it fits in a mesh.
void checkStagesFitMeshes(const Plan &plan, const Cluster &cluster, Diagnostics &d)
{
    for (size_t s = 0; s < plan.stages.size(); ++s) {
        const Stage &st = plan.stages[s];
        const int dev0 = deviceOfNode(cluster, st.replicas.front().node);
        for (size_t i = 1; i < st.replicas.size(); ++i) {
            const Replica &r = st.replicas[i];
            const std::string rp = jsonPointerJoin(jsonPointerJoin("/stages", s) + "/replicas", i);
            const int dev = deviceOfNode(cluster, r.node);
            if (dev != dev0) {
                d.error(rp + "/node",
                        "expected a " + printableText(deviceAt(cluster, dev0).id)
                            + " node like replica 0 (a FlagScale process mesh has one device type), found "
                            + printableText(r.node) + " (" + printableText(deviceAt(cluster, dev).id) + ")");
                break;
            }
            if (r.tp != st.replicas.front().tp) {
                d.error(rp + "/tp",
                        "expected TP " + std::to_string(st.replicas.front().tp)
                            + " like replica 0 (a FlagScale process mesh has one TP degree), found "
                            + std::to_string(r.tp));
                break;
            }
        }
    }
}

/// Meshes (consecutive stages with one device type, TP and DP) and the device-type order.
void buildMeshes(const Plan &plan, const Cluster &cluster, FlagScaleShape &f, Diagnostics &d)
{
    for (size_t s = 0; s < plan.stages.size(); ++s) {
        const Stage &st = plan.stages[s];
        FlagScaleMesh m {deviceOfNode(cluster, st.replicas.front().node), st.replicas.front().tp, st.dp(), {}};
        const FlagScaleMesh *last = f.meshes.empty() ? nullptr : &f.meshes.back();
        if (!last || last->device != m.device || last->tp != m.tp || last->dp != m.dp)
            f.meshes.push_back(m);
        f.meshes.back().stages.push_back(static_cast<int>(s));
    }
    // FlagScale orders ranks by the first index of their device type in hetero_device_types, so the
    // meshes of one device type must be consecutive along the pipeline.
    for (const FlagScaleMesh &m : f.meshes) {
        if (!f.typeOrder.empty() && f.typeOrder.back() == m.device)
            continue;
        const std::string id = printableText(deviceAt(cluster, m.device).id);
        for (int t : f.typeOrder)
            if (t == m.device) {
                d.error(jsonPointerJoin("/stages", static_cast<size_t>(m.stages.front())),
                        "expected the stages of each device type to be consecutive (FlagScale sorts ranks by device "
                        "type, so a pipeline cannot return to "
                            + id + " after another type), found " + id + " again at stage "
                            + std::to_string(m.stages.front()));
                break;
            }
        f.typeOrder.push_back(m.device);
    }
}

/// Vendors upstream FlagScale runs on (no AMD/ROCm, Intel Gaudi or Biren adaptation upstream).
void checkFlagScaleVendors(const Cluster &cluster, const FlagScaleShape &f, Diagnostics &d)
{
    for (const FlagScaleMesh &m : f.meshes) {
        const GpuSpec &g = deviceAt(cluster, m.device);
        if (flagScaleVisibleDevices(g.vendor))
            continue;
        d.error(jsonPointerJoin("/stages", static_cast<size_t>(m.stages.front())),
                "expected a vendor upstream FlagScale supports (its hardware/ adaptations: NVIDIA, Huawei Ascend, "
                "Cambricon, Kunlunxin, MetaX, Hygon, Moore Threads, Iluvatar, Tsing Micro), found "
                    + printableText(g.vendor) + " " + printableText(g.id)
                    + (g.vendor == "AMD"
                           ? " (FlagScale has no AMD/ROCm adaptation, neither alone nor mixed with other vendors)"
                           : ""));
    }
}

/// dp_0 x micro_batch_size divisible by every mesh's dp; each mesh then runs dp_0*MBS/dp_i.
void checkMicroBatches(const Plan &plan, FlagScaleShape &f, Diagnostics &d)
{
    const Stage &stage0 = plan.stages.front();
    f.microBatch = stage0.replicas.front().microBatch;
    const int mbs = f.microBatch;
    for (size_t i = 1; i < stage0.replicas.size(); ++i)
        if (stage0.replicas[i].microBatch != mbs) {
            d.error(jsonPointerJoin("/stages/0/replicas", i) + "/microBatch",
                    "expected micro-batch " + std::to_string(mbs)
                        + " like replica 0 (FlagScale's micro_batch_size is one value for mesh 0), found "
                        + std::to_string(stage0.replicas[i].microBatch));
            break;
        }
    const int dp0 = f.meshes.front().dp;
    for (size_t mi = 0; mi < f.meshes.size(); ++mi) {
        const FlagScaleMesh &m = f.meshes[mi];
        if ((dp0 * mbs) % m.dp != 0) {
            d.error(jsonPointerJoin("/stages", static_cast<size_t>(m.stages.front())) + "/replicas",
                    "FlagScale rule: dp_0 x micro_batch_size (" + std::to_string(dp0) + " x " + std::to_string(mbs)
                        + " = " + std::to_string(dp0 * mbs) + ") must be divisible by the dp of mesh "
                        + std::to_string(mi) + ", found dp " + std::to_string(m.dp)
                        + " (every mesh runs micro_batch_size_i = dp_0 x MBS / dp_i)");
            continue;
        }
        const int want = dp0 * mbs / m.dp;
        for (int s : m.stages) {
            const Stage &st = plan.stages[static_cast<size_t>(s)];
            for (size_t i = 0; i < st.replicas.size(); ++i)
                if (st.replicas[i].microBatch != want && s != 0) {
                    d.error(jsonPointerJoin(jsonPointerJoin("/stages", static_cast<size_t>(s)) + "/replicas", i)
                                + "/microBatch",
                            "expected micro-batch " + std::to_string(want) + " (FlagScale gives every replica of mesh "
                                + std::to_string(mi) + " dp_0 x MBS / dp_i = " + std::to_string(dp0 * mbs) + " / "
                                + std::to_string(m.dp) + "), found " + std::to_string(st.replicas[i].microBatch));
                    break;
                }
        }
    }
}

/// Tied embeddings: same TP on the first and last mesh; with different DP and the distributed
/// optimizer one DP must divide the other (and partial reduce is switched on).
void checkEmbeddings(const Plan &plan, const Model &model, FlagScaleShape &f, Diagnostics &d)
{
    const FlagScaleMesh &first = f.meshes.front();
    const FlagScaleMesh &last = f.meshes.back();
    const std::string lastStage = jsonPointerJoin("/stages", plan.stages.size() - 1);
    if (!model.shape.tiedEmbeddings)
        return;
    if (first.tp != last.tp)
        d.error(lastStage + "/replicas/0/tp",
                "FlagScale rule: with tied input/output embeddings the first and last meshes need the same TP ("
                    + std::to_string(first.tp) + "), found " + std::to_string(last.tp)
                    + " - untie the embeddings or give the last stage TP " + std::to_string(first.tp));
    if (first.dp != last.dp && plan.distributedOptimizer) {
        if (first.dp % last.dp != 0 && last.dp % first.dp != 0)
            d.error(lastStage + "/replicas",
                    "FlagScale rule: with tied embeddings and the distributed optimizer the first and last meshes' DP "
                    "must divide one another, found "
                        + std::to_string(first.dp) + " and " + std::to_string(last.dp));
        f.partialReduce = true;
    }
}

/// Recompute: FlagScale's per-stage keys know full and off; selective only for the whole job.
void checkFlagScaleRecompute(const Plan &plan, FlagScaleShape &f, Diagnostics &d)
{
    std::vector<RecomputeMethod> perStage;
    for (const Stage &st : plan.stages) {
        f.methods.insert(st.recompute.method);
        perStage.push_back(st.recompute.method);
    }
    if (const auto why = recomputeRefusal(LaunchTarget::FlagScale, perStage))
        d.error("/stages", *why);
}

/// Logical rank order: mesh after mesh, inside a mesh tp-cp-ep-dp-pp. With static rendezvous the
/// physical order is hostfile order x local rank, so every node must be one contiguous block.
void placeHosts(const Plan &plan, const Cluster &cluster, FlagScaleShape &f, Diagnostics &d)
{
    std::vector<RankSlot> logical;
    for (const FlagScaleMesh &m : f.meshes)
        for (int s : m.stages)
            for (int dpi = 0; dpi < m.dp; ++dpi)
                for (int c = 0; c < std::max(1, plan.contextParallel); ++c)
                    for (int t = 0; t < m.tp; ++t) {
                        const Replica &r = plan.stages[static_cast<size_t>(s)].replicas[static_cast<size_t>(dpi)];
                        logical.push_back({s, dpi, t, r.node, r.gpus[static_cast<size_t>(t + m.tp * c)], c});
                    }
    std::set<std::string> seen;
    for (size_t i = 0; i < logical.size(); ++i) {
        if (f.hosts.empty() || f.hosts.back().node != logical[i].node) {
            if (!seen.insert(logical[i].node).second) {
                d.error("/stages",
                        "the plan's GPU placement cannot be written as a FlagScale hostfile: node '"
                            + printableText(logical[i].node) + "' would need two places in the rank order (global rank "
                            + std::to_string(i) + " is stage " + std::to_string(logical[i].stage) + ", replica "
                            + std::to_string(logical[i].replica)
                            + "); give each node's GPUs to consecutive replicas/stages");
                return;
            }
            NodeLaunch n;
            n.node = logical[i].node;
            n.nodeRank = static_cast<int>(f.hosts.size());
            n.device = deviceOfNode(cluster, n.node);
            n.firstGlobalRank = static_cast<int>(i);
            f.hosts.push_back(n);
        }
        f.hosts.back().localRanks.push_back(logical[i]);
    }
}

/// Host names and device ids go into the hostfile (host slots=N type=ID) and ssh command lines.
void checkHostfileNames(const Plan &plan, const Cluster &cluster, Diagnostics &d)
{
    std::set<std::string> reported;
    for (size_t s = 0; s < plan.stages.size(); ++s)
        for (size_t i = 0; i < plan.stages[s].replicas.size(); ++i) {
            const std::string &node = plan.stages[s].replicas[i].node;
            const std::string rp = jsonPointerJoin(jsonPointerJoin("/stages", s) + "/replicas", i);
            if (const auto why = hostNameProblem(node); why && reported.insert(node).second)
                d.error(rp + "/node", "cannot be a FlagScale hostfile host: " + *why);
            const std::string &id = deviceAt(cluster, deviceOfNode(cluster, node)).id;
            if (const auto why = hostNameProblem(id); why && reported.insert("type=" + id).second)
                d.error(rp + "/node", "its device id cannot be a FlagScale hostfile type=: " + *why);
        }
}

} // namespace

bool analyseMegatron(const Plan &plan, const Cluster &cluster, const Model &model, LayerSplitStyle style,
                     MegatronShape &shape, Diagnostics &diags)
{
    Diagnostics d(diags.file());
    validatePlan(plan, cluster, model, d);
    if (!d.empty()) {
        diags.append(d);
        return false;
    }
    checkMegatronVendors(plan, cluster, d);
    checkContextParallelAttention(plan, cluster, model, d);
    checkMegatronUniform(plan, shape, d);
    checkJobRecompute(plan, shape, d);
    checkMegatronSplit(plan, style, shape, d);
    if (!d.empty()) {
        finishHints(plan, cluster, model, d, diags);
        return false;
    }
    if (!placeMegatronRanks(plan, cluster, shape, d)) {
        diags.append(d);
        return false;
    }
    if (model.shape.isMoe() && shape.tpPpDpOrder && plan.pp() > 1
        && expertDataParallel(plan, plan.stages.front()) != shape.dp) {
        // parallel_state.initialize_model_parallel: "When not using pp-last rank ordering, the data
        // parallel size of the attention and moe layers must be the same".
        diags.error("/expertParallel",
                    "the plan's placement needs Megatron's tp-cp-ep-pp-dp rank order (--use-tp-pp-dp-mapping), where "
                    "the expert data-parallel size must equal the DP size "
                        + std::to_string(shape.dp) + ", found "
                        + std::to_string(expertDataParallel(plan, plan.stages.front()))
                        + "; use expertTp x expertParallel = TP x CP or place the stages node by node");
        return false;
    }
    shape.device = shape.nodes.front().device;
    shape.globalBatch = plan.globalBatch;
    shape.microBatches = plan.microBatches();
    return true;
}

bool analyseFlagScale(const Plan &plan, const Cluster &cluster, const Model &model, FlagScaleShape &f,
                      Diagnostics &diags)
{
    Diagnostics d(diags.file());
    validatePlan(plan, cluster, model, d);
    if (d.empty())
        checkStagesFitMeshes(plan, cluster, d);
    if (!d.empty()) {
        diags.append(d);
        return false;
    }
    buildMeshes(plan, cluster, f, d);
    checkFlagScaleVendors(cluster, f, d);
    checkContextParallelAttention(plan, cluster, model, d);
    if (plan.virtualStages > 1)
        d.error("/virtualStages",
                "expected 1 for FlagScale (its heterogeneous hetero_pipeline_layer_split has no virtual stages), "
                "found "
                    + std::to_string(plan.virtualStages) + " - export the interleaved plan for Megatron-LM");
    if (plan.fsdp != DpSharding::None)
        d.error("/fsdp",
                "expected \"none\" for FlagScale (its heterogeneous trainer builds its own data-parallel groups; "
                "Megatron-FSDP is not one of them), found \""
                    + std::string(toString(plan.fsdp)) + "\" - export the plan for Megatron-LM");
    if (model.shape.isMoe())
        d.error("/expertParallel",
                "expected a dense model for FlagScale: this exporter does not write MoE models into FlagScale's "
                "heterogeneous meshes (their expert-parallel slot and expert groups are not checked against "
                "FlagScale's trainer) - export the plan for Megatron-LM");
    checkMicroBatches(plan, f, d);
    checkEmbeddings(plan, model, f, d);
    checkFlagScaleRecompute(plan, f, d);
    placeHosts(plan, cluster, f, d);
    checkHostfileNames(plan, cluster, d);
    diags.append(d);
    return d.empty();
}

bool checkLaunchTarget(LaunchTarget target, const Plan &plan, const Cluster &cluster, const Model &model,
                       Diagnostics &diags)
{
    switch (target) {
    case LaunchTarget::Megatron: {
        MegatronShape shape;
        return analyseMegatron(plan, cluster, model, LayerSplitStyle::Layout, shape, diags);
    }
    case LaunchTarget::FlagScale: {
        FlagScaleShape shape;
        return analyseFlagScale(plan, cluster, model, shape, diags);
    }
    case LaunchTarget::Any:
        break;
    }
    Diagnostics d(diags.file());
    validatePlan(plan, cluster, model, d);
    diags.append(d);
    return d.empty();
}

std::vector<LaunchTarget> launchersOf(const Plan &plan, const Cluster &cluster, const Model &model)
{
    std::vector<LaunchTarget> out;
    for (LaunchTarget t : {LaunchTarget::Megatron, LaunchTarget::FlagScale}) {
        Diagnostics d;
        if (checkLaunchTarget(t, plan, cluster, model, d))
            out.push_back(t);
    }
    return out;
}

std::string launchersText(const std::vector<LaunchTarget> &launchers)
{
    std::string out;
    for (LaunchTarget t : launchers)
        out += (out.empty() ? "" : ", ") + std::string(toString(t));
    return out.empty() ? "no launcher" : out;
}

DefaultTarget defaultLaunchTarget(const Cluster &cluster)
{
    std::set<std::string> types, vendors;
    std::vector<std::string> flagScaleIdle, megatronIdle;
    bool flagScaleSome = false, megatronSome = false;
    for (const NodeGroup &g : cluster.groups) {
        const GpuSpec &dev = cluster.deviceOf(g);
        types.insert(dev.id);
        vendors.insert(dev.vendor);
        const bool fs = targetRunsDevice(LaunchTarget::FlagScale, dev);
        flagScaleSome = flagScaleSome || fs;
        megatronSome = megatronSome || targetRunsDevice(LaunchTarget::Megatron, dev);
        if (!fs)
            flagScaleIdle.push_back(printableText(g.name) + " (" + printableText(dev.id) + ", "
                                    + printableText(dev.vendor) + ")");
    }
    const std::string vendor = vendors.empty() ? std::string() : *vendors.begin();
    if (types.size() <= 1) {
        if (types.empty() || megatronRunsVendor(vendor))
            return {LaunchTarget::Megatron, "one device type: upstream Megatron-LM"};
        if (flagScaleSome)
            return {LaunchTarget::FlagScale,
                    "one device type of a vendor upstream Megatron-LM does not run (" + printableText(vendor)
                        + "): FlagScale"};
        return {LaunchTarget::Any, "no launcher runs " + printableText(vendor) + " GPUs: the whole space, no launcher"};
    }
    if (flagScaleIdle.empty())
        return {LaunchTarget::FlagScale, "several device types that FlagScale runs: FlagScale heterogeneous meshes"};
    if (vendors.size() == 1 && megatronRunsVendor(vendor))
        return {LaunchTarget::Megatron,
                "several device types of one vendor (" + printableText(vendor)
                    + ") that FlagScale does not run: one upstream Megatron-LM job"};
    std::string idle;
    for (const std::string &g : flagScaleIdle)
        idle += (idle.empty() ? "" : ", ") + g;
    if (flagScaleSome)
        return {LaunchTarget::FlagScale,
                "mixed vendors: FlagScale runs the heterogeneous part; it cannot run " + idle
                    + ", which stay idle (--target megatron: one vendor's GPUs; --target any: every GPU, no launcher)"};
    if (megatronSome)
        return {LaunchTarget::Megatron,
                "mixed vendors that FlagScale does not run (" + idle
                    + "): upstream Megatron-LM on one vendor's GPUs, the others idle (--target any: every GPU, no "
                      "launcher)"};
    return {LaunchTarget::Any, "no launcher runs these vendors (" + idle + "): the whole space, no launcher"};
}

} // namespace memx
