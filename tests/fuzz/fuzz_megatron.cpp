// libFuzzer target: Megatron-LM training logs (parseMegatronLog) and the summary figures of a log
// that parsed.
#include "fuzzcommon.h"

#include "memx/profiling/megatronlog.h"

#include <cmath>

using namespace memx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try {
        const MegatronLogSummary s = parseMegatronLog(fuzz::text(data, size), "fuzz.log");
        fuzz::check(!s.iterationTimesMs.empty(), "a parsed log without iterations");
        fuzz::check(s.iterationTimesMs.size() == s.iterationNumbers.size(), "times and numbers differ in count");
        for (int skip = 0; skip < static_cast<int>(s.iterationTimesMs.size()); ++skip)
            fuzz::check(std::isfinite(s.meanIterationMs(skip)), "mean iteration time is not finite");
        if (auto peak = s.peakAllocatedBytes())
            fuzz::check(std::isfinite(*peak) && *peak >= 0, "peak memory is not a finite non-negative number");
    } catch (const LoadError &e) {
        fuzz::checkError(e);
    }
    return 0;
}
