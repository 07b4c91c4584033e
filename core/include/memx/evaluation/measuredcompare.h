#pragma once

#include "memx/evaluation/baselines.h"
#include "memx/predict/crossvalidation.h"
#include "memx/profile/measuredrun.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace memx {

/// One method's predictions of the measured runs and their metrics (docs/evaluation.md,
/// "On measured runs").
struct MeasuredMethodScore {
    std::string id, name;
    bool hasMemory = true; ///< false: no memory model (its memory MAPE and OOM verdicts mean nothing)
    int costed = 0; ///< runs it could cost
    int refused = 0; ///< runs its cost model refused (ok = false), left out of its metrics
    std::vector<RunPrediction> runs; ///< its predictions in the analytic fields
    MethodMetrics metrics; ///< scorePredictions(runs, false): per group and all
};

/// Every method on the same measured runs: MemX's analytic model (with the project's profiles and
/// calibration when given) and the published planners' own cost models.
struct MeasuredComparison {
    std::vector<MeasuredMethodScore> methods; ///< MemX first, then kBaselines in order
    std::vector<std::string> notes;
    int runs = 0; ///< runs every method was given
};

/// Scores MemX (the samples' analytic estimates, `memxSamples` as samplesFromStore builds them)
/// and each published planner's baselineEstimate on `runs` (the same runs, by id). Runs whose
/// model `modelOf` cannot resolve are skipped with a note. Ranking sets are the samples' (same
/// cluster, model and global batch within a hardware group). `progress(done, total)` counts runs;
/// returning false throws Cancelled.
MeasuredComparison compareOnMeasuredRuns(const std::vector<MeasuredRun> &runs,
                                         const std::vector<TrainingSample> &memxSamples,
                                         const std::function<std::optional<Model>(const std::string &)> &modelOf,
                                         const ProfileSet *profiles, const CostOptions &cost,
                                         const ProgressFn &progress = {});

nlohmann::json toJson(const MeasuredComparison &comparison);
/// Table per method (all runs) and per hardware group: time / memory MAPE, Kendall tau, Top-1 and
/// regret under the time and the T x M rankings, OOM false fits / false OOMs.
std::string formatMeasuredComparison(const MeasuredComparison &comparison, const std::string &title);

} // namespace memx
