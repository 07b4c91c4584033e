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
constexpr int kFeatureSchemaVersion = 1;

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
};

/// Number of features of schema kFeatureSchemaVersion.
constexpr size_t kFeatureCount = 44;
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
