// libFuzzer target: cluster JSON (parseJsonText + parseCluster), plus the round trip
// toJson -> parseCluster of every cluster that parses cleanly.
#include "fuzzcommon.h"

#include "memx/io/formats.h"
#include "memx/util/jsonreader.h"

using namespace memx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try {
        const nlohmann::json j = parseJsonText(fuzz::text(data, size), "fuzz.cluster.json");
        Diagnostics diags("fuzz.cluster.json");
        const Cluster c = parseCluster(j, builtinCatalogue(), diags);
        if (!diags.empty())
            return 0;
        // A valid cluster expands and measures without trouble, and what we write we read back.
        fuzz::check(c.totalGpus() >= 1, "valid cluster without GPUs");
        (void)c.nodes();
        Diagnostics again("round-trip");
        const Cluster back = parseCluster(toJson(c), builtinCatalogue(), again);
        fuzz::check(again.empty(), "toJson(cluster) does not parse back");
        fuzz::check(back.totalGpus() == c.totalGpus(), "round trip changed the GPU count");
    } catch (const LoadError &e) {
        fuzz::checkError(e);
    }
    return 0;
}
