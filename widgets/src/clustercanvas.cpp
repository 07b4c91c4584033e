#include "memx/ui/clustercanvas.h"

#include "memx/io/formats.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/nodegroupitem.h"
#include "memx/ui/vendorstyle.h"

#include <QApplication>
#include <QContextMenuEvent>
#include <QGraphicsLineItem>
#include <QGraphicsScene>
#include <QMenu>
#include <QMimeData>
#include <QMouseEvent>
#include <QScrollBar>
#include <QUndoStack>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <limits>

namespace memx::ui {

namespace {
constexpr double kZoomStep = 1.2;
constexpr double kMinZoom = 0.1, kMaxZoom = 4.0;
constexpr qreal kGrid = 10; ///< node positions snap to this grid while dragging

qreal snap(qreal v)
{
    return std::round(v / kGrid) * kGrid;
}
} // namespace

ClusterCanvas::ClusterCanvas(ClusterDocument *document, QWidget *parent)
    : QGraphicsView(parent)
    , mDocument(document)
    , mScene(new QGraphicsScene(this))
{
    setScene(mScene);
    setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    setDragMode(QGraphicsView::RubberBandDrag);
    setRubberBandSelectionMode(Qt::IntersectsItemShape);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setResizeAnchor(QGraphicsView::AnchorViewCenter);
    setViewportUpdateMode(QGraphicsView::FullViewportUpdate); // the legend is drawn in view coordinates
    setAcceptDrops(true);
    setFocusPolicy(Qt::StrongFocus);
    setMinimumSize(320, 150); // the centre splitter must never clip it (a clipped view fits a size it does not show)
    setAutoFit(true);

    connect(mScene, &QGraphicsScene::selectionChanged, this, [this] {
        if (!mRebuildingLinks)
            emit selectionChanged();
    });
    connect(mDocument, &ClusterDocument::clusterReset, this, [this] {
        rebuild();
        setAutoFit(true);
        fitToView();
    });
    connect(mDocument, &ClusterDocument::nodeGroupAdded, this, &ClusterCanvas::onGroupAdded);
    connect(mDocument, &ClusterDocument::nodeGroupRemoved, this, &ClusterCanvas::onGroupRemoved);
    connect(mDocument, &ClusterDocument::nodeGroupChanged, this, &ClusterCanvas::onGroupChanged);
    connect(mDocument, &ClusterDocument::networkChanged, this, [this] {
        rebuildLinks();
        viewport()->update();
    });
    rebuild();
}

ClusterCanvas::~ClusterCanvas()
{
    // The scene dies with us; its selection changes while items go must not reach observers.
    disconnect(mScene, nullptr, this, nullptr);
}

// --- observing the document ---

void ClusterCanvas::rebuild()
{
    for (LinkItem *l : std::as_const(mLinks))
        delete l;
    mLinks.clear();
    for (NodeGroupItem *n : std::as_const(mNodes))
        delete n;
    mNodes.clear();
    for (int i = 0; i < int(mDocument->cluster().groups.size()); ++i) {
        auto *item = new NodeGroupItem(mDocument, i);
        mScene->addItem(item);
        mNodes << item;
    }
    rebuildLinks();
    updateSceneRect();
}

void ClusterCanvas::rebuildLinks()
{
    // Rebuilt lines keep their selection; the deleted-and-reselected line is no selection change
    // (it used to tell the Properties dock "nothing selected" in between, which switched it to
    // the default network and moved the keyboard focus there: the next keystrokes after Enter
    // in a link's bandwidth edited the default latency).
    const QVector<int> wasSelected = selectedLinks();
    const QVector<int> groupsBefore = selectedGroups();
    mRebuildingLinks = true;
    for (LinkItem *l : std::as_const(mLinks))
        delete l;
    mLinks.clear();
    const auto &overrides = mDocument->cluster().network.overrides;
    for (int i = 0; i < int(overrides.size()); ++i) {
        const int a = mDocument->groupIndexOf(overrides[size_t(i)].a);
        const int b = mDocument->groupIndexOf(overrides[size_t(i)].b);
        // Overrides between two nodes of the same group have no line to draw; the property panel
        // lists them. Ends that name no group exist only transiently during a rename.
        if (a < 0 || b < 0 || a == b || a >= mNodes.size() || b >= mNodes.size())
            continue;
        auto *item = new LinkItem(mDocument, i, mNodes[a]->centre(), mNodes[b]->centre());
        mScene->addItem(item);
        item->setSelected(wasSelected.contains(i));
        mLinks << item;
    }
    mRebuildingLinks = false;
    if (selectedLinks() != wasSelected || selectedGroups() != groupsBefore)
        emit selectionChanged();
}

void ClusterCanvas::onGroupAdded(int index)
{
    auto *item = new NodeGroupItem(mDocument, index);
    mScene->addItem(item);
    mNodes.insert(index, item);
    for (int i = index + 1; i < mNodes.size(); ++i)
        mNodes[i]->setIndex(i);
    rebuildLinks();
    updateSceneRect();
}

void ClusterCanvas::onGroupRemoved(int index)
{
    delete mNodes.takeAt(index);
    for (int i = index; i < mNodes.size(); ++i)
        mNodes[i]->setIndex(i);
    rebuildLinks();
    updateSceneRect();
}

void ClusterCanvas::onGroupChanged(int index)
{
    if (index < 0 || index >= mNodes.size())
        return;
    mNodes[index]->refresh();
    for (LinkItem *l : std::as_const(mLinks)) {
        const memx::LinkOverride &o = mDocument->cluster().network.overrides.at(size_t(l->overrideIndex()));
        const int a = mDocument->groupIndexOf(o.a), b = mDocument->groupIndexOf(o.b);
        if (a >= 0 && b >= 0 && (a == index || b == index))
            l->setEnds(mNodes[a]->centre(), mNodes[b]->centre());
    }
    if (mDrag != Drag::Move)
        updateSceneRect();
}

void ClusterCanvas::updateSceneRect()
{
    // Generous margins so boxes can be dragged outwards and the legend never hides them.
    QRectF r = mScene->itemsBoundingRect();
    if (r.isEmpty())
        r = QRectF(0, 0, 600, 400);
    mScene->setSceneRect(r.adjusted(-400, -300, 400, 300));
}

// --- selection ---

QVector<int> ClusterCanvas::selectedGroups() const
{
    QVector<int> out;
    for (const NodeGroupItem *n : mNodes)
        if (n->isSelected())
            out << n->index();
    return out;
}

QVector<int> ClusterCanvas::selectedLinks() const
{
    QVector<int> out;
    for (const LinkItem *l : mLinks)
        if (l->isSelected())
            out << l->overrideIndex();
    std::sort(out.begin(), out.end());
    return out;
}

void ClusterCanvas::selectGroup(int index, bool clearOthers)
{
    if (clearOthers)
        mScene->clearSelection();
    if (index >= 0 && index < mNodes.size()) {
        mNodes[index]->setSelected(true);
        ensureVisible(mNodes[index], 20, 20);
    }
}

void ClusterCanvas::selectLink(int overrideIndex, bool clearOthers)
{
    if (clearOthers)
        mScene->clearSelection();
    for (LinkItem *l : std::as_const(mLinks))
        if (l->overrideIndex() == overrideIndex)
            l->setSelected(true);
}

void ClusterCanvas::selectAllItems()
{
    const QSignalBlocker block(mScene);
    for (QGraphicsItem *item : mScene->items())
        if (item->flags() & QGraphicsItem::ItemIsSelectable)
            item->setSelected(true);
    emit selectionChanged();
}

void ClusterCanvas::deleteSelection()
{
    const QVector<int> groups = selectedGroups();
    const QVector<int> links = selectedLinks();
    if (groups.isEmpty() && links.isEmpty())
        return;
    QUndoStack *stack = mDocument->undoStack();
    stack->beginMacro(tr("Delete selection"));
    if (!links.isEmpty())
        mDocument->removeLinkOverrides(links);
    if (!groups.isEmpty())
        mDocument->removeNodeGroups(groups);
    stack->endMacro();
}

// --- editing actions ---

int ClusterCanvas::dropGpu(const QMimeData *mime, QPointF scenePos)
{
    if (!mime || !mime->hasFormat(QLatin1String(kGpuMimeType)))
        return -1;
    const std::string id = mime->data(QLatin1String(kGpuMimeType)).toStdString();
    const memx::GpuSpec *spec = memx::builtinCatalogue().find(id);
    const int gpus = spec && spec->segment == "consumer" ? 4 : 8;
    // Dropped onto (or next to) another box: the nearest spot where it overlaps none.
    const QPointF topLeft = freeSpotNear(
        QPointF(snap(scenePos.x() - NodeGroupItem::kWidth / 2), snap(scenePos.y() - NodeGroupItem::kHeight / 2)));
    QString error;
    const int index = mDocument->addNodeGroup(id, topLeft, gpus, &error);
    if (index < 0) {
        emit message(tr("Cannot add %1: %2").arg(QString::fromStdString(id), error));
        return -1;
    }
    selectGroup(index);
    emit message(
        tr("Added node group %1").arg(QString::fromStdString(mDocument->cluster().groups[size_t(index)].name)));
    return index;
}

QPointF ClusterCanvas::freeSpotNear(QPointF topLeft) const
{
    constexpr qreal gap = 20;
    const auto &groups = mDocument->cluster().groups;
    auto boxOf = [](QPointF pos, int count) {
        const qreal stack = NodeGroupItem::kStackOffset * std::min(count - 1, NodeGroupItem::kMaxShadows);
        return QRectF(pos, QSizeF(NodeGroupItem::kWidth + stack, NodeGroupItem::kHeight + stack));
    };
    auto free = [&](QPointF p) {
        const QRectF mine = boxOf(p, 1).adjusted(-gap, -gap, gap, gap);
        for (const memx::NodeGroup &g : groups)
            if (mine.intersects(boxOf(QPointF(g.x, g.y), g.count)))
                return false;
        return true;
    };
    if (free(topLeft))
        return topLeft;
    // Rings of grid positions around the drop point, nearest first; bounded (a full canvas keeps the drop point).
    QPointF best = topLeft;
    qreal bestD2 = std::numeric_limits<qreal>::infinity();
    for (int ring = 1; ring <= 60 && !std::isfinite(bestD2); ++ring) {
        for (int i = -ring; i <= ring; ++i) {
            for (int j = -ring; j <= ring; ++j) {
                if (std::max(std::abs(i), std::abs(j)) != ring)
                    continue;
                const QPointF p(topLeft.x() + i * kGrid * 2, topLeft.y() + j * kGrid * 2);
                const qreal d2
                    = (p.x() - topLeft.x()) * (p.x() - topLeft.x()) + (p.y() - topLeft.y()) * (p.y() - topLeft.y());
                if (d2 < bestD2 && free(p)) {
                    best = p;
                    bestD2 = d2;
                }
            }
        }
    }
    return best;
}

int ClusterCanvas::connectGroups(int from, int to)
{
    const auto &groups = mDocument->cluster().groups;
    if (from < 0 || to < 0 || from >= int(groups.size()) || to >= int(groups.size()))
        return -1;
    QString error;
    const int index = mDocument->addLinkOverride(groups[size_t(from)].name, groups[size_t(to)].name,
                                                 mDocument->cluster().network.interNode, &error);
    if (index < 0) {
        emit message(tr("Cannot connect: %1").arg(error));
        return -1;
    }
    selectLink(index);
    emit message(
        tr("Connected %1 and %2; set the link's bandwidth in the properties")
            .arg(QString::fromStdString(groups[size_t(from)].name), QString::fromStdString(groups[size_t(to)].name)));
    return index;
}

// --- zoom ---

double ClusterCanvas::zoom() const
{
    return transform().m11();
}

void ClusterCanvas::scaleBy(double factor)
{
    const double target = std::clamp(zoom() * factor, kMinZoom, kMaxZoom);
    const double f = target / zoom();
    scale(f, f);
}

void ClusterCanvas::zoomIn()
{
    setAutoFit(false);
    scaleBy(kZoomStep);
}

void ClusterCanvas::zoomOut()
{
    setAutoFit(false);
    scaleBy(1 / kZoomStep);
}

void ClusterCanvas::resetZoom()
{
    setAutoFit(false);
    setTransform(QTransform());
}

void ClusterCanvas::setAutoFit(bool on)
{
    // A fitted view shows the whole cluster and needs no scroll bars. With scroll bars "as
    // needed", a fit in resizeEvent shows or hides one, which resizes the viewport, which fits
    // again: on the 512-GPU sample that loop never ended (the UI thread at 100%, no result shown).
    mAutoFit = on;
    const Qt::ScrollBarPolicy policy = on ? Qt::ScrollBarAlwaysOff : Qt::ScrollBarAsNeeded;
    setHorizontalScrollBarPolicy(policy);
    setVerticalScrollBarPolicy(policy);
}

void ClusterCanvas::resizeEvent(QResizeEvent *event)
{
    QGraphicsView::resizeEvent(event);
    if (mAutoFit)
        fitToView();
}

void ClusterCanvas::fitToView()
{
    QRectF r = mScene->itemsBoundingRect();
    if (r.isEmpty()) {
        setTransform(QTransform());
        return;
    }
    r.adjust(-40, -40, 40, 80); // room for the legend at the bottom
    fitInView(r, Qt::KeepAspectRatio);
    if (zoom() > 1.5) { // a small cluster is shown enlarged for readability, but not blown up
        setTransform(QTransform::fromScale(1.5, 1.5));
        centerOn(r.center());
    }
}

// --- mouse and keys ---

NodeGroupItem *ClusterCanvas::nodeAt(QPoint viewPos) const
{
    for (QGraphicsItem *item : items(viewPos))
        if (item->type() == NodeGroupItem::Type)
            return static_cast<NodeGroupItem *>(item);
    return nullptr;
}

void ClusterCanvas::mousePressEvent(QMouseEvent *event)
{
    if (event->button() == Qt::MiddleButton || (event->button() == Qt::LeftButton && mSpaceHeld)) {
        mDrag = Drag::Pan;
        setAutoFit(false);
        mPanLast = event->position().toPoint();
        viewport()->setCursor(Qt::ClosedHandCursor);
        event->accept();
        return;
    }
    NodeGroupItem *node = event->button() == Qt::LeftButton ? nodeAt(event->position().toPoint()) : nullptr;
    if (!node) {
        QGraphicsView::mousePressEvent(event); // links, rubber band, context clicks
        return;
    }
    const QPointF scenePos = mapToScene(event->position().toPoint());
    if (event->modifiers() & Qt::ShiftModifier) {
        mDrag = Drag::Connect;
        mConnectFrom = node->index();
        mConnectLine
            = mScene->addLine(QLineF(node->centre(), scenePos), QPen(QColor(0x30, 0x30, 0x30), 2, Qt::DashLine));
        mConnectLine->setZValue(5);
        event->accept();
        return;
    }
    if (event->modifiers() & Qt::ControlModifier) {
        node->setSelected(!node->isSelected());
        event->accept();
        return;
    }
    if (!node->isSelected()) {
        mScene->clearSelection();
        node->setSelected(true);
    }
    mDrag = Drag::Move;
    mDragStartScene = scenePos;
    mDragGroups = selectedGroups();
    mDragStartPositions.clear();
    for (int g : std::as_const(mDragGroups))
        mDragStartPositions << QPointF(mDocument->cluster().groups[size_t(g)].x,
                                       mDocument->cluster().groups[size_t(g)].y);
    ++mDragId;
    event->accept();
}

void ClusterCanvas::mouseMoveEvent(QMouseEvent *event)
{
    switch (mDrag) {
    case Drag::Pan: {
        const QPoint p = event->position().toPoint();
        const QPoint delta = p - mPanLast;
        mPanLast = p;
        horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
        verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
        event->accept();
        return;
    }
    case Drag::Connect:
        mConnectLine->setLine(QLineF(mConnectLine->line().p1(), mapToScene(event->position().toPoint())));
        event->accept();
        return;
    case Drag::Move: {
        const QPointF delta = mapToScene(event->position().toPoint()) - mDragStartScene;
        QVector<QPointF> positions;
        for (const QPointF &start : std::as_const(mDragStartPositions))
            positions << QPointF(snap(start.x() + delta.x()), snap(start.y() + delta.y()));
        mDocument->moveNodeGroups(mDragGroups, positions, mDragId);
        event->accept();
        return;
    }
    case Drag::None:
        break;
    }
    QGraphicsView::mouseMoveEvent(event);
}

void ClusterCanvas::mouseReleaseEvent(QMouseEvent *event)
{
    const Drag drag = mDrag;
    mDrag = Drag::None;
    switch (drag) {
    case Drag::Pan:
        viewport()->setCursor(mSpaceHeld ? Qt::OpenHandCursor : Qt::ArrowCursor);
        break;
    case Drag::Connect: {
        delete mConnectLine;
        mConnectLine = nullptr;
        NodeGroupItem *target = nodeAt(event->position().toPoint());
        if (target && target->index() != mConnectFrom)
            connectGroups(mConnectFrom, target->index());
        mConnectFrom = -1;
        break;
    }
    case Drag::Move:
        updateSceneRect();
        break;
    case Drag::None:
        QGraphicsView::mouseReleaseEvent(event);
        return;
    }
    event->accept();
}

void ClusterCanvas::wheelEvent(QWheelEvent *event)
{
    const double steps = event->angleDelta().y() / 120.0;
    if (steps != 0) {
        setAutoFit(false);
        scaleBy(std::pow(kZoomStep, steps));
    }
    event->accept();
}

void ClusterCanvas::keyPressEvent(QKeyEvent *event)
{
    if (event->key() == Qt::Key_Delete || event->key() == Qt::Key_Backspace) {
        deleteSelection();
        event->accept();
        return;
    }
    if (event->key() == Qt::Key_Space && !event->isAutoRepeat()) {
        mSpaceHeld = true;
        viewport()->setCursor(Qt::OpenHandCursor);
        event->accept();
        return;
    }
    if (event->matches(QKeySequence::SelectAll)) {
        selectAllItems();
        event->accept();
        return;
    }
    QGraphicsView::keyPressEvent(event);
}

void ClusterCanvas::keyReleaseEvent(QKeyEvent *event)
{
    if (event->key() == Qt::Key_Space && !event->isAutoRepeat()) {
        mSpaceHeld = false;
        viewport()->setCursor(Qt::ArrowCursor);
    }
    QGraphicsView::keyReleaseEvent(event);
}

void ClusterCanvas::contextMenuEvent(QContextMenuEvent *event)
{
    QMenu menu(this);
    QGraphicsItem *hit = itemAt(event->pos());
    if (hit && hit->type() == NodeGroupItem::Type) {
        auto *node = static_cast<NodeGroupItem *>(hit);
        if (!node->isSelected()) {
            mScene->clearSelection();
            node->setSelected(true);
        }
        const int from = node->index();
        QMenu *connectMenu = menu.addMenu(tr("Connect to"));
        const auto &groups = mDocument->cluster().groups;
        for (int g = 0; g < int(groups.size()); ++g) {
            if (g == from)
                continue;
            connectMenu->addAction(QString::fromStdString(groups[size_t(g)].name), this,
                                   [this, from, g] { connectGroups(from, g); });
        }
        connectMenu->setEnabled(!connectMenu->isEmpty());
        menu.addAction(tr("Remove"), this, &ClusterCanvas::deleteSelection);
    } else if (hit && hit->type() == LinkItem::Type) {
        auto *link = static_cast<LinkItem *>(hit);
        if (!link->isSelected()) {
            mScene->clearSelection();
            link->setSelected(true);
        }
        menu.addAction(tr("Remove link"), this, &ClusterCanvas::deleteSelection);
    }
    if (!menu.isEmpty())
        menu.addSeparator();
    menu.addAction(tr("Fit to view"), this, &ClusterCanvas::fitToView);
    menu.addAction(tr("Select all"), this, &ClusterCanvas::selectAllItems);
    menu.exec(event->globalPos());
}

// --- drag and drop from the palette ---

void ClusterCanvas::dragEnterEvent(QDragEnterEvent *event)
{
    if (event->mimeData()->hasFormat(QLatin1String(kGpuMimeType)))
        event->acceptProposedAction();
    else
        event->ignore();
}

void ClusterCanvas::dragMoveEvent(QDragMoveEvent *event)
{
    if (event->mimeData()->hasFormat(QLatin1String(kGpuMimeType)))
        event->acceptProposedAction();
    else
        event->ignore();
}

void ClusterCanvas::dropEvent(QDropEvent *event)
{
    if (dropGpu(event->mimeData(), mapToScene(event->position().toPoint())) >= 0)
        event->acceptProposedAction();
    else
        event->ignore();
}

// --- painting ---

void ClusterCanvas::drawBackground(QPainter *painter, const QRectF &rect)
{
    painter->fillRect(rect, QColor(0xf6, 0xf7, 0xf9));
    // Dot grid every 4 snapping steps (skipped when zoomed far out).
    if (zoom() < 0.35)
        return;
    const qreal step = kGrid * 4;
    painter->setPen(QPen(QColor(0xc8, 0xcc, 0xd2), 0));
    for (qreal x = std::floor(rect.left() / step) * step; x < rect.right(); x += step)
        for (qreal y = std::floor(rect.top() / step) * step; y < rect.bottom(); y += step)
            painter->drawPoint(QPointF(x, y));
}

void ClusterCanvas::drawForeground(QPainter *painter, const QRectF &)
{
    // Legend and hints in viewport coordinates (they do not zoom).
    painter->save();
    painter->resetTransform();
    painter->setRenderHint(QPainter::Antialiasing);
    const QFont font = QApplication::font();
    const QFontMetrics fm(font);
    painter->setFont(font);

    const memx::Link &def = mDocument->cluster().network.interNode;
    QStringList lines;
    lines << tr("Default inter-node link: %1 GB/s \u00b7 %2 \u00b5s")
                 .arg(def.bandwidthGBps, 0, 'g', 4)
                 .arg(def.latencyUs, 0, 'g', 3);
    if (!mDocument->cluster().network.overrides.empty())
        lines << tr("Lines: link overrides (bandwidth \u00b7 latency)");
    lines << tr("Shift-drag node \u2192 node to connect \u00b7 wheel to zoom");
    int w = 0;
    for (const QString &l : std::as_const(lines))
        w = std::max(w, fm.horizontalAdvance(l));
    const int pad = 8, lh = fm.height();
    const QRect box(pad, viewport()->height() - pad - lh * int(lines.size()) - 2 * pad, w + 2 * pad + 20,
                    lh * int(lines.size()) + 2 * pad);
    painter->setPen(QColor(0xb0, 0xb6, 0xbe));
    painter->setBrush(QColor(255, 255, 255, 230));
    painter->drawRoundedRect(box, 6, 6);
    // Line sample for the default network: dotted (it connects every pair of nodes).
    painter->setPen(QPen(QColor(0x45, 0x4f, 0x5c), 2, Qt::DotLine));
    painter->drawLine(box.left() + pad, box.top() + pad + lh / 2, box.left() + pad + 14, box.top() + pad + lh / 2);
    painter->setPen(QColor(0x20, 0x24, 0x2a));
    for (int i = 0; i < lines.size(); ++i)
        painter->drawText(QRect(box.left() + pad + 20, box.top() + pad + i * lh, w, lh),
                          Qt::AlignLeft | Qt::AlignVCenter, lines[i]);

    if (mNodes.isEmpty()) {
        QFont big = font;
        big.setPointSizeF(font.pointSizeF() * 1.3);
        painter->setFont(big);
        painter->setPen(QColor(0x70, 0x76, 0x80));
        painter->drawText(viewport()->rect(), Qt::AlignCenter,
                          tr("Drag a GPU from the palette onto the canvas to add a node"));
    }
    painter->restore();
}

} // namespace memx::ui
