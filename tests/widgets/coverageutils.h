#pragma once

// Shared by the widget tests that check the Profiles dock's coverage grid against the core.

#include "memx/profiling/coverage.h"

#include <vector>

namespace memxtest {

/// The core's coverage (memx::profileCoverage) of `model` on `cluster`, as the Profiles dock asks for it.
inline std::vector<memx::DeviceCoverage> coverageOf(const memx::ProfileSet &profiles, const memx::Cluster &cluster,
                                                    const memx::Model &model,
                                                    const std::vector<memx::KernelPoint> *needed = nullptr)
{
    memx::CoverageQuery q;
    q.model = model.id;
    q.seqLength = model.shape.seqLength;
    q.cluster = &cluster;
    q.needed = needed;
    return memx::profileCoverage(profiles, q);
}

} // namespace memxtest
