#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"
#include "memx/profile/layerprofile.h"
#include "memx/profile/measuredrun.h"
#include "memx/profiling/minimalset.h"

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

/// Coverage of one device type of the cluster for the current model: which (TP, micro-batch)
/// cells the search uses are measured, simulated, interpolated (stored, or interpolable from
/// measured/simulated neighbours), or left to the analytic cost model.
struct DeviceCoverage {
    std::string device;
    std::vector<int> tps; ///< TP degrees of the grid's rows
    std::vector<int> microBatches; ///< micro-batch sizes of the grid's columns
    /// cells[t][b]: 'M' measured, 'S' simulated (virtual testbed), 'I' interpolated, '-' analytic
    /// estimate, ' ' a cell the search space does not use (only with `needed` kernels)
    std::vector<std::vector<char>> cells;
    int count(char status) const;
};
/// Coverage of every device type of `cluster` for `model` (its id and sequence length) by `profiles`.
/// Without `needed`, the grid is the search's default TP degrees (up to the GPUs per node) x its
/// default micro-batch sizes; with `needed` (the kernels a minimal-set plan found the space uses,
/// memx::ProfilingPlan::needed), exactly the TP degrees and micro-batch sizes used per device, cells
/// not used being ' '.
std::vector<DeviceCoverage> profileCoverage(const memx::ProfileSet &profiles, const memx::Cluster &cluster,
                                            const memx::Model &model,
                                            const std::vector<memx::KernelPoint> *needed = nullptr);

/// Profiles dock: the project's measurements (MeasurementTableModel), the coverage per GPU type of
/// the current cluster and model, imports (the public (Sailor) dataset folder, a Megatron-LM log of
/// the selected plan, CSV/JSON profile files), the minimal-set profiling plan of the current cluster
/// and model (memx::planMinimalSet, shown in a ProfilingJobModel; its job files written as
/// `memx profile plan --out` does) and running that plan on the virtual testbed (as
/// `memx profile run-simulated --jobs`).
///
/// Long work (parsing, planning, the testbed) runs in a worker thread (QtConcurrent) on copied
/// inputs, with a progress bar and a Cancel button; one task at a time. Whatever it produces for
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
    struct Task;
    using Work = std::function<void(Task &, const std::function<bool(size_t, size_t)> &)>;
    /// Runs `work` in a worker thread; then, unless it failed or was cancelled, `finish` on this
    /// thread (returns the message, or throws to report failure). Emits the kind's finished signal.
    void runTask(TaskKind kind, const QString &what, const QStringList &phases, Work work,
                 std::function<QString(Task &)> finish);
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
    std::shared_ptr<Task> mTask;
    bool mInteractive = true;
};

} // namespace memx::ui
