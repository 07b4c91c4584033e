#include "command.h"
#include "progress.h"
#include "searchoptions.h"

#include "memx/evaluation/scale.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx scale --cluster CLUSTER --model MODEL --to N1,N2,... [options]

Grows the cluster by replicating its node mix (every node group's count x k; each target must
be a multiple of the cluster's GPU count), re-searches each size and reports how the best plan,
its metrics and the search cost change with scale.

Options:
  --cluster FILE        cluster file (memx.cluster/1)
  --gpus FILE           custom GPU definitions (memx.catalogue/1, e.g. sample_gpus/) the cluster
                        may name; repeatable
  --model ID|FILE       model preset id or model file
  --attention A         attention backend: auto (per device: flash on Ampere/Hopper/CDNA2+,
                        unfused on V100/Turing), flash, fused or unfused (default: the model's)
  --to LIST             target GPU counts, e.g. 40,60 (the cluster's own size is always included)
  --gbs N               global batch (default: the model's)
  --weights T,M,B       objective (default 1,0.5,0.5)
  --threads N           search threads (default: all cores)
  --max-bases N         per-size budget of base configurations (default 500000); larger spaces
                        are narrowed step by step and the steps are reported
  --out DIR             write scale.json, time-vs-gpus.svg, search-time-vs-gpus.svg and
                        throughput-vs-gpus.svg to DIR (created if missing)
  --json                JSON (memx.scale/1) instead of the table
  Search space (as memx search): --stages --tp --mbs --max-mbs --recompute --vpp --cp --cp-comm
  --dist-opt --dp-sharding --radius
  --max-stages --no-permute --no-mixed-stages
  --target T            launch target at every size: megatron, flagscale or any (default: from
                        the cluster, docs/search.md); --idle-groups N as memx search
A progress bar is drawn on stderr when it is a terminal; Ctrl-C cancels (nothing is written,
exit 130).
)";

std::string fixed(double v, int digits)
{
    std::ostringstream o;
    o << std::fixed << std::setprecision(digits) << v;
    return o.str();
}

int run(const std::vector<std::string> &argv)
{
    std::set<std::string> values {"cluster", "gpus",    "model",     "to",  "gbs",
                                  "weights", "threads", "max-bases", "out", "attention"};
    values.insert(kSpaceValueOptions.begin(), kSpaceValueOptions.end());
    std::set<std::string> switches {"json"};
    switches.insert(kSpaceSwitches.begin(), kSpaceSwitches.end());
    Args args(argv, values, switches);
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    ScaleRequest req;
    req.search.cluster = loadClusterOption(args);
    req.search.model = modelOption(args);
    req.search.globalBatch = static_cast<int>(args.intValue("gbs", 1, 1 << 24).value_or(0));
    req.search.threads = static_cast<int>(args.intValue("threads", 1, 1024).value_or(0));
    applySpaceOptions(args, req.search.space);
    {
        const PlannedSearchRequest planned = plannedRequest(args, req.search);
        req.search = planned.search;
        req.autoTarget = planned.autoTarget;
        req.maxIdleGroups = planned.maxIdleGroups;
    }
    req.objective = weightsOption(args);
    req.maxBases = static_cast<uint64_t>(args.intValue("max-bases", 1, 4000000000LL).value_or(500000));
    if (!args.value("to"))
        throw UsageError {"--to: expected target GPU counts, e.g. --to 40,60"};
    req.targetGpus = intList(args, "to", {}, 1, 1 << 20);
    try {
        scaleFactors(req.search.cluster, req.targetGpus);
    } catch (const std::invalid_argument &e) {
        throw UsageError {std::string("--to: ") + e.what()};
    }

    std::vector<ScalePoint> points;
    try {
        CliProgress progress("thousandths (one search per size)");
        points = runScale(req, progress.callback());
        if (progress.interrupted()) {
            progress.finish();
            std::cerr << "cancelled after " << points.size() << " size(s): nothing written\n";
            return Cancelled;
        }
    } catch (const std::invalid_argument &e) {
        std::cerr << "error: " << e.what() << "\n";
        return Failure;
    }
    const nlohmann::json j = toJson(points);

    if (auto out = args.value("out")) {
        std::error_code ec;
        std::filesystem::create_directories(*out, ec);
        if (ec)
            throw LoadError(*out, "", "cannot create the output directory: " + ec.message());
        ChartSeries time {"best plan T (s)", {}, {}}, search {"search (s)", {}, {}}, thr {"samples/s", {}, {}};
        for (const ScalePoint &p : points) {
            time.x.push_back(p.gpus);
            time.y.push_back(p.hasPlan ? p.timeMs / 1000.0 : NAN);
            search.x.push_back(p.gpus);
            search.y.push_back(p.searchMs / 1000.0);
            thr.x.push_back(p.gpus);
            thr.y.push_back(p.hasPlan ? p.samplesPerSecond : NAN);
        }
        const std::string title = req.search.model.id + " on " + req.search.cluster.name;
        const std::filesystem::path dir(*out);
        saveJson(j, (dir / "scale.json").string());
        writeFileAtomically((dir / "time-vs-gpus.svg").string(),
                            svgLineChart("Iteration time vs GPUs: " + title, "GPUs", "iteration time (s)", {time}));
        writeFileAtomically((dir / "search-time-vs-gpus.svg").string(),
                            svgLineChart("Search time vs GPUs: " + title, "GPUs", "search time (s)", {search}));
        writeFileAtomically((dir / "throughput-vs-gpus.svg").string(),
                            svgLineChart("Throughput vs GPUs: " + title, "GPUs", "samples / s", {thr}));
    }
    if (args.has("json")) {
        std::cout << j.dump(2) << "\n";
        return Ok;
    }
    std::cout << "Scale: " << req.search.model.id << " on \"" << req.search.cluster.name
              << "\", weights T,M,B = " << fixed(req.objective.time, 2) << ',' << fixed(req.objective.memory, 2) << ','
              << fixed(req.objective.balance, 2) << "\n\n";
    std::cout << std::setw(6) << "GPUs" << std::setw(12) << "enumerated" << std::setw(10) << "valid" << std::setw(12)
              << "search ms" << std::setw(11) << "T ms" << std::setw(8) << "M" << std::setw(8) << "B" << std::setw(11)
              << "samples/s"
              << "  best plan\n";
    for (const ScalePoint &p : points) {
        std::cout << std::setw(6) << p.gpus << std::setw(12) << p.enumerated << std::setw(10) << p.valid
                  << std::setw(12) << fixed(p.searchMs, 0);
        if (p.hasPlan)
            std::cout << std::setw(11) << fixed(p.timeMs, 1) << std::setw(8) << fixed(p.peakMemory, 3) << std::setw(8)
                      << fixed(p.imbalance, 3) << std::setw(11) << fixed(p.samplesPerSecond, 2) << "  " << p.summary
                      << (p.idle.empty() ? "" : "  [" + p.idle + "]") << "\n";
        else
            std::cout << "  no valid plan\n";
        std::cout << "        target " << p.target << "\n";
        for (const std::string &n : p.narrowed)
            std::cout << "        note: space narrowed: " << n << "\n";
        for (const std::string &n : p.notes)
            std::cout << "        note: " << n << "\n";
    }
    return Ok;
}

CommandRegistration reg({"scale", "replicate the cluster's node mix to larger sizes and re-search each", kUsage, &run});

} // namespace
} // namespace memx::cli
