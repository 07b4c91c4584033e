#include "memx/ui/profilespanel.h"

#include "memx/export/export.h"
#include "memx/profile/importbatch.h"
#include "memx/profiling/augment.h"
#include "memx/profiling/megatronlog.h"
#include "memx/profiling/profileio.h"
#include "memx/profiling/sailorimporter.h"
#include "memx/search/search.h"
#include "memx/store/store.h"
#include "memx/testbed/testbedjobs.h"
#include "memx/testbed/virtualtestbed.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/profilingjobmodel.h"
#include "memx/util/diagnostic.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <atomic>
#include <climits>
#include <set>

namespace memx::ui {

// ---- MeasurementTableModel ----

void MeasurementTableModel::setData(const memx::Store &store)
{
    beginResetModel();
    mProfiles = store.profiles().profiles();
    mRuns = store.runs();
    endResetModel();
}

int MeasurementTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(mProfiles.size() + mRuns.size());
}

int MeasurementTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant MeasurementTableModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount)
        return {};
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole)
        return {};
    const size_t row = size_t(index.row());
    if (row < mProfiles.size()) {
        const memx::LayerProfile &p = mProfiles[row];
        switch (index.column()) {
        case KindColumn:
            return tr("profile");
        case GpuColumn:
            return QString::fromStdString(p.key.gpu);
        case ModelColumn:
            return QString::fromStdString(p.key.model);
        case TpColumn:
            return p.key.tp;
        case MicroBatchColumn:
            return p.key.microBatch;
        case DetailColumn:
            return tr("%1, %2 layers, seq %3")
                .arg(QString::fromLatin1(memx::toString(p.origin)))
                .arg(int(p.layers.size()) - 2)
                .arg(p.key.seqLength);
        case SourceColumn:
            return QString::fromStdString(p.source);
        }
        return {};
    }
    const memx::MeasuredRun &r = mRuns[row - mProfiles.size()];
    switch (index.column()) {
    case KindColumn:
        return tr("run");
    case GpuColumn: {
        std::set<std::string> devices;
        for (const memx::NodeGroup &g : r.cluster.groups)
            devices.insert(r.cluster.deviceOf(g).id);
        QStringList list;
        for (const std::string &d : devices)
            list << QString::fromStdString(d);
        return QStringLiteral("%1 x %2").arg(r.plan.totalGpus()).arg(list.join(QStringLiteral(", ")));
    }
    case ModelColumn:
        return QString::fromStdString(r.modelId);
    case TpColumn:
        return r.plan.stages.empty() || r.plan.stages.front().replicas.empty()
            ? QVariant()
            : r.plan.stages.front().replicas.front().tp;
    case MicroBatchColumn:
        return r.plan.stages.empty() || r.plan.stages.front().replicas.empty()
            ? QVariant()
            : r.plan.stages.front().replicas.front().microBatch;
    case DetailColumn:
        return r.peakMemoryBytes ? tr("%1 ms, peak %2 GiB (%3)")
                                       .arg(r.iterationTimeMs, 0, 'f', 1)
                                       .arg(*r.peakMemoryBytes / 1073741824.0, 0, 'f', 1)
                                       .arg(QString::fromLatin1(memx::toString(r.memoryKind)))
                                 : tr("%1 ms").arg(r.iterationTimeMs, 0, 'f', 1);
    case SourceColumn:
        return QString::fromStdString(r.id);
    }
    return {};
}

QVariant MeasurementTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount)
        return {};
    static const char *names[] = {"Kind", "GPU", "Model", "TP", "Micro-batch", "Detail", "Source"};
    return tr(names[section]);
}

// ---- ProfilesPanel ----

namespace {

QString diagnosticsText(const memx::LoadError &e, int maxLines = 20)
{
    QStringList lines;
    for (const memx::Diagnostic &d : e.diagnostics())
        lines << QString::fromStdString(d.toString());
    return lines.mid(0, maxLines).join(QLatin1Char('\n'));
}

memx::Cluster withoutPositions(memx::Cluster c)
{
    for (memx::NodeGroup &g : c.groups)
        g.x = g.y = 0;
    return c;
}

/// A read-only row table: no row numbers, compact rows, whole-row selection, no wrapping.
QTableView *compactTableView(QAbstractItemModel *model)
{
    auto *view = new QTableView;
    view->setModel(model);
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
    view->horizontalHeader()->setStretchLastSection(true);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setWordWrap(false);
    return view;
}

} // namespace

