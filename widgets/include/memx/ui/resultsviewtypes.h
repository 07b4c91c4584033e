#pragma once

#include "memx/search/objective.h"

#include <QColor>
#include <QList>
#include <QMetaType>
#include <QString>
#include <QVector>

namespace memx::ui {

/// The three objectives a plan is ranked by.
/// - Time: predicted time of one training iteration, in milliseconds (lower is better).
/// - Memory: peak memory fraction, the highest per-GPU used/capacity ratio (0..1+, lower is better).
/// - Balance: imbalance, the coefficient of variation (stddev / mean) of per-GPU utilisation (lower is better).
enum class Metric { Time, Memory, Balance };

/// Short axis/column label with its unit, e.g. "Time per iteration (ms)".
QString metricLabel(Metric metric);
/// Value of `metric` formatted with its unit: "123.4 ms" (from 10 s on "12.35 s"), "87.5 %", "0.123 CV".
QString formatMetric(Metric metric, double value);

/// One evaluated plan as the results views show it. Filled by the integrator from search results.
struct PlanPoint {
    quint32 id = 0; ///< Stable plan id; used by every view to select "the same" plan.
    double timeMs = 0.0; ///< T: predicted iteration time in milliseconds.
    double peakMemoryFraction = 0.0; ///< M: highest per-GPU used/capacity (1.0 = full; > 1 = OOM).
    double imbalance = 0.0; ///< B: coefficient of variation of per-GPU utilisation (dimensionless).
    double score = 0.0; ///< Weighted objective (lower is better); rank 1 has the lowest score.
    bool onFront = false; ///< True if no other plan is at least as good in T, M and B and better in one.
    bool oom = false; ///< Some GPU exceeds its capacity.
    /// Some GPU is within the safety margin of its capacity (analytic), or, for learned figures,
    /// the predicted peak plus its spread reaches capacity (memx::isOomRisk).
    bool riskOfOom = false;
    QString summary; ///< One-line human-readable plan description (Plan::summary()).
    /// What launches it: the search's target ("megatron", "flagscale"), under target "any" the
    /// launchers that accept it or "no launcher".
    QString launcher;
    QString idle; ///< GPUs it leaves idle, e.g. "idle: mi250x (8 GPUs)"; empty when it uses every GPU.
    /// The figures are the learned predictor's: the spreads and the extrapolation flag are set.
    bool learned = false;
    double timeSpread = 0.0; ///< Relative one-sigma spread of T (0.03 = 3 %).
    double memorySpread = 0.0; ///< Relative one-sigma spread of the peak memory.
    bool extrapolating = false; ///< Outside the training runs' envelope (spreads widened).

    /// Value of one metric (ms, fraction, CV).
    double metric(Metric m) const
    {
        switch (m) {
        case Metric::Time:
            return timeMs;
        case Metric::Memory:
            return peakMemoryFraction;
        case Metric::Balance:
            return imbalance;
        }
        return 0.0;
    }
};

/// Memory use of one GPU under one plan, split by component. All sizes in bytes.
struct GpuMemoryBar {
    QString node; ///< Node name, e.g. "a100-0".
    int gpuIndex = 0; ///< GPU index within the node.
    QString device; ///< Catalogue device id/name, e.g. "A100-40".
    QString vendor; ///< "nvidia", "amd", "intel", ... (lower case).
    int stage = -1; ///< Pipeline stage served by this GPU, -1 if idle.
    double paramsBytes = 0.0; ///< Model parameters (weights) resident on this GPU.
    double gradsBytes = 0.0; ///< Gradients.
    double optimizerBytes = 0.0; ///< Optimizer state (e.g. Adam moments, fp32 master weights).
    double activationBytes = 0.0; ///< Stored activations of in-flight micro-batches.
    double overheadBytes = 0.0; ///< Framework/runtime overhead (CUDA/ROCm context, buffers, fragmentation).
    double capacityBytes = 0.0; ///< Usable device memory.
    bool oom = false; ///< usedBytes() > capacityBytes.
    bool riskOfOom = false; ///< Close to capacity (within the planner's safety margin).

    /// Sum of the five components, in bytes.
    double usedBytes() const { return paramsBytes + gradsBytes + optimizerBytes + activationBytes + overheadBytes; }
    /// usedBytes() / capacityBytes (0 if the capacity is unknown).
    double utilisation() const { return capacityBytes > 0.0 ? usedBytes() / capacityBytes : 0.0; }
};

/// One data-parallel replica of a pipeline stage.
struct ReplicaInfo {
    QString node; ///< Node name.
    QList<int> gpus; ///< GPU indices within the node (size = tp x the plan's context-parallel size).
    QString device; ///< Catalogue device name.
    QString vendor; ///< Lower-case vendor ("nvidia", "amd", ...).
    int tp = 1; ///< Tensor-parallel degree.
    int microBatch = 1; ///< Micro-batch size (samples) of this replica.
};

/// One pipeline stage of a plan.
struct StageInfo {
    int index = 0; ///< 0-based stage index.
    int firstLayer = 0; ///< First transformer layer (0-based).
    int layerCount = 0; ///< Number of transformer layers.
    QString recompute; ///< "none", "selective" or "full" (free text is shown as is).
    QList<ReplicaInfo> replicas; ///< DP replicas; dp = replicas.size().
    int contextParallel = 1; ///< the plan's CP size: each replica is TP x CP GPUs
    int virtualStages = 1; ///< the plan's model chunks per pipeline rank (interleaved 1F1B)
    double computeMs = 0.0; ///< Compute time of the stage per iteration, milliseconds.
    double commMs = 0.0; ///< Communication time of the stage per iteration, milliseconds.
};

/// Re-scores `plans` from their cached metrics with the core objective (memx::logScores over
/// these plans: score = T'^wT x M'^wM x B'^wB, X' = X / max X over `plans`, lower is better), so a
/// slider drag re-ranks without a new search and views rank exactly like `memx search`.
void scorePlans(QVector<PlanPoint> &plans, const ObjectiveWeights &weights);

/// Views show times in seconds when the slowest plan shown takes this long or longer (ms).
inline constexpr double kTimeSecondsFromMs = 10000.0;
/// True when the slowest of `plans` takes kTimeSecondsFromMs or more: the chart's time axis and
/// the table's time column are then in seconds (one unit for both).
bool timeInSeconds(const QVector<PlanPoint> &plans);

/// Coefficient of variation (population stddev / mean) of the utilisations of the bars the plan
/// uses (stage >= 0; idle GPUs are left out, as in the cost model's B); 0 for < 2 such bars or mean 0.
double utilisationCv(const QVector<GpuMemoryBar> &bars);

/// Vendor colour used by every results view ("nvidia" green, "amd" red, "intel" blue, others grey).
QColor vendorColor(const QString &vendor);

} // namespace memx::ui

Q_DECLARE_METATYPE(memx::ui::Metric)
