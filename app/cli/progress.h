#pragma once

#include <chrono>
#include <csignal>
#include <cstddef>
#include <string>

namespace memx::cli {

/// The progress and cancellation of one long-running command: while it lives, Ctrl-C (SIGINT)
/// requests cancellation instead of killing the process, and, when stderr is a terminal, a
/// progress bar is redrawn (at most every 100 ms). Pass `callback()` to a core function taking a
/// progress callback: it returns false once Ctrl-C was pressed. The previous SIGINT handler is
/// restored on destruction. One instance at a time.
class CliProgress {
public:
    /// `unit`: what the counts count, e.g. "base configurations" or "steps".
    explicit CliProgress(std::string unit);
    ~CliProgress();
    CliProgress(const CliProgress &) = delete;
    CliProgress &operator=(const CliProgress &) = delete;

    /// Records progress (draws the bar); false when the user asked to cancel.
    bool operator()(size_t done, size_t total);
    /// A callable for core APIs (refers to this object).
    auto callback()
    {
        return [this](size_t done, size_t total) { return (*this)(done, total); };
    }
    bool interrupted() const;
    /// What the counts count from now on (a new phase of the work).
    void setUnit(std::string unit) { mUnit = std::move(unit); }
    /// Ends the bar's line (if one was drawn); called by the destructor too.
    void finish();

private:
    std::string mUnit;
    bool mBar = false;
    bool mDrawn = false;
    std::chrono::steady_clock::time_point mLastDraw;
    void (*mPrevious)(int) = SIG_DFL;
};

} // namespace memx::cli
