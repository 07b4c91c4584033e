#pragma once

#include "memx/engine/plannedcompare.h"
#include "memx/engine/plannedsearch.h"
#include "memx/evaluation/compare.h"
#include "memx/ui/backgroundjob.h"

#include <QDialog>

#include <memory>
#include <optional>

class QChart;
class QChartView;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace memx::ui {

/// Compares MemX with the engine's baselines and the published planners (Metis, AMP, Sailor,
/// Galvatron; memx::runCompare, what `memx compare` runs) on the workbench's current cluster,
/// model and search space: one row per method (its own prediction, MemX's estimate, the virtual
/// testbed's measurement, Top-1 under the time and memory-balance rankings, regret, search cost,
/// plan or refusal), and the ground-truth candidates on a measured time x peak-memory chart with
/// every method's pick marked. Runs in the background with progress and Cancel; Save JSON writes
/// the memx.compare/1 report. GUI thread only.
class CompareDialog : public QDialog {
    Q_OBJECT
public:
    /// `request`: what Run Search would search (ResultsPanel::currentRequest); `weights`: MemX's.
    CompareDialog(memx::PlannedSearchRequest request, memx::ObjectiveWeights weights,
                  std::shared_ptr<const memx::SearchProject> project, QWidget *parent = nullptr);
    ~CompareDialog() override;

    /// Starts the comparison (cancels a running one).
    void run();
    void cancel();
    bool isRunning() const;
    /// The last finished report (nullopt before the first or after a failure).
    const std::optional<memx::CompareReport> &report() const { return mReport; }
    QTableWidget *table() const { return mTable; }
    QChart *chart() const { return mChart; }
    QString statusText() const;

signals:
    void finished(bool ok);

private:
    void showReport();
    void fillChart();
    void addParetoFront(const memx::GroundTruth &truth);
    void saveJson();

    memx::PlannedSearchRequest mPlanned;
    memx::CompareRequest mRequest;
    std::shared_ptr<const memx::SearchProject> mProject;
    std::optional<memx::CompareReport> mReport;
    BackgroundJob<memx::CompareReport> *mJob = nullptr;
    QLabel *mHeading = nullptr;
    QLabel *mStatus = nullptr;
    QPlainTextEdit *mNotes = nullptr;
    QProgressBar *mProgress = nullptr;
    QPushButton *mRun = nullptr;
    QPushButton *mCancel = nullptr;
    QPushButton *mSave = nullptr;
    QTableWidget *mTable = nullptr;
    QChart *mChart = nullptr;
    QChartView *mChartView = nullptr;
};

} // namespace memx::ui
