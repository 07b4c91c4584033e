// Minimal-set profiler: coverage of every kernel of the space (brute force over all enumerated
// configurations), smaller than the naive grid, cost arithmetic by hand, manifest round trip and
// errors, per-layer import from Megatron timer logs.
#include "memx/cost/calibration.h"
#include "memx/io/formats.h"
#include "memx/profiling/augment.h"
#include "memx/profiling/minimalset.h"
#include "memx/search/objective.h"
#include "memx/search/search.h"
#include "memx/store/memorystore.h"
#include "memx/testbed/virtualtestbed.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace memx;

static const std::string kSamples = MEMX_SOURCE_DIR "/sample_clusters";

static void checkCoversSpace(const Cluster &cluster, const Model &model, const MinimalSetOptions &o)
{
    const ProfilingPlan plan = planMinimalSet(cluster, model, o);
    // Brute force: every replica of every evaluated configuration. A configuration's replicas
    // (device, TP, micro-batch) are fixed by its base configuration (pipeline shape, micro-batch,
    // recompute, optimizer); the configurations of one base differ only in layer counts, so the
    // first configuration of each base stands for all of them (far fewer plans to materialise,
    // which keeps this test fast in sanitizer builds).
    SearchRequest req;
    req.cluster = cluster;
    req.model = model;
    req.space = o.space;
    const SearchResult res = runSearch(req);
    QCOMPARE(plan.configurations, res.evaluated);
    std::set<KernelPoint> all;
    std::set<uint32_t> bases;
    for (size_t i = 0; i < res.size(); ++i)
        if (bases.insert(res.baseOf[i]).second)
            for (const Stage &st : res.materialize(i).stages)
                for (const Replica &r : st.replicas)
                    all.insert({cluster.devices[static_cast<size_t>(cluster.findNode(r.node)->device)].id, r.tp,
                                r.microBatch});
    QCOMPARE(std::vector<KernelPoint>(all.begin(), all.end()), plan.needed);
    const std::set<KernelPoint> measured(plan.measured.begin(), plan.measured.end());
    for (const KernelPoint &k : all) {
        const GpuSpec &dev = cluster.devices[static_cast<size_t>(cluster.deviceIndex(k.device))];
        QVERIFY2(kernelCovered(measured, k, tpInterpolationAllowed(dev, o)),
                 qPrintable(QString::fromStdString(k.device) + " tp " + QString::number(k.tp) + " mbs "
                            + QString::number(k.microBatch)));
    }
    QVERIFY2(plan.measured.size() < plan.naiveGridPoints,
             qPrintable(QString::number(plan.measured.size()) + " vs " + QString::number(plan.naiveGridPoints)));
    QVERIFY(plan.measured.size() < plan.needed.size());
}

class TestMinimalSet : public QObject {
    Q_OBJECT

private slots:
    void coveredRule()
    {
        const std::set<KernelPoint> m {{"a", 1, 1}, {"a", 1, 8}, {"a", 4, 2}, {"a", 1, 2}};
        QVERIFY(kernelCovered(m, {"a", 1, 4}, false)); // between 2 and 8 at TP 1
        QVERIFY(!kernelCovered(m, {"a", 1, 16}, true)); // no extrapolation
        QVERIFY(kernelCovered(m, {"a", 2, 2}, true)); // TP 1 and 4 at mbs 2
        QVERIFY(!kernelCovered(m, {"a", 2, 2}, false));
        QVERIFY(!kernelCovered(m, {"b", 1, 4}, true)); // another device
    }

    void coversTheSmallSpace()
    {
        MinimalSetOptions o;
        o.space.microBatches = {1, 2, 4, 8, 16};
        checkCoversSpace(loadCluster(kSamples + "/h100-8x.json"), resolveModel("gpt3-1.3b"), o);
    }

