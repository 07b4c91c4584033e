#include "memx/ui/pipelinetimeline.h"

#include "memx/cost/costmodel.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace memx::ui {

namespace {

using Kind = memx::PipelineOp::Kind;

constexpr int Margin = 8;
constexpr int LabelPad = 8; // between the stage labels and the plot
constexpr int TickLength = 4;
constexpr int MinRowHeight = 18; // minimumSizeHint per stage
constexpr int RowHeight = 24; // sizeHint per stage
constexpr double MaxRowHeight = 36;
constexpr double MergeBelowPx = 1.0; // operations narrower than this merge into one box per pixel
constexpr double SendSpacingPx = 3.0; // sends closer than this on one boundary draw once
constexpr double MinSendBoxPx = 3.0; // sends are drawn when the average box is at least this wide
constexpr int LegendSwatch = 10;
constexpr int LegendGap = 14;

const QColor ForwardColour(0x3b, 0x78, 0xd8);
const QColor BackwardColour(0x2e, 0x9a, 0x57);
const QColor RecomputeColour(0xe8, 0x86, 0x1a);
const QColor SendColour(0x80, 0x80, 0x80);
const QColor BoxText(0xff, 0xff, 0xff);

/// Idle (bubble) track colour: a grey taken from the palette so it reads in light and dark themes.
QColor idleColour(const QPalette &pal)
{
    QColor c = pal.color(QPalette::Mid);
    c.setAlpha(60);
    return c;
}

QColor mix(double f, double b, double r)
{
    const double sum = f + b + r;
    if (sum <= 0)
        return BackwardColour;
    auto ch = [&](int cf, int cb, int cr) { return int(std::lround((f * cf + b * cb + r * cr) / sum)); };
    return QColor(ch(ForwardColour.red(), BackwardColour.red(), RecomputeColour.red()),
                  ch(ForwardColour.green(), BackwardColour.green(), RecomputeColour.green()),
                  ch(ForwardColour.blue(), BackwardColour.blue(), RecomputeColour.blue()));
}

/// ms with as many decimals as a span of `spanMs` needs to show.
QString fmtMs(double ms, double spanMs)
{
    return QString::number(ms, 'f', spanMs >= 1 ? 1 : spanMs >= 0.1 ? 2 : 3);
}

/// "1234.5 ms", or "12.35 s" from 10 s on.
QString fmtDuration(double ms)
{
    if (ms >= 10000)
        return QObject::tr("%1 s").arg(ms / 1000.0, 0, 'f', 2);
    return QObject::tr("%1 ms").arg(ms, 0, 'f', 1);
}

/// Axis ticks: the smallest 1-2-5 step whose labels (unit included) do not overlap.
struct Ticks {
    double stepMs = 0;
    double divisor = 1; ///< 1000 when labelled in s
    int decimals = 0;
    QString unit;
    QString label(double ms) const { return QStringLiteral("%1 %2").arg(ms / divisor, 0, 'f', decimals).arg(unit); }
};

Ticks chooseTicks(double makespanMs, double widthPx, const QFontMetrics &fm)
{
    Ticks t;
    const bool seconds = makespanMs >= 10000;
    t.divisor = seconds ? 1000.0 : 1.0;
    t.unit = seconds ? QStringLiteral("s") : QStringLiteral("ms");
    const double span = std::max(makespanMs / t.divisor, 1e-9);
    double step = std::pow(10.0, std::floor(std::log10(span)) - 3);
    for (int guard = 0; guard < 64; ++guard) {
        for (double mult : {1.0, 2.0, 5.0}) {
            const double s = step * mult;
            t.stepMs = s * t.divisor;
            t.decimals = s >= 1 ? 0 : int(std::ceil(-std::log10(s) - 1e-9));
            const double px = widthPx * t.stepMs / std::max(makespanMs, 1e-12);
            const int needed = std::max(fm.horizontalAdvance(t.label(0)), fm.horizontalAdvance(t.label(makespanMs)));
            if (px >= needed + 12 || s >= span)
                return t;
        }
        step *= 10;
    }
    return t;
}

struct LegendEntry {
    QString label;
    QColor colour;
    bool line = false; ///< drawn as a line (the sends), else a filled swatch
    bool hatched = false; ///< the idle track
};

QVector<LegendEntry> legendEntries(const QPalette &pal, bool sendsHidden)
{
    return {{QObject::tr("Forward"), ForwardColour},
            {QObject::tr("Backward"), BackwardColour},
            {QObject::tr("Recompute (start of backward)"), RecomputeColour},
            {sendsHidden ? QObject::tr("P2P send (not drawn: boxes too narrow)") : QObject::tr("P2P send"), SendColour,
             true},
            {QObject::tr("Idle (bubble)"), idleColour(pal), false, true}};
}

int legendEntryWidth(const LegendEntry &e, const QFontMetrics &fm)
{
    return (e.line ? 2 * LegendSwatch : LegendSwatch) + 4 + fm.horizontalAdvance(e.label) + LegendGap;
}

/// "S0 · h100-sxm ×4" (devices in first-appearance order) per stage, from the estimate's GPUs.
QStringList defaultLabels(const memx::PlanEstimate &e)
{
    QStringList labels;
    for (size_t i = 0; i < e.stages.size(); ++i) {
        std::vector<std::pair<std::string, int>> devices;
        for (const memx::GpuMemory &g : e.gpus) {
            if (g.stage != int(i))
                continue;
            auto it = std::find_if(devices.begin(), devices.end(), [&](const auto &d) { return d.first == g.device; });
            if (it == devices.end())
                devices.emplace_back(g.device, 1);
            else
                ++it->second;
        }
        QStringList parts;
        for (const auto &[device, n] : devices)
            parts << QStringLiteral("%1 \u00d7%2").arg(QString::fromStdString(device)).arg(n);
        labels << (parts.isEmpty() ? QObject::tr("Stage %1").arg(i)
                                   : QStringLiteral("S%1 \u00b7 %2").arg(i).arg(parts.join(QStringLiteral(" + "))));
    }
    return labels;
}

} // namespace

