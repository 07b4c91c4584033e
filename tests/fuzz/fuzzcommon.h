// Shared helpers of the libFuzzer targets (tests/fuzz/fuzz_*.cpp).
//
// Contract every target checks: a parser given arbitrary bytes either returns a value or throws
// memx::LoadError (a user-facing error naming the file). Any other exception escapes
// LLVMFuzzerTestOneInput and libFuzzer reports it as a crash, as it does for ASan/UBSan findings,
// leaks, timeouts and out-of-memory.
#pragma once

#include "memx/util/diagnostic.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace memx::fuzz {

inline std::string text(const uint8_t *data, size_t size)
{
    return std::string(reinterpret_cast<const char *>(data), size);
}

/// Fails the run (libFuzzer records the input as a crash) when an invariant does not hold.
inline void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
        std::abort();
    }
}

/// A LoadError must name what is wrong: at least one diagnostic, each with a message.
inline void checkError(const LoadError &e)
{
    check(!e.diagnostics().empty(), "LoadError without diagnostics");
    for (const Diagnostic &d : e.diagnostics())
        check(!d.message.empty(), "diagnostic without a message");
}

} // namespace memx::fuzz
