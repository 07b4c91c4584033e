// FlagScale heterogeneous export: experiment YAML, train YAML and a hostfile with type=.
// Keys and validation rules: ../shared/reference/launch-and-formulas.md section 2 and FlagScale's
// flagscale/runner/runner_train.py + utils.py (see docs/export.md).
#include "exportcommon.h"

#include "memx/export/megatronargs.h"
#include "memx/util/jsonreader.h"

#include <map>
#include <set>
#include <sstream>

namespace memx::exportdetail {
namespace {

/// Iterations of the default (mock data) run; also the checkpoint interval.
constexpr int kTrainIters = 100;

/// A FlagScale process mesh: consecutive stages with one device type, TP and DP.
struct Mesh {
    int device = 0;
    int tp = 1;
    int dp = 1;
    std::vector<int> stages;
};

/// A plan reduced to what FlagScale's heterogeneous mode expresses.
struct FlagScaleShape {
    std::vector<Mesh> meshes;
    std::vector<int> typeOrder; ///< device types in mesh order, each once
    std::vector<NodeLaunch> hosts; ///< hostfile order = node rank
    int microBatch = 1; ///< mesh 0's
    bool partialReduce = false;
    std::set<RecomputeMethod> methods;
};

/// Vendors with an adaptation in upstream FlagScale (its hardware/ folder) that the catalogue
/// knows, and the variable their PyTorch plug-in reads for the visible devices.
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

const char *yamlBool(bool b)
{
    return b ? "true" : "false";
}

const GpuSpec &deviceOf(const ExportRequest &request, int device)
{
    return request.cluster.devices[static_cast<size_t>(device)];
}

/// Every stage must be one (device type, TP) so that it fits in a mesh.
void checkStagesFitMeshes(const ExportRequest &request, Diagnostics &d)
{
    const Cluster &cluster = request.cluster;
    for (size_t s = 0; s < request.plan.stages.size(); ++s) {
        const Stage &st = request.plan.stages[s];
        const int dev0 = deviceOfNode(cluster, st.replicas.front().node);
        for (size_t i = 1; i < st.replicas.size(); ++i) {
            const Replica &r = st.replicas[i];
            const std::string rp = jsonPointerJoin(jsonPointerJoin("/stages", s) + "/replicas", i);
            const int dev = deviceOfNode(cluster, r.node);
            if (dev != dev0) {
                d.error(rp + "/node",
                        "expected a " + printableText(deviceOf(request, dev0).id)
                            + " node like replica 0 (a FlagScale process mesh has one device type), found "
                            + printableText(r.node) + " (" + printableText(deviceOf(request, dev).id) + ")");
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
void buildMeshes(const ExportRequest &request, FlagScaleShape &f, Diagnostics &d)
{
    const Plan &plan = request.plan;
    for (size_t s = 0; s < plan.stages.size(); ++s) {
        const Stage &st = plan.stages[s];
        Mesh m {deviceOfNode(request.cluster, st.replicas.front().node), st.replicas.front().tp, st.dp(), {}};
        const Mesh *last = f.meshes.empty() ? nullptr : &f.meshes.back();
        if (!last || last->device != m.device || last->tp != m.tp || last->dp != m.dp)
            f.meshes.push_back(m);
        f.meshes.back().stages.push_back(static_cast<int>(s));
    }
    // FlagScale orders ranks by the first index of their device type in hetero_device_types, so the
    // meshes of one device type must be consecutive along the pipeline.
    for (const Mesh &m : f.meshes) {
        if (!f.typeOrder.empty() && f.typeOrder.back() == m.device)
            continue;
        const std::string id = printableText(deviceOf(request, m.device).id);
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
void checkVendors(const ExportRequest &request, const FlagScaleShape &f, Diagnostics &d)
{
    for (const Mesh &m : f.meshes) {
        const GpuSpec &g = deviceOf(request, m.device);
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
void checkMicroBatches(const ExportRequest &request, FlagScaleShape &f, Diagnostics &d)
{
    const Plan &plan = request.plan;
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
        const Mesh &m = f.meshes[mi];
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
void checkEmbeddings(const ExportRequest &request, FlagScaleShape &f, Diagnostics &d)
{
    const Mesh &first = f.meshes.front();
    const Mesh &last = f.meshes.back();
    const std::string lastStage = jsonPointerJoin("/stages", request.plan.stages.size() - 1);
    if (!request.model.shape.tiedEmbeddings)
        return;
    if (first.tp != last.tp)
        d.error(lastStage + "/replicas/0/tp",
                "FlagScale rule: with tied input/output embeddings the first and last meshes need the same TP ("
                    + std::to_string(first.tp) + "), found " + std::to_string(last.tp)
                    + " - untie the embeddings or give the last stage TP " + std::to_string(first.tp));
    if (first.dp != last.dp && request.plan.distributedOptimizer) {
        if (first.dp % last.dp != 0 && last.dp % first.dp != 0)
            d.error(lastStage + "/replicas",
                    "FlagScale rule: with tied embeddings and the distributed optimizer the first and last "
                    "meshes' DP must divide one another, found "
                        + std::to_string(first.dp) + " and " + std::to_string(last.dp));
        f.partialReduce = true;
    }
}

/// Recompute: FlagScale's per-stage keys know full and off; selective only for the whole job.
void checkRecompute(const ExportRequest &request, FlagScaleShape &f, Diagnostics &d)
{
    const Plan &plan = request.plan;
    for (const Stage &st : plan.stages)
        f.methods.insert(st.recompute.method);
    if (!f.methods.count(RecomputeMethod::Selective) || f.methods.size() == 1)
        return;
    std::string list;
    for (size_t s = 0; s < plan.stages.size(); ++s)
        list += (s ? ", " : "") + std::string("stage ") + std::to_string(s) + " "
            + toString(plan.stages[s].recompute.method);
    d.error("/stages",
            "expected selective recompute on all stages or on none (FlagScale's per-stage recompute "
            "keys choose between full and off only), found "
                + list);
}

/// Logical rank order: mesh after mesh, inside a mesh tp-cp-ep-dp-pp. With static rendezvous the
/// physical order is hostfile order x local rank, so every node must be one contiguous block.
void placeHosts(const ExportRequest &request, FlagScaleShape &f, Diagnostics &d)
{
    const Plan &plan = request.plan;
    std::vector<RankSlot> logical;
    for (const Mesh &m : f.meshes)
        for (int s : m.stages)
            for (int dpi = 0; dpi < m.dp; ++dpi)
                for (int t = 0; t < m.tp; ++t) {
                    const Replica &r = plan.stages[static_cast<size_t>(s)].replicas[static_cast<size_t>(dpi)];
                    logical.push_back({s, dpi, t, r.node, r.gpus[static_cast<size_t>(t)]});
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
            n.device = deviceOfNode(request.cluster, n.node);
            n.firstGlobalRank = static_cast<int>(i);
            f.hosts.push_back(n);
        }
        f.hosts.back().slots.push_back(logical[i]);
    }
}

/// Host names and device ids go into the hostfile (host slots=N type=ID) and ssh command lines.
void checkHostfileNames(const ExportRequest &request, Diagnostics &d)
{
    std::set<std::string> reported;
    for (size_t s = 0; s < request.plan.stages.size(); ++s)
        for (size_t i = 0; i < request.plan.stages[s].replicas.size(); ++i) {
            const std::string &node = request.plan.stages[s].replicas[i].node;
            const std::string rp = jsonPointerJoin(jsonPointerJoin("/stages", s) + "/replicas", i);
            if (const auto why = hostNameProblem(node); why && reported.insert(node).second)
                d.error(rp + "/node", "cannot be a FlagScale hostfile host: " + *why);
            const std::string &id = deviceOf(request, deviceOfNode(request.cluster, node)).id;
            if (const auto why = hostNameProblem(id); why && reported.insert("type=" + id).second)
                d.error(rp + "/node", "its device id cannot be a FlagScale hostfile type=: " + *why);
        }
}

bool analyseFlagScale(const ExportRequest &request, FlagScaleShape &f, Diagnostics &diags)
{
    Diagnostics d(planFileName(request));
    validatePlan(request.plan, request.cluster, request.model, d);
    if (d.empty())
        checkStagesFitMeshes(request, d);
    if (!d.empty()) {
        diags.append(d);
        return false;
    }
    buildMeshes(request, f, d);
    checkVendors(request, f, d);
    checkMicroBatches(request, f, d);
    checkEmbeddings(request, f, d);
    checkRecompute(request, f, d);
    placeHosts(request, f, d);
    checkHostfileNames(request, d);
    diags.append(d);
    return d.empty();
}

std::string headerComment(const ExportRequest &request)
{
    std::ostringstream head;
    head << "# Generated by memx " << MEMX_VERSION << " on " << printableText(exportDate(request.options))
         << " from plan \"" << printableText(request.plan.name) << "\"\n";
    head << "#   cluster \"" << printableText(request.cluster.name) << "\", model " << printableText(request.model.id)
         << "\n";
    head << "#   " << printableText(request.plan.summary(request.cluster)) << "\n";
    return head.str();
}

std::string experimentYaml(const ExportRequest &request, const FlagScaleShape &f)
{
    const std::string name = jobName(request);
    const std::string dir = request.options.outputDir.empty() ? "." : request.options.outputDir;
    int maxSlots = 0;
    for (const NodeLaunch &h : f.hosts)
        maxSlots = std::max(maxSlots, static_cast<int>(h.slots.size()));
    std::ostringstream e;
    e << "# FlagScale heterogeneous experiment (" << f.meshes.size() << " process meshes, " << f.hosts.size()
      << " hosts)\n";
    e << headerComment(request);
    e << "# From the FlagScale checkout:\n";
    e << "#   python run.py --config-path " << printableText(dir)
      << "/conf --config-name memx action=dryrun  # check\n";
    e << "#   python run.py --config-path " << printableText(dir) << "/conf --config-name memx action=run\n";
    e << "# Hosts are the cluster's node names: replace them by reachable host names or IPs in the hostfile\n";
    e << "# (and below), keeping their order - it is the node rank order.\n";
    e << "defaults:\n  - train: memx\n  - _self_\n\n";
    e << "experiment:\n";
    e << "  exp_name: " << yamlQuote(name) << "\n";
    e << "  exp_dir: " << yamlQuote("./outputs/" + name) << "\n";
    e << "  task:\n    type: train\n    backend: megatron\n    entrypoint: "
      << yamlQuote(request.options.flagscaleEntrypoint) << "\n";
    e << "  runner:\n";
    e << "    backend: torchrun\n";
    e << "    nnodes: " << f.hosts.size() << "\n";
    e << "    nproc_per_node: " << maxSlots << "\n";
    e << "    hostfile: " << yamlQuote(dir + "/hostfile") << "\n";
    e << "    rdzv_backend: static\n";
    e << "    ssh_port: 22\n";
    e << "    master_addr: "
      << yamlQuote(request.options.masterAddr.empty() ? f.hosts.front().node : request.options.masterAddr) << "\n";
    e << "    master_port: " << request.options.masterPort << "\n";
    e << "  envs:\n";
    e << "    CUDA_DEVICE_MAX_CONNECTIONS: 1\n";
    // The runner takes nproc_per_node = min(slots, nproc_per_node, number of *_VISIBLE_DEVICES) and
    // needs the variable on every host (runner_train.py run_node); it lists local rank -> GPU.
    e << "    node_specific:  # per host: the plan's GPUs in local-rank order (the runner counts them)\n";
    for (const NodeLaunch &h : f.hosts) {
        std::vector<int> gpus;
        for (const RankSlot &s : h.slots)
            gpus.push_back(s.gpu);
        e << "      " << yamlQuote(h.node) << ":\n        "
          << *flagScaleVisibleDevices(deviceOf(request, h.device).vendor) << ": " << yamlQuote(joinInts(gpus)) << "\n";
    }
    e << "\naction: run\n\nhydra:\n  run:\n    dir: ${experiment.exp_dir}/hydra\n";
    return e.str();
}

std::string recomputeYaml(const Plan &plan, const std::set<RecomputeMethod> &methods)
{
    std::ostringstream t;
    if (methods.count(RecomputeMethod::Selective)) {
        t << "  recompute:\n    recompute_granularity: selective\n";
    } else if (methods.count(RecomputeMethod::Full)) {
        const int m = plan.microBatches();
        t << "  recompute:\n";
        t << "    recompute_granularity: full\n    recompute_method: uniform\n    recompute_num_layers: 1\n";
        t << "    # per stage [stages, micro-batches, value]: granularity 1 = full / 0 = off,\n";
        t << "    # method 0 = uniform / 1 = block, num_layers = layers recomputed\n";
        std::ostringstream g, me, nl;
        for (const Stage &st : plan.stages) {
            const Recompute r = normalisedRecompute(st.recompute, st.layerCount);
            const bool full = r.method == RecomputeMethod::Full;
            g << "      - [1, " << m << ", " << (full ? 1 : 0) << "]\n";
            me << "      - [1, " << m << ", " << (full && r.layers > 0 ? 1 : 0) << "]\n";
            nl << "      - [1, " << m << ", " << (!full ? 0 : r.layers > 0 ? r.layers : 1) << "]\n";
        }
        t << "    recompute_granularity_per_stage_micro_batch:\n" << g.str();
        t << "    recompute_method_per_stage_micro_batch:\n" << me.str();
        t << "    recompute_num_layers_per_stage_micro_batch:\n" << nl.str();
    }
    return t.str();
}

std::string heteroYaml(const ExportRequest &request, const FlagScaleShape &f)
{
    std::set<std::string> vendors;
    for (int t : f.typeOrder)
        vendors.insert(deviceOf(request, t).vendor);
    const bool cpuComm = vendors.size() > 1;
    std::ostringstream t;
    t << "  hetero:\n";
    t << "    enable_hetero: true\n";
    t << "    hetero_use_cpu_communication: " << yamlBool(cpuComm)
      << (cpuComm ? "  # several vendors: their collective libraries cannot talk to each other, use gloo" : "") << "\n";
    t << "    # mesh format [tp, cp, ep, dp, pp] per mesh, meshes in device-type order\n";
    t << "    hetero_process_meshes: [";
    for (size_t i = 0; i < f.meshes.size(); ++i)
        t << (i ? ", " : "") << f.meshes[i].tp << ", 1, 1, " << f.meshes[i].dp << ", " << f.meshes[i].stages.size();
    t << "]\n";
    t << "    hetero_pipeline_layer_split: [";
    for (size_t s = 0; s < request.plan.stages.size(); ++s)
        t << (s ? ", " : "") << request.plan.stages[s].layerCount;
    t << "]\n";
    t << "    hetero_device_types: [";
    for (size_t i = 0; i < f.meshes.size(); ++i)
        t << (i ? ", " : "") << yamlQuote(deviceOf(request, f.meshes[i].device).id);
    t << "]\n";
    t << "    hetero_current_device_type: " << yamlQuote(deviceOf(request, f.meshes.front().device).id)
      << "  # overwritten per host from the hostfile type=\n";
    t << "    standalone_embedding_stage: false\n";
    if (f.partialReduce)
        t << "    use_partial_reduce_for_shared_embedding: true\n";
    return t.str();
}

std::string trainYaml(const ExportRequest &request, const FlagScaleShape &f)
{
    const Plan &plan = request.plan;
    const Model &model = request.model;
    std::string precisionNote;
    const bool bf16 = chooseBf16(request, precisionNote);
    std::ostringstream t;
    t << "# FlagScale train config (heterogeneous: enable_hetero)\n";
    t << headerComment(request);
    if (!precisionNote.empty())
        t << "# Precision: fp16 because " << printableText(precisionNote) << ".\n";
    t << "system:\n";
    t << "  tensor_model_parallel_size: " << f.meshes.front().tp << "\n";
    t << "  pipeline_model_parallel_size: " << plan.pp() << "\n";
    t << "  context_parallel_size: 1\n";
    t << "  sequence_parallel: " << yamlBool(plan.sequenceParallel) << "\n";
    t << "  use_distributed_optimizer: " << yamlBool(plan.distributedOptimizer) << "\n";
    t << "  distributed_backend: nccl\n";
    if (model.training.optimizer == Optimizer::SGD)
        t << "  optimizer: sgd\n";
    t << heteroYaml(request, f);
    t << recomputeYaml(plan, f.methods);
    t << "  precision:\n";
    if (bf16)
        t << "    bf16: true\n";
    else
        t << "    fp16: true\n    initial_loss_scale: 65536\n    loss_scale_window: 1000\n    hysteresis: 2\n"
             "    min_loss_scale: 1\n";
    t << "    attention_softmax_in_fp32: true\n    accumulate_allreduce_grads_in_fp32: true\n";
    t << "  logging:\n    log_interval: 1\n";
    t << "  checkpoint:\n";
    t << "    # FlagScale's runner always passes --save <exp_dir>/checkpoints; Megatron then needs an interval\n";
    t << "    save_interval: " << kTrainIters << "\n";
    t << "\nmodel:\n";
    for (const auto &[flag, value] : megatronShapeFlags(model)) {
        std::string key = flag.substr(2);
        for (char &c : key)
            if (c == '-')
                c = '_';
        t << "  " << key << ": " << (value.empty() ? "true" : value) << "\n";
    }
    t << "  micro_batch_size: " << f.microBatch << "  # mesh 0; mesh i runs dp_0 x " << f.microBatch << " / dp_i\n";
    t << "  global_batch_size: " << plan.globalBatch << "\n";
    t << "  train_iters: " << kTrainIters << "\n";
    t << "  optimizer:\n    weight_decay: 0.1\n    clip_grad: 1.0\n    lr_scheduler:\n      lr: 1.0e-4\n"
         "      min_lr: 1.0e-5\n      lr_warmup_iters: 10\n      lr_decay_style: cosine\n";
    t << "\ndata:\n";
    t << "  # Mock data: replace with data_path, split and your tokenizer.\n";
    t << "  mock_data: true\n";
    t << "  tokenizer:\n    tokenizer_type: NullTokenizer\n    vocab_size: " << model.shape.vocab << "\n";
    return t.str();
}

std::string hostfile(const ExportRequest &request, const FlagScaleShape &f)
{
    // Names were checked by checkHostfileNames: no spaces, '#' or newlines can reach these lines.
    std::ostringstream h;
    h << "# ip slots type=xxx  (FlagScale hostfile; order = node rank = rank order)\n";
    for (const NodeLaunch &n : f.hosts)
        h << n.node << " slots=" << n.slots.size() << " type=" << deviceOf(request, n.device).id << "\n";
    return h.str();
}

} // namespace

std::vector<ExportFile> writeFlagScale(const ExportRequest &request, Diagnostics &diags)
{
    FlagScaleShape f;
    if (!analyseFlagScale(request, f, diags))
        return {};
    return {{"conf/memx.yaml", experimentYaml(request, f), false},
            {"conf/train/memx.yaml", trainYaml(request, f), false},
            {"hostfile", hostfile(request, f), false}};
}

bool flagScaleAccepts(const ExportRequest &request)
{
    FlagScaleShape f;
    Diagnostics d;
    return analyseFlagScale(request, f, d);
}

} // namespace memx::exportdetail