PipelineTimeline::PipelineTimeline(QWidget *parent)
    : QWidget(parent)
{
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void PipelineTimeline::setEstimate(const memx::PlanEstimate &estimate, QStringList stageLabels, int virtualStages)
{
    clear();
    try {
        mSchedule = memx::oneFOneBSchedule(estimate);
    } catch (const std::invalid_argument &e) {
        mError = QString::fromStdString(e.what());
        update();
        return;
    }
    mEstimatePipelineMs = estimate.pipelineMs;
    mVirtualStages = std::max(1, virtualStages);
    mLabels = stageLabels.size() == mSchedule.stages ? std::move(stageLabels) : defaultLabels(estimate);
    updateGeometry();
    update();
}

void PipelineTimeline::clear()
{
    mSchedule = {};
    mLabels.clear();
    mError.clear();
    mEstimatePipelineMs = 0;
    mVirtualStages = 1;
    updateGeometry();
    update();
}

void PipelineTimeline::setAxisSpanMs(double ms)
{
    mAxisSpanMs = std::isfinite(ms) ? std::max(0.0, ms) : 0.0;
    update();
}

double PipelineTimeline::axisSpanMs() const
{
    return std::max(mAxisSpanMs, mSchedule.makespanMs);
}

QString PipelineTimeline::caption() const
{
    if (mSchedule.ops.empty())
        return {};
    const double makespan = mSchedule.makespanMs;
    QString text = tr("1F1B \u00b7 %1 stages \u00d7 %2 micro-batches \u00b7 makespan %3 \u00b7 bubble %4 %")
                       .arg(mSchedule.stages)
                       .arg(mSchedule.microBatches)
                       .arg(fmtDuration(makespan))
                       .arg(mSchedule.bubbleFraction() * 100.0, 0, 'f', 1);
    if (std::abs(makespan - mEstimatePipelineMs) <= 5e-4 * std::max(makespan, mEstimatePipelineMs))
        text += tr(" (= the estimate's pipeline time)");
    else
        text += tr(" \u00b7 the estimate's pipeline %1 (it counts the sends as blocking)")
                    .arg(fmtDuration(mEstimatePipelineMs));
    if (mVirtualStages > 1)
        text += tr(" \u00b7 interleaved v=%1 drawn as 1F1B").arg(mVirtualStages);
    return text;
}

int PipelineTimeline::legendHeight(int width) const
{
    const QFontMetrics fm(font());
    int rows = 1, x = 0;
    for (const LegendEntry &e : legendEntries(palette(), true)) { // the longer label: room for both
        const int w = legendEntryWidth(e, fm);
        if (x > 0 && x + w - LegendGap > width) {
            ++rows;
            x = 0;
        }
        x += w;
    }
    return rows * (fm.height() + 2);
}

int PipelineTimeline::captionHeight(int width) const
{
    QFont bold = font();
    bold.setBold(true);
    const QFontMetrics bfm(bold);
    const QRect box = bfm.boundingRect(QRect(0, 0, std::max(1, width), 1 << 20), Qt::TextWordWrap, caption());
    return std::max(box.height(), bfm.height()) + 4;
}

int PipelineTimeline::chromeHeight(int widgetWidth) const
{
    const int lh = QFontMetrics(font()).height();
    const int w = widgetWidth - 2 * Margin;
    // Caption and legend wrapped at that width, gap, axis ticks and labels.
    return 2 * Margin + captionHeight(w) + legendHeight(w) + 6 + TickLength + lh + 4;
}

PipelineTimeline::Layout PipelineTimeline::layout() const
{
    Layout l;
    const QFontMetrics fm(font());
    const int lh = fm.height();
    const QRectF r = QRectF(rect()).adjusted(Margin, Margin, -Margin, -Margin);
    l.caption = QRectF(r.left(), r.top(), r.width(), captionHeight(int(r.width())));
    l.legend = QRectF(r.left(), l.caption.bottom(), r.width(), legendHeight(int(r.width())));

    int labelW = 0;
    for (const QString &s : mLabels)
        labelW = std::max(labelW, fm.horizontalAdvance(s));
    labelW = std::min(labelW, int(std::max(60.0, r.width() * 0.3)));
    // Room right of the plot for half of the last tick label.
    const double rightPad = fm.horizontalAdvance(QStringLiteral("0000.0 ms")) / 2.0;
    const double top = l.legend.bottom() + 6;
    const double axisH = TickLength + lh + 4;
    const double rowsH = std::max(0.0, r.bottom() - axisH - top);
    const int p = std::max(1, mSchedule.stages);
    l.rowHeight = std::min(MaxRowHeight, rowsH / p);
    const double left = r.left() + labelW + LabelPad;
    l.plot = QRectF(left, top, std::max(1.0, r.right() - rightPad - left), l.rowHeight * p);
    l.labels = QRectF(r.left(), top, labelW, l.plot.height());
    l.axis = QRectF(l.plot.left(), l.plot.bottom(), l.plot.width(), axisH);
    const double span = axisSpanMs();
    l.pxPerMs = span > 0 ? l.plot.width() / span : 0.0;
    return l;
}

QRectF PipelineTimeline::boxRect(const Layout &l, int stage, double startMs, double endMs) const
{
    const double pad = std::min(3.0, l.rowHeight * 0.15);
    return QRectF(l.plot.left() + startMs * l.pxPerMs, l.plot.top() + stage * l.rowHeight + pad,
                  (endMs - startMs) * l.pxPerMs, l.rowHeight - 2 * pad);
}

int PipelineTimeline::stageAtY(const Layout &l, double y) const
{
    if (l.rowHeight <= 0 || y < l.plot.top() || y >= l.plot.bottom())
        return -1;
    return std::clamp(int((y - l.plot.top()) / l.rowHeight), 0, mSchedule.stages - 1);
}

QRectF PipelineTimeline::plotArea() const
{
    return layout().plot;
}

QRectF PipelineTimeline::opRect(int index) const
{
    if (index < 0 || size_t(index) >= mSchedule.ops.size())
        return {};
    const memx::PipelineOp &op = mSchedule.ops[size_t(index)];
    return boxRect(layout(), op.stage, op.startMs, op.endMs);
}

int PipelineTimeline::opAt(QPoint pos) const
{
    if (mSchedule.ops.empty())
        return -1;
    const Layout l = layout();
    const int stage = stageAtY(l, pos.y());
    if (stage < 0 || l.pxPerMs <= 0 || pos.x() < l.plot.left() || pos.x() > l.plot.right())
        return -1;
    const double t = (pos.x() - l.plot.left()) / l.pxPerMs;
    const size_t n = 2 * size_t(mSchedule.microBatches);
    const auto first = mSchedule.ops.begin() + std::ptrdiff_t(size_t(stage) * n);
    const auto last = first + std::ptrdiff_t(n);
    // Operations of a stage are in time order and do not overlap: the last one starting at or before t.
    auto it = std::upper_bound(first, last, t, [](double v, const memx::PipelineOp &op) { return v < op.startMs; });
    if (it == first)
        return -1;
    --it;
    if (t > it->endMs)
        return -1;
    return int(it - mSchedule.ops.begin());
}

QString PipelineTimeline::opToolTip(int index) const
{
    if (index < 0 || size_t(index) >= mSchedule.ops.size())
        return {};
    const memx::PipelineOp &op = mSchedule.ops[size_t(index)];
    const double d = op.durationMs();
    QString text = tr("stage %1 \u00b7 micro-batch %2 \u00b7 %3 %4\u2013%5 ms")
                       .arg(op.stage)
                       .arg(op.microBatch)
                       .arg(op.kind == Kind::Forward ? tr("forward") : tr("backward"))
                       .arg(fmtMs(op.startMs, d), fmtMs(op.endMs, d));
    if (op.recomputeMs > 0)
        text += tr(" (recompute %1 ms)").arg(fmtMs(op.recomputeMs, op.recomputeMs));
    return text;
}

QString PipelineTimeline::toolTipAt(QPoint pos) const
{
    const int k = opAt(pos);
    if (k >= 0)
        return opToolTip(k);
    const Layout l = layout();
    const int stage = stageAtY(l, pos.y());
    if (mSchedule.ops.empty() || stage < 0 || l.pxPerMs <= 0 || pos.x() < l.plot.left() || pos.x() > l.plot.right())
        return {};
    // An idle gap: between the operations around t (or the iteration's start / end).
    const double t = (pos.x() - l.plot.left()) / l.pxPerMs;
    if (t > mSchedule.makespanMs) // right of a shorter plan's end on a shared axis
        return {};
    double from = 0, to = mSchedule.makespanMs;
    const size_t n = 2 * size_t(mSchedule.microBatches);
    for (size_t i = size_t(stage) * n; i < (size_t(stage) + 1) * n; ++i) {
        const memx::PipelineOp &op = mSchedule.ops[i];
        if (op.endMs <= t)
            from = op.endMs;
        else if (op.startMs >= t) {
            to = op.startMs;
            break;
        }
    }
    const double idle = mSchedule.idleMs(stage);
    return tr("stage %1 \u00b7 idle %2\u2013%3 ms \u00b7 the stage idles %4 ms (%5 %) per iteration")
        .arg(stage)
        .arg(fmtMs(from, to - from), fmtMs(to, to - from))
        .arg(idle, 0, 'f', 1)
        .arg(mSchedule.makespanMs > 0 ? 100.0 * idle / mSchedule.makespanMs : 0.0, 0, 'f', 1);
}

QSize PipelineTimeline::sizeHint() const
{
    return {720, chromeHeight(720) + std::max(1, mSchedule.stages) * RowHeight};
}

QSize PipelineTimeline::minimumSizeHint() const
{
    return {300, chromeHeight(300) + std::max(1, mSchedule.stages) * MinRowHeight};
}

bool PipelineTimeline::event(QEvent *e)
{
    if (e->type() == QEvent::ToolTip) {
        auto *he = static_cast<QHelpEvent *>(e);
        const QString text = toolTipAt(he->pos());
        if (text.isEmpty()) {
            QToolTip::hideText();
            e->ignore();
        } else {
            QToolTip::showText(he->globalPos(), text, this);
        }
        return true;
    }
    return QWidget::event(e);
}

void PipelineTimeline::paintLegend(QPainter &p, const QRectF &area, bool sendsHidden) const
{
    const QFontMetrics fm(font());
    const int rowH = fm.height() + 2;
    double x = area.left(), y = area.top();
    for (const LegendEntry &e : legendEntries(palette(), sendsHidden)) {
        const int w = legendEntryWidth(e, fm);
        if (x > area.left() && x + w - LegendGap > area.right()) {
            x = area.left();
            y += rowH;
        }
        const double cy = y + rowH / 2.0;
        if (e.line) {
            p.setPen(QPen(e.colour, 1.5));
            p.drawLine(QPointF(x, cy + 3), QPointF(x + 2 * LegendSwatch, cy - 3));
        } else {
            const QRectF sw(x, cy - LegendSwatch / 2.0, LegendSwatch, LegendSwatch);
            p.fillRect(sw, e.colour);
            if (e.hatched)
                p.fillRect(sw, QBrush(palette().color(QPalette::Mid), Qt::BDiagPattern));
        }
        const double tx = x + (e.line ? 2 * LegendSwatch : LegendSwatch) + 4;
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QRectF(tx, y, fm.horizontalAdvance(e.label) + 2, rowH), Qt::AlignVCenter, e.label);
        x += w;
    }
}

