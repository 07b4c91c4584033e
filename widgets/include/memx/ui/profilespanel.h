#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"
#include "memx/profile/layerprofile.h"
#include "memx/profile/measuredrun.h"
#include "memx/profiling/coverage.h"
#include "memx/profiling/minimalset.h"
#include "memx/ui/backgroundjob.h"

#include <QAbstractTableModel>
#include <QWidget>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

class QAction;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableView;
class QTextBrowser;
class QToolButton;

namespace memx {
class Store;
}

namespace memx::ui {

class ClusterDocument;
class ProfilingJobModel;

/// The project's measurements as a table: one row per per-layer profile, then one per measured
/// run. Columns: Kind, GPU(s), Model, TP, Micro-batch, Detail (origin or time/memory), Source.
class MeasurementTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        KindColumn,
        GpuColumn,
        ModelColumn,
        TpColumn,
        MicroBatchColumn,
        DetailColumn,
        SourceColumn,
        ColumnCount
    };
    using QAbstractTableModel::QAbstractTableModel;

    /// Replaces the rows with `store`'s profiles and runs (one model reset).
    void setData(const memx::Store &store);
    int profileCount() const { return int(mProfiles.size()); }
    int runCount() const { return int(mRuns.size()); }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<memx::LayerProfile> mProfiles;
    std::vector<memx::MeasuredRun> mRuns;
};

/// Profiles dock: the project's measurements (MeasurementTableModel), the coverage per GPU type of
/// the current cluster and model, imports (the public (Sailor) dataset folder, a Megatron-LM log of
/// the selected plan, CSV/JSON profile files), the minimal-set profiling plan of the current cluster
/// and model (memx::planMinimalSet, shown in a ProfilingJobModel; its job files written as
/// `memx profile plan --out` does) and running that plan on the virtual testbed (as
/// `memx profile run-simulated --jobs`).
///
/// The coverage is the core's (memx::profileCoverage, the rule of `memx profile coverage`); the
/// testbed run is the core's job loop (memx::runTestbedJobs, as `memx profile run-simulated`).
/// Long work (parsing, planning, the testbed) runs in a BackgroundJob on copied inputs, with a
/// progress bar and a Cancel button; one task at a time. Whatever it produces for
/// the project is written into the document's project data afterwards in one transaction (all or
/// nothing); a cancelled task writes nothing. GUI thread only.
class ProfilesPanel : public QWidget {
    Q_OBJECT
public:
    explicit ProfilesPanel(ClusterDocument *document, QWidget *parent = nullptr);
    ~ProfilesPanel() override;

    /// The plan the results currently show (a Megatron log is imported as a run of it).
    void setCurrentPlan(std::optional<memx::Plan> plan);

    /// Imports the Sailor dataset folder in the background; importFinished() follows.
    void importPublicDataset(const QString &dir);
    /// Imports CSV/JSON profile files in the background.
    void importProfileFiles(const QStringList &files);
    /// Imports a Megatron-LM log as a measured run of the current plan (synchronous: one file).
    bool importMegatronLog(const QString &file);
    /// True while any background task (import, planning, testbed run) runs.
    bool isImporting() const;
    bool isBusy() const { return isImporting(); }

    /// Computes the minimal-set profiling plan of the current cluster and model (default search
    /// space, the model's global batch) in the background; profilingPlanFinished() follows.
    void planProfiling();
    /// Writes the shown plan's job folders, run.sh scripts and manifest.json into `dir`
    /// (memx::profilingJobFiles + memx::writeExportFiles: atomic, all or nothing; existing files are
    /// refused unless `overwrite`). Returns false with *error set on failure.
    bool writeJobFiles(const QString &dir, bool overwrite, QString *error = nullptr);
    /// Runs every job of the minimal-set plan (planned first, in the same task, when none is shown
    /// for the current cluster and model) on the virtual testbed with `seed`, then imports the
    /// simulated profiles and runs into the project in one transaction; importFinished() follows.
    void runOnTestbed(quint64 seed = 1);
    /// Cancels the running task (nothing is written); its finished signal reports "cancelled".
    void cancel();
    /// When false (tests, screenshots), failures are only reported by the signals, not in message boxes.
    void setInteractive(bool on) { mInteractive = on; }

    ProfilingJobModel *jobModel() const { return mJobModel; }
    QTableView *jobView() const { return mJobView; }
    /// The plan summary line shown above the job table (empty without a plan).
    QString planSummary() const;

    MeasurementTableModel *model() const { return mModel; }
    QTableView *view() const { return mView; }
    QString coverageHtml() const;

signals:
    /// An import or a testbed run finished: `ok` false with `message` saying why (nothing was
    /// written then; "cancelled" after cancel()).
    void importFinished(bool ok, const QString &message);
    /// planProfiling() finished: `ok` false with `message` saying why.
    void profilingPlanFinished(bool ok, const QString &message);

private:
    enum class TaskKind { Import, Plan, Testbed };
    /// What a task's worker returns: the step that writes its output into the document on this
    /// thread and says what was done (or throws to report failure).
    using Finish = std::function<QString()>;
    using Work = std::function<Finish(JobControl &)>;
    /// Runs `work` in mTask; then, unless it failed or was cancelled, its Finish on this thread.
    /// Emits the kind's finished signal.
    void runTask(TaskKind kind, const QString &what, const QStringList &phases, Work work);
    void onTaskDone(bool ok, const QString &message);
    /// mTask's progress, phases and endings into the progress bar and the finished signals.
    void connectTask();
    template<typename Parse> void runImport(const QString &what, Parse parse);
    void refresh();
    void setBusy(bool busy);
    /// Drops the shown plan when the cluster (positions ignored) or model no longer match it.
    void checkPlanCurrent();
    void showPlan(const memx::ProfilingPlan &plan, const memx::Cluster &cluster, const memx::Model &model);
    memx::MinimalSetOptions planOptions() const;

    ClusterDocument *mDocument;
    MeasurementTableModel *mModel = nullptr;
    QTableView *mView = nullptr;
    QTextBrowser *mCoverage = nullptr;
    QLabel *mSummary = nullptr;
    QProgressBar *mProgress = nullptr;
    QWidget *mProgressRow = nullptr; // progress bar + Cancel, visible while a task runs
    QAction *mSailor = nullptr; // in the Import menu
    QAction *mLog = nullptr;
    QAction *mFiles = nullptr;
    QToolButton *mImport = nullptr;
    QPushButton *mPlanButton = nullptr;
    QPushButton *mWriteJobs = nullptr;
    QPushButton *mTestbed = nullptr;
    QToolButton *mCancel = nullptr;
    QLabel *mPlanSummary = nullptr;
    ProfilingJobModel *mJobModel = nullptr;
    QTableView *mJobView = nullptr;
    memx::Cluster mPlanCluster; // what the shown plan was computed for (positions zeroed)
    memx::Model mPlanModel;
    std::optional<memx::Plan> mPlan;
    BackgroundJob<Finish> *mTask = nullptr;
    TaskKind mTaskKind = TaskKind::Import;
    QString mTaskWhat;
    QStringList mTaskPhases; // progress-bar text per phase
    int mTaskPhase = 0;
    bool mInteractive = true;
};

} // namespace memx::ui
