#include "memx/cost/features.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace memx {

namespace {

double safeDiv(double a, double b)
{
    return b > 0 ? a / b : 0.0;
}

float lg(double x)
{
    return static_cast<float>(std::log(std::max(x, 1e-12)));
}

} // namespace

const std::vector<std::string> &featureNames()
{
    static const std::vector<std::string> names = {
        "log_time_ms", // 0
        "pipeline_frac",
        "dp_sync_frac",
        "optimizer_frac",
        "bubble_frac",
        "p2p_frac", // 5
        "p2p_over_step",
        "bn_forward_frac",
        "bn_backward_frac",
        "bn_recompute_frac",
        "bn_tp_comm_frac", // 10
        "log_step_ms",
        "log_peak_gib",
        "pk_params_frac",
        "pk_grads_frac",
        "pk_optimizer_frac", // 15
        "pk_activations_frac",
        "pk_overhead_frac",
        "peak_utilisation",
        "imbalance",
        "stages", // 20
        "micro_batches",
        "log2_gpus",
        "max_tp",
        "max_dp",
        "min_dp", // 25
        "bn_tp",
        "bn_dp",
        "bn_micro_batch",
        "pk_stage_frac",
        "pk_tp", // 30
        "pk_dp",
        "pk_micro_batch",
        "pk_in_flight",
        "pk_layer_frac",
        "recompute_none_frac", // 35
        "recompute_selective_frac",
        "recompute_full_frac",
        "distributed_optimizer",
        "sequence_parallel",
        "log10_model_params", // 40
        "log_tokens_per_micro_batch",
        "device_peak_tflops",
        "device_capacity_gib",
        "log_pipeline_sim_over_formula", // 44
        "max_tp_steps_per_ms",
        "max_tp_comm_frac",
    };
    static_assert(kFeatureCount == 47);
    return names;
}

void encodeFeatures(const PlanFeatureInputs &in, float *o)
{
    const double t = in.iterationTimeMs;
    const double pk = in.pkTotal;
    const double p = std::max(1, in.stages);
    o[0] = lg(t);
    o[1] = static_cast<float>(safeDiv(in.pipelineMs, t));
    o[2] = static_cast<float>(safeDiv(in.dpSyncMs, t));
    o[3] = static_cast<float>(safeDiv(in.optimizerMs, t));
    o[4] = static_cast<float>(safeDiv(in.pipelineMs - in.microBatches * in.maxStepMs, in.pipelineMs));
    o[5] = static_cast<float>(safeDiv(2.0 * in.sumP2pMs, in.pipelineMs));
    o[6] = static_cast<float>(safeDiv(in.maxP2pMs, in.maxStepMs));
    const double step = in.bnForwardMs + in.bnBackwardMs + in.bnRecomputeMs + in.bnTpCommMs;
    o[7] = static_cast<float>(safeDiv(in.bnForwardMs, step));
    o[8] = static_cast<float>(safeDiv(in.bnBackwardMs, step));
    o[9] = static_cast<float>(safeDiv(in.bnRecomputeMs, step));
    o[10] = static_cast<float>(safeDiv(in.bnTpCommMs, step));
    o[11] = lg(in.maxStepMs);
    o[12] = lg(pk / 1073741824.0);
    o[13] = static_cast<float>(safeDiv(in.pkParams, pk));
    o[14] = static_cast<float>(safeDiv(in.pkGrads, pk));
    o[15] = static_cast<float>(safeDiv(in.pkOptimizer, pk));
    o[16] = static_cast<float>(safeDiv(in.pkActivations, pk));
    o[17] = static_cast<float>(safeDiv(in.pkOverhead, pk));
    o[18] = static_cast<float>(in.peakUtilisation);
    o[19] = static_cast<float>(in.imbalance);
    o[20] = static_cast<float>(in.stages);
    o[21] = static_cast<float>(in.microBatches);
    o[22] = static_cast<float>(std::log2(std::max(1, in.totalGpus)));
    o[23] = static_cast<float>(in.maxTp);
    o[24] = static_cast<float>(in.maxDp);
    o[25] = static_cast<float>(in.minDp);
    o[26] = static_cast<float>(in.bnTp);
    o[27] = static_cast<float>(in.bnDp);
    o[28] = static_cast<float>(in.bnMicroBatch);
    o[29] = static_cast<float>(p > 1 ? in.pkStage / (p - 1) : 0.0);
    o[30] = static_cast<float>(in.pkTp);
    o[31] = static_cast<float>(in.pkDp);
    o[32] = static_cast<float>(in.pkMicroBatch);
    o[33] = static_cast<float>(in.pkInFlight);
    o[34] = static_cast<float>(safeDiv(in.pkLayers, in.layers));
    o[35] = static_cast<float>(in.recomputeNone / p);
    o[36] = static_cast<float>(in.recomputeSelective / p);
    o[37] = static_cast<float>(in.recomputeFull / p);
    o[38] = in.distributedOptimizer ? 1.0f : 0.0f;
    o[39] = in.sequenceParallel ? 1.0f : 0.0f;
    o[40] = static_cast<float>(std::log10(std::max(1.0, in.modelParams)));
    o[41] = lg(static_cast<double>(in.bnMicroBatch) * in.seqLength);
    o[42] = static_cast<float>(in.bnPeakTflops);
    o[43] = static_cast<float>(in.pkCapacity / 1073741824.0);
    o[44] = in.pipelineSimMs > 0 && in.pipelineMs > 0 ? static_cast<float>(std::log(in.pipelineSimMs / in.pipelineMs))
                                                      : 0.0f;
    o[45] = static_cast<float>(in.maxTpStepsPerMs);
    o[46] = static_cast<float>(in.maxTpCommFrac);
}

