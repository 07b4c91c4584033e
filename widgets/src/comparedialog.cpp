#include "memx/ui/comparedialog.h"

#include "memx/io/formats.h"
#include "memx/search/objective.h"

#include <QChart>
#include <QChartView>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QLocale>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScatterSeries>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace memx::ui {
namespace {

enum Column {
    Method,
    Own,
    Memx,
    Measured,
    Peak,
    Imbalance,
    TimeTop1,
    BalanceTop1,
    TimeRegret,
    Search,
    Configs,
    PlanCol
};

QString ms(double v)
{
    return v >= 10000 ? QStringLiteral("%1 s").arg(v / 1000.0, 0, 'f', 2) : QStringLiteral("%1 ms").arg(v, 0, 'f', 1);
}

QString rankText(bool top1, int rank)
{
    return top1 ? QObject::tr("yes") : rank > 0 ? QStringLiteral("#%1").arg(rank) : QStringLiteral("-");
}

QString duration(double msValue)
{
    const double s = msValue / 1000.0;
    if (s < 120)
        return ms(msValue);
    if (s < 7200)
        return QObject::tr("%1 min").arg(s / 60, 0, 'f', 1);
    if (s < 172800)
        return QObject::tr("%1 h").arg(s / 3600, 0, 'f', 1);
    return QObject::tr("%1 days").arg(s / 86400, 0, 'f', 1);
}

} // namespace

