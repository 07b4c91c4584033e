#pragma once

#include "memx/cluster/cluster.h"

#include <QString>

namespace memx::ui {

/// One-line, human-readable summary of a cluster: GPUs per vendor, total memory, peak compute.
QString clusterSummaryLine(const memx::Cluster &cluster);

} // namespace memx::ui
