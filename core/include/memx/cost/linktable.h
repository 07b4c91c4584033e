#pragma once

#include "memx/cluster/cluster.h"
#include "memx/cost/costmodel.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace memx {

/// The links a cluster's nodes really use (nodeLink), found per node class instead of per node
/// pair. Nodes of one group that no link override names individually are interchangeable: same
/// device, same intra-node link, the same link to every other node. Each node an override names is
/// a class of its own. So the links among or between node sets follow from the classes present,
/// in O(nodes + classes^2) instead of O(nodes^2) (issue 22: the pairwise scans made the search's
/// set-up quadratic in nodes, ~8 s at 8,192 GPUs).
///
/// Exactly Cluster::interNodeLink's rules: a node-name pair override first, then the first
/// override in file order naming the two groups or a node and the other node's group, else the
/// default; between vendors the host path of nodeLink. Built once in O(nodes + overrides).
class LinkTable {
public:
    LinkTable(const Cluster &cluster, const std::vector<Node> &nodes, const CostOptions &options);

    /// Class of node `node` (index into `nodes`): nodes of one class are interchangeable.
    int classOf(int node) const { return mClassOf[static_cast<size_t>(node)]; }
    size_t classCount() const { return mClassNode.size(); }
    /// The link between two different nodes `a` and `b` (nodeLink(nodes[a], nodes[b], ...)).
    Link link(int a, int b) const;

    /// Distinct links a collective among the GPUs of `nodeIdx` crosses: the node's intra-node link
    /// when all are on one node, else the link of every pair of different nodes (linksAmong).
    std::vector<Link> linksAmong(const std::vector<int> &nodeIdx) const;
    /// Distinct links between the node sets `a` and `b`: the intra-node link for a node in both,
    /// the nodes' link for every pair of different nodes (linksBetween).
    std::vector<Link> linksBetween(const std::vector<int> &a, const std::vector<int> &b) const;

private:
    /// Link between two different nodes of classes `ca` and `cb`; `ca == cb` needs a class with two
    /// nodes (the link between two of its members).
    Link classLink(int ca, int cb) const;
    /// Distinct nodes of `nodeIdx` per class present: (class, node count), and one member per class.
    struct ClassCount {
        int cls = 0;
        int count = 0;
        int member = 0;
    };
    std::vector<ClassCount> classesOf(const std::vector<int> &nodeIdx) const;

    const Cluster &mCluster;
    const std::vector<Node> &mNodes;
    CostOptions mOptions; ///< a copy: callers pass temporaries (CostOptions {})
    std::vector<int> mClassOf; ///< per node
    std::vector<int> mClassNode; ///< per class, one member
    std::vector<int> mSecondNode; ///< per class, another member (-1 for a single-node class)
    /// First override (index in file order) per unordered pair of names: "a\nb" with a <= b.
    std::unordered_map<std::string, size_t> mOverrideIndex;
};

} // namespace memx