CompareDialog::CompareDialog(memx::PlannedSearchRequest request, memx::ObjectiveWeights weights,
                             std::shared_ptr<const memx::SearchProject> project, QWidget *parent)
    : QDialog(parent)
    , mPlanned(std::move(request))
    , mProject(std::move(project))
    , mJob(new BackgroundJob<memx::CompareReport>(this))
{
    setWindowTitle(tr("Compare with Baselines"));
    mRequest.search = mPlanned.search;
    mRequest.memxWeights = weights;
    auto *layout = new QVBoxLayout(this);
    mHeading = new QLabel(this);
    mHeading->setWordWrap(true);
    mHeading->setText(tr("<b>%1</b> on <b>%2</b> (%3 GPUs): MemX, the engine's baselines and the published planners "
                         "Metis, AMP, Sailor and Galvatron (re-implemented from their papers, each with its own space "
                         "and cost model). Ground truth: every method's top plans on the virtual testbed "
                         "(simulated).")
                          .arg(QString::fromStdString(mRequest.search.model.id).toHtmlEscaped(),
                               QString::fromStdString(mRequest.search.cluster.name).toHtmlEscaped())
                          .arg(mRequest.search.cluster.totalGpus()));
    layout->addWidget(mHeading);
    auto *bar = new QHBoxLayout;
    mRun = new QPushButton(tr("&Run"), this);
    mCancel = new QPushButton(tr("&Cancel"), this);
    mSave = new QPushButton(tr("&Save JSON..."), this);
    mProgress = new QProgressBar(this);
    mProgress->setTextVisible(true);
    mStatus = new QLabel(this);
    bar->addWidget(mRun);
    bar->addWidget(mCancel);
    bar->addWidget(mProgress, 1);
    bar->addWidget(mSave);
    layout->addLayout(bar);
    layout->addWidget(mStatus);

    auto *split = new QSplitter(Qt::Vertical, this);
    mTable = new QTableWidget(0, PlanCol + 1, split);
    mTable->setHorizontalHeaderLabels({tr("Method"), tr("Own T"), tr("MemX T"), tr("Testbed T"), tr("Peak M"),
                                       tr("Imbalance B"), tr("Top-1 T"), tr("Top-1 T×M×B"), tr("T regret"),
                                       tr("Search"), tr("Configs"), tr("Plan")});
    mTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    mTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    mTable->verticalHeader()->hide();
    mTable->horizontalHeader()->setStretchLastSection(true);
    mTable->setWordWrap(false);
    mChart = new QChart;
    mChart->setTitle(tr("Ground truth (testbed): time x peak memory; each method's pick marked"));
    mChart->legend()->setAlignment(Qt::AlignBottom);
    mChartView = new QChartView(mChart, split);
    mChartView->setRenderHint(QPainter::Antialiasing);
    mChartView->setMinimumHeight(220);
    mNotes = new QPlainTextEdit(split);
    mNotes->setReadOnly(true);
    mNotes->setPlaceholderText(tr("Notes of the comparison and of each method appear here."));
    split->addWidget(mTable);
    split->addWidget(mChartView);
    split->addWidget(mNotes);
    layout->addWidget(split, 1);
    split->setSizes({290, 420, 150});
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(1280, 900);

    connect(mRun, &QPushButton::clicked, this, &CompareDialog::run);
    connect(mCancel, &QPushButton::clicked, this, &CompareDialog::cancel);
    connect(mSave, &QPushButton::clicked, this, &CompareDialog::saveJson);
    mCancel->setEnabled(false);
    mSave->setEnabled(false);
    connect(mJob, &BackgroundJobBase::progress, this, [this](quint64, qulonglong done, qulonglong total) {
        mProgress->setMaximum(total ? static_cast<int>(total) : 0);
        mProgress->setValue(static_cast<int>(done));
        const qulonglong phase = total ? done * 6 / std::max<qulonglong>(total, 1) : 0;
        static const char *phases[]
            = {"MemX search",        "MemX (learned)", "proportional search", "uniform re-split",
               "published planners", "testbed runs",   "testbed runs"};
        mProgress->setFormat(tr("%1: %p%").arg(tr(phases[std::min<qulonglong>(phase, 6)])));
    });
    auto stopped = [this](const QString &text, bool ok) {
        mRun->setEnabled(true);
        mCancel->setEnabled(false);
        mProgress->setMaximum(100);
        mProgress->setValue(ok ? 100 : 0);
        mProgress->setFormat(text);
        emit finished(ok);
    };
    mJob->setFinishedHandler([this, stopped](quint64, memx::CompareReport report) {
        mReport = std::move(report);
        showReport();
        stopped(tr("done"), true);
    });
    connect(mJob, &BackgroundJobBase::cancelled, this, [this, stopped](quint64) {
        mStatus->setText(tr("Cancelled: no result."));
        stopped(tr("cancelled"), false);
    });
    connect(mJob, &BackgroundJobBase::failed, this, [this, stopped](quint64, const QString &message) {
        mReport.reset();
        mStatus->setText(tr("<span style='color:#b00'>Cannot compare: %1</span>").arg(message.toHtmlEscaped()));
        stopped(tr("failed"), false);
    });
}

CompareDialog::~CompareDialog() = default; // the job (a child) cancels and waits for its worker

