// libFuzzer target: plan JSON (parseJsonText + parsePlan + validatePlan against a fixed sample
// cluster and model); a plan that validates is also estimated by the cost model, which must then
// not throw (its contract: valid plans only) and must give finite, non-negative figures.
#include "fuzzcommon.h"

#include "memx/cost/costmodel.h"
#include "memx/io/formats.h"
#include "memx/util/jsonreader.h"

#include <cmath>

using namespace memx;

namespace {
// Two node groups so that plans can name "a100" (2 x 4 GPUs -> nodes a100-0, a100-1) and "h100".
const char *kCluster = R"({"format": "memx.cluster/1", "name": "fuzz",
  "nodes": [{"name": "a100", "gpu": "a100-40gb-sxm", "gpus": 4, "count": 2},
            {"name": "h100", "gpu": "h100-sxm", "gpus": 8}],
  "network": {"interNode": {"bandwidthGBps": 25, "latencyUs": 5}}})";

struct Fixture {
    Cluster cluster;
    Model model = resolveModel("gpt3-1.3b");
    Fixture()
    {
        Diagnostics d("fixture");
        cluster = parseCluster(parseJsonText(kCluster, "fixture"), builtinCatalogue(), d);
        d.throwIfAny();
    }
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const Fixture fx;
    try {
        const nlohmann::json j = parseJsonText(fuzz::text(data, size), "fuzz.plan.json");
        Diagnostics diags("fuzz.plan.json");
        const Plan p = parsePlan(j, diags);
        if (!diags.empty())
            return 0;
        Diagnostics back("round-trip");
        (void)parsePlan(toJson(p), back);
        fuzz::check(back.empty(), "toJson(plan) does not parse back");
        validatePlan(p, fx.cluster, fx.model, diags);
        if (!diags.empty())
            return 0;
        (void)p.summary(fx.cluster);
        const PlanEstimate e = estimatePlan(p, fx.cluster, fx.model, nullptr, CostOptions {});
        fuzz::check(std::isfinite(e.iterationTimeMs) && e.iterationTimeMs >= 0 && std::isfinite(e.peakBytes),
                    "estimate of a valid plan is not finite");
    } catch (const LoadError &e) {
        fuzz::checkError(e);
    }
    return 0;
}
