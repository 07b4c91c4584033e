#pragma once

#include "memx/engine/plannedsearch.h"
#include "memx/search/search.h"
#include "memx/ui/backgroundjob.h"
#include "memx/ui/planresults.h"
#include "memx/ui/resultsviewtypes.h"
#include "memx/ui/searchspacepanel.h"

#include <QElapsedTimer>
#include <QPointer>
#include <QSet>
#include <QWidget>

#include <memory>
#include <optional>

class QCheckBox;
class QComboBox;
class QDialog;
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
class QToolButton;
class QVBoxLayout;

namespace memx::ui {

class MemoryBarChart;
class ParetoChartView;
class PlanFilterProxy;
class PlanSelection;
class PlanTableModel;
class SearchJob;
class StageDiagram;
class PipelineTimeline;
class PlanComparisonView;

/// The results half of the workbench: a search toolbar (Run / Cancel, progress, counts, launch
/// target, global batch), the planned search's notes (target, idle groups, advice), the Pareto chart and the per-GPU
/// memory bars side by side, and below them the ranked plan table (sortable, filterable) next to the plan detail (stage
/// diagram + time breakdown).
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
    /// What Run Search would search now: the request with the panel's batch, DP overlap, FSDP,
    /// FP8 and launch-target settings (the comparison dialog compares on the same); `options`,
    /// when given, gets the planned search's options of the Search Space dock (the budget).
    memx::PlannedSearchRequest currentRequest(memx::PlannedSearchOptions *options = nullptr) const;
    /// The project the next search uses (profiles, calibration, learned predictor; null: none) and
    /// the store holding its caches (the document's project data; null: no caches). The store is
    /// only read on this thread when a search starts (memx::copySearchCaches).
    void setProject(std::shared_ptr<const memx::SearchProject> project, const memx::Store *caches);
    const std::shared_ptr<const memx::SearchProject> &project() const { return mProject; }
    /// The search-space dimensions and the budget of the next searches (the Search Space dock).
    void setSpaceSettings(const SearchSpaceSettings &settings);
    const SearchSpaceSettings &spaceSettings() const { return mSpace; }
    /// Starts a planned search of the current request now (superseding a running one): the
    /// target selector's target (or the cluster's default), the global-batch field's batch when
    /// set, and the cluster of the last finished search as the what-if baseline (its plans, with
    /// added nodes idle, are searched again and reused from the job's memo).
    void runSearch();
    /// Starts a search DebounceMs after the last call (newer calls push it back).
    void scheduleSearch();
    void cancelSearch();
    /// A search is scheduled, running, or its result is not yet shown (resultsShown follows).
    bool isSearching() const;
    /// Cancels any search and empties every view (plans, chart, bars, detail; Export off): what
    /// File > New and an empty cluster show.
    void clearResults();
    /// The plans shown are of an earlier cluster, model or search setting (a search of the new
    /// one is pending, running, was cancelled or failed): the counts line says so and Export is
    /// off until the new results arrive.
    bool isStale() const { return mStale; }

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
    PipelineTimeline *timeline() const { return mTimeline; }
    PlanTableModel *tableModel() const { return mModel; }
    PlanFilterProxy *tableProxy() const { return mProxy; }
    QTableView *tableView() const { return mTable; }
    /// The table header's context menu: one checkable action per column but the plan summary
    /// (unchecking hides it; the learned spread and flags columns only exist for a learned result).
    /// The caller owns the menu.
    QMenu *createColumnMenu(QWidget *parent = nullptr);
    /// Shows or hides a plan table column (the header menu's choice, kept across results).
    void setColumnShown(int column, bool shown);
    QTextBrowser *detailText() const { return mDetailText; }
    /// "Pipeline" (stage diagram) and "Time breakdown" (text) tabs of the plan detail.
    QTabWidget *detailTabs() const { return mDetailTabs; }
    QPushButton *exportButton() const { return mExport; }
    /// "CSV" menu button: the plan table as shown, or the whole Pareto front (off while stale).
    QToolButton *csvButton() const { return mCsv; }
    /// The table's rows as shown (filters and sort order applied) as CSV (memx::ui::plansCsv, with ranks).
    QString tableCsv() const;
    /// Every plan on the result's Pareto front as CSV (PlanResults::frontPoints), best score first.
    QString frontCsv() const;
    /// Writes tableCsv() or frontCsv() to `path` (all or nothing); false with `error` on failure.
    bool saveCsv(bool front, const QString &path, QString *error) const;
    /// "Compare" button: on while 2 to PlanComparisonView::MaxPlans table rows are selected
    /// (Ctrl/Shift+click) and the results are fresh.
    QPushButton *compareButton() const { return mCompare; }
    /// Ids of the plans selected in the table, in table order.
    QVector<quint32> selectedPlans() const;
    /// Opens (or refreshes) the comparison window with the selected plans side by side; false
    /// when fewer than 2 or more than PlanComparisonView::MaxPlans are selected.
    bool compareSelected();
    /// The comparison window's view (null when none is open).
    PlanComparisonView *comparison() const;
    QSpinBox *globalBatchField() const { return mGlobalBatch; }
    /// Launch target: 0 from the cluster, 1 Megatron-LM, 2 FlagScale, 3 any (no launcher).
    QComboBox *targetSelector() const { return mTarget; }
    QLabel *countsLabel() const { return mCounts; }
    /// The target and why, the planned search's notes, and why nothing fits (with what does):
    /// collapsed to the first note and a "+N more" link (all of them in its tooltip), or expanded.
    QLabel *notesLabel() const { return mNotes; }
    const QStringList &notes() const { return mNoteLines; }
    bool notesExpanded() const { return mNotesExpanded; }
    void setNotesExpanded(bool expanded);
    /// "Rank r (plan #n) ...": n is the core's configuration index, as in exports ("search #n").
    QLabel *detailTitle() const { return mDetailTitle; }

