#include "memx/profiling/minimalset.h"

#include "memx/search/plannedsearch.h"

#include "memx/export/quoting.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"
#include "memx/util/jsonreader.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace memx {

bool kernelCovered(const std::set<KernelPoint> &measured, const KernelPoint &point, bool tpInterpolation)
{
    if (measured.count(point))
        return true;
    bool below = false, above = false;
    for (const KernelPoint &k : measured)
        if (k.device == point.device && k.tp == point.tp) {
            below = below || k.microBatch < point.microBatch;
            above = above || k.microBatch > point.microBatch;
        }
    if (below && above)
        return true;
    if (!tpInterpolation)
        return false;
    below = above = false;
    for (const KernelPoint &k : measured)
        if (k.device == point.device && k.microBatch == point.microBatch) {
            below = below || k.tp < point.tp;
            above = above || k.tp > point.tp;
        }
    return below && above;
}

bool tpInterpolationAllowed(const GpuSpec &device, const MinimalSetOptions &options)
{
    if (!options.tpInterpolation || !device.scaleUpPerDirectionGBps)
        return false;
    return device.scaleUpKind == ScaleUpKind::NvLink || device.scaleUpKind == ScaleUpKind::NvSwitch
        || device.scaleUpKind == ScaleUpKind::InfinityFabric;
}

std::set<KernelPoint> kernelsOfSpace(const SearchResult &result, const ProgressFn &progress)
{
    std::set<KernelPoint> out;
    std::set<std::pair<size_t, size_t>> seen; // (pipeline, micro-batch index) looked at
    auto deviceOfGroup = [&](int g) -> const std::string & {
        return result.cluster.deviceOf(result.cluster.groups.at(static_cast<size_t>(g))).id;
    };
    constexpr size_t kPollEvery = 4096;
    for (size_t i = 0; i < result.size(); ++i) {
        if (i % kPollEvery == 0)
            reportOrThrow(progress, i, result.size());
        const uint32_t base = result.baseOf[i];
        const SearchResult::BaseParts parts = result.decodeBase(base);
        if (!seen.insert({parts.pipeline, parts.microBatch}).second)
            continue;
        const SearchResult::Pipeline &pl = result.pipelines.at(parts.pipeline);
        const std::vector<std::pair<int, int>> mbs = result.stageMicroBatchesOfBase(base);
        for (size_t s = 0; s < pl.stages.size(); ++s) {
            const SearchStage &st = pl.stages[s];
            if (st.dp - st.dp2 > 0)
                out.insert({deviceOfGroup(st.group), st.tp, mbs[s].first});
            if (st.mixed() && st.dp2 > 0)
                out.insert({deviceOfGroup(st.group2), st.tp, mbs[s].second});
        }
    }
    reportOrThrow(progress, result.size(), result.size());
    return out;
}

namespace {

/// Sorted `values` (all needed); returns the measured subset: endpoints, every `must` value, and
/// in each gap steps of at most `ratio` (greedy: the largest value within reach).
std::vector<int> coverAxis(const std::set<int> &values, const std::set<int> &must, int ratio)
{
    std::set<int> all = values;
    all.insert(must.begin(), must.end());
    if (all.empty())
        return {};
    std::set<int> chosen = must;
    chosen.insert(*all.begin());
    chosen.insert(*all.rbegin());
    std::vector<int> anchors(chosen.begin(), chosen.end());
    for (size_t i = 0; i + 1 < anchors.size(); ++i) {
        int cur = anchors[i];
        const int end = anchors[i + 1];
        while (static_cast<long long>(cur) * ratio < end) {
            // Largest value in (cur, cur * ratio]; if none, the next value above cur.
            auto it = all.upper_bound(static_cast<int>(std::min<long long>(static_cast<long long>(cur) * ratio, end)));
            --it;
            int next = *it;
            if (next <= cur)
                next = *all.upper_bound(cur);
            if (next >= end)
                break;
            chosen.insert(next);
            cur = next;
        }
    }
    return {chosen.begin(), chosen.end()};
}

const NodeGroup &groupOfDevice(const Cluster &cluster, const std::string &device)
{
    for (const NodeGroup &g : cluster.groups)
        if (cluster.deviceOf(g).id == device)
            return g;
    throw std::invalid_argument("device " + device + " is not in the cluster");
}

/// Analytic wall seconds of one per-layer job variant: start-up + (warm-up + timed) iterations of
/// the truncated model (layers x (fwd + bwd + TP) + embedding + head, x micro-batches, + Adam).
double perLayerVariantSeconds(const Cluster &cluster, const Model &model, const KernelPoint &k, int layers,
                              const MinimalSetOptions &o)
{
    const NodeGroup &g = groupOfDevice(cluster, k.device);
    const GpuSpec &dev = cluster.deviceOf(g);
    const LayerKernel lk
        = makeLayerKernel(dev, cluster.intraLink(g), model, k.tp, k.microBatch, false, nullptr, o.cost);
    const double perLayer = lk.forwardPrefixMs[1] + lk.backwardPrefixMs[1] + lk.tpCommPerLayerMs;
    const double step
        = layers * perLayer + lk.embeddingForwardMs + lk.embeddingBackwardMs + lk.headForwardMs + lk.headBackwardMs;
    const double params = (static_cast<double>(model.paramsPerLayer()) * layers
                           + static_cast<double>(model.embeddingParams()) + static_cast<double>(model.headParams()))
        / k.tp;
    const double iterMs = o.microBatchesPerIteration * step + params * lk.optimizerMsPerParam;
    return o.startupSeconds + (o.warmupIterations + o.timedIterations) * iterMs / 1e3;
}

std::string jobId(const KernelPoint &k)
{
    return "layer-" + k.device + "-tp" + std::to_string(k.tp) + "-mbs" + std::to_string(k.microBatch);
}

} // namespace

