#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/search/objective.h"
#include "memx/store/memorystore.h"

#include <QString>

#include <optional>

namespace memx::ui {

/// What a workbench document persists: the cluster, and the model when the format can hold it.
struct DocumentContent {
    memx::Cluster cluster;
    std::optional<memx::Model> model; ///< unset: the format does not store a model
    /// Profiles, measured runs, network measurements (and other clusters/models) of a project;
    /// unset: the format does not store them.
    std::optional<memx::MemoryStore> projectData;
    /// Objective weights saved with a project; unset: the format does not store them (cluster
    /// JSON) or the project has none (the window keeps its current weights).
    std::optional<ObjectiveWeights> weights;
};

/// How a ClusterDocument is read from and written to disk. The cluster JSON implementation is
/// used today; the .memx project store plugs in as a second implementation.
class DocumentStorage {
public:
    virtual ~DocumentStorage() = default;

    /// Filter for file dialogs, e.g. "MemX cluster (*.json)".
    virtual QString fileFilter() const = 0;
    /// Suffix (without dot) appended by "Save As" when the user gives none.
    virtual QString defaultSuffix() const = 0;
    /// Reads `path`; throws memx::LoadError listing every problem.
    virtual DocumentContent load(const QString &path) const = 0;
    /// Writes `content` to `path` atomically; throws std::exception (LoadError for content that
    /// would not load back) on failure.
    virtual void save(const DocumentContent &content, const QString &path) const = 0;
};

/// Cluster JSON files ("format": "memx.cluster/1"); the model is not stored.
class ClusterJsonStorage : public DocumentStorage {
public:
    QString fileFilter() const override;
    QString defaultSuffix() const override;
    DocumentContent load(const QString &path) const override;
    /// Checks the cluster would load back (same validation as loading) before writing.
    void save(const DocumentContent &content, const QString &path) const override;
};

} // namespace memx::ui

namespace memx::ui {

/// A .memx project file (memx::SqliteStore): the cluster and model of the window plus the
/// project's profiles, measured runs, network measurements and blobs. Saving writes a complete
/// new project into a temporary file next to the target (one transaction) and renames it over
/// the target, so a crash never leaves a half-written project. The window's cluster and model are
/// recorded in the blob ("workbench", "document") as {"cluster": name, "model": id}.
class ProjectStorage : public DocumentStorage {
public:
    QString fileFilter() const override;
    QString defaultSuffix() const override;
    /// Throws memx::LoadError (not a project, newer schema, no cluster, corrupt row).
    DocumentContent load(const QString &path) const override;
    void save(const DocumentContent &content, const QString &path) const override;
};

/// The storage for `path` by suffix: ProjectStorage for ".memx", else ClusterJsonStorage.
const DocumentStorage &storageFor(const QString &path);

} // namespace memx::ui
