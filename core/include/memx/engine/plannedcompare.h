#pragma once

#include "memx/engine/plannedsearch.h"
#include "memx/evaluation/compare.h"

namespace memx {

/// The comparison of a planned project search (planSearch: the project's profiles, calibration
/// and predictor, the budget-narrowed space, target and idle groups), what `memx compare` and the
/// workbench's comparison dialog run. `learned` points into `planned` (keep it alive).
CompareRequest compareRequestFor(const PlannedSearch &planned);

} // namespace memx
