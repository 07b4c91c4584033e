#pragma once

#include "memx/cost/costmodel.h"

#include <nlohmann/json.hpp>

namespace memx {

/// JSON of a plan estimate: totals, per-stage times (ms) and per-GPU memory (bytes), as
/// `memx predict --json` and `memx search --json` print them.
nlohmann::json toJson(const PlanEstimate &estimate);

} // namespace memx
