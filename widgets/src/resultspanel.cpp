#include "memx/ui/resultspanel.h"

#include "memx/ui/memorybarchart.h"
#include "memx/ui/paretochartview.h"
#include "memx/ui/pipelinetimeline.h"
#include "memx/ui/plancomparison.h"
#include "memx/ui/plancsv.h"
#include "memx/ui/planselection.h"
#include "memx/ui/plantablemodel.h"
#include "memx/ui/searchjob.h"
#include "memx/ui/stagediagram.h"

#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QResizeEvent>
#include <QScreen>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace memx::ui {

ResultsPanel::ResultsPanel(QWidget *parent)
    : QWidget(parent)
{
    mSelection = new PlanSelection(this);
    mJob = new SearchJob(this);
    mPrepare = new BackgroundJob<std::shared_ptr<Prepared>>(this);
    mPrepare->setFinishedHandler(
        [this](quint64 id, std::shared_ptr<Prepared> prepared) { applyResults(id, *prepared); });
    mDebounce = new QTimer(this);
    mDebounce->setSingleShot(true);
    mDebounce->setInterval(DebounceMs);
    connect(mDebounce, &QTimer::timeout, this, &ResultsPanel::runSearch);
    mChartRefresh = new QTimer(this);
    mChartRefresh->setSingleShot(true);
    mChartRefresh->setInterval(150);
    connect(mChartRefresh, &QTimer::timeout, this, &ResultsPanel::refreshChart);

    QVBoxLayout *toolbar = createToolbar();
    QWidget *charts = createCharts();
    QWidget *tableBox = createTable();
    QWidget *detailBox = createDetail();
    auto *lower = new QSplitter(Qt::Horizontal);
    lower->setObjectName(QStringLiteral("resultsLowerSplitter"));
    lower->addWidget(tableBox);
    lower->addWidget(detailBox);
    lower->setStretchFactor(0, 5);
    lower->setStretchFactor(1, 4);
    lower->setChildrenCollapsible(false);

    auto *vertical = new QSplitter(Qt::Vertical);
    vertical->setObjectName(QStringLiteral("resultsSplitter"));
    vertical->addWidget(charts);
    vertical->addWidget(lower);
    vertical->setStretchFactor(0, 1);
    vertical->setStretchFactor(1, 1);
    vertical->setChildrenCollapsible(false);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addLayout(toolbar);
    layout->addWidget(mNotes);
    layout->addWidget(vertical, 1);

    connectViews();
}