double oneFOneBMakespanMs(const double *f, const double *b, const double *c, int p, int m)
{
    if (p <= 0 || m <= 0)
        return 0.0;
    std::vector<int> next(static_cast<size_t>(p));
    std::vector<double> clock(static_cast<size_t>(p));
    std::vector<double> fEnd, bEnd;
    auto simulate = [&](int mm) {
        std::fill(next.begin(), next.end(), 0);
        std::fill(clock.begin(), clock.end(), 0.0);
        fEnd.assign(static_cast<size_t>(p) * static_cast<size_t>(mm), -1.0);
        bEnd.assign(fEnd.size(), -1.0);
        size_t remaining = 2 * static_cast<size_t>(mm) * static_cast<size_t>(p);
        while (remaining > 0) {
            bool progressed = false;
            for (int i = 0; i < p; ++i) {
                const int warm = std::min(p - 1 - i, mm);
                int &k = next[static_cast<size_t>(i)];
                double &clk = clock[static_cast<size_t>(i)];
                while (k < 2 * mm) {
                    // 1F1B order: warm forwards, then (forward, backward) pairs, then the rest backwards.
                    bool fwd;
                    int mb;
                    if (k < warm) {
                        fwd = true;
                        mb = k;
                    } else if (k < warm + 2 * (mm - warm)) {
                        const int j = k - warm;
                        fwd = j % 2 == 0;
                        mb = fwd ? warm + j / 2 : j / 2;
                    } else {
                        fwd = false;
                        mb = mm - warm + (k - warm - 2 * (mm - warm));
                    }
                    double ready = 0;
                    if (fwd && i > 0) {
                        const double e = fEnd[static_cast<size_t>(i - 1) * mm + mb];
                        if (e < 0)
                            break;
                        ready = e + c[i - 1];
                    } else if (!fwd && i < p - 1) {
                        const double e = bEnd[static_cast<size_t>(i + 1) * mm + mb];
                        if (e < 0)
                            break;
                        ready = e + c[i];
                    }
                    clk = std::max(clk, ready) + (fwd ? f[i] : b[i]);
                    (fwd ? fEnd : bEnd)[static_cast<size_t>(i) * mm + mb] = clk;
                    ++k;
                    --remaining;
                    progressed = true;
                }
            }
            if (!progressed)
                return 0.0; // cannot happen for 1F1B orders
        }
        return *std::max_element(clock.begin(), clock.end());
    };
    const int cap = 4 * p + 8;
    if (m <= cap)
        return simulate(m);
    const double a = simulate(cap);
    const double a0 = simulate(cap - p);
    return a + (a - a0) / p * (m - cap);
}

FeatureVector encodeFeatures(const PlanFeatureInputs &in)
{
    FeatureVector v {};
    encodeFeatures(in, v.data());
    return v;
}

