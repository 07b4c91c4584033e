#pragma once

#include "memx/ui/resultsviewtypes.h"

#include <QList>
#include <QPointF>
#include <QRectF>
#include <QVector>
#include <QWidget>

#include <optional>

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLineSeries;
class QToolButton;
class QValueAxis;

namespace memx::ui {

class ParetoColourLegend;

/// Pareto front chart of evaluated plans (Qt Charts kept behind this widget).
///
/// Two metrics among T (ms), M (% of capacity) and B (CV) are the axes, picked in the small toolbar
/// (or setAxes()); the third colours the points in ColourBuckets buckets, explained by a gradient
/// legend. Dominated plans (PlanPoint::onFront == false) are drawn faint, front plans solid with a
/// border; the 2-D front of the two shown axes is drawn as a step line (front plans off that line
/// are better in the colour metric); with M on an axis a dashed line marks 100 % of capacity.
/// Hovering shows a tooltip with the plan summary and all three metrics; a left click selects the
/// nearest plan within ClickTolerancePx and emits planSelected(id).
///
/// Zoom and pan: the wheel zooms about the pointer, a left drag from empty space zooms to the
/// dragged rectangle, a middle or Shift+left drag (or the arrow keys) pans, +/- zoom about the
/// centre; *Front* zooms to the Pareto front's extent, *Reset* (Home, 0 or a double click on empty
/// space) shows every plan again. New points or new axes reset the zoom. Time is plotted in ms, or
/// in s once the slowest plan takes 10 s or more; ticks are 1-2-5 steps of the shown range.
///
/// Bulk updates only: setPoints() fills a fixed set of 2 * ColourBuckets + 3 series with
/// QXYSeries::replace(), so 30,000+ points stay responsive (no OpenGL; works offscreen).
/// GUI thread only.
class ParetoChartView : public QWidget {
    Q_OBJECT
public:
    static constexpr int ColourBuckets = 8;
    static constexpr int ClickTolerancePx = 8;

    explicit ParetoChartView(QWidget *parent = nullptr);
    ~ParetoChartView() override;

    enum ViewPolicy { ResetView, KeepView };
    /// Replaces all plans. Keeps the selection if the selected id is still present. ResetView
    /// (new results) shows every plan; KeepView (the same results re-scored) keeps a zoom.
    void setPoints(QVector<PlanPoint> points, ViewPolicy view = ResetView);
    const QVector<PlanPoint> &points() const { return mPoints; }

    /// Chooses the axis metrics; if x == y, y becomes the next metric. The remaining one colours points.
    void setAxes(Metric x, Metric y);
    Metric xMetric() const { return mX; }
    Metric yMetric() const { return mY; }
    Metric colourMetric() const;

    /// Rings plan `id` (0 or an unknown id clears the ring). Does not emit planSelected.
    void setSelectedPlan(quint32 id);
    quint32 selectedPlan() const { return mSelected; }

    /// Id of the plan nearest to `viewportPos` (chartView()->viewport() coordinates) within
    /// `tolerancePx` pixels, if any. Linear scan; fine for 10^5 points per mouse event.
    std::optional<quint32> planAt(QPoint viewportPos, int tolerancePx = ClickTolerancePx) const;
    /// Where plan `id` is drawn, in chartView()->viewport() coordinates (for tests and overlays).
    std::optional<QPoint> viewportPosOf(quint32 id) const;
    /// Selects the plan at `viewportPos` (what a left click does): rings it and emits planSelected.
    /// Returns false if no plan is within the tolerance.
    bool selectAt(QPoint viewportPos);

    /// Plotted coordinate of a metric value on an axis: M in percent, T in ms or, when
    /// timeInSeconds(), in s.
    double plotValue(Metric metric, double value) const;
    /// True when the time axis is in seconds (the slowest plan takes TimeSecondsFromMs or more).
    bool timeInSeconds() const { return mTimeInSeconds; }
    static constexpr double TimeSecondsFromMs = kTimeSecondsFromMs;
    /// Axis title of `metric` with the unit the chart uses for it.
    QString axisTitle(Metric metric) const;
    /// Sets each axis's title: axisTitle() where the plot area is long enough, else the short name.
    void fitAxisTitles();

