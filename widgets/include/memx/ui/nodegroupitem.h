#pragma once

#include <QGraphicsItem>

namespace memx::ui {

class ClusterDocument;

/// Canvas item of one node group: a rounded box in the vendor's colour showing the group name,
/// "gpus x device", memory and the intra-node link; a group of several nodes is drawn as a
/// stack with "x N". Its position is the group's (x, y) (top-left corner, scene units).
/// Reads its group from the document on every paint; call refresh() after the group changed.
class NodeGroupItem : public QGraphicsItem {
public:
    enum { Type = UserType + 1 };
    static constexpr qreal kWidth = 210;
    static constexpr qreal kHeight = 86;
    static constexpr qreal kStackOffset = 6; ///< offset of each shadow box of a stack
    static constexpr int kMaxShadows = 2; ///< shadow boxes drawn behind a stack of several nodes

    NodeGroupItem(const ClusterDocument *document, int index);

    int index() const { return mIndex; }
    void setIndex(int index);
    /// Re-reads position and contents from the document.
    void refresh();
    /// Centre of the front box, scene coordinates.
    QPointF centre() const { return pos() + QPointF(kWidth / 2, kHeight / 2); }

    int type() const override { return Type; }
    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

private:
    const ClusterDocument *mDocument;
    int mIndex;
};

/// Canvas item of one link override: a line between the two groups' boxes, labelled with
/// bandwidth and latency. Long links bow sideways (a quadratic curve) so links between boxes in a
/// row do not run through the boxes in between or hide each other's labels.
class LinkItem : public QGraphicsItem {
public:
    enum { Type = UserType + 2 };

    /// `from`/`to`: centres of the two boxes (scene coordinates).
    LinkItem(const ClusterDocument *document, int overrideIndex, QPointF from, QPointF to);

    int overrideIndex() const { return mIndex; }
    void setEnds(QPointF fromCentre, QPointF toCentre);
    /// Where the label sits (middle of the curve), scene coordinates.
    QPointF labelCentre() const { return mMid; }

    int type() const override { return Type; }
    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

private:
    QString label() const;
    QRectF labelRect() const;
    QPainterPath path() const;

    const ClusterDocument *mDocument;
    int mIndex;
    QPointF mFrom, mTo, mControl, mMid;
};

} // namespace memx::ui
