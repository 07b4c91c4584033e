#include "memx/ui/plancomparison.h"

#include "memx/ui/memorybarchart.h"
#include "memx/ui/pipelinetimeline.h"
#include "memx/ui/plancsv.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <optional>

namespace memx::ui {
namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

const char *const kRowNames[PlanComparisonView::RowCount] = {
    "Rank",
    "Plan",
    "Launcher",
    "Iteration time",
    "Gap to the fastest",
    "Throughput",
    "Peak memory",
    "Peak memory (GiB)",
    "Memory verdict",
    "Imbalance (CV)",
    "Pipeline (fwd/bwd)",
    "Largest stage bubble",
    "Data-parallel sync",
    "Optimizer step",
    "Micro-batches",
    "Stages",
    "Stage by stage",
    "Options",
    "Idle GPUs",
};

/// Which way a row's figure is better; rows without an order have none.
enum class Better { None, Lower, Higher };

Better betterOf(PlanComparisonView::Row row)
{
    switch (row) {
    case PlanComparisonView::TimeRow:
    case PlanComparisonView::MemoryRow:
    case PlanComparisonView::PeakGiBRow:
    case PlanComparisonView::ImbalanceRow:
    case PlanComparisonView::BubbleRow:
    case PlanComparisonView::DpSyncRow:
        return Better::Lower;
    case PlanComparisonView::ThroughputRow:
        return Better::Higher;
    default:
        return Better::None;
    }
}

/// The value a row is ordered by (std::nullopt for rows without an order).
std::optional<double> orderValue(PlanComparisonView::Row row, const ComparedPlan &p)
{
    const PlanEstimate &e = p.detail.estimate;
    switch (row) {
    case PlanComparisonView::TimeRow:
        return p.point.timeMs;
    case PlanComparisonView::ThroughputRow:
        return p.point.timeMs > 0 ? p.detail.plan.globalBatch / (p.point.timeMs / 1000.0) : 0.0;
    case PlanComparisonView::MemoryRow:
        return p.point.peakMemoryFraction;
    case PlanComparisonView::PeakGiBRow:
        return p.detail.figures.peakBytes > 0 ? p.detail.figures.peakBytes : e.peakBytes;
    case PlanComparisonView::ImbalanceRow:
        return p.point.imbalance;
    case PlanComparisonView::BubbleRow: {
        double worst = 0;
        for (const StageEstimate &s : e.stages)
            worst = std::max(worst, s.bubbleMs);
        return worst;
    }
    case PlanComparisonView::DpSyncRow:
        return e.dpSyncMs;
    default:
        return std::nullopt;
    }
}

QString verdictText(const ComparedPlan &p)
{
    if (p.point.oom)
        return QObject::tr("does not fit (OOM)");
    if (p.point.riskOfOom)
        return QObject::tr("risk of OOM");
    return QObject::tr("fits");
}

QString stageLine(const StageInfo &s)
{
    // "S1  L8-15 (8)  TP4 x DP2  A100 80GB  mbs 2  rc full"
    QStringList devices, tps, mbs;
    for (const ReplicaInfo &r : s.replicas) {
        if (!devices.contains(r.device))
            devices << r.device;
        const QString tp = QString::number(r.tp);
        if (!tps.contains(tp))
            tps << tp;
        const QString mb = QString::number(r.microBatch);
        if (!mbs.contains(mb))
            mbs << mb;
    }
    QString line = QStringLiteral("S%1: layers %2-%3 (%4), TP%5\u00d7DP%6")
                       .arg(s.index)
                       .arg(s.firstLayer)
                       .arg(s.firstLayer + s.layerCount - 1)
                       .arg(s.layerCount)
                       .arg(tps.join(u'/'))
                       .arg(s.replicas.size());
    if (s.contextParallel > 1)
        line += QStringLiteral("\u00d7CP%1").arg(s.contextParallel);
    line += QStringLiteral(" %1, mbs %2, rc %3").arg(devices.join(QStringLiteral(" + ")), mbs.join(u'/'), s.recompute);
    return line;
}

QString optionsText(const memx::Plan &plan)
{
    QStringList o;
    if (plan.sequenceParallel)
        o << QObject::tr("sequence parallel");
    if (plan.distributedOptimizer)
        o << QObject::tr("distributed optimizer");
    if (plan.fsdp != DpSharding::None)
        o << QObject::tr("FSDP %1").arg(QString::fromUtf8(toString(plan.fsdp)));
    if (plan.overlapGradReduce)
        o << QObject::tr("overlap grad reduce");
    if (plan.overlapParamGather)
        o << QObject::tr("overlap param gather");
    if (plan.virtualStages > 1)
        o << QObject::tr("interleaved v%1").arg(plan.virtualStages);
    if (plan.contextParallel > 1)
        o << QObject::tr("CP%1 %2").arg(plan.contextParallel).arg(QString::fromUtf8(toString(plan.cpComm)));
    if (plan.fp8 != Fp8Format::Off)
        o << QObject::tr("FP8 %1").arg(QString::fromUtf8(toString(plan.fp8)));
    if (plan.expertParallel > 1)
        o << QObject::tr("EP%1").arg(plan.expertParallel);
    return o.isEmpty() ? QObject::tr("none") : o.join(QStringLiteral(", "));
}

QString cellOf(PlanComparisonView::Row row, const ComparedPlan &p, double fastestMs)
{
    const PlanEstimate &e = p.detail.estimate;
    switch (row) {
    case PlanComparisonView::RankRow:
        return QString::number(p.rank);
    case PlanComparisonView::PlanRow:
        return QStringLiteral("#%1").arg(PlanResults::indexOf(p.point.id)); // as exports: "search #n"
    case PlanComparisonView::LauncherRow:
        return p.point.launcher.isEmpty() ? QStringLiteral("-") : p.point.launcher;
    case PlanComparisonView::TimeRow:
        return formatMetric(Metric::Time, p.point.timeMs)
            + (p.point.learned ? QStringLiteral(" \u00b1%1 %").arg(p.point.timeSpread * 100.0, 0, 'f', 1) : QString());
    case PlanComparisonView::TimeGapRow:
        return fastestMs > 0 && p.point.timeMs > fastestMs
            ? QStringLiteral("+%1 %").arg((p.point.timeMs / fastestMs - 1.0) * 100.0, 0, 'f', 1)
            : QObject::tr("fastest");
    case PlanComparisonView::ThroughputRow:
        return QObject::tr("%1 sequences/s").arg(*orderValue(row, p), 0, 'f', 2);
    case PlanComparisonView::MemoryRow:
        return formatMetric(Metric::Memory, p.point.peakMemoryFraction) + QObject::tr(" of capacity");
    case PlanComparisonView::PeakGiBRow:
        return QStringLiteral("%1 GiB").arg(*orderValue(row, p) / GiB, 0, 'f', 2);
    case PlanComparisonView::VerdictRow:
        return verdictText(p);
    case PlanComparisonView::ImbalanceRow:
        return QString::number(p.point.imbalance, 'f', 3);
    case PlanComparisonView::PipelineRow:
        return formatMetric(Metric::Time, e.pipelineMs);
    case PlanComparisonView::BubbleRow:
    case PlanComparisonView::DpSyncRow:
        return formatMetric(Metric::Time, *orderValue(row, p));
    case PlanComparisonView::OptimizerRow:
        return formatMetric(Metric::Time, e.optimizerMs);
    case PlanComparisonView::MicroBatchesRow:
        return QString::number(e.microBatches);
    case PlanComparisonView::StagesRow:
        return QObject::tr("PP%1").arg(p.detail.plan.pp());
    case PlanComparisonView::LayoutRow: {
        QStringList lines;
        for (const StageInfo &s : p.detail.stages)
            lines << stageLine(s);
        return lines.join(u'\n');
    }
    case PlanComparisonView::OptionsRow:
        return optionsText(p.detail.plan);
    case PlanComparisonView::IdleRow:
        return p.point.idle.isEmpty() ? QObject::tr("none") : p.point.idle;
    case PlanComparisonView::RowCount:
        break;
    }
    return {};
}

/// Deletes every item of `layout` and its widget (the previous plans' charts, titles, stretch).
void clearLayout(QLayout *layout)
{
    while (QLayoutItem *item = layout->takeAt(0)) {
        delete item->widget();
        delete item;
    }
}

} // namespace

