#pragma once

#include "memx/cost/schedule.h"

#include <QLineF>
#include <QRectF>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include <array>
#include <vector>

namespace memx {
struct PlanEstimate;
}

namespace memx::ui {

/// Painted 1F1B timeline of one plan (memx::oneFOneBSchedule of its estimate), the way a profiler
/// draws one: one row per stage ("S0 · h100-sxm ×4"), time in ms (s when long) along x with 1-2-5
/// ticks, forward boxes (blue), backward boxes (green) whose recomputed start is orange, the P2P
/// sends as thin segments between neighbouring rows, idle time (the bubbles) as the grey hatched
/// row track, micro-batch numbers in boxes wide enough, a legend and a caption with makespan,
/// bubble share and the estimate's pipelineMs. Operations narrower than a pixel are painted per
/// pixel column, coloured by their mix and as opaque as the column is busy; sends are left out
/// when the boxes average under 3 px (the legend says so). Hovering an operation shows "stage 2 · micro-batch 5
/// · backward 12.3–15.8 ms (recompute 1.1 ms)". GUI thread only.
class PipelineTimeline : public QWidget {
    Q_OBJECT
public:
    explicit PipelineTimeline(QWidget *parent = nullptr);

    /// Schedules `estimate` (memx::oneFOneBSchedule). `stageLabels`: one per stage (e.g.
    /// "S0 · rtx3090 ×4"); empty = built from the estimate's GPUs ("S0 · a100-40 ×4"), or
    /// "Stage 0". `virtualStages` > 1: the plan is interleaved; it is drawn as the plain 1F1B of
    /// the same stage times and the caption says so. An estimate the scheduler refuses (no stages,
    /// no micro-batches, too large) shows the reason instead of a timeline.
    void setEstimate(const memx::PlanEstimate &estimate, QStringList stageLabels = {}, int virtualStages = 1);
    /// Back to the empty state ("Select a plan ..."); the axis span stays.
    void clear();
    /// The time the x axis spans: the makespan, or `ms` when that is longer (0, the default: the
    /// makespan). Timelines shown one above the other share one time scale this way.
    void setAxisSpanMs(double ms);
    /// max(the span set, the makespan).
    double axisSpanMs() const;

    const memx::PipelineSchedule &schedule() const { return mSchedule; }
    const QStringList &stageLabels() const { return mLabels; }
    /// The caption line: makespan, bubble share, the estimate's pipelineMs; empty when cleared.
    QString caption() const;
    /// Why the last estimate could not be scheduled; empty when it could.
    QString error() const { return mError; }

    /// The rows' area (widget coordinates): x = left is time 0 (the axis origin), right the makespan.
    QRectF plotArea() const;
    /// Rectangle of operation `index` (into schedule().ops); empty when out of range.
    QRectF opRect(int index) const;
    /// Operation under `pos`, -1 if none (idle time, labels, axis).
    int opAt(QPoint pos) const;
    /// Tooltip text of operation `index`; empty when out of range.
    QString opToolTip(int index) const;
    /// Tooltip at `pos`: the operation's, an idle gap's ("stage 1 · idle 3.0–9.0 ms ..."), or empty.
    QString toolTipAt(QPoint pos) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    bool event(QEvent *event) override;
    void paintEvent(QPaintEvent *event) override;

private:
    struct Layout {
        QRectF caption, legend, labels, plot, axis;
        double rowHeight = 0, pxPerMs = 0;
    };
    Layout layout() const;
    int legendHeight(int width) const;
    int captionHeight(int width) const;
    int chromeHeight(int widgetWidth) const;
    QRectF boxRect(const Layout &l, int stage, double startMs, double endMs) const;
    int stageAtY(const Layout &l, double y) const;
    void paintLegend(QPainter &p, const QRectF &area, bool sendsHidden) const;
    void paintAxis(QPainter &p, const Layout &l) const;
    void paintRows(QPainter &p, const Layout &l);
    void paintOps(QPainter &p, const Layout &l, int stage);
    bool sendsVisible(const Layout &l) const;
    void paintSends(QPainter &p, const Layout &l);

    memx::PipelineSchedule mSchedule;
    QStringList mLabels;
    QString mError;
    double mEstimatePipelineMs = 0;
    int mVirtualStages = 1;
    double mAxisSpanMs = 0;
    QVector<QLineF> mSendLines; ///< reused by paintSends (no per-paint allocation once grown)
    std::vector<std::array<double, 3>> mColumns; ///< reused by paintOps: busy px per column and kind
};

} // namespace memx::ui