void PipelineTimeline::paintAxis(QPainter &p, const Layout &l) const
{
    const QFontMetrics fm(font());
    const double span = axisSpanMs();
    const Ticks t = chooseTicks(span, l.plot.width(), fm);
    const QColor text = palette().color(QPalette::Text);
    QColor grid = palette().color(QPalette::Mid);
    grid.setAlpha(70);
    p.setPen(QPen(text, 1));
    p.drawLine(QPointF(l.plot.left(), l.plot.bottom() + 0.5), QPointF(l.plot.right(), l.plot.bottom() + 0.5));
    const int n = t.stepMs > 0 ? int(std::floor(span / t.stepMs + 1e-9)) : 0;
    for (int i = 0; i <= n; ++i) {
        const double ms = i * t.stepMs;
        const double x = l.plot.left() + ms * l.pxPerMs;
        p.setPen(QPen(grid, 1));
        p.drawLine(QPointF(x, l.plot.top()), QPointF(x, l.plot.bottom()));
        p.setPen(QPen(text, 1));
        p.drawLine(QPointF(x, l.plot.bottom()), QPointF(x, l.plot.bottom() + TickLength));
        const QString label = t.label(ms);
        const double w = fm.horizontalAdvance(label) + 2;
        p.drawText(QRectF(x - w / 2, l.plot.bottom() + TickLength + 1, w, fm.height()), Qt::AlignCenter, label);
    }
}

