#pragma once

#include "memx/store/store.h"

#include <memory>

namespace memx {

/// A Store in a SQLite project file (".memx"): WAL journal, `PRAGMA user_version` = schema
/// version, migrations applied in order on open, every write in a transaction.
/// Opening a file written by a newer MemX (higher schema version) or a file that is not a MemX
/// project throws LoadError naming the file.
class SqliteStore final : public Store {
public:
    /// Schema version this build writes.
    static int schemaVersion();

    /// Opens (and with `create`, creates) the project file at `path`.
    explicit SqliteStore(const std::string &path, bool create = true);
    ~SqliteStore() override;
    SqliteStore(const SqliteStore &) = delete;
    SqliteStore &operator=(const SqliteStore &) = delete;

    const std::string &path() const;
    std::string location() const override { return path(); }
    /// The file's schema version as opened (after migrations: schemaVersion()).
    int fileSchemaVersion() const;

    /// Copies the whole project to `path` atomically (SQLite backup API into a temporary file in
    /// the same folder, then rename). Throws std::runtime_error on failure, leaving `path` as it was.
    void saveAs(const std::string &path) const;

    void begin() override;
    void commit() override;
    void rollback() override;
    bool inTransaction() const override;

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
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace memx
