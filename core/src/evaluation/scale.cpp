#include "memx/evaluation/scale.h"

#include "memx/search/plannedsearch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace memx {

Cluster replicateCluster(const Cluster &cluster, int factor)
{
    if (factor < 1)
        throw std::invalid_argument("replication factor must be >= 1, found " + std::to_string(factor));
    Cluster out = cluster;
    for (NodeGroup &g : out.groups)
        g.count *= factor;
    if (factor > 1)
        out.name += " (x" + std::to_string(factor) + ")";
    return out;
}

std::vector<int> scaleFactors(const Cluster &cluster, const std::vector<int> &targetGpus)
{
    const int base = cluster.totalGpus();
    if (base <= 0)
        throw std::invalid_argument("the cluster has no GPUs");
    std::vector<int> out;
    for (int t : targetGpus) {
        if (t <= 0 || t % base != 0) {
            std::ostringstream msg;
            msg << t << " GPUs cannot be reached by replicating the " << base
                << "-GPU node mix; possible sizes are multiples of " << base << ": " << base << ", " << 2 * base << ", "
                << 3 * base << ", " << 4 * base << ", ...";
            throw std::invalid_argument(msg.str());
        }
        out.push_back(t / base);
    }
    return out;
}

std::vector<ScalePoint> runScale(const ScaleRequest &request, const ProgressFn &progress)
{
    std::vector<int> factors {1};
    for (int f : scaleFactors(request.search.cluster, request.targetGpus))
        if (std::find(factors.begin(), factors.end(), f) == factors.end())
            factors.push_back(f);
    std::vector<ScalePoint> points;
    for (size_t k = 0; k < factors.size(); ++k) {
        SearchRequest req = request.search;
        req.cluster = replicateCluster(request.search.cluster, factors[k]);
        req.collectFeatures = false;
        ScalePoint p;
        p.factor = factors[k];
        p.gpus = req.cluster.totalGpus();
        p.clusterName = req.cluster.name;

        const auto t0 = std::chrono::steady_clock::now();
        bool cancelled = false;
        PlannedSearchRequest planned;
        planned.search = req;
        planned.autoTarget = request.autoTarget;
        planned.maxIdleGroups = request.maxIdleGroups;
        planned.maxVerifiedBatches = -1;
        planned.maxBases = request.maxBases;
        const PlannedSearchResult pr = runPlannedSearch(planned, [&](size_t d, size_t t) {
            const double f = (k + (t ? static_cast<double>(d) / t : 0.0 /* (0, 0): set-up */)) / factors.size();
            if (progress && !progress(static_cast<size_t>(1000 * std::min(f, 1.0)), 1000))
                cancelled = true;
            return !cancelled;
        });
        const SearchResult &res = pr.result;
        if (cancelled || res.cancelled)
            break;
        p.target = toString(pr.target);
        p.narrowed = pr.narrowed;
        p.notes = pr.notes;
        const std::vector<uint32_t> top = rank(res, request.objective, 1);
        p.searchMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        p.enumerated = res.enumerated;
        p.valid = res.evaluated;
        if (!top.empty()) {
            const uint32_t i = top.front();
            p.hasPlan = true;
            p.best = res.materialize(i);
            p.summary = p.best.summary(req.cluster);
            p.timeMs = res.timeMs[i];
            p.peakMemory = res.peakMemory[i];
            p.imbalance = res.imbalance[i];
            p.samplesPerSecond
                = p.timeMs > 0 ? p.best.globalBatch / (p.timeMs / 1000.0) : 0.0; // rounded with --round-batch
            p.idle = pr.idleText(i);
        }
        points.push_back(std::move(p));
    }
    return points;
}

nlohmann::json toJson(const std::vector<ScalePoint> &points)
{
    nlohmann::json arr = nlohmann::json::array();
    for (const ScalePoint &p : points) {
        nlohmann::json j {{"gpus", p.gpus},           {"factor", p.factor},
                          {"cluster", p.clusterName}, {"enumerated", p.enumerated},
                          {"validConfigs", p.valid},  {"searchMs", p.searchMs},
                          {"narrowed", p.narrowed},   {"hasPlan", p.hasPlan},
                          {"target", p.target},       {"notes", p.notes}};
        if (p.hasPlan) {
            j["best"] = p.summary;
            j["timeMs"] = p.timeMs;
            j["peakMemory"] = p.peakMemory;
            j["imbalance"] = p.imbalance;
            j["samplesPerSecond"] = p.samplesPerSecond;
            j["idle"] = p.idle;
        }
        arr.push_back(std::move(j));
    }
    return {{"format", "memx.scale/1"}, {"points", arr}};
}

