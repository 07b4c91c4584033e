#include "memx/ui/paretochartview.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QRubberBand>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>
#include <QWheelEvent>
#include <QXYSeries>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace memx::ui {

QColor paretoBucketColour(int bucket, int buckets)
{
    // Eight samples of a viridis-like ramp: dark blue (low = good) -> yellow (high).
    static const QColor ramp[8]
        = {QColor(0x44, 0x01, 0x54), QColor(0x46, 0x33, 0x7e), QColor(0x36, 0x5c, 0x8d), QColor(0x27, 0x7f, 0x8e),
           QColor(0x1f, 0xa1, 0x87), QColor(0x4a, 0xc1, 0x6d), QColor(0x9f, 0xda, 0x3a), QColor(0xe0, 0xd0, 0x1a)};
    if (buckets <= 1)
        return ramp[0];
    const double t = std::clamp(double(bucket) / (buckets - 1), 0.0, 1.0) * 7.0;
    const int i = std::min(6, int(t));
    const double f = t - i;
    const QColor &a = ramp[i];
    const QColor &b = ramp[i + 1];
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * f),
                            float(a.greenF() + (b.greenF() - a.greenF()) * f),
                            float(a.blueF() + (b.blueF() - a.blueF()) * f));
}

namespace {
QString shortMetricName(Metric m, bool seconds = false)
{
    switch (m) {
    case Metric::Time:
        return seconds ? QStringLiteral("Time (s)") : QStringLiteral("Time (ms)");
    case Metric::Memory:
        return QStringLiteral("Peak memory (%)");
    case Metric::Balance:
        return QStringLiteral("Imbalance (CV)");
    }
    return {};
}

} // namespace

/// Gradient legend for the colour metric: title, bucket swatches, min / max labels.
class ParetoColourLegend : public QWidget {
public:
    explicit ParetoColourLegend(QWidget *parent)
        : QWidget(parent)
    {
        setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
    }
    void setRange(Metric metric, double lo, double hi, bool valid)
    {
        mMetric = metric;
        mLo = lo;
        mHi = hi;
        mValid = valid;
        updateGeometry();
        update();
    }
    QSize sizeHint() const override
    {
        const QFontMetrics fm(font());
        return {fm.horizontalAdvance(title()) + 8 + fm.horizontalAdvance(loText()) + 4 + BarWidth + 4
                    + fm.horizontalAdvance(hiText()) + 2,
                fm.height() + 6};
    }
    QString title() const { return QStringLiteral("Colour: %1").arg(shortMetricName(mMetric)); }
    QString loText() const { return mValid ? formatMetric(mMetric, mLo) : QStringLiteral("-"); }
    QString hiText() const { return mValid ? formatMetric(mMetric, mHi) : QStringLiteral("-"); }

protected:
    void paintEvent(QPaintEvent *) override
    {
        QPainter p(this);
        const QFontMetrics fm(font());
        const int h = height();
        int x = 0;
        const QString title = this->title();
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QRect(x, 0, fm.horizontalAdvance(title), h), Qt::AlignVCenter, title);
        x += fm.horizontalAdvance(title) + 8;
        const QString lo = loText();
        p.drawText(QRect(x, 0, fm.horizontalAdvance(lo), h), Qt::AlignVCenter, lo);
        x += fm.horizontalAdvance(lo) + 4;
        const int bw = BarWidth / ParetoChartView::ColourBuckets;
        const int barH = std::min(h - 4, 12);
        for (int b = 0; b < ParetoChartView::ColourBuckets; ++b)
            p.fillRect(x + b * bw, (h - barH) / 2, bw, barH, paretoBucketColour(b));
        p.setPen(QColor(0, 0, 0, 80));
        p.drawRect(x, (h - barH) / 2, bw * ParetoChartView::ColourBuckets - 1, barH - 1);
        x += bw * ParetoChartView::ColourBuckets + 4;
        const QString hi = hiText();
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QRect(x, 0, width() - x, h), Qt::AlignVCenter, hi);
    }

private:
    static constexpr int BarWidth = 96;
    Metric mMetric = Metric::Balance;
    double mLo = 0.0;
    double mHi = 0.0;
    bool mValid = false;
};

