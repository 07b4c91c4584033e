#include "memx/ui/mainwindow.h"

#include "memx/cost/costjson.h"
#include "memx/io/formats.h"
#include "memx/ui/clustercanvas.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/clustersummary.h"
#include "memx/ui/comparedialog.h"
#include "memx/ui/exportdialog.h"
#include "memx/ui/gpucataloguemodel.h"
#include "memx/ui/gpudefinitiondialog.h"
#include "memx/ui/gpupalette.h"
#include "memx/ui/modelpanel.h"
#include "memx/ui/nodegroupitem.h"
#include "memx/ui/nodepropertypanel.h"
#include "memx/ui/plancomparison.h"
#include "memx/ui/planselection.h"
#include "memx/ui/plantablemodel.h"
#include "memx/ui/profilespanel.h"
#include "memx/ui/resultspanel.h"
#include "memx/ui/searchjob.h"
#include "memx/ui/searchspacepanel.h"
#include "memx/ui/weightsliders.h"
#include "memx/util/diagnostic.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QSaveFile>
#include <QScreen>
#include <QScrollArea>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <QUndoView>
#include <QVBoxLayout>

#include <iterator>

// The icon lives in this static library's resources: a static library's resource initialiser is
// only linked in when referenced (Q_INIT_RESOURCE must run outside a namespace).
static void initMemxResources()
{
    Q_INIT_RESOURCE(memx);
}

