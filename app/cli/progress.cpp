#include "progress.h"
#include "terminal.h"

#include "command.h"

#include <algorithm>
#include <atomic>
#include <iostream>

namespace memx::cli {

namespace {

std::atomic<bool> gInterrupted {false};

extern "C" void onInterrupt(int)
{
    gInterrupted = true;
}

} // namespace

CliProgress::CliProgress(std::string unit)
    : mUnit(std::move(unit))
    , mBar(stderrIsTerminal())
    , mLastDraw(std::chrono::steady_clock::now() - std::chrono::seconds(1))
{
    gInterrupted = false;
    mPrevious = std::signal(SIGINT, onInterrupt);
    if (mPrevious == SIG_ERR)
        mPrevious = SIG_DFL;
}

CliProgress::~CliProgress()
{
    finish();
    std::signal(SIGINT, mPrevious);
}

bool CliProgress::operator()(size_t done, size_t total)
{
    if (mBar) {
        const auto now = std::chrono::steady_clock::now();
        if (now - mLastDraw > std::chrono::milliseconds(100) || (total > 0 && done == total)) {
            mLastDraw = now;
            const int width = 40;
            // (0, 0): the work is still being set up - an empty bar, not a full one.
            const int filled = total ? static_cast<int>(width * static_cast<double>(std::min(done, total)) / total) : 0;
            rawStderr() << "\r[" << std::string(static_cast<size_t>(filled), '#')
                        << std::string(static_cast<size_t>(width - filled), ' ') << "] " << done << "/" << total << " "
                        << mUnit << std::flush;
            mDrawn = true;
        }
    }
    return !gInterrupted.load();
}

bool CliProgress::interrupted() const
{
    return gInterrupted.load();
}

void CliProgress::finish()
{
    if (mDrawn)
        std::cerr << "\n";
    mDrawn = false;
}

} // namespace memx::cli