namespace {

/// Per device: the (tp, mbs) points to measure, so that every kernel the space needs is measured
/// or interpolated between measured neighbours (fills plan.measured, naiveGridPoints and notes).
void chooseMeasuredPoints(ProfilingPlan &plan, const std::set<KernelPoint> &needed, const Cluster &cluster,
                          const MinimalSetOptions &options)
{
    std::map<std::string, std::map<int, std::set<int>>> byDevice; // device -> tp -> mbs
    for (const KernelPoint &k : needed)
        byDevice[k.device][k.tp].insert(k.microBatch);
    std::set<KernelPoint> measured;
    for (const auto &[device, tps] : byDevice) {
        const GpuSpec &dev = cluster.deviceOf(groupOfDevice(cluster, device));
        std::set<int> tpSet, mbsUnion;
        for (const auto &[tp, mbs] : tps) {
            tpSet.insert(tp);
            mbsUnion.insert(mbs.begin(), mbs.end());
        }
        plan.naiveGridPoints += tpSet.size() * mbsUnion.size();
        const bool interpTp = tpInterpolationAllowed(dev, options);
        const std::vector<int> measuredTps
            = interpTp ? coverAxis(tpSet, {}, 4) : std::vector<int>(tpSet.begin(), tpSet.end());
        std::map<int, std::set<int>> must;
        for (const auto &[tp, mbs] : tps) {
            if (std::binary_search(measuredTps.begin(), measuredTps.end(), tp))
                continue;
            const auto hi = std::upper_bound(measuredTps.begin(), measuredTps.end(), tp);
            // coverAxis keeps both endpoints, so an unmeasured TP has measured neighbours.
            must[*(hi - 1)].insert(mbs.begin(), mbs.end());
            must[*hi].insert(mbs.begin(), mbs.end());
        }
        for (int tp : measuredTps) {
            const auto it = tps.find(tp);
            const std::set<int> values = it == tps.end() ? std::set<int> {} : it->second;
            for (int b : coverAxis(values, must[tp], std::max(2, options.maxMicroBatchRatio)))
                measured.insert({device, tp, b});
        }
        if (interpTp && measuredTps.size() < tpSet.size())
            plan.notes.push_back(dev.id + ": TP degrees interpolated between measured ones (scale-up link)");
        else if (!interpTp && tpSet.size() > 1)
            plan.notes.push_back(dev.id + ": every TP degree measured ("
                                 + (options.tpInterpolation ? "no NVLink-class link" : "TP interpolation off") + ")");
    }
    plan.measured.assign(measured.begin(), measured.end());
    for (const KernelPoint &k : needed)
        if (!kernelCovered(measured, k,
                           tpInterpolationAllowed(cluster.deviceOf(groupOfDevice(cluster, k.device)), options)))
            throw std::logic_error("minimal set does not cover " + jobId(k)); // a bug, not bad input
}

/// One per-layer profiling job per measured point.
void addPerLayerJobs(ProfilingPlan &plan, const Cluster &cluster, const Model &model, const MinimalSetOptions &options)
{
    for (const KernelPoint &k : plan.measured) {
        ProfileJob job;
        job.id = jobId(k);
        job.kind = ProfileJobKind::PerLayer;
        job.device = k.device;
        job.node = nodeName(groupOfDevice(cluster, k.device), 0);
        job.tp = k.tp;
        job.microBatch = k.microBatch;
        job.gpus = k.tp;
        job.microBatchesPerIteration = options.microBatchesPerIteration;
        job.warmupIterations = options.warmupIterations;
        job.timedIterations = options.timedIterations;
        for (int layers : options.layerVariants) {
            const int n = std::min(layers, model.shape.layers);
            job.layerVariants.push_back(n);
            job.estimatedSeconds += perLayerVariantSeconds(cluster, model, k, n, options);
            job.logFiles.push_back(job.id + "-L" + std::to_string(n) + ".log");
        }
        plan.jobs.push_back(std::move(job));
    }
}

/// Memory-calibration jobs: per device type the space uses, on the first node of its group, the
/// model truncated to options.memoryCalibrationLayers layers: 1 GPU at micro-batch 1, 2 and 4
/// (allocator peaks that differ: they separate the reserve from the context) and, on nodes of
/// several GPUs, all of them (up to 8) data-parallel at micro-batch 1 (one communicator: its
/// buffers) - four runs, what `memx profile calibrate` needs per device. Variants the analytic
/// model says do not fit are left out.
void addMemoryJobs(ProfilingPlan &plan, const Cluster &cluster, const Model &model, const MinimalSetOptions &options)
{
    if (options.memoryCalibrationLayers <= 0)
        return;
    const Model small = memoryCalibrationModel(model, options.memoryCalibrationLayers);
    std::vector<std::string> devices;
    for (const KernelPoint &k : plan.needed)
        if (std::find(devices.begin(), devices.end(), k.device) == devices.end())
            devices.push_back(k.device);
    for (const std::string &device : devices) {
        const NodeGroup &g = groupOfDevice(cluster, device);
        const std::string node = nodeName(g, 0);
        std::vector<std::pair<int, int>> variants {{1, 1}, {1, 2}, {1, 4}}; // (GPUs, micro-batch)
        if (g.gpusPerNode >= 2)
            variants.push_back({std::min(g.gpusPerNode, 8), 1});
        for (const auto &[gpus, mb] : variants) {
            Plan p;
            p.globalBatch = gpus * mb;
            Stage st;
            st.layerCount = small.shape.layers;
            for (int r = 0; r < gpus; ++r)
                st.replicas.push_back(Replica {node, {r}, 1, mb});
            p.stages.push_back(st);
            const PlanEstimate e = estimatePlan(p, cluster, small, nullptr, options.cost);
            if (e.oom)
                continue;
            ProfileJob job;
            job.id = "memory-" + device + "-g" + std::to_string(gpus) + "-mbs" + std::to_string(mb);
            job.kind = ProfileJobKind::Memory;
            job.device = device;
            job.node = node;
            job.microBatch = mb;
            job.layerVariants = {small.shape.layers};
            job.plan = p;
            job.plan->name = job.id;
            job.reason = "memory calibration of " + device + ": " + std::to_string(gpus) + " GPU"
                + (gpus > 1 ? "s data-parallel" : "") + ", micro-batch " + std::to_string(mb);
            job.gpus = gpus;
            job.warmupIterations = options.warmupIterations;
            job.timedIterations = std::min(options.timedIterations, 3);
            job.estimatedSeconds
                = options.startupSeconds + (job.warmupIterations + job.timedIterations) * e.iterationTimeMs / 1e3;
            job.logFiles.push_back(job.id + ".log");
            plan.jobs.push_back(std::move(job));
        }
    }
}

/// End-to-end runs: the best analytic plan per pipeline depth + the memory extremes. Only plans
/// that can be launched (Megatron-LM, else FlagScale) are picked.
void addEndToEndJobs(ProfilingPlan &plan, const SearchResult &result, const Cluster &cluster, const Model &model,
                     const MinimalSetOptions &options, const ProgressFn &progress)
{
    auto ppOf = [&](size_t i) {
        return static_cast<int>(result.pipelines.at(result.decodeBase(result.baseOf[i]).pipeline).stages.size());
    };
    auto launchable = [&](size_t i) {
        reportOrThrow(progress, result.size(), result.size()); // a check costs ~ms on 512 GPUs
        ExportRequest req;
        req.plan = result.materialize(i);
        req.cluster = cluster;
        req.model = model;
        Diagnostics megatron, flagscale;
        if (options.target)
            return checkLaunchTarget(*options.target, req.plan, cluster, model, megatron);
        checkMegatronExpressible(req, megatron);
        if (megatron.empty())
            return true;
        checkFlagScaleExpressible(req, flagscale);
        return flagscale.empty();
    };
    // An export check costs ~ms on a large cluster: look at the kLaunchChecks fastest plans of
    // each depth (and of each memory end) at most, so a cluster no launcher supports (e.g. AMD
    // GPUs, which FlagScale cannot run) does not scan the whole space. Only those few are
    // ordered (bounded heaps in one pass that polls `progress`; sorting the 6 M configurations
    // of a wide 512-GPU space took seconds and could not be cancelled), in the order a stable
    // sort by time, then by memory, would give them.
    constexpr size_t kLaunchChecks = 32;
    auto byTime = [&](size_t a, size_t b) { return std::tie(result.timeMs[a], a) < std::tie(result.timeMs[b], b); };
    auto byMemory = [&](size_t a, size_t b) {
        return std::tie(result.peakMemory[a], result.timeMs[a], a)
            < std::tie(result.peakMemory[b], result.timeMs[b], b);
    };
    auto byMemoryDown = [&](size_t a, size_t b) { return byMemory(b, a); };
    // Keeps the kLaunchChecks first indices under `less` in a max-heap.
    auto keep = [&](std::vector<size_t> &heap, size_t i, const auto &less) {
        if (heap.size() < kLaunchChecks) {
            heap.push_back(i);
            std::push_heap(heap.begin(), heap.end(), less);
        } else if (less(i, heap.front())) {
            std::pop_heap(heap.begin(), heap.end(), less);
            heap.back() = i;
            std::push_heap(heap.begin(), heap.end(), less);
        }
    };
    std::map<int, std::vector<size_t>> fastestPerPp;
    std::vector<size_t> lowMemory, highMemory;
    for (size_t i = 0; i < result.size(); ++i) {
        if (i % 4096 == 0)
            reportOrThrow(progress, i, result.size());
        keep(fastestPerPp[ppOf(i)], i, byTime);
        keep(lowMemory, i, byMemory);
        keep(highMemory, i, byMemoryDown);
    }
    reportOrThrow(progress, result.size(), result.size());
    std::map<int, size_t> bestPerPp;
    for (auto &[pp, candidates] : fastestPerPp) {
        std::sort_heap(candidates.begin(), candidates.end(), byTime);
        for (size_t i : candidates)
            if (launchable(i)) {
                bestPerPp[pp] = i;
                break;
            }
    }
    if (bestPerPp.size() < fastestPerPp.size())
        plan.notes.push_back(std::to_string(fastestPerPp.size() - bestPerPp.size())
                             + " pipeline depth(s) have no plan expressible in Megatron-LM or FlagScale among their "
                             + std::to_string(kLaunchChecks) + " fastest");
    std::vector<std::pair<size_t, std::string>> picks;
    std::vector<std::pair<int, size_t>> depthsByTime(bestPerPp.begin(), bestPerPp.end());
    std::sort(depthsByTime.begin(), depthsByTime.end(),
              [&](const auto &a, const auto &b) { return byTime(a.second, b.second); });
    const int k = std::max(0, options.endToEndRuns);
    for (const auto &[pp, i] : depthsByTime)
        if (k > 0 && static_cast<int>(picks.size()) < std::max(1, k - 2))
            picks.push_back({i, "fastest analytic plan with PP " + std::to_string(pp)});
    if (k >= 2) {
        auto pickFirst = [&](std::vector<size_t> candidates, const auto &less, const char *why) {
            std::sort_heap(candidates.begin(), candidates.end(), less);
            for (size_t i : candidates) {
                if (std::any_of(picks.begin(), picks.end(), [&](const auto &p) { return p.first == i; }))
                    return;
                if (launchable(i)) {
                    picks.push_back({i, why});
                    return;
                }
            }
        };
        pickFirst(lowMemory, byMemory, "lowest peak memory");
        pickFirst(highMemory, byMemoryDown, "highest peak memory");
    }
    int e2e = 0;
    for (const auto &[i, why] : picks) {
        ProfileJob job;
        job.id = "e2e-" + std::to_string(++e2e);
        job.kind = ProfileJobKind::EndToEnd;
        job.plan = result.materialize(i);
        job.plan->name = job.id;
        job.reason = why;
        job.gpus = job.plan->totalGpus();
        job.warmupIterations = options.warmupIterations;
        job.timedIterations = options.timedIterations;
        job.estimatedSeconds
            = options.startupSeconds + (options.warmupIterations + options.timedIterations) * result.timeMs[i] / 1e3;
        job.logFiles.push_back(job.id + ".log");
        plan.jobs.push_back(std::move(job));
    }
}

/// GPU hours and wall time of the plan's jobs, and of profiling the whole space instead.
void addCost(ProfilingPlan &plan, const MinimalSetOptions &options)
{
    for (const ProfileJob &j : plan.jobs) {
        plan.profilingGpuHours += j.gpuSeconds() / 3600.0;
        plan.profilingWallHours += j.estimatedSeconds / 3600.0;
    }
    plan.exhaustiveGpuHours = static_cast<double>(plan.configurations) * plan.clusterGpus
        * options.exhaustiveSecondsPerConfiguration / 3600.0;
    plan.exhaustiveWallDays
        = static_cast<double>(plan.configurations) * options.exhaustiveSecondsPerConfiguration / 86400.0;
}

} // namespace

