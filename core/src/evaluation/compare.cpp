#include "memx/evaluation/compare.h"

#include "memx/search/plannedsearch.h"

#include "memx/evaluation/baselines.h"

#include "memx/cost/costmodel.h"
#include "memx/export/launchtarget.h"
#include "memx/io/formats.h"
#include "memx/predict/learnedpredictor.h"
#include "memx/predict/learnedsearch.h"
#include "memx/util/diagnostic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>

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
    case CompareMethod::Metis:
        return baselineId(Baseline::Metis);
    case CompareMethod::Amp:
        return baselineId(Baseline::Amp);
    case CompareMethod::Sailor:
        return baselineId(Baseline::Sailor);
    case CompareMethod::Galvatron:
        return baselineId(Baseline::Galvatron);
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
            res.features = {};
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

/// Progress of runCompare: the four searches (analytic, learned, proportional, uniform
/// re-estimation) 200 each, the published planners 200 when they run, the testbed runs of the
/// candidates the last 200.
class CompareProgress {
public:
    CompareProgress(const ProgressFn &progress, size_t phases)
        : mProgress(progress)
        , kTotal(phases * kPhase)
    {
    }
    /// Reports `fractionOfPhase` of the current phase; false once cancelled.
    bool report(double fractionOfPhase)
    {
        if (mCancelled)
            return false;
        const double f = std::clamp(fractionOfPhase, 0.0, 1.0);
        if (mProgress && !mProgress(mPhase * kPhase + static_cast<size_t>(f * kPhase), kTotal))
            mCancelled = true;
        return !mCancelled;
    }
    /// A search's progress as this phase's ((0, 0) is its set-up: nothing of the phase done yet).
    ProgressFn search()
    {
        return [this](size_t d, size_t t) { return report(t ? static_cast<double>(d) / t : 0.0); };
    }
    /// The current phase is done; false once cancelled.
    bool next()
    {
        ++mPhase;
        return report(0.0);
    }
    bool cancelled() const { return mCancelled; }

private:
    static constexpr size_t kPhase = 200;
    const ProgressFn &mProgress;
    const size_t kTotal;
    size_t mPhase = 0;
    bool mCancelled = false;
};

struct UniformPlan {
    Plan plan;
    double t, m, b;
};

/// What the methods' searches found.
struct MethodSearches {
    SearchResult analytic; ///< baseline 3 (and MemX without a learned predictor)
    SearchResult learned; ///< MemX with the learned predictor (empty without one)
    bool usesLearned = false;
    SearchResult prop; ///< compute-proportional split only (baselines 1 and 2)
    std::vector<uint32_t> homogeneous; ///< indices of prop with one recompute method for all devices
    std::vector<UniformPlan> uniform; ///< baseline 2's re-split plans that fit
    ObjectiveScale mx; ///< MemX's analytic maxima: every method's score is normalised by them
    double analyticMs = 0, memxMs = 0, propMs = 0, uniformMs = 0;

    const SearchResult &memx() const { return usesLearned ? learned : analytic; }
};

/// Phases 1 and 2: the full space, analytic (baseline 3) and, with a predictor, learned (MemX).
bool searchFullSpace(const CompareRequest &request, CompareProgress &progress, MethodSearches &s, CompareReport &report)
{
    auto t0 = Clock::now();
    SearchRequest analyticReq = request.search;
    analyticReq.collectFeatures = false;
    s.analytic = plannedSearch(request, analyticReq, nullptr, progress.search(), report);
    s.analyticMs = msSince(t0);
    s.memxMs = s.analyticMs;
    s.mx = objectiveScaleOf(metricsOf(s.analytic));
    if (!progress.next())
        return false;
    if (request.learned) {
        t0 = Clock::now();
        s.learned = plannedSearch(request, request.search, request.learned, progress.search(), report);
        s.usesLearned = true;
        s.memxMs = msSince(t0);
    } else {
        report.notes.push_back("no learned predictor: MemX uses the analytic model, so it coincides with baseline 3");
    }
    return progress.next();
}

