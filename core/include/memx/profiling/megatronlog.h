#pragma once

#include "memx/cluster/cluster.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"
#include "memx/profile/measuredrun.h"
#include "memx/util/diagnostic.h"

#include <optional>
#include <string>
#include <vector>

namespace memx {

/// What a Megatron-LM training log says about a run.
struct MegatronLogSummary {
    /// "elapsed time per iteration (ms)" of every iteration line, in order (each line is the
    /// mean over Megatron's --log-interval iterations).
    std::vector<double> iterationTimesMs;
    std::vector<int> iterationNumbers; ///< the "iteration N/" of each line
    /// Per rank: the largest "max allocated" and "max reserved" reported, bytes (MB x 2^20).
    std::vector<std::pair<int, double>> maxAllocatedBytesByRank;
    std::vector<std::pair<int, double>> maxReservedBytesByRank;
    std::vector<Diagnostic> warnings; ///< e.g. a truncated last line that was ignored

    /// Mean of iterationTimesMs after skipping the first `skip` lines (warm-up).
    double meanIterationMs(int skip) const;
    /// Max over ranks of "max allocated", bytes; nullopt when the log has no memory report.
    std::optional<double> peakAllocatedBytes() const;
};

/// Parses a Megatron-LM log. Lines that are neither iteration nor memory-report lines are
/// ignored; a recognised line with an unreadable number is an error naming file and line,
/// except a truncated last line (no trailing newline), which becomes a warning.
/// Throws LoadError when the log has no iteration line.
MegatronLogSummary parseMegatronLog(const std::string &text, const std::string &file);

struct MegatronImportOptions {
    int skipIterations = 1; ///< iteration lines skipped as warm-up before averaging
    std::string runId; ///< default: the log's file name
    std::string group; ///< hardware group label
    /// Receives the log's warnings (truncated last line, restarted run); not owned, may be null.
    std::vector<Diagnostic> *warnings = nullptr;
    std::string date;
};

/// Reads a log and builds the MeasuredRun of `plan` on `cluster` (validated against `model`):
/// iteration time = meanIterationMs(skip), peak memory = max over ranks of "max allocated"
/// (MemoryKind::AllocatorMax). Throws LoadError when the log has too few iterations or the plan
/// does not fit the cluster/model.
MeasuredRun importMegatronLog(const std::string &path, const Plan &plan, const Cluster &cluster, const Model &model,
                              const MegatronImportOptions &options = {});

} // namespace memx
