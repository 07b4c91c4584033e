#include "memx/profiling/megatronlog.h"
#include "memx/profiling/minimalset.h"
#include "memx/profiling/sailorimporter.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <optional>
#include <regex>
#include <sstream>

namespace memx {

MegatronTimers parseMegatronTimers(const std::string &text, const std::string &file)
{
    MegatronTimers t;
    static const std::regex timer(
        R"(^\s*(forward-compute|backward-compute|optimizer)\s*\.*:\s*\(([^,]*),\s*([^)]*)\))");
    static const std::regex header(R"(^# memx virtual testbed \(SIMULATED\) (virtual-testbed seed=\d+))");
    std::istringstream in(text);
    std::string line;
    int lineNo = 0;
    while (std::getline(in, line)) {
        ++lineNo;
        std::smatch m;
        if (lineNo == 1 && std::regex_search(line, m, header)) {
            t.simulated = true;
            t.simulatedSource = m[1];
            continue;
        }
        if (!std::regex_search(line, m, timer))
            continue;
        double v = 0;
        try {
            size_t pos = 0;
            const std::string s = m[3];
            v = std::stod(s, &pos);
            if (pos != s.size() || !(v >= 0))
                throw std::invalid_argument("");
        } catch (const std::exception &) {
            throw LoadError(file, "line " + std::to_string(lineNo),
                            "expected a time in ms as the max of the " + std::string(m[1]) + " timer, found \""
                                + std::string(m[3]) + "\"");
        }
        (m[1] == "forward-compute"        ? t.forwardComputeMs
             : m[1] == "backward-compute" ? t.backwardComputeMs
                                          : t.optimizerMs)
            .push_back(v);
    }
    return t;
}

namespace {

double meanAfter(const std::vector<double> &v, int skip, const std::string &file, const char *what)
{
    if (static_cast<int>(v.size()) <= skip)
        throw LoadError(file, "",
                        "expected more than " + std::to_string(skip) + " \"" + what
                            + "\" timer lines (warm-up skipped), found " + std::to_string(v.size())
                            + " - was the job run with --timing-log-level 2?");
    return std::accumulate(v.begin() + skip, v.end(), 0.0) / static_cast<double>(v.size() - static_cast<size_t>(skip));
}

} // namespace

std::string memoryJobSampleFile(const ProfileJob &job)
{
    std::string stem = job.logFiles.empty() ? job.id : job.logFiles.front();
    if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".log") == 0)
        stem.resize(stem.size() - 4);
    return stem + ".nvml.csv";
}

std::optional<double> peakDeviceUsedBytes(const std::string &text, const std::string &file, int gpus)
{
    std::optional<double> peak;
    std::istringstream in(text);
    std::string line;
    int lineNo = 0;
    while (std::getline(in, line)) {
        ++lineNo;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos)
            continue;
        const size_t comma = line.find(',');
        int index = -1;
        double mib = -1;
        try {
            size_t a = 0, b = 0;
            const std::string i = line.substr(0, comma), v = comma == std::string::npos ? "" : line.substr(comma + 1);
            index = std::stoi(i, &a);
            mib = std::stod(v, &b);
            if (i.find_first_not_of(" \t", a) != std::string::npos
                || v.find_first_not_of(" \t", b) != std::string::npos)
                throw std::invalid_argument("");
        } catch (const std::exception &) {
            // nvidia-smi stopped mid-line when the job ended: only the last line may be cut.
            if (in.peek() == std::char_traits<char>::eof() && text.back() != '\n')
                break;
            throw LoadError(file, "line " + std::to_string(lineNo),
                            "expected \"index, memory.used\" (nvidia-smi --query-gpu=index,memory.used "
                            "--format=csv,noheader,nounits), found \""
                                + line.substr(0, 80) + "\"");
        }
        if (index < 0 || !(mib >= 0) || mib > 1e8)
            throw LoadError(file, "line " + std::to_string(lineNo),
                            "expected a GPU index >= 0 and memory.used in MiB, found \"" + line.substr(0, 80) + "\"");
        if (index < gpus)
            peak = std::max(peak.value_or(0.0), mib * 1048576.0);
    }
    return peak;
}