/// Phase 3: baselines 1 and 2 search the compute-proportional split only, homogeneous recompute.
bool searchProportional(const CompareRequest &request, CompareProgress &progress, MethodSearches &s,
                        CompareReport &report)
{
    const auto t0 = Clock::now();
    SearchRequest propReq = request.search;
    propReq.collectFeatures = false;
    propReq.space.neighbourRadius = 0;
    propReq.space.memoryAwareSplit = false;
    propReq.space.partialRecompute = false; // homogeneous recompute: whole stages, as Metis/AMP
    s.prop = plannedSearch(request, propReq, nullptr, progress.search(), report);
    for (uint32_t i = 0; i < s.prop.size(); ++i)
        if (homogeneousRecompute(s.prop, i))
            s.homogeneous.push_back(i);
    s.propMs = msSince(t0);
    return progress.next();
}

/// The plan of `prop` configuration `i` with the uniform layer split, when valid and fitting.
std::optional<UniformPlan> uniformPlanOf(const CompareRequest &request, const SearchResult &prop, uint32_t i)
{
    const Cluster &cluster = request.search.cluster;
    const Model &model = request.search.model;
    Plan p = prop.materialize(i);
    const std::vector<int> counts = uniformSplit(model.shape.layers, static_cast<int>(p.stages.size()));
    if (counts.empty())
        return std::nullopt;
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
        return std::nullopt;
    const PlanEstimate e = estimatePlan(p, cluster, model, &request.search.profiles, request.search.cost);
    if (e.oom)
        return std::nullopt;
    return UniformPlan {std::move(p), e.iterationTimeMs, e.peakUtilisation, e.imbalance};
}

/// Phase 4: baseline 2 re-splits the fastest homogeneous configurations uniformly.
bool reestimateUniform(const CompareRequest &request, CompareProgress &progress, MethodSearches &s,
                       CompareReport &report)
{
    const auto t0 = Clock::now();
    const std::vector<uint32_t> byTime = rankSubset(s.prop, s.homogeneous, ObjectiveWeights::timeOnly(),
                                                    std::min(s.homogeneous.size(), request.uniformSplitLimit));
    if (byTime.size() < s.homogeneous.size())
        report.notes.push_back("baseline 2 re-estimated the " + std::to_string(byTime.size()) + " fastest of "
                               + std::to_string(s.homogeneous.size())
                               + " homogeneous-recompute configurations with a uniform split");
    for (size_t k = 0; k < byTime.size() && !progress.cancelled(); ++k) {
        if (k % 256 == 0)
            progress.report(static_cast<double>(k) / byTime.size());
        if (std::optional<UniformPlan> u = uniformPlanOf(request, s.prop, byTime[k]))
            s.uniform.push_back(std::move(*u));
    }
    s.uniformMs = s.propMs + msSince(t0);
    return progress.next();
}

/// What one published planner returned, and how long it took.
struct PublishedRun {
    Baseline baseline;
    BaselinePick pick;
    double ms = 0;
};

/// Phase 5 (with publishedPlanners): Metis, AMP, Sailor and Galvatron plan the same cluster, model
/// and profiles with their own spaces and cost models.
bool runPublished(const CompareRequest &request, CompareProgress &progress, std::vector<PublishedRun> &out)
{
    const SearchRequest &sr = request.search;
    const int gbs = sr.globalBatch > 0 ? sr.globalBatch : sr.model.training.globalBatch;
    const BaselineContext context(sr.cluster, sr.model, gbs, sr.profiles.empty() ? nullptr : &sr.profiles, sr.cost);
    const size_t n = std::size(kBaselines);
    for (size_t k = 0; k < n; ++k) {
        const auto t0 = Clock::now();
        PublishedRun run {kBaselines[k], {}, 0};
        run.pick = baselinePlan(kBaselines[k], context, std::max<size_t>(1, request.candidatesPerMethod),
                                [&](size_t d, size_t t) {
                                    const double f = t ? static_cast<double>(d) / static_cast<double>(t) : 0.0;
                                    return progress.report((static_cast<double>(k) + f) / static_cast<double>(n));
                                });
        run.ms = msSince(t0);
        if (run.pick.cancelled || progress.cancelled())
            return false;
        out.push_back(std::move(run));
    }
    return progress.next();
}

/// Each method's top-N (indices into its own result) and the candidate its pick became.
struct Picks {
    std::vector<uint32_t> memxTop, memxTimeTop, analyticTop, timeOnlyTop, uniformTop;
    int memx = -1, timeOnly = -1, uniform = -1, analytic = -1; ///< candidate index of each pick
    std::vector<int> published; ///< candidate index of each published planner's pick (-1: none)
};

