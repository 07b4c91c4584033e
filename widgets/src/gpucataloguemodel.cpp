#include "memx/ui/gpucataloguemodel.h"

#include "memx/ui/vendorstyle.h"

#include <QFileInfo>
#include <QMimeData>
#include <QPainter>
#include <QPixmap>

namespace memx::ui {

namespace {
constexpr quintptr kVendorRow = 0; // internalId of vendor rows; device rows store vendor + 1

QString figure(const std::optional<double> &v, const char *unit, int decimals = 0)
{
    return v ? QStringLiteral("%1 %2").arg(*v, 0, 'f', decimals).arg(QLatin1String(unit)) : QObject::tr("unknown");
}
} // namespace

GpuCatalogueModel::GpuCatalogueModel(const memx::Catalogue &catalogue, QObject *parent)
    : QAbstractItemModel(parent)
    , mBuiltin(catalogue.devices())
{
    rebuild();
}

void GpuCatalogueModel::setCustomDevices(const std::vector<memx::GpuSpec> &devices,
                                         const std::map<std::string, QString> &origins)
{
    beginResetModel();
    mCustom = devices;
    for (memx::GpuSpec &d : mCustom)
        d.custom = true;
    mOrigins = origins;
    rebuild();
    endResetModel();
}

void GpuCatalogueModel::rebuild()
{
    mVendors.clear();
    for (const auto *list : {&mBuiltin, &mCustom})
        for (const memx::GpuSpec &d : *list) {
            auto it
                = std::find_if(mVendors.begin(), mVendors.end(), [&](const Vendor &v) { return v.name == d.vendor; });
            if (it == mVendors.end())
                it = mVendors.insert(mVendors.end(), Vendor {d.vendor, {}});
            it->devices.push_back(d);
        }
}

const memx::GpuSpec *GpuCatalogueModel::device(const QModelIndex &index) const
{
    if (!index.isValid() || index.internalId() == kVendorRow)
        return nullptr;
    const Vendor &v = mVendors[size_t(index.internalId() - 1)];
    return &v.devices[size_t(index.row())];
}

QModelIndex GpuCatalogueModel::indexOfDevice(const std::string &id) const
{
    for (size_t v = 0; v < mVendors.size(); ++v)
        for (size_t d = 0; d < mVendors[v].devices.size(); ++d)
            if (mVendors[v].devices[d].id == id)
                return createIndex(int(d), 0, quintptr(v + 1));
    return {};
}

QModelIndex GpuCatalogueModel::index(int row, int column, const QModelIndex &parent) const
{
    if (column < 0 || column >= ColumnCount || row < 0)
        return {};
    if (!parent.isValid())
        return row < int(mVendors.size()) ? createIndex(row, column, kVendorRow) : QModelIndex();
    if (parent.internalId() != kVendorRow || parent.column() != 0)
        return {};
    if (row >= int(mVendors[size_t(parent.row())].devices.size()))
        return {};
    return createIndex(row, column, quintptr(parent.row() + 1));
}

QModelIndex GpuCatalogueModel::parent(const QModelIndex &child) const
{
    if (!child.isValid() || child.internalId() == kVendorRow)
        return {};
    return createIndex(int(child.internalId() - 1), 0, kVendorRow);
}

int GpuCatalogueModel::rowCount(const QModelIndex &parent) const
{
    if (!parent.isValid())
        return int(mVendors.size());
    if (parent.internalId() == kVendorRow && parent.column() == 0)
        return int(mVendors[size_t(parent.row())].devices.size());
    return 0;
}

int GpuCatalogueModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

QVariant GpuCatalogueModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid())
        return {};
    if (index.internalId() == kVendorRow) {
        const Vendor &v = mVendors[size_t(index.row())];
        if (role == Qt::DisplayRole && index.column() == NameColumn)
            return QStringLiteral("%1 (%2)").arg(QString::fromStdString(v.name)).arg(v.devices.size());
        if (role == Qt::DecorationRole && index.column() == NameColumn) {
            QPixmap swatch(12, 12);
            swatch.fill(vendorColor(v.name));
            return swatch;
        }
        return {};
    }
    const memx::GpuSpec &d = *device(index);
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case NameColumn:
            return d.custom ? tr("%1 (custom)").arg(QString::fromStdString(d.name)) : QString::fromStdString(d.name);
        case MemoryColumn:
            return d.memoryGiB ? QString::number(*d.memoryGiB, 'f', 0) : QStringLiteral("?");
        case ComputeColumn: {
            const auto t = d.peakTflops(true);
            return t ? QString::number(*t, 'f', 0) : QStringLiteral("?");
        }
        }
        return {};
    case Qt::TextAlignmentRole:
        return index.column() == NameColumn ? QVariant() : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ToolTipRole:
        if (d.custom) {
            const auto origin = mOrigins.find(d.id);
            return tooltip(d)
                + tr("<br><i>Custom device from %1.</i>")
                      .arg(origin != mOrigins.end() ? QFileInfo(origin->second).fileName().toHtmlEscaped()
                                                    : tr("a file"));
        }
        return tooltip(d);
    case DeviceIdRole:
        return QString::fromStdString(d.id);
    case OriginRole: {
        const auto origin = d.custom ? mOrigins.find(d.id) : mOrigins.end();
        return origin != mOrigins.end() ? origin->second : QString();
    }
    }
    return {};
}