namespace {

std::string xmlEscape(const std::string &s)
{
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

std::string num(double v)
{
    std::ostringstream o;
    o.precision(6);
    o << v;
    return o.str();
}

/// "Nice" tick step for a range (1, 2 or 5 x 10^k) giving about 5 ticks.
double tickStep(double range)
{
    if (range <= 0)
        return 1;
    const double raw = range / 5;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

} // namespace

std::string svgLineChart(const std::string &title, const std::string &xLabel, const std::string &yLabel,
                         const std::vector<ChartSeries> &series)
{
    double xmin = 0, xmax = 1, ymin = 0, ymax = 1;
    bool any = false;
    for (const ChartSeries &s : series) {
        if (s.x.size() != s.y.size())
            throw std::invalid_argument("chart series \"" + s.label + "\": x and y differ in length");
        for (size_t i = 0; i < s.x.size(); ++i) {
            if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]))
                continue;
            if (!any) {
                xmin = xmax = s.x[i];
                ymax = s.y[i];
                any = true;
            }
            xmin = std::min(xmin, s.x[i]);
            xmax = std::max(xmax, s.x[i]);
            ymax = std::max(ymax, s.y[i]);
        }
    }
    ymin = 0;
    if (xmax <= xmin)
        xmax = xmin + 1;
    if (ymax <= ymin)
        ymax = ymin + 1;
    const double ystep = tickStep(ymax - ymin);
    ymax = std::ceil(ymax / ystep) * ystep;
    const double xstep = tickStep(xmax - xmin);

    const double W = 640, H = 400, L = 80, R = 160, T = 40, B = 60;
    const double pw = W - L - R, ph = H - T - B;
    auto sx = [&](double x) { return L + (x - xmin) / (xmax - xmin) * pw; };
    auto sy = [&](double y) { return T + ph - (y - ymin) / (ymax - ymin) * ph; };
    static const char *colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

    std::ostringstream o;
    o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << W << "\" height=\"" << H
      << "\" viewBox=\"0 0 " << W << ' ' << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << xmlEscape(title)
      << "</text>\n"
      << "<line x1=\"" << L << "\" y1=\"" << T + ph << "\" x2=\"" << L + pw << "\" y2=\"" << T + ph
      << "\" stroke=\"black\"/>\n"
      << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << T + ph << "\" stroke=\"black\"/>\n";
    for (double y = ymin; y <= ymax + ystep * 1e-9; y += ystep)
        o << "<line x1=\"" << L - 4 << "\" y1=\"" << sy(y) << "\" x2=\"" << L + pw << "\" y2=\"" << sy(y)
          << "\" stroke=\"#ddd\"/>\n<text x=\"" << L - 8 << "\" y=\"" << sy(y) + 4 << "\" text-anchor=\"end\">"
          << num(y) << "</text>\n";
    for (double x = std::ceil(xmin / xstep) * xstep; x <= xmax + xstep * 1e-9; x += xstep)
        o << "<line x1=\"" << sx(x) << "\" y1=\"" << T + ph << "\" x2=\"" << sx(x) << "\" y2=\"" << T + ph + 4
          << "\" stroke=\"black\"/>\n<text x=\"" << sx(x) << "\" y=\"" << T + ph + 18 << "\" text-anchor=\"middle\">"
          << num(x) << "</text>\n";
    o << "<text x=\"" << L + pw / 2 << "\" y=\"" << H - 15 << "\" text-anchor=\"middle\">" << xmlEscape(xLabel)
      << "</text>\n"
      << "<text x=\"18\" y=\"" << T + ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " << T + ph / 2
      << ")\">" << xmlEscape(yLabel) << "</text>\n";
    for (size_t k = 0; k < series.size(); ++k) {
        const ChartSeries &s = series[k];
        const char *c = colours[k % 6];
        o << "<polyline fill=\"none\" stroke=\"" << c << "\" stroke-width=\"2\" points=\"";
        for (size_t i = 0; i < s.x.size(); ++i)
            if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
                o << (i ? " " : "") << sx(s.x[i]) << ',' << sy(s.y[i]);
        o << "\"/>\n";
        for (size_t i = 0; i < s.x.size(); ++i)
            if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
                o << "<circle cx=\"" << sx(s.x[i]) << "\" cy=\"" << sy(s.y[i]) << "\" r=\"3.5\" fill=\"" << c
                  << "\"/>\n";
        const double ly = T + 10 + 18 * static_cast<double>(k);
        o << "<line x1=\"" << L + pw + 12 << "\" y1=\"" << ly << "\" x2=\"" << L + pw + 32 << "\" y2=\"" << ly
          << "\" stroke=\"" << c << "\" stroke-width=\"2\"/>\n<text x=\"" << L + pw + 38 << "\" y=\"" << ly + 4 << "\">"
          << xmlEscape(s.label) << "</text>\n";
    }
    o << "</svg>\n";
    return o.str();
}

} // namespace memx