ProfilesPanel::ProfilesPanel(ClusterDocument *document, QWidget *parent)
    : QWidget(parent)
    , mDocument(document)
{
    mTask = new BackgroundJob<Finish>(this);
    mModel = new MeasurementTableModel(this);
    mView = compactTableView(mModel);
    mCoverage = new QTextBrowser;
    mCoverage->setOpenLinks(false);
    mSummary = new QLabel;
    mSummary->setWordWrap(true);
    mProgress = new QProgressBar;
    mProgress->setTextVisible(true);
    mCancel = new QToolButton;
    mCancel->setText(tr("Cancel"));
    mCancel->setToolTip(tr("Stop the running task; nothing is written into the project"));
    // Compact: the dock shares its width with the GPU catalogue (tabified).
    mImport = new QToolButton;
    mImport->setText(tr("Import"));
    mImport->setPopupMode(QToolButton::InstantPopup);
    mImport->setToolButtonStyle(Qt::ToolButtonTextOnly);
    mImport->setToolTip(tr("Import measurements into this project"));
    auto *importMenu = new QMenu(mImport);
    mSailor = importMenu->addAction(tr("Public dataset..."));
    mSailor->setToolTip(tr("Import the public Sailor measurements folder (per-layer profiles, measured runs, "
                           "network fits), e.g. ../shared/data/public/sailor"));
    mLog = importMenu->addAction(tr("Megatron log of the selected plan..."));
    mLog->setToolTip(tr("Import a Megatron-LM training log as a measured run of the plan selected in the results"));
    mFiles = importMenu->addAction(tr("CSV/JSON profiles..."));
    mFiles->setToolTip(tr("Import per-layer profiles from CSV or JSON files (docs/formats-profiles.md)"));
    importMenu->setToolTipsVisible(true);
    mImport->setMenu(importMenu);
    mPlanButton = new QPushButton(tr("Plan"));
    mPlanButton->setAutoDefault(false);
    mPlanButton->setToolTip(tr("Compute the minimal set of profiling jobs for this cluster and model: per GPU type "
                               "the (TP, micro-batch) per-layer profiles to measure, plus a few end-to-end runs, "
                               "with GPU-hours against profiling every configuration (memx profile plan)"));
    mWriteJobs = new QPushButton(tr("Write jobs..."));
    mWriteJobs->setToolTip(tr("Write the plan's job folders (Megatron-LM / FlagScale launch scripts, run.sh) and "
                              "manifest.json into a folder (memx profile plan --out)"));
    mTestbed = new QPushButton(tr("Run on testbed"));
    mTestbed->setToolTip(tr("Run the plan's jobs on the virtual testbed (a SIMULATED cluster, no GPUs) and import the "
                            "simulated profiles and runs into this project (memx profile run-simulated)"));

    auto *buttons = new QHBoxLayout;
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->addWidget(mImport);
    buttons->addWidget(mPlanButton);
    buttons->addWidget(mWriteJobs);
    buttons->addWidget(mTestbed);
    buttons->addStretch(1);
    auto *progressRow = new QHBoxLayout;
    progressRow->setContentsMargins(0, 0, 0, 0);
    progressRow->addWidget(mProgress, 1);
    progressRow->addWidget(mCancel);
    mProgressRow = new QWidget;
    mProgressRow->setLayout(progressRow);
    mProgressRow->setVisible(false);

    mJobModel = new ProfilingJobModel(this);
    mJobView = compactTableView(mJobModel);
    mPlanSummary = new QLabel;
    mPlanSummary->setWordWrap(true);
    mPlanSummary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *planBox = new QWidget;
    auto *planLayout = new QVBoxLayout(planBox);
    planLayout->setContentsMargins(0, 0, 0, 0);
    planLayout->addWidget(mPlanSummary);
    planLayout->addWidget(mJobView, 1);

    auto *split = new QSplitter(Qt::Vertical);
    split->addWidget(mCoverage);
    split->addWidget(planBox);
    split->addWidget(mView);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setStretchFactor(2, 2);
    split->setChildrenCollapsible(false);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(buttons);
    layout->addWidget(mProgressRow);
    layout->addWidget(mSummary);
    layout->addWidget(split, 1);

    connect(mSailor, &QAction::triggered, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Public Dataset Folder (sailor)"));
        if (!dir.isEmpty())
            importPublicDataset(dir);
    });
    connect(mFiles, &QAction::triggered, this, [this] {
        const QStringList files = QFileDialog::getOpenFileNames(this, tr("Import Profiles"), QString(),
                                                                tr("Profiles (*.csv *.json);;All files (*)"));
        if (!files.isEmpty())
            importProfileFiles(files);
    });
    connect(mLog, &QAction::triggered, this, [this] {
        const QString file = QFileDialog::getOpenFileName(this, tr("Import Megatron-LM Log"), QString(),
                                                          tr("Logs (*.log *.txt *.out);;All files (*)"));
        if (!file.isEmpty())
            importMegatronLog(file);
    });
    connect(mPlanButton, &QPushButton::clicked, this, &ProfilesPanel::planProfiling);
    connect(mTestbed, &QPushButton::clicked, this, [this] { runOnTestbed(1); });
    connect(mCancel, &QToolButton::clicked, this, &ProfilesPanel::cancel);
    connect(mWriteJobs, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for the Profiling Jobs"));
        if (dir.isEmpty())
            return;
        QString error;
        if (writeJobFiles(dir, false, &error))
            return;
        if (error.contains(QStringLiteral("the file exists"))
            && QMessageBox::question(this, tr("Overwrite Profiling Jobs"),
                                     tr("%1 already holds profiling job files. Overwrite them?").arg(dir))
                == QMessageBox::Yes
            && writeJobFiles(dir, true, &error))
            return;
        if (mInteractive && !error.contains(QStringLiteral("the file exists")))
            QMessageBox::warning(this, tr("Writing the jobs failed"), error);
    });
    auto warnUnlessCancelled = [this](bool ok, const QString &message) {
        if (mInteractive && !ok && !message.isEmpty() && message != tr("cancelled"))
            QMessageBox::warning(this, tr("Profiles"), message);
    };
    connect(this, &ProfilesPanel::importFinished, this, warnUnlessCancelled);
    connectTask();
    connect(this, &ProfilesPanel::profilingPlanFinished, this, warnUnlessCancelled);
    for (auto signal :
         {&ClusterDocument::projectDataChanged, &ClusterDocument::clusterReset, &ClusterDocument::modelChanged})
        connect(mDocument, signal, this, &ProfilesPanel::refresh);
    for (auto signal :
         {&ClusterDocument::nodeGroupAdded, &ClusterDocument::nodeGroupRemoved, &ClusterDocument::nodeGroupChanged})
        connect(mDocument, signal, this, &ProfilesPanel::refresh);
    for (auto signal :
         {&ClusterDocument::clusterReset, &ClusterDocument::modelChanged, &ClusterDocument::networkChanged})
        connect(mDocument, signal, this, &ProfilesPanel::checkPlanCurrent);
    for (auto signal :
         {&ClusterDocument::nodeGroupAdded, &ClusterDocument::nodeGroupRemoved, &ClusterDocument::nodeGroupChanged})
        connect(mDocument, signal, this, &ProfilesPanel::checkPlanCurrent);
    setCurrentPlan(std::nullopt);
    setBusy(false);
    refresh();
}

