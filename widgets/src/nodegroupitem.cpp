#include "memx/ui/nodegroupitem.h"

#include "memx/ui/clusterdocument.h"
#include "memx/ui/vendorstyle.h"

#include <QApplication>
#include <QFontMetricsF>
#include <QPainter>
#include <QPalette>
#include <QStyleOptionGraphicsItem>

#include <cmath>

namespace memx::ui {

namespace {
constexpr qreal kRadius = 8;

QString scaleUpName(memx::ScaleUpKind kind)
{
    switch (kind) {
    case memx::ScaleUpKind::NvLink:
        return QStringLiteral("NVLink");
    case memx::ScaleUpKind::NvSwitch:
        return QStringLiteral("NVSwitch");
    case memx::ScaleUpKind::InfinityFabric:
        return QStringLiteral("Infinity Fabric");
    case memx::ScaleUpKind::RoCE:
        return QStringLiteral("RoCE");
    case memx::ScaleUpKind::Hccs:
        return QStringLiteral("HCCS");
    case memx::ScaleUpKind::MluLink:
        return QStringLiteral("MLU-Link");
    case memx::ScaleUpKind::BLink:
        return QStringLiteral("BLink");
    case memx::ScaleUpKind::Pcie:
        return QStringLiteral("PCIe");
    }
    return QString();
}

QString formatBandwidth(double gbps)
{
    return gbps >= 100 ? QString::number(gbps, 'f', 0) : QString::number(gbps, 'g', 3);
}
} // namespace

NodeGroupItem::NodeGroupItem(const ClusterDocument *document, int index)
    : mDocument(document)
    , mIndex(index)
{
    setFlag(ItemIsSelectable);
    setAcceptHoverEvents(true);
    setZValue(1);
    refresh();
}

void NodeGroupItem::setIndex(int index)
{
    mIndex = index;
    refresh();
}

void NodeGroupItem::refresh()
{
    const memx::NodeGroup &g = mDocument->cluster().groups.at(size_t(mIndex));
    prepareGeometryChange();
    setPos(g.x, g.y);
    const memx::GpuSpec &d = mDocument->cluster().deviceOf(g);
    setToolTip(QObject::tr("%1: %2 node(s) x %3 x %4\nDrag to move, Shift-drag to another node to connect, "
                           "right-click for more")
                   .arg(QString::fromStdString(g.name))
                   .arg(g.count)
                   .arg(g.gpusPerNode)
                   .arg(QString::fromStdString(d.name)));
    update();
}

QRectF NodeGroupItem::boundingRect() const
{
    const memx::NodeGroup &g = mDocument->cluster().groups.at(size_t(mIndex));
    const qreal stack = kStackOffset * std::min(g.count - 1, kMaxShadows);
    return QRectF(-3, -3, kWidth + stack + 6, kHeight + stack + 6);
}

QPainterPath NodeGroupItem::shape() const
{
    QPainterPath p;
    p.addRoundedRect(boundingRect().adjusted(3, 3, -3, -3), kRadius, kRadius);
    return p;
}

void NodeGroupItem::paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *)
{
    const memx::Cluster &c = mDocument->cluster();
    const memx::NodeGroup &g = c.groups.at(size_t(mIndex));
    const memx::GpuSpec &d = c.deviceOf(g);
    const QColor fill = vendorColor(d.vendor);
    const QColor text = vendorTextColor(d.vendor);
    const bool selected = option->state & QStyle::State_Selected;
    painter->setRenderHint(QPainter::Antialiasing);

    // Stack: shadow boxes behind the front box, bottom-right.
    const int shadows = std::min(g.count - 1, kMaxShadows);
    for (int s = shadows; s >= 1; --s) {
        painter->setPen(QPen(fill.darker(160), 1));
        painter->setBrush(fill.darker(100 + 25 * s));
        painter->drawRoundedRect(QRectF(kStackOffset * s, kStackOffset * s, kWidth, kHeight), kRadius, kRadius);
    }
    const QRectF box(0, 0, kWidth, kHeight);
    painter->setPen(selected ? QPen(QApplication::palette().color(QPalette::Highlight), 3)
                             : QPen(fill.darker(150), 1.2));
    painter->setBrush(fill);
    painter->drawRoundedRect(box, kRadius, kRadius);

    const QRectF inner = box.adjusted(10, 6, -10, -6);
    QFont title = QApplication::font();
    title.setBold(true);
    title.setPointSizeF(title.pointSizeF() * 1.1);
    QFont body = QApplication::font();
    const QFontMetricsF ft(title), fb(body);
    painter->setPen(text);

    // Line 1: name (left) and "x N" for stacks (right).
    QString count;
    if (g.count > 1)
        count = QStringLiteral("\u00d7 %1").arg(g.count);
    painter->setFont(title);
    const qreal countWidth = count.isEmpty() ? 0 : ft.horizontalAdvance(count) + 8;
    painter->drawText(QRectF(inner.left(), inner.top(), inner.width() - countWidth, ft.height()),
                      Qt::AlignLeft | Qt::AlignVCenter,
                      ft.elidedText(QString::fromStdString(g.name), Qt::ElideRight, inner.width() - countWidth));
    if (!count.isEmpty())
        painter->drawText(QRectF(inner.left(), inner.top(), inner.width(), ft.height()),
                          Qt::AlignRight | Qt::AlignVCenter, count);

    // Lines 2-4: GPUs, memory, intra-node link.
    painter->setFont(body);
    const double memGiB = d.memoryGiB.value_or(0);
    const memx::Link intra = c.intraLink(g);
    const QStringList lines = {
        QStringLiteral("%1 \u00d7 %2").arg(g.gpusPerNode).arg(QString::fromStdString(d.name)),
        QObject::tr("%1 GiB/GPU \u00b7 %2 GiB/node").arg(memGiB, 0, 'f', 0).arg(memGiB * g.gpusPerNode, 0, 'f', 0),
        QObject::tr("%1 %2 GB/s%3")
            .arg(g.intraLink ? QObject::tr("intra-node") : scaleUpName(d.scaleUpKind))
            .arg(formatBandwidth(intra.bandwidthGBps))
            .arg(g.intraLink ? QStringLiteral(" *") : QString()),
    };
    qreal y = inner.top() + ft.height() + 2;
    for (const QString &line : lines) {
        painter->drawText(QRectF(inner.left(), y, inner.width(), fb.height()), Qt::AlignLeft | Qt::AlignVCenter,
                          fb.elidedText(line, Qt::ElideRight, inner.width()));
        y += fb.height();
    }
}

