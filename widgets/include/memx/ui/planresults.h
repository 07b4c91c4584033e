#pragma once

#include "memx/cost/costmodel.h"
#include "memx/search/objective.h"
#include "memx/ui/resultsviewtypes.h"
#include "memx/ui/searchjob.h"

#include <QHash>
#include <QString>
#include <QVector>

#include <memory>
#include <vector>

namespace memx::ui {

/// Everything the detail views show about one plan: the plan, the cost model's estimate and
/// their view types.
struct PlanDetail {
    quint32 id = 0;
    memx::Plan plan;
    memx::PlanEstimate estimate;
    QVector<GpuMemoryBar> bars; ///< every GPU of the cluster (idle ones with stage -1)
    QVector<StageInfo> stages;
    QString html; ///< per-stage time breakdown and totals
    QString launcher; ///< as PlanPoint::launcher
    QString idle; ///< as PlanPoint::idle
    memx::PlanFigures figures; ///< the result's figures of the plan (learned ones with a predictor)
    /// With a learned predictor: why the plan lies outside its training runs (empty inside).
    QString extrapolationReason;
    /// With a learned predictor: "Learned: T ... ± ..., M ... ± ..., risk of OOM, EXTRAPOLATING" (rich text).
    QString learnedLine;
};

/// Maps a SearchOutcome to the results views, with the CORE objective (memx::logScores /
/// memx::rank), so the GUI ranks exactly like `memx search`.
///
/// Plan ids are result indices + 1 (0 means "no plan"); they are stable for one outcome.
/// The views do not get all of a large result (768,900 plans for the 20-GPU sample): the shown set
/// is the whole Pareto front (strided down to MaxFrontShown if larger), the best TopShown plans
/// for the current weights, a strided sample of SampleShown plans (the cloud's shape), and the
/// plan with the largest T, M and B. The latter makes the per-metric maxima of the shown set equal
/// to those of the whole result, so logScores over the shown set equal those over the result and
/// ranks 1..TopShown are the global ranks. When weights change, plans that enter the global top
/// are added (the set only grows). Not thread-safe; GUI thread.
class PlanResults {
public:
    static constexpr size_t TopShown = 1000;
    static constexpr size_t SampleShown = 6000;
    static constexpr size_t MaxFrontShown = 20000;
    // "Risk of OOM" is core's memoryVerdict(utilisation, CostOptions::memoryUncertainty).

    /// Takes a finished outcome; builds the shown set for `weights`.
    void setOutcome(std::shared_ptr<const SearchOutcome> outcome, const ObjectiveWeights &weights);
    void clear();
    bool isEmpty() const { return !mOutcome || mOutcome->result.size() == 0; }
    /// The figures are the learned predictor's (spreads, risk of OOM, extrapolation per plan).
    bool isLearned() const { return !isEmpty() && mOutcome->result.timeSpread.size() == mOutcome->result.size(); }
    const std::shared_ptr<const SearchOutcome> &outcome() const { return mOutcome; }

    /// Re-ranks for new weights from the cached metrics (no search). Returns true when the shown
    /// set grew (views need new points), false when only scores changed.
    bool setWeights(const ObjectiveWeights &weights);
    ObjectiveWeights weights() const { return mWeights; }

    /// Shown plans as view points (score = exp(core log score), lower is better).
    QVector<PlanPoint> points() const;
    /// Every plan on the outcome's Pareto front (also beyond MaxFrontShown), scored with the
    /// current weights on the whole result's scale, best score first.
    QVector<PlanPoint> frontPoints() const;
    /// Scores of points(), same order.
    QVector<double> scores() const;
    /// Result indices of the shown plans.
    const std::vector<uint32_t> &shownIndices() const { return mShown; }
    /// Id of the best plan for the current weights (memx::rank(..., 1)); 0 when empty.
    quint32 topPlanId() const { return mTopId; }

    /// Materialises and estimates plan `id` (0 / unknown: std::nullopt... returns an empty detail).
    PlanDetail detail(quint32 id) const;
    /// "target flagscale · 4,886 valid of 11,318 in 0.43 s" style counts of the outcome.
    QString countsText() const;
    /// The target and why, the planned search's notes and, when nothing fits, its advice: one
    /// line each.
    QStringList notesText() const;

    static quint32 idOf(uint32_t index) { return index + 1; }
    static uint32_t indexOf(quint32 id) { return id - 1; }

private:
    void rescore();
    PlanPoint pointOf(uint32_t index, double logScore, bool onFront) const;
    QString summaryOf(uint32_t index) const;
    QString launcherOf(uint32_t index) const;
    void describeLearned(PlanDetail &detail) const;
    QString learnedHtml(const PlanDetail &detail) const;

    std::shared_ptr<const SearchOutcome> mOutcome;
    ObjectiveWeights mWeights;
    std::vector<uint32_t> mShown; // ascending result indices
    std::vector<double> mLogScores; // parallel to mShown
    std::vector<char> mOnFront; // parallel to mShown
    quint32 mTopId = 0;
    mutable QHash<uint32_t, QString> mSummaries;
    mutable QHash<uint32_t, QString> mLaunchers; // target "any" only: launchersOf, per plan
};

} // namespace memx::ui
