// libFuzzer target: the public-dataset (Sailor) importer, through its real entry point
// importSailor(dir). The importer reads a folder tree, so each input is written into one file of a
// small, otherwise valid dataset tree in a temporary folder:
//   byte 0 (mod 7) selects the file, the remaining bytes are its content:
//     0 profiles/layer_times.json          4 network/multizone_bandwidths_het.json
//     1 profiles/layer_memory.json         5 training-configs/training_config_opt_350.json
//     2 network/intra_node_bandwidths.json 6 measured-runs/gh200/OPT-350/N2/plan_config_N2_D2.json
//     3 network/network_coeffs_all_homo.json
// The other files hold the synthetic base below (not the public data, which stays outside the
// repository). After each input the tree is put back as it was.
#include "fuzzcommon.h"

#include "memx/profiling/sailorimporter.h"

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace memx;
namespace fs = std::filesystem;

namespace {
const char *kSlots[] = {
    "profiles/layer_times.json",
    "profiles/layer_memory.json",
    "network/intra_node_bandwidths.json",
    "network/network_coeffs_all_homo.json",
    "network/multizone_bandwidths_het.json",
    "training-configs/training_config_opt_350.json",
    "measured-runs/gh200/OPT-350/N2/plan_config_N2_D2.json",
};
constexpr int kSlotCount = 7;

// OPT-350 has 24 layers: 26 entries (embedding, 24 layers, output layer).
std::string baseLayerTimes()
{
    std::string s = R"({"OPT-350": {"GH-96": {"1": {"1": {)";
    for (int i = 0; i < 26; ++i)
        s += (i ? ", " : "") + std::string("\"") + std::to_string(i) + "\": [0.001, 0.002, 0.0005]";
    return s + "}}}}}";
}
std::string baseLayerMemory()
{
    std::string s = R"({"OPT-350": {"1": {)";
    for (int i = 0; i < 26; ++i)
        s += (i ? ", " : "") + std::string("\"") + std::to_string(i)
            + "\": {\"params_bytes\": 1048576, \"act_mem_bytes\": 2097152}";
    return s + "}}}";
}

void write(const fs::path &p, const char *data, size_t size)
{
    fs::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(data, static_cast<std::streamsize>(size));
}

struct Tree {
    fs::path root;
    std::string times = baseLayerTimes(), memory = baseLayerMemory();
    Tree()
    {
        root = fs::temp_directory_path() / ("memx-fuzz-sailor-" + std::to_string(::getpid()));
        fs::remove_all(root);
        restore();
    }
    ~Tree() { fs::remove_all(root); }
    void restore()
    {
        for (int i = 2; i < kSlotCount; ++i)
            fs::remove(root / kSlots[i]);
        write(root / kSlots[0], times.data(), times.size());
        write(root / kSlots[1], memory.data(), memory.size());
    }
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static Tree tree;
    if (size < 1)
        return 0;
    const int slot = data[0] % kSlotCount;
    write(tree.root / kSlots[slot], reinterpret_cast<const char *>(data + 1), size - 1);
    try {
        size_t calls = 0;
        const ImportBatch b = importSailor(tree.root.string(), [&](size_t done, size_t total) {
            fuzz::check(done <= total, "progress done > total");
            ++calls;
            return true;
        });
        fuzz::check(calls > 0, "no progress reported");
        fuzz::check(!b.models.empty(), "an import without models");
    } catch (const LoadError &e) {
        fuzz::checkError(e);
    }
    tree.restore();
    return 0;
}
