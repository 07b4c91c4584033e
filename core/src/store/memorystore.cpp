#include "memx/store/memorystore.h"

#include <stdexcept>

namespace memx {

// Outside a transaction every write is its own (trivially atomic) transaction.

void MemoryStore::begin()
{
    if (mSnapshot)
        throw std::logic_error("MemoryStore: a transaction is already open (transactions do not nest)");
    mSnapshot = mState;
}

void MemoryStore::commit()
{
    if (!mSnapshot)
        throw std::logic_error("MemoryStore: commit() without begin()");
    mSnapshot.reset();
}

void MemoryStore::rollback()
{
    if (!mSnapshot)
        throw std::logic_error("MemoryStore: rollback() without begin()");
    mState = std::move(*mSnapshot);
    mSnapshot.reset();
}

template<typename Map> static std::vector<std::string> keysOf(const Map &map)
{
    std::vector<std::string> out;
    for (const auto &kv : map)
        out.push_back(kv.first);
    return out;
}

template<typename Map, typename Key>
static auto findValue(const Map &map, const Key &key) -> std::optional<typename Map::mapped_type>
{
    auto it = map.find(key);
    if (it == map.end())
        return std::nullopt;
    return it->second;
}

void MemoryStore::putCluster(const Cluster &cluster)
{
    if (cluster.name.empty())
        throw std::invalid_argument("a stored cluster needs a name");
    mState.clusters[cluster.name] = cluster;
}
std::optional<Cluster> MemoryStore::cluster(const std::string &name) const
{
    return findValue(mState.clusters, name);
}
std::vector<std::string> MemoryStore::clusterNames() const
{
    return keysOf(mState.clusters);
}

void MemoryStore::putModel(const Model &model)
{
    if (model.id.empty())
        throw std::invalid_argument("a stored model needs an id");
    mState.models[model.id] = model;
}
std::optional<Model> MemoryStore::model(const std::string &id) const
{
    return findValue(mState.models, id);
}
std::vector<std::string> MemoryStore::modelIds() const
{
    return keysOf(mState.models);
}

void MemoryStore::putProfile(const LayerProfile &profile)
{
    if (profile.key.gpu.empty() || profile.key.model.empty())
        throw std::invalid_argument("a stored profile needs a GPU and a model");
    mState.profiles[profile.key] = profile;
}
std::optional<LayerProfile> MemoryStore::profile(const ProfileKey &key) const
{
    return findValue(mState.profiles, key);
}
ProfileSet MemoryStore::profiles() const
{
    ProfileSet set;
    for (const auto &kv : mState.profiles)
        set.add(kv.second);
    return set;
}
size_t MemoryStore::removeProfiles(ProfileOrigin origin)
{
    return std::erase_if(mState.profiles, [origin](const auto &kv) { return kv.second.origin == origin; });
}

bool MemoryStore::removeProfile(const ProfileKey &key)
{
    return mState.profiles.erase(key) > 0;
}

bool MemoryStore::removeRun(const std::string &id)
{
    return mState.runs.erase(id) > 0;
}

void MemoryStore::putRun(const MeasuredRun &run)
{
    if (run.id.empty())
        throw std::invalid_argument("a stored run needs an id");
    mState.runs[run.id] = run;
}
std::optional<MeasuredRun> MemoryStore::run(const std::string &id) const
{
    return findValue(mState.runs, id);
}
std::vector<MeasuredRun> MemoryStore::runs() const
{
    std::vector<MeasuredRun> out;
    for (const auto &kv : mState.runs)
        out.push_back(kv.second);
    return out;
}

void MemoryStore::putNetwork(const NetworkMeasurement &measurement)
{
    mState.network[measurement.key()] = measurement;
}
std::vector<NetworkMeasurement> MemoryStore::networkMeasurements() const
{
    std::vector<NetworkMeasurement> out;
    for (const auto &kv : mState.network)
        out.push_back(kv.second);
    return out;
}

void MemoryStore::putBlob(const std::string &kind, const std::string &key, const std::vector<std::uint8_t> &bytes)
{
    mState.blobs[{kind, key}] = bytes;
}
std::optional<std::vector<std::uint8_t>> MemoryStore::blob(const std::string &kind, const std::string &key) const
{
    return findValue(mState.blobs, std::make_pair(kind, key));
}
std::vector<std::string> MemoryStore::blobKeys(const std::string &kind) const
{
    std::vector<std::string> out;
    for (const auto &kv : mState.blobs)
        if (kv.first.first == kind)
            out.push_back(kv.first.second);
    return out;
}
void MemoryStore::removeBlob(const std::string &kind, const std::string &key)
{
    mState.blobs.erase({kind, key});
}

} // namespace memx