/// QChartView that forwards clicks and hovering to its ParetoChartView, and turns the wheel,
/// drags and keys into zoom and pan.
class ParetoChartViewport : public QChartView {
public:
    ParetoChartViewport(QChart *chart, ParetoChartView *owner)
        : QChartView(chart, owner)
        , mOwner(owner)
    {
        setMouseTracking(true);
        viewport()->setMouseTracking(true);
        setFocusPolicy(Qt::StrongFocus);
        setDragMode(QGraphicsView::NoDrag);
        setRubberBand(QChartView::NoRubberBand);
    }

protected:
    void mousePressEvent(QMouseEvent *event) override
    {
        const QPoint pos = event->position().toPoint();
        const bool pan = event->button() == Qt::MiddleButton
            || (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier));
        if (pan) {
            mPanFrom = pos;
            mPanning = true;
            viewport()->setCursor(Qt::ClosedHandCursor);
            event->accept();
            return;
        }
        if (event->button() == Qt::LeftButton) {
            if (mOwner->selectAt(pos)) {
                event->accept();
                return;
            }
            mBandFrom = pos;
            if (!mBand)
                mBand = new QRubberBand(QRubberBand::Rectangle, viewport());
            mBand->setGeometry(QRect(pos, QSize()));
            mBand->show();
            event->accept();
            return;
        }
        QChartView::mousePressEvent(event);
    }
    void mouseMoveEvent(QMouseEvent *event) override
    {
        const QPoint pos = event->position().toPoint();
        if (mPanning) {
            mOwner->panByPixels(QPointF(pos - mPanFrom));
            mPanFrom = pos;
            return;
        }
        if (mBand && mBand->isVisible()) {
            mBand->setGeometry(QRect(mBandFrom, pos).normalized());
            return;
        }
        mOwner->hoverAt(pos, event->globalPosition().toPoint());
        QChartView::mouseMoveEvent(event);
    }
    void mouseReleaseEvent(QMouseEvent *event) override
    {
        if (mPanning) {
            mPanning = false;
            viewport()->unsetCursor();
            return;
        }
        if (mBand && mBand->isVisible()) {
            mBand->hide();
            const QRect r = QRect(mBandFrom, event->position().toPoint()).normalized();
            if (r.width() >= MinBandPx && r.height() >= MinBandPx)
                mOwner->zoomTo(QRectF(mOwner->valueAt(r.topLeft()), mOwner->valueAt(r.bottomRight())).normalized());
            return;
        }
        QChartView::mouseReleaseEvent(event);
    }
    void mouseDoubleClickEvent(QMouseEvent *event) override
    {
        if (event->button() == Qt::LeftButton && !mOwner->planAt(event->position().toPoint())) {
            mOwner->resetZoom();
            return;
        }
        QChartView::mouseDoubleClickEvent(event);
    }
    void wheelEvent(QWheelEvent *event) override
    {
        const int delta = event->angleDelta().y();
        if (delta == 0) {
            event->ignore();
            return;
        }
        // One notch (120) zooms by 1.25.
        mOwner->zoomBy(std::pow(1.25, delta / 120.0), mOwner->valueAt(event->position().toPoint()));
        event->accept();
    }
    void keyPressEvent(QKeyEvent *event) override
    {
        const QRectF r = mOwner->viewRange();
        const double step = 40.0; // pixels per arrow key
        switch (event->key()) {
        case Qt::Key_Plus:
        case Qt::Key_Equal:
            mOwner->zoomBy(1.25, r.center());
            break;
        case Qt::Key_Minus:
            mOwner->zoomBy(1.0 / 1.25, r.center());
            break;
        case Qt::Key_Home:
        case Qt::Key_0:
            mOwner->resetZoom();
            break;
        case Qt::Key_Left:
            mOwner->panByPixels(QPointF(step, 0));
            break;
        case Qt::Key_Right:
            mOwner->panByPixels(QPointF(-step, 0));
            break;
        case Qt::Key_Up:
            mOwner->panByPixels(QPointF(0, step));
            break;
        case Qt::Key_Down:
            mOwner->panByPixels(QPointF(0, -step));
            break;
        default:
            QChartView::keyPressEvent(event);
            return;
        }
        event->accept();
    }
    void leaveEvent(QEvent *event) override
    {
        mOwner->hoverAt(QPoint(-100000, -100000), {});
        QChartView::leaveEvent(event);
    }