ProfilingPlan planMinimalSet(const Cluster &cluster, const Model &model, const MinimalSetOptions &options,
                             const ProgressFn &progress)
{
    SearchRequest req;
    req.cluster = cluster;
    req.model = model;
    req.globalBatch = options.globalBatch;
    req.space = options.space;
    req.cost = options.cost;
    req.threads = options.threads;
    req.keepPartialOnCancel = false; // a cancelled plan is thrown away
    SearchResult result;
    if (options.target) {
        PlannedSearchRequest planned;
        planned.search = req;
        planned.search.space.target = *options.target;
        planned.autoTarget = false;
        planned.maxVerifiedBatches = -1;
        result = runPlannedSearch(planned, progress).result;
    } else {
        result = runSearch(req, progress);
    }
    if (result.cancelled)
        throw Cancelled();
    if (result.size() == 0)
        throw std::invalid_argument("the search space of " + model.id + " on " + cluster.name
                                    + " has no valid configuration (everything is out of memory or indivisible)");

    ProfilingPlan plan;
    plan.clusterName = cluster.name;
    plan.modelId = model.id;
    plan.globalBatch = result.globalBatch;
    plan.configurations = result.evaluated;
    plan.clusterGpus = cluster.totalGpus();
    const std::set<KernelPoint> needed = kernelsOfSpace(result, progress);
    plan.needed.assign(needed.begin(), needed.end());

    chooseMeasuredPoints(plan, needed, cluster, options);
    addPerLayerJobs(plan, cluster, model, options);
    addMemoryJobs(plan, cluster, model, options);
    addEndToEndJobs(plan, result, cluster, model, options, progress);
    addCost(plan, options);
    return plan;
}