/// The search toolbar (Run / Cancel, progress, target, global batch, export) and the counts and
/// notes lines below it.
QVBoxLayout *ResultsPanel::createToolbar()
{
    mRun = new QPushButton(tr("Run search"));
    mRun->setToolTip(tr("Search every parallel plan of this cluster and model (runs in the background)"));
    mCancel = new QPushButton(tr("Cancel"));
    mCancel->setEnabled(false);
    mProgress = new QProgressBar;
    mProgress->setRange(0, 1000);
    mProgress->setValue(0);
    mProgress->setTextVisible(true);
    mProgress->setFormat(tr("idle"));
    // Room for "1/2 searching 100% of 1,234,567 bases · ~12 s left" (the bar clips, never wraps).
    mProgress->setMinimumWidth(
        mProgress->fontMetrics().horizontalAdvance(tr("1/2 searching 100% of 1,234,567 bases \u00b7 ~88 s left")) + 16);
    mProgress->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    mCounts = new QLabel;
    mCounts->setTextInteractionFlags(Qt::TextSelectableByMouse);
    mCounts->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred); // long counts never widen the window
    mGlobalBatch = new QSpinBox;
    mGlobalBatch->setRange(0, 1 << 20);
    mGlobalBatch->setSpecialValueText(tr("model's"));
    mGlobalBatch->setToolTip(tr("Global batch (sequences per iteration) to search for; \"model's\" uses the "
                                "model's setting"));
    mGlobalBatch->setKeyboardTracking(false);
    mTarget = new QComboBox;
    mTarget->addItem(tr("From the cluster"));
    mTarget->addItem(tr("Megatron-LM"));
    mTarget->addItem(tr("FlagScale"));
    mTarget->addItem(tr("Any (no launcher)"));
    mTarget->setToolTip(tr("The runtime the plans must launch on. \"From the cluster\": Megatron-LM for one device "
                           "type, FlagScale for types it runs (the groups it cannot run stay idle). \"Any\": the cost "
                           "model's whole space; each plan shows which launcher runs it, if any."));
    mOverlapDp = new QCheckBox(tr("Overlap DP"));
    mOverlapDp->setToolTip(tr("Megatron-LM's --overlap-grad-reduce on every plan (and --overlap-param-gather with the "
                              "distributed optimizer): the data-parallel collectives run behind the last backward / "
                              "first forward where the cost model says they can; exports carry the flags"));
    mFsdp = new QCheckBox(tr("FSDP"));
    mFsdp->setObjectName(QStringLiteral("fsdp"));
    mFsdp->setToolTip(tr("Also search Megatron-FSDP (--use-megatron-fsdp) on single-stage plans: gradients "
                         "(optim_grads) or gradients and weights (optim_grads_params) sharded over the data-parallel "
                         "group, gathered and reduced layer by layer every micro-batch. Less memory per GPU, more "
                         "data-parallel traffic; Megatron-LM exports only"));
    mFp8 = new QComboBox;
    mFp8->addItem(tr("BF16"), int(Fp8Format::Off));
    mFp8->addItem(tr("FP8 hybrid"), int(Fp8Format::Hybrid));
    mFp8->addItem(tr("FP8 e4m3"), int(Fp8Format::E4M3));
    mFp8->setToolTip(tr("FP8 GEMMs with Transformer Engine on every plan (Megatron-LM's --fp8-format): faster "
                        "linear layers, FP8 copies of the weights. Groups whose GPUs have no FP8 (before Hopper/Ada, "
                        "CDNA3) stay idle; exports carry the flags"));
    mExport = new QPushButton(tr("Export plan..."));
    mExport->setEnabled(false);
    mExport->setToolTip(tr("Write launch files (Megatron-LM, FlagScale, Slurm, JSON) for the selected plan"));
    // Two rows, so the panel fits a 1024 px window: the search and its progress, then its settings.
    auto *bar = new QHBoxLayout;
    bar->setContentsMargins(6, 4, 6, 2);
    bar->addWidget(mRun);
    bar->addWidget(mCancel);
    bar->addWidget(mProgress, 1);
    bar->addWidget(mExport);
    auto *settingsRow = new QHBoxLayout;
    settingsRow->setContentsMargins(6, 0, 6, 2);
    auto *targetLabel = new QLabel(tr("&Target:"));
    targetLabel->setBuddy(mTarget);
    settingsRow->addWidget(targetLabel);
    settingsRow->addWidget(mTarget);
    settingsRow->addWidget(mOverlapDp);
    settingsRow->addWidget(mFsdp);
    settingsRow->addWidget(mFp8);
    auto *batchLabel = new QLabel(tr("Global &batch:"));
    batchLabel->setBuddy(mGlobalBatch);
    settingsRow->addWidget(batchLabel);
    settingsRow->addWidget(mGlobalBatch);
    settingsRow->addStretch(1);
    // The counts get their own line: next to the buttons they were clipped at the default size.
    auto *countsRow = new QHBoxLayout;
    countsRow->setContentsMargins(8, 0, 6, 2);
    countsRow->addWidget(mCounts, 1);
    mNotes = new QLabel;
    mNotes->setTextFormat(Qt::RichText);
    mNotes->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
    connect(mNotes, &QLabel::linkActivated, this, [this] { setNotesExpanded(!mNotesExpanded); });
    mNotes->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    mNotes->setContentsMargins(8, 0, 6, 2);
    auto *rows = new QVBoxLayout;
    rows->setContentsMargins(0, 0, 0, 0);
    rows->setSpacing(0);
    rows->addLayout(bar);
    rows->addLayout(settingsRow);
    rows->addLayout(countsRow);
    return rows;
}

/// The Pareto chart and the memory bars side by side.
QWidget *ResultsPanel::createCharts()
{
    mPareto = new ParetoChartView;
    mPareto->setMinimumHeight(240); // its width: at least what its toolbar needs (no clipped legend)
    mBars = new MemoryBarChart;
    mBars->setMinimumSize(200, 220);
    auto *charts = new QSplitter(Qt::Horizontal);
    charts->setObjectName(QStringLiteral("resultsChartsSplitter"));
    charts->addWidget(mPareto);
    charts->addWidget(mBars);
    charts->setStretchFactor(0, 1);
    charts->setStretchFactor(1, 1);
    charts->setChildrenCollapsible(false);
    return charts;
}

