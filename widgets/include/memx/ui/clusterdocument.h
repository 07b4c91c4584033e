#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/predict/learnedpredictor.h"
#include "memx/search/objective.h"
#include "memx/store/memorystore.h"
#include "memx/util/progress.h"

#include <nlohmann/json.hpp>

#include <QObject>
#include <QPointF>
#include <QString>
#include <QVector>
#include <set>

#include <functional>
#include <map>
#include <memory>
#include <optional>

class QUndoStack;

namespace memx::ui {

class DocumentStorage;

/// The editable cluster + model of one workbench window, its undo stack, file path and modified
/// flag. Views observe its typed signals; every user edit goes through the edit functions below,
/// which validate and push a QUndoCommand (so every edit can be undone).
///
/// The `apply*` functions are the raw mutators the undo commands call; they emit the matching
/// signal and are not meant for views.
class ClusterDocument : public QObject {
    Q_OBJECT

public:
    /// Fields of a node group, used to merge consecutive edits of the same field into one undo step.
    enum class GroupField { Name, Gpu, GpusPerNode, Count, IntraLink, All };

    explicit ClusterDocument(QObject *parent = nullptr);
    ~ClusterDocument() override;

    const memx::Cluster &cluster() const { return mCluster; }
    const memx::Model &model() const { return mModel; }
    QUndoStack *undoStack() const { return mUndoStack; }

    /// Path of the file the document was loaded from / saved to; empty for a new document.
    QString filePath() const { return mFilePath; }
    /// True when there are edits since the last load/save.
    bool isModified() const;
    /// Title for the window: cluster name, or the file name.
    QString displayName() const;

    // --- whole-document operations (not undoable; they clear the undo stack) ---

    /// Replaces cluster and model, clears the undo stack and the file path, emits clusterReset.
    /// The project data (profiles, runs) is replaced by `projectData` (empty when unset).
    void reset(const memx::Cluster &cluster, const memx::Model &model,
               std::optional<memx::MemoryStore> projectData = std::nullopt);

    /// Profiles, measured runs and network measurements of the project (not undoable).
    const memx::MemoryStore &projectData() const { return mProjectData; }
    /// Adds an import to the project data in one transaction (all or nothing; throws what the
    /// store throws, memx::Cancelled when `progress` stops it) and marks the document modified.
    void importData(const memx::ImportBatch &batch, const memx::ProgressFn &progress = {});
    /// Stores a trained learned predictor with its metrics in the project data (memx::savePredictor:
    /// the caches of the old one are dropped), marks the document modified, emits projectDataChanged.
    void storePredictor(const memx::LearnedPredictor &predictor, const nlohmann::json &metrics);
    /// Merges the caches a search updated in its snapshot back into the project data
    /// (memx::mergeSearchCaches). Caches only: nothing is marked modified, no signal.
    void storeSearchCaches(const memx::Store &snapshot);
    /// Loads `path` with `storage` (keeps the current model when the format stores none).
    /// Throws memx::LoadError on bad input; the document is unchanged then.
    void load(const QString &path, const DocumentStorage &storage);
    /// Saves to `path` with `storage`, marks the document clean and remembers the path.
    /// Throws std::exception on failure (document unchanged).
    void save(const QString &path, const DocumentStorage &storage);
    /// Objective weights of the plan ranking, part of the document: a .memx project stores them
    /// (cluster JSON does not: load() of such a file keeps the current weights). Starts at the
    /// documented default, memx::ObjectiveWeights {}. Edits are ChangeWeightsCommand on the undo
    /// stack (which marks the document modified); setObjectiveWeights() itself only emits
    /// objectiveWeightsChanged when they differ.
    memx::ObjectiveWeights objectiveWeights() const { return mWeights; }
    void setObjectiveWeights(const memx::ObjectiveWeights &weights);

    // --- validated, undoable edits (return false and set *error when rejected) ---

    /// Devices defined outside the catalogue that edits may use (the GPU files the user loaded,
    /// memx::loadCustomDevices), merged by core's rule (memx::mergeCustomDevices: a later
    /// definition of an id replaces the earlier one; an id or alias another known device has is
    /// refused with memx::LoadError naming `origin`, and nothing is added). A group of one of them
    /// carries its definition in the cluster's devices (so it is saved with the cluster); it
    /// leaves them again when no group uses it. Not undoable (no cluster change). `origin` says
    /// where they were defined (a file's path, or a label); emits knownDevicesAdded, which the
    /// GPU palette follows.
    void addKnownDevices(const std::vector<memx::GpuSpec> &devices, const QString &origin);
    /// Forgets the known devices added from `origin` (groups using them keep their definition
    /// in the cluster's devices); emits knownDevicesRemoved. Returns how many were removed.
    int removeKnownDevices(const QString &origin);
    const std::vector<memx::GpuSpec> &knownDevices() const { return mKnownDevices; }
    /// The known device with id or alias `id` (case-insensitive; null when none).
    const memx::GpuSpec *knownDevice(const std::string &id) const;
    /// Known device id -> where it was defined (addKnownDevices' origin).
    const std::map<std::string, QString> &knownDeviceOrigins() const { return mKnownOrigins; }

