#pragma once

#include "memx/ui/planresults.h"
#include "memx/ui/resultsviewtypes.h"

#include <QString>
#include <QVector>
#include <QWidget>

class QLabel;
class QTableWidget;
class QTabWidget;

namespace memx::ui {

class MemoryBarChart;
class PipelineTimeline;

/// One plan of a comparison: its rank and row of the results (as the plan table shows them) and
/// its detail (plan, estimate, per-GPU bars).
struct ComparedPlan {
    int rank = 0;
    PlanPoint point;
    PlanDetail detail;
};

/// Two or three plans side by side: a table with one column per plan (rank, layout, time and its
/// gap to the fastest, throughput, peak memory, imbalance, the time breakdown, the pipeline shape
/// stage by stage, options, idle GPUs) where the best value of each figure is bold and the rows
/// whose values differ are tinted, and below it two tabs: each plan's per-GPU memory bars on one
/// GiB scale, and each plan's 1F1B timeline on one time scale (a slower plan's bar is longer, its
/// bubbles line up against the others'). A snapshot: it keeps what it was given (markStale() says the results moved
/// on). GUI thread only.
class PlanComparisonView : public QWidget {
    Q_OBJECT
public:
    static constexpr int MaxPlans = 3;
    /// The table's rows, top to bottom.
    enum Row {
        RankRow,
        PlanRow,
        LauncherRow,
        TimeRow,
        TimeGapRow,
        ThroughputRow,
        MemoryRow,
        PeakGiBRow,
        VerdictRow,
        ImbalanceRow,
        PipelineRow,
        BubbleRow,
        DpSyncRow,
        OptimizerRow,
        MicroBatchesRow,
        StagesRow,
        LayoutRow,
        OptionsRow,
        IdleRow,
        RowCount
    };

    explicit PlanComparisonView(QWidget *parent = nullptr);

    /// Shows `plans` (at most MaxPlans are kept, in the given order).
    void setPlans(QVector<ComparedPlan> plans);
    const QVector<ComparedPlan> &plans() const { return mPlans; }
    /// Notes above the table that the results these plans come from are no longer current.
    void markStale(bool stale);
    bool isStale() const { return mStale; }

    QTableWidget *table() const { return mTable; }
    /// One chart per plan, same order as plans().
    const QVector<MemoryBarChart *> &memoryBars() const { return mBars; }
    /// One timeline per plan, same order as plans(), all spanning the longest makespan.
    const QVector<PipelineTimeline *> &timelines() const { return mTimelines; }
    /// The tabs below the table: 0 the memory bars, 1 the timelines.
    QTabWidget *detailTabs() const { return mDetailTabs; }
    /// The cell text of `row` for plan `column` (0-based).
    QString cellText(Row row, int column) const;
    /// The plan columns holding the best value of `row` (empty for rows without an order).
    QVector<int> bestColumns(Row row) const;
    /// The plans' values of `row` are not all the same.
    bool rowDiffers(Row row) const;
    /// The table as CSV (memx::ui::csvField): a "figure" column, then one column per plan.
    QString csv() const;

private:
    void fillTable();
    void fillBars();
    void fillTimelines();

    QVector<ComparedPlan> mPlans;
    bool mStale = false;
    QLabel *mStaleNote = nullptr;
    QTableWidget *mTable = nullptr;
    QWidget *mBarsBox = nullptr;
    QVector<MemoryBarChart *> mBars;
    QTabWidget *mDetailTabs = nullptr;
    QWidget *mTimelinesBox = nullptr;
    QVector<PipelineTimeline *> mTimelines;
};

} // namespace memx::ui
