#pragma once

#include "memx/engine/plannedsearch.h"
#include "memx/engine/training.h"
#include "memx/export/export.h"
#include "memx/ui/backgroundjob.h"
#include "memx/ui/documentstorage.h"
#include "memx/ui/resultsviewtypes.h"
#include "memx/ui/settings.h"

#include <QMainWindow>
#include <QPointer>

#include <memory>
#include <optional>

class QAction;
class QDockWidget;
class QLabel;
class QToolBar;
class QMenu;
class QProgressBar;
class QToolButton;

namespace memx {
class LoadError;
}

namespace memx::ui {

class ClusterCanvas;
class CompareDialog;
class ClusterDocument;
class GpuDefinitionDialog;
class GpuPalette;
class ModelPanel;
class SearchSpacePanel;
class NodePropertyPanel;
class ProfilesPanel;
class ResultsPanel;
class WeightSliders;

/// The workbench main window: wiring only. One ClusterDocument per window; the cluster canvas
/// (with its summary header) above the results (ResultsPanel: search toolbar, Pareto chart,
/// memory bars, plan table, plan detail); docks: GPU catalogue and Profiles (left), Objective
/// weights, Properties, Model and History (right).
///
/// Every change of the cluster, model or project data schedules a background search (debounced,
/// newer supersedes older): the core's planned search with the project's profiles, calibration
/// and trained learned predictor (what `memx search --project` runs); weight changes re-rank the
/// cached results instantly. Plan > Train Predictor trains the learned predictor on the project's
/// measured runs in the background (memx::trainProjectPredictor, what `memx train` runs).
class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    /// `rememberLayout` false: ignore and do not write saved settings (screenshots, tests).
    explicit MainWindow(bool rememberLayout = true, QWidget *parent = nullptr);
    ~MainWindow() override;

    /// Folders holding the shipped sample clusters, searched in order (set once by main()).
    static void setSampleClusterDirs(const QStringList &dirs);
    static QStringList sampleClusterDirs();
    /// Path of the sample cluster the workbench opens by default (paper-20gpu-nvidia-amd.json).
    static QString defaultSampleCluster();

    /// Opens a cluster JSON or .memx project into this window (asks to save unsaved edits first
    /// when `ask`). Shows every load problem in a dialog (unless `quiet`) and returns false on failure.
    bool openFile(const QString &path, bool ask = false);
    bool openClusterFile(const QString &path, bool ask = false) { return openFile(path, ask); }
    /// Adds the GPUs of a memx.catalogue/1 file (memx::loadCustomDevices) to the palette and to
    /// the devices edits may use, and remembers the file for the next start. False with `error`
    /// (the file, every field at fault) when refused; nothing changes then.
    bool loadGpuFile(const QString &path, QString *error = nullptr);
    /// The device of an accepted New GPU dialog (its accept() checked it): written to
    /// userGpuDir()/ID.json (replacing an earlier definition of that id) and added as loadGpuFile
    /// adds a file's devices. False with *error when the dialog was not accepted or the file
    /// cannot be written.
    bool addDefinedGpu(const GpuDefinitionDialog &dialog, QString *error = nullptr);
    /// Removes the devices loaded from the GPU file `path` from the palette and from the devices
    /// edits may use (groups using one keep its definition in the cluster), and stops loading the
    /// file at start; a file New GPU... wrote (in userGpuDir()) is deleted. Returns how many
    /// devices were removed.
    int removeGpuFile(const QString &path);
    /// Where New GPU... keeps its definitions (the application data folder's gpus/).
    static QString userGpuDir();
    /// Saves the document to `path` (format by suffix: .memx project or cluster JSON).
    bool saveTo(const QString &path);
    /// What saveScreenshotAndQuit() grabs.
    enum class ScreenshotView {
        Window, ///< the whole window with the first search's results
        Profiles, ///< the Profiles dock after planning and running the plan on the virtual testbed
        ExportDialog, ///< the export dialog of the selected plan
        Compare, ///< the comparison dialog once its run finished
        PlanComparison, ///< the plans of ranks 1-3 side by side (Compare in the results)
        PlanTimelines, ///< the same, its 1F1B timelines tab
    };
    /// Grabs `view` into a PNG once the first search's results are drawn, then quits.
    /// `selectRank` > 0 selects the plan of that rank first.
    void saveScreenshotAndQuit(const QString &path, int selectRank = 0, ScreenshotView view = ScreenshotView::Window);
    /// Opens the export dialog for the selected plan (modal); returns the dialog's result.
    void exportSelectedPlan();
    /// Plan > Compare with Baselines: a CompareDialog on the current cluster, model, space and
    /// weights, started at once (compareDialog() while it is open).
    void compareWithBaselines();
    QPointer<CompareDialog> compareDialog() const { return mCompareDialog; }
    /// Trains the learned predictor on the project's measured runs in the background (progress
    /// and Cancel in the status bar); stores it in the project, which then searches with it.
    /// trainingFinished() follows.
    void trainPredictor();
    void cancelTraining();
    bool isTraining() const { return mTrain->isRunning(); }
    BackgroundJob<std::shared_ptr<memx::TrainOutcome>> *trainJob() const { return mTrain; }
    QAction *trainAction() const { return mTrainAction; }
    /// What the next search reads of the project (rebuilt when the project data changes).
    const std::shared_ptr<const memx::SearchProject> &searchProject() const { return mSearchProject; }

