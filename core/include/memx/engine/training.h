#pragma once

#include "memx/predict/crossvalidation.h"
#include "memx/predict/learnedpredictor.h"
#include "memx/store/memorystore.h"
#include "memx/store/store.h"
#include "memx/util/progress.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace memx {

struct TrainOptions {
    PredictorOptions predictor;
    int folds = 5; ///< k-fold cross-validation reported with the model (0 or 1: none)
};

/// A trained predictor with what `memx train` reports and stores beside it.
struct TrainOutcome {
    LearnedPredictor predictor;
    nlohmann::json metrics; ///< stored with the predictor (savePredictor): runs, schema, OOB error, k-fold
    std::optional<EvaluationReport> crossValidation; ///< when options.folds >= 2
    std::vector<std::string> notes; ///< runs skipped, calibration used (samplesFromStore)
};

/// Trains the learned predictor on every measured run of `store` (samplesFromStore: the project's
/// profiles and calibration feed the analytic estimate) and cross-validates it: what `memx train`
/// and the workbench's "Train predictor" run. Nothing is written: store it with savePredictor.
/// Progress in thousandths (building the samples, the boosting rounds of training, then the folds);
/// returning false throws Cancelled. Throws std::invalid_argument with too few runs (training's
/// or cross-validation's message).
TrainOutcome trainProjectPredictor(const Store &store, const TrainOptions &options, const ProgressFn &progress = {});

/// What trainProjectPredictor reads of a project, copied into memory (models, profiles, runs and
/// the calibration; none of the caches), for training on a worker thread.
MemoryStore trainingSnapshot(const Store &store);

} // namespace memx