PlanComparisonView::PlanComparisonView(QWidget *parent)
    : QWidget(parent)
{
    mStaleNote = new QLabel(tr("<b>Stale:</b> the cluster, model or search settings changed since these plans were "
                               "found; run the search again and compare anew."));
    mStaleNote->setWordWrap(true);
    mStaleNote->setStyleSheet(QStringLiteral("QLabel { background: #fff3cd; padding: 4px; }"));
    mStaleNote->hide();
    mTable = new QTableWidget(RowCount, 0);
    mTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    mTable->setSelectionMode(QAbstractItemView::ContiguousSelection);
    mTable->setWordWrap(true); // a stage line wraps in a narrow column rather than clip
    mTable->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    mTable->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    QStringList rows;
    for (const char *name : kRowNames)
        rows << tr(name);
    mTable->setVerticalHeaderLabels(rows);
    mBarsBox = new QWidget;
    auto *barsLayout = new QHBoxLayout(mBarsBox);
    barsLayout->setContentsMargins(0, 0, 0, 0);
    mTimelinesBox = new QWidget;
    auto *timelinesLayout = new QVBoxLayout(mTimelinesBox);
    timelinesLayout->setContentsMargins(0, 0, 0, 0);
    auto *timelinesScroll = new QScrollArea;
    timelinesScroll->setWidgetResizable(true);
    timelinesScroll->setFrameShape(QFrame::NoFrame);
    timelinesScroll->setWidget(mTimelinesBox);
    mDetailTabs = new QTabWidget;
    mDetailTabs->addTab(mBarsBox, tr("Memory per GPU"));
    mDetailTabs->addTab(timelinesScroll, tr("1F1B timelines (one time scale)"));
    auto *split = new QSplitter(Qt::Vertical);
    split->addWidget(mTable);
    split->addWidget(mDetailTabs);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    split->setChildrenCollapsible(false);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(mStaleNote);
    layout->addWidget(split, 1);
}

