#include "memx/predict/crossvalidation.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

namespace memx {

double kendallTau(const std::vector<double> &a, const std::vector<double> &b)
{
    const size_t n = std::min(a.size(), b.size());
    long long conc = 0, disc = 0, pairs = 0;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j) {
            const double x = (a[i] - a[j]) * (b[i] - b[j]);
            conc += x > 0;
            disc += x < 0;
            ++pairs;
        }
    return pairs ? static_cast<double>(conc - disc) / static_cast<double>(pairs) : 0.0;
}

namespace {

struct Pred {
    double t, m;
};

Pred predOf(const RunPrediction &r, bool learned)
{
    return learned ? Pred {r.learnedTimeMs, r.learnedPeakBytes} : Pred {r.analyticTimeMs, r.analyticPeakBytes};
}

/// Ranking metrics over the sets of `runs` (indices), scoring by `score(pred, measured)`.
RankingMetrics ranking(const std::vector<const RunPrediction *> &runs, bool learned, bool balance)
{
    std::map<std::string, std::vector<const RunPrediction *>> sets;
    for (const RunPrediction *r : runs)
        if (!r->measuredOutOfMemory && (!balance || r->measuredPeakBytes))
            sets[r->group + "|" + (r->rankingSet.empty() ? r->clusterName : r->rankingSet)].push_back(r);
    RankingMetrics out;
    long long conc = 0, disc = 0;
    double regret = 0;
    for (const auto &[key, set] : sets) {
        if (set.size() < 2)
            continue;
        ++out.sets;
        std::vector<double> pred, meas;
        for (const RunPrediction *r : set) {
            const Pred p = predOf(*r, learned);
            pred.push_back(balance ? p.t * p.m : p.t);
            meas.push_back(balance ? r->measuredTimeMs * *r->measuredPeakBytes : r->measuredTimeMs);
        }
        for (size_t i = 0; i < set.size(); ++i)
            for (size_t j = i + 1; j < set.size(); ++j) {
                const double x = (pred[i] - pred[j]) * (meas[i] - meas[j]);
                conc += x > 0;
                disc += x < 0;
                ++out.pairs;
            }
        const size_t pick = static_cast<size_t>(std::min_element(pred.begin(), pred.end()) - pred.begin());
        const double best = *std::min_element(meas.begin(), meas.end());
        out.top1Hits += meas[pick] == best;
        regret += (meas[pick] / best - 1.0) * 100.0;
    }
    out.kendallTau = out.pairs ? static_cast<double>(conc - disc) / out.pairs : 0.0;
    out.meanRegretPct = out.sets ? regret / out.sets : 0.0;
    return out;
}

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

GroupMetrics groupMetrics(const std::string &label, const std::vector<const RunPrediction *> &runs, bool learned)
{
    GroupMetrics g;
    g.group = label;
    double te = 0, me = 0;
    std::vector<double> ts, ms;
    for (const RunPrediction *r : runs) {
        const MemoryVerdict v = learned ? r->learnedVerdict : r->analyticVerdict;
        ++g.oom.counts[r->measuredOutOfMemory ? 1 : 0][static_cast<int>(v)];
        if (r->measuredOutOfMemory)
            continue;
        ++g.runs;
        const Pred p = predOf(*r, learned);
        te += std::abs(p.t - r->measuredTimeMs) / r->measuredTimeMs;
        ts.push_back(100.0 * (p.t - r->measuredTimeMs) / r->measuredTimeMs);
        if (r->measuredPeakBytes) {
            me += std::abs(p.m - *r->measuredPeakBytes) / *r->measuredPeakBytes;
            ms.push_back(100.0 * (p.m - *r->measuredPeakBytes) / *r->measuredPeakBytes);
            ++g.memoryRuns;
        }
    }
    g.timeMapePct = g.runs ? 100.0 * te / g.runs : 0.0;
    g.memMapePct = g.memoryRuns ? 100.0 * me / g.memoryRuns : 0.0;
    g.signedMedianTimePct = median(ts);
    g.signedMedianMemPct = median(ms);
    g.timeRanking = ranking(runs, learned, false);
    g.balanceRanking = ranking(runs, learned, true);
    return g;
}

} // namespace

