#include "memx/profiling/megatronlog.h"

#include "memx/profiling/storedvalues.h"
#include "memx/util/fileio.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>

namespace memx {

namespace {

constexpr const char *kIterationMarker = "elapsed time per iteration (ms):";
constexpr const char *kMemoryMarker = "memory (MB)";
constexpr double kMiB = 1024.0 * 1024.0; // Megatron divides bytes by 1024*1024 and calls it MB

/// Number right after `marker` in `line` (spaces skipped), nullopt when missing or unreadable.
std::optional<double> numberAfter(const std::string &line, const std::string &marker, size_t from = 0)
{
    const size_t at = line.find(marker, from);
    if (at == std::string::npos)
        return std::nullopt;
    size_t p = at + marker.size();
    while (p < line.size() && line[p] == ' ')
        ++p;
    size_t end = p;
    while (end < line.size()
           && (std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '.' || line[end] == 'e'
               || line[end] == 'E' || line[end] == '+' || line[end] == '-'))
        ++end;
    double v = 0;
    const auto [ptr, ec] = std::from_chars(line.data() + p, line.data() + end, v);
    if (ec != std::errc() || ptr != line.data() + end || end == p || !std::isfinite(v))
        return std::nullopt;
    // The number must end the field: next is end of line, a space or '|'.
    if (end < line.size() && line[end] != ' ' && line[end] != '|' && line[end] != '\r')
        return std::nullopt;
    return v;
}

std::string shortNumber(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

} // namespace

double MegatronLogSummary::meanIterationMs(int skip) const
{
    if (skip < 0 || static_cast<size_t>(skip) >= iterationTimesMs.size())
        return 0;
    const auto first = iterationTimesMs.begin() + skip;
    return std::accumulate(first, iterationTimesMs.end(), 0.0) / static_cast<double>(iterationTimesMs.end() - first);
}

std::optional<double> MegatronLogSummary::peakAllocatedBytes() const
{
    if (maxAllocatedBytesByRank.empty())
        return std::nullopt;
    double best = 0;
    for (const auto &[rank, bytes] : maxAllocatedBytesByRank)
        best = std::max(best, bytes);
    return best;
}

MegatronLogSummary parseMegatronLog(const std::string &text, const std::string &file)
{
    MegatronLogSummary out;
    Diagnostics diags(file);
    std::map<int, double> alloc, reserved;
    size_t pos = 0, lineNo = 0;
    while (pos < text.size()) {
        const size_t nl = text.find('\n', pos);
        const bool complete = nl != std::string::npos;
        std::string line = text.substr(pos, complete ? nl - pos : std::string::npos);
        pos = complete ? nl + 1 : text.size();
        ++lineNo;
        const std::string where = "line " + std::to_string(lineNo);
        auto problem = [&](const std::string &message) {
            if (complete)
                diags.error(where, message);
            else
                out.warnings.push_back({file, where, "truncated last line ignored (" + message + ")"});
        };
        if (!complete
            && (line.find(kIterationMarker) != std::string::npos || line.find(kMemoryMarker) != std::string::npos)) {
            // No newline at the end: the writer was cut off, and a number cut short still parses.
            out.warnings.push_back({file, where, "truncated last line ignored (no newline at the end of the file)"});
            continue;
        }
        if (line.find(kIterationMarker) != std::string::npos) {
            const auto ms = numberAfter(line, kIterationMarker);
            // At most what a project stores for a run (1e12 ms, ~32 years): sums and means stay finite.
            if (!ms || *ms <= 0 || *ms > kMaxStoredRunTimeMs) {
                problem("expected a positive number after \"elapsed time per iteration (ms):\"");
                continue;
            }
            int iteration = static_cast<int>(out.iterationNumbers.size()) + 1;
            // Converting a double outside int's range is undefined behaviour ("iteration 1e300").
            if (auto it = numberAfter(line, "iteration"); it && *it >= 0 && *it <= 2e9)
                iteration = static_cast<int>(*it);
            else {
                // " iteration       10/     500 |": the number is followed by '/'.
                const size_t at = line.find("iteration");
                const size_t slash = line.find('/', at);
                if (at != std::string::npos && slash != std::string::npos) {
                    const std::string n = line.substr(at + 9, slash - at - 9);
                    try {
                        iteration = std::stoi(n);
                    } catch (...) {
                    }
                }
            }
            if (!out.iterationNumbers.empty() && iteration <= out.iterationNumbers.back()) {
                // Iteration numbers start again: a restarted job appended to the same log. Only
                // the last run is averaged (its own warm-up is skipped), never a mix.
                out.warnings.push_back({file, where,
                                        "iteration numbers restart here (" + std::to_string(iteration) + " after "
                                            + std::to_string(out.iterationNumbers.back())
                                            + "): the log holds a restarted run; only the last run is used"});
                out.iterationTimesMs.clear();
                out.iterationNumbers.clear();
                alloc.clear();
                reserved.clear();
            }
            out.iterationTimesMs.push_back(*ms);
            out.iterationNumbers.push_back(iteration);
        } else if (line.find(kMemoryMarker) != std::string::npos && line.find("[Rank ") != std::string::npos) {
            // [Rank 0] (after 10 iterations) memory (MB) | allocated: ... | max allocated: ... | reserved: ... | max
            // reserved: ...
            // The rank from "[Rank N]" wherever it is: torchrun ("[default0]:", "[rank0]:") and
            // Slurm or logging timestamps put prefixes before it.
            const size_t rankAt = line.find("[Rank ");
            const size_t rankEnd = line.find(']', rankAt);
            const auto rank
                = numberAfter(line.substr(rankAt, rankEnd == std::string::npos ? 0 : rankEnd - rankAt) + " ", "[Rank");
            const auto maxAlloc = numberAfter(line, "| max allocated:");
            const auto maxRes = numberAfter(line, "| max reserved:");
            // Ranks must fit an int (UBSan, fuzz_megatron).
            if (!rank || !maxAlloc || !maxRes || *rank < 0 || *rank > 1e9 || *rank != std::floor(*rank)) {
                problem("expected \"[Rank N] (after N iterations) memory (MB) | allocated: X | max allocated: X | "
                        "reserved: X | max reserved: X\" with numbers");
                continue;
            }
            // Memory in MiB, within what a project stores once converted to bytes.
            const auto memoryField = [&](const char *name, double mb) {
                if (mb >= 0 && mb * kMiB <= kMaxStoredBytes)
                    return true;
                problem(std::string("field \"") + name + "\": expected MB from 0 to "
                        + std::to_string(static_cast<long long>(kMaxStoredBytes / kMiB)) + " (1e15 bytes), found "
                        + shortNumber(mb));
                return false;
            };
            if (!memoryField("max allocated", *maxAlloc) || !memoryField("max reserved", *maxRes))
                continue;
            const int r = static_cast<int>(*rank);
            alloc[r] = std::max(alloc[r], *maxAlloc * kMiB);
            reserved[r] = std::max(reserved[r], *maxRes * kMiB);
        }
    }
    diags.throwIfAny();
    if (out.iterationTimesMs.empty())
        throw LoadError(file, "",
                        "no iteration line (\"... elapsed time per iteration (ms): X ...\") found: is this a "
                        "Megatron-LM training log?");
    out.maxAllocatedBytesByRank.assign(alloc.begin(), alloc.end());
    out.maxReservedBytesByRank.assign(reserved.begin(), reserved.end());
    return out;
}

MeasuredRun importMegatronLog(const std::string &path, const Plan &plan, const Cluster &cluster, const Model &model,
                              const MegatronImportOptions &options)
{
    const MegatronLogSummary log = parseMegatronLog(readTextFile(path), path);
    if (options.warnings)
        options.warnings->insert(options.warnings->end(), log.warnings.begin(), log.warnings.end());
    if (options.skipIterations < 0 || static_cast<size_t>(options.skipIterations) >= log.iterationTimesMs.size())
        throw LoadError(path, "",
                        "the log has " + std::to_string(log.iterationTimesMs.size()) + " iteration line(s); skipping "
                            + std::to_string(options.skipIterations)
                            + " as warm-up leaves none to average (use a smaller skip count)");
    Diagnostics diags(path);
    validatePlan(plan, cluster, model, diags);
    if (!diags.empty()) {
        std::vector<Diagnostic> items;
        for (const Diagnostic &d : diags.items())
            items.push_back(
                {path, d.pointer, "the plan given for this log does not fit the cluster/model: " + d.message});
        throw LoadError(items);
    }
    MeasuredRun run;
    run.id = options.runId.empty() ? std::filesystem::path(path).filename().string() : options.runId;
    run.plan = plan;
    run.clusterName = cluster.name;
    run.cluster = cluster;
    run.modelId = model.id;
    run.iterationTimeMs = log.meanIterationMs(options.skipIterations);
    run.peakMemoryBytes = log.peakAllocatedBytes();
    run.memoryKind = MemoryKind::AllocatorMax;
    run.source = path;
    run.date = options.date;
    run.group = options.group;
    return run;
}

} // namespace memx
