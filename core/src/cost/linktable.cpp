#include "memx/cost/linktable.h"

#include <algorithm>
#include <unordered_set>

namespace memx {

namespace {

std::string pairKey(const std::string &a, const std::string &b)
{
    return a <= b ? a + '\n' + b : b + '\n' + a;
}

void addUnique(std::vector<Link> &links, const Link &l)
{
    if (std::find(links.begin(), links.end(), l) == links.end())
        links.push_back(l);
}

} // namespace

LinkTable::LinkTable(const Cluster &cluster, const std::vector<Node> &nodes, const CostOptions &options)
    : mCluster(cluster)
    , mNodes(nodes)
    , mOptions(options)
{
    std::unordered_set<std::string> named;
    for (size_t i = 0; i < cluster.network.overrides.size(); ++i) {
        const LinkOverride &o = cluster.network.overrides[i];
        mOverrideIndex.emplace(pairKey(o.a, o.b), i); // emplace keeps the first in file order
        named.insert(o.a);
        named.insert(o.b);
    }
    // One class per group for the nodes no override names, one per named node.
    std::vector<int> groupClass(cluster.groups.size(), -1);
    mClassOf.resize(nodes.size());
    for (size_t n = 0; n < nodes.size(); ++n) {
        const Node &node = nodes[n];
        int cls;
        if (named.count(node.name)) {
            cls = static_cast<int>(mClassNode.size());
            mClassNode.push_back(static_cast<int>(n));
            mSecondNode.push_back(-1);
        } else if (groupClass[static_cast<size_t>(node.group)] < 0) {
            cls = groupClass[static_cast<size_t>(node.group)] = static_cast<int>(mClassNode.size());
            mClassNode.push_back(static_cast<int>(n));
            mSecondNode.push_back(-1);
        } else {
            cls = groupClass[static_cast<size_t>(node.group)];
            if (mSecondNode[static_cast<size_t>(cls)] < 0)
                mSecondNode[static_cast<size_t>(cls)] = static_cast<int>(n);
        }
        mClassOf[n] = cls;
    }
}

Link LinkTable::link(int a, int b) const
{
    const Node &na = mNodes[static_cast<size_t>(a)], &nb = mNodes[static_cast<size_t>(b)];
    // Cluster::interNodeLink: the node pair first, then the first override naming the two groups
    // or one node and the other's group.
    const Link *direct = &mCluster.network.interNode;
    const auto find = [&](const std::string &x, const std::string &y) {
        auto it = mOverrideIndex.find(pairKey(x, y));
        return it == mOverrideIndex.end() ? mCluster.network.overrides.size() : it->second;
    };
    const size_t none = mCluster.network.overrides.size();
    if (const size_t i = find(na.name, nb.name); i != none) {
        direct = &mCluster.network.overrides[i].link;
    } else {
        const std::string &ga = mCluster.groups[static_cast<size_t>(na.group)].name;
        const std::string &gb = mCluster.groups[static_cast<size_t>(nb.group)].name;
        const size_t j = std::min({find(ga, gb), find(na.name, gb), find(ga, nb.name)});
        if (j != none)
            direct = &mCluster.network.overrides[j].link;
    }
    return crossVendorLink(*direct, mCluster.devices[static_cast<size_t>(na.device)],
                           mCluster.devices[static_cast<size_t>(nb.device)], mOptions);
}

Link LinkTable::classLink(int ca, int cb) const
{
    const int a = mClassNode[static_cast<size_t>(ca)];
    const int b = ca == cb ? mSecondNode[static_cast<size_t>(ca)] : mClassNode[static_cast<size_t>(cb)];
    return link(a, b);
}

std::vector<LinkTable::ClassCount> LinkTable::classesOf(const std::vector<int> &nodeIdx) const
{
    std::vector<std::pair<int, int>> byClass; // (class, node), distinct nodes
    byClass.reserve(nodeIdx.size());
    for (int n : nodeIdx)
        byClass.emplace_back(classOf(n), n);
    std::sort(byClass.begin(), byClass.end());
    byClass.erase(std::unique(byClass.begin(), byClass.end()), byClass.end());
    std::vector<ClassCount> out;
    for (const auto &[c, n] : byClass) {
        if (out.empty() || out.back().cls != c)
            out.push_back({c, 0, n});
        ++out.back().count;
    }
    return out;
}

std::vector<Link> LinkTable::linksAmong(const std::vector<int> &nodeIdx) const
{
    const std::vector<ClassCount> cls = classesOf(nodeIdx);
    std::vector<Link> links;
    if (cls.size() == 1 && cls.front().count == 1) {
        links.push_back(mNodes[static_cast<size_t>(cls.front().member)].intraLink);
        return links;
    }
    for (size_t i = 0; i < cls.size(); ++i) {
        if (cls[i].count > 1)
            addUnique(links, classLink(cls[i].cls, cls[i].cls));
        for (size_t j = i + 1; j < cls.size(); ++j)
            addUnique(links, classLink(cls[i].cls, cls[j].cls));
    }
    return links;
}

std::vector<Link> LinkTable::linksBetween(const std::vector<int> &a, const std::vector<int> &b) const
{
    const std::vector<ClassCount> ca = classesOf(a), cb = classesOf(b);
    std::vector<int> ua(a), ub(b);
    std::sort(ua.begin(), ua.end());
    ua.erase(std::unique(ua.begin(), ua.end()), ua.end());
    std::sort(ub.begin(), ub.end());
    ub.erase(std::unique(ub.begin(), ub.end()), ub.end());
    std::vector<int> shared;
    std::set_intersection(ua.begin(), ua.end(), ub.begin(), ub.end(), std::back_inserter(shared));
    std::vector<Link> links;
    for (const ClassCount &x : ca)
        for (const ClassCount &y : cb) {
            if (x.cls != y.cls) {
                addUnique(links, classLink(x.cls, y.cls));
                continue;
            }
            // Same class: a node in both sets talks to itself over its intra-node link; a pair of
            // different nodes exists unless both sets hold the same single node of the class.
            const long long inBoth
                = std::count_if(shared.begin(), shared.end(), [&](int n) { return classOf(n) == x.cls; });
            if (inBoth > 0)
                for (int n : shared)
                    if (classOf(n) == x.cls)
                        addUnique(links, mNodes[static_cast<size_t>(n)].intraLink);
            if (static_cast<long long>(x.count) * y.count > inBoth)
                addUnique(links, classLink(x.cls, x.cls));
        }
    return links;
}

} // namespace memx
