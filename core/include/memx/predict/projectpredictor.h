#pragma once

#include "memx/cost/calibration.h"
#include "memx/predict/crossvalidation.h"
#include "memx/predict/learnedpredictor.h"
#include "memx/store/store.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace memx {

/// Every measured run of the project as a sample: the run's model from the project (else the
/// built-in preset of that id), the project's per-layer profiles and its calibration (when
/// `memx profile calibrate` stored one) feeding the analytic estimate.
/// A run's model by id: the project's, else the built-in preset of that id (nullopt: neither).
/// Refers to `store`: use it while the store is open.
std::function<std::optional<Model>(const std::string &)> projectModels(const Store &store);

/// `useStoredCalibration` false: the built-in figures (and the cluster files'), whatever is stored.
std::vector<TrainingSample> samplesFromStore(const Store &store, const CostOptions &cost,
                                             std::vector<std::string> *notes = nullptr,
                                             bool useStoredCalibration = true);

/// crossValidate's per-fold calibration for the project: each call fits `calibrate` (the fit of
/// `memx profile calibrate`, no inner folds) on the runs with the given ids only, from `cost` and
/// the cluster files' figures (never the stored calibration), and rebuilds every run's sample with
/// it. The sampler refers to `store`: use it while the store is open.
FoldSampler calibratingSampler(const Store &store, const CostOptions &cost);

/// Stores the predictor and its training metrics (JSON) in one transaction, replacing any
/// previous one. The prediction caches keyed by the old model become stale (their context hash
/// includes the model digest) and are dropped.
void savePredictor(Store &store, const LearnedPredictor &predictor, const nlohmann::json &metrics);
/// The project's predictor, or nullopt when none is stored. Throws std::runtime_error naming
/// the project blob when it cannot be read (corrupt, other feature schema).
std::optional<LearnedPredictor> loadPredictor(const Store &store);
/// The metrics stored with the predictor (null when none).
nlohmann::json predictorMetrics(const Store &store);

/// Blob kind / key of the cost-model calibration in a project.
constexpr const char *kCalibrationBlobKind = "calibration";
constexpr const char *kCalibrationBlobKey = "cost";

/// Stores the cost-model calibration (replacing any previous one) and drops the caches whose
/// figures it changes. A predictor trained before it should be retrained (`memx train`).
void saveCalibration(Store &store, const Calibration &calibration);
/// The project's calibration, or nullopt. Throws std::runtime_error naming the blob when corrupt.
std::optional<Calibration> loadCalibration(const Store &store);
/// Applies the project's calibration (if any) to `cluster` and `cost`: what predict, search and
/// compare do with --project. Returns whether there was one.
bool applyProjectCalibration(const Store &store, Cluster &cluster, CostOptions &cost);

} // namespace memx
