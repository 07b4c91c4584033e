#pragma once

#include "memx/cost/costmodel.h"
#include "memx/profile/measuredrun.h"
#include "memx/util/progress.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace memx {

class ProfileSet;

/// Figures fitted to the measured runs of one device type, with the error before and after.
struct DeviceCalibration {
    std::string device; ///< catalogue id
    int timeRuns = 0, memoryRuns = 0;
    std::optional<double> gemmEfficiency; ///< fraction of peak of large GEMMs (GpuSpec::measuredComputeEfficiency)
    std::optional<double> contextGiB, communicatorGiB, reserveFraction; ///< GpuSpec::runtimeMemory
    double timeMapeBeforePct = 0, timeMapeAfterPct = 0;
    double memMapeBeforePct = 0, memMapeAfterPct = 0;
};

/// What `memx profile calibrate` fits from a project's measured runs: per device type the GEMM
/// efficiency (time) and the device-used overheads (memory: context, communicator buffers per
/// group, allocator reserve, by linear least squares over allocator peak and group count), and one
/// host cost per framework op shared by the runs (the framework, not the GPU, decides it).
struct Calibration {
    std::vector<DeviceCalibration> devices;
    std::optional<double> hostOpMicroseconds;
    int runs = 0;
    /// Out-of-sample check: each fold's runs predicted with the figures fitted on the others.
    int folds = 0;
    double timeMapeDefaultsPct = 0, timeMapeCalibratedPct = 0, timeMapeOutOfSamplePct = 0;
    double memMapeDefaultsPct = 0, memMapeCalibratedPct = 0, memMapeOutOfSamplePct = 0;
};

/// Fits the calibration to `runs` (out-of-memory runs and runs whose model `modelOf` cannot
/// resolve are skipped). Time, from the runs whose compute is (partly) modelled rather than
/// profiled: the host op cost and per device the GEMM efficiency minimise the mean
/// |log(predicted / measured)| (coordinate search, on at most 240 runs spread over the set); memory: per device, least
/// squares of measured - allocator peak = reserve x allocator peak + context + groups x communicator (Eigen), figures
/// kept >= 0. `folds` >= 2 also runs a k-fold out-of-sample check (runs dealt by index). `progress(done, total)`; false
/// cancels (throws Cancelled).
Calibration calibrate(const std::vector<MeasuredRun> &runs,
                      const std::function<std::optional<Model>(const std::string &)> &modelOf,
                      const ProfileSet *profiles, const CostOptions &base, int folds = 5,
                      const ProgressFn &progress = {});

/// Applies the calibration: the devices' measuredComputeEfficiency and runtimeMemory in
/// `cluster`, the host op cost in `options`. Devices without a figure keep theirs.
void applyCalibration(const Calibration &c, Cluster &cluster, CostOptions &options);

nlohmann::json toJson(const Calibration &c);
/// Throws std::runtime_error naming the field on a malformed document.
Calibration calibrationFromJson(const nlohmann::json &j);

} // namespace memx
