#include "memx/cost/calibration.h"

#include "memx/profile/layerprofile.h"

#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace memx {

namespace {

constexpr double kGiB = 1073741824.0;

struct Item {
    const MeasuredRun *run = nullptr;
    Model model;
    std::set<std::string> devices; ///< device ids the plan runs on
    bool modelledCompute = false; ///< some stage's compute comes from the model, not a profile
};

/// Progress over a known number of estimatePlan evaluations.
class Counter {
public:
    Counter(const ProgressFn &fn, size_t total)
        : mFn(fn)
        , mTotal(total)
    {
    }
    void add(size_t n)
    {
        mDone = std::min(mTotal, mDone + n);
        if (mFn && !mFn(mDone, mTotal))
            throw Cancelled();
    }

private:
    const ProgressFn &mFn;
    size_t mTotal, mDone = 0;
};

/// The calibration being fitted, applied to one run's own cluster copy.
struct Figures {
    std::map<std::string, double> efficiency;
    std::map<std::string, GpuSpec::RuntimeMemory> memory;
    std::optional<double> hostUs;
};

PlanEstimate estimateWith(const Item &it, const Figures &f, const ProfileSet *profiles, const CostOptions &base)
{
    Cluster c = it.run->cluster;
    for (GpuSpec &d : c.devices) {
        if (auto e = f.efficiency.find(d.id); e != f.efficiency.end())
            d.measuredComputeEfficiency = e->second;
        if (auto m = f.memory.find(d.id); m != f.memory.end())
            d.runtimeMemory = m->second;
    }
    CostOptions o = base;
    if (f.hostUs)
        o.hostOpMicroseconds = *f.hostUs;
    return estimatePlan(it.run->plan, c, it.model, profiles, o);
}

double timeError(const std::vector<const Item *> &items, const Figures &f, const ProfileSet *profiles,
                 const CostOptions &base, Counter &counter)
{
    double sum = 0;
    for (const Item *it : items)
        sum += std::abs(std::log(estimateWith(*it, f, profiles, base).iterationTimeMs / it->run->iterationTimeMs));
    counter.add(items.size());
    return items.empty() ? 0.0 : sum / static_cast<double>(items.size());
}

/// Golden-section search of `x` in [lo, hi] minimising `err(x)` (unimodal enough here).
template<typename F> double golden(double lo, double hi, int iterations, F err)
{
    const double g = (std::sqrt(5.0) - 1.0) / 2.0;
    double a = lo, b = hi, c = b - g * (b - a), d = a + g * (b - a);
    double fc = err(c), fd = err(d);
    for (int i = 0; i < iterations; ++i) {
        if (fc < fd) {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = err(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = err(d);
        }
    }
    return fc < fd ? c : d;
}

constexpr int kGoldenIterations = 18;
constexpr int kRounds = 3;
constexpr size_t kFitRuns = 240;

void fitEfficiencies(const std::vector<const Item *> &timed, const std::set<std::string> &devices, Figures &f,
                     const ProfileSet *profiles, const CostOptions &base, Counter &counter);

void fitTime(const std::vector<const Item *> &items, Figures &f, const ProfileSet *profiles, const CostOptions &base,
             Counter &counter)
{
    std::vector<const Item *> timed;
    for (const Item *it : items)
        if (it->run->iterationTimeMs > 0 && it->modelledCompute)
            timed.push_back(it);
    if (timed.size() < 3)
        return;
    // At most kFitRuns runs, spread over the set, decide the figures (the fit is cheap then).
    if (timed.size() > kFitRuns) {
        std::vector<const Item *> spread;
        for (size_t i = 0; i < kFitRuns; ++i)
            spread.push_back(timed[i * timed.size() / kFitRuns]);
        timed.swap(spread);
    }
    std::set<std::string> devices;
    for (const Item *it : timed)
        devices.insert(it->devices.begin(), it->devices.end());
    // The host cost and the efficiencies interact (host-bound small runs, compute-bound large
    // ones): alternate coordinate searches.
    for (int round = 0; round < kRounds; ++round) {
        f.hostUs = golden(0.0, 150.0, kGoldenIterations, [&](double x) {
            Figures g = f;
            g.hostUs = x;
            return timeError(timed, g, profiles, base, counter);
        });
        fitEfficiencies(timed, devices, f, profiles, base, counter);
    }
}

void fitEfficiencies(const std::vector<const Item *> &timed, const std::set<std::string> &devices, Figures &f,
                     const ProfileSet *profiles, const CostOptions &base, Counter &counter)
{
    for (const std::string &dev : devices) {
        std::vector<const Item *> on;
        for (const Item *it : timed)
            if (it->devices.count(dev))
                on.push_back(it);
        if (on.size() < 3)
            continue;
        f.efficiency[dev] = golden(0.15, 0.98, kGoldenIterations, [&](double x) {
            Figures g = f;
            g.efficiency[dev] = x;
            return timeError(on, g, profiles, base, counter);
        });
    }
}

/// Least squares of y = a x1 + b + c x2 with a, b, c >= 0 (active set: drop a negative one, refit).
std::array<double, 3> nonNegativeFit(const std::vector<std::array<double, 3>> &rows, const std::vector<double> &y)
{
    std::array<bool, 3> active {true, true, true};
    for (int round = 0; round < 3; ++round) {
        std::vector<int> cols;
        for (int j = 0; j < 3; ++j)
            if (active[static_cast<size_t>(j)])
                cols.push_back(j);
        if (cols.empty())
            break;
        Eigen::MatrixXd A(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(cols.size()));
        Eigen::VectorXd b(static_cast<Eigen::Index>(rows.size()));
        for (size_t i = 0; i < rows.size(); ++i) {
            for (size_t k = 0; k < cols.size(); ++k)
                A(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(k)) = rows[i][static_cast<size_t>(cols[k])];
            b(static_cast<Eigen::Index>(i)) = y[i];
        }
        const Eigen::VectorXd x = A.colPivHouseholderQr().solve(b);
        std::array<double, 3> out {0, 0, 0};
        bool ok = true;
        for (size_t k = 0; k < cols.size(); ++k) {
            out[static_cast<size_t>(cols[k])] = x(static_cast<Eigen::Index>(k));
            if (x(static_cast<Eigen::Index>(k)) < 0) {
                active[static_cast<size_t>(cols[k])] = false;
                ok = false;
            }
        }
        if (ok)
            return out;
    }
    return {0, 0, 0};
}

void fitMemory(const std::vector<const Item *> &items, Figures &f, const ProfileSet *profiles, const CostOptions &base,
               Counter &counter)
{
    std::map<std::string, std::vector<std::array<double, 3>>> rows;
    std::map<std::string, std::vector<double>> ys;
    for (const Item *it : items) {
        if (!it->run->peakMemoryBytes || it->run->memoryKind != MemoryKind::DeviceUsed)
            continue;
        const PlanEstimate e = estimateWith(*it, f, profiles, base);
        if (e.fullestGpu < 0)
            continue;
        const GpuMemory &g = e.gpus[static_cast<size_t>(e.fullestGpu)];
        const Stage &st = it->run->plan.stages[static_cast<size_t>(g.stage)];
        const Replica &r = st.replicas[static_cast<size_t>(g.replica)];
        const double groups = (r.tp > 1) + (st.dp() > 1) + (it->run->plan.pp() > 1);
        rows[g.device].push_back({g.allocatedBytes / kGiB, 1.0, groups});
        ys[g.device].push_back((*it->run->peakMemoryBytes - g.allocatedBytes) / kGiB);
    }
    counter.add(items.size());
    for (auto &[dev, r] : rows) {
        if (r.size() < 4)
            continue;
        const std::array<double, 3> x = nonNegativeFit(r, ys[dev]);
        GpuSpec::RuntimeMemory m;
        m.reserveFraction = std::min(1.0, x[0]);
        m.contextGiB = std::min(64.0, x[1]);
        m.communicatorGiB = std::min(64.0, x[2]);
        m.source = "memx profile calibrate: least squares over " + std::to_string(r.size()) + " measured runs";
        f.memory[dev] = m;
    }
}

struct Errors {
    double time = 0, mem = 0;
    int timeRuns = 0, memRuns = 0;
    double timePct() const { return timeRuns ? 100.0 * time / timeRuns : 0.0; }
    double memPct() const { return memRuns ? 100.0 * mem / memRuns : 0.0; }
};

Errors errorsOf(const std::vector<const Item *> &items, const Figures &f, const ProfileSet *profiles,
                const CostOptions &base, const std::string &device = {})
{
    Errors e;
    for (const Item *it : items) {
        if (!device.empty() && !it->devices.count(device))
            continue;
        const PlanEstimate p = estimateWith(*it, f, profiles, base);
        if (it->run->iterationTimeMs > 0) {
            e.time += std::abs(p.iterationTimeMs - it->run->iterationTimeMs) / it->run->iterationTimeMs;
            ++e.timeRuns;
        }
        if (it->run->peakMemoryBytes && *it->run->peakMemoryBytes > 0) {
            e.mem
                += std::abs(peakOfKind(p, it->run->memoryKind) - *it->run->peakMemoryBytes) / *it->run->peakMemoryBytes;
            ++e.memRuns;
        }
    }
    return e;
}

Figures fit(const std::vector<const Item *> &items, const ProfileSet *profiles, const CostOptions &base,
            Counter &counter)
{
    Figures f;
    fitTime(items, f, profiles, base, counter);
    fitMemory(items, f, profiles, base, counter);
    return f;
}

size_t fitEvaluations(size_t items, size_t devices)
{
    return kRounds * (2 + kGoldenIterations) * std::min(items, kFitRuns) * (1 + devices) + items;
}

} // namespace

Calibration calibrate(const std::vector<MeasuredRun> &runs,
                      const std::function<std::optional<Model>(const std::string &)> &modelOf,
                      const ProfileSet *profiles, const CostOptions &base, int folds, const ProgressFn &progress)
{
    std::vector<Item> items;
    std::set<std::string> allDevices;
    for (const MeasuredRun &r : runs) {
        if (r.outOfMemory)
            continue;
        std::optional<Model> m = modelOf(r.modelId);
        if (!m)
            continue;
        Item it;
        it.run = &r;
        it.model = *m;
        try {
            const PlanEstimate e = estimatePlan(r.plan, r.cluster, *m, profiles, base);
            for (const GpuMemory &g : e.gpus)
                it.devices.insert(g.device);
            for (const StageEstimate &s : e.stages)
                it.modelledCompute = it.modelledCompute || !s.profiled;
        } catch (const std::invalid_argument &) {
            continue;
        }
        allDevices.insert(it.devices.begin(), it.devices.end());
        items.push_back(std::move(it));
    }
    if (items.size() < 3)
        throw std::invalid_argument("calibration needs at least 3 measured runs that ran, found "
                                    + std::to_string(items.size()));
    std::vector<const Item *> all;
    for (const Item &it : items)
        all.push_back(&it);
    const int k = folds >= 2 ? std::min<int>(folds, static_cast<int>(items.size())) : 0;
    Counter counter(progress, fitEvaluations(items.size(), allDevices.size()) * (1 + (k > 0 ? 1 : 0)));

    Calibration c;
    c.runs = static_cast<int>(items.size());
    const Figures f = fit(all, profiles, base, counter);
    c.hostOpMicroseconds = f.hostUs;
    const Errors before = errorsOf(all, Figures {}, profiles, base), after = errorsOf(all, f, profiles, base);
    c.timeMapeDefaultsPct = before.timePct();
    c.timeMapeCalibratedPct = after.timePct();
    c.memMapeDefaultsPct = before.memPct();
    c.memMapeCalibratedPct = after.memPct();
    for (const std::string &dev : allDevices) {
        DeviceCalibration d;
        d.device = dev;
        if (auto e = f.efficiency.find(dev); e != f.efficiency.end())
            d.gemmEfficiency = e->second;
        if (auto m = f.memory.find(dev); m != f.memory.end()) {
            d.contextGiB = m->second.contextGiB;
            d.communicatorGiB = m->second.communicatorGiB;
            d.reserveFraction = m->second.reserveFraction;
        }
        const Errors b = errorsOf(all, Figures {}, profiles, base, dev), a = errorsOf(all, f, profiles, base, dev);
        d.timeRuns = a.timeRuns;
        d.memoryRuns = a.memRuns;
        d.timeMapeBeforePct = b.timePct();
        d.timeMapeAfterPct = a.timePct();
        d.memMapeBeforePct = b.memPct();
        d.memMapeAfterPct = a.memPct();
        c.devices.push_back(d);
    }
    if (k > 0) {
        // Each fold's runs predicted with the figures fitted on the other folds.
        Errors out;
        c.folds = k;
        for (int fold = 0; fold < k; ++fold) {
            std::vector<const Item *> train, test;
            for (size_t i = 0; i < all.size(); ++i)
                (static_cast<int>(i % static_cast<size_t>(k)) == fold ? test : train).push_back(all[i]);
            Counter inner(progress, 0);
            const Figures g = fit(train, profiles, base, inner);
            const Errors e = errorsOf(test, g, profiles, base);
            out.time += e.time;
            out.timeRuns += e.timeRuns;
            out.mem += e.mem;
            out.memRuns += e.memRuns;
            counter.add(fitEvaluations(train.size(), allDevices.size()) / static_cast<size_t>(k));
        }
        c.timeMapeOutOfSamplePct = out.timePct();
        c.memMapeOutOfSamplePct = out.memPct();
    }
    return c;
}

void applyCalibration(const Calibration &c, Cluster &cluster, CostOptions &options)
{
    if (c.hostOpMicroseconds)
        options.hostOpMicroseconds = *c.hostOpMicroseconds;
    for (GpuSpec &d : cluster.devices)
        for (const DeviceCalibration &dc : c.devices) {
            if (dc.device != d.id)
                continue;
            if (dc.gemmEfficiency)
                d.measuredComputeEfficiency = dc.gemmEfficiency;
            if (dc.contextGiB || dc.communicatorGiB || dc.reserveFraction) {
                d.runtimeMemory.contextGiB = dc.contextGiB;
                d.runtimeMemory.communicatorGiB = dc.communicatorGiB;
                d.runtimeMemory.reserveFraction = dc.reserveFraction;
                d.runtimeMemory.source = "memx profile calibrate";
            }
        }
}

namespace {

nlohmann::json opt(const std::optional<double> &v)
{
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::optional<double> readOpt(const nlohmann::json &j, const char *key, double lo, double hi, const std::string &where)
{
    if (!j.contains(key) || j.at(key).is_null())
        return std::nullopt;
    const nlohmann::json &v = j.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
        throw std::runtime_error("calibration: " + where + "/" + key + ": expected a number in [" + std::to_string(lo)
                                 + ", " + std::to_string(hi) + "], found " + v.dump());
    return v.get<double>();
}

} // namespace

nlohmann::json toJson(const Calibration &c)
{
    nlohmann::json devices = nlohmann::json::array();
    for (const DeviceCalibration &d : c.devices)
        devices.push_back({{"device", d.device},
                           {"timeRuns", d.timeRuns},
                           {"memoryRuns", d.memoryRuns},
                           {"gemmEfficiency", opt(d.gemmEfficiency)},
                           {"contextGiB", opt(d.contextGiB)},
                           {"communicatorGiB", opt(d.communicatorGiB)},
                           {"reserveFraction", opt(d.reserveFraction)},
                           {"timeMapeBeforePct", d.timeMapeBeforePct},
                           {"timeMapeAfterPct", d.timeMapeAfterPct},
                           {"memoryMapeBeforePct", d.memMapeBeforePct},
                           {"memoryMapeAfterPct", d.memMapeAfterPct}});
    return {{"format", "memx.calibration/1"},
            {"runs", c.runs},
            {"hostOpMicroseconds", opt(c.hostOpMicroseconds)},
            {"devices", devices},
            {"folds", c.folds},
            {"timeMapePct",
             {{"defaults", c.timeMapeDefaultsPct},
              {"calibrated", c.timeMapeCalibratedPct},
              {"outOfSample", c.timeMapeOutOfSamplePct}}},
            {"memoryMapePct",
             {{"defaults", c.memMapeDefaultsPct},
              {"calibrated", c.memMapeCalibratedPct},
              {"outOfSample", c.memMapeOutOfSamplePct}}}};
}

Calibration calibrationFromJson(const nlohmann::json &j)
{
    if (!j.is_object() || j.value("format", "") != "memx.calibration/1")
        throw std::runtime_error("calibration: /format: expected \"memx.calibration/1\"");
    Calibration c;
    c.hostOpMicroseconds = readOpt(j, "hostOpMicroseconds", 0, 1e6, "");
    if (!j.contains("devices") || !j.at("devices").is_array())
        throw std::runtime_error("calibration: /devices: expected an array");
    for (size_t i = 0; i < j.at("devices").size(); ++i) {
        const nlohmann::json &d = j.at("devices")[i];
        const std::string where = "/devices/" + std::to_string(i);
        if (!d.is_object() || !d.contains("device") || !d.at("device").is_string())
            throw std::runtime_error("calibration: " + where + "/device: expected a device id");
        DeviceCalibration dc;
        dc.device = d.at("device").get<std::string>();
        dc.gemmEfficiency = readOpt(d, "gemmEfficiency", 0.001, 1.0, where);
        dc.contextGiB = readOpt(d, "contextGiB", 0, 64, where);
        dc.communicatorGiB = readOpt(d, "communicatorGiB", 0, 64, where);
        dc.reserveFraction = readOpt(d, "reserveFraction", 0, 1, where);
        c.devices.push_back(dc);
    }
    return c;
}

} // namespace memx