private:
    static constexpr int MinBandPx = 5;
    ParetoChartView *mOwner;
    QRubberBand *mBand = nullptr;
    QPoint mBandFrom, mPanFrom;
    bool mPanning = false;
};

namespace {

// Pre-rendered marker: Qt Charts paints "light markers" directly instead of creating one
// QGraphicsItem per point, which is what keeps 30,000 points fast.
QImage markerImage(int diameter, const QColor &fill, const QPen &pen)
{
    const qreal dpr = 2.0;
    QImage img(int(diameter * dpr), int(diameter * dpr), QImage::Format_ARGB32_Premultiplied);
    img.setDevicePixelRatio(dpr);
    img.fill(Qt::transparent);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    p.setBrush(fill);
    p.setPen(pen);
    const qreal inset = pen.style() == Qt::NoPen ? 0.0 : pen.widthF() / 2.0;
    p.drawEllipse(QRectF(inset, inset, diameter - 2 * inset, diameter - 2 * inset));
    return img;
}

const Metric AllMetrics[3] = {Metric::Time, Metric::Memory, Metric::Balance};

/// A 1, 2 or 5 x 10^k step giving about `intervals` intervals over `span`.
double niceStep(double span, double intervals = 5.0)
{
    if (!(span > 0.0) || !std::isfinite(span))
        return 1.0;
    const double raw = span / intervals;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double norm = raw / mag;
    return (norm < 1.5 ? 1.0 : norm < 3.0 ? 2.0 : norm < 7.0 ? 5.0 : 10.0) * mag;
}

/// printf format with as many decimals as a tick step needs (0.5 -> "%.1f", 20 -> "%.0f").
QString labelFormatForStep(double step)
{
    const int decimals = std::clamp(int(std::ceil(-std::log10(step) - 1e-9)), 0, 6);
    return QStringLiteral("%.%1f").arg(decimals);
}

/// The range of [lo, hi] shown with every plan: padded by 5 % so markers are not cut at the
/// border, snapped outwards to the 1-2-5 step; never below 0 (no metric is negative).
std::pair<double, double> paddedRange(double lo, double hi)
{
    double span = hi - lo;
    if (span <= 0.0)
        span = std::max(std::abs(hi) * 0.1, 1e-3);
    lo = std::max(lo - span * 0.05, 0.0);
    hi += span * 0.05;
    const double step = niceStep(hi - lo);
    return {std::floor(lo / step) * step, std::ceil(hi / step) * step};
}

} // namespace

