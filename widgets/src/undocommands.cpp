#include "memx/ui/undocommands.h"

#include "memx/ui/clusterdocument.h"

#include <QObject>

namespace memx::ui {

AddNodeGroupCommand::AddNodeGroupCommand(ClusterDocument *document, int index, memx::NodeGroup group)
    : mDocument(document)
    , mIndex(index)
    , mGroup(std::move(group))
{
    setText(QObject::tr("Add node group %1").arg(QString::fromStdString(mGroup.name)));
}

void AddNodeGroupCommand::redo()
{
    mDocument->applyInsertGroup(mIndex, mGroup);
}

void AddNodeGroupCommand::undo()
{
    mDocument->applyRemoveGroup(mIndex);
}

RemoveNodeGroupsCommand::RemoveNodeGroupsCommand(ClusterDocument *document,
                                                 QVector<std::pair<int, memx::NodeGroup>> removed, memx::Network before,
                                                 memx::Network after)
    : mDocument(document)
    , mRemoved(std::move(removed))
    , mBefore(std::move(before))
    , mAfter(std::move(after))
{
    setText(mRemoved.size() == 1
                ? QObject::tr("Remove node group %1").arg(QString::fromStdString(mRemoved.front().second.name))
                : QObject::tr("Remove %n node group(s)", nullptr, int(mRemoved.size())));
}

void RemoveNodeGroupsCommand::redo()
{
    // Network first: while overrides still name the removed groups, views would try to draw them.
    mDocument->applySetNetwork(mAfter);
    for (auto it = mRemoved.crbegin(); it != mRemoved.crend(); ++it)
        mDocument->applyRemoveGroup(it->first);
}

void RemoveNodeGroupsCommand::undo()
{
    for (const auto &[index, group] : mRemoved)
        mDocument->applyInsertGroup(index, group);
    mDocument->applySetNetwork(mBefore);
}

ChangeNodeGroupCommand::ChangeNodeGroupCommand(ClusterDocument *document, int index, int field, memx::NodeGroup before,
                                               memx::NodeGroup after, memx::Network networkBefore,
                                               memx::Network networkAfter)
    : mDocument(document)
    , mIndex(index)
    , mField(field)
    , mBefore(std::move(before))
    , mAfter(std::move(after))
    , mNetworkBefore(std::move(networkBefore))
    , mNetworkAfter(std::move(networkAfter))
{
    setText(QObject::tr("Change node group %1").arg(QString::fromStdString(mBefore.name)));
}

void ChangeNodeGroupCommand::redo()
{
    mDocument->applySetGroup(mIndex, mAfter);
    if (mNetworkAfter != mNetworkBefore)
        mDocument->applySetNetwork(mNetworkAfter);
}

void ChangeNodeGroupCommand::undo()
{
    mDocument->applySetGroup(mIndex, mBefore);
    if (mNetworkAfter != mNetworkBefore)
        mDocument->applySetNetwork(mNetworkBefore);
}

bool ChangeNodeGroupCommand::mergeWith(const QUndoCommand *other)
{
    const auto *o = static_cast<const ChangeNodeGroupCommand *>(other);
    if (o->mIndex != mIndex || o->mField != mField || mField == int(ClusterDocument::GroupField::All))
        return false;
    mAfter = o->mAfter;
    mNetworkAfter = o->mNetworkAfter;
    return true;
}

MoveNodeGroupsCommand::MoveNodeGroupsCommand(ClusterDocument *document, QVector<int> indices, QVector<QPointF> before,
                                             QVector<QPointF> after, int dragId)
    : mDocument(document)
    , mIndices(std::move(indices))
    , mBefore(std::move(before))
    , mAfter(std::move(after))
    , mDragId(dragId)
{
    setText(QObject::tr("Move %n node group(s)", nullptr, int(mIndices.size())));
}

void MoveNodeGroupsCommand::apply(const QVector<QPointF> &positions)
{
    for (qsizetype i = 0; i < mIndices.size(); ++i) {
        memx::NodeGroup g = mDocument->cluster().groups.at(size_t(mIndices[i]));
        g.x = positions[i].x();
        g.y = positions[i].y();
        mDocument->applySetGroup(mIndices[i], g);
    }
}

void MoveNodeGroupsCommand::redo()
{
    apply(mAfter);
}

void MoveNodeGroupsCommand::undo()
{
    apply(mBefore);
}

bool MoveNodeGroupsCommand::mergeWith(const QUndoCommand *other)
{
    const auto *o = static_cast<const MoveNodeGroupsCommand *>(other);
    if (mDragId == 0 || o->mDragId != mDragId || o->mIndices != mIndices)
        return false;
    mAfter = o->mAfter;
    return true;
}

SetNetworkCommand::SetNetworkCommand(ClusterDocument *document, const QString &text, memx::Network before,
                                     memx::Network after, int mergeKey)
    : mDocument(document)
    , mBefore(std::move(before))
    , mAfter(std::move(after))
    , mMergeKey(mergeKey)
{
    setText(text);
}

void SetNetworkCommand::redo()
{
    mDocument->applySetNetwork(mAfter);
}

void SetNetworkCommand::undo()
{
    mDocument->applySetNetwork(mBefore);
}

bool SetNetworkCommand::mergeWith(const QUndoCommand *other)
{
    const auto *o = static_cast<const SetNetworkCommand *>(other);
    if (mMergeKey == 0 || o->mMergeKey != mMergeKey)
        return false;
    mAfter = o->mAfter;
    return true;
}

SetModelCommand::SetModelCommand(ClusterDocument *document, const QString &text, memx::Model before, memx::Model after,
                                 int mergeKey)
    : mDocument(document)
    , mBefore(std::move(before))
    , mAfter(std::move(after))
    , mMergeKey(mergeKey)
{
    setText(text);
}

void SetModelCommand::redo()
{
    mDocument->applySetModel(mAfter);
}

void SetModelCommand::undo()
{
    mDocument->applySetModel(mBefore);
}

bool SetModelCommand::mergeWith(const QUndoCommand *other)
{
    const auto *o = static_cast<const SetModelCommand *>(other);
    if (mMergeKey == 0 || o->mMergeKey != mMergeKey)
        return false;
    mAfter = o->mAfter;
    return true;
}

ChangeWeightsCommand::ChangeWeightsCommand(ClusterDocument *document, const memx::ObjectiveWeights &before,
                                           const memx::ObjectiveWeights &after, int session, QUndoCommand *parent)
    : QUndoCommand(parent)
    , mDocument(document)
    , mBefore(before)
    , mAfter(after)
    , mSession(session)
{
    updateText();
}

bool ChangeWeightsCommand::mergeWith(const QUndoCommand *other)
{
    const auto *o = static_cast<const ChangeWeightsCommand *>(other);
    if (o->mDocument != mDocument || o->mSession != mSession)
        return false;
    mAfter = o->mAfter;
    updateText();
    setObsolete(mAfter == mBefore);
    return true;
}

void ChangeWeightsCommand::undo()
{
    mDocument->setObjectiveWeights(mBefore);
}

void ChangeWeightsCommand::redo()
{
    mDocument->setObjectiveWeights(mAfter);
}

void ChangeWeightsCommand::updateText()
{
    // Before the newline: the History view's entry; after it: the Edit menu's "Undo ..." text.
    setText(QObject::tr("Objective weights %1\nChange objective weights").arg(weightsText(mAfter)));
}

QString weightsText(const memx::ObjectiveWeights &w)
{
    return QStringLiteral("T %1 / M %2 / B %3")
        .arg(w.time, 0, 'f', 2)
        .arg(w.memory, 0, 'f', 2)
        .arg(w.balance, 0, 'f', 2);
}

} // namespace memx::ui