QVariant GpuCatalogueModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case NameColumn:
        return tr("GPU");
    case MemoryColumn:
        return tr("GiB");
    case ComputeColumn:
        return tr("TFLOP/s");
    }
    return {};
}

Qt::ItemFlags GpuCatalogueModel::flags(const QModelIndex &index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    if (index.internalId() == kVendorRow)
        return Qt::ItemIsEnabled;
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled | Qt::ItemNeverHasChildren;
}

QStringList GpuCatalogueModel::mimeTypes() const
{
    return {QLatin1String(kGpuMimeType)};
}

QMimeData *GpuCatalogueModel::mimeData(const QModelIndexList &indexes) const
{
    for (const QModelIndex &i : indexes) {
        if (const memx::GpuSpec *d = device(i)) {
            auto *mime = new QMimeData;
            mime->setData(QLatin1String(kGpuMimeType), QByteArray::fromStdString(d->id));
            mime->setText(QString::fromStdString(d->id));
            return mime;
        }
    }
    return nullptr;
}

QString GpuCatalogueModel::tooltip(const memx::GpuSpec &d)
{
    QString link = QString::fromLatin1(memx::toString(d.scaleUpKind));
    if (d.scaleUpPerDirectionGBps)
        link += QStringLiteral(" %1 GB/s per direction").arg(*d.scaleUpPerDirectionGBps, 0, 'f', 0);
    QString text
        = QStringLiteral("<b>%1</b> (%2)<br>")
              .arg(QString::fromStdString(d.name).toHtmlEscaped(), QString::fromStdString(d.id).toHtmlEscaped());
    text += tr("Memory: %1<br>").arg(figure(d.memoryGiB, "GiB", 1));
    text += tr("Memory bandwidth: %1<br>").arg(figure(d.memoryBandwidthGBps, "GB/s"));
    text += d.denseBf16Tflops
        ? tr("Dense BF16: %1<br>").arg(figure(d.denseBf16Tflops, "TFLOP/s", 1))
        : tr("Dense BF16: not supported (FP16 %1)<br>").arg(figure(d.denseFp16Tflops, "TFLOP/s", 1));
    text += tr("Scale-up: %1<br>").arg(link.toHtmlEscaped());
    if (d.nicGbps)
        text += tr("NIC: %1 Gb/s %2<br>")
                    .arg(*d.nicGbps, 0, 'f', 0)
                    .arg(QString::fromStdString(d.nicDescription).toHtmlEscaped());
    if (!d.verified)
        text += tr("<i>Figures unverified: calibrate before trusting plans.</i><br>");
    text += tr("Drag onto the canvas to add a node.");
    return text;
}

} // namespace memx::ui