// --- LinkItem ---

LinkItem::LinkItem(const ClusterDocument *document, int overrideIndex, QPointF from, QPointF to)
    : mDocument(document)
    , mIndex(overrideIndex)
{
    setFlag(ItemIsSelectable);
    setZValue(2); // above the boxes: the curve starts at their edges, the label must stay readable
    setEnds(from, to);
    const memx::LinkOverride &o = mDocument->cluster().network.overrides.at(size_t(mIndex));
    setToolTip(QObject::tr("Link %1 \u2194 %2: %3\nSelect to edit, Delete to remove")
                   .arg(QString::fromStdString(o.a), QString::fromStdString(o.b), label()));
}

namespace {
/// Point where the ray from the centre of a box towards `towards` leaves the box.
QPointF boxEdge(QPointF centre, QPointF towards)
{
    const QPointF d = towards - centre;
    const qreal hw = NodeGroupItem::kWidth / 2 + 2, hh = NodeGroupItem::kHeight / 2 + 2;
    const qreal tx = std::abs(d.x()) > 1e-9 ? hw / std::abs(d.x()) : 1e9;
    const qreal ty = std::abs(d.y()) > 1e-9 ? hh / std::abs(d.y()) : 1e9;
    const qreal t = std::min(tx, ty);
    return t >= 1 ? centre : centre + d * t;
}
} // namespace

void LinkItem::setEnds(QPointF fromCentre, QPointF toCentre)
{
    prepareGeometryChange();
    const QPointF d = toCentre - fromCentre;
    const qreal len = std::hypot(d.x(), d.y());
    // Sideways offset of the curve's middle: at least half a box height + half a label (so the
    // label of two neighbouring boxes sits clear of both), growing with distance
    // (centres 520 apart -> 0.3 * 520 - 60 = 96: clears a box of half-height 43 in between).
    const qreal bow = std::max<qreal>(NodeGroupItem::kHeight / 2 + 16, 0.3 * len - 60);
    const QPointF normal = len > 0 ? QPointF(d.y() / len, -d.x() / len) : QPointF();
    const QPointF mid = (fromCentre + toCentre) / 2;
    mControl = mid + normal * (2 * bow); // a quadratic curve passes half way to its control point
    mMid = mid + normal * bow;
    mFrom = boxEdge(fromCentre, bow > 0 ? mControl : toCentre);
    mTo = boxEdge(toCentre, bow > 0 ? mControl : fromCentre);
}

QPainterPath LinkItem::path() const
{
    QPainterPath p(mFrom);
    p.quadTo(mControl, mTo);
    return p;
}

QString LinkItem::label() const
{
    const memx::Link &l = mDocument->cluster().network.overrides.at(size_t(mIndex)).link;
    return QObject::tr("%1 GB/s \u00b7 %2 \u00b5s").arg(formatBandwidth(l.bandwidthGBps)).arg(l.latencyUs, 0, 'g', 3);
}

QRectF LinkItem::labelRect() const
{
    const QFontMetricsF fm(QApplication::font());
    const qreal w = fm.horizontalAdvance(label()) + 12, h = fm.height() + 4;
    return QRectF(mMid.x() - w / 2, mMid.y() - h / 2, w, h);
}

QRectF LinkItem::boundingRect() const
{
    return path().controlPointRect().adjusted(-6, -6, 6, 6).united(labelRect().adjusted(-3, -3, 3, 3));
}

QPainterPath LinkItem::shape() const
{
    QPainterPathStroker stroker;
    stroker.setWidth(10);
    QPainterPath p = stroker.createStroke(path());
    p.addRect(labelRect());
    return p;
}

void LinkItem::paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *)
{
    const bool selected = option->state & QStyle::State_Selected;
    const QColor highlight = QApplication::palette().color(QPalette::Highlight);
    painter->setRenderHint(QPainter::Antialiasing);
    painter->setPen(
        QPen(selected ? highlight : QColor(0x45, 0x4f, 0x5c), selected ? 3.5 : 2.2, Qt::SolidLine, Qt::RoundCap));
    painter->setBrush(Qt::NoBrush);
    painter->drawPath(path());
    const QRectF r = labelRect();
    painter->setPen(QPen(selected ? highlight : QColor(0x45, 0x4f, 0x5c), 1));
    painter->setBrush(QColor(255, 255, 255, 235));
    painter->drawRoundedRect(r, 4, 4);
    painter->setPen(Qt::black);
    painter->setFont(QApplication::font());
    painter->drawText(r, Qt::AlignCenter, label());
}

} // namespace memx::ui
