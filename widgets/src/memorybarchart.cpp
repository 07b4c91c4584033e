#include "memx/ui/memorybarchart.h"

#include <QEvent>
#include <QHash>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace memx::ui {

namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
constexpr double GroupGap = 0.8; // extra space between node groups, in bar slots
const QColor OomColour(0xd3, 0x2f, 0x2f);
const QColor RiskColour(0xf5, 0x9e, 0x0b);
const QColor CapacityColour(0x21, 0x21, 0x21);

QString gib(double bytes)
{
    return QStringLiteral("%1 GiB").arg(bytes / GiB, 0, 'f', bytes / GiB < 10.0 ? 2 : 1);
}

/// One legend entry: a filled square (memory component), a line (capacity) or an outlined square.
struct LegendItem {
    enum Kind { Fill, Line, Outline } kind;
    QColor colour;
    QString label;
};
constexpr int LegendLineLength = 16;
constexpr int LegendRowPad = 6;

std::vector<LegendItem> legendItems()
{
    std::vector<LegendItem> items;
    for (int c = 0; c < MemoryBarChart::ComponentCount; ++c)
        items.push_back({LegendItem::Fill, MemoryBarChart::componentColour(c), MemoryBarChart::componentName(c)});
    items.push_back({LegendItem::Line, CapacityColour, MemoryBarChart::tr("Capacity")});
    items.push_back({LegendItem::Outline, OomColour, MemoryBarChart::tr("OOM")});
    items.push_back({LegendItem::Outline, RiskColour, MemoryBarChart::tr("Risk of OOM")});
    return items;
}

/// Where each legend item goes when the items flow left to right and wrap to a new row at
/// `width` (a narrow pane gets two or three rows instead of clipped labels).
struct LegendFlow {
    std::vector<QPoint> at; ///< x offset and row of every item
    int rows = 1;
};
LegendFlow flowLegend(const std::vector<LegendItem> &items, const QFontMetrics &fm, int width)
{
    const int sw = fm.height() - 4;
    LegendFlow f;
    int x = 0;
    for (const LegendItem &it : items) {
        const int w = (it.kind == LegendItem::Line ? LegendLineLength : sw) + 4 + fm.horizontalAdvance(it.label);
        if (x > 0 && x + w > width) {
            x = 0;
            ++f.rows;
        }
        f.at.push_back(QPoint(x, f.rows - 1));
        x += w + 12;
    }
    return f;
}

} // namespace

QString MemoryBarChart::componentName(int component)
{
    switch (component) {
    case Parameters:
        return tr("Parameters");
    case Gradients:
        return tr("Gradients");
    case Optimizer:
        return tr("Optimizer");
    case Activations:
        return tr("Activations");
    case Overhead:
        return tr("Overhead");
    default:
        return {};
    }
}

QColor MemoryBarChart::componentColour(int component)
{
    // Colour-blind-safe qualitative set (Okabe-Ito inspired), distinct from the vendor colours.
    switch (component) {
    case Parameters:
        return QColor(0x00, 0x72, 0xb2);
    case Gradients:
        return QColor(0x56, 0xb4, 0xe9);
    case Optimizer:
        return QColor(0xcc, 0x79, 0xa7);
    case Activations:
        return QColor(0xe6, 0x9f, 0x00);
    case Overhead:
        return QColor(0x99, 0x99, 0x99);
    default:
        return Qt::black;
    }
}

double MemoryBarChart::componentBytes(const GpuMemoryBar &bar, int component)
{
    switch (component) {
    case Parameters:
        return bar.paramsBytes;
    case Gradients:
        return bar.gradsBytes;
    case Optimizer:
        return bar.optimizerBytes;
    case Activations:
        return bar.activationBytes;
    case Overhead:
        return bar.overheadBytes;
    default:
        return 0.0;
    }
}

MemoryBarChart::MemoryBarChart(QWidget *parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
    mCaption = composeCaption();
}