void PipelineTimeline::paintOps(QPainter &p, const Layout &l, int stage)
{
    const size_t n = 2 * size_t(mSchedule.microBatches);
    const size_t begin = size_t(stage) * n, end = begin + n;
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() - 1));
    const QFontMetrics sfm(small);
    const bool numbers = l.rowHeight - 4 >= sfm.height() - 2;
    p.setFont(small);
    // Operations narrower than MergeBelowPx add their share of each pixel column they cover
    // (forward, backward, recompute, in px) to mColumns; each column is painted once below.
    const QRectF row = boxRect(l, stage, 0, 0);
    const size_t columns = size_t(std::ceil(l.plot.width())) + 1;
    mColumns.assign(columns, {0.0, 0.0, 0.0});
    size_t firstCol = columns, lastCol = 0;
    for (size_t i = begin; i < end; ++i) {
        const memx::PipelineOp &op = mSchedule.ops[i];
        const QRectF box = boxRect(l, stage, op.startMs, op.endMs);
        const bool fwd = op.kind == Kind::Forward;
        if (box.width() < MergeBelowPx) {
            const double x0 = box.left() - l.plot.left(), x1 = box.right() - l.plot.left();
            const double rcShare = op.durationMs() > 0 ? op.recomputeMs / op.durationMs() : 0.0;
            for (size_t c = size_t(std::max(0.0, x0)); c < columns && double(c) < x1; ++c) {
                const double cover = std::min(x1, c + 1.0) - std::max(x0, double(c));
                mColumns[c][fwd ? 0 : 1] += cover * (1 - rcShare);
                mColumns[c][2] += cover * rcShare;
                firstCol = std::min(firstCol, c);
                lastCol = std::max(lastCol, c);
            }
            continue;
        }
        const QColor c = fwd ? ForwardColour : BackwardColour;
        p.fillRect(box, c);
        const double rc = std::min(op.recomputeMs * l.pxPerMs, box.width());
        if (rc >= 0.5)
            p.fillRect(QRectF(box.left(), box.top(), rc, box.height()), RecomputeColour);
        if (box.width() >= 5) {
            p.setPen(QPen(c.darker(150), 1));
            p.drawRect(box.adjusted(0.5, 0.5, -0.5, -0.5));
        }
        if (numbers) {
            const QString num = QString::number(op.microBatch);
            if (sfm.horizontalAdvance(num) + 4 <= box.width()) {
                p.setPen(BoxText);
                p.drawText(box, Qt::AlignCenter, num);
            }
        }
    }
    // A column's colour is its mix of kinds, its opacity the share of it that is busy (the rest
    // is idle and lets the track show).
    for (size_t c = firstCol; c <= lastCol && c < columns; ++c) {
        const auto &[f, b, r] = mColumns[c];
        const double busy = f + b + r;
        if (busy <= 0)
            continue;
        QColor colour = mix(f, b, r);
        colour.setAlphaF(float(std::min(1.0, busy)));
        p.fillRect(QRectF(l.plot.left() + double(c), row.top(), 1.0, row.height()), colour);
    }
    p.setFont(font());
}

