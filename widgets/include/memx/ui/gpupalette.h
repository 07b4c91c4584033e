#pragma once

#include <QWidget>

class QLineEdit;
class QSortFilterProxyModel;
class QTreeView;

namespace memx::ui {

class GpuCatalogueModel;

/// Dock contents: a filter box and the GPU catalogue grouped by vendor; drag a device onto the
/// ClusterCanvas to add a node group, or double-click it (emits gpuActivated).
class GpuPalette : public QWidget {
    Q_OBJECT

public:
    explicit GpuPalette(QWidget *parent = nullptr);

    GpuCatalogueModel *model() const { return mModel; }
    QTreeView *view() const { return mView; }

signals:
    /// A device row was double-clicked or activated with Enter.
    void gpuActivated(const QString &deviceId);

private:
    GpuCatalogueModel *mModel = nullptr;
    QSortFilterProxyModel *mProxy = nullptr;
    QLineEdit *mFilter = nullptr;
    QTreeView *mView = nullptr;
};

} // namespace memx::ui
