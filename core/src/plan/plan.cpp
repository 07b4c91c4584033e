#include "memx/plan/plan.h"

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/util/diagnostic.h"
#include "memx/util/jsonreader.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace memx {

const char *toString(RecomputeMethod v)
{
    switch (v) {
    case RecomputeMethod::None:
        return "none";
    case RecomputeMethod::Selective:
        return "selective";
    case RecomputeMethod::Full:
        return "full";
    }
    return "none";
}

const char *toString(CpComm v)
{
    switch (v) {
    case CpComm::P2P:
        return "p2p";
    case CpComm::AllGather:
        return "all_gather";
    case CpComm::A2A:
        return "a2a";
    }
    return "p2p";
}

std::optional<CpComm> cpCommFromString(const std::string &text)
{
    for (CpComm c : {CpComm::P2P, CpComm::AllGather, CpComm::A2A})
        if (text == toString(c))
            return c;
    return std::nullopt;
}

const char *toString(Fp8Format v)
{
    switch (v) {
    case Fp8Format::Off:
        return "off";
    case Fp8Format::Hybrid:
        return "hybrid";
    case Fp8Format::E4M3:
        return "e4m3";
    }
    return "off";
}

std::optional<Fp8Format> fp8FromString(const std::string &text)
{
    for (Fp8Format f : {Fp8Format::Off, Fp8Format::Hybrid, Fp8Format::E4M3})
        if (text == toString(f))
            return f;
    return std::nullopt;
}

const char *toString(DpSharding v)
{
    switch (v) {
    case DpSharding::None:
        return "none";
    case DpSharding::Optimizer:
        return "optim";
    case DpSharding::Gradients:
        return "optim_grads";
    case DpSharding::Parameters:
        return "optim_grads_params";
    }
    return "none";
}

std::optional<DpSharding> dpShardingFromString(const std::string &text)
{
    for (DpSharding d : {DpSharding::None, DpSharding::Optimizer, DpSharding::Gradients, DpSharding::Parameters})
        if (text == toString(d))
            return d;
    return std::nullopt;
}

DpSharding dpShardingOf(const Plan &plan)
{
    if (plan.fsdp != DpSharding::None)
        return plan.fsdp;
    return plan.distributedOptimizer ? DpSharding::Optimizer : DpSharding::None;
}

void setDpSharding(Plan &plan, DpSharding s)
{
    plan.distributedOptimizer = s != DpSharding::None;
    plan.fsdp = s >= DpSharding::Gradients ? s : DpSharding::None;
}

std::string fp8ShapeProblem(const Model &model, int tp, int microBatch, int contextParallel)
{
    const ModelShape &s = model.shape;
    tp = std::max(1, tp);
    const long long tokens = static_cast<long long>(microBatch) * s.seqLength / std::max(1, contextParallel);
    if (tokens % 8 != 0)
        return "a GEMM's " + std::to_string(tokens)
            + " tokens (micro-batch x sequence / cp) are not a multiple of 8, which FP8 GEMMs need";
    const long long d = model.kvChannels(), q = d * s.heads, kv = d * s.kvGroups;
    const long long ffnOut = static_cast<long long>(s.ffnHidden) * (s.swiglu ? 2 : 1);
    struct Dim {
        const char *what;
        long long value;
        int multiple;
    };
    const Dim dims[] = {{"hidden size (QKV and FC1 input)", s.hidden, 16},
                        {"attention output per TP rank (projection input)", q / tp, 16},
                        {"FFN size per TP rank (FC2 input)", s.ffnHidden / tp, 16},
                        {"QKV output per TP rank", (q + 2 * kv) / tp, 8},
                        {"FC1 output per TP rank", ffnOut / tp, 8}};
    for (const Dim &x : dims)
        if (x.value % x.multiple != 0)
            return "the " + std::string(x.what) + " of " + std::to_string(x.value) + " is not a multiple of "
                + std::to_string(x.multiple) + ", which FP8 GEMMs need";
    return {};
}

