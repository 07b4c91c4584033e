#pragma once

#include "memx/search/objective.h"
#include "memx/search/search.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace memx {

/// `cluster` with every node group's count multiplied by `factor` (>= 1): the same node mix,
/// `factor` times over. Network overrides are kept (a group-name override covers the new nodes
/// too). The name gets a " (xN)" suffix. Throws std::invalid_argument for factor < 1.
Cluster replicateCluster(const Cluster &cluster, int factor);

/// Replication factor of every target GPU count; a target that is not a positive multiple of
/// cluster.totalGpus() throws std::invalid_argument naming it and the sizes that are possible.
std::vector<int> scaleFactors(const Cluster &cluster, const std::vector<int> &targetGpus);

struct ScaleRequest {
    SearchRequest search; ///< base cluster, model, space, cost, profiles
    std::vector<int> targetGpus; ///< sizes to grow to (the base size itself is always included first)
    ObjectiveWeights objective; ///< the documented default (1, 0.5, 0.5)
    uint64_t maxBases = 500000; ///< narrowToBudget budget per size
    /// Each size searches through the planned search (memx/search/plannedsearch.h): the launch
    /// target from the cluster (or search.space.target when false) and idle node groups.
    bool autoTarget = true;
    int maxIdleGroups = 2;
};

struct ScalePoint {
    int gpus = 0;
    int factor = 1;
    std::string clusterName;
    uint64_t enumerated = 0;
    uint64_t valid = 0;
    double searchMs = 0; ///< enumerate + evaluate + rank
    std::vector<std::string> narrowed; ///< budget narrowing steps
    bool hasPlan = false;
    Plan best;
    std::string summary;
    double timeMs = 0, peakMemory = 0, imbalance = 0;
    double samplesPerSecond = 0; ///< global batch / T
    std::string target; ///< the launch target of the search
    std::string idle; ///< the GPUs the best plan leaves idle ("" for none)
    std::vector<std::string> notes; ///< the planned search's notes (e.g. slow GPUs that make every plan slower)
};

/// Searches the base cluster and each replicated size. Progress is (thousandths done, 1000),
/// reported through each size's search; returning false cancels that search, and the sizes
/// finished before it are returned (a cancelled size is not).
std::vector<ScalePoint> runScale(const ScaleRequest &request, const ProgressFn &progress = {});

nlohmann::json toJson(const std::vector<ScalePoint> &points);

/// One series of a line chart.
struct ChartSeries {
    std::string label;
    std::vector<double> x, y;
};

/// A standalone SVG 1.1 line chart (axes with ticks, one polyline + markers per series, legend).
/// Text is XML-escaped. Throws std::invalid_argument when a series' x and y differ in length.
std::string svgLineChart(const std::string &title, const std::string &xLabel, const std::string &yLabel,
                         const std::vector<ChartSeries> &series);

} // namespace memx
