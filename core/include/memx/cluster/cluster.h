#pragma once

#include "memx/cluster/gpuspec.h"

#include <optional>
#include <string>
#include <vector>

namespace memx {

/// One point of a measured bandwidth curve.
struct CurvePoint {
    double bytes = 0; ///< message size, bytes
    double bandwidthGBps = 0; ///< achieved bandwidth at that size, 1e9 bytes/s

    bool operator==(const CurvePoint &) const = default;
};

/// A point-to-point link: nominal bandwidth and latency, optionally a measured curve that
/// overrides the nominal bandwidth for the message sizes it covers.
struct Link {
    double bandwidthGBps = 0; ///< per direction, 1e9 bytes/s
    double latencyUs = 0; ///< one-way latency, microseconds
    std::vector<CurvePoint> curve; ///< sorted by bytes; empty when not measured

    /// Bandwidth for a message of `bytes`: the curve interpolated linearly in log2(bytes)
    /// (clamped at its ends), or the nominal bandwidth when there is no curve.
    double bandwidthAt(double bytes) const;
    /// Seconds to move `bytes` over this link once: latency + bytes / bandwidthAt(bytes).
    double transferSeconds(double bytes) const;

    bool operator==(const Link &) const = default;
};

/// A line of the cluster file: `count` identical nodes, each with `gpusPerNode` GPUs of one type.
struct NodeGroup {
    std::string name; ///< node name; with count > 1 the nodes are name-0 ... name-(count-1)
    std::string gpu; ///< device id (catalogue or custom)
    int gpusPerNode = 1;
    int count = 1;
    std::optional<Link> intraLink; ///< unset: derived from the device's scale-up figures
    double x = 0, y = 0; ///< position on the workbench canvas (layout only)

    bool operator==(const NodeGroup &) const = default;
};

/// A bandwidth/latency for traffic between two nodes (or two node groups) that differs from
/// the cluster default.
struct LinkOverride {
    std::string a; ///< node or group name
    std::string b; ///< node or group name
    Link link;

    bool operator==(const LinkOverride &) const = default;
};

struct Network {
    Link interNode; ///< default node-to-node link (per node, per direction)
    std::vector<LinkOverride> overrides;

    bool operator==(const Network &) const = default;
};

/// One physical node after expanding groups.
struct Node {
    std::string name;
    int group = 0; ///< index into Cluster::groups
    int indexInGroup = 0;
    int device = 0; ///< index into Cluster::devices
    int gpus = 0;
    Link intraLink;
};

/// A heterogeneous cluster: a value type, self-contained (it carries the specs of every device
/// it uses, so a search snapshot needs nothing else).
struct Cluster {
    std::string name;
    std::string description;
    std::vector<GpuSpec> devices; ///< every device type the groups use (catalogue copies + custom)
    std::vector<NodeGroup> groups;
    Network network;

    /// Index into `devices` of `id` (or an alias), -1 when absent.
    int deviceIndex(const std::string &id) const;
    const GpuSpec &deviceOf(const NodeGroup &group) const;
    /// The expanded nodes, in group order.
    std::vector<Node> nodes() const;
    /// The node called `name`, if any.
    std::optional<Node> findNode(const std::string &name) const;
    /// Link used between two different nodes (override by node name, then by group name,
    /// then the default).
    Link interNodeLink(const Node &a, const Node &b) const;
    /// The intra-node link of a group: its own, or derived from its device's scale-up figures.
    Link intraLink(const NodeGroup &group) const;

    int totalGpus() const;
    int totalNodes() const;
    double totalMemoryGiB() const;
    double peakPflops(bool bf16) const;

    bool operator==(const Cluster &) const = default;
};

/// Intra-node link derived from a device's catalogue figures (scale-up link, else PCIe).
Link defaultIntraLink(const GpuSpec &device);

/// Node name of member `index` of a group with `count` nodes.
std::string nodeName(const NodeGroup &group, int index);

} // namespace memx
