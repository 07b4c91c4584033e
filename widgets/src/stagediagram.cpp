#include "memx/ui/stagediagram.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>

namespace memx::ui {

namespace {

constexpr int Margin = 10;
constexpr int Gap = 28; // between columns, room for the arrow
constexpr int Pad = 8; // inside a column
constexpr int BoxSpacing = 6;

QString gpuList(const QList<int> &gpus)
{
    QStringList parts;
    for (int g : gpus)
        parts << QString::number(g);
    return parts.join(QLatin1Char(','));
}

QString replicaLabel(const ReplicaInfo &r)
{
    return QStringLiteral("%1:%2").arg(r.node, gpuList(r.gpus));
}

QString replicaDetail(const ReplicaInfo &r)
{
    return QStringLiteral("%1 \u00b7 mb %2").arg(r.device.isEmpty() ? r.vendor : r.device).arg(r.microBatch);
}

QString layersText(const StageInfo &s)
{
    if (s.layerCount <= 0)
        return QObject::tr("no transformer layers");
    return QObject::tr("layers %1\u2013%2 (%3)")
        .arg(s.firstLayer)
        .arg(s.firstLayer + s.layerCount - 1)
        .arg(s.layerCount);
}

QString parallelText(const StageInfo &s)
{
    const int tp = s.replicas.isEmpty() ? 1 : s.replicas.front().tp;
    const bool mixedTp
        = std::any_of(s.replicas.begin(), s.replicas.end(), [tp](const ReplicaInfo &r) { return r.tp != tp; });
    QString text = s.contextParallel > 1 ? QObject::tr("TP %1 \u00d7 CP %2 \u00d7 DP %3")
                                               .arg(mixedTp ? QStringLiteral("mixed") : QString::number(tp))
                                               .arg(s.contextParallel)
                                               .arg(s.replicas.size())
                                         : QObject::tr("TP %1 \u00d7 DP %2")
                                               .arg(mixedTp ? QStringLiteral("mixed") : QString::number(tp))
                                               .arg(s.replicas.size());
    if (s.virtualStages > 1)
        text += QObject::tr(" \u00b7 %1 chunks").arg(s.virtualStages);
    return text;
}

QString timeText(const StageInfo &s)
{
    return QObject::tr("%1 ms compute + %2 ms comm").arg(s.computeMs, 0, 'f', 1).arg(s.commMs, 0, 'f', 1);
}

bool hasRecompute(const StageInfo &s)
{
    const QString r = s.recompute.trimmed().toLower();
    return !r.isEmpty() && r != QLatin1String("none");
}

} // namespace

StageDiagram::StageDiagram(QWidget *parent)
    : QWidget(parent)
{
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
}

void StageDiagram::setStages(QVector<StageInfo> stages)
{
    mStages = std::move(stages);
    updateGeometry();
    update();
}

int StageDiagram::columnWidth() const
{
    const QFontMetrics fm(font());
    QFont bold = font();
    bold.setBold(true);
    const QFontMetrics bfm(bold);
    int w = 150;
    for (const auto &s : mStages) {
        w = std::max({w, fm.horizontalAdvance(layersText(s)), fm.horizontalAdvance(timeText(s)),
                      fm.horizontalAdvance(parallelText(s)), bfm.horizontalAdvance(tr("Stage %1").arg(s.index)) + 90});
        for (const auto &r : s.replicas)
            w = std::max({w, bfm.horizontalAdvance(replicaLabel(r)) + 16, fm.horizontalAdvance(replicaDetail(r)) + 16});
    }
    return std::min(w + 2 * Pad + 8, 340);
}

int StageDiagram::headerHeight() const
{
    const int lh = QFontMetrics(font()).height();
    return Pad + 4 * (lh + 2) + Pad; // title+badge, layers, TP x DP, times
}

int StageDiagram::boxHeight() const
{
    return 2 * QFontMetrics(font()).height() + 8;
}

QRect StageDiagram::stageRect(int index) const
{
    if (index < 0 || index >= mStages.size())
        return {};
    const int cw = columnWidth();
    const int h = std::max(height(), sizeHint().height()) - 2 * Margin;
    return QRect(Margin + index * (cw + Gap), Margin, cw, h);
}

int StageDiagram::stageAt(QPoint pos) const
{
    for (int i = 0; i < mStages.size(); ++i) {
        if (stageRect(i).contains(pos))
            return i;
    }
    return -1;
}

QSize StageDiagram::sizeHint() const
{
    const int n = std::max(1, int(mStages.size()));
    int maxDp = 1;
    for (const auto &s : mStages)
        maxDp = std::max(maxDp, int(s.replicas.size()));
    const int w = 2 * Margin + n * columnWidth() + (n - 1) * Gap;
    const int h = 2 * Margin + headerHeight() + maxDp * (boxHeight() + BoxSpacing) + Pad;
    return {w, h};
}

QSize StageDiagram::minimumSizeHint() const
{
    return {2 * Margin + columnWidth(), 2 * Margin + headerHeight() + boxHeight() + Pad};
}

void StageDiagram::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QFontMetrics fm(font());
    const int lh = fm.height();
    const QColor text = palette().color(QPalette::Text);
    QFont bold = font();
    bold.setBold(true);

