// libFuzzer target: model JSON (parseJsonText + parseModel), parameter counts of valid models and
// the toJson -> parseModel round trip.
#include "fuzzcommon.h"

#include "memx/io/formats.h"
#include "memx/util/jsonreader.h"

using namespace memx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try {
        const nlohmann::json j = parseJsonText(fuzz::text(data, size), "fuzz.model.json");
        Diagnostics diags("fuzz.model.json");
        const Model m = parseModel(j, diags);
        if (!diags.empty())
            return 0;
        fuzz::check(m.paramsPerLayer() > 0, "valid model with no parameters per layer");
        Diagnostics again("round-trip");
        const Model back = parseModel(toJson(m), again);
        fuzz::check(again.empty(), "toJson(model) does not parse back");
        fuzz::check(back.paramsPerLayer() == m.paramsPerLayer(), "round trip changed the parameter count");
    } catch (const LoadError &e) {
        fuzz::checkError(e);
    }
    return 0;
}