PlanFeatureInputs featureInputs(const Plan &plan, const Cluster &cluster, const Model &model, const PlanEstimate &e)
{
    PlanFeatureInputs in;
    in.iterationTimeMs = e.iterationTimeMs;
    in.pipelineMs = e.pipelineMs;
    in.dpSyncMs = e.dpSyncMs;
    in.optimizerMs = e.optimizerMs;
    in.microBatches = e.microBatches;
    in.stages = plan.pp();
    in.totalGpus = plan.totalGpus();
    in.distributedOptimizer = plan.distributedOptimizer;
    in.sequenceParallel = plan.sequenceParallel;
    in.modelParams = static_cast<double>(model.totalParams());
    in.layers = model.shape.layers;
    in.hidden = model.shape.hidden;
    in.seqLength = model.shape.seqLength;
    in.globalBatch = plan.globalBatch;
    in.peakUtilisation = e.peakUtilisation;
    in.imbalance = e.imbalance;
    in.minDp = 1 << 30;
    in.maxDp = 0;
    in.maxTp = 0;
    const std::vector<Node> nodes = cluster.nodes();
    std::map<std::string, int> nodeByName;
    for (size_t i = 0; i < nodes.size(); ++i)
        nodeByName[nodes[i].name] = static_cast<int>(i);
    const bool bf16 = model.training.precision == Precision::BF16;

    int bn = 0;
    std::vector<double> simF, simB, simC;
    for (size_t i = 0; i < e.stages.size(); ++i) {
        const StageEstimate &s = e.stages[i];
        simF.push_back(s.forwardMs + 0.5 * s.tpCommMs);
        simB.push_back(s.backwardMs + s.recomputeMs + 0.5 * s.tpCommMs);
        simC.push_back(s.p2pMs);
        {
            int tp = 1;
            for (const Replica &r : plan.stages[i].replicas)
                if (r.tp > tp)
                    tp = r.tp;
            in.maxTpStepsPerMs
                = std::max(in.maxTpStepsPerMs, safeDiv(8.0 * (tp - 1) * plan.stages[i].layerCount, s.stepMs));
            in.maxTpCommFrac = std::max(in.maxTpCommFrac, safeDiv(s.tpCommMs, s.stepMs));
        }
        if (s.stepMs > e.stages[static_cast<size_t>(bn)].stepMs)
            bn = static_cast<int>(i);
        in.maxStepMs = std::max(in.maxStepMs, s.stepMs);
        in.sumStepMs += s.stepMs;
        in.maxP2pMs = std::max(in.maxP2pMs, s.p2pMs);
        in.sumP2pMs += s.p2pMs;
        const Stage &st = plan.stages[i];
        in.maxDp = std::max(in.maxDp, st.dp());
        in.minDp = std::min(in.minDp, st.dp());
        for (const Replica &r : st.replicas)
            in.maxTp = std::max(in.maxTp, r.tp);
        switch (st.recompute.method) {
        case RecomputeMethod::None:
            ++in.recomputeNone;
            break;
        case RecomputeMethod::Selective:
            ++in.recomputeSelective;
            break;
        case RecomputeMethod::Full:
            ++in.recomputeFull;
            break;
        }
    }
    if (!e.stages.empty()) {
        const StageEstimate &s = e.stages[static_cast<size_t>(bn)];
        in.bnForwardMs = s.forwardMs;
        in.bnBackwardMs = s.backwardMs;
        in.bnRecomputeMs = s.recomputeMs;
        in.bnTpCommMs = s.tpCommMs;
        const Stage &st = plan.stages[static_cast<size_t>(bn)];
        const Replica &r = st.replicas[static_cast<size_t>(s.slowestReplica)];
        in.bnTp = r.tp;
        in.bnDp = st.dp();
        in.bnMicroBatch = r.microBatch;
        const Node &node = nodes[static_cast<size_t>(nodeByName.at(r.node))];
        const GpuSpec &dev = cluster.devices[static_cast<size_t>(node.device)];
        in.bnPeakTflops = dev.peakTflops(bf16).value_or(dev.peakTflops(!bf16).value_or(0.0));
        in.bnMemoryBandwidthGBps = dev.memoryBandwidthGBps.value_or(0.0);
    }
    int pkIndex = -1;
    for (size_t g = 0; g < e.gpus.size(); ++g)
        if (pkIndex < 0 || e.gpus[g].totalBytes > e.gpus[static_cast<size_t>(pkIndex)].totalBytes)
            pkIndex = static_cast<int>(g);
    if (pkIndex >= 0) {
        const GpuMemory &g = e.gpus[static_cast<size_t>(pkIndex)];
        in.pkParams = g.paramsBytes;
        in.pkGrads = g.gradsBytes;
        in.pkOptimizer = g.optimizerBytes;
        in.pkActivations = g.activationBytes;
        in.pkOverhead = g.overheadBytes;
        in.pkTotal = g.totalBytes;
        in.pkCapacity = g.capacityBytes;
        in.pkStage = g.stage;
        const Stage &st = plan.stages[static_cast<size_t>(g.stage)];
        const Replica &r = st.replicas[static_cast<size_t>(g.replica)];
        in.pkTp = r.tp;
        in.pkDp = st.dp();
        in.pkMicroBatch = r.microBatch;
        in.pkInFlight = e.stages[static_cast<size_t>(g.stage)].microBatchesInFlight;
        in.pkLayers = st.layerCount;
    }
    if (in.minDp > in.maxDp)
        in.minDp = in.maxDp;
    in.pipelineSimMs
        = oneFOneBMakespanMs(simF.data(), simB.data(), simC.data(), static_cast<int>(simF.size()), e.microBatches);
    return in;
}

} // namespace memx