void CompareDialog::run()
{
    memx::PlannedSearch planned;
    try {
        planned = memx::planSearch(mPlanned, mProject.get());
    } catch (const std::exception &e) {
        mStatus->setText(
            tr("<span style='color:#b00'>Cannot compare: %1</span>").arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
        emit finished(false);
        return;
    }
    auto shared = std::make_shared<memx::PlannedSearch>(std::move(planned));
    memx::CompareRequest req = memx::compareRequestFor(*shared);
    req.memxWeights = mRequest.memxWeights;
    mRun->setEnabled(false);
    mCancel->setEnabled(true);
    mSave->setEnabled(false);
    mStatus->setText(shared->narrowed.empty()
                         ? tr("Running...")
                         : tr("Running (space narrowed: %1)...").arg(QString::fromStdString(shared->narrowed.back())));
    mJob->start([shared, req](JobControl &control) {
        memx::CompareReport r = memx::runCompare(req, control.progress());
        if (r.cancelled)
            throw memx::Cancelled();
        return r;
    });
}

void CompareDialog::cancel()
{
    mJob->cancel();
}

bool CompareDialog::isRunning() const
{
    return mJob->isRunning();
}

QString CompareDialog::statusText() const
{
    return mStatus->text();
}

void CompareDialog::showReport()
{
    const memx::CompareReport &r = *mReport;
    const memx::Cluster &cluster = mRequest.search.cluster;
    mTable->setRowCount(static_cast<int>(r.methods.size()));
    for (int row = 0; row < static_cast<int>(r.methods.size()); ++row) {
        const memx::MethodOutcome &o = r.methods[static_cast<size_t>(row)];
        auto set = [&](int col, const QString &text) {
            auto *item = new QTableWidgetItem(text);
            if (col != Method && col != PlanCol)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            mTable->setItem(row, col, item);
        };
        const bool profiled = o.method == memx::CompareMethod::Exhaustive;
        set(Method, QString::fromStdString(o.name));
        mTable->item(row, Method)->setToolTip(QString::fromStdString(o.description));
        set(Own, o.published && o.hasPlan ? ms(o.ownTimeMs) : QStringLiteral("-"));
        set(Memx, o.hasPlan ? ms(o.predictedTimeMs) + (o.memxOom ? tr(" (OOM)") : QString()) : QStringLiteral("-"));
        set(Measured, o.measuredOk ? ms(o.measuredTimeMs) : o.hasPlan ? tr("OOM") : QStringLiteral("-"));
        set(Peak, o.measuredOk ? QString::number(o.measuredPeak, 'f', 3) : QStringLiteral("-"));
        set(Imbalance, o.measuredOk ? QString::number(o.measuredImbalance, 'f', 3) : QStringLiteral("-"));
        set(TimeTop1, rankText(o.top1Time, o.timeRank));
        set(BalanceTop1, rankText(o.top1MemoryBalance, o.memoryBalanceRank));
        set(TimeRegret, o.measuredOk ? QStringLiteral("%1%").arg(o.timeRegretPct, 0, 'f', 1) : QStringLiteral("-"));
        set(Search, duration(o.searchMs));
        set(Configs, QLocale(QLocale::English).toString(qulonglong(o.validConfigs)));
        QString plan = o.hasPlan ? QString::fromStdString(o.plan.summary(cluster))
            : profiled           ? tr("same as ground truth (every configuration run end to end)")
            : o.refusal.empty()  ? tr("no valid plan")
                                 : tr("no plan: %1").arg(QString::fromStdString(o.refusal));
        set(PlanCol, plan);
        mTable->item(row, PlanCol)->setToolTip(plan);
    }
    mTable->resizeColumnsToContents();
    QStringList notes;
    for (const std::string &n : r.notes)
        notes << QString::fromStdString(n);
    for (const memx::MethodOutcome &o : r.methods)
        for (const std::string &n : o.notes)
            notes << QStringLiteral("%1: %2").arg(QString::fromStdString(o.name), QString::fromStdString(n));
    mNotes->setPlainText(notes.join(QLatin1Char('\n')));
    size_t ok = 0;
    for (const memx::TruthCandidate &c : r.truth.candidates)
        ok += c.ok ? 1 : 0;
    mStatus->setText(tr("%1 candidate plans on the testbed (%2 ran, %3 out of memory); launch target %4.")
                         .arg(r.truth.candidates.size())
                         .arg(ok)
                         .arg(r.truth.candidates.size() - ok)
                         .arg(QString::fromUtf8(memx::toString(r.target))));
    mSave->setEnabled(true);
    fillChart();
}

void CompareDialog::addParetoFront(const memx::GroundTruth &truth)
{
    // The measured (T, M) Pareto front of the candidates that ran, by the search's own front
    // (B held at 0 so only T and M count), drawn as a staircase line in T order.
    std::vector<double> t, m, b;
    for (const memx::TruthCandidate &c : truth.candidates)
        if (c.ok) {
            t.push_back(c.timeMs / 1000.0);
            m.push_back(c.peak);
            b.push_back(0.0);
        }
    std::vector<uint32_t> front = memx::paretoFront(memx::MetricView {t.data(), m.data(), b.data(), t.size()});
    if (front.empty())
        return;
    std::sort(front.begin(), front.end(), [&](uint32_t a, uint32_t c) { return t[a] < t[c]; });
    auto *line = new QLineSeries;
    line->setName(tr("measured Pareto front (T, M)"));
    line->setColor(QColor(120, 120, 120));
    for (uint32_t i : front)
        line->append(t[i], m[i]);
    mChart->addSeries(line);
}

void CompareDialog::fillChart()
{
    mChart->removeAllSeries();
    for (QAbstractAxis *a : mChart->axes())
        mChart->removeAxis(a);
    const memx::CompareReport &r = *mReport;
    auto *all = new QScatterSeries;
    all->setName(tr("candidates"));
    all->setMarkerSize(6);
    all->setColor(QColor(170, 170, 170));
    double minT = 0, maxT = 0, maxM = 0;
    for (const memx::TruthCandidate &c : r.truth.candidates)
        if (c.ok) {
            all->append(c.timeMs / 1000.0, c.peak);
            minT = minT > 0 ? std::min(minT, c.timeMs / 1000.0) : c.timeMs / 1000.0;
            maxT = std::max(maxT, c.timeMs / 1000.0);
            maxM = std::max(maxM, c.peak);
        }
    mChart->addSeries(all);
    addParetoFront(r.truth);
    static const QColor colors[]
        = {QColor(0, 90, 200),  QColor(230, 120, 0), QColor(0, 150, 70),  QColor(120, 60, 170), QColor(90, 90, 90),
           QColor(200, 30, 40), QColor(0, 160, 170), QColor(170, 130, 0), QColor(220, 60, 160)};
    size_t k = 0;
    for (const memx::MethodOutcome &o : r.methods) {
        const QColor color = colors[k++ % std::size(colors)];
        if (!o.measuredOk || o.method == memx::CompareMethod::Exhaustive)
            continue;
        auto *s = new QScatterSeries;
        s->setName(QString::fromStdString(o.name));
        s->setMarkerSize(o.method == memx::CompareMethod::MemX
                             ? 18
                             : 10); // MemX drawn first and larger: a ring where a later pick coincides
        s->setMarkerShape(o.published ? QScatterSeries::MarkerShapeRectangle : QScatterSeries::MarkerShapeCircle);
        s->setColor(color);
        s->append(o.measuredTimeMs / 1000.0, o.measuredPeak);
        mChart->addSeries(s);
    }
    auto *x = new QValueAxis;
    x->setTitleText(tr("testbed iteration time (s)"));
    x->setRange(minT * 0.95, std::max(maxT, 1e-3) * 1.05);
    x->setLabelFormat(QStringLiteral("%.1f"));
    auto *y = new QValueAxis;
    y->setTitleText(tr("peak M"));
    y->setRange(0, std::max(maxM, 1e-3) * 1.1);
    y->setLabelFormat(QStringLiteral("%.2f"));
    mChart->addAxis(x, Qt::AlignBottom);
    mChart->addAxis(y, Qt::AlignLeft);
    for (QAbstractSeries *s : mChart->series()) {
        s->attachAxis(x);
        s->attachAxis(y);
    }
}

void CompareDialog::saveJson()
{
    if (!mReport)
        return;
    const QString path = QFileDialog::getSaveFileName(this, tr("Save Comparison"), QStringLiteral("compare.json"),
                                                      tr("JSON (*.json)"));
    if (path.isEmpty())
        return;
    try {
        memx::saveJson(memx::toJson(*mReport, mRequest.search.cluster), path.toStdString());
        mStatus->setText(tr("Saved %1").arg(path.toHtmlEscaped()));
    } catch (const std::exception &e) {
        QMessageBox::warning(this, tr("Cannot save"), QString::fromUtf8(e.what()));
    }
}

} // namespace memx::ui
