// libFuzzer target: CSV profile files (parseProfileCsv) and the write -> read round trip of what
// parsed.
#include "fuzzcommon.h"

#include "memx/profiling/profileio.h"

using namespace memx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try {
        const auto profiles = parseProfileCsv(fuzz::text(data, size), "fuzz.profile.csv");
        const auto back = parseProfileCsv(profilesToCsv(profiles), "round-trip.csv");
        fuzz::check(back.size() == profiles.size(), "CSV round trip changed the profile count");
    } catch (const LoadError &e) {
        fuzz::checkError(e);
    }
    return 0;
}