int Stage::samplesPerStep() const
{
    int n = 0;
    for (const Replica &r : replicas)
        n += r.microBatch;
    return n;
}

int Plan::totalGpus() const
{
    int n = 0;
    for (const Stage &s : stages)
        for (const Replica &r : s.replicas)
            n += r.tp * std::max(1, contextParallel);
    return n;
}

int Plan::microBatches() const
{
    if (stages.empty())
        return 0;
    const int step = stages.front().samplesPerStep();
    if (step <= 0 || globalBatch % step != 0)
        return 0;
    return globalBatch / step;
}

std::string Plan::summary(const Cluster &cluster) const
{
    std::ostringstream out;
    out << "PP" << pp() << " m" << microBatches();
    if (virtualStages > 1)
        out << " vpp" << virtualStages;
    if (overlapGradReduce || overlapParamGather)
        out << " overlap=" << (overlapGradReduce ? "grad" : "") << (overlapGradReduce && overlapParamGather ? "+" : "")
            << (overlapParamGather ? "param" : "");
    if (contextParallel > 1)
        out << " cp" << contextParallel << "(" << toString(cpComm) << ")";
    if (fp8 != Fp8Format::Off)
        out << " fp8=" << toString(fp8);
    if (fsdp != DpSharding::None)
        out << " fsdp=" << toString(fsdp);
    if (expertParallel > 1 || expertTensorParallel > 0) {
        out << " ep" << expertParallel;
        if (expertTensorParallel > 0)
            out << " etp" << expertTensorParallel;
    }
    for (const Stage &s : stages) {
        out << " | " << s.firstLayer << "-" << (s.firstLayer + s.layerCount - 1);
        // Group replicas by (device, tp, microBatch) so mixed stages read naturally.
        std::map<std::tuple<std::string, int, int>, int> kinds;
        for (const Replica &r : s.replicas) {
            std::string dev = "?";
            if (auto node = cluster.findNode(r.node); node && node->device >= 0)
                dev = cluster.devices[static_cast<size_t>(node->device)].id;
            ++kinds[{dev, r.tp, r.microBatch}];
        }
        bool first = true;
        for (const auto &[k, n] : kinds) {
            out << (first ? " " : " + ") << std::get<0>(k) << " TP" << std::get<1>(k) << "xDP" << n << " mb"
                << std::get<2>(k);
            first = false;
        }
        if (s.recompute.method != RecomputeMethod::None) {
            out << " rc=" << toString(s.recompute.method);
            if (s.recompute.method == RecomputeMethod::Full && s.recompute.layers > 0)
                out << ":" << s.recompute.layers;
        }
    }
    return out.str();
}