    void coversThe20GpuSpace()
    {
        MinimalSetOptions o;
        o.space.stagesPerGroup = {1, 2};
        checkCoversSpace(loadCluster(kSamples + "/paper-20gpu-nvidia-amd.json"), resolveModel("llama2-7b"), o);
        o.tpInterpolation = true;
        checkCoversSpace(loadCluster(kSamples + "/paper-20gpu-nvidia-amd.json"), resolveModel("llama2-7b"), o);
    }

    /// Every phase polls the callback: the search, then the kernels of the space and the
    /// end-to-end picks (the 512-GPU sample spent ~8 s there deaf to Ctrl-C). The search reports
    /// bases (total 0 in set-up); the later phases report configurations, polled on counts (so
    /// their number of calls does not depend on timing). Cancelling at the search's first call,
    /// at the first call after it, or at the last call of a complete run throws Cancelled.
    void cancelledInEveryPhase()
    {
        const Cluster c = loadCluster(kSamples + "/paper-20gpu-nvidia-amd.json");
        const Model m = resolveModel("llama2-7b");
        MinimalSetOptions o;
        SearchRequest req;
        req.cluster = c;
        req.model = m;
        const SearchResult full = runSearch(req);
        const size_t configurations = full.size();
        QVERIFY(configurations > 4096); // several polls per phase
        size_t searchTotal = 0, after = 0;
        planMinimalSet(c, m, o, [&](size_t, size_t total) {
            if (total == configurations)
                ++after;
            else if (total > 0)
                searchTotal = total;
            return true;
        });
        QVERIFY(searchTotal > 0 && searchTotal != configurations); // the phases are told apart
        QVERIFY(after > 4); // kernels of the space, picks and their launch checks
        auto stopAt = [&](size_t searchCalls, size_t afterCalls) {
            size_t n = 0, k = 0, late = 0;
            try {
                planMinimalSet(c, m, o, [&](size_t, size_t total) {
                    if (total == configurations) {
                        if (afterCalls == 0 || ++k > afterCalls)
                            ++late;
                        return afterCalls == 0 || k < afterCalls;
                    }
                    return searchCalls == 0 || ++n < searchCalls;
                });
            } catch (const Cancelled &) {
                return late == 0;
            }
            return false;
        };
        QVERIFY(stopAt(1, 0)); // the search's first call (set-up)
        QVERIFY(stopAt(0, 1)); // the kernels of the space
        QVERIFY(stopAt(0, after)); // the last launch check or pick
    }