void PipelineTimeline::paintRows(QPainter &p, const Layout &l)
{
    const QFontMetrics fm(font());
    const QColor idle = idleColour(palette());
    const QBrush hatch(palette().color(QPalette::Mid), Qt::BDiagPattern);
    // Row labels: every k-th when rows are lower than the text.
    const int every = std::max(1, int(std::ceil((fm.height() - 2) / std::max(l.rowHeight, 1.0))));
    p.setPen(palette().color(QPalette::Text));
    for (int i = 0; i < mSchedule.stages; ++i) {
        const QRectF track = boxRect(l, i, 0, mSchedule.makespanMs);
        p.fillRect(track, idle);
        if (l.rowHeight >= 8)
            p.fillRect(track, hatch);
        if (i % every == 0) {
            const QString label = i < mLabels.size() ? mLabels[i] : tr("Stage %1").arg(i);
            const QRectF lr(l.labels.left(), l.plot.top() + i * l.rowHeight, l.labels.width(),
                            std::max(l.rowHeight, double(fm.height())));
            p.drawText(lr, Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(label, Qt::ElideRight, int(lr.width())));
        }
    }
    for (int i = 0; i < mSchedule.stages; ++i)
        paintOps(p, l, i);
}

bool PipelineTimeline::sendsVisible(const Layout &l) const
{
    // Rows high enough for the segments between them, and boxes on average wide enough that the
    // sends do not turn into a grey wash.
    return mSchedule.stages > 1 && l.rowHeight >= 6 && l.plot.width() / (2.0 * mSchedule.microBatches) >= MinSendBoxPx;
}

