#pragma once

#include "memx/cluster/cluster.h"
#include "memx/profile/layerprofile.h"
#include "memx/profiling/minimalset.h"

#include <string>
#include <utility>
#include <vector>

namespace memx {

/// Status of one (device, TP, micro-batch) cell of a model's profile coverage.
enum class CoverageStatus : char {
    Measured = 'M', ///< a measured profile
    Simulated = 'S', ///< a virtual-testbed profile
    Interpolated = 'I', ///< a stored interpolated profile, or interpolable from measured/simulated ones
    Missing = '-', ///< none: the search uses the analytic cost model there
    Unused = ' ', ///< a cell the search space does not use and no stored profile covers (with CoverageQuery::needed)
};
/// "measured", "simulated", "interpolated", "missing", "unused".
const char *toString(CoverageStatus status);

/// Coverage of one device type: a TP x micro-batch grid.
struct DeviceCoverage {
    std::string device;
    std::vector<int> tps; ///< the grid's rows, ascending
    std::vector<int> microBatches; ///< the grid's columns, ascending
    std::vector<std::vector<CoverageStatus>> cells; ///< cells[t][b]
    int count(CoverageStatus status) const;
};

/// Which cells to show.
struct CoverageQuery {
    std::string model; ///< model id the profiles must have
    int seqLength = 0; ///< sequence length the profiles must have
    /// When set: only the cluster's device types (each with TP up to its largest GPUs per node);
    /// else every device type with a profile of (model, seqLength).
    const Cluster *cluster = nullptr;
    /// When set (the kernels a minimal-set plan found the space uses, ProfilingPlan::needed):
    /// exactly the TP degrees and micro-batch sizes used per device, cells not used Unused.
    const std::vector<KernelPoint> *needed = nullptr;
};

/// The one coverage rule of `memx profile coverage` and the workbench's Profiles dock.
///
/// Grid: with `needed`, its kernels; else per device the search's default TP degrees and
/// micro-batch sizes (SearchSpaceOptions) joined with every TP degree and micro-batch size profiled
/// for the model, TP capped at the device's largest GPUs per node when a cluster is given.
/// Status of a cell, from the profiles of (device, model, seqLength): the best stored profile of
/// that TP and micro-batch (measured over simulated over interpolated); else Interpolated when
/// `memx profile augment` could add it from the measured and simulated profiles (along the
/// micro-batch at that TP, or along TP at that micro-batch from at least two TP degrees); else
/// Missing. Devices in first-use order of the cluster's groups, else sorted.
std::vector<DeviceCoverage> profileCoverage(const ProfileSet &profiles, const CoverageQuery &query);

/// The (model id, sequence length) pairs `profiles` holds, sorted: what `memx profile coverage`
/// reports on without --model.
std::vector<std::pair<std::string, int>> profiledModels(const ProfileSet &profiles);

} // namespace memx
