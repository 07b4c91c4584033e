#include "memx/engine/plannedcompare.h"

namespace memx {

CompareRequest compareRequestFor(const PlannedSearch &planned)
{
    CompareRequest req;
    req.search = planned.request.search; // the project's profiles and calibration
    if (!planned.subsetPlan.requests.empty())
        req.search.space = planned.subsetPlan.requests.front().space; // narrowed
    req.autoTarget = planned.request.autoTarget;
    req.maxIdleGroups = planned.request.maxIdleGroups;
    req.learned = planned.predictor.get();
    return req;
}

} // namespace memx