MethodMetrics scorePredictions(const std::vector<RunPrediction> &runs, bool learned)
{
    MethodMetrics out;
    std::map<std::string, std::vector<const RunPrediction *>> byGroup;
    std::vector<const RunPrediction *> all;
    for (const RunPrediction &r : runs) {
        byGroup[r.group].push_back(&r);
        all.push_back(&r);
    }
    for (const auto &[label, members] : byGroup)
        out.groups.push_back(groupMetrics(label, members, learned));
    out.all = groupMetrics("all", all, learned);
    return out;
}

NoiseFloor noiseFloor(const std::vector<TrainingSample> &samples)
{
    std::map<std::string, std::vector<const TrainingSample *>> byPlan;
    for (const TrainingSample &s : samples)
        byPlan[s.planKey].push_back(&s);
    NoiseFloor nf;
    double te = 0, me = 0;
    int memPairs = 0;
    for (auto &[key, v] : byPlan) {
        if (v.size() < 2)
            continue;
        std::sort(v.begin(), v.end(), [](auto *a, auto *b) { return a->runId < b->runId; });
        // gh200-main/... sorts before gh200-rerun/...: the rerun is the reference.
        const TrainingSample &a = *v[0], &b = *v[1];
        ++nf.pairs;
        te += std::abs(a.measuredTimeMs - b.measuredTimeMs) / b.measuredTimeMs;
        if (a.measuredPeakBytes && b.measuredPeakBytes) {
            me += std::abs(*a.measuredPeakBytes - *b.measuredPeakBytes) / *b.measuredPeakBytes;
            ++memPairs;
        }
    }
    nf.timeMapePct = nf.pairs ? 100.0 * te / nf.pairs : 0.0;
    nf.memMapePct = memPairs ? 100.0 * me / memPairs : 0.0;
    return nf;
}

namespace {

/// The run's measured side and the analytic prediction; learned fields = analytic until set.
RunPrediction analyticPrediction(const TrainingSample &s, double memoryUncertainty)
{
    RunPrediction r;
    r.runId = s.runId;
    r.group = s.group;
    r.clusterName = s.clusterName;
    r.rankingSet = s.rankingSet;
    r.measuredOutOfMemory = s.measuredOutOfMemory;
    r.measuredTimeMs = s.measuredTimeMs;
    r.measuredPeakBytes = s.measuredPeakBytes;
    r.analyticTimeMs = r.learnedTimeMs = s.analyticTimeMs;
    r.analyticPeakBytes = r.learnedPeakBytes = s.analyticPeakBytes;
    r.capacityBytes = s.capacityBytes;
    r.analyticUtilisation = r.learnedUtilisation = s.analyticPeakUtilisation;
    r.analyticVerdict = r.learnedVerdict = memoryVerdict(s.analyticPeakUtilisation, memoryUncertainty);
    r.oomRisk = r.analyticVerdict != MemoryVerdict::Fits;
    return r;
}

void applyLearned(RunPrediction &r, const TrainingSample &s, const LearnedPredictor &model)
{
    const Prediction p = model.predict(s.features, s.analyticTimeMs, s.analyticPeakBytes, s.analyticPeakUtilisation);
    r.learnedTimeMs = p.timeMs;
    r.learnedPeakBytes = p.peakBytes;
    r.learnedTimeSpreadMs = p.timeSpreadMs;
    r.learnedPeakSpreadBytes = p.peakSpreadBytes;
    r.learnedUtilisation = p.peakUtilisation;
    r.learnedVerdict = memoryVerdict(p.peakUtilisation, p.peakBytes > 0 ? p.peakSpreadBytes / p.peakBytes : 0.0);
    r.oomRisk = p.oomRisk;
}

} // namespace

EvaluationReport analyticReport(const std::vector<TrainingSample> &samples, double memoryUncertainty)
{
    EvaluationReport rep;
    rep.analyticOnly = true;
    for (const TrainingSample &s : samples)
        if (s.measuredOutOfMemory || s.measuredTimeMs > 0)
            rep.runs.push_back(analyticPrediction(s, memoryUncertainty));
    rep.learned = scorePredictions(rep.runs, true);
    rep.analytic = scorePredictions(rep.runs, false);
    rep.noise = noiseFloor(samples);
    return rep;
}

