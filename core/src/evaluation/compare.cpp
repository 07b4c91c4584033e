#include "memx/evaluation/compare.h"

#include "memx/search/plannedsearch.h"

#include "memx/cost/costmodel.h"
#include "memx/io/formats.h"
#include "memx/predict/learnedpredictor.h"
#include "memx/predict/learnedsearch.h"
#include "memx/util/diagnostic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

namespace memx {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool homogeneousRecompute(const SearchResult &result, size_t index)
{
    const std::vector<RecomputeMethod> rc = result.recomputeOf(index);
    return std::all_of(rc.begin(), rc.end(), [&](RecomputeMethod m) { return m == rc.front(); });
}

/// Ranks a subset of `result` (indices `subset`) and returns indices into `result`.
std::vector<uint32_t> rankSubset(const SearchResult &result, const std::vector<uint32_t> &subset,
                                 ObjectiveWeights objective, size_t topK)
{
    std::vector<double> t, m, b;
    t.reserve(subset.size());
    m.reserve(subset.size());
    b.reserve(subset.size());
    for (uint32_t i : subset) {
        t.push_back(result.timeMs[i]);
        m.push_back(result.peakMemory[i]);
        b.push_back(result.imbalance[i]);
    }
    const MetricView view {t.data(), m.data(), b.data(), subset.size()};
    std::vector<uint32_t> out;
    for (uint32_t k : rank(view, objective, topK))
        out.push_back(subset[k]);
    return out;
}

std::string planKey(Plan plan)
{
    plan.name.clear();
    return toJson(plan).dump();
}

void fillPredicted(MethodOutcome &o, double t, double m, double b, const ObjectiveScale &mx, ObjectiveWeights w)
{
    o.predictedTimeMs = t;
    o.predictedPeak = m;
    o.predictedImbalance = b;
    o.memxLogScore = logScore(mx, w, t, m, b);
}

} // namespace

const char *compareMethodId(CompareMethod method)
{
    switch (method) {
    case CompareMethod::MemX:
        return "memx";
    case CompareMethod::TimeOnly:
        return "time-only";
    case CompareMethod::UniformSplit:
        return "uniform-split";
    case CompareMethod::Analytic:
        return "analytic";
    case CompareMethod::Exhaustive:
        return "exhaustive-profiling";
    }
    return "?";
}

std::vector<int> uniformSplit(int layers, int stages)
{
    if (stages < 1 || stages > layers)
        return {};
    std::vector<int> out(static_cast<size_t>(stages), layers / stages);
    for (int i = 0; i < layers % stages; ++i)
        ++out[static_cast<size_t>(i)];
    return out;
}

void measuredMemoryMetrics(const TestbedRun &run, const Plan &plan, const Cluster &cluster, double &peak,
                           double &imbalance)
{
    std::vector<double> util;
    size_t k = 0;
    for (const Stage &stage : plan.stages)
        for (const Replica &replica : stage.replicas) {
            const std::optional<Node> node = cluster.findNode(replica.node);
            const double capacity = node ? cluster.devices[static_cast<size_t>(node->device)].memoryBytes() : 0.0;
            for (size_t g = 0; g < replica.gpus.size(); ++g, ++k)
                if (k < run.peakBytesPerGpu.size() && capacity > 0)
                    util.push_back(run.peakBytesPerGpu[k] / capacity);
        }
    peak = 0;
    imbalance = 0;
    if (util.empty())
        return;
    double sum = 0;
    for (double u : util) {
        peak = std::max(peak, u);
        sum += u;
    }
    const double mean = sum / static_cast<double>(util.size());
    double var = 0;
    for (double u : util)
        var += (u - mean) * (u - mean);
    var /= static_cast<double>(util.size());
    imbalance = mean > 0 ? std::sqrt(var) / mean : 0.0;
}

void rankGroundTruth(GroundTruth &truth, ObjectiveWeights memoryBalanceWeights)
{
    std::vector<uint32_t> okIdx;
    std::vector<double> t, m, b;
    for (uint32_t i = 0; i < truth.candidates.size(); ++i) {
        const TruthCandidate &c = truth.candidates[i];
        if (!c.ok)
            continue;
        okIdx.push_back(i);
        t.push_back(c.timeMs);
        m.push_back(c.peak);
        b.push_back(c.imbalance);
    }
    const MetricView view {t.data(), m.data(), b.data(), okIdx.size()};
    truth.timeOrder.clear();
    truth.memoryBalanceOrder.clear();
    for (uint32_t k : rank(view, ObjectiveWeights::timeOnly(), okIdx.size()))
        truth.timeOrder.push_back(okIdx[k]);
    for (uint32_t k : rank(view, memoryBalanceWeights, okIdx.size()))
        truth.memoryBalanceOrder.push_back(okIdx[k]);
}

