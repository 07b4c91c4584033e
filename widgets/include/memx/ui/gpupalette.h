#pragma once

#include <QWidget>

class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QTreeView;

namespace memx::ui {

class GpuCatalogueModel;

/// Dock contents: a filter box and the GPU catalogue grouped by vendor (with the custom devices
/// of loaded GPU files and of the open cluster); drag a device onto the ClusterCanvas to add a
/// node group, or double-click it (emits gpuActivated); "Load GPUs..." adds devices from a file.
class GpuPalette : public QWidget {
    Q_OBJECT

public:
    explicit GpuPalette(QWidget *parent = nullptr);

    GpuCatalogueModel *model() const { return mModel; }
    QTreeView *view() const { return mView; }
    /// "Load GPUs...": emits loadRequested (the window reads the file).
    QPushButton *loadButton() const { return mLoad; }
    /// "New GPU...": emits newRequested (the window opens a GpuDefinitionDialog).
    QPushButton *newButton() const { return mNew; }

    /// Narrower than this, the GiB and TFLOP/s columns hide (the names stay readable; the
    /// tooltips have every figure).
    static constexpr int FiguresMinWidth = 220;

signals:
    /// A device row was double-clicked or activated with Enter.
    void gpuActivated(const QString &deviceId);
    /// The user asked to load GPU definitions from a file.
    void loadRequested();
    /// The user asked to define a new GPU.
    void newRequested();

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    GpuCatalogueModel *mModel = nullptr;
    QSortFilterProxyModel *mProxy = nullptr;
    QLineEdit *mFilter = nullptr;
    QTreeView *mView = nullptr;
    QPushButton *mLoad = nullptr;
    QPushButton *mNew = nullptr;
};

} // namespace memx::ui