void ProfilesPanel::connectTask()
{
    connect(mTask, &BackgroundJobBase::phaseChanged, this, [this](quint64, int phase) { mTaskPhase = phase; });
    connect(mTask, &BackgroundJobBase::progress, this, [this](quint64, qulonglong done, qulonglong total) {
        mProgress->setFormat(mTaskPhase < mTaskPhases.size() ? mTaskPhases[mTaskPhase] : mTaskWhat);
        if (total > 0) {
            mProgress->setRange(0, int(std::min<qulonglong>(total, INT_MAX)));
            mProgress->setValue(int(std::min<qulonglong>(done, INT_MAX)));
        } else {
            mProgress->setRange(0, 0);
        }
    });
    // Whatever a cancelled task produced is dropped: nothing is written.
    connect(mTask, &BackgroundJobBase::cancelled, this, [this] { onTaskDone(false, tr("cancelled")); });
    connect(mTask, &BackgroundJobBase::failed, this,
            [this](quint64, const QString &message) { onTaskDone(false, message); });
    mTask->setFinishedHandler([this](quint64, Finish finish) {
        try {
            const QString message = finish();
            onTaskDone(true, message);
        } catch (const memx::LoadError &e) {
            onTaskDone(false, diagnosticsText(e));
        } catch (const std::exception &e) {
            onTaskDone(false, QString::fromUtf8(e.what()));
        }
    });
}