    /// Time left of a phase `fraction` done after `elapsedMs` ("~12 s left"; "" while too early
    /// to tell: under 5 % or 0.5 s).
    static QString etaText(double fraction, qint64 elapsedMs);

signals:
    /// A finished search's results are in every view (and the best plan is selected).
    void resultsShown();
    /// The user asked to export the selected plan.
    void exportRequested();
    /// A finished search updated the project's caches in its snapshot (outcome->caches): the
    /// owner of the project merges them back (memx::mergeSearchCaches).
    void searchCachesUpdated(std::shared_ptr<const memx::ui::SearchOutcome> outcome);
    void statusMessage(const QString &message);
    /// Whether compareSelected() can run now (the selection or the results changed).
    void compareAvailable(bool available);
    /// A search was planned: how its space was narrowed to `budget` ("" when it fit).
    void spacePlanned(const QString &narrowing, quint64 budget);

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
    QVBoxLayout *createToolbar();
    QWidget *createCharts();
    QWidget *createTable();
    QWidget *createDetail();
    void connectViews();
    void connectSearchJob();
    void showSelection(quint32 id);
    void refreshChart();
    void setSearching(bool on);
    /// Marks the shown results stale (isStale()) or fresh; updates the counts line and Export.
    void setStale(bool on);
    void saveCsvInteractive(bool front);
    void updateCompareButton();
    void setNotes(const QStringList &lines);
    void showNotes();

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    memx::SearchRequest mRequest;
    /// The document's cluster of the running search and of the last finished one (the what-if baseline).
    std::optional<memx::Cluster> mRunningCluster, mLastCluster;
    std::shared_ptr<const memx::SearchProject> mProject;
    const memx::Store *mCacheSource = nullptr;
    PlanResults mResults;
    bool mStale = false;
    bool mShowing = false; // applyResults ran; the selection and chart follow (resultsShown)
    SearchSpaceSettings mSpace;
    QElapsedTimer mPhaseClock; ///< since the running phase (search / prediction) started: the ETA
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
    QToolButton *mCsv = nullptr;
    QPushButton *mCompare = nullptr;
    QPointer<QDialog> mCompareDialog;
    PlanComparisonView *mComparison = nullptr; // in mCompareDialog
    QProgressBar *mProgress = nullptr;
    QLabel *mCounts = nullptr;
    QLabel *mNotes = nullptr;
    QStringList mNoteLines;
    bool mNotesExpanded = false;
    QSpinBox *mGlobalBatch = nullptr;
    QComboBox *mTarget = nullptr;
    QCheckBox *mOverlapDp = nullptr; ///< SearchSpaceOptions::overlapDataParallel
    QCheckBox *mFsdp = nullptr; ///< adds Megatron-FSDP's levels to SearchSpaceOptions::dpSharding
    QComboBox *mFp8 = nullptr; ///< SearchSpaceOptions::fp8: off, hybrid, e4m3
    ParetoChartView *mPareto = nullptr;
    MemoryBarChart *mBars = nullptr;
    StageDiagram *mStages = nullptr;
    PipelineTimeline *mTimeline = nullptr;
    PlanTableModel *mModel = nullptr;
    PlanFilterProxy *mProxy = nullptr;
    QTableView *mTable = nullptr;
    QSet<int> mHiddenColumns; // the user's choice in the header menu
    QLineEdit *mFilter = nullptr;
    QCheckBox *mParetoOnly = nullptr;
    QCheckBox *mHideOom = nullptr;
    QTextBrowser *mDetailText = nullptr;
    QLabel *mDetailTitle = nullptr;
    QTabWidget *mDetailTabs = nullptr;
};

} // namespace memx::ui
