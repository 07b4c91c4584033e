#include "memx/search/objective.h"

#include "memx/search/search.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <numeric>
#include <stdexcept>

namespace memx {

MetricView metricsOf(const SearchResult &r)
{
    return MetricView {r.timeMs.data(), r.peakMemory.data(), r.imbalance.data(), r.timeMs.size()};
}

ObjectiveScale objectiveScaleOf(const MetricView &v)
{
    ObjectiveScale sc {0.0, 0.0, 1.0};
    for (size_t i = 0; i < v.size; ++i) {
        if (v.time)
            sc.maxTime = std::max(sc.maxTime, v.time[i]);
        if (v.memory)
            sc.maxMemory = std::max(sc.maxMemory, v.memory[i]);
        if (v.imbalance)
            sc.maxBalance = std::max(sc.maxBalance, 1.0 + std::max(0.0, v.imbalance[i]));
    }
    // A metric that is 0 (or absent) for every plan does not discriminate: normalise by 1.
    if (!(sc.maxTime > 0))
        sc.maxTime = 1.0;
    if (!(sc.maxMemory > 0))
        sc.maxMemory = 1.0;
    return sc;
}

void checkObjective(ObjectiveWeights o)
{
    if (o.time < 0 || o.memory < 0 || o.balance < 0 || !std::isfinite(o.time) || !std::isfinite(o.memory)
        || !std::isfinite(o.balance))
        throw std::invalid_argument("objective weights must be finite and >= 0");
}

namespace {

// T and M are positive for every evaluated plan; the tiny floor only keeps a degenerate 0 (an
// empty metric) from producing -inf.
double ratioTerm(double x, double max)
{
    return std::log(std::max(x, 1e-12 * max) / max);
}

} // namespace

double logScore(const ObjectiveScale &sc, ObjectiveWeights o, double t, double m, double b)
{
    double s = 0.0;
    if (o.time != 0)
        s += o.time * ratioTerm(t, sc.maxTime);
    if (o.memory != 0)
        s += o.memory * ratioTerm(m, sc.maxMemory);
    if (o.balance != 0)
        s += o.balance * std::log((1.0 + std::max(0.0, b)) / sc.maxBalance);
    return s;
}

std::vector<double> logScores(const MetricView &v, ObjectiveWeights o)
{
    checkObjective(o);
    const ObjectiveScale sc = objectiveScaleOf(v);
    const ObjectiveWeights used {v.time ? o.time : 0.0, v.memory ? o.memory : 0.0, v.imbalance ? o.balance : 0.0};
    std::vector<double> s(v.size, 0.0);
    for (size_t i = 0; i < v.size; ++i)
        s[i] = logScore(sc, used, v.time ? v.time[i] : 0.0, v.memory ? v.memory[i] : 0.0,
                        v.imbalance ? v.imbalance[i] : 0.0);
    return s;
}

std::vector<uint32_t> rank(const MetricView &v, ObjectiveWeights o, size_t topK)
{
    const std::vector<double> s = logScores(v, o);
    std::vector<uint32_t> idx(v.size);
    std::iota(idx.begin(), idx.end(), 0u);
    auto less = [&](uint32_t a, uint32_t b) {
        if (s[a] != s[b])
            return s[a] < s[b];
        if (v.time[a] != v.time[b])
            return v.time[a] < v.time[b];
        if (v.memory[a] != v.memory[b])
            return v.memory[a] < v.memory[b];
        if (v.imbalance[a] != v.imbalance[b])
            return v.imbalance[a] < v.imbalance[b];
        return a < b;
    };
    const size_t k = std::min(topK, idx.size());
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), less);
    idx.resize(k);
    return idx;
}

std::vector<uint32_t> rank(const SearchResult &r, ObjectiveWeights o, size_t topK)
{
    return rank(metricsOf(r), o, topK);
}

std::vector<uint32_t> paretoFront(const MetricView &v)
{
    const size_t n = v.size;
    // Sort contiguous records (not indices into three arrays): far fewer cache misses.
    struct Rec {
        double t, m, b;
        uint32_t i;
    };
    std::vector<Rec> recs(n);
    for (size_t k = 0; k < n; ++k)
        recs[k] = Rec {v.time[k], v.memory[k], v.imbalance[k], static_cast<uint32_t>(k)};
    std::sort(recs.begin(), recs.end(), [](const Rec &a, const Rec &b) {
        if (a.t != b.t)
            return a.t < b.t;
        if (a.m != b.m)
            return a.m < b.m;
        if (a.b != b.b)
            return a.b < b.b;
        return a.i < b.i;
    });
    // Staircase of non-dominated (M, B) among plans with strictly smaller T: M ascending,
    // B strictly descending. A plan is dominated by an earlier-T plan iff the staircase
    // entry with the largest M <= its M has B <= its B.
    std::map<double, double> stair;
    auto dominatedByStair = [&](double m, double b) {
        auto it = stair.upper_bound(m);
        if (it == stair.begin())
            return false;
        --it;
        return it->second <= b;
    };
    auto insert = [&](double m, double b) {
        if (dominatedByStair(m, b))
            return;
        auto it = stair.lower_bound(m);
        // remove entries with M >= m and B >= b (now dominated in (M, B))
        while (it != stair.end() && it->second >= b)
            it = stair.erase(it);
        stair[m] = b;
    };
    std::vector<uint32_t> front;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && recs[j].t == recs[i].t)
            ++j;
        // Group [i, j) shares T; within it, sorted by (M, B). A member is dominated by an
        // earlier group (strictly smaller T) via the staircase, or inside the group by a
        // member with M' <= M, B' <= B and (M', B') != (M, B).
        // Sorted by (M, B): a member is dominated inside the group iff a member of an earlier
        // run of different (M, B) has B' <= B (then M' <= M as well and the point differs).
        double bestBBefore = INFINITY; // min B over runs before the current run
        double runB = INFINITY;
        size_t runStart = i;
        for (size_t k = i; k < j; ++k) {
            const uint32_t a = recs[k].i;
            const double m = recs[k].m, b = recs[k].b;
            if (k > runStart && (recs[runStart].m != m || recs[runStart].b != b)) {
                bestBBefore = std::min(bestBBefore, runB);
                runB = INFINITY;
                runStart = k;
            }
            runB = std::min(runB, b);
            const bool dominated = bestBBefore <= b || dominatedByStair(m, b);
            if (!dominated)
                front.push_back(a);
        }
        for (size_t k = i; k < j; ++k)
            insert(recs[k].m, recs[k].b);
        i = j;
    }
    std::sort(front.begin(), front.end());
    return front;
}

std::vector<uint32_t> paretoFront(const SearchResult &r)
{
    return paretoFront(metricsOf(r));
}

} // namespace memx