// ---------------------------------------------------------------------------------------------
// Manifest

namespace {

nlohmann::json jobToJson(const ProfileJob &j)
{
    nlohmann::json o {{"id", j.id},
                      {"kind", toString(j.kind)},
                      {"gpus", j.gpus},
                      {"warmupIterations", j.warmupIterations},
                      {"timedIterations", j.timedIterations},
                      {"estimatedSeconds", j.estimatedSeconds},
                      {"logFiles", j.logFiles},
                      {"scripts", j.scripts}};
    if (j.kind == ProfileJobKind::PerLayer) {
        o["device"] = j.device;
        o["node"] = j.node;
        o["tp"] = j.tp;
        o["microBatch"] = j.microBatch;
        o["layerVariants"] = j.layerVariants;
        o["microBatchesPerIteration"] = j.microBatchesPerIteration;
    } else {
        if (j.kind == ProfileJobKind::Memory) {
            o["device"] = j.device;
            o["node"] = j.node;
            o["layerVariants"] = j.layerVariants;
        }
        o["plan"] = toJson(*j.plan);
        o["reason"] = j.reason;
    }
    return o;
}

} // namespace

nlohmann::json manifestToJson(const ProfilingPlan &plan, const Cluster &cluster, const Model &model)
{
    nlohmann::json jobs = nlohmann::json::array();
    for (const ProfileJob &j : plan.jobs)
        jobs.push_back(jobToJson(j));
    return {{"format", kProfileJobsFormat},
            {"cluster", toJson(cluster)},
            {"model", toJson(model)},
            {"globalBatch", plan.globalBatch},
            {"estimate",
             {{"profilingGpuHours", plan.profilingGpuHours},
              {"profilingWallHours", plan.profilingWallHours},
              {"configurations", plan.configurations},
              {"exhaustiveGpuHours", plan.exhaustiveGpuHours},
              {"exhaustiveWallDays", plan.exhaustiveWallDays}}},
            {"jobs", jobs}};
}

