#include "memx/predict/xgboost.h"

#include <xgboost/c_api.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

namespace memx {

namespace {

void check(int rc, const char *call)
{
    if (rc != 0)
        throw XgbError(std::string("XGBoost ") + call + " failed: " + XGBGetLastError());
}

} // namespace

XgbMatrix::XgbMatrix(const std::vector<float> &values, size_t rows, size_t cols)
    : mRows(rows)
    , mCols(cols)
{
    if (values.size() != rows * cols)
        throw XgbError("XgbMatrix: expected " + std::to_string(rows * cols) + " values, found "
                       + std::to_string(values.size()));
    DMatrixHandle h = nullptr;
    check(XGDMatrixCreateFromMat(values.data(), rows, cols, std::numeric_limits<float>::quiet_NaN(), &h),
          "XGDMatrixCreateFromMat");
    mHandle = h;
}

XgbMatrix::~XgbMatrix()
{
    if (mHandle)
        XGDMatrixFree(mHandle);
}

XgbMatrix::XgbMatrix(XgbMatrix &&other) noexcept
    : mHandle(std::exchange(other.mHandle, nullptr))
    , mRows(other.mRows)
    , mCols(other.mCols)
{
}

XgbMatrix &XgbMatrix::operator=(XgbMatrix &&other) noexcept
{
    if (this != &other) {
        if (mHandle)
            XGDMatrixFree(mHandle);
        mHandle = std::exchange(other.mHandle, nullptr);
        mRows = other.mRows;
        mCols = other.mCols;
    }
    return *this;
}

void XgbMatrix::setLabels(const std::vector<float> &labels, size_t targets)
{
    if (targets == 0 || labels.size() != mRows * targets)
        throw XgbError("XgbMatrix::setLabels: expected " + std::to_string(mRows * targets) + " labels, found "
                       + std::to_string(labels.size()));
    check(XGDMatrixSetFloatInfo(mHandle, "label", labels.data(), labels.size()), "XGDMatrixSetFloatInfo(label)");
}

void XgbMatrix::setWeights(const std::vector<float> &weights)
{
    if (weights.size() != mRows)
        throw XgbError("XgbMatrix::setWeights: expected " + std::to_string(mRows) + " weights, found "
                       + std::to_string(weights.size()));
    check(XGDMatrixSetFloatInfo(mHandle, "weight", weights.data(), weights.size()), "XGDMatrixSetFloatInfo(weight)");
}

XgbBooster::XgbBooster()
{
    BoosterHandle h = nullptr;
    check(XGBoosterCreate(nullptr, 0, &h), "XGBoosterCreate");
    mHandle = h;
}

XgbBooster::~XgbBooster()
{
    if (mHandle)
        XGBoosterFree(mHandle);
}

XgbBooster::XgbBooster(XgbBooster &&other) noexcept
    : mHandle(std::exchange(other.mHandle, nullptr))
    , mOutputs(other.mOutputs)
{
}

XgbBooster &XgbBooster::operator=(XgbBooster &&other) noexcept
{
    if (this != &other) {
        if (mHandle)
            XGBoosterFree(mHandle);
        mHandle = std::exchange(other.mHandle, nullptr);
        mOutputs = other.mOutputs;
    }
    return *this;
}

void XgbBooster::train(const XgbMatrix &train, const std::map<std::string, std::string> &params, int rounds,
                       const ProgressFn &progress)
{
    // A fresh booster bound to the training matrix (the C API caches matrices per booster).
    BoosterHandle h = nullptr;
    DMatrixHandle mats[1] = {train.handle()};
    check(XGBoosterCreate(mats, 1, &h), "XGBoosterCreate");
    XgbBooster fresh;
    XGBoosterFree(fresh.mHandle);
    fresh.mHandle = h;
    for (const auto &[k, v] : params)
        check(XGBoosterSetParam(h, k.c_str(), v.c_str()), ("XGBoosterSetParam(" + k + ")").c_str());
    for (int i = 0; i < rounds; ++i) {
        check(XGBoosterUpdateOneIter(h, i, train.handle()), "XGBoosterUpdateOneIter");
        if (progress && !progress(static_cast<size_t>(i + 1), static_cast<size_t>(rounds)))
            break;
    }
    auto it = params.find("num_target");
    fresh.mOutputs = it == params.end() ? 1 : static_cast<size_t>(std::stoul(it->second));
    *this = std::move(fresh);
}

std::vector<float> XgbBooster::predict(const XgbMatrix &data) const
{
    const bst_ulong *shape = nullptr;
    bst_ulong dims = 0;
    const float *result = nullptr;
    const char *config
        = R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": true})";
    check(XGBoosterPredictFromDMatrix(mHandle, data.handle(), config, &shape, &dims, &result),
          "XGBoosterPredictFromDMatrix");
    size_t total = 1;
    for (bst_ulong i = 0; i < dims; ++i)
        total *= shape[i];
    mOutputs = dims >= 2 ? static_cast<size_t>(shape[1]) : 1;
    // Copy before the next API call reuses XGBoost's buffer.
    return std::vector<float>(result, result + total);
}

void XgbBooster::setParam(const std::string &name, const std::string &value)
{
    check(XGBoosterSetParam(mHandle, name.c_str(), value.c_str()), ("XGBoosterSetParam(" + name + ")").c_str());
}

std::vector<std::uint8_t> XgbBooster::save() const
{
    bst_ulong len = 0;
    const char *data = nullptr;
    check(XGBoosterSaveModelToBuffer(mHandle, R"({"format": "ubj"})", &len, &data), "XGBoosterSaveModelToBuffer");
    return std::vector<std::uint8_t>(reinterpret_cast<const std::uint8_t *>(data),
                                     reinterpret_cast<const std::uint8_t *>(data) + len);
}

std::vector<std::pair<int, float>> XgbBooster::splits() const
{
    bst_ulong len = 0;
    const char *data = nullptr;
    check(XGBoosterSaveModelToBuffer(mHandle, R"({"format": "json"})", &len, &data), "XGBoosterSaveModelToBuffer");
    const nlohmann::json model = nlohmann::json::parse(std::string(data, len), nullptr, false);
    const nlohmann::json::json_pointer trees("/learner/gradient_booster/model/trees");
    if (model.is_discarded() || !model.contains(trees) || !model.at(trees).is_array())
        throw XgbError("XgbBooster::splits: the model has no /learner/gradient_booster/model/trees");
    std::vector<std::pair<int, float>> out;
    for (const nlohmann::json &t : model.at(trees)) {
        if (t.contains("categories_nodes") && !t.at("categories_nodes").empty())
            throw XgbError("XgbBooster::splits: categorical splits are not supported");
        const auto &left = t.at("left_children");
        const auto &index = t.at("split_indices");
        const auto &cond = t.at("split_conditions");
        for (size_t i = 0; i < left.size(); ++i)
            if (left[i].get<int>() != -1)
                out.emplace_back(index[i].get<int>(), cond[i].get<float>());
    }
    return out;
}

void XgbBooster::load(const std::vector<std::uint8_t> &bytes)
{
    if (bytes.empty())
        throw XgbError("XGBoost model load failed: the model bytes are empty");
    XgbBooster fresh;
    check(XGBoosterLoadModelFromBuffer(fresh.mHandle, bytes.data(), bytes.size()), "XGBoosterLoadModelFromBuffer");
    // The learner's configuration records how many targets the model predicts.
    bst_ulong len = 0;
    const char *cfg = nullptr;
    check(XGBoosterSaveJsonConfig(fresh.mHandle, &len, &cfg), "XGBoosterSaveJsonConfig");
    size_t outputs = 1;
    const nlohmann::json config = nlohmann::json::parse(std::string(cfg, len), nullptr, false);
    const nlohmann::json::json_pointer ptr("/learner/learner_model_param/num_target");
    if (config.contains(ptr) && config.at(ptr).is_string())
        outputs = static_cast<size_t>(std::max(1, std::atoi(config.at(ptr).get<std::string>().c_str())));
    fresh.mOutputs = outputs;
    *this = std::move(fresh);
}

} // namespace memx