Picks pickTopN(const CompareRequest &request, const MethodSearches &s)
{
    const size_t topN = std::max<size_t>(1, request.candidatesPerMethod);
    const ObjectiveWeights timeW = ObjectiveWeights::timeOnly();
    Picks p;
    p.memxTop = rank(s.memx(), request.memxWeights, topN);
    p.memxTimeTop = rank(s.memx(), timeW, topN);
    p.analyticTop = rank(s.analytic, request.memxWeights, topN);
    p.timeOnlyTop = rankSubset(s.prop, s.homogeneous, timeW, topN);
    std::vector<double> t, m, b;
    for (const UniformPlan &u : s.uniform) {
        t.push_back(u.t);
        m.push_back(u.m);
        b.push_back(u.b);
    }
    p.uniformTop = rank(MetricView {t.data(), m.data(), b.data(), s.uniform.size()}, timeW, topN);
    return p;
}

/// The union of the methods' top-N as ground-truth candidates (one per distinct plan).
void collectCandidates(const MethodSearches &s, const std::vector<PublishedRun> &published, Picks &p,
                       GroundTruth &truth)
{
    std::map<std::string, uint32_t> byKey;
    auto add = [&](Plan plan, const std::string &method) -> int {
        const std::string key = planKey(plan);
        auto it = byKey.find(key);
        if (it != byKey.end()) {
            auto &by = truth.candidates[it->second].proposedBy;
            if (std::find(by.begin(), by.end(), method) == by.end())
                by.push_back(method);
            return static_cast<int>(it->second);
        }
        TruthCandidate c;
        c.plan = std::move(plan);
        c.proposedBy.push_back(method);
        truth.candidates.push_back(std::move(c));
        const uint32_t idx = static_cast<uint32_t>(truth.candidates.size() - 1);
        byKey.emplace(key, idx);
        return static_cast<int>(idx);
    };
    auto addAll = [&](const std::vector<uint32_t> &top, const auto &planOf, const char *method, int &pick) {
        for (size_t k = 0; k < top.size(); ++k) {
            const int c = add(planOf(top[k]), method);
            if (k == 0)
                pick = c;
        }
    };
    addAll(
        p.memxTop, [&](uint32_t i) { return s.memx().materialize(i); }, "memx", p.memx);
    addAll(
        p.timeOnlyTop, [&](uint32_t i) { return s.prop.materialize(i); }, "time-only", p.timeOnly);
    addAll(
        p.uniformTop, [&](uint32_t i) { return s.uniform[i].plan; }, "uniform-split", p.uniform);
    addAll(
        p.analyticTop, [&](uint32_t i) { return s.analytic.materialize(i); }, "analytic", p.analytic);
    for (uint32_t i : p.memxTimeTop)
        add(s.memx().materialize(i), "memx-space-by-time");
    for (const PublishedRun &run : published) {
        int pick = -1;
        if (run.pick.hasPlan) {
            const std::vector<Plan> &top = run.pick.top.empty() ? std::vector<Plan> {run.pick.plan} : run.pick.top;
            for (size_t k = 0; k < top.size(); ++k) {
                const int c = add(top[k], baselineId(run.baseline));
                if (k == 0)
                    pick = c;
            }
        }
        p.published.push_back(pick);
    }
}

/// Phase 5: every candidate runs on the testbed; then they are ranked by measurement.
bool measureCandidates(const CompareRequest &request, CompareProgress &progress, GroundTruth &truth)
{
    const VirtualTestbed testbed(request.testbedSeed, request.testbed);
    const auto t0 = Clock::now();
    for (size_t i = 0; i < truth.candidates.size(); ++i) {
        TruthCandidate &c = truth.candidates[i];
        // The testbed's noise is keyed on the plan (name included): run every candidate under one
        // name, so a plan measures the same whatever its place in the candidate list.
        c.plan.name = "candidate";
        const TestbedRun run = testbed.runPlan(c.plan, request.search.cluster, request.search.model);
        c.plan.name = "candidate-" + std::to_string(i);
        c.ok = run.ok;
        c.error = run.error;
        c.timeMs = run.ok ? run.run.iterationTimeMs : 0.0;
        measuredMemoryMetrics(run, c.plan, request.search.cluster, c.peak, c.imbalance);
        if (!progress.report(static_cast<double>(i + 1) / truth.candidates.size())) {
            truth.testbedMs = msSince(t0);
            return false;
        }
    }
    truth.testbedMs = msSince(t0);
    rankGroundTruth(truth, request.memxWeights);
    return true;
}

