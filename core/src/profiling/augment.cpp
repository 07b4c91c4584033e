#include "memx/profiling/augment.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace memx {

double computeMs(const LayerProfile &profile)
{
    double t = 0;
    for (const LayerMeasurement &m : profile.layers)
        t += m.forwardMs + m.backwardMs;
    return t;
}

static std::optional<double> lerpOptional(const std::optional<double> &a, const std::optional<double> &b, double w)
{
    if (!a || !b)
        return std::nullopt;
    return *a + (*b - *a) * w;
}

std::optional<LayerProfile> interpolateMicroBatch(const std::vector<LayerProfile> &profiles, int microBatch)
{
    const LayerProfile *lo = nullptr, *hi = nullptr;
    for (const LayerProfile &p : profiles) {
        if (p.key.microBatch < microBatch && (!lo || p.key.microBatch > lo->key.microBatch))
            lo = &p;
        if (p.key.microBatch > microBatch && (!hi || p.key.microBatch < hi->key.microBatch))
            hi = &p;
    }
    if (!lo || !hi || lo->layers.size() != hi->layers.size())
        return std::nullopt;
    const double w = double(microBatch - lo->key.microBatch) / double(hi->key.microBatch - lo->key.microBatch);
    LayerProfile out;
    out.key = lo->key;
    out.key.microBatch = microBatch;
    out.origin = ProfileOrigin::Interpolated;
    out.includesTpCommunication = lo->includesTpCommunication && hi->includesTpCommunication;
    out.source = "interpolated in micro-batch between " + std::to_string(lo->key.microBatch) + " and "
        + std::to_string(hi->key.microBatch);
    for (size_t i = 0; i < lo->layers.size(); ++i) {
        const LayerMeasurement &a = lo->layers[i], &b = hi->layers[i];
        LayerMeasurement m;
        m.forwardMs = a.forwardMs + (b.forwardMs - a.forwardMs) * w;
        m.backwardMs = a.backwardMs + (b.backwardMs - a.backwardMs) * w;
        m.optimizerMs = a.optimizerMs + (b.optimizerMs - a.optimizerMs) * w;
        m.paramBytes = a.paramBytes ? a.paramBytes : b.paramBytes;
        m.activationBytes = lerpOptional(a.activationBytes, b.activationBytes, w);
        out.layers.push_back(m);
    }
    return out;
}

/// Least squares of y = a + b x; returns the value at x0.
static double fitAt(const std::vector<double> &x, const std::vector<double> &y, double x0)
{
    const double n = static_cast<double>(x.size());
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
    }
    const double den = n * sxx - sx * sx;
    if (std::abs(den) < 1e-300)
        return sy / n;
    const double b = (n * sxy - sx * sy) / den;
    const double a = (sy - b * sx) / n;
    return std::max(0.0, a + b * x0);
}

std::optional<LayerProfile> interpolateTensorParallel(const std::vector<LayerProfile> &profiles, int tp)
{
    std::set<int> tps;
    for (const LayerProfile &p : profiles)
        tps.insert(p.key.tp);
    if (tps.size() < 2 || tp < *tps.begin() || tp > *tps.rbegin())
        return std::nullopt;
    const size_t layers = profiles.front().layers.size();
    for (const LayerProfile &p : profiles)
        if (p.layers.size() != layers)
            return std::nullopt;
    std::vector<double> x;
    for (const LayerProfile &p : profiles)
        x.push_back(1.0 / p.key.tp);
    LayerProfile out;
    out.key = profiles.front().key;
    out.key.tp = tp;
    out.origin = ProfileOrigin::Interpolated;
    out.includesTpCommunication = profiles.front().includesTpCommunication;
    out.source = "fitted a + b/tp over TP";
    for (int t : tps)
        out.source += " " + std::to_string(t);
    for (size_t i = 0; i < layers; ++i) {
        auto fit = [&](auto get) {
            std::vector<double> y;
            for (const LayerProfile &p : profiles)
                y.push_back(get(p.layers[i]));
            return fitAt(x, y, 1.0 / tp);
        };
        auto fitOptional = [&](auto get) -> std::optional<double> {
            std::vector<double> xs, ys;
            for (size_t k = 0; k < profiles.size(); ++k)
                if (auto v = get(profiles[k].layers[i])) {
                    xs.push_back(x[k]);
                    ys.push_back(*v);
                }
            if (xs.size() < profiles.size())
                return std::nullopt;
            return fitAt(xs, ys, 1.0 / tp);
        };
        LayerMeasurement m;
        m.forwardMs = fit([](const LayerMeasurement &l) { return l.forwardMs; });
        m.backwardMs = fit([](const LayerMeasurement &l) { return l.backwardMs; });
        m.optimizerMs = fit([](const LayerMeasurement &l) { return l.optimizerMs; });
        m.paramBytes = fitOptional([](const LayerMeasurement &l) { return l.paramBytes; });
        m.activationBytes = fitOptional([](const LayerMeasurement &l) { return l.activationBytes; });
        out.layers.push_back(m);
    }
    return out;
}