    /// Adds a group of one node with `gpusPerNode` GPUs of catalogue/cluster/known device `gpuId` at `pos`.
    /// Returns the new group's index or -1.
    int addNodeGroup(const std::string &gpuId, QPointF pos, int gpusPerNode = 8, QString *error = nullptr);
    /// Adds a fully specified group (name must be unique).
    int addNodeGroup(const memx::NodeGroup &group, QString *error = nullptr);
    /// Removes groups (any order, duplicates ignored) and the link overrides that refer to them.
    void removeNodeGroups(QVector<int> indices);
    /// Replaces group `index` with `group` (validated as a cluster file: unique non-empty name, 1..64
    /// GPUs per node, 1..100000 nodes within the cluster limits, known device, valid link). Link
    /// overrides follow a rename.
    /// Consecutive edits of the same `field` of the same group merge into one undo step.
    bool changeNodeGroup(int index, const memx::NodeGroup &group, GroupField field = GroupField::All,
                         QString *error = nullptr);
    /// Moves groups to new positions. Calls with the same non-zero `dragId` merge into one undo step
    /// (one mouse drag = one step).
    void moveNodeGroups(const QVector<int> &indices, const QVector<QPointF> &positions, int dragId = 0);

    /// Adds a link override between two node or group names. Returns its index or -1.
    int addLinkOverride(const std::string &a, const std::string &b, const memx::Link &link, QString *error = nullptr);
    /// Changes the link of override `index`; `mergeKey` != 0 merges consecutive edits.
    bool changeLinkOverride(int index, const memx::Link &link, int mergeKey = 0, QString *error = nullptr);
    void removeLinkOverrides(QVector<int> indices);
    /// Changes the default inter-node link.
    bool setDefaultLink(const memx::Link &link, int mergeKey = 0, QString *error = nullptr);

    /// Changes the model (validated like a model file). `mergeKey` != 0 merges consecutive edits.
    bool setModel(const memx::Model &model, int mergeKey = 0, QString *error = nullptr);

    // --- queries ---

    /// Index of the group called `name`, or of the group a node called `name` belongs to; -1 if none.
    int groupIndexOf(const std::string &name) const;
    /// A group name not used yet, derived from `base`.
    std::string uniqueGroupName(const std::string &base) const;
    // Validation is the reader's (memx::validateCluster / validateModel in core): an edit is refused
    // exactly when a file holding its result would be.
    /// Problems of `candidate` as a cluster file would report them, each led by the editor's name of
    /// the field ("GPUs per node: expected an integer from 1 to 64, found 0"); empty when valid.
    static QString validateCluster(const memx::Cluster &candidate);
    /// Problems with `group` if it replaced group `index` (-1: if it were added); empty when valid.
    QString validateGroup(const memx::NodeGroup &group, int index) const;
    /// Problems with the cluster if its network were `network`; empty when valid.
    QString validateNetwork(const memx::Network &network) const;
    /// Problems with `model` as a model file would report them ("/shape/heads: ..."); empty when valid.
    static QString validateModel(const memx::Model &model);

    // --- raw mutators used by the undo commands ---
    void applyInsertGroup(int index, const memx::NodeGroup &group);
    memx::NodeGroup applyRemoveGroup(int index);
    void applySetGroup(int index, const memx::NodeGroup &group);
    void applySetNetwork(const memx::Network &network);
    void applySetModel(const memx::Model &model);

signals:
    void nodeGroupAdded(int index);
    void nodeGroupRemoved(int index);
    void nodeGroupChanged(int index);
    /// Default link or overrides changed.
    void networkChanged();
    void modelChanged();
    /// Everything was replaced (new/open).
    void clusterReset();
    void modifiedChanged(bool modified);
    /// Profiles / runs / network measurements changed (import, load, reset).
    void projectDataChanged();
    void filePathChanged(const QString &path);
    void objectiveWeightsChanged(const memx::ObjectiveWeights &weights);
    /// addKnownDevices added or replaced these devices (marked custom), defined in `origin`.
    void knownDevicesAdded(const std::vector<memx::GpuSpec> &devices, const QString &origin);
    /// removeKnownDevices forgot the devices with these ids.
    void knownDevicesRemoved(const std::vector<std::string> &ids);

private:
    /// Keeps `devices` = custom devices + the catalogue devices the groups use (in first-use order),
    /// the same order loading a saved file produces.
    void normalizeDevices();
    /// Project data changed by this document (import, predictor): modified, projectDataChanged.
    void markDataModified();
    /// The network after renaming/removing groups: endpoints follow renames, overrides whose
    /// endpoints no longer exist are dropped.
    memx::Network networkAfter(const std::vector<memx::NodeGroup> &groupsAfter,
                               const std::vector<int> &oldIndexOfNew) const;

    memx::Cluster mCluster;
    std::vector<memx::GpuSpec> mKnownDevices; // custom, from loaded GPU files
    std::map<std::string, QString> mKnownOrigins; // known device id -> addKnownDevices' origin
    std::set<std::string> mOwnDevices; // ids of the custom devices the cluster came with (kept unused)
    memx::Model mModel;
    QUndoStack *mUndoStack = nullptr;
    QString mFilePath;
    memx::MemoryStore mProjectData;
    memx::ObjectiveWeights mWeights;
    bool mDataModified = false; // imports since the last load/save (not on the undo stack)
};

} // namespace memx::ui