    ClusterDocument *document() const { return mDocument; }
    ClusterCanvas *canvas() const { return mCanvas; }
    ResultsPanel *results() const { return mResults; }
    WeightSliders *weightSliders() const { return mWeights; }
    ProfilesPanel *profiles() const { return mProfiles; }
    NodePropertyPanel *properties() const { return mProperties; }
    SearchSpacePanel *searchSpace() const { return mSpace; }
    ModelPanel *modelPanel() const { return mModelPanel; }
    QToolBar *mainToolBar() const { return mToolBar; }

    /// When false (tests), load/save problems are not shown in modal dialogs; lastError() has them.
    void setInteractive(bool on);
    QString lastError() const { return mLastError; }

signals:
    /// trainPredictor() finished: `ok` false with `message` saying why ("cancelled" after
    /// cancelTraining()); the project is unchanged then.
    void trainingFinished(bool ok, const QString &message);

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    /// The window's docks (createDocks), for the View menu and the first layout.
    struct Docks {
        QDockWidget *palette = nullptr, *profiles = nullptr, *weights = nullptr, *properties = nullptr,
                    *model = nullptr, *history = nullptr, *space = nullptr;
    };
    void createCentre();
    Docks createDocks();
    void connectDocument(const Docks &docks);
    void connectResults();
    void startUntitled();
    void createMenus();
    void createToolBar(const QList<QAction *> &actions);
    void newDocument();
    void openDialog();
    bool save();
    bool saveAs();
    void importCluster();
    void loadGpuFileInteractive();
    void defineGpuInteractive();
    void removeGpuFileInteractive(const QString &path);
    void addGpuDevices(const QString &path, const std::vector<memx::GpuSpec> &devices);
    void exportCluster();
    bool maybeSave();
    void updateTitle();
    void updateSummary();
    void rebuildRecentMenu();
    void rebuildSampleMenu();
    void showLoadErrors(const QString &title, const memx::LoadError &error);
    void showError(const QString &title, const QString &text);
    void addGpuAtFreeSpot(const QString &deviceId);
    bool isSampleFile(const QString &path) const;
    void onDocumentChanged();
    /// Re-reads the project's search context (profiles, calibration, predictor) after a change.
    void onProjectDataChanged();
    void updateTrainAction();
    /// Train Predictor's status-bar progress and Cancel, and its job's endings.
    void createTrainingUi();
    void setTrainingUi(bool running);

    bool mRememberLayout;
    bool mInteractive = true;
    QString mLastError;
    memx::ui::Settings mSettings;
    ClusterDocument *mDocument = nullptr;
    ClusterCanvas *mCanvas = nullptr;
    GpuPalette *mPalette = nullptr;
    NodePropertyPanel *mProperties = nullptr;
    ModelPanel *mModelPanel = nullptr;
    SearchSpacePanel *mSpace = nullptr;
    QToolBar *mToolBar = nullptr;
    std::optional<memx::ExportFormat> mExportFormat; ///< of the last export dialog
    QString mExportDir;
    ProfilesPanel *mProfiles = nullptr;
    ResultsPanel *mResults = nullptr;
    WeightSliders *mWeights = nullptr;
    QLabel *mSummary = nullptr;
    QMenu *mRecentMenu = nullptr;
    QMenu *mSampleMenu = nullptr;
    QMenu *mViewMenu = nullptr;
    memx::Cluster mSearchedCluster; // what the last scheduled search saw (positions ignored)
    memx::Model mSearchedModel;
    bool mProjectChanged = true; // the project data changed since the last scheduled search
    std::shared_ptr<const memx::SearchProject> mSearchProject;
    QPointer<CompareDialog> mCompareDialog;
    BackgroundJob<std::shared_ptr<memx::TrainOutcome>> *mTrain = nullptr;
    QAction *mTrainAction = nullptr;
    QAction *mCancelTrainAction = nullptr;
    QProgressBar *mTrainProgress = nullptr; // status bar, visible while training
    QToolButton *mTrainCancel = nullptr;
};

} // namespace memx::ui
