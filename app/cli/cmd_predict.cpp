#include "command.h"
#include "searchoptions.h"

#include "memx/cost/costjson.h"
#include "memx/cost/costmodel.h"
#include "memx/cost/features.h"
#include "memx/io/formats.h"
#include "memx/predict/projectpredictor.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/diagnostic.h"

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx predict --cluster CLUSTER --model MODEL --plan PLAN [--project FILE]
                    [--attention auto|flash|fused|unfused] [--json]

Prints the analytic cost model's full breakdown of one plan: per stage forward, backward,
recompute, TP communication, pipeline send, data-parallel sync, optimizer and bubble times;
per GPU the memory components (weights, gradients, optimizer states, activations, overheads),
capacity and headroom. Memory is the device-used peak (allocator peak + runtime context +
communicator buffers + allocator reserve).

  --gpus FILE   custom GPU definitions (memx.catalogue/1) the cluster may name; repeatable
)";

std::string gib(double bytes)
{
    std::ostringstream o;
    o << std::fixed << std::setprecision(2) << bytes / 1073741824.0;
    return o.str();
}

int run(const std::vector<std::string> &argv)
{
    Args args(argv, {"cluster", "gpus", "model", "plan", "project", "attention"}, {"json"});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    const std::string planPath = args.require("plan");
    Cluster cluster = loadClusterOption(args);
    CostOptions cost;
    std::unique_ptr<SqliteStore> store;
    std::optional<LearnedPredictor> learned;
    ProfileSet profiles;
    if (auto project = args.value("project")) {
        if (!std::filesystem::exists(*project))
            throw LoadError(*project, "", "no such project file");
        store = std::make_unique<SqliteStore>(*project, false);
        learned = loadPredictor(*store);
        profiles = store->profiles();
        applyProjectCalibration(*store, cluster, cost);
    }
    const Model model = modelOption(args, store.get());
    const Plan plan = loadPlan(planPath);
    Diagnostics diags(planPath);
    validatePlan(plan, cluster, model, diags);
    diags.throwIfAny();
    const PlanEstimate e = estimatePlan(plan, cluster, model, profiles.empty() ? nullptr : &profiles, cost);
    std::optional<Prediction> lp;
    double capacity = 0;
    for (const GpuMemory &g : e.gpus)
        if (g.totalBytes == e.peakBytes) {
            capacity = g.capacityBytes;
            break;
        }
    if (learned)
        lp = learned->predict(encodeFeatures(featureInputs(plan, cluster, model, e)), e.iterationTimeMs, e.peakBytes,
                              e.peakUtilisation);
    const std::string predictorName = learned ? learned->describe() : "analytic";

    if (args.has("json")) {
        nlohmann::json j = toJson(e);
        j["plan"] = plan.summary(cluster);
        j["cluster"] = cluster.name;
        j["model"] = model.id;
        j["predictor"] = predictorName;
        if (lp)
            j["learned"] = {{"iterationTimeMs", lp->timeMs},
                            {"iterationTimeSpreadMs", lp->timeSpreadMs},
                            {"peakBytes", lp->peakBytes},
                            {"peakSpreadBytes", lp->peakSpreadBytes},
                            {"capacityBytes", capacity},
                            {"peakUtilisation", lp->peakUtilisation},
                            {"oomRisk", lp->oomRisk},
                            {"verdict",
                             toString(memoryVerdict(lp->peakUtilisation,
                                                    lp->peakBytes > 0 ? lp->peakSpreadBytes / lp->peakBytes : 0))},
                            {"extrapolating", lp->extrapolating},
                            {"extrapolationReason", lp->extrapolationReason}};
        std::cout << j.dump(2) << "\n";
        return e.oom ? Failure : Ok;
    }
    std::cout << std::fixed << std::setprecision(2);
    std::cout << "predictor: " << predictorName << "\n";
    if (lp)
        std::cout << "Learned: iteration time " << lp->timeMs << " ms +- " << lp->timeSpreadMs << ", peak memory "
                  << gib(lp->peakBytes) << " GiB +- " << gib(lp->peakSpreadBytes) << " of " << gib(capacity)
                  << " GiB, M (peak utilisation) " << std::setprecision(3) << lp->peakUtilisation
                  << std::setprecision(2) << (lp->oomRisk ? "   ** risk of OOM **" : "") << "\n"
                  << (lp->extrapolating ? "   EXTRAPOLATING: " + lp->extrapolationReason
                              + " (spreads widened; trust the analytic figures more)\n"
                                        : std::string())
                  << "   (the breakdown below is the analytic model's)\n";
    std::cout << "Plan: " << plan.summary(cluster) << (plan.distributedOptimizer ? " dist-opt" : "") << "\n";
    std::cout << "Model " << model.id << ", cluster \"" << cluster.name << "\", " << e.microBatches
              << " micro-batches\n\n";
    std::cout << "Iteration time " << e.iterationTimeMs << " ms = pipeline " << e.pipelineMs << " + DP sync "
              << e.dpSyncMs << " + optimizer " << e.optimizerMs << "\n";
    std::cout << "Peak memory " << gib(e.peakBytes) << " GiB, M (peak utilisation) " << std::setprecision(3)
              << e.peakUtilisation << ", B (CV of utilisation) " << e.imbalance
              << (e.oom ? "   ** OUT OF MEMORY **" : "") << "\n";
    if (e.fullestGpu >= 0) {
        const GpuMemory &f = e.gpus[static_cast<size_t>(e.fullestGpu)];
        std::cout << "Memory verdict: " << toString(e.verdict) << " (fullest GPU " << f.node << ":" << f.gpuIndex << " "
                  << f.device << ", margin " << gib(e.marginBytes) << " GiB of " << gib(f.capacityBytes) << ", +-"
                  << std::setprecision(0) << cost.memoryUncertainty * 100 << "% band)\n"
                  << std::setprecision(2) << "  peaks there: allocated " << gib(f.allocatedBytes) << " GiB, reserved "
                  << gib(f.reservedBytes) << " GiB, device-used " << gib(f.totalBytes) << " GiB\n";
    }
    {
        std::map<std::string, std::string> attention;
        bool measured = false;
        for (const GpuMemory &g : e.gpus) {
            attention[g.device] = toString(g.attention);
            measured = measured || g.activationsMeasured;
        }
        std::cout << "Attention (" << toString(model.training.attention) << "):";
        for (const auto &[dev, a] : attention)
            std::cout << " " << dev << "=" << a;
        std::cout << "; activations from " << (measured ? "measured profiles where held, else formula" : "formula")
                  << "\n\n";
    }
    // The CP column only for a context-parallel plan (its exposed K/V exchange per micro-batch).
    // The FSDP column only for a Megatron-FSDP plan (its exposed per-micro-batch gather / reduce).
    // The EP column only for an expert-parallel plan (its all-to-alls per micro-batch).
    const bool cp = plan.contextParallel > 1, fsdp = plan.fsdp != DpSharding::None, ep = plan.expertParallel > 1;
    std::cout << std::setprecision(2) << "  per stage, ms (fwd/bwd/recompute/TP" << (cp ? "/CP" : "")
              << (fsdp ? "/FSDP" : "") << (ep ? "/EP all-to-all" : "")
              << "/step per micro-batch; p2p per send; DP, optimizer, bubble per iteration)\n";
    std::cout << "  stage layers  inflight      fwd      bwd    recomp       TP" << (cp ? "       CP" : "")
              << (fsdp ? "     FSDP" : "") << (ep ? "       EP" : "")
              << "     step      p2p     DPsync      opt     bubble\n";
    for (const StageEstimate &s : e.stages) {
        std::cout << "  " << std::setw(5) << s.stage << std::setw(7) << s.layerCount << std::setw(10)
                  << s.microBatchesInFlight << std::setw(9) << s.forwardMs << std::setw(9) << s.backwardMs
                  << std::setw(10) << s.recomputeMs << std::setw(9) << s.tpCommMs;
        if (cp)
            std::cout << std::setw(9) << s.cpCommMs;
        if (fsdp)
            std::cout << std::setw(9) << s.fsdpCommMs;
        if (ep)
            std::cout << std::setw(9) << s.moeCommMs;
        std::cout << std::setw(9) << s.stepMs << std::setw(9) << s.p2pMs << std::setw(11) << s.dpSyncMs << std::setw(9)
                  << s.optimizerMs << std::setw(11) << s.bubbleMs << (s.profiled ? "  (profiled)" : "") << "\n";
    }
    std::cout << "\n  per GPU, GiB\n  node          gpu stage  weights    grads    optim     activ  overhead    "
                 "total capacity headroom\n";
    for (const GpuMemory &g : e.gpus)
        std::cout << "  " << std::left << std::setw(12) << g.node << std::right << std::setw(5) << g.gpuIndex
                  << std::setw(6) << g.stage << std::setw(9) << gib(g.paramsBytes) << std::setw(9) << gib(g.gradsBytes)
                  << std::setw(9) << gib(g.optimizerBytes) << std::setw(10) << gib(g.activationBytes) << std::setw(10)
                  << gib(g.overheadBytes) << std::setw(9) << gib(g.totalBytes) << std::setw(9) << gib(g.capacityBytes)
                  << std::setw(9) << gib(g.headroomBytes) << (g.oom ? "  OOM" : "") << "\n";
    return e.oom ? Failure : Ok;
}

CommandRegistration reg({"predict", "analytic time and per-GPU memory breakdown of one plan", kUsage, &run});

} // namespace
} // namespace memx::cli
