#pragma once

#include "memx/ui/resultsviewtypes.h"

#include <QVector>
#include <QWidget>

#include <optional>

namespace memx::ui {

/// Per-GPU memory of one plan: one stacked bar per GPU (parameters, gradients, optimizer,
/// activations, overhead), each against its own device capacity (a dark tick across the bar slot),
/// grouped by vendor then node (first-appearance order), with a vendor colour strip and the node
/// name (and device) under each group. OOM bars get a red outline and an "OOM" tag, risk-of-OOM
/// bars an amber outline. A caption gives the highest utilisation and the imbalance (CV of the
/// per-GPU utilisation, see utilisationCv()). Y axis in GiB (2^30 bytes).
///
/// Custom-painted rather than Qt Charts: QStackedBarSeries cannot draw a different capacity line per
/// bar, outline single bars or label two levels of categories (GPU within node), and painting keeps
/// hundreds of GPUs cheap. Hovering a bar shows a tooltip with every component in GiB; a click emits
/// gpuClicked. GUI thread only.
class MemoryBarChart : public QWidget {
    Q_OBJECT
public:
    /// The stacked components, bottom to top.
    enum Component { Parameters, Gradients, Optimizer, Activations, Overhead, ComponentCount };
    static QString componentName(int component);
    static QColor componentColour(int component);
    /// Bytes of `component` in `bar`.
    static double componentBytes(const GpuMemoryBar &bar, int component);

    explicit MemoryBarChart(QWidget *parent = nullptr);

    /// Replaces all bars (bytes). They are shown grouped by vendor, then node; bars() is that order.
    void setBars(QVector<GpuMemoryBar> bars);
    const QVector<GpuMemoryBar> &bars() const { return mBars; }
    int barCount() const { return int(mBars.size()); }

    /// "Max utilisation 103.1 % (node/gpu) · Imbalance CV 0.214 · 1 OOM, 2 at risk of OOM".
    QString captionText() const { return mCaption; }
    double maxUtilisation() const; ///< Highest used/capacity over the bars (0 if none).
    double imbalanceCv() const { return utilisationCv(mBars); }
    int oomCount() const;
    int riskCount() const; ///< Bars at risk of OOM that are not OOM.

    /// Rectangle of the stacked bar `index` (bars() order) scaled to its used bytes, widget coordinates.
    QRect barRect(int index) const;
    /// Bar slot under `pos` (full height of the plot), -1 if none.
    int barAt(QPoint pos) const;
    /// The legend is drawn (a chart too short for it and MinPlotHeight of bars leaves it out).
    bool legendShown() const { return geometry().showLegend; }
    /// Upper end of the y axis, in GiB.
    double axisMaxGiB() const;
    /// The y axis reaches at least `gib` (charts side by side share one scale); 0: from the bars.
    void setAxisFloorGiB(double gib);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    /// The user clicked the bar of GPU `gpuIndex` on `node`.
    void gpuClicked(const QString &node, int gpuIndex);

protected:
    void paintEvent(QPaintEvent *event) override;
    void changeEvent(QEvent *event) override;
    bool event(QEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;

private:
    struct Geometry {
        QRect caption, legend, plot, labels;
        double slot = 0; // x distance between neighbouring bars
        QVector<double> centre; // per bar
        double maxGiB = 1;
        double stepGiB = 1;
        bool showLegend = true; // false: the chart is too short for it
        bool wrapCaption = false; // the caption takes more than one line
    };
    static constexpr int MinPlotHeight = 110; // px the bars keep before the legend is dropped
    /// The layout for the current size, font and bars: computed once, then cached until one of
    /// them changes (paint and every mouse move use it; the font through changeEvent).
    const Geometry &geometry() const;
    Geometry computeGeometry() const;
    void invalidateGeometry() { mGeometry.reset(); }
    QString composeCaption() const;
    QString tooltipFor(int index) const;

    QVector<GpuMemoryBar> mBars;
    double mAxisFloorGiB = 0.0;
    QVector<int> mGroupStart; // first bar index of every node group, plus barCount() at the end
    QString mCaption; // captionText(), composed in setBars
    mutable std::optional<Geometry> mGeometry;
    mutable QSize mGeometrySize; // the size mGeometry was computed for
};

} // namespace memx::ui
