#include "memx/ui/planresults.h"

#include "memx/cost/features.h"
#include "memx/util/diagnostic.h"

#include <QLocale>

#include <algorithm>
#include <cmath>

namespace memx::ui {

void PlanResults::clear()
{
    mOutcome.reset();
    mShown.clear();
    mLogScores.clear();
    mOnFront.clear();
    mSummaries.clear();
    mLaunchers.clear();
    mTopId = 0;
}

void PlanResults::setOutcome(std::shared_ptr<const SearchOutcome> outcome, const ObjectiveWeights &weights)
{
    clear();
    mOutcome = std::move(outcome);
    mWeights = weights;
    if (isEmpty())
        return;
    const memx::SearchResult &r = mOutcome->result;
    const size_t n = r.size();
    std::vector<uint32_t> shown;
    // The Pareto front (strided when huge).
    const std::vector<uint32_t> &front = mOutcome->front;
    const size_t frontStride = std::max<size_t>(1, (front.size() + MaxFrontShown - 1) / MaxFrontShown);
    for (size_t i = 0; i < front.size(); i += frontStride)
        shown.push_back(front[i]);
    // The best plans for the current weights.
    const std::vector<uint32_t> top = memx::rank(r, weights, TopShown);
    shown.insert(shown.end(), top.begin(), top.end());
    // A strided sample showing the shape of the whole cloud.
    const size_t stride = std::max<size_t>(1, n / SampleShown);
    for (size_t i = 0; i < n; i += stride)
        shown.push_back(uint32_t(i));
    // The largest T, M and B: the shown set then normalises exactly like the whole result.
    for (const std::vector<double> *metric : {&r.timeMs, &r.peakMemory, &r.imbalance})
        shown.push_back(uint32_t(std::max_element(metric->begin(), metric->end()) - metric->begin()));
    std::sort(shown.begin(), shown.end());
    shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
    mShown = std::move(shown);
    mOnFront.assign(mShown.size(), 0);
    for (size_t i = 0; i < mShown.size(); ++i)
        mOnFront[i] = std::binary_search(front.begin(), front.end(), mShown[i]);
    mTopId = top.empty() ? 0 : idOf(top.front());
    rescore();
}

bool PlanResults::setWeights(const ObjectiveWeights &weights)
{
    mWeights = weights;
    if (isEmpty())
        return false;
    const std::vector<uint32_t> top = memx::rank(mOutcome->result, weights, TopShown);
    mTopId = top.empty() ? 0 : idOf(top.front());
    std::vector<uint32_t> missing;
    for (uint32_t i : top)
        if (!std::binary_search(mShown.begin(), mShown.end(), i))
            missing.push_back(i);
    if (!missing.empty()) {
        std::vector<uint32_t> merged;
        std::sort(missing.begin(), missing.end());
        std::merge(mShown.begin(), mShown.end(), missing.begin(), missing.end(), std::back_inserter(merged));
        mShown = std::move(merged);
        const std::vector<uint32_t> &front = mOutcome->front;
        mOnFront.assign(mShown.size(), 0);
        for (size_t i = 0; i < mShown.size(); ++i)
            mOnFront[i] = std::binary_search(front.begin(), front.end(), mShown[i]);
    }
    rescore();
    return !missing.empty();
}

void PlanResults::rescore()
{
    const memx::SearchResult &r = mOutcome->result;
    std::vector<double> t(mShown.size()), m(mShown.size()), b(mShown.size());
    for (size_t i = 0; i < mShown.size(); ++i) {
        t[i] = r.timeMs[mShown[i]];
        m[i] = r.peakMemory[mShown[i]];
        b[i] = r.imbalance[mShown[i]];
    }
    memx::MetricView view {t.data(), m.data(), b.data(), mShown.size()};
    mLogScores = memx::logScores(view, mWeights);
}

QString PlanResults::summaryOf(uint32_t index) const
{
    auto it = mSummaries.constFind(index);
    if (it != mSummaries.constEnd())
        return *it;
    const memx::Plan plan = mOutcome->result.materialize(index);
    QString s = QString::fromStdString(plan.summary(mOutcome->result.cluster));
    if (plan.distributedOptimizer)
        s += QStringLiteral(" dist-opt");
    mSummaries.insert(index, s);
    return s;
}

QString PlanResults::launcherOf(uint32_t index) const
{
    if (mOutcome->target != memx::LaunchTarget::Any)
        return QString::fromLatin1(memx::toString(mOutcome->target));
    auto it = mLaunchers.constFind(index);
    if (it != mLaunchers.constEnd())
        return *it;
    const memx::SearchResult &r = mOutcome->result;
    const QString s
        = QString::fromStdString(memx::launchersText(memx::launchersOf(r.materialize(index), r.cluster, r.model)));
    mLaunchers.insert(index, s);
    return s;
}

PlanPoint PlanResults::pointOf(uint32_t k, double logScore, bool onFront) const
{
    const memx::SearchResult &r = mOutcome->result;
    const memx::PlanFigures f = memx::planFigures(r, k); // what `memx search` prints of it
    PlanPoint p;
    p.id = idOf(k);
    p.timeMs = f.timeMs;
    p.peakMemoryFraction = f.peakMemory;
    p.imbalance = f.imbalance;
    p.score = std::exp(logScore);
    p.onFront = onFront;
    p.oom = f.peakMemory > 1.0; // the search prunes OOM plans; kept for safety
    p.learned = f.learned;
    if (f.learned) {
        p.timeSpread = f.timeSpread;
        p.memorySpread = f.memSpread;
        p.riskOfOom = !p.oom && f.oomRisk;
        p.extrapolating = f.extrapolating;
    } else {
        p.riskOfOom = !p.oom
            && memx::memoryVerdict(f.peakMemory, memx::CostOptions {}.memoryUncertainty) != memx::MemoryVerdict::Fits;
    }
    p.summary = summaryOf(k);
    p.launcher = launcherOf(k);
    p.idle = QString::fromStdString(mOutcome->idleText(k));
    return p;
}

QVector<PlanPoint> PlanResults::points() const
{
    QVector<PlanPoint> out;
    if (isEmpty())
        return out;
    out.reserve(qsizetype(mShown.size()));
    for (size_t i = 0; i < mShown.size(); ++i)
        out.push_back(pointOf(mShown[i], mLogScores[i], mOnFront[i]));
    return out;
}

QVector<PlanPoint> PlanResults::frontPoints() const
{
    QVector<PlanPoint> out;
    if (isEmpty())
        return out;
    const memx::SearchResult &r = mOutcome->result;
    // The shown set's scale is the whole result's (it holds the largest T, M and B).
    std::vector<double> t(mShown.size()), m(mShown.size()), b(mShown.size());
    for (size_t i = 0; i < mShown.size(); ++i) {
        t[i] = r.timeMs[mShown[i]];
        m[i] = r.peakMemory[mShown[i]];
        b[i] = r.imbalance[mShown[i]];
    }
    const memx::ObjectiveScale scale = memx::objectiveScaleOf({t.data(), m.data(), b.data(), mShown.size()});
    out.reserve(qsizetype(mOutcome->front.size()));
    for (uint32_t k : mOutcome->front)
        out.push_back(pointOf(k, memx::logScore(scale, mWeights, r.timeMs[k], r.peakMemory[k], r.imbalance[k]), true));
    std::sort(out.begin(), out.end(), [](const PlanPoint &a, const PlanPoint &b) {
        return a.score != b.score ? a.score < b.score : a.id < b.id;
    });
    return out;
}

QVector<double> PlanResults::scores() const
{
    QVector<double> out;
    out.reserve(qsizetype(mLogScores.size()));
    for (double s : mLogScores)
        out.push_back(std::exp(s));
    return out;
}

namespace {
QString lower(const std::string &s)
{
    return QString::fromStdString(s).toLower();
}
} // namespace

void PlanResults::describeLearned(PlanDetail &d) const
{
    const memx::PlanFigures &f = d.figures;
    if (mOutcome->predictor && f.extrapolating) {
        // The reason, as `memx predict --project` gives it: the full estimate's features.
        const memx::FeatureVector x = memx::encodeFeatures(
            memx::featureInputs(d.plan, mOutcome->result.cluster, mOutcome->result.model, d.estimate));
        d.extrapolationReason = QString::fromStdString(mOutcome->predictor->extrapolation(x.data()));
        if (d.extrapolationReason.isEmpty())
            d.extrapolationReason = QObject::tr("at the edge of the training runs' envelope");
    }
    // One-sigma spreads in the figures' own units (the table shows them relative).
    QString line
        = QObject::tr("Learned: T %1 ms &plusmn; %2 ms &nbsp;·&nbsp; peak memory %3 % &plusmn; %4 % of capacity")
              .arg(f.timeMs, 0, 'f', 1)
              .arg(f.timeMs * f.timeSpread, 0, 'f', 1)
              .arg(f.peakMemory * 100.0, 0, 'f', 1)
              .arg(f.peakMemory * f.memSpread * 100.0, 0, 'f', 1);
    if (f.oomRisk)
        line += QObject::tr(" &nbsp;<b style='color:#b26a00'>risk of OOM</b>");
    if (f.extrapolating)
        line += QObject::tr(" &nbsp;<b style='color:#b00'>EXTRAPOLATING</b>");
    d.learnedLine = line;
}

QString PlanResults::learnedHtml(const PlanDetail &d) const
{
    const memx::PlanFigures &f = d.figures;
    QString html = QObject::tr("<p><b>%1</b>: iteration <b>%2 ms</b> &plusmn; %3 ms, peak memory %4 % &plusmn; %5 % of "
                               "its GPU (%6 GiB)%7</p>")
                       .arg(QString::fromStdString(mOutcome->result.predictor).toHtmlEscaped())
                       .arg(f.timeMs, 0, 'f', 1)
                       .arg(f.timeMs * f.timeSpread, 0, 'f', 1)
                       .arg(f.peakMemory * 100.0, 0, 'f', 1)
                       .arg(f.peakMemory * f.memSpread * 100.0, 0, 'f', 1)
                       .arg(f.peakBytes / 1073741824.0, 0, 'f', 1)
                       .arg(f.oomRisk ? QObject::tr(" &nbsp;<b>risk of OOM</b>") : QString());
    if (f.extrapolating)
        html += QObject::tr("<p><b>EXTRAPOLATING</b>: %1 (spreads widened; trust the analytic figures more).</p>")
                    .arg(d.extrapolationReason.toHtmlEscaped());
    html += QObject::tr("<p style='color:#666'>The breakdown below is the analytic cost model's.</p>");
    return html;
}

PlanDetail PlanResults::detail(quint32 id) const
{
    PlanDetail d;
    if (isEmpty() || id == 0 || indexOf(id) >= mOutcome->result.size())
        return d;
    const memx::SearchResult &r = mOutcome->result;
    const memx::Cluster &cluster = r.cluster;
    d.id = id;
    d.plan = r.materialize(indexOf(id));
    const memx::ProfileSet *profiles
        = mOutcome->request.search.profiles.empty() ? nullptr : &mOutcome->request.search.profiles;
    d.estimate = memx::estimatePlan(d.plan, cluster, r.model, profiles, mOutcome->request.search.cost);

    // Memory bars: every GPU of the cluster, in node order; idle GPUs (not in the plan) empty.
    for (const memx::Node &node : cluster.nodes()) {
        const memx::GpuSpec &spec = cluster.devices[size_t(node.device)];
        for (int g = 0; g < node.gpus; ++g) {
            GpuMemoryBar bar;
            bar.node = QString::fromStdString(node.name);
            bar.gpuIndex = g;
            bar.device = QString::fromStdString(spec.id);
            bar.vendor = lower(spec.vendor);
            bar.capacityBytes = spec.memoryGiB.value_or(0) * 1073741824.0;
            for (const memx::GpuMemory &m : d.estimate.gpus) {
                if (m.node != node.name || m.gpuIndex != g)
                    continue;
                bar.stage = m.stage;
                bar.paramsBytes = m.paramsBytes;
                bar.gradsBytes = m.gradsBytes;
                bar.optimizerBytes = m.optimizerBytes;
                bar.activationBytes = m.activationBytes;
                bar.overheadBytes = m.overheadBytes;
                bar.capacityBytes = m.capacityBytes;
                bar.oom = m.oom;
                bar.riskOfOom = !m.oom
                    && memx::memoryVerdict(m.utilisation(), memx::CostOptions {}.memoryUncertainty)
                        != memx::MemoryVerdict::Fits;
            }
            d.bars.push_back(bar);
        }
    }

    // Stages: per-iteration compute (m x per-micro-batch work + optimizer) and communication
    // (m x (TP and CP collectives + P2P) + DP gradient sync).
    const int m = d.estimate.microBatches;
    for (size_t s = 0; s < d.plan.stages.size(); ++s) {
        const memx::Stage &stage = d.plan.stages[s];
        const memx::StageEstimate &e = d.estimate.stages[s];
        StageInfo info;
        info.index = int(s);
        info.firstLayer = stage.firstLayer;
        info.layerCount = stage.layerCount;
        info.recompute = QString::fromLatin1(memx::toString(stage.recompute.method));
        if (stage.recompute.method == memx::RecomputeMethod::Full && stage.recompute.layers > 0)
            info.recompute += QStringLiteral(" %1/%2 layers").arg(stage.recompute.layers).arg(stage.layerCount);
        info.computeMs = m * (e.forwardMs + e.backwardMs + e.recomputeMs) + e.optimizerMs;
        info.commMs = m * (e.tpCommMs + e.cpCommMs + e.fsdpCommMs + e.moeCommMs + e.p2pMs) + e.dpSyncMs;
        info.contextParallel = d.plan.contextParallel;
        info.virtualStages = d.plan.virtualStages;
        for (const memx::Replica &rep : stage.replicas) {
            ReplicaInfo ri;
            ri.node = QString::fromStdString(rep.node);
            for (int g : rep.gpus)
                ri.gpus.push_back(g);
            if (auto node = cluster.findNode(rep.node)) {
                const memx::GpuSpec &spec = cluster.devices[size_t(node->device)];
                ri.device = QString::fromStdString(spec.id);
                ri.vendor = lower(spec.vendor);
            }
            ri.tp = rep.tp;
            ri.microBatch = rep.microBatch;
            info.replicas.push_back(ri);
        }
        d.stages.push_back(info);
    }

    // Text: the learned figures (with a predictor), totals and the per-stage breakdown.
    const memx::PlanEstimate &e = d.estimate;
    d.launcher = launcherOf(indexOf(id));
    d.idle = QString::fromStdString(mOutcome->idleText(indexOf(id)));
    d.figures = memx::planFigures(r, indexOf(id));
    if (d.figures.learned)
        describeLearned(d);
    QString html = QStringLiteral("<p><b>%1</b></p>").arg(summaryOf(indexOf(id)).toHtmlEscaped());
    html += QStringLiteral("<p>Launcher: <b>%1</b>%2</p>")
                .arg(d.launcher.toHtmlEscaped(),
                     d.idle.isEmpty() ? QString() : QStringLiteral(" &nbsp;·&nbsp; ") + d.idle.toHtmlEscaped());
    if (d.figures.learned)
        html += learnedHtml(d);
    html += QStringLiteral("<p>Iteration <b>%1 ms</b> = pipeline %2 ms + DP gradient sync %3 ms + optimizer %4 ms"
                           " &nbsp;·&nbsp; %5 micro-batches &nbsp;·&nbsp; peak %6 GiB (%7 % of its GPU)"
                           " &nbsp;·&nbsp; imbalance CV %8</p>")
                .arg(e.iterationTimeMs, 0, 'f', 1)
                .arg(e.pipelineMs, 0, 'f', 1)
                .arg(e.dpSyncMs, 0, 'f', 1)
                .arg(e.optimizerMs, 0, 'f', 1)
                .arg(e.microBatches)
                .arg(e.peakBytes / 1073741824.0, 0, 'f', 1)
                .arg(e.peakUtilisation * 100.0, 0, 'f', 1)
                .arg(e.imbalance, 0, 'f', 3);
    html += QStringLiteral("<table cellspacing='0' cellpadding='3' border='1' style='border-collapse:collapse'>"
                           "<tr><th>Stage</th><th>Layers</th><th>Fwd</th><th>Bwd</th><th>Recomp.</th><th>TP comm</th>"
                           "<th>Step</th><th>P2P</th><th>DP sync</th><th>Optim.</th><th>Bubble</th></tr>");
    for (const memx::StageEstimate &s : e.stages) {
        html += QStringLiteral("<tr><td>%1</td><td>%2-%3</td><td>%4</td><td>%5</td><td>%6</td><td>%7</td><td>%8</td>"
                               "<td>%9</td><td>%10</td><td>%11</td><td>%12</td></tr>")
                    .arg(s.stage)
                    .arg(s.firstLayer)
                    .arg(s.firstLayer + s.layerCount - 1)
                    .arg(s.forwardMs, 0, 'f', 2)
                    .arg(s.backwardMs, 0, 'f', 2)
                    .arg(s.recomputeMs, 0, 'f', 2)
                    .arg(s.tpCommMs, 0, 'f', 2)
                    .arg(s.stepMs, 0, 'f', 2)
                    .arg(s.p2pMs, 0, 'f', 2)
                    .arg(s.dpSyncMs, 0, 'f', 1)
                    .arg(s.optimizerMs, 0, 'f', 1)
                    .arg(s.bubbleMs, 0, 'f', 1);
    }
    html
        += QStringLiteral("</table><p style='color:#666'>Fwd, Bwd, Recomp., TP comm, Step and P2P are per "
                          "micro-batch (slowest replica); DP sync, optimizer and bubble per iteration; all in ms.</p>");
    d.html = html;
    return d;
}

QString PlanResults::countsText() const
{
    if (!mOutcome)
        return {};
    const memx::SearchResult &r = mOutcome->result;
    const QLocale c(QLocale::English);
    const double total = double(r.enumerated);
    const QString of
        = total >= 1e6 ? QStringLiteral("%1 M").arg(total / 1e6, 0, 'f', 1) : c.toString(qulonglong(r.enumerated));
    return QObject::tr("target %1 · %2 valid of %3 in %4 s · %5 on the front · %6 shown")
        .arg(QString::fromLatin1(memx::toString(mOutcome->target)), c.toString(qulonglong(r.evaluated)), of)
        .arg(mOutcome->wallMs / 1000.0, 0, 'f', 2)
        .arg(c.toString(qulonglong(mOutcome->front.size())))
        .arg(c.toString(qulonglong(mShown.size())));
}

QStringList PlanResults::notesText() const
{
    QStringList out;
    if (!mOutcome)
        return out;
    out << QObject::tr("Target %1 (%2): %3")
               .arg(QString::fromLatin1(memx::toString(mOutcome->target)),
                    mOutcome->targetFromCluster ? QObject::tr("from the cluster") : QObject::tr("chosen"),
                    QString::fromStdString(mOutcome->targetReason));
    for (const std::string &n : mOutcome->notes)
        out << QString::fromStdString(n);
    if (mOutcome->advice)
        out << QObject::tr("No plan fits: %1").arg(QString::fromStdString(mOutcome->advice->text));
    return out;
}

} // namespace memx::ui