ParetoChartView::ParetoChartView(QWidget *parent)
    : QWidget(parent)
{
    mChart = new QChart;
    connect(mChart, &QChart::plotAreaChanged, this, &ParetoChartView::fitAxisTitles);
    mChart->legend()->hide();
    mChart->setMargins(QMargins(4, 4, 8, 4));
    mChart->setBackgroundRoundness(0);
    mAxisX = new QValueAxis;
    mAxisY = new QValueAxis;
    mChart->addAxis(mAxisX, Qt::AlignBottom);
    mChart->addAxis(mAxisY, Qt::AlignLeft);

    auto attach = [this](QAbstractSeries *s) {
        mChart->addSeries(s);
        s->attachAxis(mAxisX);
        s->attachAxis(mAxisY);
    };
    mCapacityLine = new QLineSeries;
    mCapacityLine->setPen(QPen(QColor(0xc6, 0x28, 0x28, 180), 1.5, Qt::DashLine));
    mCapacityLine->setName(tr("100 % of capacity"));
    attach(mCapacityLine);
    for (int b = 0; b < ColourBuckets; ++b) {
        QColor c = paretoBucketColour(b);
        auto *dom = new QLineSeries;
        c.setAlpha(55);
        dom->setPen(Qt::NoPen);
        dom->setMarkerSize(7);
        dom->setLightMarker(markerImage(7, c, Qt::NoPen));
        dom->setName(tr("Dominated"));
        attach(dom);
        mDominated[b] = dom;
    }
    mStepLine = new QLineSeries;
    mStepLine->setPen(QPen(QColor(0x20, 0x20, 0x20, 200), 1.5));
    mStepLine->setName(tr("2-D front"));
    attach(mStepLine);
    for (int b = 0; b < ColourBuckets; ++b) {
        auto *front = new QLineSeries;
        front->setPen(Qt::NoPen);
        front->setMarkerSize(11);
        front->setLightMarker(markerImage(11, paretoBucketColour(b), QPen(QColor(0x20, 0x20, 0x20), 1.2)));
        front->setName(tr("Pareto front"));
        attach(front);
        mFront[b] = front;
    }
    mSelectedSeries = new QLineSeries;
    mSelectedSeries->setPen(Qt::NoPen);
    mSelectedSeries->setMarkerSize(22);
    mSelectedSeries->setLightMarker(markerImage(22, Qt::transparent, QPen(QColor(0xe6, 0x00, 0x7a), 3)));
    mSelectedSeries->setName(tr("Selected"));
    attach(mSelectedSeries);

    mView = new ParetoChartViewport(mChart, this);
    mView->setRenderHint(QPainter::Antialiasing, true);
    mView->setFrameShape(QFrame::NoFrame);

    mXCombo = new QComboBox(this);
    mYCombo = new QComboBox(this);
    for (Metric m : AllMetrics) {
        mXCombo->addItem(shortMetricName(m), QVariant::fromValue(int(m)));
        mYCombo->addItem(shortMetricName(m), QVariant::fromValue(int(m)));
    }
    mXCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents); // never clip "Peak memory (%)"
    mYCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    mXCombo->setToolTip(tr("Metric on the horizontal axis"));
    mYCombo->setToolTip(tr("Metric on the vertical axis"));
    mCountLabel = new QLabel(this);
    // Takes only the room left after the axis pickers and the legend (narrow windows).
    mCountLabel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    mCountLabel->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    mCountLabel->installEventFilter(this); // re-fit the text on resize
    mLegend = new ParetoColourLegend(this);

    auto *bar = new QHBoxLayout;
    bar->setContentsMargins(6, 4, 6, 0);
    bar->setSpacing(6);
    auto *xl = new QLabel(tr("&X:"), this);
    xl->setBuddy(mXCombo);
    auto *yl = new QLabel(tr("&Y:"), this);
    yl->setBuddy(mYCombo);
    bar->addWidget(xl);
    bar->addWidget(mXCombo);
    bar->addSpacing(6);
    bar->addWidget(yl);
    bar->addWidget(mYCombo);
    bar->addStretch(1);
    mFrontButton = new QToolButton(this);
    mFrontButton->setText(tr("&Front"));
    mFrontButton->setToolTip(tr("Zoom to the plans on the Pareto front.\n"
                                "Wheel: zoom about the pointer · drag: zoom to a rectangle · "
                                "Shift+drag or middle drag: pan"));
    mResetButton = new QToolButton(this);
    mResetButton->setText(tr("&Reset"));
    mResetButton->setToolTip(tr("Show every plan again (Home, or a double click on empty space)"));
    mResetButton->setEnabled(false);
    bar->addWidget(mFrontButton);
    bar->addWidget(mResetButton);
    connect(mFrontButton, &QToolButton::clicked, this, [this] { zoomToFront(); });
    connect(mResetButton, &QToolButton::clicked, this, &ParetoChartView::resetZoom);
    // The colour legend and counts on their own line: next to the pickers the legend was clipped
    // at the window's default size.
    auto *legendRow = new QHBoxLayout;
    legendRow->setContentsMargins(6, 0, 6, 0);
    legendRow->setSpacing(6);
    legendRow->addWidget(mLegend);
    legendRow->addWidget(mCountLabel, 1);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(bar);
    layout->addLayout(legendRow);
    layout->addWidget(mView, 1);

    connect(mXCombo, &QComboBox::activated, this, [this](int i) {
        const Metric x = Metric(mXCombo->itemData(i).toInt());
        setAxes(x, x == mY ? mX : mY); // picking the other axis' metric swaps them
    });
    connect(mYCombo, &QComboBox::activated, this, [this](int i) {
        const Metric y = Metric(mYCombo->itemData(i).toInt());
        setAxes(y == mX ? mY : mX, y);
    });

    mXCombo->setCurrentIndex(int(mX));
    mYCombo->setCurrentIndex(int(mY));
    rebuild();
}