namespace {

/// The planned search of `search` (the request's target and idle groups), every subset with the
/// learned predictor when given; notes and the target go to the report.
SearchResult plannedSearch(const CompareRequest &request, const SearchRequest &search, const LearnedPredictor *learned,
                           const ProgressFn &progress, CompareReport &report)
{
    PlannedSearchRequest p;
    p.search = search;
    p.autoTarget = request.autoTarget;
    p.maxIdleGroups = request.maxIdleGroups;
    p.maxVerifiedBatches = -1;
    SubsetSearch run;
    if (learned)
        run = [learned](const SearchRequest &r, const ProgressFn &f) {
            SearchRequest x = r;
            x.collectFeatures = true;
            SearchResult res = runSearch(x, f);
            if (!res.cancelled)
                applyLearnedPredictor(res, *learned, nullptr);
            return res;
        };
    PlannedSearchResult out = runPlannedSearch(p, progress, run);
    report.target = out.target;
    report.targetReason = out.targetReason;
    for (const std::string &n : out.notes)
        if (std::find(report.notes.begin(), report.notes.end(), n) == report.notes.end())
            report.notes.push_back(n);
    return std::move(out.result);
}

} // namespace

CompareReport runCompare(const CompareRequest &request, const ProgressFn &progress)
{
    CompareReport report;
    report.memxWeights = request.memxWeights;
    const ObjectiveWeights memxW = request.memxWeights;
    const ObjectiveWeights timeW = ObjectiveWeights::timeOnly();
    const size_t topN = std::max<size_t>(1, request.candidatesPerMethod);
    const Cluster &cluster = request.search.cluster;
    const Model &model = request.search.model;
    // Progress in thousandths of the whole job: the four searches (analytic, learned, proportional,
    // uniform re-estimation) 200 each, the testbed runs of the candidates the last 200.
    constexpr size_t kTotal = 1000, kPhase = 200;
    size_t phase = 0; // phases finished
    bool cancelled = false;
    auto report01 = [&](double fractionOfPhase) {
        if (cancelled)
            return false;
        const double f = std::clamp(fractionOfPhase, 0.0, 1.0);
        if (progress && !progress(phase * kPhase + static_cast<size_t>(f * kPhase), kTotal))
            cancelled = true;
        return !cancelled;
    };
    // (0, 0) is the search's set-up: nothing of the phase done yet.
    auto searchProgress = [&](size_t d, size_t t) { return report01(t ? static_cast<double>(d) / t : 0.0); };
    auto step = [&]() {
        ++phase;
        report01(0.0);
        report.cancelled = cancelled;
        return !cancelled;
    };

    // ---- baseline 3 (and MemX without a learned predictor): full space, analytic ----
    auto t0 = Clock::now();
    SearchRequest analyticReq = request.search;
    analyticReq.collectFeatures = false;
    const SearchResult analytic = plannedSearch(request, analyticReq, nullptr, searchProgress, report);
    const double analyticMs = msSince(t0);
    const ObjectiveScale mx = objectiveScaleOf(metricsOf(analytic));
    if (!step())
        return report;

    // ---- MemX ----
    SearchResult learnedResult;
    double memxMs = analyticMs;
    const SearchResult *memxRes = &analytic;
    if (request.learned) {
        t0 = Clock::now();
        learnedResult = plannedSearch(request, request.search, request.learned, searchProgress, report);
        memxMs = msSince(t0);
        memxRes = &learnedResult;
    } else {
        report.notes.push_back("no learned predictor: MemX uses the analytic model, so it coincides with baseline 3");
    }
    if (!step())
        return report;

    // ---- baselines 1 and 2: compute-proportional split only, homogeneous recompute ----
    t0 = Clock::now();
    SearchRequest propReq = request.search;
    propReq.collectFeatures = false;
    propReq.space.neighbourRadius = 0;
    propReq.space.memoryAwareSplit = false;
    const SearchResult prop = plannedSearch(request, propReq, nullptr, searchProgress, report);
    std::vector<uint32_t> homogeneous;
    for (uint32_t i = 0; i < prop.size(); ++i)
        if (homogeneousRecompute(prop, i))
            homogeneous.push_back(i);
    const double propMs = msSince(t0);
    if (!step())
        return report;

    t0 = Clock::now();
    struct UniformPlan {
        Plan plan;
        double t, m, b;
    };
    std::vector<UniformPlan> uniform;
    {
        const std::vector<uint32_t> byTime
            = rankSubset(prop, homogeneous, timeW, std::min(homogeneous.size(), request.uniformSplitLimit));
        if (byTime.size() < homogeneous.size())
            report.notes.push_back("baseline 2 re-estimated the " + std::to_string(byTime.size()) + " fastest of "
                                   + std::to_string(homogeneous.size())
                                   + " homogeneous-recompute configurations with a uniform split");
        for (size_t k = 0; k < byTime.size() && !cancelled; ++k) {
            if (k % 256 == 0)
                report01(static_cast<double>(k) / byTime.size());
            const uint32_t i = byTime[k];
            Plan p = prop.materialize(i);
            const std::vector<int> counts = uniformSplit(model.shape.layers, static_cast<int>(p.stages.size()));
            if (counts.empty())
                continue;
            int first = 0;
            for (size_t s = 0; s < p.stages.size(); ++s) {
                p.stages[s].firstLayer = first;
                p.stages[s].layerCount = counts[s];
                first += counts[s];
                if (p.stages[s].recompute.layers > counts[s])
                    p.stages[s].recompute.layers = counts[s];
            }
            Diagnostics diags;
            validatePlan(p, cluster, model, diags);
            if (!diags.empty())
                continue;
            const PlanEstimate e = estimatePlan(p, cluster, model, &request.search.profiles, request.search.cost);
            if (e.oom)
                continue;
            uniform.push_back({std::move(p), e.iterationTimeMs, e.peakUtilisation, e.imbalance});
        }
    }
    const double uniformMs = propMs + msSince(t0);
    std::vector<uint32_t> uniformTop;
    {
        std::vector<double> t, m, b;
        for (const UniformPlan &u : uniform) {
            t.push_back(u.t);
            m.push_back(u.m);
            b.push_back(u.b);
        }
        uniformTop = rank(MetricView {t.data(), m.data(), b.data(), uniform.size()}, timeW, topN);
    }
    if (!step())
        return report;

    // ---- method picks and their top-N ----
    const std::vector<uint32_t> memxTop = rank(*memxRes, memxW, topN);
    const std::vector<uint32_t> memxTimeTop = rank(*memxRes, timeW, topN);
    const std::vector<uint32_t> analyticTop = rank(analytic, memxW, topN);
    const std::vector<uint32_t> timeOnlyTop = rankSubset(prop, homogeneous, timeW, topN);

    // ---- ground truth: union of candidates, measured on the testbed ----
    GroundTruth &truth = report.truth;
    std::map<std::string, uint32_t> byKey;
    auto addCandidate = [&](Plan plan, const std::string &method) -> uint32_t {
        const std::string key = planKey(plan);
        auto it = byKey.find(key);
        if (it != byKey.end()) {
            auto &by = truth.candidates[it->second].proposedBy;
            if (std::find(by.begin(), by.end(), method) == by.end())
                by.push_back(method);
            return it->second;
        }
        TruthCandidate c;
        c.plan = std::move(plan);
        c.proposedBy.push_back(method);
        truth.candidates.push_back(std::move(c));
        const uint32_t idx = static_cast<uint32_t>(truth.candidates.size() - 1);
        byKey.emplace(key, idx);
        return idx;
    };
    std::vector<int> pickOf(5, -1);
    for (size_t k = 0; k < memxTop.size(); ++k) {
        const uint32_t c = addCandidate(memxRes->materialize(memxTop[k]), "memx");
        if (k == 0)
            pickOf[0] = static_cast<int>(c);
    }
    for (size_t k = 0; k < timeOnlyTop.size(); ++k) {
        const uint32_t c = addCandidate(prop.materialize(timeOnlyTop[k]), "time-only");
        if (k == 0)
            pickOf[1] = static_cast<int>(c);
    }
    for (size_t k = 0; k < uniformTop.size(); ++k) {
        const uint32_t c = addCandidate(uniform[uniformTop[k]].plan, "uniform-split");
        if (k == 0)
            pickOf[2] = static_cast<int>(c);
    }
    for (size_t k = 0; k < analyticTop.size(); ++k) {
        const uint32_t c = addCandidate(analytic.materialize(analyticTop[k]), "analytic");
        if (k == 0)
            pickOf[3] = static_cast<int>(c);
    }
    for (uint32_t i : memxTimeTop)
        addCandidate(memxRes->materialize(i), "memx-space-by-time");

    const VirtualTestbed testbed(request.testbedSeed, request.testbed);
    t0 = Clock::now();
    for (size_t i = 0; i < truth.candidates.size(); ++i) {
        TruthCandidate &c = truth.candidates[i];
        c.plan.name = "candidate-" + std::to_string(i);
        const TestbedRun run = testbed.runPlan(c.plan, cluster, model);
        c.ok = run.ok;
        c.error = run.error;
        c.timeMs = run.ok ? run.run.iterationTimeMs : 0.0;
        measuredMemoryMetrics(run, c.plan, cluster, c.peak, c.imbalance);
        if (!report01(static_cast<double>(i + 1) / truth.candidates.size())) {
            report.cancelled = true;
            truth.testbedMs = msSince(t0);
            return report;
        }
    }
    truth.testbedMs = msSince(t0);
    rankGroundTruth(truth, memxW);

    auto positionIn = [](const std::vector<uint32_t> &order, int cand) {
        for (size_t k = 0; k < order.size(); ++k)
            if (static_cast<int>(order[k]) == cand)
                return static_cast<int>(k + 1);
        return 0;
    };

    // ---- outcomes ----
    auto makeOutcome = [&](CompareMethod method, const char *name, const char *description) {
        MethodOutcome o;
        o.method = method;
        o.id = compareMethodId(method);
        o.name = name;
        o.description = description;
        return o;
    };
    auto finish = [&](MethodOutcome &o, int cand) {
        if (cand < 0)
            return;
        const TruthCandidate &c = truth.candidates[static_cast<size_t>(cand)];
        o.hasPlan = true;
        o.plan = c.plan;
        o.plan.name = o.id;
        o.measuredOk = c.ok;
        o.measuredError = c.error;
        o.measuredTimeMs = c.timeMs;
        o.measuredPeak = c.peak;
        o.measuredImbalance = c.imbalance;
        o.timeRank = positionIn(truth.timeOrder, cand);
        o.memoryBalanceRank = positionIn(truth.memoryBalanceOrder, cand);
        o.top1Time = o.timeRank == 1;
        o.top1MemoryBalance = o.memoryBalanceRank == 1;
        if (c.ok && !truth.timeOrder.empty()) {
            const TruthCandidate &bestT = truth.candidates[truth.timeOrder.front()];
            o.timeRegretPct = 100.0 * (c.timeMs / bestT.timeMs - 1.0);
            // Scores against the ok candidates' scale, as rankGroundTruth ranks them.
            std::vector<double> t, m, b;
            for (const TruthCandidate &x : truth.candidates)
                if (x.ok) {
                    t.push_back(x.timeMs);
                    m.push_back(x.peak);
                    b.push_back(x.imbalance);
                }
            const ObjectiveScale sc = objectiveScaleOf(MetricView {t.data(), m.data(), b.data(), t.size()});
            const TruthCandidate &bestMB = truth.candidates[truth.memoryBalanceOrder.front()];
            o.memoryBalanceRegretPct = 100.0
                * (std::exp(logScore(sc, memxW, c.timeMs, c.peak, c.imbalance)
                            - logScore(sc, memxW, bestMB.timeMs, bestMB.peak, bestMB.imbalance))
                   - 1.0);
        }
    };

    MethodOutcome memx = makeOutcome(CompareMethod::MemX, "MemX",
                                     "full space (splits, per-device recompute, orders), weights (1,wm,wb)");
    memx.predictor = memxRes->predictor;
    memx.searchMs = memxMs;
    memx.validConfigs = memxRes->size();
    if (!memxTop.empty())
        fillPredicted(memx, memxRes->timeMs[memxTop[0]], memxRes->peakMemory[memxTop[0]],
                      memxRes->imbalance[memxTop[0]], mx, memxW);
    finish(memx, pickOf[0]);

    MethodOutcome b1 = makeOutcome(CompareMethod::TimeOnly, "Time-only (Metis/AMP-style)",
                                   "compute-proportional split, homogeneous recompute, memory as a hard limit, "
                                   "weights (1,0,0)");
    b1.predictor = "analytic";
    b1.searchMs = propMs;
    b1.validConfigs = homogeneous.size();
    if (!timeOnlyTop.empty())
        fillPredicted(b1, prop.timeMs[timeOnlyTop[0]], prop.peakMemory[timeOnlyTop[0]], prop.imbalance[timeOnlyTop[0]],
                      mx, memxW);
    finish(b1, pickOf[1]);

    MethodOutcome b2 = makeOutcome(CompareMethod::UniformSplit, "Uniform split",
                                   "uniform layer split, homogeneous recompute, weights (1,0,0)");
    b2.predictor = "analytic";
    b2.searchMs = uniformMs;
    b2.validConfigs = uniform.size();
    if (!uniformTop.empty()) {
        const UniformPlan &u = uniform[uniformTop[0]];
        fillPredicted(b2, u.t, u.m, u.b, mx, memxW);
    }
    finish(b2, pickOf[2]);

    MethodOutcome b3 = makeOutcome(CompareMethod::Analytic, "Analytic (no learning)",
                                   "MemX's space and weights, analytic cost model only");
    b3.predictor = "analytic";
    b3.searchMs = analyticMs;
    b3.validConfigs = analytic.size();
    if (!analyticTop.empty())
        fillPredicted(b3, analytic.timeMs[analyticTop[0]], analytic.peakMemory[analyticTop[0]],
                      analytic.imbalance[analyticTop[0]], mx, memxW);
    finish(b3, pickOf[3]);

    MethodOutcome b4 = makeOutcome(CompareMethod::Exhaustive, "Exhaustive profiling",
                                   "runs every valid configuration end to end; finds the measured best by "
                                   "definition; cost = configurations x seconds per run");
    b4.validConfigs = analytic.size();
    b4.profilingSeconds = static_cast<double>(analytic.size()) * request.secondsPerProfiledRun;
    b4.searchMs = b4.profilingSeconds * 1000.0;
    if (!truth.timeOrder.empty()) {
        // Its plan is the ground truth's best (by time); it has no plan of its own.
        const TruthCandidate &best = truth.candidates[truth.timeOrder.front()];
        b4.measuredOk = true;
        b4.measuredTimeMs = best.timeMs;
        b4.measuredPeak = best.peak;
        b4.measuredImbalance = best.imbalance;
        b4.timeRank = 1;
        b4.memoryBalanceRank = 1;
        b4.top1Time = true;
        b4.top1MemoryBalance = true;
    }
    report.methods = {memx, b1, b2, b3, b4};
    return report;
}

