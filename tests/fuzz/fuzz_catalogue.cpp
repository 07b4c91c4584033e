// libFuzzer target: GPU catalogue JSON (parseCatalogue) and lookups in a catalogue that parsed.
#include "fuzzcommon.h"

#include "memx/io/formats.h"

using namespace memx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try {
        const Catalogue c = parseCatalogue(fuzz::text(data, size), "fuzz.catalogue.json");
        for (const GpuSpec &d : c.devices()) {
            fuzz::check(c.find(d.id) != nullptr, "a device of a valid catalogue is not found by its id");
            (void)c.suggest(d.id + "x");
        }
        const Catalogue back = parseCatalogue(toJson(c).dump(), "round-trip");
        fuzz::check(back.devices().size() == c.devices().size(), "round trip changed the device count");
    } catch (const LoadError &e) {
        fuzz::checkError(e);
    }
    return 0;
}