/// The ranked plan table with its filters.
QWidget *ResultsPanel::createTable()
{
    mModel = new PlanTableModel(this);
    mProxy = new PlanFilterProxy(this);
    mProxy->setSourceModel(mModel);
    mTable = new QTableView;
    mTable->setModel(mProxy);
    mTable->setSortingEnabled(true);
    mTable->sortByColumn(PlanTableModel::RankColumn, Qt::AscendingOrder);
    mTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    // Ctrl/Shift+click selects more rows to compare; the current row is the plan shown everywhere.
    mTable->setSelectionMode(QAbstractItemView::ExtendedSelection);
    mTable->verticalHeader()->hide();
    mTable->verticalHeader()->setDefaultSectionSize(mTable->fontMetrics().height() + 6);
    mTable->horizontalHeader()->setStretchLastSection(true);
    mTable->setAlternatingRowColors(true);
    mTable->setWordWrap(false);
    // Right-click the header: choose the columns (a narrow window shows more of the plan summary).
    mTable->horizontalHeader()->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(mTable->horizontalHeader(), &QWidget::customContextMenuRequested, this, [this](const QPoint &pos) {
        std::unique_ptr<QMenu> menu(createColumnMenu(this));
        menu->exec(mTable->horizontalHeader()->mapToGlobal(pos));
    });
    mFilter = new QLineEdit;
    mFilter->setPlaceholderText(tr("Filter plans"));
    mFilter->setToolTip(
        tr("Show the plans whose stages, launcher or idle GPUs contain this text, e.g. mi250x, rc=full, PP4"));
    mFilter->setClearButtonEnabled(true);
    // The placeholder and the clear button stay readable in a narrow pane (it was "Filter ...").
    mFilter->setMinimumWidth(mFilter->fontMetrics().horizontalAdvance(mFilter->placeholderText()) + 44);
    mParetoOnly = new QCheckBox(tr("Pareto front only"));
    mHideOom = new QCheckBox(tr("Hide OOM"));
    auto *filters = new QHBoxLayout;
    filters->setContentsMargins(0, 0, 0, 0);
    filters->addWidget(mFilter, 1);
    filters->addWidget(mParetoOnly);
    filters->addWidget(mHideOom);
    mCsv = new QToolButton;
    mCsv->setText(tr("CSV"));
    mCsv->setToolTip(tr("Save the plan table (the rows shown, in their order) or the whole Pareto front as CSV"));
    mCsv->setPopupMode(QToolButton::InstantPopup);
    mCsv->setEnabled(false);
    auto *csvMenu = new QMenu(mCsv);
    csvMenu->addAction(tr("Plan Table as Shown..."), this, [this] { saveCsvInteractive(false); });
    csvMenu->addAction(tr("Pareto Front..."), this, [this] { saveCsvInteractive(true); });
    mCsv->setMenu(csvMenu);
    filters->addWidget(mCsv);
    mCompare = new QPushButton(tr("Compare"));
    mCompare->setEnabled(false);
    mCompare->setToolTip(tr("Select 2 or 3 plans (Ctrl+click or Shift+click rows) to see them side by side"));
    filters->addWidget(mCompare);
    auto *tableBox = new QWidget;
    auto *tableLayout = new QVBoxLayout(tableBox);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tableLayout->setSpacing(2);
    tableLayout->addLayout(filters);
    tableLayout->addWidget(mTable, 1);
    return tableBox;
}

QString ResultsPanel::tableCsv() const
{
    QVector<PlanPoint> plans;
    QVector<int> ranks;
    const int rows = mProxy->rowCount();
    plans.reserve(rows);
    ranks.reserve(rows);
    for (int r = 0; r < rows; ++r) {
        const int source = mProxy->mapToSource(mProxy->index(r, 0)).row();
        plans.push_back(mModel->plans().at(source));
        ranks.push_back(mModel->rankOfRow(source));
    }
    return plansCsv(plans, ranks);
}

QString ResultsPanel::frontCsv() const
{
    return plansCsv(mResults.frontPoints());
}

bool ResultsPanel::saveCsv(bool front, const QString &path, QString *error) const
{
    return writeTextFile(path, front ? frontCsv() : tableCsv(), error);
}

void ResultsPanel::saveCsvInteractive(bool front)
{
    const QString path
        = QFileDialog::getSaveFileName(this, front ? tr("Save Pareto Front") : tr("Save Plan Table"),
                                       front ? QStringLiteral("pareto-front.csv") : QStringLiteral("plans.csv"),
                                       tr("CSV files (*.csv);;All files (*)"));
    if (path.isEmpty())
        return;
    QString error;
    if (!saveCsv(front, path, &error)) {
        QMessageBox::warning(this, tr("Save CSV"), error);
        return;
    }
    emit statusMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
}

/// The plan detail: stage diagram + breakdown text.
QWidget *ResultsPanel::createDetail()
{
    mDetailTitle = new QLabel(tr("<b>Plan detail</b>"));
    mDetailTitle->setWordWrap(true);
    mDetailTitle->setTextInteractionFlags(Qt::TextSelectableByMouse);
    mStages = new StageDiagram;
    auto *stageScroll = new QScrollArea;
    stageScroll->setWidget(mStages);
    stageScroll->setWidgetResizable(true);
    stageScroll->setFrameShape(QFrame::NoFrame);
    mDetailText = new QTextBrowser;
    mDetailText->setOpenLinks(false);
    mDetailTabs = new QTabWidget;
    mDetailTabs->setDocumentMode(true);
    mDetailTabs->addTab(stageScroll, tr("Pipeline"));
    mDetailTabs->addTab(mDetailText, tr("Time breakdown"));
    // The 1F1B schedule of the selected plan's estimate: where the pipeline bubbles are.
    mTimeline = new PipelineTimeline;
    auto *timelineScroll = new QScrollArea;
    timelineScroll->setWidget(mTimeline);
    timelineScroll->setWidgetResizable(true);
    timelineScroll->setFrameShape(QFrame::NoFrame);
    mDetailTabs->addTab(timelineScroll, tr("Timeline"));
    auto *detailBox = new QWidget;
    auto *detailLayout = new QVBoxLayout(detailBox);
    detailLayout->setContentsMargins(0, 0, 0, 0);
    detailLayout->setSpacing(2);
    detailLayout->addWidget(mDetailTitle);
    detailLayout->addWidget(mDetailTabs, 1);
    return detailBox;
}

