#pragma once

#include "memx/store/store.h"

#include <map>

namespace memx {

/// A Store held in memory (for tests and scratch projects). Transactions snapshot the whole
/// state on begin() and restore it on rollback().
class MemoryStore final : public Store {
public:
    void begin() override;
    void commit() override;
    void rollback() override;
    bool inTransaction() const override { return mSnapshot.has_value(); }

    void putCluster(const Cluster &cluster) override;
    std::optional<Cluster> cluster(const std::string &name) const override;
    std::vector<std::string> clusterNames() const override;
    void putModel(const Model &model) override;
    std::optional<Model> model(const std::string &id) const override;
    std::vector<std::string> modelIds() const override;
    void putProfile(const LayerProfile &profile) override;
    std::optional<LayerProfile> profile(const ProfileKey &key) const override;
    ProfileSet profiles() const override;
    size_t removeProfiles(ProfileOrigin origin) override;
    bool removeProfile(const ProfileKey &key) override;
    void putRun(const MeasuredRun &run) override;
    std::optional<MeasuredRun> run(const std::string &id) const override;
    std::vector<MeasuredRun> runs() const override;
    bool removeRun(const std::string &id) override;
    void putNetwork(const NetworkMeasurement &measurement) override;
    std::vector<NetworkMeasurement> networkMeasurements() const override;
    void putBlob(const std::string &kind, const std::string &key, const std::vector<std::uint8_t> &bytes) override;
    std::optional<std::vector<std::uint8_t>> blob(const std::string &kind, const std::string &key) const override;
    std::vector<std::string> blobKeys(const std::string &kind) const override;
    void removeBlob(const std::string &kind, const std::string &key) override;

private:
    struct State {
        std::map<std::string, Cluster> clusters;
        std::map<std::string, Model> models;
        std::map<ProfileKey, LayerProfile> profiles;
        std::map<std::string, MeasuredRun> runs;
        std::map<std::string, NetworkMeasurement> network;
        std::map<std::pair<std::string, std::string>, std::vector<std::uint8_t>> blobs;
    };
    State mState;
    std::optional<State> mSnapshot;
};

} // namespace memx
