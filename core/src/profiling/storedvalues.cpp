#include "memx/profiling/storedvalues.h"

#include "memx/io/formats.h"
#include "memx/profile/importbatch.h"
#include "memx/profiling/profileio.h"
#include "memx/util/jsonreader.h"

namespace memx {

namespace {

/// Records the reader's problems with one record as import errors naming the record.
void refuse(std::vector<Diagnostic> &out, const std::string &source, const std::string &record,
            const Diagnostics &found)
{
    for (const Diagnostic &d : found.items())
        out.push_back({source.empty() ? "(import)" : source, record + (d.pointer == "/" ? "" : d.pointer),
                       "the project could not be read back with this value (" + d.message + "); nothing was imported"});
}

std::string profileRecord(const ProfileKey &k)
{
    return "/profiles/" + k.gpu + "/" + k.model + "/tp" + std::to_string(k.tp) + "/mb" + std::to_string(k.microBatch)
        + "/seq" + std::to_string(k.seqLength);
}

} // namespace

void checkStorable(const ImportBatch &batch)
{
    std::vector<Diagnostic> errors;
    for (const Model &m : batch.models) {
        Diagnostics d;
        parseModel(toJson(m), d);
        refuse(errors, "", "/models/" + m.id, d);
    }
    for (const Cluster &c : batch.clusters) {
        Diagnostics d;
        parseCluster(toJson(c), builtinCatalogue(), d); // as SqliteStore::cluster reads it
        refuse(errors, "", "/clusters/" + c.name, d);
    }
    for (const LayerProfile &p : batch.profiles) {
        Diagnostics d;
        parseLayerProfile(toJson(p), "", d, Catalogue()); // stored GPU ids may be custom devices
        refuse(errors, p.source, profileRecord(p.key), d);
    }
    for (const MeasuredRun &r : batch.runs) {
        Diagnostics d;
        parseMeasuredRun(toJson(r), "", d);
        refuse(errors, r.source, "/runs/" + r.id, d);
    }
    for (const NetworkMeasurement &n : batch.network) {
        Diagnostics d;
        parseNetworkMeasurement(toJson(n), "", d);
        refuse(errors, n.source, "/network/" + n.key(), d);
    }
    if (!errors.empty())
        throw LoadError(errors);
}

} // namespace memx