ImportBatch importManifestLogs(const ProfileManifest &manifest, const std::string &logDir, int skip,
                               const std::string &group, const ProgressFn &progress)
{
    ImportBatch batch;
    batch.clusters.push_back(manifest.cluster);
    batch.models.push_back(manifest.model);
    const Model &model = manifest.model;
    const int L = model.shape.layers;
    size_t matched = 0;
    for (size_t ji = 0; ji < manifest.jobs.size(); ++ji) {
        const ProfileJob &job = manifest.jobs[ji];
        if (progress && !progress(ji, manifest.jobs.size()))
            throw Cancelled();
        std::vector<std::string> paths;
        size_t present = 0;
        for (const std::string &f : job.logFiles) {
            paths.push_back((std::filesystem::path(logDir) / f).string());
            present += std::filesystem::exists(paths.back());
        }
        if (present == 0) {
            batch.warnings.push_back(
                {logDir, "", "no log of job " + job.id + " (expected " + job.logFiles.front() + ")"});
            continue;
        }
        if (present < paths.size())
            throw LoadError(logDir, "",
                            "job " + job.id + ": some logs are missing (expected all of its layer variants)");
        const int jobSkip = skip >= 0 ? skip : job.warmupIterations;
        ++matched;
        if (job.kind != ProfileJobKind::PerLayer) {
            const bool memoryJob = job.kind == ProfileJobKind::Memory;
            const Model runModel = memoryJob ? memoryCalibrationModel(model, job.layerVariants.front()) : model;
            MegatronImportOptions o;
            o.skipIterations = jobSkip;
            o.runId = "manifest/" + manifest.cluster.name + "/" + job.id;
            o.group = group.empty() ? "profiling/" + manifest.cluster.name : group;
            MeasuredRun run = importMegatronLog(paths.front(), *job.plan, manifest.cluster, runModel, o);
            const std::string text = readTextFile(paths.front());
            const MegatronTimers t = parseMegatronTimers(text, paths.front());
            if (t.simulated) {
                run.source = t.simulatedSource + " (" + paths.front() + ")";
                run.memoryKind = MemoryKind::DeviceUsed; // the testbed logs its device-used peak
            } else if (memoryJob) {
                const std::string samples = (std::filesystem::path(logDir) / memoryJobSampleFile(job)).string();
                std::optional<double> used;
                if (std::filesystem::exists(samples))
                    used = peakDeviceUsedBytes(readTextFile(samples), samples, job.gpus);
                if (used) {
                    run.peakMemoryBytes = *used;
                    run.memoryKind = MemoryKind::DeviceUsed;
                } else {
                    const MegatronLogSummary sum = parseMegatronLog(text, paths.front());
                    double reserved = 0;
                    for (const auto &[rank, bytes] : sum.maxReservedBytesByRank)
                        reserved = std::max(reserved, bytes);
                    if (reserved > 0) {
                        run.peakMemoryBytes = reserved;
                        run.memoryKind = MemoryKind::Reserved;
                    }
                    batch.warnings.push_back(
                        {samples, "",
                         "no device-used samples of memory job " + job.id
                             + ": imported the log's max reserved, which does not show the runtime context or the "
                               "communicator buffers"});
                }
            }
            if (memoryJob && std::none_of(batch.models.begin(), batch.models.end(), [&](const Model &m) {
                    return m.id == runModel.id;
                }))
                batch.models.push_back(runModel);
            batch.runs.push_back(std::move(run));
            continue;
        }
        if (job.layerVariants.size() < 2 || job.layerVariants.front() == job.layerVariants.back())
            throw LoadError(logDir, "", "job " + job.id + ": per-layer import needs two different layer variants");
        struct Variant {
            int layers;
            double fwd, bwd, opt;
        };
        std::vector<Variant> vs;
        bool simulated = false;
        std::string simSource;
        for (size_t v = 0; v < paths.size(); ++v) {
            const MegatronTimers t = parseMegatronTimers(readTextFile(paths[v]), paths[v]);
            simulated = simulated || t.simulated;
            simSource = t.simulatedSource;
            const double mb = job.microBatchesPerIteration;
            vs.push_back({job.layerVariants[v],
                          meanAfter(t.forwardComputeMs, jobSkip, paths[v], "forward-compute") / mb,
                          meanAfter(t.backwardComputeMs, jobSkip, paths[v], "backward-compute") / mb,
                          t.optimizerMs.empty() ? 0.0 : meanAfter(t.optimizerMs, jobSkip, paths[v], "optimizer")});
        }
        const Variant &a = vs.front(), &b = vs.back();
        const double dl = b.layers - a.layers;
        const double layerF = (b.fwd - a.fwd) / dl, layerB = (b.bwd - a.bwd) / dl, layerO = (b.opt - a.opt) / dl;
        if (!(layerF > 0) || !(layerB > 0))
            throw LoadError(paths.back(), "",
                            "job " + job.id + ": the larger variant is not slower than the smaller one ("
                                + std::to_string(b.fwd) + " vs " + std::to_string(a.fwd)
                                + " ms forward) - noisy or mismatched logs");
        const double endsF = std::max(0.0, a.fwd - a.layers * layerF), endsB = std::max(0.0, a.bwd - a.layers * layerB);
        const double endsO = std::max(0.0, a.opt - a.layers * layerO);
        // Split embedding / output layer as the analytic model does.
        const int di = manifest.cluster.deviceIndex(job.device);
        const GpuSpec &dev = manifest.cluster.devices[static_cast<size_t>(di)];
        const LayerKernel k = makeLayerKernel(dev, defaultIntraLink(dev), model, job.tp, job.microBatch, false, nullptr,
                                              CostOptions {});
        const double fShare = k.embeddingForwardMs / (k.embeddingForwardMs + k.headForwardMs);
        const double bShare = k.embeddingBackwardMs / (k.embeddingBackwardMs + k.headBackwardMs);
        const double emb = static_cast<double>(model.embeddingParams()), head = static_cast<double>(model.headParams());
        const double oShare = emb + head > 0 ? emb / (emb + head) : 0.5;
        LayerProfile p;
        p.key = ProfileKey {job.device, model.id, job.tp, job.microBatch, model.shape.seqLength};
        p.origin = simulated ? ProfileOrigin::Simulated : ProfileOrigin::Measured;
        p.source
            = (simulated ? simSource + " " : std::string()) + "manifest job " + job.id + " (" + paths.front() + ")";
        p.layers.resize(static_cast<size_t>(L) + 2);
        p.layers.front() = {endsF * fShare, endsB * bShare, endsO * oShare, {}, {}};
        p.layers.back() = {endsF * (1 - fShare), endsB * (1 - bShare), endsO * (1 - oShare), {}, {}};
        for (int i = 1; i <= L; ++i)
            p.layers[static_cast<size_t>(i)] = {layerF, layerB, std::max(0.0, layerO), {}, {}};
        batch.profiles.push_back(std::move(p));
    }
    if (matched == 0)
        throw LoadError(logDir, "",
                        "no log of any manifest job found (expected e.g. "
                            + (manifest.jobs.empty() ? std::string("-") : manifest.jobs.front().logFiles.front())
                            + ")");
    if (progress)
        progress(manifest.jobs.size(), manifest.jobs.size());
    return batch;
}

} // namespace memx