ParetoChartView::~ParetoChartView() = default;

QSize ParetoChartView::sizeHint() const
{
    return {760, 480};
}

QSize ParetoChartView::minimumSizeHint() const
{
    return {420, 280};
}

double ParetoChartView::plotValue(Metric metric, double value) const
{
    if (metric == Metric::Memory)
        return value * 100.0;
    if (metric == Metric::Time && mTimeInSeconds)
        return value / 1000.0;
    return value;
}

void ParetoChartView::fitAxisTitles()
{
    // The long title where the plot is long enough for it, else the short one ("Peak memory (%)"):
    // never a clipped "Peak memory (% of cap...".
    const QRectF plot = mChart->plotArea();
    const auto fit = [this](Metric m, double room, QValueAxis *axis) {
        const QFontMetrics fm(axis->titleFont());
        const bool seconds = m == Metric::Time && mTimeInSeconds;
        const QString tiny = m == Metric::Time ? (seconds ? QStringLiteral("T (s)") : QStringLiteral("T (ms)"))
            : m == Metric::Memory              ? QStringLiteral("M (%)")
                                               : QStringLiteral("B (CV)");
        QString text = axisTitle(m);
        for (const QString &shorter : {shortMetricName(m, seconds), tiny})
            if (fm.horizontalAdvance(text) > room - 12)
                text = shorter;
        if (axis->titleText() != text)
            axis->setTitleText(text);
    };
    fit(mX, plot.width(), mAxisX);
    fit(mY, plot.height(), mAxisY);
}

QString ParetoChartView::axisTitle(Metric metric) const
{
    if (metric == Metric::Time && mTimeInSeconds)
        return tr("Time per iteration (s)");
    return metricLabel(metric);
}

QRectF ParetoChartView::viewRange() const
{
    return QRectF(QPointF(mAxisX->min(), mAxisY->min()), QPointF(mAxisX->max(), mAxisY->max()));
}

QPointF ParetoChartView::valueAt(QPoint viewportPos) const
{
    return mChart->mapToValue(mChart->mapFromScene(mView->mapToScene(viewportPos)), mDominated[0]);
}

void ParetoChartView::applyRange(QRectF range)
{
    auto setAxis = [](QValueAxis *axis, double lo, double hi) {
        const double step = niceStep(hi - lo);
        // Fixed ticks while the range and the step change: a new range under the old step (or
        // the other way round) would lay out up to millions of dynamic grid lines for one paint.
        axis->setTickType(QValueAxis::TicksFixed);
        axis->setRange(lo, hi);
        axis->setTickAnchor(0.0);
        axis->setTickInterval(step);
        axis->setTickType(QValueAxis::TicksDynamic);
        axis->setMinorTickCount(1);
        axis->setLabelFormat(labelFormatForStep(step));
    };
    setAxis(mAxisX, range.left(), range.right());
    setAxis(mAxisY, range.top(), range.bottom());
    // 100 % capacity marker when memory is on an axis and visible.
    QList<QPointF> cap;
    if (mX == Metric::Memory && mAxisX->min() <= 100.0 && mAxisX->max() >= 100.0)
        cap = {QPointF(100.0, mAxisY->min()), QPointF(100.0, mAxisY->max())};
    else if (mY == Metric::Memory && mAxisY->min() <= 100.0 && mAxisY->max() >= 100.0)
        cap = {QPointF(mAxisX->min(), 100.0), QPointF(mAxisX->max(), 100.0)};
    mCapacityLine->replace(cap);
    mResetButton->setEnabled(mZoomed);
    updateCountLabel();
    emit viewRangeChanged();
}

void ParetoChartView::zoomTo(QRectF range)
{
    range = range.normalized();
    // Never narrower than a millionth of the whole range (nor a degenerate one).
    const double minW = std::max(mFullRange.width() * 1e-6, 1e-9);
    const double minH = std::max(mFullRange.height() * 1e-6, 1e-9);
    if (!std::isfinite(range.width()) || !std::isfinite(range.height()))
        return;
    if (range.width() < minW)
        range = QRectF(range.center().x() - minW / 2, range.top(), minW, range.height());
    if (range.height() < minH)
        range = QRectF(range.left(), range.center().y() - minH / 2, range.width(), minH);
    mZoomed = true;
    applyRange(range);
}