void MemoryBarChart::setBars(QVector<GpuMemoryBar> bars)
{
    // Stable grouping: vendors in first-appearance order, nodes in first-appearance order within them.
    QHash<QString, int> vendorOrder, nodeOrder;
    for (const auto &b : bars) {
        vendorOrder.insert(b.vendor, vendorOrder.value(b.vendor, int(vendorOrder.size())));
        nodeOrder.insert(b.node, nodeOrder.value(b.node, int(nodeOrder.size())));
    }
    std::stable_sort(bars.begin(), bars.end(), [&](const GpuMemoryBar &a, const GpuMemoryBar &b) {
        const int va = vendorOrder.value(a.vendor), vb = vendorOrder.value(b.vendor);
        if (va != vb)
            return va < vb;
        return nodeOrder.value(a.node) < nodeOrder.value(b.node);
    });
    mBars = std::move(bars);
    mGroupStart.clear();
    for (int i = 0; i < mBars.size(); ++i) {
        if (i == 0 || mBars[i].node != mBars[i - 1].node)
            mGroupStart.append(i);
    }
    mGroupStart.append(int(mBars.size()));
    mCaption = composeCaption();
    invalidateGeometry();
    updateGeometry();
    update();
}

double MemoryBarChart::maxUtilisation() const
{
    double m = 0.0;
    for (const auto &b : mBars)
        m = std::max(m, b.utilisation());
    return m;
}

int MemoryBarChart::oomCount() const
{
    return int(std::count_if(mBars.begin(), mBars.end(), [](const GpuMemoryBar &b) { return b.oom; }));
}

int MemoryBarChart::riskCount() const
{
    return int(std::count_if(mBars.begin(), mBars.end(), [](const GpuMemoryBar &b) { return b.riskOfOom && !b.oom; }));
}

QString MemoryBarChart::composeCaption() const
{
    if (mBars.isEmpty())
        return tr("No plan selected");
    int worst = 0;
    for (int i = 1; i < mBars.size(); ++i) {
        if (mBars[i].utilisation() > mBars[worst].utilisation())
            worst = i;
    }
    QString text = tr("Max utilisation %1 % (%2/%3)  \u00b7  Imbalance CV %4")
                       .arg(maxUtilisation() * 100.0, 0, 'f', 1)
                       .arg(mBars[worst].node)
                       .arg(mBars[worst].gpuIndex)
                       .arg(imbalanceCv(), 0, 'f', 3);
    const int oom = oomCount(), risk = riskCount();
    if (oom > 0)
        text += oom == 1 ? tr("  \u00b7  1 GPU out of memory") : tr("  \u00b7  %1 GPUs out of memory").arg(oom);
    if (risk > 0)
        text += tr("  \u00b7  %1 at risk of OOM").arg(risk);
    return text;
}

void MemoryBarChart::setAxisFloorGiB(double gib)
{
    mAxisFloorGiB = std::max(0.0, gib);
    invalidateGeometry();
    update();
}

double MemoryBarChart::axisMaxGiB() const
{
    return geometry().maxGiB;
}

const MemoryBarChart::Geometry &MemoryBarChart::geometry() const
{
    // Keyed by the size too: a hidden widget's resize() delivers its resizeEvent only when shown.
    if (!mGeometry || mGeometrySize != size()) {
        mGeometry = computeGeometry();
        mGeometrySize = size();
    }
    return *mGeometry;
}

void MemoryBarChart::changeEvent(QEvent *event)
{
    if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange)
        invalidateGeometry();
    QWidget::changeEvent(event);
}