void ResultsPanel::connectViews()
{
    connect(mRun, &QPushButton::clicked, this, &ResultsPanel::runSearch);
    connect(mCancel, &QPushButton::clicked, this, &ResultsPanel::cancelSearch);
    connect(mExport, &QPushButton::clicked, this, &ResultsPanel::exportRequested);
    connect(mGlobalBatch, &QSpinBox::valueChanged, this, &ResultsPanel::scheduleSearch);
    connect(mTarget, &QComboBox::currentIndexChanged, this, &ResultsPanel::scheduleSearch);
    connect(mOverlapDp, &QCheckBox::toggled, this, &ResultsPanel::scheduleSearch);
    connect(mFsdp, &QCheckBox::toggled, this, &ResultsPanel::scheduleSearch);
    connect(mFp8, &QComboBox::currentIndexChanged, this, &ResultsPanel::scheduleSearch);
    connectSearchJob();
    connect(mFilter, &QLineEdit::textChanged, mProxy, &PlanFilterProxy::setTextFilter);
    connect(mParetoOnly, &QCheckBox::toggled, mProxy, &PlanFilterProxy::setParetoOnly);
    connect(mHideOom, &QCheckBox::toggled, mProxy, &PlanFilterProxy::setHideOom);

    connect(mPareto, &ParetoChartView::planSelected, mSelection, &PlanSelection::select);
    connect(mTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex &current) {
                if (current.isValid())
                    mSelection->select(current.data(PlanTableModel::PlanIdRole).toUInt());
            });
    connect(mSelection, &PlanSelection::changed, this, &ResultsPanel::showSelection);
    connect(mTable->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ResultsPanel::updateCompareButton);
    connect(mCompare, &QPushButton::clicked, this, &ResultsPanel::compareSelected);
    // A reset clears the table's selection without selectionChanged.
    connect(mProxy, &QAbstractItemModel::modelReset, this, &ResultsPanel::updateCompareButton);
    connect(mProxy, &QAbstractItemModel::layoutChanged, this, &ResultsPanel::updateCompareButton);
}

void ResultsPanel::setNotes(const QStringList &lines)
{
    mNoteLines = lines;
    mNoteLines.removeAll(QString());
    mNotes->setToolTip(mNoteLines.join(QLatin1Char('\n')));
    showNotes();
}

void ResultsPanel::setNotesExpanded(bool expanded)
{
    mNotesExpanded = expanded;
    showNotes();
}

void ResultsPanel::showNotes()
{
    // Collapsed: the first note on one line and "+N more" (the results keep their room on a small
    // screen); expanded: every note, wrapped.
    if (mNoteLines.isEmpty()) {
        mNotes->clear();
        mNotes->hide();
        return;
    }
    mNotes->show();
    const QFontMetrics fm(mNotes->font());
    const int room = std::max(40, mNotes->width() - 16);
    const QString first = mNoteLines.front();
    const bool fits = mNoteLines.size() == 1 && fm.horizontalAdvance(first) <= room;
    if (mNotesExpanded || fits) {
        QStringList html;
        for (const QString &l : mNoteLines)
            html << l.toHtmlEscaped();
        mNotes->setWordWrap(true);
        mNotes->setText(html.join(QStringLiteral("<br>"))
                        + (fits ? QString() : QStringLiteral(" &nbsp;<a href=\"less\">%1</a>").arg(tr("less"))));
        return;
    }
    const QString more = mNoteLines.size() > 1 ? tr("+%1 more").arg(mNoteLines.size() - 1) : tr("more");
    const QString shown = fm.elidedText(first, Qt::ElideRight, room - fm.horizontalAdvance(more) - 24);
    mNotes->setWordWrap(false);
    mNotes->setText(shown.toHtmlEscaped() + QStringLiteral(" &nbsp;<a href=\"more\">%1</a>").arg(more));
}

void ResultsPanel::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    if (!mNotesExpanded)
        showNotes(); // the first note elided to the new width
}

QVector<quint32> ResultsPanel::selectedPlans() const
{
    QModelIndexList rows = mTable->selectionModel()->selectedRows();
    std::sort(rows.begin(), rows.end(), [](const QModelIndex &a, const QModelIndex &b) { return a.row() < b.row(); });
    QVector<quint32> ids;
    for (const QModelIndex &r : rows)
        ids << r.data(PlanTableModel::PlanIdRole).toUInt();
    return ids;
}

void ResultsPanel::updateCompareButton()
{
    const int n = int(mTable->selectionModel()->selectedRows().size());
    const bool on = n >= 2 && n <= PlanComparisonView::MaxPlans && !mStale && !mResults.isEmpty();
    mCompare->setEnabled(on);
    mCompare->setText(n >= 2 ? tr("Compare %1").arg(n) : tr("Compare"));
    emit compareAvailable(on);
}