int positionIn(const std::vector<uint32_t> &order, int cand)
{
    for (size_t k = 0; k < order.size(); ++k)
        if (static_cast<int>(order[k]) == cand)
            return static_cast<int>(k + 1);
    return 0;
}

MethodOutcome makeOutcome(CompareMethod method, const char *name, const char *description)
{
    MethodOutcome o;
    o.method = method;
    o.id = compareMethodId(method);
    o.name = name;
    o.description = description;
    return o;
}

/// Fills what the testbed measured of the method's pick (candidate `cand`) and its regrets.
void scorePick(MethodOutcome &o, int cand, const GroundTruth &truth, ObjectiveWeights memxW)
{
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
    if (!c.ok || truth.timeOrder.empty())
        return;
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

/// Fills a method's predicted figures from configuration `i` of `r` (nothing when it has no pick).
void predictedFrom(MethodOutcome &o, const SearchResult &r, const std::vector<uint32_t> &top, const ObjectiveScale &mx,
                   ObjectiveWeights w)
{
    if (!top.empty())
        fillPredicted(o, r.timeMs[top[0]], r.peakMemory[top[0]], r.imbalance[top[0]], mx, w);
}

/// Phase 6: one outcome per method (MemX, baselines 1..4).
std::vector<MethodOutcome> methodOutcomes(const CompareRequest &request, const MethodSearches &s, const Picks &p,
                                          const GroundTruth &truth)
{
    const ObjectiveWeights memxW = request.memxWeights;
    MethodOutcome memx = makeOutcome(CompareMethod::MemX, "MemX",
                                     "full space (splits, per-device recompute, orders), weights (1,wm,wb)");
    memx.predictor = s.memx().predictor;
    memx.searchMs = s.memxMs;
    memx.validConfigs = s.memx().size();
    predictedFrom(memx, s.memx(), p.memxTop, s.mx, memxW);
    scorePick(memx, p.memx, truth, memxW);

    MethodOutcome b1 = makeOutcome(CompareMethod::TimeOnly, "Time-only (Metis/AMP-style)",
                                   "compute-proportional split, homogeneous recompute, memory as a hard limit, "
                                   "weights (1,0,0)");
    b1.predictor = "analytic";
    b1.searchMs = s.propMs;
    b1.validConfigs = s.homogeneous.size();
    predictedFrom(b1, s.prop, p.timeOnlyTop, s.mx, memxW);
    scorePick(b1, p.timeOnly, truth, memxW);

    MethodOutcome b2 = makeOutcome(CompareMethod::UniformSplit, "Uniform split",
                                   "uniform layer split, homogeneous recompute, weights (1,0,0)");
    b2.predictor = "analytic";
    b2.searchMs = s.uniformMs;
    b2.validConfigs = s.uniform.size();
    if (!p.uniformTop.empty()) {
        const UniformPlan &u = s.uniform[p.uniformTop[0]];
        fillPredicted(b2, u.t, u.m, u.b, s.mx, memxW);
    }
    scorePick(b2, p.uniform, truth, memxW);

    MethodOutcome b3 = makeOutcome(CompareMethod::Analytic, "Analytic (no learning)",
                                   "MemX's space and weights, analytic cost model only");
    b3.predictor = "analytic";
    b3.searchMs = s.analyticMs;
    b3.validConfigs = s.analytic.size();
    predictedFrom(b3, s.analytic, p.analyticTop, s.mx, memxW);
    scorePick(b3, p.analytic, truth, memxW);

    MethodOutcome b4 = makeOutcome(CompareMethod::Exhaustive, "Exhaustive profiling",
                                   "runs every valid configuration end to end; finds the measured best by "
                                   "definition; cost = configurations x seconds per run");
    b4.validConfigs = s.analytic.size();
    b4.profilingSeconds = static_cast<double>(s.analytic.size()) * request.secondsPerProfiledRun;
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
    return {memx, b1, b2, b3, b4};
}

CompareMethod compareMethodOf(Baseline b)
{
    switch (b) {
    case Baseline::Metis:
        return CompareMethod::Metis;
    case Baseline::Amp:
        return CompareMethod::Amp;
    case Baseline::Sailor:
        return CompareMethod::Sailor;
    case Baseline::Galvatron:
        return CompareMethod::Galvatron;
    }
    return CompareMethod::Metis;
}

/// A published planner's outcome: its own prediction, MemX's analytic estimate of its pick and
/// what the testbed measured of it.
MethodOutcome publishedOutcome(const CompareRequest &request, const MethodSearches &s, const PublishedRun &run,
                               int cand, const GroundTruth &truth)
{
    MethodOutcome o
        = makeOutcome(compareMethodOf(run.baseline), baselineName(run.baseline), baselineDescription(run.baseline));
    o.published = true;
    o.predictor = std::string(baselineName(run.baseline)) + "'s own cost model";
    o.searchMs = run.ms;
    o.validConfigs = run.pick.configsExamined;
    o.notes = run.pick.notes;
    o.refusal = run.pick.refusal;
    if (!run.pick.hasPlan)
        return o;
    o.ownTimeMs = run.pick.predicted.timeMs;
    o.ownHasMemory = run.pick.predicted.hasMemory;
    o.ownPeakUtilisation = run.pick.predicted.peakUtilisation;
    o.ownFits = run.pick.predicted.fits;
    const SearchRequest &sr = request.search;
    try {
        const PlanEstimate e
            = estimatePlan(run.pick.plan, sr.cluster, sr.model, sr.profiles.empty() ? nullptr : &sr.profiles, sr.cost);
        fillPredicted(o, e.iterationTimeMs, e.peakUtilisation, e.imbalance, s.mx, request.memxWeights);
        o.memxOom = e.oom;
    } catch (const std::invalid_argument &err) {
        o.notes.push_back(std::string("MemX's cost model refuses the pick: ") + err.what());
    }
    // The published planners know no launch target: say which launcher could start the pick.
    const std::string launchers = launchersText(launchersOf(run.pick.plan, sr.cluster, sr.model));
    o.notes.push_back("launchers that start this pick: " + launchers
                      + (launchers == "no launcher" ? " (the planner knows no launch target)" : ""));
    scorePick(o, cand, truth, request.memxWeights);
    o.hasPlan = true;
    if (cand < 0)
        o.plan = run.pick.plan;
    return o;
}

} // namespace