namespace memx::ui {

namespace {
QStringList gSampleDirs;

/// The platform's key bindings of `key` followed by `extra` (those it lacks): a desktop without a
/// platform theme (e.g. openbox) binds nothing to QKeySequence::SaveAs and only Ctrl+Shift+Z to
/// Redo, where users press Ctrl+Shift+S and Ctrl+Y.
QList<QKeySequence> standardShortcuts(QKeySequence::StandardKey key, std::initializer_list<QKeySequence> extra)
{
    QList<QKeySequence> keys = QKeySequence::keyBindings(key);
    for (const QKeySequence &k : extra)
        if (!keys.contains(k))
            keys << k;
    return keys;
}

QDockWidget *makeDock(const QString &title, const QString &objectName, QWidget *contents, QWidget *parent)
{
    auto *dock = new QDockWidget(title, parent);
    dock->setObjectName(objectName);
    dock->setWidget(contents);
    return dock;
}

QWidget *scrollable(QWidget *w)
{
    auto *area = new QScrollArea;
    area->setWidget(w);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    // Narrower than the panel's minimum (a 1024 px screen): scrolls rather than widening the window.
    area->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    return area;
}
} // namespace

MainWindow::MainWindow(bool rememberLayout, QWidget *parent)
    : QMainWindow(parent)
    , mRememberLayout(rememberLayout)
{
    initMemxResources();
    setWindowIcon(QIcon(QStringLiteral(":/memx/icons/memx.svg")));
    mDocument = new ClusterDocument(this);
    mTrain = new BackgroundJob<std::shared_ptr<memx::TrainOutcome>>(this);
    createCentre();
    const Docks docks = createDocks();
    createMenus();
    createTrainingUi();
    for (QDockWidget *d :
         {docks.palette, docks.profiles, docks.weights, docks.properties, docks.model, docks.space, docks.history})
        mViewMenu->addAction(d->toggleViewAction());
    connectDocument(docks);
    connectResults();
    startUntitled();
    // 1480 x 900, or the screen's free area when smaller (a 1024 x 700 laptop screen).
    const QSize preferred(1480, 900);
    resize(screen() ? preferred.boundedTo(screen()->availableGeometry().size()) : preferred);
    const bool narrow = width() < 1200;
    if (narrow) {
        // A 1024 px screen has room for one dock column: the GPU Catalogue and Profiles join the
        // right one as tabs (two columns left the centre ~630 px and the catalogue ~130 px, every
        // GPU name elided). A saved layout (restoreState below) still wins.
        for (QDockWidget *d : {docks.palette, docks.profiles}) {
            addDockWidget(Qt::RightDockWidgetArea, d);
            tabifyDockWidget(docks.history, d);
        }
        docks.palette->raise();
    }
    resizeDocks({docks.palette, docks.properties}, {270, narrow ? 270 : 290}, Qt::Horizontal);
    resizeDocks({docks.weights, docks.properties}, {140, 600}, Qt::Vertical);
    // Dock tabs keep their full titles ("Search Space", not "Search Sp..."): the tab bar scrolls.
    for (QTabBar *tabs : findChildren<QTabBar *>(Qt::FindDirectChildrenOnly)) {
        tabs->setElideMode(Qt::ElideNone);
        tabs->setUsesScrollButtons(true);
    }
    if (mRememberLayout) {
        restoreGeometry(mSettings.windowGeometry());
        restoreState(mSettings.windowState());
        for (const QString &gpus : mSettings.gpuFiles()) {
            QString error;
            if (!loadGpuFile(gpus, &error)) { // moved or broken since: not loaded again
                mSettings.removeGpuFile(gpus);
                qWarning("%s", qPrintable(error));
            }
        }
    }
    statusBar()->showMessage(
        tr("Drag GPUs from the catalogue onto the canvas; Shift-drag between nodes to connect them."));
}

/// Centre: summary header + canvas above the results.
void MainWindow::createCentre()
{
    mCanvas = new ClusterCanvas(mDocument);
    mSummary = new QLabel;
    mSummary->setTextFormat(Qt::RichText);
    mSummary->setWordWrap(true);
    mSummary->setContentsMargins(8, 4, 8, 4);
    mSummary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *top = new QWidget;
    auto *topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->setSpacing(0);
    topLayout->addWidget(mSummary);
    topLayout->addWidget(mCanvas, 1);
    top->setMinimumHeight(120);

    mResults = new ResultsPanel;
    auto *split = new QSplitter(Qt::Vertical);
    split->setObjectName(QStringLiteral("centralSplitter"));
    split->addWidget(top);
    split->addWidget(mResults);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    split->setChildrenCollapsible(false);
    split->setSizes({250, 650});
    setCentralWidget(split);
}

MainWindow::Docks MainWindow::createDocks()
{
    mPalette = new GpuPalette;
    mProperties = new NodePropertyPanel(mDocument);
    mModelPanel = new ModelPanel(mDocument);
    mProfiles = new ProfilesPanel(mDocument);
    mWeights = new WeightSliders;
    mSpace = new SearchSpacePanel;
    // The weights live in the document; slider edits are its undo steps (Edit > Undo "Change
    // objective weights"); one slider drag merges into one step (ChangeWeightsCommand::mergeWith).
    mWeights->setDocument(mDocument);
    Docks d;
    d.palette = makeDock(tr("GPU Catalogue"), QStringLiteral("paletteDock"), mPalette, this);
    d.profiles = makeDock(tr("Profiles"), QStringLiteral("profilesDock"), scrollable(mProfiles), this);
    d.weights = makeDock(tr("Objective"), QStringLiteral("weightsDock"), mWeights, this);
    d.properties = makeDock(tr("Properties"), QStringLiteral("propertiesDock"), scrollable(mProperties), this);
    d.model = makeDock(tr("Model"), QStringLiteral("modelDock"), scrollable(mModelPanel), this);
    d.history = makeDock(tr("History"), QStringLiteral("historyDock"), new QUndoView(mDocument->undoStack()), this);
    d.space = makeDock(tr("Search Space"), QStringLiteral("searchSpaceDock"), scrollable(mSpace), this);
    addDockWidget(Qt::LeftDockWidgetArea, d.palette);
    addDockWidget(Qt::LeftDockWidgetArea, d.profiles);
    tabifyDockWidget(d.palette, d.profiles);
    d.palette->raise();
    addDockWidget(Qt::RightDockWidgetArea, d.weights);
    addDockWidget(Qt::RightDockWidgetArea, d.properties);
    addDockWidget(Qt::RightDockWidgetArea, d.model);
    addDockWidget(Qt::RightDockWidgetArea, d.history);
    addDockWidget(Qt::RightDockWidgetArea, d.space);
    tabifyDockWidget(d.properties, d.model);
    tabifyDockWidget(d.model, d.space);
    tabifyDockWidget(d.space, d.history);
    d.properties->raise();
    return d;
}

/// The canvas, the palette and the document: selection, edits, title, summary, re-search.
void MainWindow::connectDocument(const Docks &docks)
{
    connect(mCanvas, &ClusterCanvas::selectionChanged, this, [this, propertiesDock = docks.properties] {
        mProperties->setSelection(mCanvas->selectedGroups(), mCanvas->selectedLinks());
        if (!mCanvas->selectedGroups().isEmpty() || !mCanvas->selectedLinks().isEmpty())
            propertiesDock->raise();
    });
    connect(mCanvas, &ClusterCanvas::message, this, [this](const QString &m) { statusBar()->showMessage(m, 6000); });
    connect(mPalette, &GpuPalette::gpuActivated, this, &MainWindow::addGpuAtFreeSpot);
    connect(mPalette, &GpuPalette::loadRequested, this, &MainWindow::loadGpuFileInteractive);
    connect(mPalette, &GpuPalette::newRequested, this, &MainWindow::defineGpuInteractive);
    // The open cluster's own device definitions are in the palette too (drag more of them).
    connect(mDocument, &ClusterDocument::clusterReset, this, [this] {
        std::vector<memx::GpuSpec> own;
        for (const memx::GpuSpec &d : mDocument->cluster().devices)
            if (d.custom && !mDocument->knownDevice(d.id))
                own.push_back(d);
        // A label, not a path: the palette offers to remove devices of GPU files only.
        const QString origin
            = mDocument->filePath().isEmpty() ? tr("this cluster") : QFileInfo(mDocument->filePath()).fileName();
        try {
            if (!own.empty())
                mDocument->addKnownDevices(own, origin);
        } catch (const std::exception &e) { // an id or alias of a loaded GPU file's device
            statusBar()->showMessage(tr("The cluster's own GPUs are not in the palette: %1").arg(e.what()), 10000);
        }
    });
    const auto showKnownDevices
        = [this] { mPalette->model()->setCustomDevices(mDocument->knownDevices(), mDocument->knownDeviceOrigins()); };
    connect(mDocument, &ClusterDocument::knownDevicesAdded, this, showKnownDevices);
    connect(mDocument, &ClusterDocument::knownDevicesRemoved, this, showKnownDevices);
    connect(mPalette, &GpuPalette::removeRequested, this, &MainWindow::removeGpuFileInteractive);
    // The project's search context first: the search it schedules must see the new data.
    connect(mDocument, &ClusterDocument::projectDataChanged, this, &MainWindow::onProjectDataChanged);
    for (auto signal : {&ClusterDocument::clusterReset, &ClusterDocument::networkChanged,
                        &ClusterDocument::modelChanged, &ClusterDocument::projectDataChanged}) {
        connect(mDocument, signal, this, &MainWindow::updateSummary);
        connect(mDocument, signal, this, &MainWindow::onDocumentChanged);
    }
    // A finished search's updated caches (prediction cache, stored result) go back into the project.
    connect(mResults, &ResultsPanel::searchCachesUpdated, this,
            [this](const std::shared_ptr<const SearchOutcome> &outcome) {
                // A stale search's caches are harmless: their keys hold its profiles and predictor.
                if (outcome->caches)
                    mDocument->storeSearchCaches(*outcome->caches);
            });
    for (auto signal :
         {&ClusterDocument::nodeGroupAdded, &ClusterDocument::nodeGroupRemoved, &ClusterDocument::nodeGroupChanged}) {
        connect(mDocument, signal, this, &MainWindow::updateSummary);
        connect(mDocument, signal, this, &MainWindow::onDocumentChanged);
    }
    connect(mDocument, &ClusterDocument::modifiedChanged, this, &MainWindow::updateTitle);
    connect(mDocument, &ClusterDocument::filePathChanged, this, &MainWindow::updateTitle);
    connect(mDocument, &ClusterDocument::clusterReset, this, &MainWindow::updateTitle);
    connect(mDocument, &ClusterDocument::modelChanged, this, [this] {
        if (mRememberLayout)
            mSettings.setLastModelId(QString::fromStdString(mDocument->model().id));
    });
}

/// Results: weights re-rank the cached metrics; the selection feeds the profiles panel (a
/// Megatron log is imported as a run of the selected plan).
void MainWindow::connectResults()
{
    // The sliders re-rank live during a drag; the document's weights (undo/redo, a project's
    // weights on open) re-rank too. Both land on ResultsPanel::setWeights, a no-op when unchanged.
    connect(mWeights, &WeightSliders::weightsChanged, mResults, &ResultsPanel::setWeights);
    connect(mDocument, &ClusterDocument::objectiveWeightsChanged, mResults, &ResultsPanel::setWeights);
    connect(mWeights, &WeightSliders::weightsEditFinished, this, [this](const memx::ObjectiveWeights &w) {
        if (mRememberLayout)
            mSettings.setLastWeights(w);
    });
    connect(mResults->selection(), &PlanSelection::changed, this, [this](quint32 id) {
        mProfiles->setCurrentPlan(id ? std::optional<memx::Plan>(mResults->selectedDetail().plan) : std::nullopt);
    });
    connect(mResults, &ResultsPanel::exportRequested, this, &MainWindow::exportSelectedPlan);
    // Search-space edits re-search (the results go stale until then), with the same budget rules as the CLI.
    connect(mSpace, &SearchSpacePanel::changed, this, [this] {
        mResults->setSpaceSettings(mSpace->settings());
        if (!mDocument->cluster().groups.empty())
            mResults->scheduleSearch();
    });
    connect(mResults, &ResultsPanel::spacePlanned, mSpace, &SearchSpacePanel::setLastNarrowing);
    connect(mResults, &ResultsPanel::statusMessage, this,
            [this](const QString &m) { statusBar()->showMessage(m, 8000); });
    connect(mResults->job(), &SearchJob::started, this,
            [this] { statusBar()->showMessage(tr("Searching plans in the background..."), 4000); });
    connect(mResults, &ResultsPanel::resultsShown, this, [this] {
        const auto &r = mResults->results();
        statusBar()->showMessage(r.isEmpty() ? tr("No valid plan for this cluster and model.")
                                             : tr("Search finished: %1").arg(r.countsText()),
                                 8000);
    });
    connect(mProfiles, &ProfilesPanel::importFinished, this, [this](bool ok, const QString &message) {
        if (ok)
            statusBar()->showMessage(message, 8000);
    });
}

/// The weights (the documented default or the last ones), an empty cluster and the last model;
/// main() opens a file next.
void MainWindow::startUntitled()
{
    // The documented default (1, 0.5, 0.5), or the last weights the user chose.
    const memx::ObjectiveWeights weights = mRememberLayout ? mSettings.lastWeights() : memx::ObjectiveWeights {};
    mDocument->setObjectiveWeights(weights); // the sliders follow the document
    mResults->setWeights(weights);

    // Start with an empty cluster and the last model; main() opens a file next.
    memx::Model model = memx::resolveModel("llama2-7b");
    if (mRememberLayout) {
        try {
            model = memx::resolveModel(mSettings.lastModelId().toStdString());
        } catch (const std::exception &) {
            // a preset that no longer exists: keep llama2-7b
        }
    }
    memx::Cluster untitled;
    untitled.name = "Untitled cluster";
    untitled.network.interNode = {25, 5, {}};
    mDocument->reset(untitled, model);
}

MainWindow::~MainWindow()
{
    // The views observe the document (a child created first): destroy them while it still exists.
    mCanvas->disconnect(this);
    mResults->disconnect(this);
    delete takeCentralWidget();
    qDeleteAll(findChildren<QDockWidget *>(QString(), Qt::FindDirectChildrenOnly));
}

void MainWindow::createTrainingUi()
{
    mTrainProgress = new QProgressBar;
    mTrainProgress->setRange(0, 1000);
    mTrainProgress->setFixedWidth(200);
    mTrainProgress->setTextVisible(true);
    mTrainCancel = new QToolButton;
    mTrainCancel->setText(tr("Cancel"));
    mTrainCancel->setToolTip(tr("Stop training; the project keeps its current predictor"));
    statusBar()->addPermanentWidget(mTrainProgress);
    statusBar()->addPermanentWidget(mTrainCancel);
    setTrainingUi(false);
    connect(mTrainCancel, &QToolButton::clicked, this, &MainWindow::cancelTraining);
    connect(mTrain, &BackgroundJobBase::progress, this, [this](quint64, qulonglong done, qulonglong total) {
        mTrainProgress->setValue(total ? int(1000.0 * double(done) / double(total)) : 0);
    });
    mTrain->setFinishedHandler([this](quint64, std::shared_ptr<memx::TrainOutcome> outcome) {
        setTrainingUi(false);
        mDocument->storePredictor(outcome->predictor, outcome->metrics); // re-searches with it
        QString message
            = tr("Trained %1 on %n measured run(s)", nullptr, int(outcome->predictor.trainingRunIds().size()))
                  .arg(QString::fromStdString(outcome->predictor.describe()));
        if (outcome->crossValidation)
            message += tr("; %1-fold time MAPE %2 % (analytic %3 %), memory MAPE %4 % (analytic %5 %)")
                           .arg(outcome->crossValidation->folds)
                           .arg(outcome->crossValidation->learned.all.timeMapePct, 0, 'f', 1)
                           .arg(outcome->crossValidation->analytic.all.timeMapePct, 0, 'f', 1)
                           .arg(outcome->crossValidation->learned.all.memMapePct, 0, 'f', 1)
                           .arg(outcome->crossValidation->analytic.all.memMapePct, 0, 'f', 1);
        statusBar()->showMessage(message, 12000);
        emit trainingFinished(true, message);
    });
    connect(mTrain, &BackgroundJobBase::cancelled, this, [this] {
        setTrainingUi(false);
        statusBar()->showMessage(tr("Training cancelled; the project keeps its predictor."), 6000);
        emit trainingFinished(false, tr("cancelled"));
    });
    connect(mTrain, &BackgroundJobBase::failed, this, [this](quint64, const QString &message) {
        setTrainingUi(false);
        showError(tr("Cannot train the predictor"), message);
        emit trainingFinished(false, message);
    });
}

void MainWindow::onProjectDataChanged()
{
    mProjectChanged = true;
    try {
        mSearchProject = std::make_shared<const memx::SearchProject>(memx::loadSearchProject(mDocument->projectData()));
    } catch (const std::exception &e) {
        // A predictor or calibration this version cannot read: search with the profiles alone.
        auto project = std::make_shared<memx::SearchProject>();
        project->profiles = mDocument->projectData().profiles();
        mSearchProject = project;
        statusBar()->showMessage(tr("Searching without the project's predictor: %1").arg(QString::fromUtf8(e.what())),
                                 10000);
    }
    mResults->setProject(mSearchProject, &mDocument->projectData());
    updateTrainAction();
}

void MainWindow::onDocumentChanged()
{
    // Positions on the canvas do not change plans: only search when something that matters did.
    memx::Cluster cluster = mDocument->cluster();
    for (memx::NodeGroup &g : cluster.groups)
        g.x = g.y = 0;
    if (cluster == mSearchedCluster && mDocument->model() == mSearchedModel && !mProjectChanged)
        return;
    mSearchedCluster = cluster;
    mSearchedModel = mDocument->model();
    mProjectChanged = false;
    if (cluster.groups.empty()) {
        mResults->clearResults();
        return;
    }
    memx::SearchRequest request;
    request.cluster = mDocument->cluster();
    request.model = mDocument->model();
    mResults->setRequest(request);
    mResults->scheduleSearch();
}

void MainWindow::updateTrainAction()
{
    const size_t runs = mDocument->projectData().runs().size();
    mTrainAction->setEnabled(runs >= 2 && !mTrain->isRunning());
    mTrainAction->setToolTip(runs >= 2 ? tr("Train the learned predictor on the project's %1 measured runs").arg(runs)
                                       : tr("Needs at least 2 measured runs in the project (import or run them on "
                                            "the virtual testbed in the Profiles dock)"));
}

void MainWindow::setTrainingUi(bool running)
{
    mTrainProgress->setVisible(running);
    mTrainCancel->setVisible(running);
    mTrainProgress->setValue(0);
    mTrainProgress->setFormat(tr("Training %p%"));
    mCancelTrainAction->setEnabled(running);
    updateTrainAction();
}

void MainWindow::trainPredictor()
{
    if (mTrain->isRunning())
        return;
    // What `memx train` reads of the project, copied: the worker never touches the document.
    auto snapshot = std::make_shared<const memx::MemoryStore>(memx::trainingSnapshot(mDocument->projectData()));
    mTrain->start([snapshot](JobControl &control) {
        return std::make_shared<memx::TrainOutcome>(
            memx::trainProjectPredictor(*snapshot, memx::TrainOptions {}, control.progress()));
    });
    setTrainingUi(true);
    statusBar()->showMessage(tr("Training the learned predictor in the background..."), 4000);
}

void MainWindow::cancelTraining()
{
    mTrain->cancel();
}

void MainWindow::compareWithBaselines()
{
    auto *dialog = new CompareDialog(mResults->currentRequest(), mResults->weights(), mSearchProject, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    mCompareDialog = dialog;
    dialog->show();
    dialog->run();
}

void MainWindow::exportSelectedPlan()
{
    const PlanDetail &d = mResults->selectedDetail();
    if (d.id == 0)
        return;
    if (mResults->isStale()) {
        statusBar()->showMessage(tr("The plans shown are stale: wait for the new search (or Run search, F5) before "
                                    "exporting."),
                                 8000);
        return;
    }
    const auto outcome = mResults->results().outcome();
    ExportDialog dialog(d.plan, outcome->result.cluster, outcome->result.model, memx::toJson(d.estimate), this);
    // The format and folder of the last export (this window's, else the settings'), even after a Cancel.
    if (!mExportFormat && mRememberLayout)
        mExportFormat = memx::parseExportFormat(mSettings.lastExportFormat().toStdString());
    if (mExportDir.isEmpty() && mRememberLayout)
        mExportDir = mSettings.lastExportDir();
    if (mExportFormat)
        dialog.setFormat(*mExportFormat);
    if (!mExportDir.isEmpty())
        dialog.setOutputDir(mExportDir);
    const int code = dialog.exec();
    mExportFormat = dialog.format();
    mExportDir = dialog.outputDir();
    if (mRememberLayout) {
        mSettings.setLastExportFormat(QString::fromLatin1(memx::toString(*mExportFormat)));
        mSettings.setLastExportDir(mExportDir);
    }
    if (code == QDialog::Accepted)
        statusBar()->showMessage(tr("Exported %n file(s) to %1", nullptr, int(dialog.writtenPaths().size()))
                                     .arg(QDir::toNativeSeparators(dialog.outputDir())),
                                 8000);
}

void MainWindow::createMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *newAct = file->addAction(tr("&New"), QKeySequence::New, this, &MainWindow::newDocument);
    QAction *openAct = file->addAction(tr("&Open..."), QKeySequence::Open, this, &MainWindow::openDialog);
    mSampleMenu = file->addMenu(tr("Open &Sample Cluster"));
    mRecentMenu = file->addMenu(tr("Open &Recent"));
    file->addSeparator();
    QAction *saveAct = file->addAction(tr("&Save"), QKeySequence::Save, this, &MainWindow::save);
    file->addAction(tr("Save &As..."), this, &MainWindow::saveAs)
        ->setShortcuts(standardShortcuts(QKeySequence::SaveAs, {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S)}));
    file->addSeparator();
    file->addAction(tr("&Import Cluster JSON..."), this, &MainWindow::importCluster);
    file->addAction(tr("Load &GPU Definitions..."), this, &MainWindow::loadGpuFileInteractive)
        ->setToolTip(tr("Add GPUs the catalogue lacks (B200, GB200, MI355X, your own) from a memx.catalogue/1 file"));
    file->addAction(tr("New G&PU..."), this, &MainWindow::defineGpuInteractive)
        ->setToolTip(tr("Define a GPU the catalogue lacks, starting from a similar one"));
    file->addAction(tr("&Export Cluster JSON..."), this, &MainWindow::exportCluster);
    file->addSeparator();
    file->addAction(tr("&Close"), this, &QWidget::close)
        ->setShortcuts(standardShortcuts(QKeySequence::Close, {QKeySequence(Qt::CTRL | Qt::Key_W)}));
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    rebuildSampleMenu();
    rebuildRecentMenu();

    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    QAction *undo = mDocument->undoStack()->createUndoAction(this, tr("&Undo"));
    undo->setShortcut(QKeySequence::Undo);
    QAction *redo = mDocument->undoStack()->createRedoAction(this, tr("&Redo"));
    redo->setShortcuts(standardShortcuts(
        QKeySequence::Redo, {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)}));
    edit->addAction(undo);
    edit->addAction(redo);
    edit->addSeparator();
    // Canvas-only shortcuts: Delete in a line edit must still delete text.
    QAction *del = edit->addAction(tr("&Delete Selection"), mCanvas, &ClusterCanvas::deleteSelection);
    del->setShortcut(QKeySequence::Delete);
    del->setShortcutContext(Qt::WidgetShortcut);
    mCanvas->addAction(del);
    QAction *all = edit->addAction(tr("Select &All"), mCanvas, &ClusterCanvas::selectAllItems);
    all->setShortcut(QKeySequence::SelectAll);
    all->setShortcutContext(Qt::WidgetShortcut);
    mCanvas->addAction(all);

    QMenu *plan = menuBar()->addMenu(tr("&Plan"));
    QAction *runAct = plan->addAction(tr("&Run Search"), QKeySequence(Qt::Key_F5), mResults, &ResultsPanel::runSearch);
    QAction *cancelAct = plan->addAction(tr("&Cancel Search"), mResults, &ResultsPanel::cancelSearch);
    plan->addSeparator();
    mTrainAction = plan->addAction(tr("&Train Predictor"), this, &MainWindow::trainPredictor);
    mCancelTrainAction = plan->addAction(tr("Cancel T&raining"), this, &MainWindow::cancelTraining);
    plan->setToolTipsVisible(true);
    plan->addSeparator();
    QAction *comparePlansAct
        = plan->addAction(tr("Com&pare Selected Plans..."), mResults, &ResultsPanel::compareSelected);
    comparePlansAct->setToolTip(tr("The 2 or 3 plans selected in the table (Ctrl+click) side by side"));
    comparePlansAct->setEnabled(false);
    connect(mResults, &ResultsPanel::compareAvailable, comparePlansAct, &QAction::setEnabled);
    QAction *compareAct = plan->addAction(tr("Compare with &Baselines..."), this, &MainWindow::compareWithBaselines);
    QAction *exportAct = plan->addAction(tr("&Export Selected Plan..."), QKeySequence(Qt::CTRL | Qt::Key_E), this,
                                         &MainWindow::exportSelectedPlan);

    mViewMenu = menuBar()->addMenu(tr("&View"));
    mViewMenu->addAction(tr("Zoom &In"), QKeySequence::ZoomIn, mCanvas, &ClusterCanvas::zoomIn);
    mViewMenu->addAction(tr("Zoom &Out"), QKeySequence::ZoomOut, mCanvas, &ClusterCanvas::zoomOut);
    QAction *fitAct = mViewMenu->addAction(tr("&Fit to View"), QKeySequence(Qt::CTRL | Qt::Key_0), mCanvas,
                                           &ClusterCanvas::fitToView);
    mViewMenu->addAction(tr("&Actual Size"), QKeySequence(Qt::CTRL | Qt::Key_1), mCanvas, &ClusterCanvas::resetZoom);
    mViewMenu->addSeparator();

    createToolBar({newAct, openAct, saveAct, nullptr, undo, redo, nullptr, runAct, cancelAct, nullptr, exportAct,
                   compareAct, nullptr, fitAct});

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About MemX Workbench"), this, [this] {
        QMessageBox::about(this, tr("About MemX Workbench"),
                           tr("<b>MemX Workbench %1</b><br>Memory-aware parallel planning for heterogeneous, "
                              "cross-vendor GPU clusters.")
                               .arg(QApplication::applicationVersion()));
    });
}