void PlanComparisonView::setPlans(QVector<ComparedPlan> plans)
{
    if (plans.size() > MaxPlans)
        plans.resize(MaxPlans);
    mPlans = std::move(plans);
    fillTable();
    fillBars();
    fillTimelines();
}

void PlanComparisonView::markStale(bool stale)
{
    mStale = stale;
    mStaleNote->setVisible(stale);
}

QString PlanComparisonView::cellText(Row row, int column) const
{
    const QTableWidgetItem *item = mTable->item(row, column);
    return item ? item->text() : QString();
}

QVector<int> PlanComparisonView::bestColumns(Row row) const
{
    const Better better = betterOf(row);
    if (better == Better::None || mPlans.size() < 2)
        return {};
    QVector<double> values;
    for (const ComparedPlan &p : mPlans)
        values << orderValue(row, p).value_or(0.0);
    const double best = better == Better::Lower ? *std::min_element(values.begin(), values.end())
                                                : *std::max_element(values.begin(), values.end());
    QVector<int> columns;
    for (int c = 0; c < values.size(); ++c)
        if (std::abs(values[c] - best) <= 1e-9 * std::max(1.0, std::abs(best)))
            columns << c;
    return columns.size() == values.size() ? QVector<int>() : columns; // a tie of all: no best
}

bool PlanComparisonView::rowDiffers(Row row) const
{
    for (int c = 1; c < mPlans.size(); ++c)
        if (cellText(row, c) != cellText(row, 0))
            return true;
    return false;
}

