#pragma once

#include "memx/cluster/cluster.h"

#include <string>
#include <vector>

namespace memx {

enum class LinkScope { IntraNode, InterNode };
const char *toString(LinkScope scope);

/// A measured point-to-point bandwidth curve between a sender and a receiver GPU type.
/// Intra-node measurements have sender == receiver and both GPU counts equal the GPUs used in
/// the node. Zones are empty when the measurement does not depend on them.
struct NetworkMeasurement {
    LinkScope scope = LinkScope::InterNode;
    std::string senderGpu; ///< catalogue device id
    int senderGpusPerNode = 1;
    std::string senderZone;
    std::string receiverGpu; ///< catalogue device id
    int receiverGpusPerNode = 1;
    std::string receiverZone;
    std::vector<CurvePoint> curve; ///< sorted by bytes
    double capGBps = 0; ///< highest bandwidth the fit allows, 1e9 bytes/s (0: none)
    std::string source;

    /// Identity of the measurement (everything except curve, cap and source), e.g.
    /// "inter|gh200-96gb|4|us-central1-a|gh200-96gb|4|us-central1-a".
    std::string key() const;
    /// The curve as a Link (nominal bandwidth = cap, or the largest curve point).
    Link toLink() const;

    bool operator==(const NetworkMeasurement &) const = default;
};

} // namespace memx
