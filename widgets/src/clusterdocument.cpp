#include "memx/ui/clusterdocument.h"

#include "memx/engine/plannedsearch.h"
#include "memx/io/formats.h"
#include "memx/predict/projectpredictor.h"
#include "memx/ui/documentstorage.h"
#include "memx/ui/undocommands.h"
#include "memx/util/diagnostic.h"

#include <QFileInfo>
#include <QUndoStack>

#include <algorithm>
#include <regex>
#include <set>

namespace memx::ui {

namespace {

QString diagnosticsText(const memx::Diagnostics &diags)
{
    QStringList lines;
    for (const memx::Diagnostic &d : diags.items())
        lines << QString::fromStdString(d.pointer.empty() ? d.message : d.pointer + ": " + d.message);
    return lines.join(QLatin1Char('\n'));
}

bool fail(QString *error, const QString &message)
{
    if (error)
        *error = message;
    return false;
}

} // namespace

ClusterDocument::ClusterDocument(QObject *parent)
    : QObject(parent)
    , mUndoStack(new QUndoStack(this))
{
    connect(mUndoStack, &QUndoStack::cleanChanged, this,
            [this](bool clean) { emit modifiedChanged(!clean || mDataModified); });
}

ClusterDocument::~ClusterDocument() = default;

bool ClusterDocument::isModified() const
{
    return !mUndoStack->isClean() || mDataModified;
}

QString ClusterDocument::displayName() const
{
    if (!mCluster.name.empty())
        return QString::fromStdString(mCluster.name);
    if (!mFilePath.isEmpty())
        return QFileInfo(mFilePath).fileName();
    return tr("Untitled cluster");
}

void ClusterDocument::reset(const memx::Cluster &cluster, const memx::Model &model,
                            std::optional<memx::MemoryStore> projectData)
{
    mCluster = cluster;
    mOwnDevices.clear();
    for (const memx::GpuSpec &d : cluster.devices)
        if (d.custom)
            mOwnDevices.insert(d.id);
    mModel = model;
    mProjectData = projectData ? std::move(*projectData) : memx::MemoryStore();
    const bool wasModified = isModified();
    mDataModified = false;
    normalizeDevices();
    mUndoStack->clear();
    mUndoStack->setClean();
    mFilePath.clear();
    emit filePathChanged(mFilePath);
    emit clusterReset();
    emit networkChanged();
    emit modelChanged();
    emit projectDataChanged();
    if (wasModified)
        emit modifiedChanged(false);
}

void ClusterDocument::importData(const memx::ImportBatch &batch, const memx::ProgressFn &progress)
{
    memx::writeImport(mProjectData, batch, progress);
    markDataModified();
}

void ClusterDocument::storePredictor(const memx::LearnedPredictor &predictor, const nlohmann::json &metrics)
{
    memx::savePredictor(mProjectData, predictor, metrics);
    markDataModified();
}

void ClusterDocument::storeSearchCaches(const memx::Store &snapshot)
{
    memx::mergeSearchCaches(snapshot, mProjectData);
}

void ClusterDocument::markDataModified()
{
    const bool was = isModified();
    mDataModified = true;
    emit projectDataChanged();
    if (!was)
        emit modifiedChanged(true);
}

void ClusterDocument::load(const QString &path, const DocumentStorage &storage)
{
    DocumentContent content = storage.load(path); // throws; nothing changed yet
    reset(content.cluster, content.model.value_or(mModel), std::move(content.projectData));
    if (content.weights)
        setObjectiveWeights(*content.weights);
    mFilePath = path;
    emit filePathChanged(mFilePath);
}

void ClusterDocument::save(const QString &path, const DocumentStorage &storage)
{
    storage.save({mCluster, mModel, mProjectData, mWeights}, path);
    mFilePath = path;
    const bool dataWasModified = mDataModified;
    mDataModified = false;
    if (mUndoStack->isClean() && dataWasModified)
        emit modifiedChanged(false);
    mUndoStack->setClean();
    emit filePathChanged(mFilePath);
}

// --- validation ---

int ClusterDocument::groupIndexOf(const std::string &name) const
{
    for (size_t g = 0; g < mCluster.groups.size(); ++g)
        if (mCluster.groups[g].name == name)
            return int(g);
    for (size_t g = 0; g < mCluster.groups.size(); ++g)
        for (int k = 0; k < mCluster.groups[g].count; ++k)
            if (memx::nodeName(mCluster.groups[g], k) == name)
                return int(g);
    return -1;
}

QString ClusterDocument::validateCluster(const memx::Cluster &candidate)
{
    memx::Diagnostics diags;
    memx::validateCluster(candidate, diags);
    // The reader's messages, with the editor's field names in front of each pointer.
    static const std::vector<std::pair<std::regex, QString>> labels = {
        {std::regex("^/nodes/[0-9]+/name$"), tr("name")},
        {std::regex("^/nodes/[0-9]+/gpus$"), tr("GPUs per node")},
        {std::regex("^/nodes/[0-9]+/count$"), tr("node count")},
        {std::regex("^/nodes/[0-9]+/gpu$"), tr("GPU")},
        {std::regex("^/nodes/[0-9]+/intraLink/bandwidthGBps$"), tr("intra-node link bandwidth")},
        {std::regex("^/nodes/[0-9]+/intraLink/latencyUs$"), tr("intra-node link latency")},
        {std::regex("^/network/interNode/bandwidthGBps$"), tr("default link bandwidth")},
        {std::regex("^/network/interNode/latencyUs$"), tr("default link latency")},
        {std::regex("^/network/overrides/[0-9]+/link/bandwidthGBps$"), tr("link bandwidth")},
        {std::regex("^/network/overrides/[0-9]+/link/latencyUs$"), tr("link latency")},
        {std::regex("^/network/overrides/[0-9]+/[ab]$"), tr("link end")},
        {std::regex("^/nodes$"), tr("cluster")},
    };
    QStringList lines;
    for (const memx::Diagnostic &d : diags.items()) {
        QString label = QString::fromStdString(d.pointer);
        for (const auto &[re, text] : labels)
            if (std::regex_match(d.pointer, re))
                label = text;
        lines << (label.isEmpty() ? QString::fromStdString(d.message)
                                  : label + QStringLiteral(": ") + QString::fromStdString(d.message));
    }
    return lines.join(QLatin1Char('\n'));
}

QString ClusterDocument::validateGroup(const memx::NodeGroup &group, int index) const
{
    memx::Cluster candidate = mCluster;
    if (index < 0 || index >= int(candidate.groups.size()))
        candidate.groups.push_back(group);
    else
        candidate.groups[size_t(index)] = group;
    // The network as the edit leaves it: link ends follow a rename, links to dropped nodes go.
    std::vector<int> oldIndexOfNew(candidate.groups.size());
    for (size_t i = 0; i < oldIndexOfNew.size(); ++i)
        oldIndexOfNew[i] = i < mCluster.groups.size() ? int(i) : -1;
    candidate.network = networkAfter(candidate.groups, oldIndexOfNew);
    if (candidate.deviceIndex(group.gpu) < 0)
        if (const memx::GpuSpec *known = knownDevice(group.gpu))
            candidate.devices.push_back(*known);
    return validateCluster(candidate);
}

void ClusterDocument::addKnownDevices(const std::vector<memx::GpuSpec> &devices, const QString &origin)
{
    std::vector<memx::GpuSpec> added = devices;
    for (memx::GpuSpec &d : added)
        d.custom = true;
    memx::mergeCustomDevices(mKnownDevices, added, origin.toStdString()); // throws, changing nothing
    for (const memx::GpuSpec &d : added)
        mKnownOrigins[d.id] = origin;
    if (!added.empty())
        emit knownDevicesAdded(added, origin);
}

int ClusterDocument::removeKnownDevices(const QString &origin)
{
    std::vector<std::string> ids;
    for (auto it = mKnownOrigins.begin(); it != mKnownOrigins.end();)
        if (it->second == origin) {
            ids.push_back(it->first);
            it = mKnownOrigins.erase(it);
        } else {
            ++it;
        }
    std::erase_if(mKnownDevices,
                  [&](const memx::GpuSpec &d) { return std::find(ids.begin(), ids.end(), d.id) != ids.end(); });
    if (!ids.empty())
        emit knownDevicesRemoved(ids);
    return int(ids.size());
}

const memx::GpuSpec *ClusterDocument::knownDevice(const std::string &id) const
{
    for (const memx::GpuSpec &d : mKnownDevices)
        if (d.isNamed(id))
            return &d;
    return nullptr;
}

QString ClusterDocument::validateNetwork(const memx::Network &network) const
{
    memx::Cluster candidate = mCluster;
    candidate.network = network;
    return validateCluster(candidate);
}

QString ClusterDocument::validateModel(const memx::Model &model)
{
    memx::Diagnostics diags;
    memx::validateModel(model, diags);
    return diagnosticsText(diags);
}

std::string ClusterDocument::uniqueGroupName(const std::string &base) const
{
    std::string stem = base.empty() ? std::string("node") : base;
    for (int n = 1;; ++n) {
        const std::string name = n == 1 ? stem : stem + "_" + std::to_string(n);
        bool used = false;
        for (const auto &g : mCluster.groups) {
            if (g.name == name)
                used = true;
            for (int k = 0; k < g.count && !used; ++k)
                used = memx::nodeName(g, k) == name;
        }
        if (!used)
            return name;
    }
}

// --- edits ---

int ClusterDocument::addNodeGroup(const std::string &gpuId, QPointF pos, int gpusPerNode, QString *error)
{
    const memx::GpuSpec *spec = nullptr;
    const int local = mCluster.deviceIndex(gpuId);
    if (local >= 0)
        spec = &mCluster.devices[size_t(local)];
    else if (const memx::GpuSpec *known = knownDevice(gpuId))
        spec = known;
    else
        spec = memx::builtinCatalogue().find(gpuId);
    if (!spec) {
        fail(error, tr("GPU: unknown device \"%1\"").arg(QString::fromStdString(gpuId)));
        return -1;
    }
    memx::NodeGroup g;
    // "a100-40gb-sxm" -> "a100": the short family name reads best on the canvas.
    const std::string base = spec->id.substr(0, spec->id.find('-'));
    g.name = uniqueGroupName(base);
    g.gpu = spec->id;
    g.gpusPerNode = std::clamp(gpusPerNode, 1, 64);
    g.count = 1;
    g.x = pos.x();
    g.y = pos.y();
    return addNodeGroup(g, error);
}

int ClusterDocument::addNodeGroup(const memx::NodeGroup &group, QString *error)
{
    const QString problem = validateGroup(group, -1);
    if (!problem.isEmpty()) {
        fail(error, problem);
        return -1;
    }
    const int index = int(mCluster.groups.size());
    mUndoStack->push(new AddNodeGroupCommand(this, index, group));
    return index;
}

void ClusterDocument::removeNodeGroups(QVector<int> indices)
{
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    QVector<std::pair<int, memx::NodeGroup>> removed;
    std::vector<memx::NodeGroup> after;
    std::vector<int> oldIndexOfNew;
    for (size_t g = 0; g < mCluster.groups.size(); ++g) {
        if (indices.contains(int(g))) {
            removed.push_back({int(g), mCluster.groups[g]});
        } else {
            after.push_back(mCluster.groups[g]);
            oldIndexOfNew.push_back(int(g));
        }
    }
    if (removed.isEmpty())
        return;
    mUndoStack->push(new RemoveNodeGroupsCommand(this, removed, mCluster.network, networkAfter(after, oldIndexOfNew)));
}

bool ClusterDocument::changeNodeGroup(int index, const memx::NodeGroup &group, GroupField field, QString *error)
{
    if (index < 0 || index >= int(mCluster.groups.size()))
        return fail(error, tr("no node group %1").arg(index));
    const QString problem = validateGroup(group, index);
    if (!problem.isEmpty())
        return fail(error, problem);
    const memx::NodeGroup &before = mCluster.groups[size_t(index)];
    if (before == group)
        return true;
    std::vector<memx::NodeGroup> after = mCluster.groups;
    after[size_t(index)] = group;
    std::vector<int> identity(after.size());
    for (size_t i = 0; i < identity.size(); ++i)
        identity[i] = int(i);
    mUndoStack->push(new ChangeNodeGroupCommand(this, index, int(field), before, group, mCluster.network,
                                                networkAfter(after, identity)));
    return true;
}

void ClusterDocument::moveNodeGroups(const QVector<int> &indices, const QVector<QPointF> &positions, int dragId)
{
    Q_ASSERT(indices.size() == positions.size());
    QVector<QPointF> before;
    bool changed = false;
    for (qsizetype i = 0; i < indices.size(); ++i) {
        const memx::NodeGroup &g = mCluster.groups.at(size_t(indices[i]));
        before << QPointF(g.x, g.y);
        changed = changed || before.back() != positions[i];
    }
    if (changed)
        mUndoStack->push(new MoveNodeGroupsCommand(this, indices, before, positions, dragId));
}

int ClusterDocument::addLinkOverride(const std::string &a, const std::string &b, const memx::Link &link, QString *error)
{
    memx::Network net = mCluster.network;
    net.overrides.push_back({a, b, link});
    if (const QString problem = validateNetwork(net); !problem.isEmpty()) {
        fail(error, problem);
        return -1;
    }
    mUndoStack->push(
        new SetNetworkCommand(this, tr("Connect %1 to %2").arg(QString::fromStdString(a), QString::fromStdString(b)),
                              mCluster.network, net, 0));
    return int(net.overrides.size()) - 1;
}

bool ClusterDocument::changeLinkOverride(int index, const memx::Link &link, int mergeKey, QString *error)
{
    if (index < 0 || index >= int(mCluster.network.overrides.size()))
        return fail(error, tr("no link %1").arg(index));
    memx::Network net = mCluster.network;
    if (net.overrides[size_t(index)].link == link)
        return true;
    net.overrides[size_t(index)].link = link;
    if (const QString problem = validateNetwork(net); !problem.isEmpty())
        return fail(error, problem);
    mUndoStack->push(
        new SetNetworkCommand(this, tr("Change link"), mCluster.network, net, mergeKey ? mergeKey * 1000 + index : 0));
    return true;
}

void ClusterDocument::removeLinkOverrides(QVector<int> indices)
{
    memx::Network net = mCluster.network;
    std::sort(indices.begin(), indices.end(), std::greater<>());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    for (int i : indices)
        if (i >= 0 && i < int(net.overrides.size()))
            net.overrides.erase(net.overrides.begin() + i);
    if (net != mCluster.network)
        mUndoStack->push(new SetNetworkCommand(this, tr("Remove %n link(s)", nullptr, int(indices.size())),
                                               mCluster.network, net, 0));
}

bool ClusterDocument::setDefaultLink(const memx::Link &link, int mergeKey, QString *error)
{
    memx::Network net = mCluster.network;
    if (net.interNode == link)
        return true;
    net.interNode = link;
    if (const QString problem = validateNetwork(net); !problem.isEmpty())
        return fail(error, problem);
    mUndoStack->push(
        new SetNetworkCommand(this, tr("Change default network"), mCluster.network, net, mergeKey ? -mergeKey : 0));
    return true;
}

bool ClusterDocument::setModel(const memx::Model &model, int mergeKey, QString *error)
{
    const QString problem = validateModel(model);
    if (!problem.isEmpty())
        return fail(error, problem);
    if (model == mModel)
        return true;
    mUndoStack->push(new SetModelCommand(this, tr("Change model"), mModel, model, mergeKey));
    return true;
}

// --- raw mutators ---

void ClusterDocument::applyInsertGroup(int index, const memx::NodeGroup &group)
{
    mCluster.groups.insert(mCluster.groups.begin() + index, group);
    normalizeDevices();
    emit nodeGroupAdded(index);
}

memx::NodeGroup ClusterDocument::applyRemoveGroup(int index)
{
    memx::NodeGroup g = mCluster.groups.at(size_t(index));
    mCluster.groups.erase(mCluster.groups.begin() + index);
    normalizeDevices();
    emit nodeGroupRemoved(index);
    return g;
}

void ClusterDocument::applySetGroup(int index, const memx::NodeGroup &group)
{
    mCluster.groups.at(size_t(index)) = group;
    normalizeDevices();
    emit nodeGroupChanged(index);
}

void ClusterDocument::applySetNetwork(const memx::Network &network)
{
    mCluster.network = network;
    emit networkChanged();
}

void ClusterDocument::applySetModel(const memx::Model &model)
{
    mModel = model;
    emit modelChanged();
}

void ClusterDocument::normalizeDevices()
{
    std::vector<memx::GpuSpec> devices;
    for (const memx::GpuSpec &d : mCluster.devices)
        if (d.custom)
            devices.push_back(d);
    for (memx::NodeGroup &g : mCluster.groups) {
        bool found = false;
        for (const memx::GpuSpec &d : devices) {
            if (d.id == g.gpu || std::find(d.aliases.begin(), d.aliases.end(), g.gpu) != d.aliases.end()) {
                g.gpu = d.id;
                found = true;
                break;
            }
        }
        if (found)
            continue;
        const int local = mCluster.deviceIndex(g.gpu);
        const memx::GpuSpec *spec = local >= 0 ? &mCluster.devices[size_t(local)] : knownDevice(g.gpu);
        if (!spec)
            spec = memx::builtinCatalogue().find(g.gpu);
        if (spec) {
            g.gpu = spec->id;
            devices.push_back(*spec);
        }
    }
    // A loaded device no group uses any more leaves the cluster (it stays known); a cluster's
    // own definitions stay even unused, as its file has them.
    std::erase_if(devices, [this](const memx::GpuSpec &d) {
        return d.custom && !mOwnDevices.count(d.id) && knownDevice(d.id)
            && std::none_of(mCluster.groups.begin(), mCluster.groups.end(),
                            [&](const memx::NodeGroup &g) { return g.gpu == d.id; });
    });
    mCluster.devices = std::move(devices);
}

memx::Network ClusterDocument::networkAfter(const std::vector<memx::NodeGroup> &groupsAfter,
                                            const std::vector<int> &oldIndexOfNew) const
{
    auto mapName = [&](const std::string &name) -> std::optional<std::string> {
        for (size_t og = 0; og < mCluster.groups.size(); ++og) {
            const memx::NodeGroup &old = mCluster.groups[og];
            int member = -2; // -1: the group itself, >= 0: one of its nodes
            if (old.name == name)
                member = -1;
            for (int k = 0; k < old.count && member == -2; ++k)
                if (memx::nodeName(old, k) == name)
                    member = k;
            if (member == -2)
                continue;
            const auto it = std::find(oldIndexOfNew.begin(), oldIndexOfNew.end(), int(og));
            if (it == oldIndexOfNew.end())
                return std::nullopt; // group removed
            const memx::NodeGroup &now = groupsAfter[size_t(it - oldIndexOfNew.begin())];
            if (member == -1)
                return now.name;
            if (member >= now.count)
                return std::nullopt; // node no longer exists
            return memx::nodeName(now, member);
        }
        return name; // not ours: leave as it is
    };
    memx::Network net = mCluster.network;
    net.overrides.clear();
    for (const memx::LinkOverride &o : mCluster.network.overrides) {
        const auto a = mapName(o.a);
        const auto b = mapName(o.b);
        if (a && b)
            net.overrides.push_back({*a, *b, o.link});
    }
    return net;
}

void ClusterDocument::setObjectiveWeights(const memx::ObjectiveWeights &weights)
{
    if (weights == mWeights)
        return;
    mWeights = weights;
    emit objectiveWeightsChanged(mWeights);
}

} // namespace memx::ui