    if (mStages.isEmpty()) {
        p.setPen(palette().color(QPalette::Mid));
        p.drawText(rect(), Qt::AlignCenter, tr("Select a plan to see its pipeline stages"));
        return;
    }

    for (int i = 0; i < mStages.size(); ++i) {
        const StageInfo &s = mStages[i];
        const QRect col = stageRect(i);
        // Column background.
        p.setPen(QPen(palette().color(QPalette::Mid), 1));
        p.setBrush(palette().color(QPalette::AlternateBase));
        p.drawRoundedRect(QRectF(col).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6);

        int y = col.top() + Pad;
        const int x = col.left() + Pad, w = col.width() - 2 * Pad;
        p.setFont(bold);
        p.setPen(text);
        p.drawText(QRect(x, y, w, lh), Qt::AlignLeft | Qt::AlignVCenter, tr("Stage %1").arg(s.index));
        p.setFont(font());
        if (hasRecompute(s)) {
            const QString badge = tr("recompute: %1").arg(s.recompute.trimmed().toLower());
            const int bw = std::min(fm.horizontalAdvance(badge) + 10, w / 2 + 30);
            const QRect br(x + w - bw, y, bw, lh);
            const bool full = s.recompute.trimmed().toLower().startsWith(QLatin1String("full"));
            p.setPen(Qt::NoPen);
            p.setBrush(full ? QColor(0xff, 0xcc, 0x80) : QColor(0xff, 0xf1, 0x9a));
            p.drawRoundedRect(br, lh / 2.0, lh / 2.0);
            p.setPen(QColor(0x5d, 0x40, 0x37));
            p.drawText(br, Qt::AlignCenter, fm.elidedText(badge, Qt::ElideRight, bw - 6));
        }
        y += lh + 2;
        p.setPen(text);
        for (const QString &line : {layersText(s), parallelText(s)}) {
            p.drawText(QRect(x, y, w, lh), Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(line, Qt::ElideRight, w));
            y += lh + 2;
        }
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(QRect(x, y, w, lh), Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(timeText(s), Qt::ElideRight, w));
        y = col.top() + headerHeight();

        // Replica boxes: vendor-tinted fill, vendor strip on the left.
        for (const auto &r : s.replicas) {
            const QColor vc = vendorColor(r.vendor);
            QColor fill = vc;
            fill.setAlpha(40);
            const QRect box(x, y, w, boxHeight());
            p.setPen(QPen(vc.darker(110), 1));
            p.setBrush(fill);
            p.drawRoundedRect(QRectF(box).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
            p.fillRect(QRect(box.left() + 1, box.top() + 1, 5, box.height() - 2), vc);
            p.setFont(bold);
            p.setPen(text);
            const QRect t1(box.left() + 12, box.top() + 4, box.width() - 16, lh);
            p.drawText(t1, Qt::AlignLeft | Qt::AlignVCenter,
                       QFontMetrics(bold).elidedText(replicaLabel(r), Qt::ElideMiddle, t1.width()));
            p.setFont(font());
            const QRect t2 = t1.translated(0, lh);
            p.drawText(t2, Qt::AlignLeft | Qt::AlignVCenter,
                       fm.elidedText(replicaDetail(r), Qt::ElideRight, t2.width()));
            y += boxHeight() + BoxSpacing;
        }

        // Arrow to the next stage.
        if (i + 1 < mStages.size()) {
            const double ay = col.top() + headerHeight() / 2.0;
            const double x0 = col.right() + 5, x1 = col.right() + Gap - 4;
            p.setPen(QPen(text, 1.5));
            p.drawLine(QPointF(x0, ay), QPointF(x1 - 6, ay));
            QPainterPath head;
            head.moveTo(x1, ay);
            head.lineTo(x1 - 8, ay - 5);
            head.lineTo(x1 - 8, ay + 5);
            head.closeSubpath();
            p.fillPath(head, text);
        }
    }
}

} // namespace memx::ui
