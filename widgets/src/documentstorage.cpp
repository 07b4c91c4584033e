#include "memx/ui/documentstorage.h"

#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"

#include <QObject>

namespace memx::ui {

QString ClusterJsonStorage::fileFilter() const
{
    return QObject::tr("MemX cluster (*.json)");
}

QString ClusterJsonStorage::defaultSuffix() const
{
    return QStringLiteral("json");
}

DocumentContent ClusterJsonStorage::load(const QString &path) const
{
    DocumentContent content;
    content.cluster = memx::loadCluster(path.toStdString());
    return content;
}

void ClusterJsonStorage::save(const DocumentContent &content, const QString &path) const
{
    const nlohmann::json j = memx::toJson(content.cluster);
    // A file MemX itself cannot read back is worse than no file: validate as a load would.
    memx::Diagnostics diags(path.toStdString());
    memx::parseCluster(j, memx::Catalogue::builtin(), diags);
    diags.throwIfAny();
    memx::saveJson(j, path.toStdString());
}

} // namespace memx::ui