ProfileManifest parseManifest(const std::string &text, const std::string &file)
{
    const nlohmann::json root = parseJsonText(text, file);
    Diagnostics diags(file);
    ProfileManifest m;
    JsonObjectReader r(root, "", diags);
    if (!r.valid())
        diags.throwIfAny();
    r.requireFormat(kProfileJobsFormat);
    r.rejectUnknownKeys({"format", "cluster", "model", "globalBatch", "estimate", "jobs"});
    if (const nlohmann::json *c = r.requireObject("cluster")) {
        Diagnostics cd(file);
        m.cluster = parseCluster(*c, builtinCatalogue(), cd);
        for (const Diagnostic &d : cd.items())
            diags.error("/cluster" + d.pointer, d.message);
    }
    if (const nlohmann::json *mo = r.requireObject("model")) {
        Diagnostics md(file);
        m.model = parseModel(*mo, md);
        for (const Diagnostic &d : md.items())
            diags.error("/model" + d.pointer, d.message);
    }
    if (const nlohmann::json *jobs = r.requireArray("jobs")) {
        for (size_t i = 0; i < jobs->size(); ++i) {
            const std::string ptr = "/jobs/" + std::to_string(i);
            JsonObjectReader jr((*jobs)[i], ptr, diags);
            if (!jr.valid())
                continue;
            jr.rejectUnknownKeys({"id", "kind", "gpus", "warmupIterations", "timedIterations", "estimatedSeconds",
                                  "logFiles", "scripts", "device", "node", "tp", "microBatch", "layerVariants",
                                  "microBatchesPerIteration", "plan", "reason"});
            ProfileJob job;
            job.id = jr.requireString("id");
            constexpr ProfileJobKind kinds[]
                = {ProfileJobKind::PerLayer, ProfileJobKind::EndToEnd, ProfileJobKind::Memory};
            job.kind = kinds[jr.requireEnum("kind", {"per-layer", "end-to-end", "memory"})];
            job.gpus = static_cast<int>(jr.optionalInt("gpus", 1, 1 << 20).value_or(1));
            job.warmupIterations = static_cast<int>(jr.optionalInt("warmupIterations", 0, 1000000).value_or(0));
            job.timedIterations = static_cast<int>(jr.optionalInt("timedIterations", 1, 1000000).value_or(1));
            job.estimatedSeconds = jr.optionalNumber("estimatedSeconds", 0, 1e12).value_or(0);
            auto strings = [&](const char *key, std::vector<std::string> &out) {
                if (const nlohmann::json *a = jr.optionalArray(key))
                    for (size_t k = 0; k < a->size(); ++k) {
                        if (!(*a)[k].is_string())
                            diags.error(jr.pointerTo(key) + "/" + std::to_string(k), "expected a string");
                        else
                            out.push_back((*a)[k].get<std::string>());
                    }
            };
            strings("logFiles", job.logFiles);
            strings("scripts", job.scripts);
            if (job.logFiles.empty())
                diags.error(jr.pointerTo("logFiles"), "expected at least one log file name");
            if (job.kind == ProfileJobKind::PerLayer) {
                job.device = jr.requireString("device");
                if (!job.device.empty() && m.cluster.deviceIndex(job.device) < 0)
                    diags.error(jr.pointerTo("device"),
                                "device \"" + job.device + "\" is not in the manifest's cluster");
                job.node = jr.optionalString("node").value_or("");
                job.tp = static_cast<int>(jr.requireInt("tp", 1, 1024));
                job.microBatch = static_cast<int>(jr.requireInt("microBatch", 1, 1 << 20));
                job.microBatchesPerIteration
                    = static_cast<int>(jr.optionalInt("microBatchesPerIteration", 1, 1 << 20).value_or(1));
                if (const nlohmann::json *a = jr.requireArray("layerVariants"))
                    for (size_t k = 0; k < a->size(); ++k) {
                        if (!(*a)[k].is_number_integer() || (*a)[k].get<int>() < 1)
                            diags.error(jr.pointerTo("layerVariants") + "/" + std::to_string(k),
                                        "expected a layer count >= 1");
                        else
                            job.layerVariants.push_back((*a)[k].get<int>());
                    }
                if (job.layerVariants.size() != job.logFiles.size())
                    diags.error(jr.pointerTo("logFiles"),
                                "expected one log file per layer variant (" + std::to_string(job.layerVariants.size())
                                    + ")");
            } else if (const nlohmann::json *pj = jr.requireObject("plan")) {
                Model planModel = m.model;
                if (job.kind == ProfileJobKind::Memory) {
                    job.device = jr.requireString("device");
                    if (!job.device.empty() && m.cluster.deviceIndex(job.device) < 0)
                        diags.error(jr.pointerTo("device"),
                                    "device \"" + job.device + "\" is not in the manifest's cluster");
                    job.node = jr.optionalString("node").value_or("");
                    if (const nlohmann::json *a = jr.requireArray("layerVariants")) {
                        if (a->size() != 1 || !(*a)[0].is_number_integer() || (*a)[0].get<int>() < 1
                            || (*a)[0].get<int>() > m.model.shape.layers)
                            diags.error(jr.pointerTo("layerVariants"),
                                        "expected one layer count between 1 and the model's "
                                            + std::to_string(m.model.shape.layers) + " layers");
                        else
                            job.layerVariants.push_back((*a)[0].get<int>());
                    }
                    if (!job.layerVariants.empty())
                        planModel = memoryCalibrationModel(m.model, job.layerVariants.front());
                }
                Diagnostics pd(file);
                job.plan = parsePlan(*pj, pd);
                for (const Diagnostic &d : pd.items())
                    diags.error(ptr + "/plan" + d.pointer, d.message);
                job.reason = jr.optionalString("reason").value_or("");
                if (pd.empty()) {
                    Diagnostics vd(file);
                    validatePlan(*job.plan, m.cluster, planModel, vd);
                    for (const Diagnostic &d : vd.items())
                        diags.error(ptr + "/plan" + d.pointer, d.message);
                }
            }
            m.jobs.push_back(std::move(job));
        }
    }
    diags.throwIfAny();
    return m;
}

