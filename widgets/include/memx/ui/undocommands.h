#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/search/objective.h"

#include <QPointF>
#include <QUndoCommand>
#include <QVector>

#include <utility>

namespace memx::ui {

class ClusterDocument;

/// Command ids used by QUndoCommand::mergeWith().
enum CommandId { MoveNodeGroupsId = 1, ChangeNodeGroupId, SetNetworkId, SetModelId, ChangeWeightsId };

/// Adds one node group at an index.
class AddNodeGroupCommand : public QUndoCommand {
public:
    AddNodeGroupCommand(ClusterDocument *document, int index, memx::NodeGroup group);
    void redo() override;
    void undo() override;

private:
    ClusterDocument *mDocument;
    int mIndex;
    memx::NodeGroup mGroup;
};

/// Removes node groups and the link overrides that refer to them.
class RemoveNodeGroupsCommand : public QUndoCommand {
public:
    /// `removed`: (index, group) sorted by ascending index; networks before and after removal.
    RemoveNodeGroupsCommand(ClusterDocument *document, QVector<std::pair<int, memx::NodeGroup>> removed,
                            memx::Network before, memx::Network after);
    void redo() override;
    void undo() override;

private:
    ClusterDocument *mDocument;
    QVector<std::pair<int, memx::NodeGroup>> mRemoved;
    memx::Network mBefore, mAfter;
};

/// Replaces one node group (and the network, when overrides follow a rename). Consecutive
/// changes of the same field of the same group merge.
class ChangeNodeGroupCommand : public QUndoCommand {
public:
    ChangeNodeGroupCommand(ClusterDocument *document, int index, int field, memx::NodeGroup before,
                           memx::NodeGroup after, memx::Network networkBefore, memx::Network networkAfter);
    void redo() override;
    void undo() override;
    int id() const override { return ChangeNodeGroupId; }
    bool mergeWith(const QUndoCommand *other) override;

private:
    void updateText();
    ClusterDocument *mDocument;
    int mIndex, mField;
    memx::NodeGroup mBefore, mAfter;
    memx::Network mNetworkBefore, mNetworkAfter;
};

/// Moves node groups on the canvas; commands with the same non-zero drag id merge.
class MoveNodeGroupsCommand : public QUndoCommand {
public:
    MoveNodeGroupsCommand(ClusterDocument *document, QVector<int> indices, QVector<QPointF> before,
                          QVector<QPointF> after, int dragId);
    void redo() override;
    void undo() override;
    int id() const override { return MoveNodeGroupsId; }
    bool mergeWith(const QUndoCommand *other) override;

private:
    void apply(const QVector<QPointF> &positions);

    ClusterDocument *mDocument;
    QVector<int> mIndices;
    QVector<QPointF> mBefore, mAfter;
    int mDragId;
};

/// Replaces the network (default link and overrides). Same non-zero merge key merges.
/// What an edit changed, for the History entries ("GPUs per node 8 → 4; nodes 1 → 2"); "" when
/// nothing differs. Positions on the canvas are not described.
QString describeGroupChange(const memx::NodeGroup &before, const memx::NodeGroup &after);
QString describeNetworkChange(const memx::Network &before, const memx::Network &after);
QString describeModelChange(const memx::Model &before, const memx::Model &after);

class SetNetworkCommand : public QUndoCommand {
public:
    SetNetworkCommand(ClusterDocument *document, const QString &text, memx::Network before, memx::Network after,
                      int mergeKey);
    void redo() override;
    void undo() override;
    int id() const override { return SetNetworkId; }
    bool mergeWith(const QUndoCommand *other) override;

private:
    void updateText();
    ClusterDocument *mDocument;
    QString mAction; ///< the Edit menu's text ("Change link")
    memx::Network mBefore, mAfter;
    int mMergeKey;
};

/// Replaces the model. Same non-zero merge key merges.
class SetModelCommand : public QUndoCommand {
public:
    SetModelCommand(ClusterDocument *document, const QString &text, memx::Model before, memx::Model after,
                    int mergeKey);
    void redo() override;
    void undo() override;
    int id() const override { return SetModelId; }
    bool mergeWith(const QUndoCommand *other) override;

private:
    void updateText();
    ClusterDocument *mDocument;
    QString mAction;
    memx::Model mBefore, mAfter;
    int mMergeKey;
};

/// Changes the document's objective weights. Commands of the same document and edit session merge,
/// so all live changes of one slider drag collapse into one undo step (a merge back to the start
/// leaves no step). The History entry names the weights ("Objective weights T 1.00 / M 0.30 /
/// B 0.00"); the Edit menu reads "Undo Change objective weights".
class ChangeWeightsCommand : public QUndoCommand {
public:
    /// `session` groups commands that should merge (e.g. one drag); use a fresh value per edit.
    ChangeWeightsCommand(ClusterDocument *document, const memx::ObjectiveWeights &before,
                         const memx::ObjectiveWeights &after, int session = 0, QUndoCommand *parent = nullptr);
    int id() const override { return ChangeWeightsId; }
    bool mergeWith(const QUndoCommand *other) override;
    void undo() override;
    void redo() override;

    memx::ObjectiveWeights before() const { return mBefore; }
    memx::ObjectiveWeights after() const { return mAfter; }

private:
    void updateText();

    ClusterDocument *mDocument;
    memx::ObjectiveWeights mBefore;
    memx::ObjectiveWeights mAfter;
    int mSession;
};

/// "T 1.00 / M 0.50 / B 0.50".
QString weightsText(const memx::ObjectiveWeights &weights);

} // namespace memx::ui
