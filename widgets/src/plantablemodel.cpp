#include "memx/ui/plantablemodel.h"

#include <QBrush>
#include <QColor>
#include <QStringList>

#include <algorithm>
#include <numeric>

namespace memx::ui {

namespace {
/// The learned predictor's flags of a plan: "risk of OOM", "EXTRAPOLATING".
QString flagsText(const PlanPoint &p)
{
    if (!p.learned)
        return {};
    QStringList flags;
    if (p.riskOfOom)
        flags << QStringLiteral("risk of OOM");
    if (p.extrapolating)
        flags << QStringLiteral("EXTRAPOLATING");
    return flags.join(QStringLiteral(", "));
}
} // namespace

PlanTableModel::PlanTableModel(QObject *parent)
    : QAbstractTableModel(parent)
{
}

void PlanTableModel::setPlans(QVector<PlanPoint> plans)
{
    beginResetModel();
    mPlans = std::move(plans);
    const bool seconds = memx::ui::timeInSeconds(mPlans);
    const bool unitChanged = seconds != mTimeInSeconds;
    mTimeInSeconds = seconds;
    computeRanks();
    endResetModel();
    if (unitChanged)
        emit headerDataChanged(Qt::Horizontal, TimeColumn, TimeColumn);
}

bool PlanTableModel::updateScores(const QVector<double> &scores)
{
    if (scores.size() != mPlans.size())
        return false;
    for (int i = 0; i < mPlans.size(); ++i)
        mPlans[i].score = scores[i];
    computeRanks();
    if (!mPlans.isEmpty()) {
        emit dataChanged(index(0, RankColumn), index(rowCount() - 1, RankColumn));
        emit dataChanged(index(0, ScoreColumn), index(rowCount() - 1, ScoreColumn));
    }
    return true;
}

void PlanTableModel::computeRanks()
{
    QVector<int> order(mPlans.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [this](int a, int b) {
        const auto &pa = mPlans[a];
        const auto &pb = mPlans[b];
        if (pa.score != pb.score)
            return pa.score < pb.score;
        if (pa.timeMs != pb.timeMs)
            return pa.timeMs < pb.timeMs;
        return pa.id < pb.id;
    });
    mRank.resize(mPlans.size());
    for (int r = 0; r < order.size(); ++r)
        mRank[order[r]] = r + 1;
}

int PlanTableModel::rowOfPlan(quint32 id) const
{
    for (int i = 0; i < mPlans.size(); ++i) {
        if (mPlans[i].id == id)
            return i;
    }
    return -1;
}

quint32 PlanTableModel::topPlanId() const
{
    const auto it = std::find(mRank.begin(), mRank.end(), 1);
    return it == mRank.end() ? 0 : mPlans[int(it - mRank.begin())].id;
}

int PlanTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(mPlans.size());
}

int PlanTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PlanTableModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const PlanPoint &p = mPlans[index.row()];
    const int col = index.column();
    switch (role) {
    case Qt::DisplayRole:
        switch (col) {
        case RankColumn:
            return mRank[index.row()];
        case TimeColumn:
            return mTimeInSeconds ? QString::number(p.timeMs / 1000.0, 'f', 2) : QString::number(p.timeMs, 'f', 1);
        case MemoryColumn:
            return QString::number(p.peakMemoryFraction * 100.0, 'f', 1);
        case ImbalanceColumn:
            return QString::number(p.imbalance, 'f', 3);
        case ScoreColumn:
            return QString::number(p.score, 'f', 4);
        case ParetoColumn:
            return p.onFront ? QStringLiteral("\u2605") : QString();
        case SpreadColumn:
            return p.learned ? QStringLiteral("\u00b1%1/\u00b1%2")
                                   .arg(p.timeSpread * 100.0, 0, 'f', 1)
                                   .arg(p.memorySpread * 100.0, 0, 'f', 1)
                             : QString();
        case FlagsColumn:
            return flagsText(p);
        case LauncherColumn:
            return p.launcher;
        case PlanColumn: {
            const QString text = p.idle.isEmpty() ? p.summary : p.summary + QStringLiteral("  [") + p.idle + u']';
            if (p.oom)
                return QStringLiteral("[OOM] ") + text;
            return text;
        }
        }
        break;
    case SortRole:
        switch (col) {
        case RankColumn:
            return mRank[index.row()];
        case TimeColumn:
            return p.timeMs;
        case MemoryColumn:
            return p.peakMemoryFraction;
        case ImbalanceColumn:
            return p.imbalance;
        case ScoreColumn:
            return p.score;
        case ParetoColumn:
            return p.onFront ? 1 : 0;
        case SpreadColumn:
            return p.timeSpread;
        case FlagsColumn:
            return flagsText(p);
        case LauncherColumn:
            return p.launcher;
        case PlanColumn:
            return p.summary;
        }
        break;
    case PlanIdRole:
        return QVariant::fromValue(p.id);
    case Qt::ToolTipRole: {
        QString tip
            = QStringLiteral("%1\nT %2 · M %3 · B %4")
                  .arg(p.summary, formatMetric(Metric::Time, p.timeMs),
                       formatMetric(Metric::Memory, p.peakMemoryFraction), formatMetric(Metric::Balance, p.imbalance));
        if (!p.launcher.isEmpty())
            tip += QStringLiteral("\nLauncher: ") + p.launcher;
        if (!p.idle.isEmpty())
            tip += QStringLiteral("\n") + p.idle;
        if (p.learned)
            tip += QStringLiteral("\nLearned predictor: one-sigma spread T \u00b1%1 %, memory \u00b1%2 %")
                       .arg(p.timeSpread * 100.0, 0, 'f', 1)
                       .arg(p.memorySpread * 100.0, 0, 'f', 1);
        if (p.oom)
            tip += QStringLiteral("\nOut of memory on at least one GPU");
        else if (p.riskOfOom)
            tip += p.learned ? QStringLiteral("\nRisk of OOM: the predicted peak plus its spread reaches capacity")
                             : QStringLiteral("\nRisk of OOM: close to capacity");
        if (p.extrapolating)
            tip += QStringLiteral("\nEXTRAPOLATING: unlike every training run (spreads widened)");
        return tip;
    }
    case Qt::TextAlignmentRole:
        if (col == PlanColumn || col == LauncherColumn || col == FlagsColumn)
            return QVariant(Qt::AlignLeft | Qt::AlignVCenter);
        if (col == ParetoColumn)
            return QVariant(Qt::AlignCenter);
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
        if (p.oom)
            return QBrush(QColor(0xc6, 0x28, 0x28));
        if (p.riskOfOom && (col == MemoryColumn || col == FlagsColumn))
            return QBrush(QColor(0xb2, 0x6a, 0x00));
        if (p.extrapolating && col == FlagsColumn)
            return QBrush(QColor(0xb0, 0x00, 0x00));
        break;
    default:
        break;
    }
    return {};
}

QVariant PlanTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    if (role == Qt::DisplayRole) {
        if (section == TimeColumn && mTimeInSeconds)
            return tr("Time (s)");
        static const char *const names[ColumnCount]
            = {"Rank",           "Time (ms)", "\u00b1 T / M (%)", "Learned",  "Peak mem (%)",
               "Imbalance (CV)", "Score",     "Pareto",           "Launcher", "Plan"};
        return QString::fromUtf8(names[section]);
    }
    if (role == Qt::ToolTipRole) {
        if (section == TimeColumn && mTimeInSeconds)
            return tr("Predicted time per training iteration, seconds");
        static const char *const tips[ColumnCount] = {
            "1 = best weighted score",
            "Predicted time per training iteration, milliseconds",
            "Learned predictor: relative one-sigma spread of the time and of the peak memory, percent",
            "Learned predictor: risk of OOM (predicted peak + spread reaches capacity), EXTRAPOLATING (unlike every "
            "training run: spreads widened)",
            "Highest per-GPU memory use as a percentage of that GPU's capacity",
            "Coefficient of variation of per-GPU utilisation (0 = perfectly balanced)",
            "Weighted, normalised objective (lower is better)",
            "\u2605 = on the Pareto front of time, memory and balance",
            "The runtime that launches the plan (the search's target); with target \"any\": the launchers that "
            "accept it, or \"no launcher\"",
            "Plan summary, and the GPUs it leaves idle",
        };
        return QString::fromUtf8(tips[section]);
    }
    return QAbstractTableModel::headerData(section, orientation, role);
}

