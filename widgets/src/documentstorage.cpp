#include "memx/ui/documentstorage.h"

#include "memx/io/formats.h"
#include "memx/predict/learnedpredictor.h"
#include "memx/predict/predictioncache.h"
#include "memx/predict/projectpredictor.h"
#include "memx/predict/searchresultcache.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/diagnostic.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QFileInfo>
#include <QUuid>

#include <cmath>
#include <cstdio>
#include <filesystem>

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
    memx::parseCluster(j, memx::builtinCatalogue(), diags);
    diags.throwIfAny();
    memx::saveJson(j, path.toStdString());
}

QString ProjectStorage::fileFilter() const
{
    return QObject::tr("MemX project (*.memx)");
}

QString ProjectStorage::defaultSuffix() const
{
    return QStringLiteral("memx");
}

namespace {
constexpr const char *kDocumentBlobKind = "workbench";
constexpr const char *kDocumentBlobKey = "document";
/// The core's blobs a project carries (kept through open and save): the learned predictor, the
/// per-plan prediction cache, the whole-search result cache and the cost-model calibration.
constexpr const char *kProjectBlobKinds[] = {memx::kPredictorBlobKind, memx::kPredictionCacheBlobKind,
                                             memx::kSearchResultBlobKind, memx::kCalibrationBlobKind};

std::vector<std::uint8_t> bytesOf(const std::string &s)
{
    return {s.begin(), s.end()};
}
} // namespace

DocumentContent ProjectStorage::load(const QString &path) const
{
    const std::string file = path.toStdString();
    if (!QFileInfo::exists(path))
        throw memx::LoadError(file, "", "no such file");
    memx::SqliteStore store(file, false); // throws LoadError for a non-project / newer file
    DocumentContent content;
    std::string clusterName, modelId;
    if (auto doc = store.blob(kDocumentBlobKind, kDocumentBlobKey)) {
        try {
            const nlohmann::json j = nlohmann::json::parse(doc->begin(), doc->end());
            clusterName = j.value("cluster", std::string());
            modelId = j.value("model", std::string());
            if (j.contains("objective")) {
                const nlohmann::json &o = j.at("objective");
                ObjectiveWeights w;
                for (auto [key, field] : {std::pair {"time", &w.time}, std::pair {"memory", &w.memory},
                                          std::pair {"balance", &w.balance}}) {
                    const auto it = o.is_object() ? o.find(key) : o.end();
                    if (it == o.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0
                        || it->get<double>() > 1)
                        throw memx::LoadError(file, std::string("/blobs/workbench/document/objective/") + key,
                                              "expected a weight between 0 and 1");
                    *field = it->get<double>();
                }
                content.weights = w;
            }
        } catch (const nlohmann::json::exception &e) {
            throw memx::LoadError(file, "/blobs/workbench/document", std::string("unreadable: ") + e.what());
        }
    }
    const std::vector<std::string> clusters = store.clusterNames();
    if (clusterName.empty() && !clusters.empty())
        clusterName = clusters.front();
    std::optional<memx::Cluster> cluster = clusterName.empty() ? std::nullopt : store.cluster(clusterName);
    if (!cluster)
        throw memx::LoadError(file, "/clusters", "expected the project's cluster \"" + clusterName + "\", found none");
    content.cluster = *cluster;
    if (!modelId.empty())
        content.model = store.model(modelId);

    // Everything else is project data: copied into memory, written back on save.
    memx::MemoryStore data;
    memx::StoreTransaction tx(data);
    for (const std::string &name : clusters)
        if (name != clusterName)
            data.putCluster(*store.cluster(name));
    for (const std::string &id : store.modelIds())
        if (id != modelId)
            data.putModel(*store.model(id));
    const memx::ProfileSet profiles = store.profiles(); // keep the set alive over the loop
    for (const memx::LayerProfile &p : profiles.profiles())
        data.putProfile(p);
    for (const memx::MeasuredRun &r : store.runs())
        data.putRun(r);
    for (const memx::NetworkMeasurement &n : store.networkMeasurements())
        data.putNetwork(n);
    for (const char *kind : kProjectBlobKinds)
        for (const std::string &key : store.blobKeys(kind))
            data.putBlob(kind, key, *store.blob(kind, key));
    tx.commit();
    content.projectData = std::move(data);
    return content;
}

void ProjectStorage::save(const DocumentContent &content, const QString &path) const
{
    // Same validation as cluster JSON: never write what would not load back.
    memx::Diagnostics diags(path.toStdString());
    memx::parseCluster(memx::toJson(content.cluster), memx::builtinCatalogue(), diags);
    diags.throwIfAny();

    const QFileInfo target(path);
    const std::string tmp
        = (target.absolutePath()
           + QStringLiteral("/.%1.%2.tmp").arg(target.fileName(), QUuid::createUuid().toString(QUuid::WithoutBraces)))
              .toStdString();
    auto removeTemp = [&tmp] {
        for (const char *suffix : {"", "-wal", "-shm", "-journal"})
            std::remove((tmp + suffix).c_str());
    };
    try {
        {
            memx::SqliteStore store(tmp, true);
            memx::StoreTransaction tx(store);
            if (content.projectData) {
                const memx::MemoryStore &d = *content.projectData;
                for (const std::string &name : d.clusterNames())
                    store.putCluster(*d.cluster(name));
                for (const std::string &id : d.modelIds())
                    store.putModel(*d.model(id));
                const memx::ProfileSet profiles = d.profiles(); // keep the set alive over the loop
                for (const memx::LayerProfile &p : profiles.profiles())
                    store.putProfile(p);
                for (const memx::MeasuredRun &r : d.runs())
                    store.putRun(r);
                for (const memx::NetworkMeasurement &n : d.networkMeasurements())
                    store.putNetwork(n);
                for (const char *kind : kProjectBlobKinds)
                    for (const std::string &key : d.blobKeys(kind))
                        store.putBlob(kind, key, *d.blob(kind, key));
            }
            store.putCluster(content.cluster);
            nlohmann::json doc {{"cluster", content.cluster.name}};
            if (content.model) {
                store.putModel(*content.model);
                doc["model"] = content.model->id;
            }
            if (content.weights)
                doc["objective"] = {{"time", content.weights->time},
                                    {"memory", content.weights->memory},
                                    {"balance", content.weights->balance}};
            store.putBlob(kDocumentBlobKind, kDocumentBlobKey, bytesOf(doc.dump()));
            tx.commit();
        } // closed: the WAL is checkpointed into the file
        // A stale -wal/-shm of the target (left by a crash) would be replayed into the new file.
        for (const char *suffix : {"-wal", "-shm"})
            std::remove((path.toStdString() + suffix).c_str());
        std::filesystem::rename(tmp, path.toStdString()); // atomic replace on POSIX
    } catch (...) {
        removeTemp();
        throw;
    }
    removeTemp(); // leftover -wal/-shm of the temporary name, if any
}

const DocumentStorage &storageFor(const QString &path)
{
    static const ProjectStorage project;
    static const ClusterJsonStorage json;
    if (path.endsWith(QStringLiteral(".memx"), Qt::CaseInsensitive))
        return project;
    return json;
}

} // namespace memx::ui
