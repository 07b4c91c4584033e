// libFuzzer target: the search-result cache blob ("MXSR" v2, memx/predict/searchresultcache.h),
// as `memx search --project` reads it from a project. The input is stored as the blob of a
// request key in a MemoryStore and read back with loadSearchResult (so the key prefix is parsed
// too: the first 8 bytes of the input are the key's length, as ByteWriter::str writes it), and
// the rest is also given to deserializeSearchResult directly.
// Contract: a bad blob is a miss (nullopt, with one warning) or a std::runtime_error from
// deserializeSearchResult; a blob that is accepted is safe to use: every configuration
// materialises to a plan on the stored cluster (no node "?", no micro-batch 0), its signature
// key builds, and the ranking and the Pareto front terminate.
// Seed corpus: tests/fuzz/corpus/searchresultcache/ holds a real blob of a small search
// (written by tst_searchresultcache with MEMX_WRITE_FUZZ_SEED=<folder>).
#include "fuzzcommon.h"

#include "memx/predict/searchresultcache.h"
#include "memx/search/objective.h"
#include "memx/store/memorystore.h"

#include <vector>

using namespace memx;

namespace {

void use(const SearchResult &r)
{
    for (size_t i = 0; i < r.size(); ++i) {
        const Plan p = r.materialize(i);
        for (const Stage &st : p.stages)
            for (const Replica &rep : st.replicas) {
                fuzz::check(rep.microBatch >= 1, "accepted result materialises micro-batch < 1");
                fuzz::check(r.cluster.findNode(rep.node).has_value(), "accepted result names an unknown node");
            }
        (void)r.signatureKey(i);
    }
    (void)rank(r, ObjectiveWeights {}, 10);
    (void)paretoFront(r);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::vector<std::uint8_t> bytes(data, data + size);
    try {
        use(deserializeSearchResult(bytes));
    } catch (const std::runtime_error &e) {
        fuzz::check(std::string(e.what()).rfind("search result: ", 0) == 0, "error without the blob's name");
    }
    // Through the project path: the blob of a key equal to its own prefix.
    if (size >= 8) {
        std::uint64_t n = 0;
        for (int i = 0; i < 8; ++i)
            n |= static_cast<std::uint64_t>(data[i]) << (8 * i);
        if (n <= size - 8) {
            const SearchRequestKey key {1, std::string(reinterpret_cast<const char *>(data) + 8, n)};
            MemoryStore store;
            store.putBlob(kSearchResultBlobKind, "0000000000000001", bytes);
            std::vector<Diagnostic> warnings;
            if (const auto r = loadSearchResult(store, key, &warnings))
                use(*r);
            else
                fuzz::check(warnings.size() <= 1, "more than one warning for one blob");
        }
    }
    return 0;
}
