#pragma once

#include "memx/cost/costmodel.h"
#include "memx/cost/features.h"
#include "memx/profile/layerprofile.h"
#include "memx/profile/measuredrun.h"
#include "memx/util/progress.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace memx {

/// Rows from which a prediction batch runs on setThreads' threads (fewer: one thread), measured
/// with bench_predict's BM_PredictBatchThreads (docs/performance.md).
constexpr size_t kParallelPredictRows = 16384;

class XgbBooster;

/// One measured run turned into a training / evaluation sample: its features (from the analytic
/// estimate with the project's profiles) and what was measured.
struct TrainingSample {
    std::string runId;
    std::string group; ///< hardware group label of the run (e.g. "gh200-main/OPT-350")
    std::string clusterName;
    /// Identity of (model, cluster, plan) without the run: runs measuring the same plan again
    /// (e.g. gh200-main vs gh200-rerun) share it. Cross-validation keeps them in one fold.
    std::string planKey;
    FeatureVector features {};
    double analyticTimeMs = 0;
    double analyticPeakBytes = 0;
    double capacityBytes = 0; ///< capacity of the analytic peak GPU
    double analyticPeakUtilisation = 0; ///< M of the analytic estimate (the fullest GPU)
    double measuredTimeMs = 0;
    /// Measured peak; analyticPeakBytes is the analytic peak of the same kind (allocator,
    /// reserved or device-used, MeasuredRun::memoryKind) so the two compare.
    std::optional<double> measuredPeakBytes;
    bool measuredOutOfMemory = false; ///< the run failed out of memory (no time, no peak; never trains)
    /// Alternatives a planner chooses between: same cluster, model and global batch.
    std::string rankingSet;
};

/// Estimates every run with the analytic model (`profiles` may be null) and encodes its
/// features. Runs whose model `modelOf` cannot resolve or whose plan is invalid for its cluster
/// are skipped with a note in `notes` (when given).
std::vector<TrainingSample> buildSamples(const std::vector<MeasuredRun> &runs,
                                         const std::function<std::optional<Model>(const std::string &)> &modelOf,
                                         const ProfileSet *profiles, const CostOptions &cost,
                                         std::vector<std::string> *notes = nullptr);

/// Hyper-parameters of the learned predictor. Small data: shallow trees, strong regularisation.
struct PredictorOptions {
    int ensemble = 5; ///< bootstrap members (the spread of their predictions is the confidence)
    int rounds = 120;
    int maxDepth = 2;
    double eta = 0.08;
    double lambda = 2.0; ///< L2 regularisation of leaf weights
    double minChildWeight = 2.0;
    double colsampleByTree = 0.8;
    std::uint64_t seed = 7;
    int threads = 1; ///< XGBoost threads for training
};

/// Per-row output of the learned predictor: the analytic figure corrected by the learned ratio,
/// and a one-sigma spread (same unit).
struct Prediction {
    double timeMs = 0;
    double peakBytes = 0;
    double timeSpreadMs = 0;
    double peakSpreadBytes = 0;
    /// M: the analytic peak utilisation (largest used / capacity over the GPUs) x the learned
    /// memory ratio, as the learned search reports it
    double peakUtilisation = 0;
    /// isOomRisk(peakUtilisation, spread)
    bool oomRisk = false;
    /// The plan is unlike every training run (extrapolationReason says how); its spreads were
    /// widened to at least kExtrapolationSpread.
    bool extrapolating = false;
    std::string extrapolationReason;
};

/// Relative one-sigma spread (time and memory) a prediction gets at least when it extrapolates.
inline constexpr double kExtrapolationSpread = 0.25;

/// "Risk of OOM": the predicted peak utilisation plus its one-sigma relative spread reaches
/// capacity. One definition for `memx predict`, the evaluation and the learned search.
inline bool isOomRisk(double predictedUtilisation, double relativeMemSpread)
{
    return predictedUtilisation * (1.0 + relativeMemSpread) >= 1.0;
}

/// Dual-output XGBoost correction of the analytic cost model: each ensemble member predicts
/// (log(measured / analytic time), log(measured / analytic peak memory)) from the feature vector
/// (schema kFeatureSchemaVersion) with one num_target = 2 booster. The prediction is the member
/// mean; the spread combines the members' standard deviation with the out-of-bag residual error
/// (in quadrature, in log space). Immutable after training; predictLogRatios is thread-safe
/// (serialised internally per member).
class LearnedPredictor {
public:
    LearnedPredictor();
    ~LearnedPredictor();
    LearnedPredictor(LearnedPredictor &&) noexcept;
    LearnedPredictor &operator=(LearnedPredictor &&) noexcept;

    /// Trains on the samples that have a measured time and peak memory (at least 2).
    /// `progress(done, total)` counts boosting rounds over all members; false cancels
    /// (throws Cancelled). Throws std::invalid_argument on too few samples.
    static LearnedPredictor train(const std::vector<TrainingSample> &samples, const PredictorOptions &options,
                                  const ProgressFn &progress = {});

    /// Mean and spread of the log-ratios for `rows` feature vectors (row-major, kFeatureCount
    /// each): out arrays get `rows` entries each.
    void predictLogRatios(const float *features, size_t rows, std::vector<float> &timeLog, std::vector<float> &memLog,
                          std::vector<float> &timeSpread, std::vector<float> &memSpread) const;

    /// XGBoost threads used by predictLogRatios (default 1). Results do not depend on it, so it
    /// is const: a shared predictor may be tuned by whoever uses it (thread-safe).
    void setThreads(int threads) const;
    /// Batches of fewer rows than this run on one thread whatever setThreads says (default
    /// kParallelPredictRows: libgomp's workers busy-wait after every parallel region, so a small
    /// batch on two threads costs the caller's other threads a core). Const for the same reason.
    void setParallelPredictRows(size_t rows) const;

    /// Whether `features` (one row) lies outside the training runs' envelope: a device (peak
    /// TFLOP/s, capacity) none of them ran on, a model size more than 25% outside theirs, or more
    /// pipeline stages, TP or GPUs than any of them had. Empty when it lies inside. Predictions
    /// outside get spreads of at least kExtrapolationSpread (predictLogRatios does it per row).
    std::string extrapolation(const float *features) const;
    /// extrapolation(features) is not empty, without building the text (per row of a search).
    bool isExtrapolating(const float *features) const;

    /// Corrected prediction for one plan from its features and analytic figures (its iteration
    /// time, the device-used bytes of its peak GPU and its peak utilisation M).
    Prediction predict(const FeatureVector &features, double analyticTimeMs, double analyticPeakBytes,
                       double analyticPeakUtilisation) const;

    /// Serialised form (BSON: manifest + the members' UBJSON models) for the project store.
    std::vector<std::uint8_t> serialize() const;
    /// Throws std::runtime_error naming what is wrong (corrupt bytes, other schema version).
    static LearnedPredictor deserialize(const std::vector<std::uint8_t> &bytes);

    int schemaVersion() const;
    size_t members() const;
    const std::vector<std::string> &trainingRunIds() const;
    const PredictorOptions &options() const;
    /// Out-of-bag RMS error of the log-ratios (time, memory) measured at training.
    double oobTimeRmse() const;
    double oobMemRmse() const;
    /// 64-bit digest of the serialised model: changes whenever the model does (cache context).
    std::uint64_t digest() const;
    /// "learned (xgboost, N runs, schema vX)"
    std::string describe() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

/// Blob kind / key under which `memx train` stores the predictor in a project.
constexpr const char *kPredictorBlobKind = "predictor";
constexpr const char *kPredictorBlobKey = "default";

} // namespace memx
