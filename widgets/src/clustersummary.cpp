#include "memx/ui/clustersummary.h"

#include <QStringList>

#include <map>

namespace memx::ui {

QString clusterSummaryLine(const memx::Cluster &cluster)
{
    std::map<std::string, int> vendors;
    for (const auto &g : cluster.groups)
        vendors[cluster.deviceOf(g).vendor] += g.count * g.gpusPerNode;
    QStringList parts;
    for (const auto &[vendor, n] : vendors)
        parts << QStringLiteral("%1 %2").arg(n).arg(QString::fromStdString(vendor));
    return QStringLiteral("%1 GPUs (%2) · %3 GiB · %4 PFLOP/s BF16")
        .arg(cluster.totalGpus())
        .arg(parts.join(QStringLiteral(", ")))
        .arg(cluster.totalMemoryGiB(), 0, 'f', 0)
        .arg(cluster.peakPflops(true), 0, 'f', 2);
}

} // namespace memx::ui