CompareReport runCompare(const CompareRequest &request, const ProgressFn &progressFn)
{
    for (int v : request.search.space.virtualStages)
        if (v > 1)
            throw std::invalid_argument("compare judges the picks on the virtual testbed, which does not simulate the "
                                        "interleaved schedule: search without virtual stages (--vpp 1)");
    for (int cp : request.search.space.contextParallel)
        if (cp > 1)
            throw std::invalid_argument("compare judges the picks on the virtual testbed, which does not simulate "
                                        "context parallelism: search without it (--cp 1)");
    CompareReport report;
    report.memxWeights = request.memxWeights;
    CompareProgress progress(progressFn, request.publishedPlanners ? 6 : 5);
    MethodSearches s;
    std::vector<PublishedRun> published;
    const bool searched = searchFullSpace(request, progress, s, report)
        && searchProportional(request, progress, s, report) && reestimateUniform(request, progress, s, report)
        && (!request.publishedPlanners || runPublished(request, progress, published));
    if (!searched) {
        report.cancelled = true;
        return report;
    }
    Picks picks = pickTopN(request, s);
    collectCandidates(s, published, picks, report.truth);
    if (!measureCandidates(request, progress, report.truth)) {
        report.cancelled = true;
        return report;
    }
    report.methods = methodOutcomes(request, s, picks, report.truth);
    for (size_t k = 0; k < published.size(); ++k)
        report.methods.push_back(publishedOutcome(request, s, published[k], picks.published[k], report.truth));
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
        if (o.published) {
            m["published"] = true;
            if (!o.refusal.empty())
                m["refusal"] = o.refusal;
            if (o.hasPlan) {
                m["own"] = {{"timeMs", o.ownTimeMs}, {"hasMemory", o.ownHasMemory}, {"fits", o.ownFits}};
                if (o.ownHasMemory)
                    m["own"]["peakUtilisation"] = o.ownPeakUtilisation;
                m["predicted"]["oom"] = o.memxOom;
            }
            m["notes"] = o.notes;
        }
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