    void costArithmetic()
    {
        const Cluster c = loadCluster(kSamples + "/h100-8x.json");
        const Model m = resolveModel("opt-350m");
        MinimalSetOptions o;
        o.space.tensorParallel = {1};
        o.space.microBatches = {1};
        o.space.recompute = {RecomputeMethod::None};
        o.space.dpSharding = {DpSharding::None};
        o.endToEndRuns = 1;
        o.memoryCalibrationLayers = 0; // memoryCalibrationJobs checks those
        const ProfilingPlan plan = planMinimalSet(c, m, o);
        // One kernel (h100, TP 1, mbs 1): one per-layer job + one end-to-end run.
        QCOMPARE(plan.measured.size(), size_t(1));
        QCOMPARE(plan.jobs.size(), size_t(2));
        const ProfileJob &pl = plan.jobs[0];
        QCOMPARE(pl.layerVariants, (std::vector<int> {1, 3}));
        // By hand: per variant 90 s + 13 iterations x 4 micro-batches x (n x (fwd + bwd) + embedding + head)
        // + Adam over the variant's parameters, all from the analytic kernel.
        const LayerKernel k = makeLayerKernel(c.devices[0], c.intraLink(c.groups[0]), m, 1, 1, false, nullptr, {});
        double expected = 0;
        for (int n : {1, 3}) {
            const double stepMs = n * (k.forwardPrefixMs[1] + k.backwardPrefixMs[1]) + k.embeddingForwardMs
                + k.embeddingBackwardMs + k.headForwardMs + k.headBackwardMs;
            const double params = double(m.paramsPerLayer()) * n + m.embeddingParams() + m.headParams();
            expected += 90 + 13 * (4 * stepMs + params * k.optimizerMsPerParam) / 1000;
        }
        QVERIFY(std::abs(pl.estimatedSeconds - expected) < 1e-9);
        QCOMPARE(pl.gpus, 1);
        const ProfileJob &e2e = plan.jobs[1];
        QCOMPARE(e2e.gpus, 8);
        SearchRequest req;
        req.cluster = c;
        req.model = m;
        req.space = o.space;
        const SearchResult r = runSearch(req);
        double bestT = 1e300;
        for (double t : r.timeMs)
            bestT = std::min(bestT, t);
        QVERIFY(std::abs(e2e.estimatedSeconds - (90 + 13 * bestT / 1000)) < 1e-9);
        QVERIFY(std::abs(plan.profilingGpuHours - (pl.estimatedSeconds + 8 * e2e.estimatedSeconds) / 3600) < 1e-12);
        // Exhaustive: every configuration for 47 s on all 8 GPUs.
        QCOMPARE(plan.configurations, r.evaluated);
        QVERIFY(std::abs(plan.exhaustiveGpuHours - r.evaluated * 8 * 47.0 / 3600) < 1e-9);
        QVERIFY(std::abs(plan.exhaustiveWallDays - r.evaluated * 47.0 / 86400) < 1e-12);
        // The paper's figure: 31,240 x 47 s = 16.99 days.
        QVERIFY(std::abs(31240 * 47.0 / 86400 - 16.99) < 0.01);
    }

    void manifestRoundTripAndErrors()
    {
        // NVIDIA-only and heterogeneous (the 20-GPU sample with L40S nodes for its MI250X ones):
        // FlagScale runs its mixed plans; it has no AMD adaptation.
        nlohmann::json cj = nlohmann::json::parse(readTextFile(kSamples + "/paper-20gpu-nvidia-amd.json"));
        for (nlohmann::json &n : cj["nodes"])
            if (n["gpu"] == "mi250x")
                n["gpu"] = "l40s";
        Diagnostics cd("nvidia-only");
        const Cluster c = parseCluster(cj, builtinCatalogue(), cd);
        QVERIFY(cd.empty());
        const Model m = resolveModel("llama2-7b");
        MinimalSetOptions o;
        o.space.stagesPerGroup = {1};
        ProfilingPlan plan = planMinimalSet(c, m, o);
        const auto files = profilingJobFiles(plan, c, m, "2025-01-01T00:00:00Z");
        const auto manifestFile
            = std::find_if(files.begin(), files.end(), [](const ExportFile &f) { return f.path == "manifest.json"; });
        QVERIFY(manifestFile != files.end());
        const ProfileManifest back = parseManifest(manifestFile->content, "manifest.json");
        QCOMPARE(back.jobs.size(), plan.jobs.size());
        QCOMPARE(back.cluster, c);
        QCOMPARE(back.model, m);
        for (size_t i = 0; i < back.jobs.size(); ++i) {
            QCOMPARE(back.jobs[i].id, plan.jobs[i].id);
            QCOMPARE(back.jobs[i].kind, plan.jobs[i].kind);
            QCOMPARE(back.jobs[i].plan, plan.jobs[i].plan);
            QCOMPARE(back.jobs[i].logFiles, plan.jobs[i].logFiles);
            QCOMPARE(back.jobs[i].scripts.size(), size_t(1));
        }
        // Per-layer scripts are Megatron-LM launches with the profiling flags; heterogeneous
        // end-to-end plans go to FlagScale.
        bool sawMegatron = false, sawFlagScale = false;
        for (const ExportFile &f : files) {
            if (f.path.find("/L1/launch-node0.sh") != std::string::npos) {
                sawMegatron = true;
                QVERIFY(f.content.find("--timing-log-level 2") != std::string::npos);
                QVERIFY(f.content.find("--log-interval 1") != std::string::npos);
                QVERIFY(f.content.find("--num-layers 1") != std::string::npos);
                QVERIFY(f.content.find("--train-iters 13") != std::string::npos);
            }
            sawFlagScale = sawFlagScale || f.path.find("conf/train/memx.yaml") != std::string::npos;
        }
        QVERIFY(sawMegatron);
        QVERIFY(sawFlagScale);

        nlohmann::json j = nlohmann::json::parse(manifestFile->content);
        j["jobs"][0]["kind"] = "per-row";
        j["jobs"][1]["tp"] = 0;
        try {
            parseManifest(j.dump(), "bad.json");
            QFAIL("expected LoadError");
        } catch (const LoadError &e) {
            const std::string what = e.what();
            QVERIFY2(what.find("/jobs/0/kind") != std::string::npos, e.what());
            QVERIFY2(what.find("/jobs/1/tp") != std::string::npos, e.what());
        }
        QVERIFY_THROWS_EXCEPTION(LoadError, parseManifest("{\"format\": \"memx.plan/1\"}", "x.json"));
    }

