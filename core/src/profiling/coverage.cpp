#include "memx/profiling/coverage.h"

#include "memx/profiling/augment.h"
#include "memx/search/search.h"

#include <algorithm>
#include <map>
#include <set>

namespace memx {

const char *toString(CoverageStatus status)
{
    switch (status) {
    case CoverageStatus::Measured:
        return "measured";
    case CoverageStatus::Simulated:
        return "simulated";
    case CoverageStatus::Interpolated:
        return "interpolated";
    case CoverageStatus::Missing:
        return "missing";
    case CoverageStatus::Unused:
        return "unused";
    }
    return "?";
}

int DeviceCoverage::count(CoverageStatus status) const
{
    int n = 0;
    for (const auto &row : cells)
        n += static_cast<int>(std::count(row.begin(), row.end(), status));
    return n;
}

namespace {

void addUnique(std::vector<int> &v, int x)
{
    if (std::find(v.begin(), v.end(), x) == v.end())
        v.push_back(x);
}

int rankOf(CoverageStatus s)
{
    switch (s) {
    case CoverageStatus::Measured:
        return 3;
    case CoverageStatus::Simulated:
        return 2;
    case CoverageStatus::Interpolated:
        return 1;
    default:
        return 0;
    }
}

CoverageStatus statusOfOrigin(ProfileOrigin origin)
{
    return origin == ProfileOrigin::Measured ? CoverageStatus::Measured
        : origin == ProfileOrigin::Simulated ? CoverageStatus::Simulated
                                             : CoverageStatus::Interpolated;
}

/// The status of (tp, microBatch) from one device's profiles of the model and sequence length.
/// A stored profile's status first; a cell the space does not use (`inSpace` false) is Unused
/// rather than interpolable.
CoverageStatus cellStatus(const std::vector<LayerProfile> &mine, int tp, int microBatch, bool inSpace)
{
    CoverageStatus best = CoverageStatus::Missing;
    std::vector<LayerProfile> sameTp, sameMbs; // interpolation sources: measured and simulated
    for (const LayerProfile &p : mine) {
        if (p.key.tp == tp && p.key.microBatch == microBatch && rankOf(statusOfOrigin(p.origin)) > rankOf(best))
            best = statusOfOrigin(p.origin);
        if (p.origin == ProfileOrigin::Interpolated)
            continue;
        if (p.key.tp == tp)
            sameTp.push_back(p);
        if (p.key.microBatch == microBatch)
            sameMbs.push_back(p);
    }
    if (best != CoverageStatus::Missing)
        return best;
    if (!inSpace)
        return CoverageStatus::Unused;
    if ((!sameTp.empty() && interpolateMicroBatch(sameTp, microBatch))
        || (sameMbs.size() >= 2 && interpolateTensorParallel(sameMbs, tp)))
        return CoverageStatus::Interpolated;
    return CoverageStatus::Missing;
}

/// The grid's devices (first-use order of the cluster's groups, else sorted) with their TP cap.
std::vector<std::pair<std::string, int>>
coverageDevices(const std::map<std::string, std::vector<LayerProfile>> &byDevice, const Cluster *cluster)
{
    std::vector<std::pair<std::string, int>> out;
    if (!cluster) {
        for (const auto &[device, ps] : byDevice)
            out.push_back({device, 1 << 20});
        return out;
    }
    for (const NodeGroup &g : cluster->groups) {
        const std::string device = cluster->deviceOf(g).id;
        auto it = std::find_if(out.begin(), out.end(), [&](const auto &d) { return d.first == device; });
        if (it == out.end())
            out.push_back({device, g.gpusPerNode});
        else
            it->second = std::max(it->second, g.gpusPerNode);
    }
    return out;
}

} // namespace

std::vector<DeviceCoverage> profileCoverage(const ProfileSet &profiles, const CoverageQuery &query)
{
    std::map<std::string, std::vector<LayerProfile>> byDevice;
    for (const LayerProfile &p : profiles.profiles())
        if (p.key.model == query.model && p.key.seqLength == query.seqLength)
            byDevice[p.key.gpu].push_back(p);
    std::set<KernelPoint> used;
    if (query.needed)
        used.insert(query.needed->begin(), query.needed->end());
    const SearchSpaceOptions defaults;
    std::vector<DeviceCoverage> out;
    for (const auto &[device, maxTp] : coverageDevices(byDevice, query.cluster)) {
        DeviceCoverage c;
        c.device = device;
        const std::vector<LayerProfile> &mine = byDevice[device];
        if (query.needed) {
            for (const KernelPoint &k : *query.needed)
                if (k.device == device) {
                    addUnique(c.tps, k.tp);
                    addUnique(c.microBatches, k.microBatch);
                }
        } else {
            for (int tp : defaults.tensorParallel)
                if (tp <= maxTp)
                    addUnique(c.tps, tp);
            c.microBatches = defaults.microBatches;
            for (const LayerProfile &p : mine) {
                if (p.key.tp <= maxTp)
                    addUnique(c.tps, p.key.tp);
                addUnique(c.microBatches, p.key.microBatch);
            }
        }
        std::sort(c.tps.begin(), c.tps.end());
        std::sort(c.microBatches.begin(), c.microBatches.end());
        for (int tp : c.tps) {
            std::vector<CoverageStatus> row;
            for (int b : c.microBatches) {
                row.push_back(cellStatus(mine, tp, b, !query.needed || used.count({device, tp, b})));
            }
            c.cells.push_back(std::move(row));
        }
        out.push_back(std::move(c));
    }
    return out;
}

std::vector<std::pair<std::string, int>> profiledModels(const ProfileSet &profiles)
{
    std::set<std::pair<std::string, int>> models;
    for (const LayerProfile &p : profiles.profiles())
        models.insert({p.key.model, p.key.seqLength});
    return {models.begin(), models.end()};
}

} // namespace memx