void ParetoChartView::zoomBy(double factor, QPointF centre)
{
    if (!(factor > 0.0) || !std::isfinite(factor))
        return;
    const QRectF r = viewRange();
    const QRectF next(
        QPointF(centre.x() - (centre.x() - r.left()) / factor, centre.y() - (centre.y() - r.top()) / factor),
        QPointF(centre.x() + (r.right() - centre.x()) / factor, centre.y() + (r.bottom() - centre.y()) / factor));
    if (next.width() >= mFullRange.width() && next.height() >= mFullRange.height())
        resetZoom(); // zoomed out past everything: show every plan
    else
        zoomTo(next);
}

void ParetoChartView::panByPixels(QPointF pixels)
{
    const QRectF area = mChart->plotArea();
    if (area.width() <= 0 || area.height() <= 0)
        return;
    const QRectF r = viewRange();
    const double dx = -pixels.x() / area.width() * r.width();
    const double dy = pixels.y() / area.height() * r.height();
    zoomTo(r.translated(dx, dy));
}

bool ParetoChartView::zoomToFront()
{
    double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
    for (const auto &p : mPoints) {
        if (!p.onFront)
            continue;
        const double x = plotValue(mX, p.metric(mX)), y = plotValue(mY, p.metric(mY));
        xlo = std::min(xlo, x);
        xhi = std::max(xhi, x);
        ylo = std::min(ylo, y);
        yhi = std::max(yhi, y);
    }
    if (xlo > xhi)
        return false;
    // Padded so the outermost markers are whole; a single plan gets a span around it.
    const double padX = std::max((xhi - xlo) * 0.08, std::max(std::abs(xhi) * 0.02, 1e-6));
    const double padY = std::max((yhi - ylo) * 0.08, std::max(std::abs(yhi) * 0.02, 1e-6));
    zoomTo(QRectF(QPointF(std::max(xlo - padX, 0.0), std::max(ylo - padY, 0.0)), QPointF(xhi + padX, yhi + padY)));
    return true;
}

void ParetoChartView::resetZoom()
{
    mZoomed = false;
    applyRange(mFullRange);
}

Metric ParetoChartView::colourMetric() const
{
    for (Metric m : AllMetrics) {
        if (m != mX && m != mY)
            return m;
    }
    return Metric::Balance;
}

void ParetoChartView::setPoints(QVector<PlanPoint> points, ViewPolicy view)
{
    mPoints = std::move(points);
    mTimeInSeconds = memx::ui::timeInSeconds(mPoints);
    const int timeIndex = int(Metric::Time);
    mXCombo->setItemText(timeIndex, shortMetricName(Metric::Time, mTimeInSeconds));
    mYCombo->setItemText(timeIndex, shortMetricName(Metric::Time, mTimeInSeconds));
    const bool keep
        = std::any_of(mPoints.begin(), mPoints.end(), [this](const PlanPoint &p) { return p.id == mSelected; });
    if (!keep)
        mSelected = 0;
    mHovered = 0;
    rebuild(view);
}

void ParetoChartView::setAxes(Metric x, Metric y)
{
    if (x == y) {
        for (Metric m : AllMetrics) {
            if (m != x) {
                y = m;
                break;
            }
        }
    }
    const bool changed = x != mX || y != mY;
    mX = x;
    mY = y;
    mXCombo->setCurrentIndex(int(x));
    mYCombo->setCurrentIndex(int(y));
    if (changed) {
        rebuild();
        emit axesChanged(mX, mY);
    }
}

void ParetoChartView::setSelectedPlan(quint32 id)
{
    const bool exists = std::any_of(mPoints.begin(), mPoints.end(), [id](const PlanPoint &p) { return p.id == id; });
    mSelected = exists ? id : 0;
    updateSelectionSeries();
}

int ParetoChartView::frontPointCount() const
{
    int n = 0;
    for (auto *s : mFront)
        n += int(s->count());
    return n;
}

int ParetoChartView::dominatedPointCount() const
{
    int n = 0;
    for (auto *s : mDominated)
        n += int(s->count());
    return n;
}