bool ResultsPanel::compareSelected()
{
    const QVector<quint32> ids = selectedPlans();
    if (ids.size() < 2 || ids.size() > PlanComparisonView::MaxPlans || mStale || mResults.isEmpty())
        return false;
    QVector<ComparedPlan> plans;
    for (quint32 id : ids) {
        const int row = mModel->rowOfPlan(id);
        if (row < 0)
            return false;
        ComparedPlan p;
        p.rank = mModel->rankOfRow(row);
        p.point = mModel->plans().at(row);
        try {
            p.detail = mResults.detail(id);
        } catch (const std::exception &e) {
            emit statusMessage(tr("Cannot estimate plan: %1").arg(QString::fromUtf8(e.what())));
            return false;
        }
        plans << std::move(p);
    }
    if (!mCompareDialog) {
        auto *dialog = new QDialog(window());
        dialog->setObjectName(QStringLiteral("planComparison"));
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->setWindowTitle(tr("Compare Plans"));
        mComparison = new PlanComparisonView;
        auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
        QPushButton *copy = buttons->addButton(tr("Copy as CSV"), QDialogButtonBox::ActionRole);
        connect(copy, &QPushButton::clicked, this,
                [this] { QGuiApplication::clipboard()->setText(mComparison ? mComparison->csv() : QString()); });
        connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
        auto *layout = new QVBoxLayout(dialog);
        layout->addWidget(mComparison, 1);
        layout->addWidget(buttons);
        connect(dialog, &QObject::destroyed, this, [this] { mComparison = nullptr; });
        const QRect free = window()->screen() ? window()->screen()->availableGeometry() : QRect(0, 0, 1024, 700);
        dialog->resize(std::min(1180, free.width() - 40), std::min(940, free.height() - 40));
        mCompareDialog = dialog;
    }
    mComparison->setPlans(std::move(plans));
    mComparison->markStale(false);
    mCompareDialog->show();
    mCompareDialog->raise();
    mCompareDialog->activateWindow();
    return true;
}

PlanComparisonView *ResultsPanel::comparison() const
{
    return mCompareDialog ? mComparison : nullptr;
}

void ResultsPanel::connectSearchJob()
{
    connect(mJob, &SearchJob::started, this, [this] {
        mPredicting = false;
        mPhaseClock.start();
    });
    connect(mJob, &SearchJob::predicting, this, [this] {
        mPredicting = true;
        mPhaseClock.start();
    });
    connect(mJob, &SearchJob::progress, this, [this](quint64, qulonglong done, qulonglong total) {
        if (total == 0) {
            mProgress->setValue(0);
            mProgress->setFormat(mPredicting ? tr("predicting...") : tr("starting..."));
            return;
        }
        const double fraction = std::clamp(double(done) / double(total), 0.0, 1.0);
        mProgress->setValue(int(1000.0 * fraction));
        const QString n = QLocale(QLocale::English).toString(total);
        const bool learned = mProject && mProject->predictor;
        // Phase k of n: the search, then (with a learned predictor) the prediction.
        const QString phase = learned ? (mPredicting ? tr("2/2 predicting") : tr("1/2 searching")) : tr("searching");
        QString text = mPredicting ? tr("%1 %p% of %2").arg(phase, n) : tr("%1 %p% of %2 bases").arg(phase, n);
        const QString eta = etaText(fraction, mPhaseClock.isValid() ? mPhaseClock.elapsed() : 0);
        if (!eta.isEmpty())
            text += QStringLiteral(" \u00b7 ") + eta;
        mProgress->setFormat(text);
    });
    connect(mJob, &SearchJob::finished, this, &ResultsPanel::onFinished);
    connect(mJob, &SearchJob::cancelled, this, [this] {
        setSearching(false);
        mProgress->setFormat(tr("cancelled"));
        emit statusMessage(mStale ? tr("Search cancelled; the results shown are stale (of the settings before the "
                                       "last change).")
                                  : tr("Search cancelled; the previous results are still shown."));
    });
    connect(mJob, &SearchJob::failed, this, [this](quint64, const QString &message) {
        setSearching(false);
        mProgress->setFormat(tr("no search"));
        mCounts->setText(tr("<span style='color:#b00'>Cannot search: %1</span>").arg(message.toHtmlEscaped()));
        emit statusMessage(tr("Cannot search: %1").arg(message));
    });
}

ResultsPanel::~ResultsPanel() = default; // the jobs (children) cancel and wait for their workers

void ResultsPanel::setRequest(const memx::SearchRequest &request)
{
    mRequest = request;
}

void ResultsPanel::setProject(std::shared_ptr<const memx::SearchProject> project, const memx::Store *caches)
{
    mProject = std::move(project);
    mCacheSource = caches;
}

void ResultsPanel::scheduleSearch()
{
    setStale(true);
    mDebounce->start();
}

