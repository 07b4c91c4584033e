#pragma once

#include "memx/ui/resultsviewtypes.h"

#include <QVector>
#include <QWidget>

namespace memx::ui {

/// Painted pipeline diagram of one plan: stages left to right (arrows show the pipeline order),
/// each a column with its layer range, TP x DP, a recompute badge (selective / full), compute and
/// communication time (ms), and its data-parallel replicas as boxes coloured by vendor, labelled
/// "node:gpus" with device and micro-batch size. sizeHint() grows with the number of stages and
/// with the largest DP degree. GUI thread only.
class StageDiagram : public QWidget {
    Q_OBJECT
public:
    explicit StageDiagram(QWidget *parent = nullptr);

    void setStages(QVector<StageInfo> stages);
    const QVector<StageInfo> &stages() const { return mStages; }

    /// Column rectangle of stage `index` (widget coordinates); empty if out of range.
    QRect stageRect(int index) const;
    /// Stage column under `pos`, -1 if none.
    int stageAt(QPoint pos) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent *event) override;

private:
    int columnWidth() const;
    int headerHeight() const;
    int boxHeight() const;

    QVector<StageInfo> mStages;
};

} // namespace memx::ui