void ParetoChartView::rebuild(ViewPolicy view)
{
    const bool keepZoom = view == KeepView && mZoomed;
    const QRectF shown = viewRange();
    const Metric cm = colourMetric();
    // Ranges.
    double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo, clo = xlo, chi = -xlo;
    for (const auto &p : mPoints) {
        const double x = plotValue(mX, p.metric(mX)), y = plotValue(mY, p.metric(mY)), c = p.metric(cm);
        xlo = std::min(xlo, x);
        xhi = std::max(xhi, x);
        ylo = std::min(ylo, y);
        yhi = std::max(yhi, y);
        clo = std::min(clo, c);
        chi = std::max(chi, c);
    }
    const bool any = !mPoints.isEmpty();
    if (!any) {
        xlo = ylo = clo = 0.0;
        xhi = yhi = chi = 1.0;
    }

    // Points, bucketed by the colour metric.
    QList<QPointF> dom[ColourBuckets], front[ColourBuckets];
    const double cspan = chi - clo;
    for (const auto &p : mPoints) {
        const QPointF pt(plotValue(mX, p.metric(mX)), plotValue(mY, p.metric(mY)));
        int b = cspan > 0.0 ? int((p.metric(cm) - clo) / cspan * ColourBuckets) : 0;
        b = std::clamp(b, 0, ColourBuckets - 1);
        (p.onFront ? front[b] : dom[b]).append(pt);
    }
    for (int b = 0; b < ColourBuckets; ++b) {
        mDominated[b]->replace(dom[b]);
        mFront[b]->replace(front[b]);
    }

    // 2-D front of the shown axes (both minimised): sort by x, keep strictly improving y; draw as steps.
    QVector<int> order(mPoints.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [this](int a, int b) {
        const double xa = mPoints[a].metric(mX), xb = mPoints[b].metric(mX);
        return xa != xb ? xa < xb : mPoints[a].metric(mY) < mPoints[b].metric(mY);
    });
    QList<QPointF> steps;
    double bestY = std::numeric_limits<double>::infinity();
    for (int i : order) {
        const double y = plotValue(mY, mPoints[i].metric(mY));
        if (y < bestY) {
            const double x = plotValue(mX, mPoints[i].metric(mX));
            if (!steps.isEmpty())
                steps.append(QPointF(x, steps.back().y()));
            steps.append(QPointF(x, y));
            bestY = y;
        }
    }
    mStepLine->replace(steps);

    // Axes with units; the full range shows every plan, and a new rebuild shows it again.
    const auto [fxlo, fxhi] = paddedRange(xlo, xhi);
    const auto [fylo, fyhi] = paddedRange(ylo, yhi);
    mFullRange = QRectF(QPointF(fxlo, fylo), QPointF(fxhi, fyhi));
    fitAxisTitles();
    mFrontButton->setEnabled(std::any_of(mPoints.begin(), mPoints.end(), [](const PlanPoint &p) { return p.onFront; }));

    mLegend->setRange(cm, clo, chi, any);
    mZoomed = keepZoom;
    applyRange(keepZoom ? shown : mFullRange);
    updateSelectionSeries();
}

void ParetoChartView::updateCountLabel()
{
    const QLocale locale;
    const int nFront = int(std::count_if(mPoints.begin(), mPoints.end(), [](const PlanPoint &p) { return p.onFront; }));
    const QString zoom = mZoomed ? tr(" · zoomed") : QString();
    mCountFull = tr("%1 plans, %2 on the front%3").arg(locale.toString(mPoints.size())).arg(nFront).arg(zoom);
    mCountShort = tr("%1 on the front%2").arg(nFront).arg(zoom);
    mCountTiny = QStringLiteral("%1 \u2605%2").arg(nFront).arg(zoom); // the table's Pareto star
    fitCountLabel();
}

bool ParetoChartView::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == mCountLabel && event->type() == QEvent::Resize)
        fitCountLabel();
    return QWidget::eventFilter(watched, event);
}

void ParetoChartView::fitCountLabel()
{
    const QFontMetrics fm(mCountLabel->font());
    const int w = mCountLabel->contentsRect().width();
    QString text = mCountFull;
    if (fm.horizontalAdvance(text) > w)
        text = mCountShort;
    if (fm.horizontalAdvance(text) > w)
        text = mCountTiny;
    if (fm.horizontalAdvance(text) > w)
        text = fm.elidedText(mCountTiny, Qt::ElideRight, w);
    mCountLabel->setText(text);
    mCountLabel->setToolTip(mCountFull);
}

