#include "memx/store/store.h"

#include "memx/profiling/storedvalues.h"

namespace memx {

void writeImport(Store &store, const ImportBatch &batch, const ProgressFn &progress)
{
    // What the project's reader would refuse is refused here, before anything is written: a
    // record that imports but cannot be read back would lock the user out of the project.
    checkStorable(batch);
    const size_t total = batch.itemCount();
    size_t done = 0;
    StoreTransaction tx(store);
    auto step = [&]() { reportOrThrow(progress, ++done, total); }; // Cancelled: tx rolls back
    for (const Model &m : batch.models) {
        store.putModel(m);
        step();
    }
    for (const Cluster &c : batch.clusters) {
        store.putCluster(c);
        step();
    }
    for (const LayerProfile &p : batch.profiles) {
        store.putProfile(p);
        step();
    }
    for (const MeasuredRun &r : batch.runs) {
        store.putRun(r);
        step();
    }
    for (const NetworkMeasurement &n : batch.network) {
        store.putNetwork(n);
        step();
    }
    tx.commit();
}

} // namespace memx