// ---------------------------------------------------------------------------------------------
// Job files

namespace {

std::string trainArgs(const ProfileJob &job, const std::string &tensorboardDir)
{
    const int iters = job.warmupIterations + job.timedIterations;
    return "--train-iters " + std::to_string(iters) + " --exit-interval " + std::to_string(iters)
        + " --lr 1.0e-4 --min-lr 1.0e-5 --lr-decay-style constant --weight-decay 0.1 --clip-grad 1.0"
          " --log-interval 1 --timing-log-level 2 --timing-log-option max --log-throughput --eval-iters 0"
          " --log-memory-to-tensorboard --tensorboard-dir "
        + tensorboardDir;
}

std::string runScript(const ProfileJob &job, const std::vector<std::string> &variantDirs, bool multiNode)
{
    std::string what = job.id + " (" + toString(job.kind) + ")";
    if (job.kind == ProfileJobKind::PerLayer)
        what += ": " + job.device + " TP " + std::to_string(job.tp) + " micro-batch " + std::to_string(job.microBatch)
            + ", " + std::to_string(job.microBatchesPerIteration) + " micro-batches per iteration";
    else if (job.kind == ProfileJobKind::Memory)
        what += ": " + job.reason + ", " + std::to_string(job.layerVariants.front()) + " layers";
    else
        what += ": " + job.reason;
    // Names come from the user's files: comments through printableText, words through shellQuote.
    std::string s = "#!/usr/bin/env bash\n# MemX profiling job " + printableText(what);
    s += "\n# Writes its log(s) to $LOG_DIR (default ./logs); import them with\n"
         "#   memx profile import --format megatron --manifest <this folder>/../../manifest.json $LOG_DIR\n";
    if (multiNode)
        s += "# Multi-node: run the launch script of every node on that node (see the files next to this one);\n"
             "# this script runs the node that holds the last pipeline stage (its log has the iteration lines).\n";
    s += "set -euo pipefail\nHERE=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\"\nLOG_DIR=\"${LOG_DIR:-logs}\"\n"
         "mkdir -p \"$LOG_DIR\"\n";
    if (job.kind == ProfileJobKind::Memory)
        s += "# Device-used memory (what the CUDA/HIP context and NCCL/RCCL buffers add to the allocator's\n"
             "# figures): sample-memory.sh samples nvidia-smi or rocm-smi every 200 ms. Run on idle GPUs:\n"
             "# other processes' memory counts too.\n"
             "bash \"$HERE\"/sample-memory.sh \"$LOG_DIR\"/"
            + shellQuote(memoryJobSampleFile(job))
            + " &\n"
              "SAMPLER=$!\n"
              "trap 'kill \"$SAMPLER\" 2>/dev/null || true' EXIT\n";
    for (size_t v = 0; v < variantDirs.size(); ++v)
        s += "bash \"$HERE\"/" + shellQuote(variantDirs[v]) + " \"$@\" 2>&1 | tee \"$LOG_DIR\"/"
            + shellQuote(job.logFiles[v]) + "\n";
    return s;
}

} // namespace