/// The main toolbar: the menus' actions (nullptr: a separator), with theme icons where the
/// desktop has them and the style's standard ones otherwise, text beside each icon.
void MainWindow::createToolBar(const QList<QAction *> &actions)
{
    mToolBar = addToolBar(tr("Main"));
    mToolBar->setObjectName(QStringLiteral("mainToolBar"));
    mToolBar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    mToolBar->setIconSize(QSize(16, 16));
    struct IconOf {
        const char *theme;
        QStyle::StandardPixmap fallback;
    };
    const IconOf icons[] = {{"document-new", QStyle::SP_FileIcon},
                            {"document-open", QStyle::SP_DialogOpenButton},
                            {"document-save", QStyle::SP_DialogSaveButton},
                            {"edit-undo", QStyle::SP_ArrowBack},
                            {"edit-redo", QStyle::SP_ArrowForward},
                            {"media-playback-start", QStyle::SP_MediaPlay},
                            {"process-stop", QStyle::SP_BrowserStop},
                            {"document-send", QStyle::SP_DialogApplyButton},
                            {"view-statistics", QStyle::SP_FileDialogDetailedView},
                            {"zoom-fit-best", QStyle::SP_TitleBarMaxButton}};
    size_t i = 0;
    for (QAction *a : actions) {
        if (!a) {
            mToolBar->addSeparator();
            continue;
        }
        if (i < std::size(icons) && a->icon().isNull())
            a->setIcon(QIcon::fromTheme(QLatin1String(icons[i].theme), style()->standardIcon(icons[i].fallback)));
        ++i;
        mToolBar->addAction(a);
    }
    mViewMenu->addAction(mToolBar->toggleViewAction());
}

