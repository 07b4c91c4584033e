#include "memx/store/store.h"

#include "memx/profiling/storedvalues.h"

namespace memx {

bool writeImport(Store &store, const ImportBatch &batch, const ProgressCallback &progress)
{
    // What the project's reader would refuse is refused here, before anything is written: a
    // record that imports but cannot be read back would lock the user out of the project.
    checkStorable(batch);
    const size_t total = batch.itemCount();
    size_t done = 0;
    StoreTransaction tx(store);
    auto step = [&]() {
        ++done;
        return !progress || progress(done, total);
    };
    for (const Model &m : batch.models) {
        store.putModel(m);
        if (!step())
            return false;
    }
    for (const Cluster &c : batch.clusters) {
        store.putCluster(c);
        if (!step())
            return false;
    }
    for (const LayerProfile &p : batch.profiles) {
        store.putProfile(p);
        if (!step())
            return false;
    }
    for (const MeasuredRun &r : batch.runs) {
        store.putRun(r);
        if (!step())
            return false;
    }
    for (const NetworkMeasurement &n : batch.network) {
        store.putNetwork(n);
        if (!step())
            return false;
    }
    tx.commit();
    return true;
}

} // namespace memx
