#pragma once

#include "memx/cluster/gpuspec.h"

#include <QAbstractItemModel>

#include <map>
#include <string>
#include <vector>

namespace memx::ui {

/// The GPU catalogue as a two-level tree: vendors (in catalogue order), then their devices.
/// Columns: device name, memory (GiB), dense BF16 TFLOP/s. Device rows are draggable
/// (MIME kGpuMimeType carrying the device id) and have a tooltip with their figures.
class GpuCatalogueModel : public QAbstractItemModel {
    Q_OBJECT

public:
    enum Column { NameColumn, MemoryColumn, ComputeColumn, ColumnCount };
    /// Role returning the device id (std::string as QString) of a device row.
    static constexpr int DeviceIdRole = Qt::UserRole + 1;
    /// Role returning where a custom device row was defined (empty for catalogue devices).
    static constexpr int OriginRole = Qt::UserRole + 2;

    explicit GpuCatalogueModel(const memx::Catalogue &catalogue, QObject *parent = nullptr);

    /// Shows these custom devices (the document's known devices: loaded GPU files, the open
    /// cluster's own definitions) under their vendors after the catalogue's, "name (custom)",
    /// with their origin (id -> file path or label) in the tooltip and OriginRole.
    void setCustomDevices(const std::vector<memx::GpuSpec> &devices, const std::map<std::string, QString> &origins);
    /// How many custom devices are shown.
    int customDeviceCount() const { return int(mCustom.size()); }

    /// The device of a device row, nullptr for vendor rows.
    const memx::GpuSpec *device(const QModelIndex &index) const;
    /// Index of the device with `id` (column 0), invalid when absent.
    QModelIndex indexOfDevice(const std::string &id) const;

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    QStringList mimeTypes() const override;
    QMimeData *mimeData(const QModelIndexList &indexes) const override;
    Qt::DropActions supportedDragActions() const override { return Qt::CopyAction; }

    /// Multi-line tooltip text for a device (memory, BF16, HBM bandwidth, scale-up link, NIC).
    static QString tooltip(const memx::GpuSpec &device);

private:
    struct Vendor {
        std::string name;
        std::vector<memx::GpuSpec> devices;
    };
    /// mVendors from the catalogue's devices, then the custom ones.
    void rebuild();

    std::vector<memx::GpuSpec> mBuiltin, mCustom;
    std::vector<Vendor> mVendors;
    std::map<std::string, QString> mOrigins; // custom device id -> where it was defined
};

} // namespace memx::ui