void PlanComparisonView::fillTable()
{
    mTable->clearContents();
    mTable->setColumnCount(int(mPlans.size()));
    QStringList headers;
    double fastest = 0;
    for (const ComparedPlan &p : mPlans) {
        headers << tr("Rank %1").arg(p.rank);
        if (p.point.timeMs > 0 && (fastest == 0 || p.point.timeMs < fastest))
            fastest = p.point.timeMs;
    }
    mTable->setHorizontalHeaderLabels(headers);
    for (int r = 0; r < RowCount; ++r)
        for (int c = 0; c < mPlans.size(); ++c) {
            auto *item = new QTableWidgetItem(cellOf(Row(r), mPlans[c], fastest));
            item->setTextAlignment(r == LayoutRow || r == OptionsRow ? Qt::AlignLeft | Qt::AlignTop
                                                                     : Qt::AlignLeft | Qt::AlignVCenter);
            mTable->setItem(r, c, item);
        }
    // What differs is tinted; the best value of an ordered figure is bold.
    const QColor tint(0xff, 0xf6, 0xd5);
    for (int r = 0; r < RowCount; ++r) {
        if (r == RankRow || r == PlanRow || !rowDiffers(Row(r)))
            continue;
        for (int c = 0; c < mPlans.size(); ++c)
            mTable->item(r, c)->setBackground(tint);
        for (int c : bestColumns(Row(r))) {
            QFont f = mTable->item(r, c)->font();
            f.setBold(true);
            mTable->item(r, c)->setFont(f);
        }
    }
    for (int c = 0; c < mPlans.size(); ++c)
        mTable->item(RankRow, c)->setToolTip(mPlans[c].point.summary);
    mTable->resizeRowsToContents();
}

void PlanComparisonView::fillBars()
{
    clearLayout(mBarsBox->layout());
    mBars.clear();
    double top = 0; // one GiB scale for every chart
    for (const ComparedPlan &p : mPlans)
        for (const GpuMemoryBar &b : p.detail.bars)
            top = std::max({top, b.capacityBytes / GiB, b.usedBytes() / GiB});
    for (const ComparedPlan &p : mPlans) {
        auto *box = new QWidget;
        auto *v = new QVBoxLayout(box);
        v->setContentsMargins(0, 0, 0, 0);
        v->setSpacing(0);
        auto *title = new QLabel(tr("<b>Rank %1</b> (plan #%2)").arg(p.rank).arg(PlanResults::indexOf(p.point.id)));
        title->setAlignment(Qt::AlignHCenter);
        auto *chart = new MemoryBarChart;
        chart->setMinimumSize(200, 240);
        chart->setBars(p.detail.bars);
        chart->setAxisFloorGiB(top);
        v->addWidget(title);
        v->addWidget(chart, 1);
        mBarsBox->layout()->addWidget(box);
        mBars << chart;
    }
}

void PlanComparisonView::fillTimelines()
{
    auto *v = static_cast<QVBoxLayout *>(mTimelinesBox->layout());
    clearLayout(v); // the titles, timelines and the stretch
    mTimelines.clear();
    for (const ComparedPlan &p : mPlans) {
        auto *title = new QLabel(tr("<b>Rank %1</b> (plan #%2) \u00b7 %3")
                                     .arg(p.rank)
                                     .arg(PlanResults::indexOf(p.point.id))
                                     .arg(formatMetric(Metric::Time, p.point.timeMs)));
        auto *timeline = new PipelineTimeline;
        timeline->setEstimate(p.detail.estimate, {}, p.detail.plan.virtualStages);
        timeline->setMinimumHeight(timeline->sizeHint().height());
        v->addWidget(title);
        v->addWidget(timeline);
        mTimelines << timeline;
    }
    double span = 0; // one time scale: every axis spans the longest makespan
    for (const PipelineTimeline *t : mTimelines)
        span = std::max(span, t->schedule().makespanMs);
    for (PipelineTimeline *t : mTimelines)
        t->setAxisSpanMs(span);
    v->addStretch(1);
}

QString PlanComparisonView::csv() const
{
    QStringList header {QStringLiteral("figure")};
    for (int c = 0; c < mPlans.size(); ++c)
        header << csvField(mTable->horizontalHeaderItem(c)->text());
    QStringList lines {header.join(u',')};
    for (int r = 0; r < RowCount; ++r) {
        QStringList row {csvField(QString::fromUtf8(kRowNames[r]))};
        for (int c = 0; c < mPlans.size(); ++c)
            row << csvField(cellText(Row(r), c));
        lines << row.join(u',');
    }
    return lines.join(QStringLiteral("\r\n")) + QStringLiteral("\r\n");
}

} // namespace memx::ui
