#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"
#include "memx/profile/layerprofile.h"
#include "memx/profile/measuredrun.h"

#include <QAbstractTableModel>
#include <QWidget>

#include <optional>
#include <vector>

class QLabel;
class QProgressBar;
class QPushButton;
class QTableView;
class QTextBrowser;

namespace memx {
class Store;
}

namespace memx::ui {

class ClusterDocument;

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
/// cells the search uses are measured, interpolated (stored, or interpolable from measured
/// neighbours), or left to the analytic cost model.
struct DeviceCoverage {
    std::string device;
    std::vector<int> tps; ///< TP degrees the search tries on this device (<= GPUs per node)
    std::vector<int> microBatches;
    /// cells[t][b]: 'M' measured, 'I' interpolated, '-' analytic estimate
    std::vector<std::vector<char>> cells;
    int count(char status) const;
};
/// Coverage of every device type of `cluster` for `model` (its id and sequence length) by `profiles`.
std::vector<DeviceCoverage> profileCoverage(const memx::ProfileSet &profiles, const memx::Cluster &cluster,
                                            const memx::Model &model);

/// Profiles dock: the project's measurements (MeasurementTableModel), the coverage per GPU type of
/// the current cluster and model, and imports: the public (Sailor) dataset folder, a Megatron-LM
/// log of the selected plan, CSV/JSON profile files. Parsing runs in a worker thread
/// (QtConcurrent) with a progress bar; the parsed batch is written into the document's project data
/// in one transaction (all or nothing). GUI thread only.
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
    bool isImporting() const;

    MeasurementTableModel *model() const { return mModel; }
    QTableView *view() const { return mView; }
    QString coverageHtml() const;

signals:
    /// An import finished: `ok` false with `message` saying why (nothing was written then).
    void importFinished(bool ok, const QString &message);

private:
    void refresh();
    template<typename Work> void runImport(const QString &what, Work work);

    ClusterDocument *mDocument;
    MeasurementTableModel *mModel = nullptr;
    QTableView *mView = nullptr;
    QTextBrowser *mCoverage = nullptr;
    QLabel *mSummary = nullptr;
    QProgressBar *mProgress = nullptr;
    QPushButton *mSailor = nullptr;
    QPushButton *mLog = nullptr;
    QPushButton *mFiles = nullptr;
    std::optional<memx::Plan> mPlan;
    struct Import;
    std::shared_ptr<Import> mImport;
};

} // namespace memx::ui