    void perLayerImportFromTimerLogs()
    {
        // Two variants (1 and 3 layers), 4 micro-batches per iteration, 1 warm-up iteration.
        // Per micro-batch: L1 fwd 40/4 = 10, L3 fwd 100/4 = 25 -> one layer 7.5 ms, ends 2.5 ms.
        //                  L1 bwd 80/4 = 20, L3 bwd 200/4 = 50 -> one layer 15 ms, ends 5 ms.
        auto log = [](double warmF, double f, double b) {
            std::string s;
            for (double x : {warmF, f, f}) {
                s += " iteration 1/ 3 | elapsed time per iteration (ms): 1.0 |\n(min, max) time across ranks (ms):\n";
                s += "    forward-compute ......: (" + std::to_string(x * 0.9) + ", " + std::to_string(x) + ")\n";
                s += "    backward-compute .....: (" + std::to_string(b * 0.9) + ", " + std::to_string(b) + ")\n";
                s += "    optimizer ............: (1.0, 2.0)\n";
            }
            return s;
        };
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        std::ofstream(d + "/j-L1.log") << log(400, 40, 80);
        std::ofstream(d + "/j-L3.log") << log(900, 100, 200);
        ProfileManifest man;
        man.cluster = loadCluster(kSamples + "/h100-8x.json");
        man.model = resolveModel("gpt3-1.3b");
        ProfileJob job;
        job.id = "j";
        job.device = "h100-sxm";
        job.tp = 2;
        job.microBatch = 1;
        job.layerVariants = {1, 3};
        job.microBatchesPerIteration = 4;
        job.warmupIterations = 1;
        job.logFiles = {"j-L1.log", "j-L3.log"};
        ProfileJob missing = job;
        missing.id = "k";
        missing.logFiles = {"k-L1.log", "k-L3.log"};
        man.jobs = {job, missing};
        const ImportBatch b = importManifestLogs(man, d, -1, "");
        QCOMPARE(b.profiles.size(), size_t(1));
        QCOMPARE(b.warnings.size(), size_t(1)); // job k has no logs
        const LayerProfile &p = b.profiles[0];
        QCOMPARE(p.origin, ProfileOrigin::Measured);
        QCOMPARE(p.key, (ProfileKey {"h100-sxm", "gpt3-1.3b", 2, 1, 2048}));
        QCOMPARE(p.layers.size(), size_t(26));
        QVERIFY(std::abs(p.layers[5].forwardMs - 7.5) < 1e-9);
        QVERIFY(std::abs(p.layers[5].backwardMs - 15.0) < 1e-9);
        QVERIFY(std::abs(p.layers.front().forwardMs + p.layers.back().forwardMs - 2.5) < 1e-9);
        QVERIFY(std::abs(p.layers.front().backwardMs + p.layers.back().backwardMs - 5.0) < 1e-9);
        // A bad number names the file and line.
        std::ofstream(d + "/j-L3.log") << "    forward-compute ......: (1.0, abc)\n";
        try {
            importManifestLogs(man, d, -1, "");
            QFAIL("expected LoadError");
        } catch (const LoadError &e) {
            QVERIFY2(std::string(e.what()).find("line 1") != std::string::npos, e.what());
        }
    }