LayerProfile withLayerCount(const LayerProfile &profile, int layers, const std::string &modelId)
{
    LayerProfile out = profile;
    out.key.model = modelId;
    out.origin = ProfileOrigin::Interpolated;
    out.source = "layer count " + std::to_string(layers) + " from " + profile.key.model;
    const int old = static_cast<int>(profile.layers.size()) - 2;
    if (old < 1 || layers < 1)
        return out;
    out.layers.clear();
    out.layers.push_back(profile.layers.front());
    for (int i = 1; i <= layers; ++i)
        out.layers.push_back(profile.layers[static_cast<size_t>(std::min(i, old))]);
    out.layers.push_back(profile.layers.back());
    return out;
}

LayerProfile scaleSequenceLength(const LayerProfile &profile, const Model &model, int seqLength)
{
    LayerProfile out = profile;
    out.key.seqLength = seqLength;
    out.origin = ProfileOrigin::Interpolated;
    out.source = "scaled from sequence " + std::to_string(profile.key.seqLength) + " by the analytic FLOP ratio";
    const double h = model.shape.hidden, a = model.shape.heads;
    const double s0 = profile.key.seqLength, s1 = seqLength;
    const double flops = (24 * s1 * h * h + 4 * s1 * s1 * h) / (24 * s0 * h * h + 4 * s0 * s0 * h);
    const double act = (s1 * (34 + 5 * a * s1 / h)) / (s0 * (34 + 5 * a * s0 / h));
    const double linear = s1 / s0;
    for (size_t i = 0; i < out.layers.size(); ++i) {
        const bool transformer = i > 0 && i + 1 < out.layers.size();
        LayerMeasurement &m = out.layers[i];
        const double r = transformer ? flops : linear;
        m.forwardMs *= r;
        m.backwardMs *= r;
        if (m.activationBytes)
            *m.activationBytes *= transformer ? act : linear;
    }
    return out;
}

namespace {

using GroupKey = std::tuple<std::string, std::string, int, int>; // gpu, model, tp|mbs, seq

std::map<GroupKey, std::vector<LayerProfile>> groupBy(const ProfileSet &set, bool byTp)
{
    std::map<GroupKey, std::vector<LayerProfile>> groups;
    for (const LayerProfile &p : set.profiles())
        groups[{p.key.gpu, p.key.model, byTp ? p.key.tp : p.key.microBatch, p.key.seqLength}].push_back(p);
    return groups;
}

HoldOutReport summarise(std::vector<HoldOutReport::Point> points)
{
    HoldOutReport r;
    r.points = std::move(points);
    if (r.points.empty())
        return r;
    std::vector<double> e;
    for (const auto &p : r.points)
        e.push_back(p.relativeError);
    std::sort(e.begin(), e.end());
    const size_t n = e.size();
    r.medianError = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
    // Nearest-rank p90.
    r.p90Error = e[static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1];
    r.maxError = e.back();
    return r;
}

template<typename Interp, typename Axis>
HoldOutReport holdOut(const ProfileSet &measured, bool groupByTp, Interp interp, Axis axis)
{
    std::vector<HoldOutReport::Point> points;
    for (auto &[key, group] : groupBy(measured, groupByTp)) {
        std::vector<LayerProfile> ps;
        for (const LayerProfile &p : group)
            if (p.origin == ProfileOrigin::Measured)
                ps.push_back(p);
        if (ps.size() < 3)
            continue;
        std::sort(ps.begin(), ps.end(),
                  [&](const LayerProfile &a, const LayerProfile &b) { return axis(a) < axis(b); });
        for (size_t i = 1; i + 1 < ps.size(); ++i) {
            std::vector<LayerProfile> rest = ps;
            rest.erase(rest.begin() + static_cast<long>(i));
            auto guess = interp(rest, axis(ps[i]));
            if (!guess)
                continue;
            const double m = computeMs(ps[i]), g = computeMs(*guess);
            points.push_back({ps[i].key, m, g, m > 0 ? std::abs(g - m) / m : 0});
        }
    }
    return summarise(std::move(points));
}

} // namespace

HoldOutReport holdOutMicroBatch(const ProfileSet &measured)
{
    return holdOut(measured, true, interpolateMicroBatch, [](const LayerProfile &p) { return p.key.microBatch; });
}

HoldOutReport holdOutTensorParallel(const ProfileSet &measured)
{
    return holdOut(measured, false, interpolateTensorParallel, [](const LayerProfile &p) { return p.key.tp; });
}

std::vector<LayerProfile> augmentProfiles(const ProfileSet &measured, const AugmentOptions &options)
{
    std::vector<LayerProfile> out;
    ProfileSet all = measured;
    auto addIfNew = [&](std::optional<LayerProfile> p) {
        if (p && !all.find(p->key)) {
            all.add(*p);
            out.push_back(std::move(*p));
        }
    };
    for (auto &[key, group] : groupBy(measured, true)) {
        int lo = group.front().key.microBatch, hi = lo;
        for (const LayerProfile &p : group) {
            lo = std::min(lo, p.key.microBatch);
            hi = std::max(hi, p.key.microBatch);
        }
        std::set<int> targets(options.microBatches.begin(), options.microBatches.end());
        for (int b = 1; b < hi; b *= 2)
            targets.insert(b);
        for (int b : targets)
            if (b > lo && b < hi)
                addIfNew(interpolateMicroBatch(group, b));
    }
    for (auto &[key, group] : groupBy(measured, false))
        for (int tp : options.tpDegrees)
            addIfNew(interpolateTensorParallel(group, tp));
    return out;
}

} // namespace memx
