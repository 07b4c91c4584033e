#include "searchoptions.h"

#include "memx/search/spacelists.h"

#include "memx/io/formats.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace memx::cli {

std::vector<std::string> splitList(const std::string &text)
{
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ','))
        out.push_back(item);
    return out;
}

std::vector<int> intList(const Args &args, const std::string &name, std::vector<int> dflt, int lo, int hi)
{
    auto v = args.value(name);
    if (!v)
        return dflt;
    std::string error;
    auto out = parseIntList(*v, lo, hi, &error); // the Search Space dock's parser too
    if (!out)
        throw UsageError {"--" + name + ": " + error};
    if (out->empty())
        throw UsageError {"--" + name + ": expected at least one value"};
    return *out;
}

namespace {
/// A search-space list option, with the bounds the Search Space dock uses (memx::kSpaceListBounds).
std::vector<int> spaceList(const Args &args, const std::string &name, std::vector<int> dflt)
{
    const SpaceListBounds &b = spaceListBounds(name);
    return intList(args, name, std::move(dflt), b.lo, b.hi);
}
} // namespace

ObjectiveWeights weightsOption(const Args &args)
{
    auto w = args.value("weights");
    if (!w)
        return ObjectiveWeights {};
    const auto parts = splitList(*w);
    double v[3] = {0, 0, 0};
    bool ok = parts.size() == 3;
    for (size_t i = 0; ok && i < 3; ++i) {
        try {
            size_t pos = 0;
            v[i] = std::stod(parts[i], &pos);
            ok = pos == parts[i].size() && v[i] >= 0 && std::isfinite(v[i]);
        } catch (const std::exception &) {
            ok = false;
        }
    }
    if (!ok)
        throw UsageError {"--weights: expected three non-negative numbers T,M,B (e.g. 1,0.5,0.5), found \"" + *w
                          + "\""};
    return ObjectiveWeights {v[0], v[1], v[2]};
}

const std::set<std::string> kSpaceValueOptions {"stages",     "tp",     "mbs",         "max-mbs",  "recompute",
                                                "vpp",        "cp",     "cp-comm",     "dist-opt", "radius",
                                                "max-stages", "target", "idle-groups", "fp8",      "dp-sharding"};
const std::set<std::string> kSpaceSwitches {
    "no-permute",           "no-memory-split", "sequence-parallel", "no-sequence-parallel",
    "no-partial-recompute", "no-mixed-stages", "round-batch",       "overlap-dp"};

const char *const kSpaceOptionsUsage = R"(Search space (each narrows or widens one dimension; docs/search.md):
  --stages LIST         pipeline stages per node group, e.g. 1,2
  --tp LIST             tensor-parallel degrees, e.g. 1,2,4,8
  --mbs LIST            micro-batch sizes, e.g. 1,2,4,8
  --max-mbs N           largest per-replica micro-batch
  --recompute LIST      none,selective,full (chosen per device type)
  --no-partial-recompute  with full: only every layer of a stage recomputed (default: also the
                        fewest layers per stage that fit, Megatron's --recompute-num-layers)
  --vpp LIST            model chunks per pipeline rank (interleaved 1F1B), e.g. 1,2,4
  --cp LIST             context-parallel sizes, e.g. 1,2,4,8 (replicas of TP x CP GPUs)
  --cp-comm C           p2p, all_gather or a2a: the CP exchange (default p2p)
  --dist-opt LIST       off,on (the same as --dp-sharding none,optim)
  --dp-sharding LIST    data-parallel sharding: none, optim (distributed optimizer), optim_grads,
                        optim_grads_params (Megatron-FSDP, single-stage plans), or all
                        (default none,optim)
  --radius N            layers moved between neighbouring stages around each split
  --max-stages N        deepest pipeline
  --no-permute          keep the cluster file's group order along the pipeline
  --no-memory-split     skip the memory-aware layer split
  --no-sequence-parallel  plans without sequence parallelism (default: on where TP > 1; it
                        dominates TP without it in the cost model)
  --no-mixed-stages     every stage on one node group (no DP group mixing GPU types)
  --overlap-dp          Megatron's --overlap-grad-reduce on every plan (and --overlap-param-gather
                        with the distributed optimizer): DP communication hidden behind the last
                        backward / first forward where the model says it can be (default: off,
                        as in Megatron-LM)
  --fp8 FORMAT          FP8 GEMMs (Transformer Engine) on every plan: hybrid (E4M3 forward, E5M2
                        gradients) or e4m3; groups whose GPUs have no FP8 stay idle (default: off)
  --round-batch         accept the nearest global batch a plan can run (its micro-batch count
                        rounded; each plan's batch is reported) instead of pruning the plan
  --target T            launch target: megatron, flagscale or any (the cost model's whole space,
                        no launcher); default: from the cluster (one type: megatron; types
                        FlagScale runs: flagscale; see docs/search.md)
  --idle-groups N       the slowest N node groups may also stay idle (default 2; 0: no such subsets)
)";