    void memoryCalibrationJobsCloseTheLoop()
    {
        // The plan: per device type, the model truncated to 2 layers on 1 GPU at micro-batch 1, 2
        // and 4 and on the node's 8 GPUs data-parallel.
        const Cluster c = loadCluster(kSamples + "/h100-8x.json");
        const Model m = resolveModel("opt-350m");
        const Model small = memoryCalibrationModel(m, 2);
        QCOMPARE(small.shape.layers, 2);
        QCOMPARE(small.id, std::string("opt-350m-memcal-L2"));
        MinimalSetOptions o;
        o.space.tensorParallel = {1};
        o.space.microBatches = {1};
        o.endToEndRuns = 0;
        ProfilingPlan plan = planMinimalSet(c, m, o);
        std::vector<ProfileJob> memory;
        for (const ProfileJob &j : plan.jobs)
            if (j.kind == ProfileJobKind::Memory)
                memory.push_back(j);
        QCOMPARE(memory.size(), size_t(4));
        const std::vector<std::string> ids {"memory-h100-sxm-g1-mbs1", "memory-h100-sxm-g1-mbs2",
                                            "memory-h100-sxm-g1-mbs4", "memory-h100-sxm-g8-mbs1"};
        for (size_t i = 0; i < ids.size(); ++i) {
            QCOMPARE(memory[i].id, ids[i]);
            QCOMPARE(memory[i].layerVariants, std::vector<int> {2});
            QCOMPARE(memory[i].plan->stages.at(0).layerCount, 2);
            QCOMPARE(memory[i].gpus, i == 3 ? 8 : 1);
        }
        // The manifest keeps them (their plans are validated against the truncated model).
        const ProfileManifest man = parseManifest(manifestToJson(plan, c, m).dump(), "manifest.json");
        std::vector<ProfileJob> parsed;
        for (const ProfileJob &j : man.jobs)
            if (j.kind == ProfileJobKind::Memory)
                parsed.push_back(j);
        QCOMPARE(parsed.size(), size_t(4));
        QCOMPARE(parsed[3].device, std::string("h100-sxm"));
        QVERIFY(*parsed[3].plan == *memory[3].plan);
        // The scripts: Megatron-LM on 2 layers, the device-used sampler next to the log.
        bool sampler = false, twoLayers = false, samplerFile = false;
        for (const ExportFile &f : profilingJobFiles(plan, c, m, "2026-01-01T00:00:00Z")) {
            if (f.path == "jobs/memory-h100-sxm-g8-mbs1/run.sh")
                sampler = f.content.find(
                              "bash \"$HERE\"/sample-memory.sh \"$LOG_DIR\"/'memory-h100-sxm-g8-mbs1.nvml.csv' &")
                    != std::string::npos;
            if (f.path == "jobs/memory-h100-sxm-g8-mbs1/sample-memory.sh")
                samplerFile = f.executable && f.content == memorySamplerScript();
            if (f.path == "jobs/memory-h100-sxm-g8-mbs1/launch-node0.sh")
                twoLayers = f.content.find("--num-layers 2") != std::string::npos;
        }
        QVERIFY(sampler && twoLayers && samplerFile);

        // Logs written as a device with a known runtime would write them: context 1.25 GiB,
        // 0.8 GiB per communicator, a 15% allocator reserve. Megatron's report says the allocator's
        // figures; nvidia-smi samples say device-used (a busier GPU outside the job is ignored).
        Cluster truth = man.cluster;
        truth.devices[0].runtimeMemory.contextGiB = 1.25;
        truth.devices[0].runtimeMemory.communicatorGiB = 0.8;
        truth.devices[0].runtimeMemory.reserveFraction = 0.15;
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        std::vector<double> expected;
        for (const ProfileJob &j : parsed) {
            const PlanEstimate e = estimatePlan(*j.plan, truth, small, nullptr, {});
            const GpuMemory &g = e.gpus[static_cast<size_t>(e.fullestGpu)];
            expected.push_back(e.peakBytes);
            std::ofstream log(d + "/" + j.logFiles.front());
            for (int it = 1; it <= 4; ++it)
                log << " iteration " << it << "/ 4 | elapsed time per iteration (ms): 100.0 |\n";
            char line[256];
            std::snprintf(line, sizeof line,
                          "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1.0 | max allocated: %.6f | "
                          "reserved: %.6f | max reserved: %.6f\n",
                          g.allocatedBytes / 1048576.0, g.reservedBytes / 1048576.0, g.reservedBytes / 1048576.0);
            log << line;
            std::ofstream smi(d + "/" + memoryJobSampleFile(j));
            char peak[64];
            std::snprintf(peak, sizeof peak, "%.6f", e.peakBytes / 1048576.0);
            smi << "0, 512\n" << (j.gpus - 1) << ", " << peak << "\n" << j.gpus << ", 70000\n0, 600";
        }
        ImportBatch b = importManifestLogs(man, d, 1, "");
        QCOMPARE(b.runs.size(), size_t(4));
        QVERIFY(std::any_of(b.models.begin(), b.models.end(), [&](const Model &x) { return x.id == small.id; }));
        for (size_t i = 0; i < b.runs.size(); ++i) {
            QCOMPARE(b.runs[i].memoryKind, MemoryKind::DeviceUsed);
            QCOMPARE(b.runs[i].modelId, small.id);
            QVERIFY2(std::abs(*b.runs[i].peakMemoryBytes - expected[i]) < 1.0, b.runs[i].id.c_str());
        }
        // `memx profile calibrate` recovers the device's figures from these four runs alone.
        const Calibration cal = calibrate(
            b.runs, [&](const std::string &id) { return id == small.id ? std::optional<Model>(small) : std::nullopt; },
            nullptr, CostOptions {}, 0);
        QCOMPARE(cal.devices.size(), size_t(1));
        const DeviceCalibration &dc = cal.devices[0];
        QVERIFY2(std::abs(*dc.contextGiB - 1.25) < 1e-3, std::to_string(*dc.contextGiB).c_str());
        QVERIFY2(std::abs(*dc.communicatorGiB - 0.8) < 1e-3, std::to_string(*dc.communicatorGiB).c_str());
        QVERIFY2(std::abs(*dc.reserveFraction - 0.15) < 1e-4, std::to_string(*dc.reserveFraction).c_str());

        // Without samples: the log's max reserved, said so.
        std::filesystem::remove(d + "/" + memoryJobSampleFile(parsed[0]));
        b = importManifestLogs(man, d, 1, "");
        QCOMPARE(b.runs[0].memoryKind, MemoryKind::Reserved);
        QVERIFY(std::any_of(b.warnings.begin(), b.warnings.end(), [](const Diagnostic &w) {
            return w.message.find("no device-used samples") != std::string::npos;
        }));
        // A malformed sample names the file and the line.
        std::ofstream(d + "/" + memoryJobSampleFile(parsed[1])) << "0, 512\n0, lots\n1, 3\n";
        try {
            importManifestLogs(man, d, 1, "");
            QFAIL("expected LoadError");
        } catch (const LoadError &e) {
            const std::string w = e.what();
            QVERIFY2(w.find("line 2") != std::string::npos && w.find(".nvml.csv") != std::string::npos, e.what());
        }
    }