void MainWindow::setSampleClusterDirs(const QStringList &dirs)
{
    gSampleDirs.clear();
    for (const QString &dir : dirs)
        if (QFileInfo(dir).isDir())
            gSampleDirs << QDir(dir).absolutePath();
}

QStringList MainWindow::sampleClusterDirs()
{
    return gSampleDirs;
}

QString MainWindow::defaultSampleCluster()
{
    for (const QString &dir : sampleClusterDirs()) {
        const QString path = dir + QStringLiteral("/paper-20gpu-nvidia-amd.json");
        if (QFileInfo::exists(path))
            return path;
    }
    return QString();
}

bool MainWindow::isSampleFile(const QString &path) const
{
    const QString dir = QFileInfo(path).absoluteDir().absolutePath();
    return sampleClusterDirs().contains(dir);
}

void MainWindow::rebuildSampleMenu()
{
    mSampleMenu->clear();
    const QStringList dirs = sampleClusterDirs();
    if (dirs.isEmpty()) {
        mSampleMenu->addAction(tr("(no sample clusters installed)"))->setEnabled(false);
        return;
    }
    const QFileInfoList files = QDir(dirs.front()).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
    for (const QFileInfo &f : files) {
        const QString path = f.absoluteFilePath();
        mSampleMenu->addAction(f.completeBaseName(), this, [this, path] { openClusterFile(path, true); });
    }
}

