#include "memx/profile/networkmeasurement.h"

#include <algorithm>

namespace memx {

const char *toString(LinkScope scope)
{
    return scope == LinkScope::IntraNode ? "intra" : "inter";
}

std::string NetworkMeasurement::key() const
{
    return std::string(toString(scope)) + "|" + senderGpu + "|" + std::to_string(senderGpusPerNode) + "|" + senderZone
        + "|" + receiverGpu + "|" + std::to_string(receiverGpusPerNode) + "|" + receiverZone;
}

Link NetworkMeasurement::toLink() const
{
    Link link;
    link.curve = curve;
    double best = 0;
    for (const CurvePoint &p : curve)
        best = std::max(best, p.bandwidthGBps);
    link.bandwidthGBps = capGBps > 0 ? std::min(capGBps, best > 0 ? best : capGBps) : best;
    return link;
}

} // namespace memx