ProfilesPanel::~ProfilesPanel() = default; // mTask (a child) cancels and waits for its worker

void ProfilesPanel::setCurrentPlan(std::optional<memx::Plan> plan)
{
    mPlan = std::move(plan);
    mLog->setEnabled(mPlan.has_value() && !mTask->isRunning());
}

bool ProfilesPanel::isImporting() const
{
    return mTask->isRunning();
}

QString ProfilesPanel::coverageHtml() const
{
    return mCoverage->toHtml();
}

QString ProfilesPanel::planSummary() const
{
    return mJobModel->summaryText();
}

void ProfilesPanel::setBusy(bool busy)
{
    for (QPushButton *b : {mPlanButton, mTestbed})
        b->setEnabled(!busy);
    mSailor->setEnabled(!busy);
    mFiles->setEnabled(!busy);
    mLog->setEnabled(!busy && mPlan.has_value());
    mWriteJobs->setEnabled(!busy && mJobModel->hasPlan());
    mProgressRow->setVisible(busy);
    mCancel->setEnabled(busy);
}

void ProfilesPanel::cancel()
{
    mTask->cancel();
}

memx::MinimalSetOptions ProfilesPanel::planOptions() const
{
    return {}; // the search's default space, the model's global batch (as `memx profile plan` without options)
}

void ProfilesPanel::checkPlanCurrent()
{
    if (!mJobModel->hasPlan())
        return;
    if (withoutPositions(mDocument->cluster()) == mPlanCluster && mDocument->model() == mPlanModel)
        return;
    mJobModel->clear();
    mPlanSummary->setText(tr("The cluster or model changed: press Plan for a new profiling plan."));
    setBusy(mTask->isRunning());
    refresh();
}

void ProfilesPanel::showPlan(const memx::ProfilingPlan &plan, const memx::Cluster &cluster, const memx::Model &model)
{
    mPlanCluster = withoutPositions(cluster);
    mPlanModel = model;
    mJobModel->setPlan(plan, cluster);
    mJobView->resizeColumnsToContents();
    mPlanSummary->setText(tr("<b>Minimal-set profiling plan</b> for %1 on %2: %3")
                              .arg(QString::fromStdString(model.id).toHtmlEscaped(),
                                   QString::fromStdString(cluster.name).toHtmlEscaped(),
                                   mJobModel->summaryText().toHtmlEscaped()));
    checkPlanCurrent(); // the document may have changed while the plan was computed
    setBusy(mTask->isRunning());
    refresh();
}

