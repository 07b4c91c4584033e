#pragma once

#include "memx/cluster/cluster.h"
#include "memx/cost/costmodel.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"

#include <array>
#include <string>
#include <vector>

namespace memx {

/// Version of the learned predictor's feature schema (the meaning and order of the features).
/// A model trained on another version is refused.
constexpr int kFeatureSchemaVersion = 2;

/// Raw figures of one plan from which the feature vector is encoded. Filled either from a full
/// analytic estimate (featureInputs) or by the search's fast path, which computes the same
/// quantities with the same building blocks (tests check both agree).
///
/// "Bottleneck stage" = the first stage with the largest per-micro-batch step; "peak GPU" = the
/// first GPU (in stage, replica order) with the largest device-used bytes.
struct PlanFeatureInputs {
    // analytic time breakdown, ms
    double iterationTimeMs = 0, pipelineMs = 0, dpSyncMs = 0, optimizerMs = 0;
    double maxStepMs = 0, sumStepMs = 0, maxP2pMs = 0, sumP2pMs = 0;
    double bnForwardMs = 0, bnBackwardMs = 0, bnRecomputeMs = 0, bnTpCommMs = 0;
    int bnTp = 1, bnDp = 1, bnMicroBatch = 1;
    double bnPeakTflops = 0, bnMemoryBandwidthGBps = 0; ///< device of the bottleneck stage
    // analytic memory of the peak GPU, bytes
    double pkParams = 0, pkGrads = 0, pkOptimizer = 0, pkActivations = 0, pkOverhead = 0, pkTotal = 0;
    double pkCapacity = 0;
    int pkStage = 0, pkTp = 1, pkDp = 1, pkMicroBatch = 1, pkInFlight = 1, pkLayers = 0;
    double peakUtilisation = 0, imbalance = 0;
    // plan shape
    int stages = 1, microBatches = 1, totalGpus = 1;
    int maxTp = 1, maxDp = 1, minDp = 1;
    int recomputeNone = 0, recomputeSelective = 0, recomputeFull = 0; ///< number of stages
    bool distributedOptimizer = false, sequenceParallel = false;
    // model
    double modelParams = 0;
    int layers = 0, hidden = 0, seqLength = 0, globalBatch = 0;
    // plan-shape effects the closed-form pipeline formula misses (schema v2)
    /// 1F1B makespan of the analytic per-stage forward / backward / P2P times by event simulation
    /// (oneFOneBMakespanMs); compared with pipelineMs it measures what the closed form misses
    /// (unequal forward/backward ratios across stages, fill/drain with few micro-batches).
    double pipelineSimMs = 0;
    /// Largest over stages of the tensor-parallel collective latency steps per micro-batch
    /// (8 (tp - 1) per layer: 4 all-reduces of 2 (tp - 1) ring steps) per ms of the stage's step.
    double maxTpStepsPerMs = 0;
    /// Largest over stages of TP communication / step time.
    double maxTpCommFrac = 0;
};

/// Makespan (ms) of one 1F1B iteration of `p` stages with per-micro-batch forward, backward and
/// send-to-next-stage times, by discrete-event simulation (a forward waits for the previous
/// stage's forward + send, a backward for the next stage's backward + send). For m > 4p + 8 it
/// simulates 4p + 8 and 3p + 8 micro-batches and extrapolates linearly (the steady state of 1F1B
/// repeats; measured within 0.3% on average of the full simulation on the testbed runs).
/// Deterministic; used by both featureInputs and the search's fast path.
double oneFOneBMakespanMs(const double *forwardMs, const double *backwardMs, const double *p2pMs, int p, int m);

/// Number of features of schema kFeatureSchemaVersion.
constexpr size_t kFeatureCount = 47;
using FeatureVector = std::array<float, kFeatureCount>;

/// Names of the features, in order (for reports and the stored model's manifest).
const std::vector<std::string> &featureNames();

/// Encodes the inputs as the fixed feature vector (scale-free ratios, logs, counts).
void encodeFeatures(const PlanFeatureInputs &in, float *out);
FeatureVector encodeFeatures(const PlanFeatureInputs &in);

/// The inputs of one plan from its analytic estimate.
PlanFeatureInputs featureInputs(const Plan &plan, const Cluster &cluster, const Model &model,
                                const PlanEstimate &estimate);

} // namespace memx
