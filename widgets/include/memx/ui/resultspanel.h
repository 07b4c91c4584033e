#pragma once

#include "memx/engine/plannedsearch.h"
#include "memx/search/search.h"
#include "memx/ui/backgroundjob.h"
#include "memx/ui/planresults.h"
#include "memx/ui/resultsviewtypes.h"

#include <QWidget>

#include <memory>

class QCheckBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTabWidget;
class QTableView;
class QTextBrowser;
class QTimer;

namespace memx::ui {

class MemoryBarChart;
class ParetoChartView;
class PlanFilterProxy;
class PlanSelection;
class PlanTableModel;
class SearchJob;
class StageDiagram;

/// The results half of the workbench: a search toolbar (Run / Cancel, progress, counts, global
/// batch), the Pareto chart and the per-GPU memory bars side by side, and below them the ranked
/// plan table (sortable, filterable) next to the plan detail (stage diagram + time breakdown).
///
/// Searches are the core's planned search (memx::planSearch + memx::runPlannedSearch, what
/// `memx search --project` runs: the project's profiles, calibration and learned predictor, the
/// budget, the caches) in a SearchJob (worker thread); the panel keeps the finished SearchResult in
/// a PlanResults, so setWeights() re-ranks from cached metrics with the core objective without a
/// new search. One PlanSelection drives every view: clicking a table row or a Pareto point,
/// or a re-rank that changes the best plan, selects a plan everywhere. GUI thread only.
class ResultsPanel : public QWidget {
    Q_OBJECT
public:
    /// Delay between the last scheduleSearch() and the search start (edits come in bursts).
    static constexpr int DebounceMs = 400;

    explicit ResultsPanel(QWidget *parent = nullptr);
    ~ResultsPanel() override;

    /// The snapshot the next search runs on (cluster, model, options); copied. The profiles come
    /// from the project (setProject).
    void setRequest(const memx::SearchRequest &request);
    const memx::SearchRequest &request() const { return mRequest; }
    /// The project the next search uses (profiles, calibration, learned predictor; null: none) and
    /// the store holding its caches (the document's project data; null: no caches). The store is
    /// only read on this thread when a search starts (memx::copySearchCaches).
    void setProject(std::shared_ptr<const memx::SearchProject> project, const memx::Store *caches);
    const std::shared_ptr<const memx::SearchProject> &project() const { return mProject; }
    /// Starts a search of the current request now (superseding a running one). The global-batch
    /// field overrides the model's global batch when set.
    void runSearch();
    /// Starts a search DebounceMs after the last call (newer calls push it back).
    void scheduleSearch();
    void cancelSearch();
    bool isSearching() const;

    /// Re-ranks the cached results for `weights` (core objective); selects the new best plan when
    /// the best plan changes.
    void setWeights(const ObjectiveWeights &weights);
    ObjectiveWeights weights() const { return mResults.weights(); }

    PlanSelection *selection() const { return mSelection; }
    quint32 selectedPlan() const;
    /// Detail of the selected plan (empty when none).
    const PlanDetail &selectedDetail() const { return mDetail; }
    const PlanResults &results() const { return mResults; }

    SearchJob *job() const { return mJob; }
    ParetoChartView *paretoChart() const { return mPareto; }
    MemoryBarChart *memoryBars() const { return mBars; }
    StageDiagram *stageDiagram() const { return mStages; }
    PlanTableModel *tableModel() const { return mModel; }
    PlanFilterProxy *tableProxy() const { return mProxy; }
    QTableView *tableView() const { return mTable; }
    QTextBrowser *detailText() const { return mDetailText; }
    /// "Pipeline" (stage diagram) and "Time breakdown" (text) tabs of the plan detail.
    QTabWidget *detailTabs() const { return mDetailTabs; }
    QPushButton *exportButton() const { return mExport; }
    QSpinBox *globalBatchField() const { return mGlobalBatch; }
    QLabel *countsLabel() const { return mCounts; }

signals:
    /// A finished search's results are in every view (and the best plan is selected).
    void resultsShown();
    /// The user asked to export the selected plan.
    void exportRequested();
    /// A finished search updated the project's caches in its snapshot (outcome->caches): the
    /// owner of the project merges them back (memx::mergeSearchCaches).
    void searchCachesUpdated(std::shared_ptr<const memx::ui::SearchOutcome> outcome);
    void statusMessage(const QString &message);

private:
    /// A search result mapped to the views' values in a worker (PlanResults + its points).
    struct Prepared {
        ObjectiveWeights weights;
        PlanResults results;
        QVector<PlanPoint> points;
    };
    void onFinished();
    void applyResults(quint64 preparedId, Prepared &prepared);
    void resizeColumns();
    /// The search job's progress, endings and results into the toolbar and the views.
    void connectSearchJob();
    void showSelection(quint32 id);
    void refreshChart();
    void setSearching(bool on);

    memx::SearchRequest mRequest;
    std::shared_ptr<const memx::SearchProject> mProject;
    const memx::Store *mCacheSource = nullptr;
    PlanResults mResults;
    PlanDetail mDetail;
    PlanSelection *mSelection = nullptr;
    SearchJob *mJob = nullptr;
    QTimer *mDebounce = nullptr;
    QTimer *mChartRefresh = nullptr;
    /// Maps a finished result to the views' values in a worker; a newer result supersedes it.
    BackgroundJob<std::shared_ptr<Prepared>> *mPrepare = nullptr;
    bool mPredicting = false; // the running search is in its learned-prediction phase

    QPushButton *mRun = nullptr;
    QPushButton *mCancel = nullptr;
    QPushButton *mExport = nullptr;
    QProgressBar *mProgress = nullptr;
    QLabel *mCounts = nullptr;
    QSpinBox *mGlobalBatch = nullptr;
    ParetoChartView *mPareto = nullptr;
    MemoryBarChart *mBars = nullptr;
    StageDiagram *mStages = nullptr;
    PlanTableModel *mModel = nullptr;
    PlanFilterProxy *mProxy = nullptr;
    QTableView *mTable = nullptr;
    QLineEdit *mFilter = nullptr;
    QCheckBox *mParetoOnly = nullptr;
    QCheckBox *mHideOom = nullptr;
    QTextBrowser *mDetailText = nullptr;
    QLabel *mDetailTitle = nullptr;
    QTabWidget *mDetailTabs = nullptr;
};

} // namespace memx::ui