void ProfilesPanel::refresh()
{
    const memx::MemoryStore &data = mDocument->projectData();
    mModel->setData(data);
    mView->resizeColumnsToContents();
    mSummary->setText(tr("%1 per-layer profiles, %2 measured runs, %3 network measurements in this project.")
                          .arg(mModel->profileCount())
                          .arg(mModel->runCount())
                          .arg(data.networkMeasurements().size()));

    const memx::Model &model = mDocument->model();
    QString html
        = tr("<b>Coverage for %1</b> (sequence %2) - which (TP, micro-batch) cells%3 are "
             "<span style='color:#2e7d32'>M measured</span>, <span style='color:#6a1b9a'>S simulated "
             "(virtual testbed)</span>, <span style='color:#1565c0'>I interpolated</span> or "
             "<span style='color:#888'>- estimated by the analytic model</span>:")
              .arg(QString::fromStdString(model.id).toHtmlEscaped())
              .arg(model.shape.seqLength)
              .arg(mJobModel->hasPlan() ? tr(" the search uses (as the profiling plan found them)")
                                        : tr(" (the search's default TP and micro-batch sizes and every profiled "
                                             "one; Plan shows exactly the ones the search uses)"));
    // With a profiling plan shown, the grid is exactly the kernels the search space uses.
    const memx::ProfileSet profiles = data.profiles();
    const std::vector<memx::KernelPoint> *needed = mJobModel->hasPlan() ? &mJobModel->plan().needed : nullptr;
    memx::CoverageQuery query;
    query.model = model.id;
    query.seqLength = model.shape.seqLength;
    query.cluster = &mDocument->cluster();
    query.needed = needed;
    using memx::CoverageStatus;
    for (const memx::DeviceCoverage &c : memx::profileCoverage(profiles, query)) {
        QString counts = tr("%1 measured").arg(c.count(CoverageStatus::Measured));
        if (c.count(CoverageStatus::Simulated) > 0)
            counts += tr(", %1 simulated").arg(c.count(CoverageStatus::Simulated));
        counts += tr(", %1 interpolated, %2 estimated")
                      .arg(c.count(CoverageStatus::Interpolated))
                      .arg(c.count(CoverageStatus::Missing));
        html += QStringLiteral("<p><b>%1</b>: %2<br>"
                               "<table cellspacing='0' cellpadding='2'><tr><td>TP \\ mbs</td>")
                    .arg(QString::fromStdString(c.device).toHtmlEscaped(), counts);
        for (int b : c.microBatches)
            html += QStringLiteral("<td align='center'>&nbsp;%1&nbsp;</td>").arg(b);
        html += QStringLiteral("</tr>");
        for (size_t t = 0; t < c.tps.size(); ++t) {
            html += QStringLiteral("<tr><td align='center'>%1</td>").arg(c.tps[t]);
            for (CoverageStatus status : c.cells[t]) {
                const char s = static_cast<char>(status);
                const char *colour = s == 'M' ? "#2e7d32" : s == 'S' ? "#6a1b9a" : s == 'I' ? "#1565c0" : "#888";
                html += QStringLiteral("<td align='center' style='color:%1'><b>%2</b></td>")
                            .arg(QLatin1String(colour), QChar(QLatin1Char(s)));
            }
            html += QStringLiteral("</tr>");
        }
        html += QStringLiteral("</table></p>");
    }
    if (profiles.empty())
        html += tr("<p style='color:#666'>No profiles yet: every time is the analytic cost model's estimate. Import "
                   "measurements (the public dataset covers OPT-350M, GPT-Neo 2.7B, OPT-30B and Llama-3 8B as "
                   "<i>sailor-*</i> models), or press <i>Plan</i> and <i>Run on virtual testbed</i> for simulated "
                   "ones, to replace estimates with per-layer times.</p>");
    mCoverage->setHtml(html);
}

void ProfilesPanel::runTask(TaskKind kind, const QString &what, const QStringList &phases, Work work)
{
    if (mTask->isRunning()) {
        const QString busy = tr("Another task is running (%1).").arg(mTaskWhat);
        if (kind == TaskKind::Plan)
            emit profilingPlanFinished(false, busy);
        else
            emit importFinished(false, busy);
        return;
    }
    mTaskKind = kind;
    mTaskWhat = what;
    mTaskPhases = phases;
    mTaskPhase = 0;
    setBusy(true);
    mProgress->setRange(0, 0);
    mProgress->setFormat(what);
    mTask->start(std::move(work));
}

void ProfilesPanel::onTaskDone(bool ok, const QString &message)
{
    setBusy(false);
    if (mTaskKind == TaskKind::Plan)
        emit profilingPlanFinished(ok, message);
    else
        emit importFinished(ok, message);
}

template<typename Parse> void ProfilesPanel::runImport(const QString &what, Parse parse)
{
    runTask(TaskKind::Import, what, {}, [this, parse, what](JobControl &control) -> Finish {
        auto batch = std::make_shared<const memx::ImportBatch>(parse(control.progress()));
        return [this, batch, what] {
            mDocument->importData(*batch);
            return tr("%1: %2 items imported").arg(what).arg(batch->itemCount());
        };
    });
}

void ProfilesPanel::importPublicDataset(const QString &dir)
{
    const std::string path = dir.toStdString();
    runImport(tr("Importing %1").arg(QFileInfo(dir).fileName()),
              [path](const memx::ProgressFn &progress) { return memx::importSailor(path, progress); });
}

void ProfilesPanel::importProfileFiles(const QStringList &files)
{
    std::vector<std::string> paths;
    for (const QString &f : files)
        paths.push_back(f.toStdString());
    runImport(tr("Importing %n profile file(s)", nullptr, int(files.size())),
              [paths](const memx::ProgressFn &progress) {
                  memx::ImportBatch batch;
                  for (size_t i = 0; i < paths.size(); ++i) {
                      for (memx::LayerProfile &p : memx::loadProfileFile(paths[i]))
                          batch.profiles.push_back(std::move(p));
                      memx::reportOrThrow(progress, i + 1, paths.size());
                  }
                  return batch;
              });
}

