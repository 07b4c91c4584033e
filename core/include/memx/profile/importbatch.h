#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/profile/layerprofile.h"
#include "memx/profile/measuredrun.h"
#include "memx/profile/networkmeasurement.h"
#include "memx/util/diagnostic.h"

#include <vector>

namespace memx {

/// Everything one import produced, before it is written to a Store (in one transaction, see
/// writeImport in memx/store/store.h). Importers never write half a batch.
struct ImportBatch {
    std::vector<Model> models;
    std::vector<Cluster> clusters;
    std::vector<LayerProfile> profiles;
    std::vector<MeasuredRun> runs;
    std::vector<NetworkMeasurement> network;
    /// Problems that did not stop the import (e.g. a repaired typo), with file and pointer.
    std::vector<Diagnostic> warnings;

    size_t itemCount() const
    {
        return models.size() + clusters.size() + profiles.size() + runs.size() + network.size();
    }
    /// Appends another batch.
    void append(ImportBatch other);
};

} // namespace memx