void MainWindow::rebuildRecentMenu()
{
    mRecentMenu->clear();
    const QStringList files = mRememberLayout ? mSettings.recentFiles() : QStringList();
    for (int i = 0; i < files.size(); ++i) {
        const QString path = files[i];
        mRecentMenu->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QDir::toNativeSeparators(path)), this,
                               [this, path] { openClusterFile(path, true); });
    }
    if (files.isEmpty()) {
        mRecentMenu->addAction(tr("(none)"))->setEnabled(false);
        return;
    }
    mRecentMenu->addSeparator();
    mRecentMenu->addAction(tr("Clear Menu"), this, [this] {
        mSettings.clearRecentFiles();
        rebuildRecentMenu();
    });
}

void MainWindow::showLoadErrors(const QString &title, const memx::LoadError &error)
{
    QStringList plain;
    for (const memx::Diagnostic &d : error.diagnostics())
        plain << QString::fromStdString(d.toString());
    mLastError = plain.join(QLatin1Char('\n'));
    if (!mInteractive)
        return;
    QStringList lines;
    for (const QString &l : plain)
        lines << l.toHtmlEscaped();
    QMessageBox box(QMessageBox::Warning, title, tr("%n problem(s) found:", nullptr, int(lines.size())),
                    QMessageBox::Ok, this);
    box.setInformativeText(
        QStringLiteral("<ul><li>%1</li></ul>").arg(lines.mid(0, 12).join(QStringLiteral("</li><li>"))));
    box.setDetailedText(mLastError);
    box.exec();
}