namespace {

/// `perFold`'s samples for the runs named in `trainIds`, keyed by run id (empty without perFold).
std::map<std::string, TrainingSample> rebuiltSamples(const FoldSampler &perFold, const std::set<std::string> &trainIds)
{
    std::map<std::string, TrainingSample> out;
    if (!perFold)
        return out;
    for (TrainingSample &s : perFold(trainIds))
        out.emplace(s.runId, std::move(s));
    return out;
}

const TrainingSample &sampleIn(const std::map<std::string, TrainingSample> &rebuilt, const TrainingSample &s)
{
    const auto it = rebuilt.find(s.runId);
    return it == rebuilt.end() ? s : it->second;
}

} // namespace

EvaluationReport crossValidate(const std::vector<TrainingSample> &all, CvScheme scheme, int k,
                               const PredictorOptions &options, const ProgressFn &progress, double memoryUncertainty,
                               const FoldSampler &perFold)
{
    std::vector<TrainingSample> samples, oomRuns;
    for (const TrainingSample &s : all)
        if (s.measuredOutOfMemory)
            oomRuns.push_back(s);
        else if (s.measuredPeakBytes && s.measuredTimeMs > 0)
            samples.push_back(s);
    // Plans (leakage units) in first-seen order.
    std::vector<std::string> plans;
    std::map<std::string, int> planIndex;
    for (const TrainingSample &s : samples)
        if (planIndex.emplace(s.planKey, static_cast<int>(plans.size())).second)
            plans.push_back(s.planKey);
    if (plans.size() < 3)
        throw std::invalid_argument("cross-validation needs runs of at least 3 different plans, found "
                                    + std::to_string(plans.size()));

    // Test sets: LOO = one run each; k-fold = plans dealt into k folds after a seeded shuffle.
    std::vector<std::vector<size_t>> tests;
    if (scheme == CvScheme::LeaveOneOut) {
        for (size_t i = 0; i < samples.size(); ++i)
            tests.push_back({i});
    } else {
        if (k < 2)
            throw std::invalid_argument("k-fold cross-validation needs k >= 2, found " + std::to_string(k));
        const int folds = std::min<int>(k, static_cast<int>(plans.size()));
        std::vector<int> order(plans.size());
        for (size_t i = 0; i < order.size(); ++i)
            order[i] = static_cast<int>(i);
        std::mt19937_64 rng(options.seed);
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<int> foldOfPlan(plans.size());
        for (size_t i = 0; i < order.size(); ++i)
            foldOfPlan[static_cast<size_t>(order[i])] = static_cast<int>(i) % folds;
        tests.resize(static_cast<size_t>(folds));
        for (size_t i = 0; i < samples.size(); ++i)
            tests[static_cast<size_t>(foldOfPlan[static_cast<size_t>(planIndex[samples[i].planKey])])].push_back(i);
    }

    EvaluationReport rep;
    rep.scheme = scheme;
    rep.folds = static_cast<int>(tests.size());
    rep.options = options;
    rep.calibratedPerFold = static_cast<bool>(perFold);
    rep.runs.resize(samples.size());
    for (size_t f = 0; f < tests.size(); ++f) {
        std::set<std::string> heldPlans;
        for (size_t i : tests[f])
            heldPlans.insert(samples[i].planKey);
        std::set<std::string> trainIds;
        for (const TrainingSample &s : samples)
            if (!heldPlans.count(s.planKey))
                trainIds.insert(s.runId);
        const std::map<std::string, TrainingSample> rebuilt = rebuiltSamples(perFold, trainIds);
        std::vector<TrainingSample> train;
        for (const TrainingSample &s : samples)
            if (trainIds.count(s.runId))
                train.push_back(sampleIn(rebuilt, s));
        const LearnedPredictor model = LearnedPredictor::train(train, options);
        for (size_t i : tests[f]) {
            const TrainingSample &held = sampleIn(rebuilt, samples[i]);
            rep.runs[i] = analyticPrediction(held, memoryUncertainty);
            applyLearned(rep.runs[i], held, model);
        }
        if (progress && !progress(f + 1, tests.size()))
            throw Cancelled();
    }
    if (!oomRuns.empty()) {
        // No label to hold out: one model of every run that ran predicts the runs that did not.
        std::set<std::string> ranIds;
        for (const TrainingSample &s : samples)
            ranIds.insert(s.runId);
        const std::map<std::string, TrainingSample> rebuilt = rebuiltSamples(perFold, ranIds);
        std::vector<TrainingSample> train;
        for (const TrainingSample &s : samples)
            train.push_back(sampleIn(rebuilt, s));
        const LearnedPredictor model = LearnedPredictor::train(train, options);
        for (const TrainingSample &s : oomRuns) {
            const TrainingSample &held = sampleIn(rebuilt, s);
            rep.runs.push_back(analyticPrediction(held, memoryUncertainty));
            applyLearned(rep.runs.back(), held, model);
        }
    }
    rep.learned = scorePredictions(rep.runs, true);
    rep.analytic = scorePredictions(rep.runs, false);
    rep.noise = noiseFloor(samples);
    return rep;
}

