#include "memx/cost/linkkey.h"

#include "memx/util/hash.h"

#include <algorithm>

namespace memx {

std::string linkDescriptor(const Link &link)
{
    std::string s = exactNumber(link.bandwidthGBps) + "," + exactNumber(link.latencyUs);
    if (!link.curve.empty()) {
        std::string c;
        for (const CurvePoint &p : link.curve)
            c += exactNumber(p.bytes) + ":" + exactNumber(p.bandwidthGBps) + ";";
        s += ",c" + fnv1a64Hex(c);
    }
    return s;
}

std::string linkClass(const std::vector<Link> &links)
{
    std::vector<std::string> d;
    for (const Link &l : links)
        d.push_back(linkDescriptor(l));
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    std::string out;
    for (size_t i = 0; i < d.size(); ++i)
        out += (i ? "+" : "") + d[i];
    return out;
}

} // namespace memx
