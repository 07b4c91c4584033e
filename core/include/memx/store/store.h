#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/profile/importbatch.h"
#include "memx/profile/layerprofile.h"
#include "memx/profile/measuredrun.h"
#include "memx/profile/networkmeasurement.h"
#include "memx/util/progress.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace memx {

/// A MemX project's persistent data: cluster(s), model(s), per-layer profiles, measured runs,
/// network measurements and opaque blobs (trained predictor, prediction cache).
///
/// Every write happens in a transaction: either inside an explicit begin()/commit() pair (use
/// StoreTransaction) or, outside one, in its own implicit transaction. Transactions do not nest.
/// Not thread-safe: one thread at a time.
class Store {
public:
    virtual ~Store() = default;

    /// Where the data lives, for messages (a project file's path; empty for in-memory stores).
    virtual std::string location() const { return {}; }

    virtual void begin() = 0;
    virtual void commit() = 0;
    virtual void rollback() = 0;
    virtual bool inTransaction() const = 0;

    /// Stores a cluster under its name (replacing one with the same name).
    virtual void putCluster(const Cluster &cluster) = 0;
    virtual std::optional<Cluster> cluster(const std::string &name) const = 0;
    virtual std::vector<std::string> clusterNames() const = 0;

    /// Stores a model under its id (replacing one with the same id).
    virtual void putModel(const Model &model) = 0;
    virtual std::optional<Model> model(const std::string &id) const = 0;
    virtual std::vector<std::string> modelIds() const = 0;

    /// Stores a per-layer profile, replacing one with the same key.
    virtual void putProfile(const LayerProfile &profile) = 0;
    virtual std::optional<LayerProfile> profile(const ProfileKey &key) const = 0;
    /// All profiles, sorted by key.
    virtual ProfileSet profiles() const = 0;
    /// Removes every profile of the given origin (e.g. to redo augmentation); returns how many.
    virtual size_t removeProfiles(ProfileOrigin origin) = 0;
    /// Removes the profile with this key, without reading it (so a record the reader refuses can
    /// still be removed); returns whether there was one.
    virtual bool removeProfile(const ProfileKey &key) = 0;

    /// Stores a measured run, replacing one with the same id.
    virtual void putRun(const MeasuredRun &run) = 0;
    virtual std::optional<MeasuredRun> run(const std::string &id) const = 0;
    /// All runs, sorted by id.
    virtual std::vector<MeasuredRun> runs() const = 0;
    /// Removes the run with this id, without reading it; returns whether there was one.
    virtual bool removeRun(const std::string &id) = 0;

    /// Stores a network measurement, replacing one with the same key().
    virtual void putNetwork(const NetworkMeasurement &measurement) = 0;
    /// All network measurements, sorted by key().
    virtual std::vector<NetworkMeasurement> networkMeasurements() const = 0;

    /// Opaque bytes under (kind, key), e.g. ("predictor", "default") or ("prediction-cache", sig).
    virtual void putBlob(const std::string &kind, const std::string &key, const std::vector<std::uint8_t> &bytes) = 0;
    virtual std::optional<std::vector<std::uint8_t>> blob(const std::string &kind, const std::string &key) const = 0;
    virtual std::vector<std::string> blobKeys(const std::string &kind) const = 0;
    virtual void removeBlob(const std::string &kind, const std::string &key) = 0;
};

/// begin() on construction, rollback() on destruction unless commit() was called.
class StoreTransaction {
public:
    explicit StoreTransaction(Store &store)
        : mStore(store)
    {
        mStore.begin();
    }
    ~StoreTransaction()
    {
        if (!mDone) {
            try {
                mStore.rollback();
            } catch (...) {
            }
        }
    }
    StoreTransaction(const StoreTransaction &) = delete;
    StoreTransaction &operator=(const StoreTransaction &) = delete;

    void commit()
    {
        mStore.commit();
        mDone = true;
    }

private:
    Store &mStore;
    bool mDone = false;
};

/// Writes a whole import batch in one transaction. `progress` is called after every item; when
/// it returns false (it throws Cancelled then) or any write throws, the transaction is rolled back
/// and the store is left exactly as before.
void writeImport(Store &store, const ImportBatch &batch, const ProgressFn &progress = {});

} // namespace memx
