#pragma once

// The 1F1B pipeline schedule as events: which stage runs which micro-batch's forward or backward
// when. The one scheduler of the project: the virtual testbed's makespan (simulateOneFOneBMs) and
// the workbench's timeline both come from oneFOneBSchedule.

#include <cstddef>
#include <vector>

namespace memx {

struct PlanEstimate;

/// One forward or backward of one micro-batch on one stage, ms from the start of the iteration.
struct PipelineOp {
    enum class Kind { Forward, Backward };
    int stage = 0;
    int microBatch = 0;
    Kind kind = Kind::Forward;
    double startMs = 0, endMs = 0;
    /// The leading part of a backward that re-runs the forward (activation recomputation); 0 for
    /// forwards and when the times came without a recompute share.
    double recomputeMs = 0;
    double durationMs() const { return endMs - startMs; }
};

/// A 1F1B iteration: stage i runs min(p - 1 - i, m) warm-up forwards, then one forward and one
/// backward in turn, then the remaining backwards. A forward waits for the previous stage's
/// forward of the same micro-batch plus the send p2pMs[i - 1]; a backward for the next stage's
/// backward plus p2pMs[i]. Sends are latency only: they do not occupy the stage.
struct PipelineSchedule {
    /// 2 x stages x microBatches operations, grouped by stage and in each stage's execution order
    /// (so in time order): stage i's are ops[i * 2m, (i + 1) * 2m). See opIndex.
    std::vector<PipelineOp> ops;
    std::vector<double> p2pMs; ///< send stage i -> i + 1 (stages - 1 entries, zeros when none were given)
    double makespanMs = 0; ///< end of the last operation
    int stages = 0, microBatches = 0;

    /// Index into ops of `stage`'s forward or backward of `microBatch`; -1 when out of range.
    int opIndex(int stage, int microBatch, PipelineOp::Kind kind) const;
    /// Time `stage` computes (sum of its operations), ms.
    double busyMs(int stage) const;
    /// Time `stage` waits inside the iteration (its bubble): makespan - busy, ms.
    double idleMs(int stage) const;
    /// Idle share of all stages' time: sum of idle / (stages x makespan); 0 when empty.
    double bubbleFraction() const;
};

/// Largest stages x micro-batches a schedule is built for (2 operations each, ~40 bytes per
/// operation: 320 MB at the limit); larger inputs are refused with std::invalid_argument.
inline constexpr std::size_t kMaxPipelineCells = 4'000'000;

/// The 1F1B schedule of per-stage per-micro-batch forward / backward times (ms) and the sends
/// p2pMs[i] from stage i to i + 1 (stages - 1 entries, or empty for none). `opNoise`, when not
/// empty, scales the operations' times: the n-th operation the event loop runs takes
/// opNoise[n % size] times its stage's time (the virtual testbed's kernel jitter). Throws
/// std::invalid_argument naming the problem: mismatched or empty sizes, microBatches < 1,
/// negative or non-finite times or factors, stages x microBatches over kMaxPipelineCells.
PipelineSchedule oneFOneBSchedule(const std::vector<double> &forwardMs, const std::vector<double> &backwardMs,
                                  const std::vector<double> &p2pMs, int microBatches,
                                  const std::vector<double> &opNoise = {});

/// The schedule of an analytic estimate's stages (per micro-batch): forward = forwardMs + half
/// of the TP, CP, MoE and FSDP communication (the split the DP-overlap model uses), backward =
/// the rest of stepMs (backward + recompute + the other half), so forward + backward = stepMs;
/// every backward starts with the stage's recomputeMs; sends = p2pMs. Interleaved plans are
/// drawn as the plain 1F1B of the same stage times (the estimate has no chunk order). Its
/// makespan may differ from estimate.pipelineMs, whose sends block the stages
/// (pipelineMakespanMs). Throws std::invalid_argument as above (e.g. no stages).
PipelineSchedule oneFOneBSchedule(const PlanEstimate &estimate);

} // namespace memx