void applySpaceOptions(const Args &args, SearchSpaceOptions &sp)
{
    sp.stagesPerGroup = spaceList(args, "stages", sp.stagesPerGroup);
    sp.tensorParallel = spaceList(args, "tp", sp.tensorParallel);
    sp.microBatches = spaceList(args, "mbs", sp.microBatches);
    sp.virtualStages = spaceList(args, "vpp", sp.virtualStages);
    sp.contextParallel = spaceList(args, "cp", sp.contextParallel);
    if (auto c = args.value("cp-comm")) {
        const auto comm = cpCommFromString(*c);
        if (!comm)
            throw UsageError {"--cp-comm: expected p2p, all_gather or a2a, found \"" + *c + "\""};
        sp.cpComm = *comm;
    }
    sp.maxReplicaMicroBatch = static_cast<int>(args.intValue("max-mbs", 1, 1024).value_or(sp.maxReplicaMicroBatch));
    sp.neighbourRadius = static_cast<int>(args.intValue("radius", 0, 64).value_or(sp.neighbourRadius));
    sp.maxStages = static_cast<int>(args.intValue("max-stages", 1, 64).value_or(sp.maxStages));
    if (args.has("no-permute"))
        sp.permuteGroups = false;
    if (args.has("no-memory-split"))
        sp.memoryAwareSplit = false;
    if (args.has("sequence-parallel") && args.has("no-sequence-parallel"))
        throw UsageError {"give --sequence-parallel or --no-sequence-parallel, not both"};
    if (args.has("no-partial-recompute"))
        sp.partialRecompute = false;
    if (args.has("sequence-parallel"))
        sp.sequenceParallel = true; // the default; kept for scripts that pass it
    if (args.has("no-sequence-parallel"))
        sp.sequenceParallel = false;
    if (args.has("no-mixed-stages"))
        sp.mixedStages = false;
    if (args.has("overlap-dp"))
        sp.overlapDataParallel = true;
    if (args.has("round-batch"))
        sp.roundGlobalBatch = true;
    if (auto f = args.value("fp8")) {
        const auto fmt = fp8FromString(*f);
        if (!fmt)
            throw UsageError {"--fp8: expected off, hybrid or e4m3, found \"" + *f + "\""};
        sp.fp8 = *fmt;
    }
    if (const auto t = targetOption(args))
        sp.target = *t;
    if (auto v = args.value("recompute")) {
        sp.recompute.clear();
        for (const std::string &s : splitList(*v)) {
            if (s == "none")
                sp.recompute.push_back(RecomputeMethod::None);
            else if (s == "selective")
                sp.recompute.push_back(RecomputeMethod::Selective);
            else if (s == "full")
                sp.recompute.push_back(RecomputeMethod::Full);
            else
                throw UsageError {"--recompute: expected none, selective or full, found \"" + s + "\""};
        }
    }
    if (args.value("dist-opt") && args.value("dp-sharding"))
        throw UsageError {"--dist-opt and --dp-sharding set the same dimension: give one of them"};
    if (auto v = args.value("dist-opt")) {
        sp.dpSharding.clear();
        for (const std::string &s : splitList(*v)) {
            if (s == "off")
                sp.dpSharding.push_back(DpSharding::None);
            else if (s == "on")
                sp.dpSharding.push_back(DpSharding::Optimizer);
            else
                throw UsageError {"--dist-opt: expected off or on, found \"" + s + "\""};
        }
    }
    if (auto v = args.value("dp-sharding")) {
        sp.dpSharding.clear();
        for (const std::string &s : splitList(*v)) {
            if (s == "all") {
                sp.dpSharding
                    = {DpSharding::None, DpSharding::Optimizer, DpSharding::Gradients, DpSharding::Parameters};
                continue;
            }
            const auto d = dpShardingFromString(s);
            if (!d)
                throw UsageError {
                    "--dp-sharding: expected none, optim, optim_grads, optim_grads_params or all, found \"" + s + "\""};
            if (std::find(sp.dpSharding.begin(), sp.dpSharding.end(), *d) == sp.dpSharding.end())
                sp.dpSharding.push_back(*d);
        }
    }
}

std::optional<LaunchTarget> targetOption(const Args &args)
{
    const auto t = args.value("target");
    if (!t)
        return std::nullopt;
    const std::optional<LaunchTarget> target = parseLaunchTarget(*t);
    if (!target)
        throw UsageError {"--target: expected megatron, flagscale or any, found \"" + *t + "\""};
    return target;
}

PlannedSearchRequest plannedRequest(const Args &args, const SearchRequest &search)
{
    PlannedSearchRequest p;
    p.search = search;
    if (const auto t = targetOption(args)) {
        p.autoTarget = false;
        p.search.space.target = *t;
    }
    p.maxIdleGroups = static_cast<int>(args.intValue("idle-groups", 0, 64).value_or(p.maxIdleGroups));
    return p;
}

const std::set<std::string> kModelValueOptions {"attention"};

std::optional<AttentionBackend> attentionOption(const Args &args)
{
    const auto a = args.value("attention");
    if (!a)
        return std::nullopt;
    const std::optional<AttentionBackend> backend = attentionFromString(*a);
    if (!backend)
        throw UsageError {"--attention: expected auto, flash, fused or unfused, found \"" + *a + "\""};
    return backend;
}

Model modelOption(const Args &args, const Store *store)
{
    const std::string id = args.require("model");
    std::optional<Model> stored = store ? store->model(id) : std::nullopt;
    Model m = stored ? *stored : resolveModel(id);
    if (const auto backend = attentionOption(args))
        m.training.attention = *backend;
    return m;
}

} // namespace memx::cli