    /// sample-memory.sh run for real against stand-ins of nvidia-smi and rocm-smi (the only tools on
    /// its PATH besides awk and sleep): what it writes is what peakDeviceUsedBytes reads, and the
    /// peak is the highest sample of the job's GPUs.
    void memorySamplerReadsNvidiaAndRocmSmi_data()
    {
        QTest::addColumn<QString>("tool");
        QTest::addColumn<QString>("fake");
        QTest::addColumn<double>("peakMiB");
        // nvidia-smi -lms loops by itself: the stand-in prints two samples, then waits to be killed.
        QTest::newRow("nvidia-smi") << "nvidia-smi"
                                    << "#!/bin/sh\necho '0, 1200'\necho '1, 900'\necho '0, 1500'\necho '2, 70000'\n"
                                       "echo '1, 1400'\nexec sleep 30\n"
                                    << 1500.0;
        // rocm-smi: one table per call; the stand-in grows card1's usage by 1 MiB a call (a counter
        // file), and lists a third card outside the job. Header as rocm-smi 5.x/6.x prints it.
        QTest::newRow("rocm-smi") << "rocm-smi"
                                  << "#!/bin/sh\nn=$(cat \"$0.n\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$0.n\"\n"
                                     "echo 'device,VRAM Total Memory (B),VRAM Total Used Memory (B)'\n"
                                     "echo \"card0,68702699520,1073741824\"\n"
                                     "echo \"card1,68702699520,$((2147483648 + n * 1048576))\"\n"
                                     "echo \"card2,68702699520,60000000000\"\n"
                                  << -1.0; // 2048 + (calls - 1) MiB
        // Another rocm-smi release: "GPU[N]" devices, "VRAM Used Memory (B)".
        QTest::newRow("rocm-smi GPU[N]")
            << "rocm-smi"
            << "#!/bin/sh\nn=$(cat \"$0.n\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$0.n\"\n"
               "echo 'device,VRAM Total Memory (B),VRAM Used Memory (B)'\n"
               "echo \"GPU[0],68702699520,1073741824\"\n"
               "echo \"GPU[1],68702699520,$((2147483648 + n * 1048576))\"\n"
               "echo \"GPU[2],68702699520,60000000000\"\n"
            << -1.0;
    }

