#pragma once

#include <QWidget>

class QAction;
class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QTreeView;

namespace memx::ui {

class GpuCatalogueModel;

/// Dock contents: a filter box and the GPU catalogue grouped by vendor (with the custom devices
/// of loaded GPU files and of the open cluster); drag a device onto the ClusterCanvas to add a
/// node group, or double-click it (emits gpuActivated); "Load GPUs..." adds devices from a file,
/// "Remove GPU File" (context menu, Delete) asks to remove the devices of a loaded file.
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
    /// "Remove GPU File" (Delete on the view, context menu): enabled on a device row loaded from a
    /// GPU file; emits removeRequested with that file's path.
    QAction *removeAction() const { return mRemove; }

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
    /// The user asked to remove the devices loaded from the GPU file `path`.
    void removeRequested(const QString &path);

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    GpuCatalogueModel *mModel = nullptr;
    QSortFilterProxyModel *mProxy = nullptr;
    QLineEdit *mFilter = nullptr;
    QTreeView *mView = nullptr;
    QPushButton *mLoad = nullptr;
    QPushButton *mNew = nullptr;
    QAction *mRemove = nullptr;
};

} // namespace memx::ui
