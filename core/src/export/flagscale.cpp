// FlagScale heterogeneous export: experiment YAML, train YAML and a hostfile with type=.
// Keys and validation rules: ../shared/reference/launch-and-formulas.md section 2 (see docs/export.md).
#include "exportcommon.h"

#include "memx/export/megatronargs.h"
#include "memx/util/jsonreader.h"

#include <map>
#include <set>
#include <sstream>

namespace memx::exportdetail {
namespace {

/// A FlagScale process mesh: consecutive stages with one device type, TP and DP.
struct Mesh {
    int device = 0;
    int tp = 1;
    int dp = 1;
    std::vector<int> stages;
};

std::string yamlString(const std::string &s)
{
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += '\\';
        out += c;
    }
    return out + "\"";
}

const char *yamlBool(bool b)
{
    return b ? "true" : "false";
}

} // namespace

std::vector<ExportFile> writeFlagScale(const ExportRequest &request, Diagnostics &diags)
{
    const Plan &plan = request.plan;
    const Cluster &cluster = request.cluster;
    const Model &model = request.model;
    Diagnostics d(planFileName(request));
    validatePlan(plan, cluster, model, d);
    if (!d.empty()) {
        diags.append(d);
        return {};
    }

    // Every stage must be one (device type, TP) so that it fits in a mesh.
    bool stagesOk = true;
    for (size_t s = 0; s < plan.stages.size(); ++s) {
        const Stage &st = plan.stages[s];
        const std::string sp = jsonPointerJoin("/stages", s);
        const int dev0 = deviceOfNode(cluster, st.replicas.front().node);
        for (size_t i = 1; i < st.replicas.size(); ++i) {
            const Replica &r = st.replicas[i];
            const std::string rp = jsonPointerJoin(sp + "/replicas", i);
            const int dev = deviceOfNode(cluster, r.node);
            if (dev != dev0) {
                d.error(rp + "/node",
                        "expected a " + cluster.devices[static_cast<size_t>(dev0)].id
                            + " node like replica 0 (a FlagScale process mesh has one device type), "
                              "found "
                            + r.node + " (" + cluster.devices[static_cast<size_t>(dev)].id + ")");
                stagesOk = false;
                break;
            }
            if (r.tp != st.replicas.front().tp) {
                d.error(rp + "/tp",
                        "expected TP " + std::to_string(st.replicas.front().tp)
                            + " like replica 0 (a FlagScale process mesh has one TP degree), found "
                            + std::to_string(r.tp));
                stagesOk = false;
                break;
            }
        }
    }
    if (!stagesOk) {
        diags.append(d);
        return {};
    }

    // Meshes: consecutive stages with the same device type, TP and DP.
    std::vector<Mesh> meshes;
    for (size_t s = 0; s < plan.stages.size(); ++s) {
        const Stage &st = plan.stages[s];
        Mesh m {deviceOfNode(cluster, st.replicas.front().node), st.replicas.front().tp, st.dp(), {}};
        if (meshes.empty() || meshes.back().device != m.device || meshes.back().tp != m.tp || meshes.back().dp != m.dp)
            meshes.push_back(m);
        meshes.back().stages.push_back(static_cast<int>(s));
    }
    // FlagScale orders ranks by the first index of their device type in hetero_device_types, so the
    // meshes of one device type must be consecutive along the pipeline.
    std::vector<int> typeOrder;
    for (const Mesh &m : meshes) {
        if (!typeOrder.empty() && typeOrder.back() == m.device)
            continue;
        for (int t : typeOrder)
            if (t == m.device) {
                d.error(jsonPointerJoin("/stages", static_cast<size_t>(m.stages.front())),
                        "expected the stages of each device type to be consecutive (FlagScale sorts ranks by device "
                        "type, so a pipeline cannot return to "
                            + cluster.devices[static_cast<size_t>(m.device)].id + " after another type), found "
                            + cluster.devices[static_cast<size_t>(m.device)].id + " again at stage "
                            + std::to_string(m.stages.front()));
                break;
            }
        typeOrder.push_back(m.device);
    }

    // Rule: dp_0 x micro_batch_size divisible by every mesh's dp; each mesh then runs dp_0*MBS/dp_i.
    const Stage &stage0 = plan.stages.front();
    const int mbs = stage0.replicas.front().microBatch;
    for (size_t i = 1; i < stage0.replicas.size(); ++i)
        if (stage0.replicas[i].microBatch != mbs) {
            d.error(jsonPointerJoin("/stages/0/replicas", i) + "/microBatch",
                    "expected micro-batch " + std::to_string(mbs)
                        + " like replica 0 (FlagScale's micro_batch_size is one value for mesh 0), found "
                        + std::to_string(stage0.replicas[i].microBatch));
            break;
        }
    const int dp0 = meshes.front().dp;
    for (size_t mi = 0; mi < meshes.size(); ++mi) {
        const Mesh &m = meshes[mi];
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
    // Rule: tied embeddings need the same TP on the first and last mesh; with different DP and the
    // distributed optimizer one DP must divide the other (and partial reduce is switched on).
    const Mesh &firstMesh = meshes.front();
    const Mesh &lastMesh = meshes.back();
    bool partialReduce = false;
    if (model.shape.tiedEmbeddings) {
        if (firstMesh.tp != lastMesh.tp)
            d.error(jsonPointerJoin("/stages", plan.stages.size() - 1) + "/replicas/0/tp",
                    "FlagScale rule: with tied input/output embeddings the first and last meshes need the same TP ("
                        + std::to_string(firstMesh.tp) + "), found " + std::to_string(lastMesh.tp)
                        + " - untie the embeddings or give the last stage TP " + std::to_string(firstMesh.tp));
        if (firstMesh.dp != lastMesh.dp && plan.distributedOptimizer) {
            if (firstMesh.dp % lastMesh.dp != 0 && lastMesh.dp % firstMesh.dp != 0)
                d.error(jsonPointerJoin("/stages", plan.stages.size() - 1) + "/replicas",
                        "FlagScale rule: with tied embeddings and the distributed optimizer the first and last "
                        "meshes' DP must divide one another, found "
                            + std::to_string(firstMesh.dp) + " and " + std::to_string(lastMesh.dp));
            partialReduce = true;
        }
    }
    // Recompute: FlagScale's per-stage keys know full and off; selective only for the whole job.
    std::set<RecomputeMethod> methods;
    for (const Stage &st : plan.stages)
        methods.insert(st.recompute.method);
    if (methods.count(RecomputeMethod::Selective) && methods.size() > 1) {
        std::string list;
        for (size_t s = 0; s < plan.stages.size(); ++s)
            list += (s ? ", " : "") + std::string("stage ") + std::to_string(s) + " "
                + toString(plan.stages[s].recompute.method);
        d.error("/stages",
                "expected selective recompute on all stages or on none (FlagScale's per-stage recompute "
                "keys choose between full and off only), found "
                    + list);
    }

    // Logical rank order: mesh after mesh, inside a mesh tp-cp-ep-dp-pp. With static rendezvous the
    // physical order is hostfile order x local rank, so every node must be one contiguous block.
    std::vector<RankSlot> logical;
    for (const Mesh &m : meshes)
        for (size_t p = 0; p < m.stages.size(); ++p)
            for (int dpi = 0; dpi < m.dp; ++dpi)
                for (int t = 0; t < m.tp; ++t) {
                    const int s = m.stages[p];
                    const Replica &r = plan.stages[static_cast<size_t>(s)].replicas[static_cast<size_t>(dpi)];
                    logical.push_back({s, dpi, t, r.node, r.gpus[static_cast<size_t>(t)]});
                }
    std::vector<NodeLaunch> hosts;
    std::set<std::string> seen;
    for (size_t i = 0; i < logical.size(); ++i) {
        if (hosts.empty() || hosts.back().node != logical[i].node) {
            if (!seen.insert(logical[i].node).second) {
                d.error("/stages",
                        "the plan's GPU placement cannot be written as a FlagScale hostfile: node '" + logical[i].node
                            + "' would need two places in the rank order (global rank " + std::to_string(i)
                            + " is stage " + std::to_string(logical[i].stage) + ", replica "
                            + std::to_string(logical[i].replica)
                            + "); give each node's GPUs to consecutive replicas/stages");
                break;
            }
            NodeLaunch n;
            n.node = logical[i].node;
            n.nodeRank = static_cast<int>(hosts.size());
            n.device = deviceOfNode(cluster, n.node);
            n.firstGlobalRank = static_cast<int>(i);
            hosts.push_back(n);
        }
        hosts.back().slots.push_back(logical[i]);
    }
    if (!d.empty()) {
        diags.append(d);
        return {};
    }

    std::string precisionNote;
    const bool bf16 = chooseBf16(request, precisionNote);
    std::set<std::string> vendors;
    for (int t : typeOrder)
        vendors.insert(cluster.devices[static_cast<size_t>(t)].vendor);
    const bool cpuComm = vendors.size() > 1;
    const std::string name = jobName(request);
    const std::string dir = request.options.outputDir.empty() ? "." : request.options.outputDir;
    const int m = plan.microBatches();
    int maxSlots = 0;
    for (const NodeLaunch &h : hosts)
        maxSlots = std::max(maxSlots, static_cast<int>(h.slots.size()));

    std::ostringstream head;
    head << "# Generated by memx " << MEMX_VERSION << " on " << exportDate(request.options) << " from plan \""
         << plan.name << "\"\n";
    head << "#   cluster \"" << cluster.name << "\", model " << model.id << "\n";
    head << "#   " << plan.summary(cluster) << "\n";

    // Experiment YAML.
    std::ostringstream e;
    e << "# FlagScale heterogeneous experiment (" << meshes.size() << " process meshes, " << hosts.size()
      << " hosts)\n";
    e << head.str();
    e << "# From the FlagScale checkout:\n";
    e << "#   python run.py --config-path " << dir << "/conf --config-name memx action=dryrun  # check\n";
    e << "#   python run.py --config-path " << dir << "/conf --config-name memx action=run\n";
    e << "# Hosts are the cluster's node names: replace them by reachable host names or IPs in the hostfile\n";
    e << "# (and below), keeping their order - it is the node rank order.\n";
    e << "defaults:\n  - train: memx\n  - _self_\n\n";
    e << "experiment:\n";
    e << "  exp_name: " << name << "\n";
    e << "  exp_dir: ./outputs/" << name << "\n";
    e << "  task:\n    type: train\n    backend: megatron\n    entrypoint: " << request.options.flagscaleEntrypoint
      << "\n";
    e << "  runner:\n";
    e << "    backend: torchrun\n";
    e << "    nnodes: " << hosts.size() << "\n";
    e << "    nproc_per_node: " << maxSlots << "\n";
    e << "    hostfile: " << dir << "/hostfile\n";
    e << "    rdzv_backend: static\n";
    e << "    ssh_port: 22\n";
    e << "    master_addr: " << (request.options.masterAddr.empty() ? hosts.front().node : request.options.masterAddr)
      << "\n";
    e << "    master_port: " << request.options.masterPort << "\n";
    e << "  envs:\n";
    e << "    CUDA_DEVICE_MAX_CONNECTIONS: 1\n";
    bool anyAmd = false;
    for (int t : typeOrder)
        anyAmd = anyAmd || cluster.devices[static_cast<size_t>(t)].vendor == "AMD";
    if (anyAmd) {
        e << "    device_type_specific:\n";
        for (int t : typeOrder) {
            const GpuSpec &g = cluster.devices[static_cast<size_t>(t)];
            if (g.vendor != "AMD")
                continue;
            e << "      " << g.id << ":  # ROCm Megatron-LM environment\n";
            for (const auto &[k, v] : rocmEnvironment())
                e << "        " << k << ": " << (v == "false" || v == "Simple" ? yamlString(v) : v) << "\n";
        }
    }
    bool anyRemap = false;
    for (const NodeLaunch &h : hosts)
        for (size_t i = 0; i < h.slots.size(); ++i)
            anyRemap = anyRemap || h.slots[i].gpu != static_cast<int>(i);
    if (anyRemap) {
        e << "    node_specific:  # local rank -> GPU as the plan places them\n";
        for (const NodeLaunch &h : hosts) {
            std::vector<int> gpus;
            for (const RankSlot &s : h.slots)
                gpus.push_back(s.gpu);
            e << "      " << h.node << ":\n        "
              << visibleDevicesVariable(cluster.devices[static_cast<size_t>(h.device)]) << ": "
              << yamlString(joinInts(gpus)) << "\n";
        }
    }
    e << "\naction: run\n\nhydra:\n  run:\n    dir: ${experiment.exp_dir}/hydra\n";

    // Train YAML.
    std::ostringstream t;
    t << "# FlagScale train config (heterogeneous: enable_hetero)\n";
    t << head.str();
    if (!precisionNote.empty())
        t << "# Precision: fp16 because " << precisionNote << ".\n";
    t << "system:\n";
    t << "  tensor_model_parallel_size: " << firstMesh.tp << "\n";
    t << "  pipeline_model_parallel_size: " << plan.pp() << "\n";
    t << "  context_parallel_size: 1\n";
    t << "  sequence_parallel: " << yamlBool(plan.sequenceParallel) << "\n";
    t << "  use_distributed_optimizer: " << yamlBool(plan.distributedOptimizer) << "\n";
    t << "  distributed_backend: nccl\n";
    if (model.training.optimizer == Optimizer::SGD)
        t << "  optimizer: sgd\n";
    t << "  hetero:\n";
    t << "    enable_hetero: true\n";
    t << "    hetero_use_cpu_communication: " << yamlBool(cpuComm)
      << (cpuComm ? "  # several vendors: NCCL and RCCL cannot talk to each other, use gloo" : "") << "\n";
    t << "    # mesh format [tp, cp, ep, dp, pp] per mesh, meshes in device-type order\n";
    t << "    hetero_process_meshes: [";
    for (size_t i = 0; i < meshes.size(); ++i)
        t << (i ? ", " : "") << meshes[i].tp << ", 1, 1, " << meshes[i].dp << ", " << meshes[i].stages.size();
    t << "]\n";
    t << "    hetero_pipeline_layer_split: [";
    for (size_t s = 0; s < plan.stages.size(); ++s)
        t << (s ? ", " : "") << plan.stages[s].layerCount;
    t << "]\n";
    t << "    hetero_device_types: [";
    for (size_t i = 0; i < meshes.size(); ++i)
        t << (i ? ", " : "") << yamlString(cluster.devices[static_cast<size_t>(meshes[i].device)].id);
    t << "]\n";
    t << "    hetero_current_device_type: " << yamlString(cluster.devices[static_cast<size_t>(firstMesh.device)].id)
      << "  # overwritten per host from the hostfile type=\n";
    t << "    standalone_embedding_stage: false\n";
    if (partialReduce)
        t << "    use_partial_reduce_for_shared_embedding: true\n";
    if (methods.count(RecomputeMethod::Selective)) {
        t << "  recompute:\n    recompute_granularity: selective\n";
    } else if (methods.count(RecomputeMethod::Full)) {
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
    t << "  precision:\n";
    if (bf16)
        t << "    bf16: true\n";
    else
        t << "    fp16: true\n    initial_loss_scale: 65536\n    loss_scale_window: 1000\n    hysteresis: 2\n"
             "    min_loss_scale: 1\n";
    t << "    attention_softmax_in_fp32: true\n    accumulate_allreduce_grads_in_fp32: true\n";
    t << "  logging:\n    log_interval: 1\n";
    t << "\nmodel:\n";
    for (const auto &[flag, value] : megatronShapeFlags(model)) {
        std::string key = flag.substr(2);
        for (char &c : key)
            if (c == '-')
                c = '_';
        t << "  " << key << ": " << (value.empty() ? "true" : value) << "\n";
    }
    t << "  micro_batch_size: " << mbs << "  # mesh 0; mesh i runs dp_0 x " << mbs << " / dp_i\n";
    t << "  global_batch_size: " << plan.globalBatch << "\n";
    t << "  train_iters: 100\n";
    t << "  optimizer:\n    weight_decay: 0.1\n    clip_grad: 1.0\n    lr_scheduler:\n      lr: 1.0e-4\n"
         "      min_lr: 1.0e-5\n      lr_warmup_iters: 10\n      lr_decay_style: cosine\n";
    t << "\ndata:\n";
    t << "  # Mock data: replace with data_path, split and your tokenizer.\n";
    t << "  mock_data: true\n";
    t << "  tokenizer:\n    tokenizer_type: NullTokenizer\n    vocab_size: " << model.shape.vocab << "\n";

    // Hostfile.
    std::ostringstream h;
    h << "# ip slots type=xxx  (FlagScale hostfile; order = node rank = rank order)\n";
    for (const NodeLaunch &n : hosts)
        h << n.node << " slots=" << n.slots.size() << " type=" << cluster.devices[static_cast<size_t>(n.device)].id
          << "\n";

    return {{"conf/memx.yaml", e.str(), false}, {"conf/train/memx.yaml", t.str(), false}, {"hostfile", h.str(), false}};
}

} // namespace memx::exportdetail
