#pragma once

#include "memx/search/objective.h"
#include "memx/search/search.h"
#include "memx/testbed/virtualtestbed.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace memx {

class LearnedPredictor;

/// One method of the comparison (docs/evaluation.md, "Methods").
enum class CompareMethod {
    MemX, ///< full space, weights (1, wm, wb), learned predictor when given, else analytic
    TimeOnly, ///< baseline 1: compute-proportional split, homogeneous recompute, weights (1,0,0)
    UniformSplit, ///< baseline 2: uniform layer split, homogeneous recompute, weights (1,0,0)
    Analytic, ///< baseline 3: MemX's space and weights with the analytic cost model only
    Exhaustive, ///< baseline 4: profile every valid configuration end to end (cost only)
    // The published planners (memx/evaluation/baselines.h), each with its own space and cost model.
    Metis,
    Amp,
    Sailor,
    Galvatron,
};
const char *compareMethodId(CompareMethod method);

struct CompareRequest {
    /// Cluster, model, batch, MemX's (full) search space, cost options, profiles.
    SearchRequest search;
    ObjectiveWeights memxWeights; ///< the documented default (1, 0.5, 0.5)
    /// MemX's learned predictor (nullptr: MemX uses the analytic model, like baseline 3).
    const LearnedPredictor *learned = nullptr;
    std::uint64_t testbedSeed = 1;
    TestbedOptions testbed;
    /// Each method contributes its top-N plans to the ground-truth candidate set.
    size_t candidatesPerMethod = 100;
    /// Wall-clock cost of one end-to-end profiling run (baseline 4), seconds.
    double secondsPerProfiledRun = 47.0;
    /// Cap on the configurations baseline 2 re-splits uniformly and re-estimates (best by time first).
    size_t uniformSplitLimit = 20000;
    /// Every method searches through the planned search (memx/search/plannedsearch.h): the launch
    /// target from the cluster (or search.space.target when false) and idle node groups.
    bool autoTarget = true;
    int maxIdleGroups = 2;
    /// Also run the published planners (Metis, AMP, Sailor, Galvatron) with their own cost models
    /// on the same cluster, model and profiles; each contributes its top-N to the ground truth.
    bool publishedPlanners = true;
};

/// A plan measured on the virtual testbed for the ground truth.
struct TruthCandidate {
    Plan plan;
    std::vector<std::string> proposedBy; ///< method ids whose top-N held this plan
    bool ok = false; ///< ran without running out of memory
    std::string error;
    double timeMs = 0; ///< measured iteration time
    double peak = 0; ///< measured M: highest per-GPU device-used peak / capacity
    double imbalance = 0; ///< measured B: coefficient of variation of per-GPU utilisation
};

/// Ground truth: the candidates ranked by measurement. Orders hold indices of `ok` candidates, best first.
struct GroundTruth {
    std::vector<TruthCandidate> candidates;
    std::vector<uint32_t> timeOrder; ///< by measured T
    std::vector<uint32_t> memoryBalanceOrder; ///< by measured T^wt x M^wm x B^wb (MemX's weights)
    double testbedMs = 0; ///< wall time spent on testbed runs
};

/// Ranks measured candidates (fills timeOrder and memoryBalanceOrder with objective::rank over
/// the ok candidates' measured metrics).
void rankGroundTruth(GroundTruth &truth, ObjectiveWeights memoryBalanceWeights);

/// Measured metrics of a testbed run: (M, B) from per-GPU device-used peaks against the
/// capacities of the plan's GPUs (stage, replica, rank order).
void measuredMemoryMetrics(const TestbedRun &run, const Plan &plan, const Cluster &cluster, double &peak,
                           double &imbalance);

struct MethodOutcome {
    CompareMethod method = CompareMethod::MemX;
    std::string id, name, description;
    std::string predictor; ///< "analytic" or the learned model's description; empty for exhaustive
    bool hasPlan = false; ///< false: the method found no valid plan (or has none of its own)
    Plan plan;
    double predictedTimeMs = 0, predictedPeak = 0, predictedImbalance = 0;
    /// log score of the pick under MemX's weights, normalised by MemX's analytic result's maxima
    /// (comparable across methods; lower is better).
    double memxLogScore = 0;
    bool measuredOk = false;
    std::string measuredError;
    double measuredTimeMs = 0, measuredPeak = 0, measuredImbalance = 0;
    double searchMs = 0; ///< search (+ prediction / re-estimation) wall time
    uint64_t validConfigs = 0; ///< configurations the method evaluated
    int timeRank = 0, memoryBalanceRank = 0; ///< 1-based rank of the pick in the ground truth (0: not ranked)
    bool top1Time = false, top1MemoryBalance = false;
    /// Regret of the pick on the testbed, in percent (0 for the true Top-1; only when measuredOk):
    /// time: measured T / best measured T - 1; memory-balance: measured weighted-product score /
    /// the best candidate's score - 1 (same normalisation as the ranking, so a plan that is 2%
    /// worse under the objective has regret 2% however many plans sit between them).
    double timeRegretPct = 0, memoryBalanceRegretPct = 0;
    double profilingSeconds = 0; ///< exhaustive: valid configurations x secondsPerProfiledRun
    /// Published planners: predicted* are MemX's analytic estimate of the pick (estimatePlan); own*
    /// are the planner's own prediction; refusal says why it has no plan (e.g. Metis at 20 GPUs).
    bool published = false;
    std::string refusal;
    double ownTimeMs = 0, ownPeakUtilisation = 0;
    bool ownHasMemory = false, ownFits = true;
    bool memxOom = false; ///< MemX's cost model predicts the pick runs out of memory
    std::vector<std::string> notes;
};

struct CompareReport {
    std::vector<MethodOutcome> methods; ///< MemX, baselines 1..4, then the published planners
    GroundTruth truth;
    ObjectiveWeights memxWeights;
    std::vector<std::string> notes;
    LaunchTarget target = LaunchTarget::Any; ///< the launch target every method searched under
    std::string targetReason;
    bool cancelled = false; ///< the progress callback returned false: the report is partial
};

/// Runs every method, measures the union of their top-N on the testbed and scores the picks.
/// Progress is reported as (thousandths done, 1000) from the calling thread, through every
/// search and testbed run; returning false cancels within one search progress step or one testbed
/// run, and the partial report has `cancelled` set. Throws std::invalid_argument on an unusable
/// request (from runSearch).
CompareReport runCompare(const CompareRequest &request, const ProgressFn &progress = {});

/// Layer counts of the uniform split of `layers` layers into `stages` stages (the remainder goes
/// to the first stages, one each). Empty when stages > layers or stages < 1.
std::vector<int> uniformSplit(int layers, int stages);

nlohmann::json toJson(const CompareReport &report, const Cluster &cluster);

} // namespace memx