namespace {

nlohmann::json rankingJson(const RankingMetrics &r)
{
    return {{"sets", r.sets},
            {"pairs", r.pairs},
            {"kendallTau", r.kendallTau},
            {"top1Hits", r.top1Hits},
            {"meanRegretPct", r.meanRegretPct}};
}

nlohmann::json confusionJson(const OomConfusion &c)
{
    auto row = [](const int *v) { return nlohmann::json {{"fits", v[0]}, {"risk", v[1]}, {"doesNotFit", v[2]}}; };
    return {{"ran", row(c.counts[0])},
            {"outOfMemory", row(c.counts[1])},
            {"falseFits", c.falseFits()},
            {"falseOoms", c.falseOoms()}};
}

nlohmann::json groupJson(const GroupMetrics &g)
{
    return {{"group", g.group},
            {"runs", g.runs},
            {"memoryRuns", g.memoryRuns},
            {"timeMapePct", g.timeMapePct},
            {"memoryMapePct", g.memMapePct},
            {"signedMedianTimePct", g.signedMedianTimePct},
            {"signedMedianMemoryPct", g.signedMedianMemPct},
            {"timeRanking", rankingJson(g.timeRanking)},
            {"balanceRanking", rankingJson(g.balanceRanking)},
            {"oomConfusion", confusionJson(g.oom)}};
}

nlohmann::json methodJson(const MethodMetrics &m)
{
    nlohmann::json groups = nlohmann::json::array();
    for (const GroupMetrics &g : m.groups)
        groups.push_back(groupJson(g));
    return {{"all", groupJson(m.all)}, {"groups", groups}};
}

} // namespace

nlohmann::json toJson(const EvaluationReport &r)
{
    nlohmann::json runs = nlohmann::json::array();
    for (const RunPrediction &p : r.runs)
        runs.push_back({{"id", p.runId},
                        {"group", p.group},
                        {"cluster", p.clusterName},
                        {"rankingSet", p.rankingSet},
                        {"measuredTimeMs", p.measuredTimeMs},
                        {"measuredPeakBytes", p.measuredPeakBytes ? nlohmann::json(*p.measuredPeakBytes) : nullptr},
                        {"analyticTimeMs", p.analyticTimeMs},
                        {"analyticPeakBytes", p.analyticPeakBytes},
                        {"learnedTimeMs", p.learnedTimeMs},
                        {"learnedPeakBytes", p.learnedPeakBytes},
                        {"learnedTimeSpreadMs", p.learnedTimeSpreadMs},
                        {"learnedPeakSpreadBytes", p.learnedPeakSpreadBytes},
                        {"capacityBytes", p.capacityBytes},
                        {"oomRisk", p.oomRisk},
                        {"measuredOutOfMemory", p.measuredOutOfMemory},
                        {"analyticVerdict", toString(p.analyticVerdict)},
                        {"learnedVerdict", toString(p.learnedVerdict)}});
    return {{"scheme",
             r.analyticOnly                          ? "analytic"
                 : r.scheme == CvScheme::LeaveOneOut ? "leave-one-out"
                                                     : "k-fold"},
            {"folds", r.folds},
            {"leakageControl", "runs of the same plan (e.g. a rerun) are never in training when one is held out"},
            {"calibration",
             r.calibratedPerFold ? "per fold: fitted on the fold's training runs only (memx profile calibrate's fit)"
                                 : "as stored in the project (none: the built-in defaults)"},
            {"memoryKind", "device-used"},
            {"balanceRanking", "T x M (weighted product wt = wm = 1; per-GPU balance B is not measured)"},
            {"learned", methodJson(r.learned)},
            {"analytic", methodJson(r.analytic)},
            {"noiseFloor",
             {{"pairs", r.noise.pairs}, {"timeMapePct", r.noise.timeMapePct}, {"memoryMapePct", r.noise.memMapePct}}},
            {"runs", runs}};
}