bool ProfilesPanel::importMegatronLog(const QString &file)
{
    if (!mPlan) {
        emit importFinished(false, tr("Select the plan the log ran in the results first."));
        return false;
    }
    try {
        memx::ImportBatch batch;
        batch.runs.push_back(
            memx::importMegatronLog(file.toStdString(), *mPlan, mDocument->cluster(), mDocument->model()));
        mDocument->importData(batch);
    } catch (const memx::LoadError &e) {
        emit importFinished(false, diagnosticsText(e, 1000));
        return false;
    } catch (const std::exception &e) {
        emit importFinished(false, QString::fromUtf8(e.what()));
        return false;
    }
    emit importFinished(true, tr("Imported %1").arg(QFileInfo(file).fileName()));
    return true;
}

void ProfilesPanel::planProfiling()
{
    const memx::Cluster cluster = mDocument->cluster();
    const memx::Model model = mDocument->model();
    const memx::MinimalSetOptions options = planOptions();
    runTask(TaskKind::Plan, tr("Planning the profiling jobs"), {tr("Planning: enumerating the search space %p%")},
            [this, cluster, model, options](JobControl &control) -> Finish {
                auto plan = std::make_shared<const memx::ProfilingPlan>(
                    memx::planMinimalSet(cluster, model, options, control.progress()));
                return [this, cluster, model, plan] {
                    showPlan(*plan, cluster, model);
                    return tr("Profiling plan: %1").arg(mJobModel->summaryText());
                };
            });
}

bool ProfilesPanel::writeJobFiles(const QString &dir, bool overwrite, QString *error)
{
    auto fail = [error](const QString &message) {
        if (error)
            *error = message;
        return false;
    };
    if (!mJobModel->hasPlan())
        return fail(tr("No profiling plan for this cluster and model: press Plan first."));
    memx::ProfilingPlan plan = mJobModel->plan(); // profilingJobFiles fills in the jobs' scripts and logs
    try {
        const std::vector<memx::ExportFile> files = memx::profilingJobFiles(plan, mJobModel->cluster(), mPlanModel);
        const std::vector<std::string> written = memx::writeExportFiles(files, dir.toStdString(), overwrite);
        emit importFinished(true, tr("Wrote %1 files into %2 (manifest.json)").arg(written.size()).arg(dir));
    } catch (const memx::LoadError &e) {
        return fail(diagnosticsText(e));
    } catch (const std::exception &e) {
        return fail(QString::fromUtf8(e.what()));
    }
    return true;
}

void ProfilesPanel::runOnTestbed(quint64 seed)
{
    checkPlanCurrent();
    std::optional<memx::ProfilingPlan> known;
    if (mJobModel->hasPlan())
        known = mJobModel->plan();
    const memx::Cluster cluster = known ? mJobModel->cluster() : mDocument->cluster();
    const memx::Model model = known ? mPlanModel : mDocument->model();
    const memx::MinimalSetOptions options = planOptions();
    runTask(TaskKind::Testbed, tr("Virtual testbed"),
            {tr("Planning: enumerating the search space %p%"), tr("Running jobs on the virtual testbed %v/%m")},
            [this, cluster, model, options, known, seed](JobControl &control) -> Finish {
                std::optional<memx::ProfilingPlan> planned; // planned in this task (none was shown)
                if (!known)
                    planned = memx::planMinimalSet(cluster, model, options, control.progress());
                const memx::ProfilingPlan &plan = known ? *known : *planned;
                control.setPhase(1);
                // The core's job loop, as `memx profile run-simulated --jobs` runs it.
                const memx::VirtualTestbed testbed(seed);
                auto out = std::make_shared<const memx::TestbedBatch>(
                    memx::runTestbedJobs(testbed, cluster, model, plan.jobs, {}, {}, control.progress()));
                auto plannedHere = std::make_shared<const std::optional<memx::ProfilingPlan>>(std::move(planned));
                const QString source = QString::fromStdString(testbed.sourceLabel());
                return [this, cluster, model, out, plannedHere, source] {
                    if (*plannedHere)
                        showPlan(**plannedHere, cluster, model);
                    mDocument->importData(out->batch);
                    QString message = tr("SIMULATED on the virtual testbed (%1): %2 profiles and %3 runs imported")
                                          .arg(source)
                                          .arg(out->batch.profiles.size())
                                          .arg(out->batch.runs.size());
                    if (out->failed() > 0)
                        message += tr("; %n run(s) failed (out of memory, not stored)", nullptr, int(out->failed()));
                    return message;
                };
            });
}

} // namespace memx::ui
