#include "memx/cost/costjson.h"

namespace memx {

nlohmann::json toJson(const PlanEstimate &e)
{
    nlohmann::json j;
    j["microBatches"] = e.microBatches;
    j["iterationTimeMs"] = e.iterationTimeMs;
    j["pipelineMs"] = e.pipelineMs;
    j["dpSyncMs"] = e.dpSyncMs;
    j["optimizerMs"] = e.optimizerMs;
    j["peakUtilisation"] = e.peakUtilisation;
    j["imbalance"] = e.imbalance;
    j["peakBytes"] = e.peakBytes;
    j["oom"] = e.oom;
    j["verdict"] = toString(e.verdict);
    j["marginBytes"] = e.marginBytes;
    if (e.fullestGpu >= 0) {
        const GpuMemory &f = e.gpus[static_cast<size_t>(e.fullestGpu)];
        j["fullestGpu"] = {{"node", f.node}, {"gpu", f.gpuIndex}, {"device", f.device}};
        j["peaks"] = {{"allocatedBytes", f.allocatedBytes},
                      {"reservedBytes", f.reservedBytes},
                      {"deviceUsedBytes", f.totalBytes}};
    }
    j["peakKind"] = "device-used (allocator peak + runtime context + communicator buffers + allocator reserve)";
    nlohmann::json stages = nlohmann::json::array();
    for (const StageEstimate &s : e.stages)
        stages.push_back({{"stage", s.stage},
                          {"firstLayer", s.firstLayer},
                          {"layerCount", s.layerCount},
                          {"microBatchesInFlight", s.microBatchesInFlight},
                          {"forwardMs", s.forwardMs},
                          {"backwardMs", s.backwardMs},
                          {"recomputeMs", s.recomputeMs},
                          {"tpCommMs", s.tpCommMs},
                          {"cpCommMs", s.cpCommMs},
                          {"fsdpCommMs", s.fsdpCommMs},
                          {"moeCommMs", s.moeCommMs},
                          {"stepMs", s.stepMs},
                          {"p2pMs", s.p2pMs},
                          {"dpSyncMs", s.dpSyncMs},
                          {"optimizerMs", s.optimizerMs},
                          {"bubbleMs", s.bubbleMs},
                          {"slowestReplica", s.slowestReplica},
                          {"profiled", s.profiled}});
    j["stages"] = stages;
    nlohmann::json gpus = nlohmann::json::array();
    for (const GpuMemory &g : e.gpus)
        gpus.push_back({{"node", g.node},
                        {"gpu", g.gpuIndex},
                        {"device", g.device},
                        {"stage", g.stage},
                        {"replica", g.replica},
                        {"paramsBytes", g.paramsBytes},
                        {"gradsBytes", g.gradsBytes},
                        {"optimizerBytes", g.optimizerBytes},
                        {"activationBytes", g.activationBytes},
                        {"overheadBytes", g.overheadBytes},
                        {"allocatedBytes", g.allocatedBytes},
                        {"reservedBytes", g.reservedBytes},
                        {"totalBytes", g.totalBytes},
                        {"attention", toString(g.attention)},
                        {"sources",
                         {{"activations", g.activationsMeasured ? "measured profile" : "formula"},
                          {"weights", "formula"},
                          {"overhead", "device runtime figures"}}},
                        {"capacityBytes", g.capacityBytes},
                        {"headroomBytes", g.headroomBytes},
                        {"utilisation", g.utilisation()},
                        {"oom", g.oom}});
    j["gpus"] = gpus;
    return j;
}

} // namespace memx
