// libFuzzer target: project files. The input is written to a temporary .memx file, opened with
// SqliteStore (create = false, as `memx profile list` does) and everything in it is read back.
// A file that is not a readable MemX project must be refused with a LoadError naming it (or,
// for corruption found later by a query, a std::runtime_error naming it; memx prints both).
#include "fuzzcommon.h"

#include "memx/store/sqlitestore.h"

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace memx;
namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const fs::path path = fs::temp_directory_path() / ("memx-fuzz-" + std::to_string(::getpid()) + ".memx");
    for (const char *suffix : {"", "-wal", "-shm", "-journal"})
        fs::remove(path.string() + suffix);
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
    }
    try {
        SqliteStore store(path.string(), false);
        for (const std::string &name : store.clusterNames())
            (void)store.cluster(name);
        for (const std::string &id : store.modelIds())
            (void)store.model(id);
        (void)store.profiles();
        for (const MeasuredRun &r : store.runs())
            (void)store.run(r.id);
        (void)store.networkMeasurements();
        for (const std::string &key : store.blobKeys("predictor"))
            (void)store.blob("predictor", key);
    } catch (const LoadError &e) {
        fuzz::checkError(e);
    } catch (const std::runtime_error &e) {
        // SQLite errors met while reading (a corrupt page found by a query) come as
        // std::runtime_error "<path>: <what>: <sqlite message>"; they must name the file.
        fuzz::check(std::string(e.what()).rfind(path.string() + ": ", 0) == 0, "SQLite error without the file name");
    }
    return 0;
}