std::string formatReport(const EvaluationReport &r)
{
    std::ostringstream o;
    o << std::fixed;
    if (r.analyticOnly)
        o << "Analytic model only (nothing trained), " << r.runs.size() << " measured runs\n";
    else
        o << (r.scheme == CvScheme::LeaveOneOut ? "Leave-one-out" : "k-fold") << " cross-validation, " << r.folds
          << " folds, " << r.runs.size() << " measured runs (a held-out plan's reruns are excluded from training)\n";
    if (r.calibratedPerFold)
        o << "Analytic = calibrated per fold: memx profile calibrate's figures fitted on the fold's training runs "
             "only,\n"
             "so the held-out runs never shape the calibration that predicts them; learned corrects that model.\n";
    o << "Memory = device-used peak. Ranking sets = runs of one group on one cluster; balance ranking = T x M.\n\n";
    auto rk = [&](const RankingMetrics &m) {
        std::ostringstream s;
        s << std::fixed << std::setprecision(2) << std::setw(6) << m.kendallTau << " " << std::setw(2) << m.top1Hits
          << "/" << std::left << std::setw(2) << m.sets << std::right << std::setprecision(1) << std::setw(7)
          << m.meanRegretPct;
        return s.str();
    };
    o << std::left << std::setw(26) << "group" << std::right << std::setw(5) << "runs"
      << "  method    " << std::setw(8) << "T MAPE%" << std::setw(8) << "M MAPE%"
      << "  | time: tau top1 regret% | T*M: tau top1 regret%\n";
    auto row = [&](const GroupMetrics &g, const char *method, bool first) {
        o << std::left << std::setw(26) << (first ? g.group : "") << std::right << std::setw(5)
          << (first ? std::to_string(g.runs) : "") << "  " << std::left << std::setw(10) << method << std::right
          << std::setprecision(1) << std::setw(8) << g.timeMapePct << std::setw(8) << g.memMapePct << "  | "
          << rk(g.timeRanking) << "     | " << rk(g.balanceRanking) << "\n";
    };
    for (size_t i = 0; i < r.learned.groups.size(); ++i) {
        row(r.analytic.groups[i], "analytic", true);
        if (!r.analyticOnly)
            row(r.learned.groups[i], "learned", false);
    }
    row(r.analytic.all, "analytic", true);
    if (!r.analyticOnly)
        row(r.learned.all, "learned", false);
    o << "\nSigned median error (predicted - measured): analytic time " << std::setprecision(1)
      << r.analytic.all.signedMedianTimePct << "%, memory " << r.analytic.all.signedMedianMemPct << "%";
    if (!r.analyticOnly)
        o << "; learned time " << r.learned.all.signedMedianTimePct << "%, memory " << r.learned.all.signedMedianMemPct
          << "%";
    o << "\n\nOut-of-memory verdicts on the fullest GPU (measured vs predicted fits / risk of OOM / does not fit):\n";
    auto conf = [&](const char *method, const OomConfusion &c) {
        o << "  " << std::left << std::setw(9) << method << std::right << "ran: " << c.counts[0][0] << " / "
          << c.counts[0][1] << " / " << c.counts[0][2] << "   out of memory: " << c.counts[1][0] << " / "
          << c.counts[1][1] << " / " << c.counts[1][2] << "   (false fits " << c.falseFits() << ", false OOMs "
          << c.falseOoms() << ")\n";
    };
    conf("analytic", r.analytic.all.oom);
    if (!r.analyticOnly)
        conf("learned", r.learned.all.oom);
    o << "\nNoise floor (same plan measured twice, " << r.noise.pairs << " pairs): time " << std::setprecision(1)
      << r.noise.timeMapePct << "%, memory " << r.noise.memMapePct << "%\n";
    int risk = 0;
    for (const RunPrediction &p : r.runs)
        risk += p.oomRisk;
    o << "Runs flagged 'risk of OOM' (predicted peak utilisation x (1 + spread) >= 1): " << risk << "\n";
    return o.str();
}

} // namespace memx
