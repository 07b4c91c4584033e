#include "memx/evaluation/measuredcompare.h"

#include <iomanip>
#include <map>
#include <sstream>

namespace memx {
namespace {

/// The measured side of `s` with `b`'s prediction of the run in the analytic fields.
RunPrediction baselinePrediction(const RunPrediction &measured, const BaselineEstimate &e, bool hasMemory)
{
    RunPrediction r = measured;
    r.analyticTimeMs = r.learnedTimeMs = e.timeMs;
    // Without a memory model every plan has the same M, so its T x M ranking is its time ranking.
    r.analyticPeakBytes = r.learnedPeakBytes = hasMemory ? e.peakBytes : 1.0;
    r.analyticUtilisation = r.learnedUtilisation = hasMemory ? e.peakUtilisation : 0.0;
    r.analyticVerdict = r.learnedVerdict = e.fits ? MemoryVerdict::Fits : MemoryVerdict::DoesNotFit;
    r.oomRisk = !e.fits;
    r.learnedTimeSpreadMs = r.learnedPeakSpreadBytes = 0;
    return r;
}

std::string pct(double v, bool show = true)
{
    if (!show)
        return "-";
    std::ostringstream o;
    o << std::fixed << std::setprecision(1) << v << "%";
    return o.str();
}

std::string tau(const RankingMetrics &r)
{
    if (r.sets == 0)
        return "-";
    std::ostringstream o;
    o << std::fixed << std::setprecision(2) << r.kendallTau;
    return o.str();
}

std::string top1(const RankingMetrics &r)
{
    return r.sets ? std::to_string(r.top1Hits) + "/" + std::to_string(r.sets) : "-";
}

void row(std::ostringstream &o, const std::string &name, const GroupMetrics &g, bool hasMemory)
{
    o << "  " << std::left << std::setw(12) << name << std::right << std::setw(6) << g.runs << std::setw(9)
      << pct(g.timeMapePct, g.runs > 0) << std::setw(9) << pct(g.memMapePct, hasMemory && g.memoryRuns > 0)
      << std::setw(7) << tau(g.timeRanking) << std::setw(7) << top1(g.timeRanking) << std::setw(9)
      << pct(g.timeRanking.meanRegretPct, g.timeRanking.sets > 0) << std::setw(7) << tau(g.balanceRanking)
      << std::setw(7) << top1(g.balanceRanking) << std::setw(9)
      << pct(g.balanceRanking.meanRegretPct, g.balanceRanking.sets > 0) << std::setw(6)
      << (hasMemory && g.runs > 0 ? std::to_string(g.oom.falseFits()) : "-") << std::setw(6)
      << (hasMemory && g.runs > 0 ? std::to_string(g.oom.falseOoms()) : "-") << "\n";
}

nlohmann::json rankingJson(const RankingMetrics &r)
{
    return {{"sets", r.sets},
            {"pairs", r.pairs},
            {"kendallTau", r.kendallTau},
            {"top1", r.top1Hits},
            {"meanRegretPct", r.meanRegretPct}};
}

nlohmann::json groupJson(const GroupMetrics &g, bool hasMemory)
{
    nlohmann::json j {{"group", g.group},
                      {"runs", g.runs},
                      {"timeMapePct", g.timeMapePct},
                      {"signedMedianTimePct", g.signedMedianTimePct},
                      {"timeRanking", rankingJson(g.timeRanking)},
                      {"balanceRanking", rankingJson(g.balanceRanking)}};
    if (hasMemory) {
        j["memoryRuns"] = g.memoryRuns;
        j["memMapePct"] = g.memMapePct;
        j["signedMedianMemPct"] = g.signedMedianMemPct;
        j["falseFits"] = g.oom.falseFits();
        j["falseOoms"] = g.oom.falseOoms();
    }
    return j;
}

} // namespace

MeasuredComparison compareOnMeasuredRuns(const std::vector<MeasuredRun> &runs,
                                         const std::vector<TrainingSample> &memxSamples,
                                         const std::function<std::optional<Model>(const std::string &)> &modelOf,
                                         const ProfileSet *profiles, const CostOptions &cost,
                                         const ProgressFn &progress)
{
    MeasuredComparison out;
    const EvaluationReport memx = analyticReport(memxSamples, cost.memoryUncertainty);
    std::map<std::string, const RunPrediction *> byId;
    for (const RunPrediction &r : memx.runs)
        byId.emplace(r.runId, &r);
    MeasuredMethodScore mx;
    mx.id = "memx";
    mx.name = "MemX (analytic)";
    mx.runs = memx.runs;
    mx.costed = static_cast<int>(memx.runs.size());
    out.methods.push_back(std::move(mx));
    for (Baseline b : kBaselines) {
        MeasuredMethodScore m;
        m.id = baselineId(b);
        m.name = baselineName(b);
        m.hasMemory = b != Baseline::Amp;
        out.methods.push_back(std::move(m));
    }
    size_t done = 0;
    for (const MeasuredRun &run : runs) {
        reportOrThrow(progress, done++, runs.size());
        auto it = byId.find(run.id);
        if (it == byId.end())
            continue; // not costed by MemX either (no model, invalid plan): its note is in the samples'
        const std::optional<Model> model = modelOf(run.modelId);
        if (!model)
            continue;
        ++out.runs;
        const BaselineContext context(run.cluster, *model, run.plan.globalBatch, profiles, cost);
        for (size_t k = 0; k < std::size(kBaselines); ++k) {
            MeasuredMethodScore &m = out.methods[k + 1];
            BaselineEstimate e;
            try {
                e = baselineEstimate(kBaselines[k], run.plan, context);
            } catch (const std::exception &err) {
                e.ok = false;
                e.error = err.what();
            }
            if (!e.ok || !(e.timeMs > 0)) {
                if (m.refused++ == 0)
                    out.notes.push_back(m.name + " cannot cost run " + run.id + ": "
                                        + (e.error.empty() ? "no time" : e.error));
                continue;
            }
            ++m.costed;
            m.runs.push_back(baselinePrediction(*it->second, e, m.hasMemory));
        }
    }
    out.methods.front().costed = out.runs;
    for (MeasuredMethodScore &m : out.methods) {
        m.metrics = scorePredictions(m.runs, false);
        if (m.refused > 1)
            out.notes.push_back(m.name + " could not cost " + std::to_string(m.refused) + " of "
                                + std::to_string(out.runs) + " runs (left out of its figures)");
    }
    return out;
}

nlohmann::json toJson(const MeasuredComparison &c)
{
    nlohmann::json methods = nlohmann::json::array();
    for (const MeasuredMethodScore &m : c.methods) {
        nlohmann::json groups = nlohmann::json::array();
        for (const GroupMetrics &g : m.metrics.groups)
            groups.push_back(groupJson(g, m.hasMemory));
        methods.push_back({{"id", m.id},
                           {"name", m.name},
                           {"hasMemory", m.hasMemory},
                           {"costed", m.costed},
                           {"refused", m.refused},
                           {"all", groupJson(m.metrics.all, m.hasMemory)},
                           {"groups", groups}});
    }
    return {{"format", "memx.compare-measured/1"}, {"runs", c.runs}, {"notes", c.notes}, {"methods", methods}};
}

std::string formatMeasuredComparison(const MeasuredComparison &c, const std::string &title)
{
    std::ostringstream o;
    o << "Measured runs: " << title << " (" << c.runs << " runs; each method's own cost model on the plans that ran)\n";
    const char *header = "  method        runs  time MAPE mem MAPE   tau  top-1   regret  tauTM top-1TM regretTM  "
                         "fFit fOOM\n";
    o << header;
    for (const MeasuredMethodScore &m : c.methods)
        row(o, m.id, m.metrics.all, m.hasMemory);
    if (!c.methods.empty() && c.methods.front().metrics.groups.size() > 1) {
        for (size_t g = 0; g < c.methods.front().metrics.groups.size(); ++g) {
            const std::string label = c.methods.front().metrics.groups[g].group;
            o << "\n Group " << label << "\n" << header;
            for (const MeasuredMethodScore &m : c.methods)
                for (const GroupMetrics &gm : m.metrics.groups)
                    if (gm.group == label)
                        row(o, m.id, gm, m.hasMemory);
        }
    }
    o << "\n  tau / top-1 / regret: within ranking sets (same cluster, model and global batch) by predicted "
         "time; TM: by T x M (peak memory); fFit: measured OOM predicted to fit; fOOM: ran, predicted not to fit\n";
    for (const std::string &n : c.notes)
        o << "  note: " << n << "\n";
    return o.str();
}

} // namespace memx