nlohmann::json toJson(const CompareReport &report, const Cluster &cluster)
{
    nlohmann::json j;
    j["format"] = "memx.compare/1";
    j["weights"] = {report.memxWeights.time, report.memxWeights.memory, report.memxWeights.balance};
    j["notes"] = report.notes;
    j["target"] = {{"name", toString(report.target)}, {"reason", report.targetReason}};
    nlohmann::json methods = nlohmann::json::array();
    for (const MethodOutcome &o : report.methods) {
        nlohmann::json m;
        m["id"] = o.id;
        m["name"] = o.name;
        m["description"] = o.description;
        m["predictor"] = o.predictor;
        m["hasPlan"] = o.hasPlan;
        if (o.hasPlan) {
            m["plan"] = toJson(o.plan);
            m["summary"] = o.plan.summary(cluster);
            m["predicted"] = {{"timeMs", o.predictedTimeMs},
                              {"peakMemory", o.predictedPeak},
                              {"imbalance", o.predictedImbalance},
                              {"memxLogScore", o.memxLogScore}};
        }
        m["measured"] = {{"ok", o.measuredOk},
                         {"error", o.measuredError},
                         {"timeMs", o.measuredTimeMs},
                         {"peakMemory", o.measuredPeak},
                         {"imbalance", o.measuredImbalance}};
        m["searchMs"] = o.searchMs;
        m["validConfigs"] = o.validConfigs;
        m["timeRank"] = o.timeRank;
        m["memoryBalanceRank"] = o.memoryBalanceRank;
        m["top1Time"] = o.top1Time;
        m["top1MemoryBalance"] = o.top1MemoryBalance;
        if (o.measuredOk) {
            m["timeRegretPct"] = o.timeRegretPct;
            m["memoryBalanceRegretPct"] = o.memoryBalanceRegretPct;
        }
        if (o.method == CompareMethod::Exhaustive)
            m["profilingSeconds"] = o.profilingSeconds;
        methods.push_back(std::move(m));
    }
    j["methods"] = methods;
    nlohmann::json cands = nlohmann::json::array();
    for (const TruthCandidate &c : report.truth.candidates)
        cands.push_back({{"summary", c.plan.summary(cluster)},
                         {"proposedBy", c.proposedBy},
                         {"ok", c.ok},
                         {"error", c.error},
                         {"timeMs", c.timeMs},
                         {"peakMemory", c.peak},
                         {"imbalance", c.imbalance}});
    j["groundTruth"] = {{"candidates", cands},
                        {"timeOrder", report.truth.timeOrder},
                        {"memoryBalanceOrder", report.truth.memoryBalanceOrder},
                        {"testbedMs", report.truth.testbedMs}};
    return j;
}

} // namespace memx