void MainWindow::showError(const QString &title, const QString &text)
{
    mLastError = text;
    if (mInteractive)
        QMessageBox::warning(this, title, text);
}

bool MainWindow::openFile(const QString &path, bool ask)
{
    if (path.isEmpty())
        return false;
    if (ask && !maybeSave())
        return false;
    try {
        mDocument->load(path, storageFor(path)); // a project's weights reach the sliders and results
    } catch (const memx::LoadError &e) {
        showLoadErrors(tr("Cannot open %1").arg(QFileInfo(path).fileName()), e);
        if (mRememberLayout && !QFileInfo::exists(path)) {
            mSettings.removeRecentFile(path);
            rebuildRecentMenu();
        }
        return false;
    } catch (const std::exception &e) {
        showError(tr("Cannot open %1").arg(QFileInfo(path).fileName()), QString::fromStdString(e.what()));
        return false;
    }
    if (mRememberLayout && !isSampleFile(path)) {
        mSettings.addRecentFile(path);
        rebuildRecentMenu();
    }
    statusBar()->showMessage(tr("Opened %1").arg(QDir::toNativeSeparators(path)), 6000);
    return true;
}

bool MainWindow::loadGpuFile(const QString &path, QString *error)
{
    try {
        addGpuDevices(path, memx::loadCustomDevices(path.toStdString()));
    } catch (const std::exception &e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

void MainWindow::addGpuDevices(const QString &path, const std::vector<memx::GpuSpec> &devices)
{
    mDocument->addKnownDevices(devices, QFileInfo(path).absoluteFilePath()); // throws on a clash
    if (mRememberLayout)
        mSettings.addGpuFile(path);
    QStringList names;
    for (const memx::GpuSpec &d : devices)
        names << QString::fromStdString(d.name);
    statusBar()->showMessage(tr("Loaded %n GPU(s) from %1: %2", nullptr, int(devices.size()))
                                 .arg(QFileInfo(path).fileName(), names.join(QStringLiteral(", "))),
                             8000);
}

QString MainWindow::userGpuDir()
{
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/gpus");
}

/// Whether `path` is a file New GPU... wrote (in userGpuDir(); nothing else refers to it).
static bool isDefinedGpuFile(const QString &path)
{
    return QFileInfo(path).absolutePath() == QFileInfo(MainWindow::userGpuDir()).absoluteFilePath();
}

bool MainWindow::addDefinedGpu(const GpuDefinitionDialog &dialog, QString *error)
{
    const auto fail = [&](const QString &why) {
        if (error)
            *error = why;
        return false;
    };
    if (dialog.result() != QDialog::Accepted) // accept() checks the device with core's rules
        return fail(tr("The New GPU dialog was not accepted."));
    const QString dir = userGpuDir();
    const QString path = dir + u'/' + QString::fromStdString(dialog.device().id) + QStringLiteral(".json");
    QSaveFile file(path); // a crash mid-write leaves the earlier definition
    const QByteArray text = QByteArray::fromStdString(dialog.fileText());
    if (!QDir().mkpath(dir) || !file.open(QIODevice::WriteOnly) || file.write(text) != text.size() || !file.commit())
        return fail(tr("Cannot write %1: %2").arg(path, file.errorString()));
    try {
        addGpuDevices(path, {dialog.device()});
    } catch (const std::exception &e) {
        return fail(QString::fromStdString(e.what()));
    }
    return true;
}

int MainWindow::removeGpuFile(const QString &path)
{
    const QString abs = QFileInfo(path).absoluteFilePath();
    const int removed = mDocument->removeKnownDevices(abs);
    if (mRememberLayout)
        mSettings.removeGpuFile(abs);
    if (isDefinedGpuFile(abs))
        QFile::remove(abs);
    statusBar()->showMessage(tr("Removed %n GPU(s) of %1", nullptr, removed).arg(QFileInfo(abs).fileName()), 6000);
    return removed;
}

void MainWindow::removeGpuFileInteractive(const QString &path)
{
    QStringList names;
    for (const auto &[id, origin] : mDocument->knownDeviceOrigins())
        if (origin == path)
            if (const memx::GpuSpec *d = mDocument->knownDevice(id))
                names << QString::fromStdString(d->name);
    const QString text = isDefinedGpuFile(path)
        ? tr("Remove %1 from the palette and delete its definition (you made it with New "
             "GPU...)?")
              .arg(names.join(QStringLiteral(", ")))
        : tr("Remove %1 (from %2) from the palette? The file stays; load it again with Load "
             "GPUs...")
              .arg(names.join(QStringLiteral(", ")), QDir::toNativeSeparators(path));
    if (QMessageBox::question(this, tr("Remove GPUs"),
                              text + u'\n' + tr("Node groups of these GPUs keep their definition in the cluster."))
        == QMessageBox::Yes)
        removeGpuFile(path);
}

void MainWindow::defineGpuInteractive()
{
    GpuDefinitionDialog dialog(mDocument->knownDevices(), this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    QString error;
    if (!addDefinedGpu(dialog, &error))
        showError(tr("Cannot add the GPU"), error);
}

void MainWindow::loadGpuFileInteractive()
{
    const QString path = QFileDialog::getOpenFileName(this, tr("Load GPU Definitions"), QString(),
                                                      tr("GPU catalogues (*.json);;All files (*)"));
    if (path.isEmpty())
        return;
    try {
        addGpuDevices(path, memx::loadCustomDevices(path.toStdString()));
    } catch (const memx::LoadError &e) { // refused: the errors, field by field
        showLoadErrors(tr("Cannot load %1").arg(QFileInfo(path).fileName()), e);
        return;
    } catch (const std::exception &e) {
        showError(tr("Cannot load %1").arg(QFileInfo(path).fileName()), QString::fromStdString(e.what()));
    }
}

void MainWindow::newDocument()
{
    if (!maybeSave())
        return;
    memx::Cluster c;
    c.name = "Untitled cluster";
    c.network.interNode = {25, 5, {}};
    mDocument->reset(c, mDocument->model());
}

namespace {
QString openFilter()
{
    return QObject::tr("MemX projects and clusters (*.memx *.json);;%1;;%2")
        .arg(ProjectStorage().fileFilter(), ClusterJsonStorage().fileFilter());
}
} // namespace

void MainWindow::openDialog()
{
    if (!maybeSave())
        return;
    const QString dir
        = mDocument->filePath().isEmpty() ? QDir::homePath() : QFileInfo(mDocument->filePath()).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Project or Cluster"), dir, openFilter());
    if (!path.isEmpty())
        openFile(path);
}

bool MainWindow::saveTo(const QString &path)
{
    try {
        mDocument->save(path, storageFor(path));
    } catch (const memx::LoadError &e) {
        showLoadErrors(tr("Cannot save %1").arg(QFileInfo(path).fileName()), e);
        return false;
    } catch (const std::exception &e) {
        showError(tr("Cannot save %1").arg(QFileInfo(path).fileName()), QString::fromStdString(e.what()));
        return false;
    }
    if (mRememberLayout) {
        mSettings.addRecentFile(path);
        rebuildRecentMenu();
    }
    statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), 6000);
    return true;
}

bool MainWindow::save()
{
    // Samples are read-only references: saving an edited sample asks for a new file.
    if (mDocument->filePath().isEmpty() || isSampleFile(mDocument->filePath()))
        return saveAs();
    return saveTo(mDocument->filePath());
}

bool MainWindow::saveAs()
{
    QFileDialog dialog(this, tr("Save Project As"));
    dialog.setAcceptMode(QFileDialog::AcceptSave);
    dialog.setNameFilters({ProjectStorage().fileFilter(), ClusterJsonStorage().fileFilter()});
    dialog.setDefaultSuffix(ProjectStorage().defaultSuffix());
    dialog.setDirectory(isSampleFile(mDocument->filePath()) || mDocument->filePath().isEmpty()
                            ? QDir::homePath()
                            : QFileInfo(mDocument->filePath()).absolutePath());
    connect(&dialog, &QFileDialog::filterSelected, &dialog, [&dialog](const QString &filter) {
        dialog.setDefaultSuffix(filter.contains(QStringLiteral("*.json")) ? QStringLiteral("json")
                                                                          : QStringLiteral("memx"));
    });
    if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty())
        return false;
    return saveTo(dialog.selectedFiles().front());
}