MemoryBarChart::Geometry MemoryBarChart::computeGeometry() const
{
    Geometry g;
    const QFontMetrics fm(font());
    const int lineH = fm.height();
    const QRect r = rect().adjusted(8, 6, -8, -6);
    // The caption wraps at its " · " separators rather than clip in a narrow chart (up to 3 lines).
    // In a short chart the legend goes first, then the wrapping (the plot keeps MinPlotHeight).
    QFont bold = font();
    bold.setBold(true);
    const QRect wrapped = QFontMetrics(bold).boundingRect(QRect(0, 0, std::max(1, r.width()), 4 * lineH),
                                                          Qt::TextWordWrap, captionText());
    const int labelsH = 2 * lineH + 12;
    const int legendH = flowLegend(legendItems(), fm, r.width()).rows * (lineH + LegendRowPad);
    int captionH = std::min(wrapped.height(), 3 * lineH);
    const auto plotRoom
        = [&](int caption, int legend) { return r.height() - caption - 6 - legend - lineH - 6 - labelsH; };
    g.showLegend = plotRoom(captionH, legendH) >= MinPlotHeight;
    if (!g.showLegend && plotRoom(captionH, 0) < MinPlotHeight)
        captionH = lineH;
    g.wrapCaption = captionH > lineH;
    g.caption = QRect(r.left(), r.top(), r.width(), captionH + 4);
    g.legend = QRect(r.left(), g.caption.bottom() + 2, r.width(), g.showLegend ? legendH : 0);

    double top = std::max(1.0, mAxisFloorGiB);
    for (const auto &b : mBars)
        top = std::max({top, b.capacityBytes / GiB, b.usedBytes() / GiB});
    top *= 1.06;
    const double raw = top / 5.0;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double norm = raw / mag;
    g.stepGiB = (norm < 1.5 ? 1.0 : norm < 3.0 ? 2.0 : norm < 7.0 ? 5.0 : 10.0) * mag;
    g.maxGiB = std::ceil(top / g.stepGiB) * g.stepGiB;

    const int axisW = lineH + 6 + fm.horizontalAdvance(QString::number(g.maxGiB, 'f', g.stepGiB < 1 ? 1 : 0)) + 6;
    g.plot = QRect(r.left() + axisW, g.legend.bottom() + lineH + 6, r.width() - axisW,
                   r.bottom() - labelsH - (g.legend.bottom() + lineH + 6));
    g.labels = QRect(g.plot.left(), g.plot.bottom() + 1, g.plot.width(), labelsH);

    const int n = int(mBars.size());
    const int groups = std::max(0, int(mGroupStart.size()) - 1);
    const double units = n + GroupGap * std::max(0, groups - 1);
    g.slot = units > 0 ? g.plot.width() / units : 0.0;
    g.centre.resize(n);
    for (int gi = 0; gi < groups; ++gi) {
        for (int i = mGroupStart[gi]; i < mGroupStart[gi + 1]; ++i)
            g.centre[i] = g.plot.left() + g.slot * (i + gi * GroupGap + 0.5);
    }
    return g;
}

QRect MemoryBarChart::barRect(int index) const
{
    if (index < 0 || index >= mBars.size())
        return {};
    const Geometry &g = geometry();
    const double w = std::min(g.slot * 0.62, 56.0);
    const double h = std::min(mBars[index].usedBytes() / GiB, g.maxGiB) / g.maxGiB * g.plot.height();
    return QRectF(g.centre[index] - w / 2, g.plot.bottom() - h, w, h).toRect();
}

int MemoryBarChart::barAt(QPoint pos) const
{
    const Geometry &g = geometry();
    if (pos.y() < g.plot.top() || pos.y() > g.labels.bottom())
        return -1;
    for (int i = 0; i < mBars.size(); ++i) {
        if (std::abs(pos.x() - g.centre[i]) <= g.slot / 2)
            return i;
    }
    return -1;
}

QSize MemoryBarChart::sizeHint() const
{
    const int n = std::max(8, int(mBars.size()));
    return {std::clamp(90 + n * 34, 560, 1200), 360};
}

QSize MemoryBarChart::minimumSizeHint() const
{
    return {200, 220};
}

