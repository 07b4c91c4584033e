#pragma once

#include <QGraphicsView>
#include <QPointer>
#include <QVector>

class QGraphicsLineItem;
class QMimeData;

namespace memx::ui {

class ClusterDocument;
class LinkItem;
class NodeGroupItem;

/// The cluster editor: node groups as vendor-coloured boxes, link overrides as labelled lines,
/// the default network in a legend. Observes a ClusterDocument; every edit goes through it.
///
/// Mouse: drag a box to move (selected boxes move together; one drag = one undo step);
/// Shift-drag from one box to another to connect them (a link override with the default
/// bandwidth, then edit it in the property panel); drag on empty space for rubber-band selection;
/// middle-drag or Space+drag to pan; wheel to zoom. Keys: Delete/Backspace removes the selection,
/// Ctrl+A selects all. Right-click: Connect to..., Remove. Drop a GPU from GpuPalette to add a group.
class ClusterCanvas : public QGraphicsView {
    Q_OBJECT

public:
    explicit ClusterCanvas(ClusterDocument *document, QWidget *parent = nullptr);
    ~ClusterCanvas() override;

    ClusterDocument *document() const { return mDocument; }

    /// Indices of the selected node groups / link overrides, ascending.
    QVector<int> selectedGroups() const;
    QVector<int> selectedLinks() const;
    void selectGroup(int index, bool clearOthers = true);
    void selectLink(int overrideIndex, bool clearOthers = true);

    /// Items currently on the canvas (one per group / per drawable link override).
    int nodeItemCount() const { return int(mNodes.size()); }
    int linkItemCount() const { return int(mLinks.size()); }
    NodeGroupItem *nodeItem(int index) const { return mNodes.value(index); }

    /// Adds a group of the GPU in `mime` (kGpuMimeType) centred on `scenePos`; returns the new
    /// group's index or -1 (emits message() with the reason). This is what a drop does.
    int dropGpu(const QMimeData *mime, QPointF scenePos);
    /// The free spot for a new box nearest to `topLeft` (on the grid): `topLeft` itself when a box
    /// there (with a 20-unit gap, stacks included) overlaps none of the document's boxes.
    QPointF freeSpotNear(QPointF topLeft) const;
    /// Connects two groups with a link override using the default link; returns its index or -1.
    int connectGroups(int from, int to);

    double zoom() const;

public slots:
    void zoomIn();
    void zoomOut();
    void resetZoom();
    void fitToView();
    /// Removes the selected groups and links in one undo step.
    void deleteSelection();
    void selectAllItems();

signals:
    void selectionChanged();
    /// Something for the status bar (e.g. why an edit was refused).
    void message(const QString &text);

protected:
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    void keyReleaseEvent(QKeyEvent *event) override;
    void contextMenuEvent(QContextMenuEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dragMoveEvent(QDragMoveEvent *event) override;
    void dropEvent(QDropEvent *event) override;
    void drawForeground(QPainter *painter, const QRectF &rect) override;
    void drawBackground(QPainter *painter, const QRectF &rect) override;
    void resizeEvent(QResizeEvent *event) override;

private:
    void rebuild();
    void rebuildLinks();
    void onGroupAdded(int index);
    void onGroupRemoved(int index);
    void onGroupChanged(int index);
    void updateSceneRect();
    void scaleBy(double factor);
    NodeGroupItem *nodeAt(QPoint viewPos) const;

    ClusterDocument *mDocument;
    QGraphicsScene *mScene;
    QVector<NodeGroupItem *> mNodes;
    QVector<LinkItem *> mLinks;

    // Drag state.
    enum class Drag { None, Move, Connect, Pan };
    Drag mDrag = Drag::None;
    QPointF mDragStartScene;
    QPoint mPanLast;
    QVector<int> mDragGroups;
    QVector<QPointF> mDragStartPositions;
    int mDragId = 0;
    int mConnectFrom = -1;
    QGraphicsLineItem *mConnectLine = nullptr;
    bool mSpaceHeld = false;
    bool mRebuildingLinks = false; ///< rebuildLinks() runs: the scene's selection signals are not ours
    /// Keep the cluster fitted on resize until the user zooms or pans (set on open); the scroll
    /// bars are off while it is on.
    void setAutoFit(bool on);
    bool mAutoFit = true;
};

} // namespace memx::ui