void MainWindow::importCluster()
{
    // Replaces the cluster of this window (model and project data stay); the result is unsaved.
    if (!maybeSave())
        return;
    const QString path = QFileDialog::getOpenFileName(this, tr("Import Cluster JSON"), QDir::homePath(),
                                                      ClusterJsonStorage().fileFilter());
    if (path.isEmpty())
        return;
    try {
        const DocumentContent content = ClusterJsonStorage().load(path);
        mDocument->reset(content.cluster, mDocument->model(), mDocument->projectData());
    } catch (const memx::LoadError &e) {
        showLoadErrors(tr("Cannot import cluster"), e);
    }
}

void MainWindow::exportCluster()
{
    // Writes a copy; the document keeps its own file and modified state.
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Cluster JSON"), QDir::homePath(),
                                                      ClusterJsonStorage().fileFilter());
    if (path.isEmpty())
        return;
    try {
        ClusterJsonStorage().save({mDocument->cluster(), mDocument->model(), std::nullopt}, path);
        statusBar()->showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(path)), 6000);
    } catch (const memx::LoadError &e) {
        showLoadErrors(tr("Cannot export cluster"), e);
    } catch (const std::exception &e) {
        showError(tr("Cannot export cluster"), QString::fromStdString(e.what()));
    }
}

bool MainWindow::maybeSave()
{
    if (!mDocument->isModified() || !mInteractive)
        return true;
    const auto answer = QMessageBox::warning(
        this, tr("Unsaved changes"), tr("\"%1\" has unsaved changes. Save them?").arg(mDocument->displayName()),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Save)
        return save();
    return answer == QMessageBox::Discard;
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (!maybeSave()) {
        event->ignore();
        return;
    }
    if (mRememberLayout) {
        mSettings.setWindowGeometry(saveGeometry());
        mSettings.setWindowState(saveState());
    }
    event->accept();
}

void MainWindow::updateTitle()
{
    QString file = mDocument->filePath().isEmpty() ? tr("unsaved") : QFileInfo(mDocument->filePath()).fileName();
    setWindowTitle(tr("%1 (%2)[*] - MemX Workbench").arg(mDocument->displayName(), file));
    setWindowModified(mDocument->isModified());
}