namespace {

/// Interleaved 1F1B as Megatron-LM accepts it: pp > 2 (without overlapped P2P), equal chunks per
/// rank, and micro-batches in whole groups of pp (microbatch_group_size_per_vp_stage = pp).
void validateInterleaving(const Plan &plan, Diagnostics &diags)
{
    const int v = plan.virtualStages;
    if (v < 1 || v > 1024) {
        diags.error("/virtualStages",
                    "expected model chunks per pipeline rank from 1 to 1024, found " + std::to_string(v));
        return;
    }
    if (v == 1)
        return;
    if (plan.pp() < 3)
        diags.error("/virtualStages",
                    "expected 1 with " + std::to_string(plan.pp())
                        + " pipeline stages (Megatron-LM's interleaved schedule needs at least 3), found "
                        + std::to_string(v));
    for (size_t si = 0; si < plan.stages.size(); ++si)
        if (plan.stages[si].layerCount % v != 0)
            diags.error(jsonPointerJoin("/stages", si) + "/layerCount",
                        "expected a multiple of the " + std::to_string(v)
                            + " virtual stages (each rank holds equal model chunks), found "
                            + std::to_string(plan.stages[si].layerCount));
    const int m = plan.microBatches();
    if (m > 0 && plan.pp() >= 3 && m % plan.pp() != 0)
        diags.error("/globalBatch",
                    "expected micro-batches in whole groups of the " + std::to_string(plan.pp())
                        + " pipeline stages with the interleaved schedule, found " + std::to_string(m)
                        + " micro-batches");
}

/// Context parallelism as Megatron-LM accepts it: the sequence splits into 2 x cp load-balanced
/// chunks; Ulysses (a2a) spreads each TP rank's heads over the CP ranks.
void validateContextParallel(const Plan &plan, const Model &model, Diagnostics &diags)
{
    const int cp = plan.contextParallel;
    if (cp < 1 || cp > 1024) {
        diags.error("/contextParallel", "expected a context-parallel size from 1 to 1024, found " + std::to_string(cp));
        return;
    }
    if (cp == 1)
        return;
    if (model.shape.seqLength % (2 * cp) != 0)
        diags.error("/contextParallel",
                    "expected a size whose 2 x cp chunks divide the sequence of "
                        + std::to_string(model.shape.seqLength) + " tokens, found " + std::to_string(cp));
    if (plan.cpComm == CpComm::A2A)
        for (size_t si = 0; si < plan.stages.size(); ++si)
            for (size_t ri = 0; ri < plan.stages[si].replicas.size(); ++ri) {
                const int tp = std::max(1, plan.stages[si].replicas[ri].tp);
                if ((model.shape.heads / tp) % cp != 0 || (model.shape.kvGroups / tp) % cp != 0) {
                    diags.error("/cpComm",
                                "expected p2p or all_gather: a2a spreads heads over the CP ranks, and stage "
                                    + std::to_string(si) + "'s " + std::to_string(model.shape.heads / tp) + " heads ("
                                    + std::to_string(model.shape.kvGroups / tp)
                                    + " KV groups) per TP rank do not divide by cp " + std::to_string(cp));
                    return;
                }
            }
}

/// FP8: every replica's device has an FP8 peak (GpuSpec::denseFp8Tflops) and its GEMM shapes are
/// ones Transformer Engine runs in FP8.
void validateFp8(const Plan &plan, const Cluster &cluster, const Model &model, Diagnostics &diags)
{
    if (plan.fp8 == Fp8Format::Off)
        return;
    std::map<std::string, int> deviceOfNode;
    for (const Node &n : cluster.nodes())
        deviceOfNode.emplace(n.name, n.device);
    std::set<std::string> reported;
    for (size_t si = 0; si < plan.stages.size(); ++si)
        for (size_t ri = 0; ri < plan.stages[si].replicas.size(); ++ri) {
            const Replica &r = plan.stages[si].replicas[ri];
            const auto it = deviceOfNode.find(r.node);
            if (it == deviceOfNode.end())
                continue; // reported with the replica
            const GpuSpec &dev = cluster.devices[static_cast<size_t>(it->second)];
            if (!dev.denseFp8Tflops && reported.insert(dev.id).second)
                diags.error("/fp8",
                            "expected \"off\": " + dev.id + " (stage " + std::to_string(si) + ", node '" + r.node
                                + "') has no FP8 support in the catalogue (denseFp8Tflops); Transformer Engine "
                                  "trains in FP8 on NVIDIA Hopper/Ada/Blackwell and AMD CDNA3, found \""
                                + toString(plan.fp8) + "\"");
            const std::string shape = fp8ShapeProblem(model, r.tp, r.microBatch, plan.contextParallel);
            if (!shape.empty() && reported.insert("shape:" + shape).second)
                diags.error(jsonPointerJoin(jsonPointerJoin("/stages", si) + "/replicas", ri),
                            "expected GEMM shapes FP8 can run (fp8 \"" + std::string(toString(plan.fp8))
                                + "\"): " + shape);
        }
}

/// MoE as Megatron-LM accepts it (parallel_state's expert rank generator, arguments.py): the
/// experts divide by expertParallel, a stage's tp x cp x dp ranks by expertTp x expertParallel,
/// every replica of a stage has the same TP (one rank grid), the expert TP divides it and the
/// expert FFN, sequence parallelism with TP > 1 (Megatron's rule for MoE). This model's own
/// limits: an expert group covers whole replicas or lies inside one; no Megatron-FSDP.
void validateExperts(const Plan &plan, const Model &model, Diagnostics &diags)
{
    const MoeShape &moe = model.shape.moe;
    const int ep = plan.expertParallel, etpField = plan.expertTensorParallel;
    if (!model.shape.isMoe()) {
        if (ep != 1)
            diags.error("/expertParallel",
                        "expected 1: model '" + model.id + "' has no experts (shape.moe), found " + std::to_string(ep));
        if (etpField != 0)
            diags.error("/expertTensorParallel",
                        "expected no expert tensor parallelism: model '" + model.id + "' has no experts, found "
                            + std::to_string(etpField));
        return;
    }
    if (ep < 1 || moe.experts % ep != 0) {
        diags.error("/expertParallel",
                    "expected a divisor of the model's " + std::to_string(moe.experts) + " experts, found "
                        + std::to_string(ep));
        return;
    }
    if (etpField < 0 || etpField > 1024) {
        diags.error("/expertTensorParallel",
                    "expected 0 (the stage's TP) or an expert TP size from 1 to 1024, found "
                        + std::to_string(etpField));
        return;
    }
    const int cp = std::max(1, plan.contextParallel);
    for (size_t si = 0; si < plan.stages.size(); ++si) {
        const Stage &st = plan.stages[si];
        if (st.replicas.empty())
            continue;
        const int tp = std::max(1, st.replicas.front().tp);
        const std::string sp = jsonPointerJoin("/stages", si);
        bool sameTp = true;
        for (const Replica &r : st.replicas)
            sameTp = sameTp && r.tp == st.replicas.front().tp;
        if (!sameTp) {
            diags.error(sp + "/replicas",
                        "expected one TP size for every replica with experts (the expert groups span the "
                        "stage's ranks as one grid), found several");
            continue;
        }
        const int etp = plan.expertTp(tp);
        const long long ranks = static_cast<long long>(tp) * cp * st.dp();
        if (ranks % (static_cast<long long>(etp) * ep) != 0)
            diags.error("/expertParallel",
                        "expected expertTp x expertParallel (" + std::to_string(etp) + " x " + std::to_string(ep)
                            + ") to divide stage " + std::to_string(si) + "'s " + std::to_string(ranks)
                            + " ranks (TP x CP x DP), found " + std::to_string(etp * ep));
        const int width = tp * cp;
        if (etp > tp || tp % etp != 0)
            diags.error("/expertTensorParallel",
                        "expected a divisor of stage " + std::to_string(si) + "'s TP " + std::to_string(tp)
                            + " (the expert-TP group stays inside the TP group), found " + std::to_string(etp));
        else if (width % (etp * ep) != 0 && (etp * ep) % width != 0)
            diags.error("/expertParallel",
                        "expected expertTp x expertParallel (" + std::to_string(etp * ep)
                            + ") to divide or be a multiple of a replica's " + std::to_string(width)
                            + " TP x CP ranks (an expert group covers whole replicas or lies inside one), found "
                            + std::to_string(ep));
        if (moe.expertFfnHidden % etp != 0)
            diags.error("/expertTensorParallel",
                        "expected a divisor of the expert FFN size " + std::to_string(moe.expertFfnHidden) + ", found "
                            + std::to_string(etp));
        if (tp > 1 && !plan.sequenceParallel)
            diags.error("/sequenceParallel",
                        "expected true with TP " + std::to_string(tp)
                            + " on a model with experts (Megatron-LM: \"When using MoE and tensor parallelism, "
                              "sequence parallelism must be used\"), found false");
    }
    if (plan.fsdp != DpSharding::None)
        diags.error("/fsdp",
                    "expected \"none\" on a model with experts: the cost model does not shard experts with "
                    "Megatron-FSDP (use the distributed optimizer), found \""
                        + std::string(toString(plan.fsdp)) + "\"");
}

} // namespace