std::string memorySamplerScript()
{
    // One format for both vendors, the one peakDeviceUsedBytes reads: "index, MiB used" per line.
    // nvidia-smi loops by itself (exec: the job's trap stops the sampler, not a parent shell);
    // rocm-smi has no loop option and prints bytes under a header ("device,VRAM Total Memory (B),
    // VRAM Total Used Memory (B)", device "card<N>"; some releases say "GPU[N]" or "VRAM Used
    // Memory (B)"): the column is found by its name.
    return "#!/usr/bin/env bash\n"
           "# MemX device-used memory sampler: writes \"index, MiB used\" lines to $1 every 200 ms until killed.\n"
           "# NVIDIA: nvidia-smi (NVML memory.used). AMD: rocm-smi --showmeminfo vram (VRAM used, bytes).\n"
           "# Neither installed: writes nothing (the import then falls back to the log's max reserved).\n"
           "set -u\n"
           "out=\"${1:?usage: sample-memory.sh OUTPUT}\"\n"
           "if command -v nvidia-smi >/dev/null 2>&1; then\n"
           "  exec nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 200 > \"$out\"\n"
           "elif command -v rocm-smi >/dev/null 2>&1; then\n"
           "  : > \"$out\"\n"
           "  while :; do\n"
           "    rocm-smi --showmeminfo vram --csv 2>/dev/null | awk -F, '\n"
           "      /^device/ { for (i = 1; i <= NF; i++) if ($i ~ /[Uu]sed/) u = i; next }\n"
           "      u && ($1 ~ /^card[0-9]+$/ || $1 ~ /^GPU\\[[0-9]+\\]$/) { gsub(/[^0-9]/, \"\", $1);\n"
           "        printf \"%s, %.3f\\n\", $1, $u / 1048576 }' >> "
           "\"$out\"\n"
           "    sleep 0.2\n"
           "  done\n"
           "fi\n";
}