void MainWindow::updateSummary()
{
    const memx::Cluster &c = mDocument->cluster();
    const memx::Model &m = mDocument->model();
    const QString cluster = c.groups.empty() ? tr("No nodes yet") : clusterSummaryLine(c);
    mSummary->setText(QStringLiteral("<b>%1</b> &nbsp;·&nbsp; %2<br><span style='color:#555'>%3</span>")
                          .arg(QString::fromStdString(c.name).toHtmlEscaped(), cluster.toHtmlEscaped(),
                               tr("Model: %1 (%2 B parameters) · global batch %3 · sequence %4 · %5")
                                   .arg(QString::fromStdString(m.name).toHtmlEscaped())
                                   .arg(double(m.totalParams()) / 1e9, 0, 'f', 2)
                                   .arg(m.training.globalBatch)
                                   .arg(m.shape.seqLength)
                                   .arg(QString::fromLatin1(memx::toString(m.training.precision)))));
}

void MainWindow::addGpuAtFreeSpot(const QString &deviceId)
{
    // Below the lowest box, at the left edge of the cluster.
    double y = 0, x = 0;
    bool first = true;
    for (const memx::NodeGroup &g : mDocument->cluster().groups) {
        x = first ? g.x : std::min(x, g.x);
        y = first ? g.y + 130 : std::max(y, g.y + 130);
        first = false;
    }
    QString error;
    const memx::GpuSpec *spec = memx::builtinCatalogue().find(deviceId.toStdString());
    const int index = mDocument->addNodeGroup(deviceId.toStdString(), QPointF(x, y),
                                              spec && spec->segment == "consumer" ? 4 : 8, &error);
    if (index < 0) {
        statusBar()->showMessage(tr("Cannot add %1: %2").arg(deviceId, error), 6000);
        return;
    }
    mCanvas->selectGroup(index);
}

void MainWindow::setInteractive(bool on)
{
    mInteractive = on;
    mProfiles->setInteractive(on);
}

void MainWindow::saveScreenshotAndQuit(const QString &path, int selectRank, ScreenshotView view)
{
    auto save = [path](QWidget *widget) {
        // Maximum PNG compression keeps documentation images small.
        if (!widget->grab().toImage().save(path, nullptr, 0))
            qWarning("could not write %s", qPrintable(path));
        QApplication::quit();
    };
    auto grabAndQuit = [this, save] { save(this); };
    auto selectRanked = [this, selectRank] {
        if (selectRank <= 0)
            return;
        const PlanTableModel *m = mResults->tableModel();
        for (int row = 0; row < m->rowCount(); ++row)
            if (m->rankOfRow(row) == selectRank)
                mResults->selection()->select(m->plans()[row].id);
    };
    if (view == ScreenshotView::Profiles) {
        // Room for the Profiles dock next to the results (the screenshot screen is 1600x1000).
        resize(1600, 980);
        if (QDockWidget *profilesDock = findChild<QDockWidget *>(QStringLiteral("profilesDock"))) {
            profilesDock->raise();
            QTimer::singleShot(0, this, [this, profilesDock] { resizeDocks({profilesDock}, {560}, Qt::Horizontal); });
        }
    }
    auto onResults = [this, view, selectRanked, grabAndQuit, save] {
        selectRanked();
        if (view == ScreenshotView::Window) {
            QTimer::singleShot(800, this, grabAndQuit); // let the charts paint
        } else if (view == ScreenshotView::Compare) {
            compareWithBaselines();
            CompareDialog *dialog = mCompareDialog;
            connect(
                dialog, &CompareDialog::finished, this,
                [dialog, save](bool) { QTimer::singleShot(800, dialog, [dialog, save] { save(dialog); }); },
                Qt::SingleShotConnection);
        } else if (view == ScreenshotView::PlanComparison || view == ScreenshotView::PlanTimelines) {
            QTableView *table = mResults->tableView();
            const PlanTableModel *m = mResults->tableModel();
            for (int row = 0; row < m->rowCount(); ++row)
                if (m->rankOfRow(row) <= PlanComparisonView::MaxPlans)
                    table->selectionModel()->select(mResults->tableProxy()->mapFromSource(m->index(row, 0)),
                                                    QItemSelectionModel::Select | QItemSelectionModel::Rows);
            if (!mResults->compareSelected() || !mResults->comparison()) {
                QTimer::singleShot(0, this, grabAndQuit);
                return;
            }
            if (view == ScreenshotView::PlanTimelines)
                mResults->comparison()->detailTabs()->setCurrentIndex(1);
            QWidget *dialog = mResults->comparison()->window();
            QTimer::singleShot(800, dialog, [dialog, save] { save(dialog); });
        } else if (view == ScreenshotView::ExportDialog) {
            const PlanDetail &d = mResults->selectedDetail();
            const auto outcome = mResults->results().outcome();
            if (d.id == 0 || !outcome) {
                QTimer::singleShot(0, this, grabAndQuit);
                return;
            }
            auto *dialog = new ExportDialog(d.plan, outcome->result.cluster, outcome->result.model,
                                            memx::toJson(d.estimate), this);
            dialog->setAttribute(Qt::WA_DeleteOnClose);
            dialog->setOutputDir(QStringLiteral("launch"));
            dialog->show();
            QTimer::singleShot(800, dialog, [dialog, save] { save(dialog); });
        } else {
            // Plan, run the plan on the virtual testbed, then grab the window (Profiles dock
            // raised and widened) once the search that the new (simulated) profiles trigger is shown.
            connect(
                mProfiles, &ProfilesPanel::importFinished, this,
                [this, save](bool ok, const QString &message) {
                    if (!ok)
                        qWarning("testbed run failed: %s", qPrintable(message));
                    connect(
                        mResults, &ResultsPanel::resultsShown, this,
                        [this, save] { QTimer::singleShot(800, this, [this, save] { save(this); }); },
                        Qt::SingleShotConnection);
                },
                Qt::SingleShotConnection);
            mProfiles->runOnTestbed(1);
        }
    };
    connect(mResults, &ResultsPanel::resultsShown, this, onResults, Qt::SingleShotConnection);
    // No search (empty cluster) or a failed one: grab after a while anyway.
    connect(
        mResults->job(), &SearchJob::failed, this, [this, grabAndQuit] { QTimer::singleShot(600, this, grabAndQuit); },
        Qt::SingleShotConnection);
    QTimer::singleShot(mDocument->cluster().groups.empty() ? 1500 : 240000, this, grabAndQuit);
}

} // namespace memx::ui
