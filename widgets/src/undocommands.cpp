#include "memx/ui/undocommands.h"

#include "memx/ui/clusterdocument.h"

#include <QObject>
#include <QStringList>
#include <QVariant>

namespace memx::ui {

namespace {
const QString kArrow = QStringLiteral(" \u2192 ");

QString num(double v)
{
    return QString::number(v, 'g', 6);
}

QString linkText(const memx::Link &l)
{
    return QObject::tr("%1 GB/s \u00b7 %2 \u00b5s").arg(num(l.bandwidthGBps), num(l.latencyUs));
}

void describeLink(QStringList &out, const QString &what, const memx::Link &a, const memx::Link &b)
{
    if (a.bandwidthGBps != b.bandwidthGBps)
        out << QObject::tr("%1 bandwidth %2%3%4 GB/s").arg(what, num(a.bandwidthGBps), kArrow, num(b.bandwidthGBps));
    if (a.latencyUs != b.latencyUs)
        out << QObject::tr("%1 latency %2%3%4 \u00b5s").arg(what, num(a.latencyUs), kArrow, num(b.latencyUs));
    if (a.curve != b.curve)
        out << QObject::tr("%1 bandwidth curve").arg(what);
}

template<class T> void field(QStringList &out, const QString &what, const T &a, const T &b)
{
    if (a != b)
        out << what + QLatin1Char(' ') + QVariant::fromValue(a).toString() + kArrow + QVariant::fromValue(b).toString();
}
} // namespace

QString describeGroupChange(const memx::NodeGroup &a, const memx::NodeGroup &b)
{
    QStringList out;
    if (a.name != b.name)
        out << QObject::tr("renamed %1%2%3")
                   .arg(QString::fromStdString(a.name), kArrow, QString::fromStdString(b.name));
    if (a.gpu != b.gpu)
        out << QObject::tr("GPU %1%2%3").arg(QString::fromStdString(a.gpu), kArrow, QString::fromStdString(b.gpu));
    field(out, QObject::tr("GPUs per node"), a.gpusPerNode, b.gpusPerNode);
    field(out, QObject::tr("nodes"), a.count, b.count);
    if (a.intraLink && b.intraLink)
        describeLink(out, QObject::tr("intra-node"), *a.intraLink, *b.intraLink);
    else if (!a.intraLink && b.intraLink)
        out << QObject::tr("intra-node link set to %1").arg(linkText(*b.intraLink));
    else if (a.intraLink && !b.intraLink)
        out << QObject::tr("intra-node link from the device again");
    return out.join(QStringLiteral("; "));
}

QString describeNetworkChange(const memx::Network &a, const memx::Network &b)
{
    QStringList out;
    describeLink(out, QObject::tr("default link"), a.interNode, b.interNode);
    auto pair = [](const memx::LinkOverride &o) {
        return QStringLiteral("%1\u2013%2").arg(QString::fromStdString(o.a), QString::fromStdString(o.b));
    };
    auto find = [](const std::vector<memx::LinkOverride> &v, const memx::LinkOverride &o) {
        for (const auto &x : v)
            if ((x.a == o.a && x.b == o.b) || (x.a == o.b && x.b == o.a))
                return &x;
        return static_cast<const memx::LinkOverride *>(nullptr);
    };
    for (const auto &o : b.overrides) {
        const memx::LinkOverride *old = find(a.overrides, o);
        if (!old)
            out << QObject::tr("link %1 added (%2)").arg(pair(o), linkText(o.link));
        else
            describeLink(out, QObject::tr("link %1").arg(pair(o)), old->link, o.link);
    }
    for (const auto &o : a.overrides)
        if (!find(b.overrides, o))
            out << QObject::tr("link %1 removed").arg(pair(o));
    return out.join(QStringLiteral("; "));
}

QString describeModelChange(const memx::Model &a, const memx::Model &b)
{
    QStringList out;
    const bool renamed = a.id != b.id && a.id != "custom" && b.id != "custom";
    if (renamed) // another preset / project / file model: its name says it all
        return QString::fromStdString(a.name) + kArrow + QString::fromStdString(b.name);
    const memx::ModelShape &x = a.shape, &y = b.shape;
    field(out, QObject::tr("layers"), x.layers, y.layers);
    field(out, QObject::tr("hidden"), x.hidden, y.hidden);
    field(out, QObject::tr("heads"), x.heads, y.heads);
    field(out, QObject::tr("KV groups"), x.kvGroups, y.kvGroups);
    field(out, QObject::tr("FFN hidden"), x.ffnHidden, y.ffnHidden);
    field(out, QObject::tr("vocabulary"), x.vocab, y.vocab);
    field(out, QObject::tr("sequence length"), x.seqLength, y.seqLength);
    if (x.swiglu != y.swiglu)
        out << (y.swiglu ? QObject::tr("SwiGLU on") : QObject::tr("SwiGLU off"));
    if (x.tiedEmbeddings != y.tiedEmbeddings)
        out << (y.tiedEmbeddings ? QObject::tr("tied embeddings") : QObject::tr("untied embeddings"));
    field(out, QObject::tr("global batch"), a.training.globalBatch, b.training.globalBatch);
    if (a.training.precision != b.training.precision)
        out << QObject::tr("precision %1%2%3")
                   .arg(QString::fromLatin1(memx::toString(a.training.precision)), kArrow,
                        QString::fromLatin1(memx::toString(b.training.precision)));
    if (a.training.attention != b.training.attention)
        out << QObject::tr("attention %1%2%3")
                   .arg(QString::fromLatin1(memx::toString(a.training.attention)), kArrow,
                        QString::fromLatin1(memx::toString(b.training.attention)));
    if (out.isEmpty() && a.name != b.name)
        out << QString::fromStdString(a.name) + kArrow + QString::fromStdString(b.name);
    return out.join(QStringLiteral("; "));
}

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
    updateText();
}

void ChangeNodeGroupCommand::updateText()
{
    // "History text\nEdit menu text": the entry says what changed, the menu stays short.
    const QString action = QObject::tr("Change node group %1").arg(QString::fromStdString(mBefore.name));
    const QString what = describeGroupChange(mBefore, mAfter);
    setText(what.isEmpty() ? action
                           : QStringLiteral("%1: %2\n%3").arg(QString::fromStdString(mBefore.name), what, action));
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
    updateText();
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
    mAction = text;
    updateText();
}

void SetNetworkCommand::updateText()
{
    const QString what = describeNetworkChange(mBefore, mAfter);
    setText(what.isEmpty() ? mAction : QStringLiteral("%1: %2\n%1").arg(mAction, what));
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
    updateText();
    return true;
}

SetModelCommand::SetModelCommand(ClusterDocument *document, const QString &text, memx::Model before, memx::Model after,
                                 int mergeKey)
    : mDocument(document)
    , mBefore(std::move(before))
    , mAfter(std::move(after))
    , mMergeKey(mergeKey)
{
    mAction = text;
    updateText();
}

void SetModelCommand::updateText()
{
    const QString what = describeModelChange(mBefore, mAfter);
    setText(what.isEmpty() ? mAction : QStringLiteral("%1: %2\n%1").arg(mAction, what));
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
    updateText();
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
