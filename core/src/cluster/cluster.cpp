#include "memx/cluster/cluster.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace memx {

double Link::bandwidthAt(double bytes) const
{
    if (curve.empty())
        return bandwidthGBps;
    if (curve.size() == 1 || bytes <= curve.front().bytes)
        return curve.front().bandwidthGBps;
    if (bytes >= curve.back().bytes)
        return curve.back().bandwidthGBps;
    auto hi = std::lower_bound(curve.begin(), curve.end(), bytes,
                               [](const CurvePoint &p, double b) { return p.bytes < b; });
    auto lo = hi - 1;
    const double x0 = std::log2(lo->bytes), x1 = std::log2(hi->bytes);
    const double t = x1 > x0 ? (std::log2(bytes) - x0) / (x1 - x0) : 0.0;
    return lo->bandwidthGBps + t * (hi->bandwidthGBps - lo->bandwidthGBps);
}

double Link::transferSeconds(double bytes) const
{
    const double bw = bandwidthAt(bytes);
    return latencyUs * 1e-6 + (bw > 0 ? bytes / (bw * 1e9) : 0.0);
}

Link defaultIntraLink(const GpuSpec &device)
{
    Link link;
    if (device.scaleUpPerDirectionGBps && *device.scaleUpPerDirectionGBps > 0) {
        link.bandwidthGBps = *device.scaleUpPerDirectionGBps;
        link.latencyUs = device.scaleUpKind == ScaleUpKind::Pcie ? 10.0 : 3.0;
    } else {
        // No scale-up figure: PCIe 4.0 x16, ~32 GB/s per direction theoretical.
        link.bandwidthGBps = 32.0;
        link.latencyUs = 10.0;
    }
    return link;
}

std::string nodeName(const NodeGroup &group, int index)
{
    if (group.count <= 1)
        return group.name;
    return group.name + "-" + std::to_string(index);
}

int Cluster::deviceIndex(const std::string &id) const
{
    for (size_t i = 0; i < devices.size(); ++i) {
        if (devices[i].id == id)
            return static_cast<int>(i);
        for (const std::string &a : devices[i].aliases)
            if (a == id)
                return static_cast<int>(i);
    }
    return -1;
}

const GpuSpec &Cluster::deviceOf(const NodeGroup &group) const
{
    const int i = deviceIndex(group.gpu);
    if (i < 0)
        throw std::logic_error("cluster '" + name + "': node group '" + group.name + "' uses unknown device '"
                               + group.gpu + "'");
    return devices[static_cast<size_t>(i)];
}

Link Cluster::intraLink(const NodeGroup &group) const
{
    return group.intraLink ? *group.intraLink : defaultIntraLink(deviceOf(group));
}

std::vector<Node> Cluster::nodes() const
{
    std::vector<Node> out;
    for (size_t g = 0; g < groups.size(); ++g) {
        const NodeGroup &grp = groups[g];
        const int dev = deviceIndex(grp.gpu);
        const Link link = intraLink(grp);
        for (int i = 0; i < grp.count; ++i)
            out.push_back({nodeName(grp, i), static_cast<int>(g), i, dev, grp.gpusPerNode, link});
    }
    return out;
}

std::optional<Node> Cluster::findNode(const std::string &nodeNameToFind) const
{
    for (size_t g = 0; g < groups.size(); ++g) {
        const NodeGroup &grp = groups[g];
        for (int i = 0; i < grp.count; ++i)
            if (nodeName(grp, i) == nodeNameToFind)
                return Node {nodeNameToFind,       static_cast<int>(g), i,
                             deviceIndex(grp.gpu), grp.gpusPerNode,     intraLink(grp)};
    }
    return std::nullopt;
}

Link Cluster::interNodeLink(const Node &a, const Node &b) const
{
    auto matches = [&](const LinkOverride &o, const std::string &x, const std::string &y) {
        return (o.a == x && o.b == y) || (o.a == y && o.b == x);
    };
    const std::string &ga = groups[static_cast<size_t>(a.group)].name;
    const std::string &gb = groups[static_cast<size_t>(b.group)].name;
    for (const LinkOverride &o : network.overrides)
        if (matches(o, a.name, b.name))
            return o.link;
    for (const LinkOverride &o : network.overrides)
        if (matches(o, ga, gb) || matches(o, a.name, gb) || matches(o, ga, b.name))
            return o.link;
    return network.interNode;
}

int Cluster::totalGpus() const
{
    int n = 0;
    for (const NodeGroup &g : groups)
        n += g.gpusPerNode * g.count;
    return n;
}

int Cluster::totalNodes() const
{
    int n = 0;
    for (const NodeGroup &g : groups)
        n += g.count;
    return n;
}

double Cluster::totalMemoryGiB() const
{
    double total = 0;
    for (const NodeGroup &g : groups)
        total += deviceOf(g).memoryGiB.value_or(0.0) * g.gpusPerNode * g.count;
    return total;
}

double Cluster::peakPflops(bool bf16) const
{
    double total = 0;
    for (const NodeGroup &g : groups)
        total += deviceOf(g).peakTflops(bf16).value_or(0.0) * g.gpusPerNode * g.count;
    return total / 1000.0;
}

} // namespace memx
