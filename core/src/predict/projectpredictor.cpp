#include "memx/predict/projectpredictor.h"

#include "memx/io/formats.h"
#include "memx/predict/predictioncache.h"
#include "memx/predict/searchresultcache.h"

#include <memory>
#include <stdexcept>

namespace memx {

std::function<std::optional<Model>(const std::string &)> projectModels(const Store &store)
{
    return [&store](const std::string &id) -> std::optional<Model> {
        if (auto m = store.model(id))
            return m;
        for (const Model &m : builtinModels())
            if (m.id == id)
                return m;
        return std::nullopt;
    };
}

std::vector<TrainingSample> samplesFromStore(const Store &store, const CostOptions &baseCost,
                                             std::vector<std::string> *notes, bool useStoredCalibration)
{
    const ProfileSet profiles = store.profiles();
    std::vector<MeasuredRun> runs = store.runs();
    CostOptions cost = baseCost;
    if (const std::optional<Calibration> cal = useStoredCalibration ? loadCalibration(store) : std::nullopt) {
        for (MeasuredRun &r : runs)
            applyCalibration(*cal, r.cluster, cost);
        if (notes)
            notes->push_back("the analytic estimates use the project's calibration (memx profile calibrate)");
    }
    return buildSamples(runs, projectModels(store), profiles.empty() ? nullptr : &profiles, cost, notes);
}

FoldSampler calibratingSampler(const Store &store, const CostOptions &cost)
{
    auto profiles = std::make_shared<const ProfileSet>(store.profiles());
    auto runs = std::make_shared<const std::vector<MeasuredRun>>(store.runs());
    return [&store, profiles, runs, cost](const std::set<std::string> &trainIds) {
        const auto modelOf = projectModels(store);
        const ProfileSet *p = profiles->empty() ? nullptr : profiles.get();
        std::vector<MeasuredRun> train;
        for (const MeasuredRun &r : *runs)
            if (trainIds.count(r.id))
                train.push_back(r);
        const Calibration cal = calibrate(train, modelOf, p, cost, 0);
        CostOptions calibrated = cost;
        std::vector<MeasuredRun> every = *runs;
        for (MeasuredRun &r : every)
            applyCalibration(cal, r.cluster, calibrated);
        return buildSamples(every, modelOf, p, calibrated);
    };
}

namespace {
constexpr const char *kCalibrationKind = kCalibrationBlobKind;
constexpr const char *kCalibrationKey = kCalibrationBlobKey;
} // namespace

void saveCalibration(Store &store, const Calibration &calibration)
{
    const std::string text = toJson(calibration).dump();
    StoreTransaction tx(store);
    store.putBlob(kCalibrationKind, kCalibrationKey, std::vector<std::uint8_t>(text.begin(), text.end()));
    for (const std::string &key : store.blobKeys(kPredictionCacheBlobKind))
        store.removeBlob(kPredictionCacheBlobKind, key);
    clearSearchResults(store);
    tx.commit();
}

std::optional<Calibration> loadCalibration(const Store &store)
{
    const auto bytes = store.blob(kCalibrationKind, kCalibrationKey);
    if (!bytes)
        return std::nullopt;
    const nlohmann::json j = nlohmann::json::parse(bytes->begin(), bytes->end(), nullptr, false);
    try {
        return calibrationFromJson(j);
    } catch (const std::exception &e) {
        throw std::runtime_error(std::string("blob ") + kCalibrationKind + "/" + kCalibrationKey + ": " + e.what());
    }
}

bool applyProjectCalibration(const Store &store, Cluster &cluster, CostOptions &cost)
{
    const std::optional<Calibration> cal = loadCalibration(store);
    if (cal)
        applyCalibration(*cal, cluster, cost);
    return cal.has_value();
}

void savePredictor(Store &store, const LearnedPredictor &predictor, const nlohmann::json &metrics)
{
    const std::string text = metrics.dump();
    StoreTransaction tx(store);
    store.putBlob(kPredictorBlobKind, kPredictorBlobKey, predictor.serialize());
    store.putBlob(kPredictorBlobKind, std::string(kPredictorBlobKey) + ".metrics",
                  std::vector<std::uint8_t>(text.begin(), text.end()));
    for (const std::string &key : store.blobKeys(kPredictionCacheBlobKind))
        store.removeBlob(kPredictionCacheBlobKind, key);
    clearSearchResults(store); // their keys hold the old predictor's digest: never hit again
    tx.commit();
}

std::optional<LearnedPredictor> loadPredictor(const Store &store)
{
    const auto bytes = store.blob(kPredictorBlobKind, kPredictorBlobKey);
    if (!bytes)
        return std::nullopt;
    try {
        return LearnedPredictor::deserialize(*bytes);
    } catch (const std::exception &e) {
        throw std::runtime_error(std::string("blob ") + kPredictorBlobKind + "/" + kPredictorBlobKey + ": " + e.what());
    }
}

nlohmann::json predictorMetrics(const Store &store)
{
    const auto bytes = store.blob(kPredictorBlobKind, std::string(kPredictorBlobKey) + ".metrics");
    if (!bytes)
        return nullptr;
    return nlohmann::json::parse(bytes->begin(), bytes->end(), nullptr, false);
}

} // namespace memx