void ParetoChartView::updateSelectionSeries()
{
    QList<QPointF> sel;
    for (const auto &p : mPoints) {
        if (p.id == mSelected && mSelected != 0) {
            sel.append(QPointF(plotValue(mX, p.metric(mX)), plotValue(mY, p.metric(mY))));
            break;
        }
    }
    mSelectedSeries->replace(sel);
}

std::optional<quint32> ParetoChartView::planAt(QPoint viewportPos, int tolerancePx) const
{
    if (mPoints.isEmpty())
        return std::nullopt;
    const QRectF area = mChart->plotArea();
    const double xspan = mAxisX->max() - mAxisX->min();
    const double yspan = mAxisY->max() - mAxisY->min();
    if (area.width() <= 0 || area.height() <= 0 || xspan <= 0 || yspan <= 0)
        return std::nullopt;
    const QPointF chartPos = mChart->mapFromScene(mView->mapToScene(viewportPos));
    const double sx = area.width() / xspan, sy = area.height() / yspan; // pixels per unit
    const double px = chartPos.x(), py = chartPos.y();
    const double tol2 = double(tolerancePx) * tolerancePx;
    double best = std::numeric_limits<double>::infinity();
    std::optional<quint32> found;
    bool foundFront = false;
    for (const auto &p : mPoints) {
        const double dx = area.left() + (plotValue(mX, p.metric(mX)) - mAxisX->min()) * sx - px;
        const double dy = area.bottom() - (plotValue(mY, p.metric(mY)) - mAxisY->min()) * sy - py;
        const double d2 = dx * dx + dy * dy;
        if (d2 > tol2)
            continue;
        // Front points are drawn on top: prefer them at equal distance.
        if (d2 < best || (d2 == best && p.onFront && !foundFront)) {
            best = d2;
            found = p.id;
            foundFront = p.onFront;
        }
    }
    return found;
}

std::optional<QPoint> ParetoChartView::viewportPosOf(quint32 id) const
{
    for (const auto &p : mPoints) {
        if (p.id != id)
            continue;
        const QPointF value(plotValue(mX, p.metric(mX)), plotValue(mY, p.metric(mY)));
        const QPointF chartPos = mChart->mapToPosition(value, mDominated[0]);
        return mView->mapFromScene(mChart->mapToScene(chartPos));
    }
    return std::nullopt;
}

bool ParetoChartView::selectAt(QPoint viewportPos)
{
    const auto id = planAt(viewportPos);
    if (!id)
        return false;
    setSelectedPlan(*id);
    emit planSelected(*id);
    return true;
}

QString ParetoChartView::tooltipFor(const PlanPoint &p) const
{
    QString status;
    if (p.oom)
        status = tr("<br><span style='color:#c62828'><b>Out of memory</b> on at least one GPU</span>");
    else if (p.riskOfOom)
        status = tr("<br><span style='color:#b26a00'>Risk of OOM: close to capacity</span>");
    return tr("<b>Plan %1</b>%2<br>%3<br>Time: %4<br>Peak memory: %5<br>Imbalance: %6<br>Score: %7%8")
        .arg(p.id)
        .arg(p.onFront ? tr(" &mdash; on the Pareto front") : QString())
        .arg(p.summary.toHtmlEscaped())
        .arg(formatMetric(Metric::Time, p.timeMs), formatMetric(Metric::Memory, p.peakMemoryFraction),
             formatMetric(Metric::Balance, p.imbalance))
        .arg(p.score, 0, 'f', 4)
        .arg(status);
}

void ParetoChartView::hoverAt(QPoint viewportPos, QPoint globalPos)
{
    const auto id = planAt(viewportPos);
    const quint32 hovered = id.value_or(0);
    if (hovered == mHovered)
        return;
    mHovered = hovered;
    emit planHovered(hovered);
    if (!hovered) {
        QToolTip::hideText();
        return;
    }
    for (const auto &p : mPoints) {
        if (p.id == hovered) {
            QToolTip::showText(globalPos, tooltipFor(p), mView->viewport());
            break;
        }
    }
}

} // namespace memx::ui
