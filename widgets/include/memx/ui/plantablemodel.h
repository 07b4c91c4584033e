#pragma once

#include "memx/ui/resultsviewtypes.h"

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

namespace memx::ui {

/// Ranked plan table over a vector of PlanPoint. Rank 1 = lowest score (ties broken by time, then id).
/// The Spread and Flags columns carry the learned predictor's spreads, risk of OOM and
/// extrapolation (empty for analytic figures; the results panel hides them then).
/// Display text carries units in the header; Qt::UserRole returns the plan id (quint32),
/// PlanTableModel::SortRole the raw number used for sorting. Lives in the GUI thread.
class PlanTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        RankColumn,
        TimeColumn,
        SpreadColumn, ///< learned figures: relative one-sigma spread of T and of memory
        FlagsColumn, ///< learned figures: "risk of OOM", "EXTRAPOLATING"
        MemoryColumn,
        ImbalanceColumn,
        ScoreColumn,
        ParetoColumn,
        LauncherColumn,
        PlanColumn,
        ColumnCount
    };
    enum Role {
        PlanIdRole = Qt::UserRole, ///< quint32 plan id.
        SortRole = Qt::UserRole + 1, ///< Raw value (double / int / bool / QString) for sorting.
    };

    explicit PlanTableModel(QObject *parent = nullptr);

    /// Replaces all plans in one model reset; ranks are recomputed from PlanPoint::score.
    void setPlans(QVector<PlanPoint> plans);
    /// Replaces scores (same order as plans(), size must match) and re-ranks; emits dataChanged
    /// for the Rank and Score columns only (no reset, selection survives). Returns false on size mismatch.
    bool updateScores(const QVector<double> &scores);
    const QVector<PlanPoint> &plans() const { return mPlans; }
    /// 1-based rank of the plan in source row `row`.
    int rankOfRow(int row) const { return mRank.value(row); }
    /// The time column is in seconds (memx::ui::timeInSeconds of the plans, as the Pareto chart's axis).
    bool timeInSeconds() const { return mTimeInSeconds; }
    /// Source row of plan `id`, -1 if absent.
    int rowOfPlan(quint32 id) const;
    /// Id of the rank-1 plan (0 if empty).
    quint32 topPlanId() const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    void computeRanks();

    QVector<PlanPoint> mPlans;
    QVector<int> mRank; // per row, 1-based
    bool mTimeInSeconds = false;
};

/// Sort/filter proxy for PlanTableModel: sorts by SortRole (numbers numerically), filters by
/// case-insensitive text in the plan summary, "Pareto front only" and "hide OOM".
class PlanFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit PlanFilterProxy(QObject *parent = nullptr);

    void setTextFilter(const QString &text);
    QString textFilter() const { return mText; }
    void setParetoOnly(bool on);
    bool paretoOnly() const { return mParetoOnly; }
    void setHideOom(bool on);
    bool hideOom() const { return mHideOom; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;
    bool lessThan(const QModelIndex &left, const QModelIndex &right) const override;

private:
    QString mText;
    bool mParetoOnly = false;
    bool mHideOom = false;
};

} // namespace memx::ui
