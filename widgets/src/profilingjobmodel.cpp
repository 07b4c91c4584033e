#include "memx/ui/profilingjobmodel.h"

#include <QLocale>

#include <algorithm>

namespace memx::ui {

void ProfilingJobModel::setPlan(const memx::ProfilingPlan &plan, const memx::Cluster &cluster)
{
    beginResetModel();
    mPlan = plan;
    mCluster = cluster;
    mHasPlan = true;
    endResetModel();
}

void ProfilingJobModel::clear()
{
    beginResetModel();
    mPlan = {};
    mCluster = {};
    mHasPlan = false;
    endResetModel();
}

std::vector<std::pair<std::string, int>> ProfilingJobModel::perLayerJobsPerDevice() const
{
    std::vector<std::pair<std::string, int>> out;
    for (const memx::ProfileJob &j : mPlan.jobs) {
        if (j.kind != memx::ProfileJobKind::PerLayer)
            continue;
        auto it = std::find_if(out.begin(), out.end(), [&](const auto &p) { return p.first == j.device; });
        if (it == out.end())
            out.push_back({j.device, 1});
        else
            ++it->second;
    }
    return out;
}

int ProfilingJobModel::endToEndJobCount() const
{
    return int(std::count_if(mPlan.jobs.begin(), mPlan.jobs.end(),
                             [](const memx::ProfileJob &j) { return j.kind == memx::ProfileJobKind::EndToEnd; }));
}

int ProfilingJobModel::memoryJobCount() const
{
    return int(std::count_if(mPlan.jobs.begin(), mPlan.jobs.end(),
                             [](const memx::ProfileJob &j) { return j.kind == memx::ProfileJobKind::Memory; }));
}

QString ProfilingJobModel::summaryText() const
{
    if (!mHasPlan)
        return {};
    const QLocale c(QLocale::English);
    QStringList perDevice;
    for (const auto &[device, n] : perLayerJobsPerDevice())
        perDevice << QStringLiteral("%1 %2").arg(QString::fromStdString(device)).arg(n);
    const int e2e = endToEndJobCount(), memory = memoryJobCount();
    const double ratio = mPlan.profilingGpuHours > 0 ? mPlan.exhaustiveGpuHours / mPlan.profilingGpuHours : 0.0;
    return tr("%1 jobs: %2 per-layer (%3) + %4 memory calibration + %5 end-to-end. Profiling %6 GPU-hours (%7 h "
              "wall). Exhaustive: %8 configurations, %9 days, %10 GPU-hours (%11x more).")
        .arg(mPlan.jobs.size())
        .arg(mPlan.jobs.size() - size_t(e2e) - size_t(memory))
        .arg(perDevice.join(QStringLiteral(", ")))
        .arg(memory)
        .arg(e2e)
        .arg(mPlan.profilingGpuHours, 0, 'f', 1)
        .arg(mPlan.profilingWallHours, 0, 'f', 1)
        .arg(c.toString(qulonglong(mPlan.configurations)))
        .arg(c.toString(mPlan.exhaustiveWallDays, 'f', 0))
        .arg(c.toString(mPlan.exhaustiveGpuHours, 'f', 0))
        .arg(c.toString(ratio, 'f', 0));
}

int ProfilingJobModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(mPlan.jobs.size());
}

int ProfilingJobModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ProfilingJobModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount)
        return {};
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != SortRole && role != Qt::TextAlignmentRole)
        return {};
    const memx::ProfileJob &j = mPlan.jobs[size_t(index.row())];
    const bool perLayer = j.kind == memx::ProfileJobKind::PerLayer;
    const int column = index.column();
    if (role == Qt::TextAlignmentRole) {
        const bool numeric
            = column == TpColumn || column == MicroBatchColumn || column == GpusColumn || column == SecondsColumn;
        return numeric ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
    }
    switch (column) {
    case IdColumn:
        return QString::fromStdString(j.id);
    case KindColumn:
        return QString::fromLatin1(memx::toString(j.kind));
    case DeviceColumn:
        if (perLayer || j.kind == memx::ProfileJobKind::Memory)
            return QString::fromStdString(j.device);
        return role == SortRole ? QString() : tr("cluster");
    case TpColumn:
        return perLayer ? QVariant(j.tp) : QVariant();
    case MicroBatchColumn:
        return perLayer || j.kind == memx::ProfileJobKind::Memory ? QVariant(j.microBatch) : QVariant();
    case GpusColumn:
        return j.gpus;
    case SecondsColumn:
        if (role == SortRole)
            return j.estimatedSeconds;
        return role == Qt::ToolTipRole
            ? tr("%1 s of wall time (start-up + %2 warm-up + %3 timed iterations per run), %4 GPU-hours")
                  .arg(j.estimatedSeconds, 0, 'f', 0)
                  .arg(j.warmupIterations)
                  .arg(j.timedIterations)
                  .arg(j.gpuSeconds() / 3600.0, 0, 'f', 2)
            : QVariant(QString::number(j.estimatedSeconds, 'f', 0));
    case WhatColumn: {
        if (perLayer) {
            QStringList variants;
            for (int n : j.layerVariants)
                variants << QString::number(n);
            return tr("per-layer on %1, %2 transformer layers, %3 micro-batches/iteration")
                .arg(QString::fromStdString(j.node), variants.join(QStringLiteral(" and ")))
                .arg(j.microBatchesPerIteration);
        }
        const QString summary = j.plan ? QString::fromStdString(j.plan->summary(mCluster)) : QString();
        return QStringLiteral("%1: %2").arg(QString::fromStdString(j.reason), summary);
    }
    }
    return {};
}

QVariant ProfilingJobModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount)
        return {};
    static const char *names[] = {"Job", "Kind", "GPU", "TP", "Micro-batch", "GPUs", "Est. s", "What"};
    return tr(names[section]);
}

} // namespace memx::ui