PlanFilterProxy::PlanFilterProxy(QObject *parent)
    : QSortFilterProxyModel(parent)
{
    setSortRole(PlanTableModel::SortRole);
    setDynamicSortFilter(true);
}

void PlanFilterProxy::setTextFilter(const QString &text)
{
    if (text == mText)
        return;
    mText = text;
    invalidateFilter();
}

void PlanFilterProxy::setParetoOnly(bool on)
{
    if (on == mParetoOnly)
        return;
    mParetoOnly = on;
    invalidateFilter();
}

void PlanFilterProxy::setHideOom(bool on)
{
    if (on == mHideOom)
        return;
    mHideOom = on;
    invalidateFilter();
}

bool PlanFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const
{
    const auto *model = qobject_cast<const PlanTableModel *>(sourceModel());
    if (!model || sourceParent.isValid() || sourceRow < 0 || sourceRow >= model->plans().size())
        return QSortFilterProxyModel::filterAcceptsRow(sourceRow, sourceParent);
    const PlanPoint &p = model->plans()[sourceRow];
    if (mParetoOnly && !p.onFront)
        return false;
    if (mHideOom && p.oom)
        return false;
    if (!mText.isEmpty() && !p.summary.contains(mText, Qt::CaseInsensitive)
        && !p.launcher.contains(mText, Qt::CaseInsensitive) && !p.idle.contains(mText, Qt::CaseInsensitive))
        return false;
    return true;
}

bool PlanFilterProxy::lessThan(const QModelIndex &left, const QModelIndex &right) const
{
    // Numeric columns straight from the plans: sorting ~7,000 rows through QVariant data() calls
    // cost ~100 ms of UI thread per search result (tests/bench/bench_gui.cpp).
    const auto *model = qobject_cast<const PlanTableModel *>(sourceModel());
    const int column = left.column();
    if (model && sortRole() == PlanTableModel::SortRole && column == right.column()
        && column != PlanTableModel::PlanColumn && left.row() < model->plans().size()
        && right.row() < model->plans().size()) {
        auto key = [model, column](int row) -> double {
            const PlanPoint &p = model->plans()[row];
            switch (column) {
            case PlanTableModel::RankColumn:
                return model->rankOfRow(row);
            case PlanTableModel::TimeColumn:
                return p.timeMs;
            case PlanTableModel::MemoryColumn:
                return p.peakMemoryFraction;
            case PlanTableModel::ImbalanceColumn:
                return p.imbalance;
            case PlanTableModel::ScoreColumn:
                return p.score;
            case PlanTableModel::ParetoColumn:
                return p.onFront ? 1 : 0;
            case PlanTableModel::SpreadColumn:
                return p.timeSpread;
            case PlanTableModel::FlagsColumn:
                return (p.riskOfOom ? 2 : 0) + (p.extrapolating ? 1 : 0);
            }
            return 0;
        };
        return key(left.row()) < key(right.row());
    }
    const QVariant l = left.data(sortRole());
    const QVariant r = right.data(sortRole());
    if (l.typeId() == QMetaType::QString || r.typeId() == QMetaType::QString)
        return QString::localeAwareCompare(l.toString(), r.toString()) < 0;
    return l.toDouble() < r.toDouble();
}

} // namespace memx::ui