void MemoryBarChart::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const Geometry &g = geometry();
    const QFontMetrics fm(font());
    const QColor text = palette().color(QPalette::Text);
    const QColor faint = palette().color(QPalette::Mid);

    // Caption.
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(oomCount() > 0 ? OomColour : text);
    if (g.wrapCaption)
        p.drawText(g.caption, Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap, captionText());
    else
        p.drawText(g.caption, Qt::AlignLeft | Qt::AlignVCenter,
                   QFontMetrics(bold).elidedText(captionText(), Qt::ElideRight, g.caption.width()));
    p.setFont(font());

    // Legend: components, capacity, OOM and risk outlines, wrapped over as many rows as needed
    // (left out of a chart too short for it: the bars' tooltips name every component).
    if (g.showLegend) {
        const std::vector<LegendItem> items = legendItems();
        const LegendFlow flow = flowLegend(items, fm, g.legend.width());
        const int sw = fm.height() - 4;
        const int rowH = fm.height() + LegendRowPad;
        for (size_t i = 0; i < items.size(); ++i) {
            const LegendItem &it = items[i];
            int x = g.legend.left() + flow.at[i].x();
            const int top = g.legend.top() + flow.at[i].y() * rowH;
            const int ly = top + rowH / 2;
            switch (it.kind) {
            case LegendItem::Fill:
                p.fillRect(QRect(x, ly - sw / 2, sw, sw), it.colour);
                x += sw + 4;
                break;
            case LegendItem::Line:
                p.setPen(QPen(it.colour, 2));
                p.drawLine(x, ly, x + LegendLineLength, ly);
                x += LegendLineLength + 4;
                break;
            case LegendItem::Outline:
                p.setPen(QPen(it.colour, 2));
                p.setBrush(Qt::NoBrush);
                p.drawRect(QRect(x, ly - sw / 2, sw, sw));
                x += sw + 4;
                break;
            }
            p.setPen(text);
            p.drawText(QRect(x, top, fm.horizontalAdvance(it.label) + 2, rowH), Qt::AlignVCenter, it.label);
        }
    }

    // Y axis: grid, labels in GiB, rotated title.
    const auto yOf = [&](double gibValue) { return g.plot.bottom() - gibValue / g.maxGiB * g.plot.height(); };
    for (double v = 0.0; v <= g.maxGiB + 1e-9; v += g.stepGiB) {
        const double y = yOf(v);
        p.setPen(QPen(faint, v == 0.0 ? 1.0 : 0.5));
        p.drawLine(QPointF(g.plot.left(), y), QPointF(g.plot.right(), y));
        p.setPen(text);
        const QString label = QString::number(v, 'f', g.stepGiB < 1 ? 1 : 0);
        p.drawText(QRectF(g.plot.left() - 60 - 4, y - fm.height() / 2.0, 60, fm.height()),
                   Qt::AlignRight | Qt::AlignVCenter, label);
    }
    p.save();
    p.translate(g.caption.left() + fm.ascent(), g.plot.center().y());
    p.rotate(-90);
    const QString longTitle = tr("Memory per GPU (GiB)");
    const QString yTitle = fm.horizontalAdvance(longTitle) <= g.plot.height() ? longTitle : tr("GiB");
    p.drawText(QRect(-g.plot.height() / 2, -fm.ascent(), g.plot.height(), fm.height()), Qt::AlignCenter, yTitle);
    p.restore();

    if (mBars.isEmpty()) {
        p.setPen(faint);
        p.drawText(g.plot, Qt::AlignCenter, tr("Select a plan to see its per-GPU memory"));
        return;
    }

    // Bars.
    const double barW = std::min(g.slot * 0.62, 56.0);
    const double capHalf = std::min(g.slot * 0.45, 40.0);
    for (int i = 0; i < mBars.size(); ++i) {
        const GpuMemoryBar &b = mBars[i];
        const double cx = g.centre[i];
        double acc = 0.0;
        for (int c = 0; c < ComponentCount; ++c) {
            const double bytes = std::max(0.0, componentBytes(b, c));
            if (bytes <= 0.0)
                continue;
            const double y0 = yOf(std::min(acc / GiB, g.maxGiB));
            const double y1 = yOf(std::min((acc + bytes) / GiB, g.maxGiB));
            p.fillRect(QRectF(cx - barW / 2, y1, barW, y0 - y1), componentColour(c));
            acc += bytes;
        }
        const QRectF full(cx - barW / 2, yOf(std::min(acc / GiB, g.maxGiB)), barW,
                          yOf(0) - yOf(std::min(acc / GiB, g.maxGiB)));
        if (b.oom || b.riskOfOom) {
            p.setPen(QPen(b.oom ? OomColour : RiskColour, 2.5));
            p.setBrush(Qt::NoBrush);
            p.drawRect(full.adjusted(-1, -1, 1, 0));
        }
        if (b.capacityBytes > 0.0) {
            const double cy = yOf(std::min(b.capacityBytes / GiB, g.maxGiB));
            p.setPen(QPen(CapacityColour, 2));
            p.drawLine(QPointF(cx - capHalf, cy), QPointF(cx + capHalf, cy));
        }
        if (b.oom) {
            const double topY = std::min(full.top(), yOf(std::min(b.capacityBytes / GiB, g.maxGiB)));
            QFont small = font();
            small.setBold(true);
            small.setPointSizeF(font().pointSizeF() * 0.8);
            p.setFont(small);
            p.setPen(OomColour);
            p.drawText(QRectF(cx - g.slot / 2 - 4, topY - fm.height() - 1, g.slot + 8, fm.height()),
                       Qt::AlignHCenter | Qt::AlignBottom, tr("OOM"));
            p.setFont(font());
        }
        // GPU index under the bar (skipped when slots are too narrow to read).
        const QString idx = QString::number(b.gpuIndex);
        if (g.slot >= fm.horizontalAdvance(idx) + 2) {
            p.setPen(text);
            p.drawText(QRectF(cx - g.slot / 2, g.labels.top() + 2, g.slot, fm.height()), Qt::AlignCenter, idx);
        }
    }

    // Node groups: vendor strip and "node · device" label, elided to the group width.
    for (int gi = 0; gi + 1 < mGroupStart.size(); ++gi) {
        const int first = mGroupStart[gi], last = mGroupStart[gi + 1] - 1;
        const double left = g.centre[first] - g.slot / 2 + 1, right = g.centre[last] + g.slot / 2 - 1;
        const double stripY = g.labels.top() + fm.height() + 4;
        p.fillRect(QRectF(left, stripY, right - left, 4), vendorColor(mBars[first].vendor));
        QString label = mBars[first].node;
        const int w = int(right - left + g.slot * GroupGap * 0.8);
        // The device only when it fits: an elided node name is worse than no device (tooltips have it).
        if (!mBars[first].device.isEmpty()
            && fm.horizontalAdvance(label + QStringLiteral(" \u00b7 ") + mBars[first].device) <= w)
            label += QStringLiteral(" \u00b7 ") + mBars[first].device;
        p.setPen(text);
        p.drawText(QRectF((left + right) / 2 - w / 2.0, stripY + 6, w, fm.height()), Qt::AlignCenter,
                   fm.elidedText(label, Qt::ElideMiddle, w));
    }
}