int expertDataParallel(const Plan &plan, const Stage &stage)
{
    if (stage.replicas.empty())
        return 1;
    const int tp = std::max(1, stage.replicas.front().tp);
    const long long ranks = static_cast<long long>(tp) * std::max(1, plan.contextParallel) * stage.dp();
    const long long group = static_cast<long long>(plan.expertTp(tp)) * std::max(1, plan.expertParallel);
    return static_cast<int>(std::max(1LL, ranks / std::max(1LL, group)));
}

void validatePlan(const Plan &plan, const Cluster &cluster, const Model &model, Diagnostics &diags)
{
    const int layers = model.shape.layers;
    if (plan.stages.empty()) {
        diags.error("/stages", "expected at least one pipeline stage, found none");
        return;
    }
    if (plan.globalBatch <= 0)
        diags.error("/globalBatch", "expected a positive global batch, found " + std::to_string(plan.globalBatch));

    std::map<std::string, Node> nodes;
    for (const Node &n : cluster.nodes())
        nodes.emplace(n.name, n);
    validateInterleaving(plan, diags);
    if (plan.overlapParamGather && !plan.distributedOptimizer)
        diags.error("/overlapParamGather",
                    "expected false without the distributed optimizer (Megatron-LM gathers parameter shards only "
                    "when the optimizer state is sharded: set distributedOptimizer), found true");
    else if (plan.overlapParamGather && !plan.overlapGradReduce)
        diags.error("/overlapParamGather",
                    "expected false without overlapGradReduce (Megatron-LM: --overlap-param-gather needs "
                    "--overlap-grad-reduce), found true");
    if (plan.fsdp == DpSharding::Optimizer)
        diags.error("/fsdp",
                    "expected \"optim_grads\" or \"optim_grads_params\" (Megatron-FSDP's \"optim\" is the distributed "
                    "optimizer: set distributedOptimizer instead), found \"optim\"");
    else if (plan.fsdp != DpSharding::None && !plan.distributedOptimizer)
        diags.error("/distributedOptimizer",
                    "expected true with fsdp \"" + std::string(toString(plan.fsdp))
                        + "\" (Megatron-FSDP shards the optimizer state too), found false");
    if (plan.fsdp != DpSharding::None && plan.stages.size() > 1)
        diags.error("/fsdp",
                    "expected a single pipeline stage with fsdp \"" + std::string(toString(plan.fsdp))
                        + "\" (Megatron-FSDP runs without pipeline parallelism), found "
                        + std::to_string(plan.stages.size()) + " stages");
    const int cp = plan.contextParallel;
    validateContextParallel(plan, model, diags);
    validateFp8(plan, cluster, model, diags);
    validateExperts(plan, model, diags);

    int nextLayer = 0;
    std::set<std::pair<std::string, int>> used;
    int firstStep = -1;
    for (size_t si = 0; si < plan.stages.size(); ++si) {
        const Stage &st = plan.stages[si];
        const std::string sp = jsonPointerJoin("/stages", si);
        if (st.firstLayer != nextLayer)
            diags.error(sp + "/firstLayer",
                        "expected " + std::to_string(nextLayer)
                            + " (stages must cover the layers in order without gaps), found "
                            + std::to_string(st.firstLayer));
        if (st.layerCount < 1)
            diags.error(sp + "/layerCount", "expected at least 1 layer, found " + std::to_string(st.layerCount));
        nextLayer = st.firstLayer + st.layerCount;
        if (st.recompute.method == RecomputeMethod::Full && st.recompute.layers > st.layerCount)
            diags.error(sp + "/recompute/layers",
                        "expected at most the stage's " + std::to_string(st.layerCount) + " layers, found "
                            + std::to_string(st.recompute.layers));
        if (st.replicas.empty()) {
            diags.error(sp + "/replicas", "expected at least one replica, found none");
            continue;
        }
        for (size_t ri = 0; ri < st.replicas.size(); ++ri) {
            const Replica &r = st.replicas[ri];
            const std::string rp = jsonPointerJoin(sp + "/replicas", ri);
            auto it = nodes.find(r.node);
            if (it == nodes.end()) {
                diags.error(rp + "/node",
                            "expected the name of a node of cluster '" + cluster.name + "', found \"" + r.node + "\"");
                continue;
            }
            const Node &node = it->second;
            if (r.tp < 1)
                diags.error(rp + "/tp", "expected a positive TP degree, found " + std::to_string(r.tp));
            if (r.microBatch < 1)
                diags.error(rp + "/microBatch",
                            "expected a positive micro-batch size, found " + std::to_string(r.microBatch));
            const long long width = static_cast<long long>(r.tp) * std::max(cp, 1);
            if (static_cast<long long>(r.gpus.size()) != width)
                diags.error(rp + "/gpus",
                            "expected " + std::to_string(width)
                                + (cp > 1 ? " GPU indices (TP x CP: one per TP rank of each CP rank), found "
                                          : " GPU indices (one per TP rank), found ")
                                + std::to_string(r.gpus.size()));
            if (width > node.gpus)
                diags.error(
                    rp + "/tp",
                    "expected at most " + std::to_string(node.gpus)
                        + (cp > 1 ? " GPUs for TP x CP (a replica stays within node '" : " (TP stays within node '")
                        + node.name + "'), found " + std::to_string(width));
            if (r.tp >= 1 && model.shape.heads % r.tp != 0)
                diags.error(rp + "/tp",
                            "expected a divisor of the model's " + std::to_string(model.shape.heads)
                                + " attention heads, found " + std::to_string(r.tp));
            else if (r.tp >= 1 && model.shape.kvGroups % r.tp != 0)
                diags.error(rp + "/tp",
                            "expected a divisor of the model's " + std::to_string(model.shape.kvGroups)
                                + " KV groups, found " + std::to_string(r.tp));
            for (size_t gi = 0; gi < r.gpus.size(); ++gi) {
                const int g = r.gpus[gi];
                const std::string gp = jsonPointerJoin(rp + "/gpus", gi);
                if (g < 0 || g >= node.gpus)
                    diags.error(gp,
                                "expected a GPU index from 0 to " + std::to_string(node.gpus - 1) + " on node '"
                                    + node.name + "', found " + std::to_string(g));
                else if (!used.insert({node.name, g}).second)
                    diags.error(gp,
                                "GPU " + std::to_string(g) + " of node '" + node.name
                                    + "' is already used by another replica");
            }
        }
        const int step = st.samplesPerStep();
        if (firstStep < 0) {
            firstStep = step;
            if (step > 0 && plan.globalBatch > 0 && plan.globalBatch % step != 0)
                diags.error("/globalBatch",
                            "expected a multiple of stage 0's " + std::to_string(step)
                                + " sequences per micro-batch step (sum of its replicas' micro-batches), found "
                                + std::to_string(plan.globalBatch));
        } else if (step != firstStep) {
            diags.error(sp + "/replicas",
                        "expected the replicas' micro-batches to add up to " + std::to_string(firstStep)
                            + " like stage 0 (every stage carries the same micro-batch), found "
                            + std::to_string(step));
        }
    }
    if (nextLayer != layers)
        diags.error("/stages",
                    "expected the stages to cover the model's " + std::to_string(layers) + " transformer layers, found "
                        + std::to_string(nextLayer));
}

} // namespace memx
