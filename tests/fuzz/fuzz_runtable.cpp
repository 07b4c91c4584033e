// libFuzzer target: tables of measured runs (importRunTable, megatron-tutorials layout) and
// vTrain's table (importVTrainTable). Every run they return must be a valid plan on its cluster.
#include "fuzzcommon.h"

#include "memx/io/formats.h"
#include "memx/profiling/runtableimporter.h"

#include <map>

using namespace memx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string text = fuzz::text(data, size);
    for (int layout = 0; layout < 2; ++layout) {
        try {
            const ImportBatch b = layout == 0 ? importRunTable(text, "fuzz.csv") : importVTrainTable(text, "fuzz.csv");
            std::map<std::string, Model> models;
            for (const Model &m : b.models)
                models[m.id] = m;
            for (const MeasuredRun &r : b.runs) {
                fuzz::check(models.count(r.modelId) == 1, "a run names a model the batch does not hold");
                Diagnostics d;
                validatePlan(r.plan, r.cluster, models.at(r.modelId), d);
                fuzz::check(d.empty(), "an imported run's plan is invalid");
                fuzz::check(r.outOfMemory || r.iterationTimeMs > 0, "a run that ran has no time");
            }
        } catch (const LoadError &e) {
            fuzz::checkError(e);
        }
    }
    return 0;
}
