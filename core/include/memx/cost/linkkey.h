#pragma once

#include "memx/cluster/cluster.h"

#include <string>
#include <vector>

namespace memx {

/// Short stable descriptor of one link ("bw,lat,curvehash"): what the cost model reads of a link,
/// so two links with equal descriptors cost the same. Plan signatures and the search's link
/// classes are built from it.
std::string linkDescriptor(const Link &link);
/// Sorted, de-duplicated descriptors of `links` joined by '+'.
std::string linkClass(const std::vector<Link> &links);

} // namespace memx
