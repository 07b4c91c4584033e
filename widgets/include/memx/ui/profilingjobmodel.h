#pragma once

#include "memx/cluster/cluster.h"
#include "memx/profiling/minimalset.h"

#include <QAbstractTableModel>

#include <string>
#include <utility>
#include <vector>

namespace memx::ui {

/// The jobs of a minimal-set profiling plan (memx::planMinimalSet) as a table: one row per job,
/// per-layer jobs first, then end-to-end runs. Columns: Job id, Kind, GPU type, TP, Micro-batch,
/// GPUs, Est. time (s), What (layer variants, or why the end-to-end plan was chosen and its summary).
/// Roles: Qt::DisplayRole / Qt::ToolTipRole, SortRole = the raw number of numeric columns.
class ProfilingJobModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        IdColumn,
        KindColumn,
        DeviceColumn,
        TpColumn,
        MicroBatchColumn,
        GpusColumn,
        SecondsColumn,
        WhatColumn,
        ColumnCount
    };
    static constexpr int SortRole = Qt::UserRole + 1;
    using QAbstractTableModel::QAbstractTableModel;

    /// Replaces the rows with `plan`'s jobs (one model reset); `cluster` names the plans' GPUs.
    void setPlan(const memx::ProfilingPlan &plan, const memx::Cluster &cluster);
    /// No plan (one model reset).
    void clear();
    bool hasPlan() const { return mHasPlan; }
    const memx::ProfilingPlan &plan() const { return mPlan; }
    /// The cluster the plan was computed for.
    const memx::Cluster &cluster() const { return mCluster; }

    /// Per-layer jobs per GPU type (catalogue id), in first-appearance order.
    std::vector<std::pair<std::string, int>> perLayerJobsPerDevice() const;
    int endToEndJobCount() const;
    int memoryJobCount() const; ///< memory-calibration jobs
    /// One line: jobs, GPU-hours, wall hours, against exhaustive profiling (configurations, days,
    /// GPU-hours, ratio).
    QString summaryText() const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    memx::ProfilingPlan mPlan;
    memx::Cluster mCluster;
    bool mHasPlan = false;
};

} // namespace memx::ui
