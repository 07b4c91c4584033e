#pragma once

#include "memx/predict/learnedpredictor.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace memx {

/// How measured runs are split for cross-validation. Runs sharing a TrainingSample::planKey
/// (the same plan measured again) always fall in the same fold, so a held-out plan's rerun never
/// trains the model that predicts it.
enum class CvScheme {
    LeaveOneOut, ///< one fold per run; its plan's other measurements are excluded from training too
    KFold ///< k folds of plans (shuffled deterministically)
};

/// Predictions for one measured run, made by a model that never saw the run's plan.
struct RunPrediction {
    std::string runId, group, clusterName;
    std::string rankingSet; ///< TrainingSample::rankingSet
    bool measuredOutOfMemory = false; ///< measured: failed out of memory (no time, no peak)
    double measuredTimeMs = 0;
    std::optional<double> measuredPeakBytes;
    double analyticTimeMs = 0, analyticPeakBytes = 0;
    double learnedTimeMs = 0, learnedPeakBytes = 0;
    double learnedTimeSpreadMs = 0, learnedPeakSpreadBytes = 0;
    double capacityBytes = 0;
    bool oomRisk = false;
    double analyticUtilisation = 0, learnedUtilisation = 0; ///< M of the fullest GPU
    MemoryVerdict analyticVerdict = MemoryVerdict::Fits; ///< memoryVerdict(M, CostOptions::memoryUncertainty)
    MemoryVerdict learnedVerdict = MemoryVerdict::Fits; ///< memoryVerdict(M, relative peak spread)
};

/// Measured outcome (ran / out of memory) against the predicted verdict.
struct OomConfusion {
    int counts[2][3] = {{0, 0, 0}, {0, 0, 0}}; ///< [measured ran=0 / OOM=1][verdict fits, risk, does not fit]
    int falseFits() const { return counts[1][0]; } ///< measured OOM, predicted to fit
    int falseOoms() const { return counts[0][2]; } ///< measured ran, predicted not to fit
};

/// Ranking quality inside "ranking sets" = runs of one hardware group on one cluster (the
/// alternatives a planner chooses between). Sets with fewer than 2 runs are skipped.
struct RankingMetrics {
    int sets = 0; ///< ranking sets with >= 2 runs
    int pairs = 0; ///< pairs of runs compared (within sets)
    double kendallTau = 0; ///< (concordant - discordant) / pairs, pooled over sets
    int top1Hits = 0; ///< sets whose predicted best is the measured best
    double meanRegretPct = 0; ///< mean over sets of (measured score of the pick / measured best - 1) x 100
};

struct GroupMetrics {
    std::string group;
    int runs = 0;
    int memoryRuns = 0; ///< runs with a measured peak
    double timeMapePct = 0;
    double memMapePct = 0;
    RankingMetrics timeRanking; ///< by iteration time
    RankingMetrics balanceRanking; ///< by T x M (weighted product, wt = wm = 1; B is not measured)
    OomConfusion oom; ///< over every run of the group, including those that failed out of memory
    double signedMedianTimePct = 0; ///< median of (predicted - measured) / measured, %
    double signedMedianMemPct = 0;
};

struct MethodMetrics {
    std::vector<GroupMetrics> groups; ///< sorted by group label
    GroupMetrics all;
};

/// Run-to-run noise: |a - b| / b over pairs of runs of the same plan (first vs second by run id).
struct NoiseFloor {
    int pairs = 0;
    double timeMapePct = 0;
    double memMapePct = 0;
};

struct EvaluationReport {
    bool analyticOnly = false; ///< analyticReport: nothing was trained
    /// Each fold's analytic estimates came from a calibration fitted on its training runs only
    /// (crossValidate's `perFold`): the analytic column is the calibrated model out of sample.
    bool calibratedPerFold = false;
    CvScheme scheme = CvScheme::LeaveOneOut;
    int folds = 0;
    PredictorOptions options;
    std::vector<RunPrediction> runs;
    MethodMetrics learned;
    MethodMetrics analytic;
    NoiseFloor noise;
};

/// Rebuilds the samples of every run with the analytic model calibrated on the runs whose ids are
/// given (and on no other): how a fold is judged out of sample when the calibration is part of
/// the method (calibratingSampler in projectpredictor.h).
using FoldSampler = std::function<std::vector<TrainingSample>(const std::set<std::string> &trainRunIds)>;

/// Cross-validates the learned predictor on `samples` (those with a measured time and peak
/// memory) and scores the analytic model on the same runs. `k` is used by KFold (>= 2).
/// Runs that failed out of memory never train; a model trained on every other run predicts
/// them, for the confusion table. `memoryUncertainty` is the analytic verdict's band.
/// `progress(done, total)` counts folds; false cancels (throws Cancelled). With `perFold`, each
/// fold's training and held-out samples are rebuilt by it from the fold's training run ids (the
/// runs that failed out of memory: from every run that ran), so a calibration is never fitted on
/// the runs it is judged on; a run it does not rebuild keeps its sample from `samples`.
EvaluationReport crossValidate(const std::vector<TrainingSample> &samples, CvScheme scheme, int k,
                               const PredictorOptions &options, const ProgressFn &progress = {},
                               double memoryUncertainty = CostOptions {}.memoryUncertainty,
                               const FoldSampler &perFold = {});
/// The analytic model alone on `samples` (no training): MAPE, ranking and the OOM confusion
/// table; the learned columns repeat the analytic ones. For data sets too large or too small
/// to cross-validate, and for `memx evaluate --analytic`.
EvaluationReport analyticReport(const std::vector<TrainingSample> &samples,
                                double memoryUncertainty = CostOptions {}.memoryUncertainty);

/// Metrics of given predictions (used by crossValidate; public for tests).
MethodMetrics scorePredictions(const std::vector<RunPrediction> &runs, bool learned);
NoiseFloor noiseFloor(const std::vector<TrainingSample> &samples);
/// Kendall tau-a of two equally long sequences (ties count as neither concordant nor discordant).
double kendallTau(const std::vector<double> &a, const std::vector<double> &b);

nlohmann::json toJson(const EvaluationReport &report);
/// Human-readable table: per group, analytic and learned side by side, plus the noise floor.
std::string formatReport(const EvaluationReport &report);

} // namespace memx