    void memorySamplerReadsNvidiaAndRocmSmi()
    {
        QFETCH(QString, tool);
        QFETCH(QString, fake);
        QFETCH(double, peakMiB);
        QTemporaryDir dir;
        const QString bin = dir.filePath("bin");
        QVERIFY(QDir().mkpath(bin));
        for (const char *t : {"awk", "sleep", "cat", "sh"}) {
            const QString real = QStandardPaths::findExecutable(t);
            QVERIFY2(!real.isEmpty(), t);
            QVERIFY(QFile::link(real, bin + "/" + t));
        }
        QFile f(bin + "/" + tool);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(fake.toUtf8());
        f.close();
        f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
        QFile script(dir.filePath("sample-memory.sh"));
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write(QByteArray::fromStdString(memorySamplerScript()));
        script.close();
        const QString out = dir.filePath("m.nvml.csv");
        QProcess p;
        QProcessEnvironment env;
        env.insert("PATH", bin);
        p.setProcessEnvironment(env);
        p.start(QStandardPaths::findExecutable("bash"), {script.fileName(), out});
        QVERIFY(p.waitForStarted());
        // The fake rocm-smi counts its calls in bin/rocm-smi.n (0 while missing or being rewritten).
        const auto calls = [&bin] {
            QFile n(bin + "/rocm-smi.n");
            return n.open(QIODevice::ReadOnly) ? n.readAll().trimmed().toInt() : 0;
        };
        QTest::qWait(900);
        if (peakMiB < 0) // it loops (every 200 ms): at least two calls, however loaded the machine is
            QTRY_VERIFY_WITH_TIMEOUT(calls() >= 2, 30000);
        else
            QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(out).size() > 0, 30000);
        p.terminate();
        QVERIFY(p.waitForFinished(5000));
        QFile o(out);
        QVERIFY(o.open(QIODevice::ReadOnly));
        const std::string text = o.readAll().toStdString();
        const std::optional<double> peak = peakDeviceUsedBytes(text, out.toStdString(), 2);
        QVERIFY2(peak, text.c_str());
        if (peakMiB < 0) {
            int made = 0; // a call cut by terminate() may have left the counter mid-rewrite
            QTRY_VERIFY_WITH_TIMEOUT((made = calls()) >= 2, 5000);
            // Card 1 is the job's fullest GPU; the last table may have been cut when the sampler was
            // stopped: the peak is at least the next-to-last call's and at most the last call's.
            QVERIFY2(*peak >= (2048.0 + made - 2) * 1048576.0 - 1 && *peak <= (2048.0 + made - 1) * 1048576.0 + 1,
                     qPrintable(QString::number(*peak / 1048576.0)));
        } else
            QCOMPARE(*peak, peakMiB * 1048576.0);
    }

    void loopInCore()
    {
        // plan -> testbed profiles -> augment -> search with profiles -> top plans on the testbed -> store.
        const Cluster c = loadCluster(kSamples + "/h100-8x.json");
        const Model m = resolveModel("gpt3-1.3b");
        MinimalSetOptions o;
        o.space.microBatches = {1, 2, 4, 8};
        const ProfilingPlan plan = planMinimalSet(c, m, o);
        const VirtualTestbed tb(11);
        MemoryStore store;
        ImportBatch batch;
        for (const ProfileJob &j : plan.jobs)
            if (j.kind == ProfileJobKind::PerLayer)
                batch.profiles.push_back(tb.runProfilingJob(j, c, m));
        writeImport(store, batch);
        for (const LayerProfile &p : augmentProfiles(store.profiles()))
            store.putProfile(p);
        // Every needed kernel now has a profile.
        for (const KernelPoint &k : plan.needed)
            QVERIFY(store.profile({k.device, m.id, k.tp, k.microBatch, m.shape.seqLength}).has_value());

        SearchRequest req;
        req.cluster = c;
        req.model = m;
        req.space = o.space;
        const SearchResult analytic = runSearch(req);
        req.profiles = store.profiles();
        const SearchResult profiled = runSearch(req);
        // Same space; the profiles' measured activation bytes may change which plans fit.
        QCOMPARE(profiled.enumerated, analytic.enumerated);
        QVERIFY(profiled.size() > 0);
        QVERIFY(profiled.timeMs != analytic.timeMs); // the profiles are used
        for (uint32_t i : rank(profiled, ObjectiveWeights::timeOnly(), 3)) {
            const TestbedRun r = tb.runPlan(profiled.materialize(i), c, m);
            QVERIFY2(r.ok, r.error.c_str());
            store.putRun(r.run);
            // The testbed agrees with the profile-based estimate only roughly (it has effects the
            // model lacks: TP protocol steps, allocator, event-driven pipeline).
            QVERIFY(r.run.iterationTimeMs > 0.5 * profiled.timeMs[i] && r.run.iterationTimeMs < 2 * profiled.timeMs[i]);
        }
        QCOMPARE(store.runs().size(), size_t(3));
        for (const MeasuredRun &r : store.runs()) {
            QCOMPARE(r.memoryKind, MemoryKind::DeviceUsed);
            QVERIFY(r.peakMemoryBytes.has_value());
            QCOMPARE(r.modelId, m.id);
            QCOMPARE(r.cluster, c);
            QCOMPARE(r.source, std::string("virtual-testbed seed=11"));
        }
    }
};

QTEST_GUILESS_MAIN(TestMinimalSet)
#include "tst_minimalset.moc"