    /// The shown range in plot coordinates (x = horizontal axis, y = vertical axis).
    QRectF viewRange() const;
    /// The range that shows every plan (what Reset returns to).
    QRectF fullRange() const { return mFullRange; }
    bool isZoomed() const { return mZoomed; }
    /// Shows `range` (plot coordinates; normalised, clamped to a minimum span).
    void zoomTo(QRectF range);
    /// Zooms by `factor` (> 1 zooms in) about `centre` (plot coordinates).
    void zoomBy(double factor, QPointF centre);
    /// Moves the view by `pixels` of the plot area (positive x = content moves right).
    void panByPixels(QPointF pixels);
    /// Shows the extent of the plans on the front (3-D), padded; false if there is none.
    bool zoomToFront();
    void resetZoom();
    /// The plot value under a viewport position.
    QPointF valueAt(QPoint viewportPos) const;

    QChartView *chartView() const { return mView; }
    QChart *chart() const { return mChart; }
    /// Series holding dominated / front plans of colour bucket `bucket`: point-only series drawn with
    /// pre-rendered "light markers" (no line, no per-point QGraphicsItem).
    QLineSeries *dominatedSeries(int bucket) const { return mDominated[bucket]; }
    QLineSeries *frontSeries(int bucket) const { return mFront[bucket]; }
    QLineSeries *selectedSeries() const { return mSelectedSeries; }
    QLineSeries *stepLine() const { return mStepLine; }
    /// Number of points drawn as front / dominated (sums over the colour buckets).
    int frontPointCount() const;
    int dominatedPointCount() const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    /// The user clicked plan `id`.
    void planSelected(quint32 id);
    /// The pointer is over plan `id` (0 = over no plan).
    void planHovered(quint32 id);
    void axesChanged(memx::ui::Metric x, memx::ui::Metric y);
    /// The shown range changed (zoom, pan or reset).
    void viewRangeChanged();

private:
    friend class ParetoChartViewport;
    void rebuild(ViewPolicy view = ResetView);
    void updateSelectionSeries();
    void hoverAt(QPoint viewportPos, QPoint globalPos);
    QString tooltipFor(const PlanPoint &p) const;
    /// Sets both axes' ranges, their 1-2-5 ticks and label formats, and the capacity line.
    void applyRange(QRectF range);
    void updateCountLabel();

    QVector<PlanPoint> mPoints;
    Metric mX = Metric::Time;
    Metric mY = Metric::Memory;
    quint32 mSelected = 0;
    quint32 mHovered = 0;
    bool mTimeInSeconds = false;
    bool mZoomed = false;
    QRectF mFullRange;

    QChart *mChart = nullptr;
    QChartView *mView = nullptr;
    QValueAxis *mAxisX = nullptr;
    QValueAxis *mAxisY = nullptr;
    QLineSeries *mDominated[ColourBuckets] = {};
    QLineSeries *mFront[ColourBuckets] = {};
    QLineSeries *mSelectedSeries = nullptr;
    QLineSeries *mStepLine = nullptr;
    QLineSeries *mCapacityLine = nullptr;
    QComboBox *mXCombo = nullptr;
    QComboBox *mYCombo = nullptr;
    QLabel *mCountLabel = nullptr;
    QToolButton *mFrontButton = nullptr;
    QToolButton *mResetButton = nullptr;
    QString mCountFull, mCountShort, mCountTiny; ///< "N plans, K on the front" / "K on the front" / "K ★"
    ParetoColourLegend *mLegend = nullptr;

    bool eventFilter(QObject *watched, QEvent *event) override;
    /// Shows the full count text if it fits the label, else the short one, else the short one
    /// elided at the right (never clipped on the left); the full text is the tooltip.
    void fitCountLabel();
};

/// Colour of bucket `bucket` (0 = lowest = best value of the colour metric) of `buckets`.
QColor paretoBucketColour(int bucket, int buckets = ParetoChartView::ColourBuckets);

} // namespace memx::ui