void ResultsPanel::setStale(bool on)
{
    on = on && !mResults.isEmpty(); // nothing shown: nothing stale
    mStale = on;
    mExport->setEnabled(!on && mDetail.id != 0);
    mCsv->setEnabled(!on && !mResults.isEmpty());
    updateCompareButton();
    if (on && comparison())
        comparison()->markStale(true);
    if (mResults.isEmpty())
        return;
    const QString counts = mResults.countsText().toHtmlEscaped();
    mCounts->setText(
        on ? tr("<span style='color:#b35900'><b>Stale:</b> these plans are of the settings before the last "
                "change (Run search, F5, to refresh).</span> %1")
                 .arg(counts)
           : counts);
}

void ResultsPanel::clearResults()
{
    mShowing = false; // a result being shown stays unshown
    mDebounce->stop();
    mJob->cancel();
    mResults.clear();
    mStale = false;
    mLastCluster.reset();
    if (mCompareDialog)
        mCompareDialog->close(); // its plans are of a cluster that is gone
    mSelection->select(0); // empties the bars, the stage diagram, the detail and Export
    showSelection(0);
    mModel->setPlans({});
    mPareto->setPoints({});
    mCounts->setText(tr("No results: add GPUs to the cluster to search plans."));
    mCounts->setToolTip(QString());
    setNotes({});
    mProgress->setValue(0);
    mProgress->setFormat(tr("idle"));
}

memx::PlannedSearchRequest ResultsPanel::currentRequest(memx::PlannedSearchOptions *options) const
{
    memx::PlannedSearchRequest request;
    request.search = mRequest;
    memx::PlannedSearchOptions spaceOptions;
    mSpace.applyTo(request, spaceOptions);
    if (options)
        *options = spaceOptions;
    if (mGlobalBatch->value() > 0)
        request.search.globalBatch = mGlobalBatch->value();
    request.search.space.overlapDataParallel = mOverlapDp->isChecked();
    if (mFsdp->isChecked())
        for (DpSharding d : {DpSharding::Gradients, DpSharding::Parameters}) {
            std::vector<DpSharding> &v = request.search.space.dpSharding;
            if (std::find(v.begin(), v.end(), d) == v.end())
                v.push_back(d);
        }
    request.search.space.fp8 = static_cast<Fp8Format>(mFp8->currentData().toInt());
    const int target = mTarget->currentIndex();
    request.autoTarget = target <= 0;
    if (target > 0)
        request.search.space.target = target == 1 ? memx::LaunchTarget::Megatron
            : target == 2                         ? memx::LaunchTarget::FlagScale
                                                  : memx::LaunchTarget::Any;
    return request;
}

