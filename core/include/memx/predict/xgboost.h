#pragma once

#include "memx/util/progress.h"

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace memx {

/// An XGBoost C API call failed; what() holds the call and XGBGetLastError()'s text.
class XgbError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Owns an XGBoost DMatrix built from a dense row-major float matrix (RAII over DMatrixHandle).
/// Move-only.
class XgbMatrix {
public:
    /// `values` has rows x cols floats, row-major. NaN marks a missing value.
    XgbMatrix(const std::vector<float> &values, size_t rows, size_t cols);
    ~XgbMatrix();
    XgbMatrix(XgbMatrix &&other) noexcept;
    XgbMatrix &operator=(XgbMatrix &&other) noexcept;
    XgbMatrix(const XgbMatrix &) = delete;
    XgbMatrix &operator=(const XgbMatrix &) = delete;

    /// Labels: rows x targets floats, row-major (targets > 1 trains a multi-output model).
    void setLabels(const std::vector<float> &labels, size_t targets);
    /// Per-row weights.
    void setWeights(const std::vector<float> &weights);

    size_t rows() const { return mRows; }
    size_t cols() const { return mCols; }
    void *handle() const { return mHandle; }

private:
    void *mHandle = nullptr;
    size_t mRows = 0;
    size_t mCols = 0;
};

/// Owns an XGBoost booster (RAII over BoosterHandle). Move-only. Not thread-safe: use one
/// booster per thread, or serialise calls.
class XgbBooster {
public:
    XgbBooster();
    ~XgbBooster();
    XgbBooster(XgbBooster &&other) noexcept;
    XgbBooster &operator=(XgbBooster &&other) noexcept;
    XgbBooster(const XgbBooster &) = delete;
    XgbBooster &operator=(const XgbBooster &) = delete;

    /// Trains a fresh model for `rounds` boosting rounds on `train`. `params` are XGBoost
    /// parameters (e.g. {"tree_method","hist"}, {"num_target","2"}, {"max_depth","6"}).
    /// `progress(done, total)` returning false stops early (the model keeps the rounds done).
    void train(const XgbMatrix &train, const std::map<std::string, std::string> &params, int rounds,
               const ProgressFn &progress = {});

    /// Predictions for every row: rows x outputs floats, row-major, copied out of XGBoost's buffer.
    std::vector<float> predict(const XgbMatrix &data) const;
    /// Sets one XGBoost parameter on the trained model (e.g. {"nthread", "2"} for prediction).
    void setParam(const std::string &name, const std::string &value);
    /// Number of outputs per row of the last prediction / training (1 or num_target).
    size_t outputs() const { return mOutputs; }

    /// Every numeric split of every tree as (feature index, threshold): a row goes left at a node
    /// when its value is below the threshold (or missing and the node's default is left). Throws
    /// XgbError when the model has categorical splits or is not a tree booster.
    std::vector<std::pair<int, float>> splits() const;

    /// The model as XGBoost's UBJSON bytes (portable across platforms and versions >= 1.6).
    std::vector<std::uint8_t> save() const;
    /// Replaces the model with one saved by save(). Throws XgbError on corrupt bytes.
    void load(const std::vector<std::uint8_t> &bytes);

private:
    void *mHandle = nullptr;
    mutable size_t mOutputs = 1;
};

} // namespace memx
