#include "command.h"

#include "memx/io/formats.h"

#include <iomanip>
#include <iostream>
#include <map>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx info CLUSTER [--json]

Summarises a cluster file: GPUs per vendor and type, total memory, peak dense compute,
intra-node links and the inter-node network.
)";

int run(const std::vector<std::string> &argv)
{
    Args args(argv, {}, {"json"});
    if (args.positional().size() != 1)
        throw UsageError {"expected exactly one CLUSTER file"};
    const std::string path = args.positional().front();
    const Cluster c = loadCluster(path);

    struct TypeInfo {
        std::string vendor;
        int nodes = 0;
        int gpus = 0;
        double memGiB = 0;
        double tflops = 0;
    };
    std::map<std::string, TypeInfo> types;
    std::map<std::string, int> vendors;
    for (const NodeGroup &g : c.groups) {
        const GpuSpec &d = c.deviceOf(g);
        TypeInfo &t = types[d.id];
        t.vendor = d.vendor;
        t.nodes += g.count;
        t.gpus += g.count * g.gpusPerNode;
        t.memGiB += d.memoryGiB.value_or(0) * g.count * g.gpusPerNode;
        t.tflops += d.peakTflops(true).value_or(0) * g.count * g.gpusPerNode;
        vendors[d.vendor] += g.count * g.gpusPerNode;
    }
    if (args.has("json")) {
        nlohmann::json j;
        j["name"] = c.name;
        j["nodes"] = c.totalNodes();
        j["gpus"] = c.totalGpus();
        j["memoryGiB"] = c.totalMemoryGiB();
        j["peakBf16Pflops"] = c.peakPflops(true);
        j["vendors"] = vendors;
        nlohmann::json t = nlohmann::json::object();
        for (const auto &[id, info] : types)
            t[id] = {{"vendor", info.vendor},
                     {"nodes", info.nodes},
                     {"gpus", info.gpus},
                     {"memoryGiB", info.memGiB},
                     {"peakTflops", info.tflops}};
        j["types"] = t;
        nlohmann::json groups = nlohmann::json::array();
        for (const NodeGroup &g : c.groups) {
            const Link l = c.intraLink(g);
            groups.push_back({{"name", g.name},
                              {"gpu", g.gpu},
                              {"gpusPerNode", g.gpusPerNode},
                              {"count", g.count},
                              {"intraLinkGBps", l.bandwidthGBps}});
        }
        j["groups"] = groups;
        j["interNodeGBps"] = c.network.interNode.bandwidthGBps;
        j["overrides"] = c.network.overrides.size();
        std::cout << j.dump(2) << "\n";
        return Ok;
    }
    std::cout << "Cluster \"" << c.name << "\" (" << path << ")\n";
    if (!c.description.empty())
        std::cout << "  " << c.description << "\n";
    std::cout << std::fixed << std::setprecision(1) << "  " << c.totalNodes() << " nodes, " << c.totalGpus()
              << " GPUs, " << c.totalMemoryGiB() << " GiB device memory, " << std::setprecision(2) << c.peakPflops(true)
              << " PFLOP/s dense BF16/FP16 peak\n";
    std::cout << "  by vendor:";
    for (const auto &[v, n] : vendors)
        std::cout << " " << v << " " << n;
    std::cout << "\n\n  " << std::left << std::setw(16) << "TYPE" << std::setw(9) << "VENDOR" << std::right
              << std::setw(6) << "NODES" << std::setw(6) << "GPUS" << std::setw(11) << "MEM GiB" << std::setw(11)
              << "PEAK TF\n";
    for (const auto &[id, t] : types)
        std::cout << "  " << std::left << std::setw(16) << id << std::setw(9) << t.vendor << std::right << std::setw(6)
                  << t.nodes << std::setw(6) << t.gpus << std::setw(11) << std::setprecision(1) << t.memGiB
                  << std::setw(10) << std::setprecision(0) << t.tflops << "\n";
    std::cout << "\n  Node groups:\n";
    for (const NodeGroup &g : c.groups) {
        const Link l = c.intraLink(g);
        std::cout << "    " << std::left << std::setw(14) << g.name << std::right << std::setw(4) << g.count << " x "
                  << std::setw(2) << g.gpusPerNode << " x " << std::left << std::setw(16) << g.gpu << " intra-node "
                  << std::setprecision(0) << l.bandwidthGBps << " GB/s" << (g.intraLink ? "" : " (from catalogue)")
                  << "\n";
    }
    std::cout << std::setprecision(1) << "\n  Network: " << c.network.interNode.bandwidthGBps << " GB/s, "
              << c.network.interNode.latencyUs << " us between nodes by default";
    if (!c.network.interNode.curve.empty())
        std::cout << " (measured curve, " << c.network.interNode.curve.size() << " points)";
    std::cout << "\n";
    for (const LinkOverride &o : c.network.overrides)
        std::cout << "    " << o.a << " <-> " << o.b << ": " << o.link.bandwidthGBps << " GB/s, " << o.link.latencyUs
                  << " us\n";
    return Ok;
}

CommandRegistration reg({"info", "summarise a cluster: GPUs per vendor, memory, compute, links", kUsage, &run});

} // namespace
} // namespace memx::cli