std::vector<ExportFile> profilingJobFiles(ProfilingPlan &plan, const Cluster &cluster, const Model &model,
                                          const std::string &date)
{
    std::vector<ExportFile> files;
    for (ProfileJob &job : plan.jobs) {
        const std::string dir = "jobs/" + job.id + "/";
        job.scripts.clear();
        std::vector<std::string> entry;
        bool multiNode = false;
        if (job.kind == ProfileJobKind::PerLayer) {
            for (size_t v = 0; v < job.layerVariants.size(); ++v) {
                const int n = job.layerVariants[v];
                ExportRequest req;
                req.model = model;
                req.model.shape.layers = n;
                req.cluster = cluster;
                req.format = ExportFormat::Megatron;
                req.options.date = date;
                req.options.jobName = job.id + "-L" + std::to_string(n);
                req.options.trainArgs = trainArgs(job, "tensorboard/" + job.id + "-L" + std::to_string(n));
                Plan &p = req.plan;
                p.name = req.options.jobName;
                p.globalBatch = job.microBatch * job.microBatchesPerIteration;
                Stage st;
                st.layerCount = n;
                Replica r;
                r.node = job.node;
                r.tp = job.tp;
                r.microBatch = job.microBatch;
                for (int g = 0; g < job.tp; ++g)
                    r.gpus.push_back(g);
                st.replicas.push_back(r);
                p.stages.push_back(st);
                const std::string sub = "L" + std::to_string(n) + "/";
                for (ExportFile f : exportPlan(req)) {
                    f.path = dir + sub + f.path;
                    if (f.path.find("launch-node0.sh") != std::string::npos)
                        entry.push_back(sub + "launch-node0.sh");
                    files.push_back(std::move(f));
                }
            }
        } else {
            ExportRequest req;
            req.model
                = job.kind == ProfileJobKind::Memory ? memoryCalibrationModel(model, job.layerVariants.front()) : model;
            req.cluster = cluster;
            req.plan = *job.plan;
            req.options.date = date;
            req.options.jobName = job.id;
            req.options.trainArgs = trainArgs(job, "tensorboard/" + job.id);
            Diagnostics why;
            checkMegatronExpressible(req, why);
            req.format = why.empty() ? ExportFormat::Megatron : ExportFormat::FlagScale;
            const std::vector<ExportFile> out = exportPlan(req);
            std::string lastNodeScript;
            for (ExportFile f : out) {
                if (f.path.rfind("launch-node", 0) == 0) {
                    lastNodeScript = f.path; // files are in node-rank order; the last holds the last stage
                    multiNode = multiNode || f.path != "launch-node0.sh";
                }
                f.path = dir + f.path;
                files.push_back(std::move(f));
            }
            if (!lastNodeScript.empty())
                entry.push_back(lastNodeScript);
            else {
                // FlagScale: one launcher for the whole heterogeneous job.
                ExportFile launcher;
                launcher.path = dir + "flagscale-run.sh";
                launcher.executable = true;
                launcher.content
                    = "#!/usr/bin/env bash\n# Heterogeneous plan: not expressible in upstream Megatron-LM ("
                    + why.items().front().message
                    + ").\n# Runs the FlagScale export; set FLAGSCALE_DIR to the FlagScale checkout.\n"
                      "set -euo pipefail\nHERE=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\"\n"
                      "cd \"${FLAGSCALE_DIR:?set FLAGSCALE_DIR}\"\n"
                      "exec python run.py --config-path \"$HERE/conf\" --config-name memx action=run \"$@\"\n";
                files.push_back(launcher);
                entry.push_back("flagscale-run.sh");
            }
        }
        if (job.kind == ProfileJobKind::Memory) {
            ExportFile sampler;
            sampler.path = dir + "sample-memory.sh";
            sampler.executable = true;
            sampler.content = memorySamplerScript();
            files.push_back(std::move(sampler));
        }
        ExportFile run;
        run.path = dir + "run.sh";
        run.executable = true;
        run.content = runScript(job, entry, multiNode);
        files.push_back(run);
        job.scripts.push_back(run.path);
    }
    ExportFile manifest;
    manifest.path = "manifest.json";
    manifest.content = manifestToJson(plan, cluster, model).dump(2) + "\n";
    files.push_back(manifest);
    return files;
}

} // namespace memx