void ResultsPanel::runSearch()
{
    mDebounce->stop();
    memx::PlannedSearchOptions options; // the Search Space dock's budget
    memx::PlannedSearchRequest request = currentRequest(&options);
    // What-if: the cluster of the last finished search stays a candidate (used when the new
    // cluster holds it, e.g. after adding a node); its subsets come back from the job's memo.
    // (The document's cluster, not the searched one: planSearch applies the project's calibration
    // to both.)
    if (mLastCluster && !(*mLastCluster == request.search.cluster))
        request.baseline = *mLastCluster;
    mRunningCluster = request.search.cluster;
    setStale(true);
    setSearching(true);
    // Planned on this thread (cheap: no enumeration), so the cache snapshot holds exactly the blobs
    // this search reads; the worker then never touches the project.
    memx::PlannedSearch planned;
    std::shared_ptr<memx::MemoryStore> caches;
    try {
        planned = memx::planSearch(std::move(request), mProject.get(), options);
        if (mCacheSource && planned.usesCache()) {
            caches = std::make_shared<memx::MemoryStore>();
            memx::copySearchCaches(*mCacheSource, planned, *caches);
        }
    } catch (const std::exception &e) {
        setSearching(false);
        mProgress->setFormat(tr("no search"));
        mCounts->setText(
            tr("<span style='color:#b00'>Cannot search: %1</span>").arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
        emit statusMessage(tr("Cannot search: %1").arg(QString::fromUtf8(e.what())));
        return;
    }
    emit spacePlanned(planned.narrowed.empty() ? QString() : QString::fromStdString(planned.narrowed.back()),
                      planned.options.maxBases);
    if (!planned.narrowed.empty())
        emit statusMessage(tr("Search space narrowed to %1 base configurations: %2")
                               .arg(QLocale(QLocale::English).toString(qulonglong(planned.options.maxBases)),
                                    QString::fromStdString(planned.narrowed.back())));
    mJob->start(std::move(planned), std::move(caches));
}

QString ResultsPanel::etaText(double fraction, qint64 elapsedMs)
{
    // Only once the rate is measurable: 5 % done and half a second spent.
    if (fraction < 0.05 || fraction >= 1.0 || elapsedMs < 500)
        return {};
    const double left = double(elapsedMs) * (1.0 - fraction) / fraction / 1000.0;
    if (left < 1.0)
        return tr("< 1 s left");
    if (left < 90.0)
        return tr("~%1 s left").arg(std::lround(left));
    return tr("~%1 min left").arg(std::lround(left / 60.0));
}

void ResultsPanel::setSpaceSettings(const SearchSpaceSettings &settings)
{
    mSpace = settings;
}

void ResultsPanel::cancelSearch()
{
    mDebounce->stop();
    mJob->cancel();
}

bool ResultsPanel::isSearching() const
{
    return mJob->isRunning() || mDebounce->isActive() || mPrepare->isRunning() || mShowing;
}

void ResultsPanel::setSearching(bool on)
{
    mCancel->setEnabled(on);
    if (on) {
        mProgress->setValue(0);
        mProgress->setFormat(tr("starting..."));
    }
}

quint32 ResultsPanel::selectedPlan() const
{
    return mSelection->current();
}

void ResultsPanel::onFinished()
{
    // Mapping the result to the views' values (a rank over every plan, the shown set, ~7,000 plan
    // summaries) also runs in a worker; this thread only applies it (tests/bench/bench_gui.cpp).
    mProgress->setFormat(tr("preparing the views..."));
    auto outcome = mJob->lastOutcome();
    mLastCluster = mRunningCluster; // only the newest job's result arrives
    if (outcome->caches && outcome->cacheUsed && !outcome->resultFromCache)
        emit searchCachesUpdated(outcome);
    outcome->caches.reset(); // merged (or unused): the project holds them now
    const ObjectiveWeights weights = mResults.weights();
    mPrepare->start([outcome, weights](JobControl &) {
        auto prepared = std::make_shared<Prepared>();
        prepared->weights = weights;
        prepared->results.setOutcome(outcome, weights);
        prepared->points = prepared->results.points();
        return prepared;
    });
}

void ResultsPanel::applyResults(quint64 preparedId, Prepared &prepared)
{
    if (!mJob->isRunning()) { // else a newer search runs: keep its progress
        setSearching(false);
        mProgress->setValue(mProgress->maximum());
        mProgress->setFormat(tr("done"));
    }
    const ObjectiveWeights current = mResults.weights(); // the sliders may have moved meanwhile
    mResults = std::move(prepared.results);
    QVector<PlanPoint> points = std::move(prepared.points);
    if (!(mResults.weights() == current)) {
        mResults.setWeights(current);
        points = mResults.points();
    }
    mStale = false;
    mShowing = true;
    if (comparison()) // its plans are of the previous result
        comparison()->markStale(true);
    mCounts->setText(mResults.countsText());
    mCounts->setToolTip(mResults.countsText());
    setNotes(mResults.notesText());
    mSelection->select(0);
    mModel->setPlans(points);
    resizeColumns();
    if (mResults.isEmpty()) {
        const auto &outcome = mResults.outcome();
        const QString why = outcome && outcome->advice ? QString::fromStdString(outcome->advice->text)
                                                       : tr("every configuration is out of memory or does not divide "
                                                            "the batch");
        mCounts->setText(tr("<span style='color:#b00'>No valid plan: %1.</span> %2")
                             .arg(why.toHtmlEscaped(), mResults.countsText().toHtmlEscaped()));
    }
    // The selection (memory bars, stage diagram: one estimatePlan) and then the chart each in a
    // later event-loop pass, so the UI thread is never busy with two of them at once. The 1 ms
    // timers (not 0 ms, which Qt posts as one more queued event processed in the same batch) let
    // input, paint and other timers run in between (tests/bench/bench_gui.cpp measures the gaps).
    // The prepare job's id is the generation: a newer result being prepared has a larger one.
    QTimer::singleShot(1, this, [this, preparedId, points = std::move(points)]() mutable {
        if (preparedId != mPrepare->currentJobId() || !mShowing)
            return; // a newer result is being prepared
        mSelection->select(mResults.topPlanId());
        QTimer::singleShot(1, this, [this, preparedId, points = std::move(points)] {
            if (preparedId != mPrepare->currentJobId() || !mShowing)
                return;
            mPareto->setPoints(points);
            mPareto->setSelectedPlan(mSelection->current());
            mShowing = false;
            emit resultsShown();
        });
    });
}

void ResultsPanel::resizeColumns()
{
    // Compact numeric columns so the plan summary (last, stretched) stays visible; the learned
    // predictor's spread and flag columns only for a learned result.
    const int digit = mTable->fontMetrics().horizontalAdvance(QLatin1Char('0'));
    const QFontMetrics header = mTable->horizontalHeader()->fontMetrics();
    const int digits[] = {5, 9, 9, 13, 6, 6, 7, 3, 10}; // Rank, T, spread, flags, M, B, score, Pareto, launcher
    static_assert(sizeof(digits) / sizeof(digits[0]) == PlanTableModel::PlanColumn);
    for (int c = 0; c < PlanTableModel::PlanColumn; ++c) {
        const QString title = mModel->headerData(c, Qt::Horizontal).toString();
        mTable->setColumnWidth(c, std::max(digits[c] * digit + 12, header.horizontalAdvance(title) + 26));
    }
    const bool learned = mResults.isLearned();
    for (int c = 0; c < PlanTableModel::ColumnCount; ++c) {
        const bool learnedOnly = c == PlanTableModel::SpreadColumn || c == PlanTableModel::FlagsColumn;
        mTable->setColumnHidden(c, mHiddenColumns.contains(c) || (learnedOnly && !learned));
    }
}

QMenu *ResultsPanel::createColumnMenu(QWidget *parent)
{
    auto *menu = new QMenu(parent);
    menu->setToolTipsVisible(true);
    for (int c = 0; c < PlanTableModel::PlanColumn; ++c) {
        QAction *a = menu->addAction(mModel->headerData(c, Qt::Horizontal).toString());
        a->setCheckable(true);
        a->setChecked(!mHiddenColumns.contains(c));
        a->setToolTip(mModel->headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString());
        connect(a, &QAction::toggled, this, [this, c](bool shown) { setColumnShown(c, shown); });
    }
    menu->addSeparator();
    connect(menu->addAction(tr("Show All Columns")), &QAction::triggered, this, [this] {
        mHiddenColumns.clear();
        resizeColumns();
    });
    return menu;
}

void ResultsPanel::setColumnShown(int column, bool shown)
{
    if (column < 0 || column >= PlanTableModel::PlanColumn)
        return; // the plan summary always shows
    if (shown)
        mHiddenColumns.remove(column);
    else
        mHiddenColumns.insert(column);
    resizeColumns();
}

void ResultsPanel::setWeights(const ObjectiveWeights &weights)
{
    if (weights == mResults.weights() && !mResults.isEmpty())
        return; // the sliders and the document both report one change
    const quint32 oldTop = mResults.topPlanId();
    if (mResults.isEmpty()) {
        mResults.setWeights(weights);
        return;
    }
    if (mResults.setWeights(weights)) {
        const quint32 keep = mSelection->current();
        mModel->setPlans(mResults.points());
        mPareto->setPoints(mResults.points(), ParetoChartView::KeepView);
        mSelection->select(0);
        mSelection->select(keep);
    } else {
        mModel->updateScores(mResults.scores());
        mChartRefresh->start(); // tooltips show scores: refresh the chart once the drag settles
    }
    if (mResults.topPlanId() != oldTop)
        mSelection->select(mResults.topPlanId());
}

void ResultsPanel::refreshChart()
{
    if (!mResults.isEmpty())
        mPareto->setPoints(mResults.points(), ParetoChartView::KeepView);
}

void ResultsPanel::showSelection(quint32 id)
{
    mPareto->setSelectedPlan(id);
    // Table: select the row without echoing back through currentRowChanged.
    const int row = mModel->rowOfPlan(id);
    if (row >= 0) {
        const QModelIndex proxyIndex = mProxy->mapFromSource(mModel->index(row, 0));
        if (proxyIndex.isValid() && mTable->currentIndex().row() != proxyIndex.row()) {
            QSignalBlocker block(mTable->selectionModel());
            mTable->selectionModel()->setCurrentIndex(proxyIndex,
                                                      QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
            mTable->viewport()->update();
        }
        if (proxyIndex.isValid())
            mTable->scrollTo(proxyIndex);
    } else {
        QSignalBlocker block(mTable->selectionModel());
        mTable->clearSelection();
    }
    try {
        mDetail = mResults.detail(id);
    } catch (const std::exception &e) {
        mDetail = PlanDetail();
        emit statusMessage(tr("Cannot estimate plan: %1").arg(QString::fromUtf8(e.what())));
    }
    mBars->setBars(mDetail.bars);
    mStages->setStages(mDetail.stages);
    mStages->setMinimumSize(mStages->sizeHint());
    mDetailText->setHtml(mDetail.html);
    if (mDetail.id != 0)
        mTimeline->setEstimate(mDetail.estimate, {}, mDetail.plan.virtualStages);
    else
        mTimeline->clear();
    mExport->setEnabled(mDetail.id != 0 && !mStale);
    mCsv->setEnabled(!mResults.isEmpty() && !mStale);
    if (mDetail.id != 0) {
        const int rank = row >= 0 ? mModel->rankOfRow(row) : 0;
        QString title
            = tr("<b>Rank %1</b> (plan #%2) &nbsp;%3")
                  .arg(rank)
                  .arg(PlanResults::indexOf(id)) // the core's number: exports say "search #<index>"
                  .arg(
                      QString::fromStdString(mDetail.plan.summary(mResults.outcome()->result.cluster)).toHtmlEscaped());
        if (!mDetail.learnedLine.isEmpty())
            title += QStringLiteral("<br>") + mDetail.learnedLine;
        mDetailTitle->setText(title);
    } else {
        mDetailTitle->setText(tr("<b>Plan detail</b>"));
    }
}

} // namespace memx::ui
