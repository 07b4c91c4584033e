#include "memx/engine/training.h"

#include "memx/predict/projectpredictor.h"

namespace memx {

TrainOutcome trainProjectPredictor(const Store &store, const TrainOptions &options, const ProgressFn &progress)
{
    // Thousandths: the samples 0..50 (one estimate per run), training 50..500, the folds 500..1000.
    constexpr size_t kTotal = 1000;
    const bool crossValidate = options.folds >= 2;
    reportOrThrow(progress, 0, kTotal);
    TrainOutcome out;
    const std::vector<TrainingSample> samples = samplesFromStore(store, CostOptions {}, &out.notes);
    reportOrThrow(progress, 50, kTotal);
    out.predictor = LearnedPredictor::train(samples, options.predictor,
                                            subProgress(progress, 50, crossValidate ? 450 : 950, kTotal));
    out.metrics
        = {{"trainedOn", out.predictor.trainingRunIds().size()},
           {"featureSchema", out.predictor.schemaVersion()},
           {"oobRmseLogRatio", {{"time", out.predictor.oobTimeRmse()}, {"memory", out.predictor.oobMemRmse()}}}};
    if (crossValidate) {
        // A stored calibration was fitted on every run: the folds refit it on their training runs
        // so the metrics stay out of sample.
        const FoldSampler perFold = loadCalibration(store) ? calibratingSampler(store, CostOptions {}) : FoldSampler {};
        out.crossValidation
            = memx::crossValidate(samples, CvScheme::KFold, options.folds, options.predictor,
                                  subProgress(progress, 500, 500, kTotal), CostOptions {}.memoryUncertainty, perFold);
        out.metrics["kfold"] = toJson(*out.crossValidation);
        out.metrics["kfold"].erase("runs");
    }
    reportOrThrow(progress, kTotal, kTotal);
    return out;
}

MemoryStore trainingSnapshot(const Store &store)
{
    MemoryStore copy;
    StoreTransaction tx(copy);
    for (const std::string &id : store.modelIds())
        copy.putModel(*store.model(id));
    const ProfileSet profiles = store.profiles(); // alive over the loop
    for (const LayerProfile &p : profiles.profiles())
        copy.putProfile(p);
    for (const MeasuredRun &r : store.runs())
        copy.putRun(r);
    if (auto b = store.blob(kCalibrationBlobKind, kCalibrationBlobKey))
        copy.putBlob(kCalibrationBlobKind, kCalibrationBlobKey, *b);
    tx.commit();
    return copy;
}

} // namespace memx
