#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>

namespace memx {

/// Progress of long work, the one callback type of the core: `done` of `total` units (what a unit
/// is, each function says; total 0 means "not known yet"). Returning false asks the work to stop.
/// An empty function never stops anything.
///
/// The one cancellation convention: work whose partial output is still useful returns it marked
/// (SearchResult::cancelled, CompareReport::cancelled, ScalePoint lists without the cancelled
/// size); every other function throws Cancelled and leaves its outputs (a store, files) unchanged.
using ProgressFn = std::function<bool(std::size_t done, std::size_t total)>;

/// Thrown by work that a ProgressFn stopped and that has no partial result to return. what() is
/// "cancelled".
class Cancelled : public std::runtime_error {
public:
    Cancelled()
        : std::runtime_error("cancelled")
    {
    }
};

/// Calls `progress` (when set) and throws Cancelled when it returns false.
inline void reportOrThrow(const ProgressFn &progress, std::size_t done, std::size_t total)
{
    if (progress && !progress(done, total))
        throw Cancelled();
}

/// A ProgressFn for one part of a longer job: (done, total) of the part become
/// (offset + done * span / total) of `range` on `outer`. For jobs of several phases reported as
/// one bar (e.g. thousandths).
inline ProgressFn subProgress(const ProgressFn &outer, std::size_t offset, std::size_t span, std::size_t range)
{
    if (!outer)
        return {};
    return [outer, offset, span, range](std::size_t done, std::size_t total) {
        const std::size_t part = total ? static_cast<std::size_t>(static_cast<double>(span) * done / total) : 0;
        return outer(offset + (part < span ? part : span), range);
    };
}

} // namespace memx