void PipelineTimeline::paintSends(QPainter &p, const Layout &l)
{
    mSendLines.clear();
    const int m = mSchedule.microBatches;
    for (int i = 0; i + 1 < mSchedule.stages; ++i) {
        const double d = mSchedule.p2pMs[size_t(i)];
        const QRectF upper = boxRect(l, i, 0, 0), lower = boxRect(l, i + 1, 0, 0);
        double lastF = -1e9, lastB = -1e9;
        for (int j = 0; j < m; ++j) {
            // Activation i -> i + 1 after the forward; gradient i + 1 -> i after the backward.
            const double fe = mSchedule.ops[size_t(mSchedule.opIndex(i, j, Kind::Forward))].endMs;
            const double be = mSchedule.ops[size_t(mSchedule.opIndex(i + 1, j, Kind::Backward))].endMs;
            const double fx = l.plot.left() + fe * l.pxPerMs, bx = l.plot.left() + be * l.pxPerMs;
            if (fx - lastF >= SendSpacingPx) {
                mSendLines.append(QLineF(fx, upper.bottom(), fx + d * l.pxPerMs, lower.top()));
                lastF = fx;
            }
            if (bx - lastB >= SendSpacingPx) {
                mSendLines.append(QLineF(bx, lower.top(), bx + d * l.pxPerMs, upper.bottom()));
                lastB = bx;
            }
        }
    }
    p.setPen(QPen(SendColour, 1));
    p.drawLines(mSendLines);
}

void PipelineTimeline::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    const QColor text = palette().color(QPalette::Text);
    if (mSchedule.ops.empty()) {
        p.setPen(mError.isEmpty() ? palette().color(QPalette::PlaceholderText) : text);
        p.drawText(rect().adjusted(Margin, Margin, -Margin, -Margin), Qt::AlignCenter | Qt::TextWordWrap,
                   mError.isEmpty() ? tr("Select a plan to see its 1F1B timeline") : tr("No timeline: %1").arg(mError));
        return;
    }
    const Layout l = layout();
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(text);
    p.drawText(l.caption, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, caption());
    p.setFont(font());
    paintLegend(p, l.legend, !sendsVisible(l) && mSchedule.stages > 1);
    paintAxis(p, l); // grid lines under the rows
    paintRows(p, l);
    if (sendsVisible(l)) {
        p.setRenderHint(QPainter::Antialiasing);
        paintSends(p, l);
    }
}

} // namespace memx::ui