QString MemoryBarChart::tooltipFor(int index) const
{
    const GpuMemoryBar &b = mBars[index];
    QString tip = tr("<b>%1/%2</b> %3 (%4)")
                      .arg(b.node.toHtmlEscaped())
                      .arg(b.gpuIndex)
                      .arg(b.device.toHtmlEscaped(), b.vendor.toHtmlEscaped());
    tip += b.stage >= 0 ? tr(", stage %1").arg(b.stage) : tr(", idle");
    tip += QStringLiteral("<table>");
    for (int c = ComponentCount - 1; c >= 0; --c) {
        tip += QStringLiteral("<tr><td><span style='color:%1'>\u25a0</span> %2</td><td align='right'>%3</td></tr>")
                   .arg(componentColour(c).name(), componentName(c), gib(componentBytes(b, c)));
    }
    tip += QStringLiteral("</table>");
    tip += tr("Used %1 of %2 (%3 %)")
               .arg(gib(b.usedBytes()), gib(b.capacityBytes))
               .arg(b.utilisation() * 100.0, 0, 'f', 1);
    if (b.oom)
        tip += tr("<br><b style='color:#d32f2f'>Out of memory</b>");
    else if (b.riskOfOom)
        tip += tr("<br><b style='color:#b26a00'>Risk of OOM</b>");
    return tip;
}

bool MemoryBarChart::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        const int i = barAt(help->pos());
        if (i >= 0)
            QToolTip::showText(help->globalPos(), tooltipFor(i), this);
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(event);
}

void MemoryBarChart::mousePressEvent(QMouseEvent *event)
{
    const int i = barAt(event->position().toPoint());
    if (event->button() == Qt::LeftButton && i >= 0)
        emit gpuClicked(mBars[i].node, mBars[i].gpuIndex);
    QWidget::mousePressEvent(event);
}

} // namespace memx::ui
