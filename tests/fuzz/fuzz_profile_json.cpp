// libFuzzer target: "memx.profile/1" JSON profile files (parseProfileJson) and the write -> read
// round trip of what parsed.
#include "fuzzcommon.h"

#include "memx/profiling/profileio.h"

using namespace memx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try {
        const auto profiles = parseProfileJson(fuzz::text(data, size), "fuzz.profile.json");
        const auto back = parseProfileJson(profilesToJsonText(profiles), "round-trip.json");
        fuzz::check(back.size() == profiles.size(), "JSON round trip changed the profile count");
        // The CSV writer must not crash on anything the JSON reader accepts (ids with commas,
        // quotes or spaces); the CSV reader may refuse such ids with a LoadError.
        (void)parseProfileCsv(profilesToCsv(profiles), "round-trip.csv");
    } catch (const LoadError &e) {
        fuzz::checkError(e);
    }
    return 0;
}
