#include "memx/predict/learnedpredictor.h"

#include "memx/io/formats.h"
#include "memx/predict/predictioncache.h"
#include "memx/predict/xgboost.h"
#include "memx/util/hash.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace memx {

namespace {

// Envelope features (features.cpp): devices by value, shape and size by range.
constexpr int kDeviceFeatures[] = {42, 43}; // device_peak_tflops, device_capacity_gib
constexpr int kRangeFeatures[] = {20, 22, 23, 40}; // stages, log2_gpus, max_tp, log10_model_params

} // namespace

std::vector<TrainingSample> buildSamples(const std::vector<MeasuredRun> &runs,
                                         const std::function<std::optional<Model>(const std::string &)> &modelOf,
                                         const ProfileSet *profiles, const CostOptions &cost,
                                         std::vector<std::string> *notes)
{
    std::vector<TrainingSample> out;
    for (const MeasuredRun &run : runs) {
        const std::optional<Model> model = modelOf(run.modelId);
        if (!model) {
            if (notes)
                notes->push_back("run " + run.id + ": model \"" + run.modelId + "\" is not in the project; skipped");
            continue;
        }
        PlanEstimate e;
        try {
            e = estimatePlan(run.plan, run.cluster, *model, profiles, cost);
        } catch (const std::invalid_argument &err) {
            if (notes)
                notes->push_back("run " + run.id + ": " + err.what() + "; skipped");
            continue;
        }
        TrainingSample s;
        s.runId = run.id;
        s.group = run.group;
        s.clusterName = run.clusterName;
        Plan anonymous = run.plan;
        anonymous.name.clear();
        s.planKey = run.modelId + "|" + run.clusterName + "|" + toJson(anonymous).dump();
        s.features = encodeFeatures(featureInputs(run.plan, run.cluster, *model, e));
        s.analyticTimeMs = e.iterationTimeMs;
        s.analyticPeakBytes = peakOfKind(e, run.memoryKind);
        s.analyticPeakUtilisation = e.peakUtilisation;
        for (const GpuMemory &g : e.gpus)
            if (g.totalBytes == e.peakBytes) {
                s.capacityBytes = g.capacityBytes;
                break;
            }
        s.measuredTimeMs = run.iterationTimeMs;
        s.measuredPeakBytes = run.peakMemoryBytes;
        s.measuredOutOfMemory = run.outOfMemory;
        s.rankingSet = run.clusterName + "|" + run.modelId + "|gbs " + std::to_string(run.plan.globalBatch);
        out.push_back(std::move(s));
    }
    return out;
}

struct LearnedPredictor::Impl {
    std::vector<XgbBooster> members;
    std::unique_ptr<std::mutex> lock = std::make_unique<std::mutex>();
    PredictorOptions options;
    std::vector<std::string> runIds;
    double oobTime = 0, oobMem = 0;
    /// Training envelope: per envelope feature, the distinct values (devices) or [min, max].
    std::map<int, std::vector<double>> seen; ///< feature index -> distinct values
    std::map<int, std::pair<double, double>> range; ///< feature index -> min, max
    int schema = kFeatureSchemaVersion;
    std::vector<std::uint8_t> bytes; // serialised form (cached)
    std::uint64_t digest = 0;
    /// Per feature any member splits on: its distinct thresholds, ascending. Two rows with the
    /// same count of thresholds at or below each of these features take the same branch at every
    /// node of every tree, so they get the same prediction (buildSplits).
    std::vector<std::pair<int, std::vector<float>>> splits;
    int threads = 1; ///< setThreads (guarded by lock)
    size_t parallelRows = kParallelPredictRows; ///< setParallelPredictRows (guarded by lock)
    int appliedThreads = -1; ///< the members' nthread now (-1: as trained or loaded)

    void buildSplits()
    {
        std::map<int, std::vector<float>> by;
        for (const XgbBooster &b : members)
            for (const auto &[f, t] : b.splits())
                by[f].push_back(t);
        splits.clear();
        for (auto &[f, t] : by) {
            if (f < 0 || f >= static_cast<int>(kFeatureCount))
                throw std::runtime_error("stored predictor: a tree splits on feature " + std::to_string(f)
                                         + ", expected 0.." + std::to_string(kFeatureCount - 1));
            std::sort(t.begin(), t.end());
            t.erase(std::unique(t.begin(), t.end()), t.end());
            splits.emplace_back(f, std::move(t));
        }
    }

    /// The rows of `features` that stand for all: classes[r] is row r's class, the returned rows
    /// are each class's first row (rows whose every split feature falls between the same two
    /// thresholds; missing values form their own bucket).
    std::vector<size_t> classify(const float *features, size_t rows, std::vector<std::uint32_t> &classes) const
    {
        const size_t k = splits.size();
        std::vector<std::uint32_t> key(rows * k);
        for (size_t r = 0; r < rows; ++r)
            for (size_t j = 0; j < k; ++j) {
                const float v = features[r * kFeatureCount + static_cast<size_t>(splits[j].first)];
                const std::vector<float> &t = splits[j].second;
                key[r * k + j] = std::isnan(v)
                    ? 0xffffffffu
                    : static_cast<std::uint32_t>(std::upper_bound(t.begin(), t.end(), v) - t.begin());
            }
        std::vector<size_t> firsts;
        std::unordered_multimap<std::uint64_t, std::uint32_t> seen; // key hash -> class
        seen.reserve(rows);
        classes.assign(rows, 0);
        for (size_t r = 0; r < rows; ++r) {
            const std::uint32_t *mine = key.data() + r * k;
            const std::uint64_t h = hashWords(mine, k);
            bool found = false;
            for (auto [it, end] = seen.equal_range(h); it != end && !found; ++it)
                if (std::equal(mine, mine + k, key.data() + firsts[it->second] * k)) {
                    classes[r] = it->second;
                    found = true;
                }
            if (!found) {
                classes[r] = static_cast<std::uint32_t>(firsts.size());
                seen.emplace(h, classes[r]);
                firsts.push_back(r);
            }
        }
        return firsts;
    }

    /// Sets the members' nthread to `n` unless it is already; `lock` held.
    void applyThreads(int n)
    {
        if (n == appliedThreads)
            return;
        for (XgbBooster &b : members)
            b.setParam("nthread", std::to_string(n));
        appliedThreads = n;
    }

    /// The first envelope feature `f` lies outside of (-1: inside). No strings: it runs per row of
    /// a learned search.
    int outsideEnvelope(const float *f) const
    {
        for (int i : kDeviceFeatures) {
            const auto it = seen.find(i);
            if (it == seen.end())
                continue;
            const double v = f[i];
            const bool known = std::any_of(it->second.begin(), it->second.end(), [&](double s) {
                return std::abs(s - v) <= 0.01 * std::max(1.0, std::abs(s));
            });
            if (!known)
                return i;
        }
        for (int i : kRangeFeatures) {
            const auto it = range.find(i);
            if (it == range.end())
                continue;
            const double v = f[i];
            // log10 of the parameter count: 25% either way is 0.097 in log10.
            const double slack = i == 40 ? 0.097 : 1e-6;
            if (v < it->second.first - slack || v > it->second.second + slack)
                return i;
        }
        return -1;
    }
};

LearnedPredictor::LearnedPredictor()
    : d(std::make_unique<Impl>())
{
}
LearnedPredictor::~LearnedPredictor() = default;
LearnedPredictor::LearnedPredictor(LearnedPredictor &&) noexcept = default;
LearnedPredictor &LearnedPredictor::operator=(LearnedPredictor &&) noexcept = default;

namespace {

std::map<std::string, std::string> xgbParams(const PredictorOptions &o, std::uint64_t seed)
{
    auto num = [](double v) {
        std::ostringstream s;
        s.precision(17);
        s << v;
        return s.str();
    };
    return {{"tree_method", "hist"},
            {"num_target", "2"},
            {"objective", "reg:squarederror"},
            {"base_score", "0"},
            {"max_depth", std::to_string(o.maxDepth)},
            {"eta", num(o.eta)},
            {"lambda", num(o.lambda)},
            {"min_child_weight", num(o.minChildWeight)},
            {"colsample_bytree", num(o.colsampleByTree)},
            {"max_bin", "64"},
            {"seed", std::to_string(seed % 2147483647ULL)},
            {"nthread", std::to_string(std::max(1, o.threads))}};
}

nlohmann::json optionsJson(const PredictorOptions &o)
{
    return {{"ensemble", o.ensemble},
            {"rounds", o.rounds},
            {"maxDepth", o.maxDepth},
            {"eta", o.eta},
            {"lambda", o.lambda},
            {"minChildWeight", o.minChildWeight},
            {"colsampleByTree", o.colsampleByTree},
            {"seed", o.seed},
            {"threads", o.threads}};
}

} // namespace

LearnedPredictor LearnedPredictor::train(const std::vector<TrainingSample> &all, const PredictorOptions &options,
                                         const ProgressFn &progress)
{
    std::vector<const TrainingSample *> samples;
    for (const TrainingSample &s : all)
        if (s.measuredPeakBytes && *s.measuredPeakBytes > 0 && s.measuredTimeMs > 0 && s.analyticTimeMs > 0
            && s.analyticPeakBytes > 0)
            samples.push_back(&s);
    if (samples.size() < 2)
        throw std::invalid_argument("training needs at least 2 measured runs with time and peak memory, found "
                                    + std::to_string(samples.size()));
    if (options.ensemble < 1 || options.rounds < 1 || options.maxDepth < 1)
        throw std::invalid_argument("predictor options: ensemble, rounds and max depth must be >= 1");
    const size_t n = samples.size();
    std::vector<float> x(n * kFeatureCount), y(n * 2);
    for (size_t i = 0; i < n; ++i) {
        std::copy(samples[i]->features.begin(), samples[i]->features.end(), x.begin() + i * kFeatureCount);
        y[2 * i] = static_cast<float>(std::log(samples[i]->measuredTimeMs / samples[i]->analyticTimeMs));
        y[2 * i + 1] = static_cast<float>(std::log(*samples[i]->measuredPeakBytes / samples[i]->analyticPeakBytes));
    }

    LearnedPredictor p;
    Impl &d = *p.d;
    d.options = options;
    for (const TrainingSample *s : samples) {
        d.runIds.push_back(s->runId);
        for (int i : kDeviceFeatures) {
            std::vector<double> &v = d.seen[i];
            const double x = s->features[static_cast<size_t>(i)];
            if (std::find(v.begin(), v.end(), x) == v.end())
                v.push_back(x);
        }
        for (int i : kRangeFeatures) {
            const double x = s->features[static_cast<size_t>(i)];
            auto [it, fresh] = d.range.emplace(i, std::make_pair(x, x));
            it->second = {std::min(it->second.first, x), std::max(it->second.second, x)};
        }
    }
    std::sort(d.runIds.begin(), d.runIds.end());

    const size_t K = static_cast<size_t>(options.ensemble);
    const size_t totalRounds = K * static_cast<size_t>(options.rounds);
    std::vector<double> oobSum(n * 2, 0.0);
    std::vector<int> oobCount(n, 0);
    for (size_t k = 0; k < K; ++k) {
        // Bootstrap sample (member 0 of a 1-member ensemble uses every sample once).
        std::vector<size_t> pick;
        std::vector<char> inBag(n, 0);
        if (K == 1) {
            for (size_t i = 0; i < n; ++i)
                pick.push_back(i);
        } else {
            std::mt19937_64 rng(options.seed * 1000003ULL + k);
            std::uniform_int_distribution<size_t> u(0, n - 1);
            for (size_t i = 0; i < n; ++i)
                pick.push_back(u(rng));
        }
        std::vector<float> bx(pick.size() * kFeatureCount), by(pick.size() * 2);
        for (size_t r = 0; r < pick.size(); ++r) {
            inBag[pick[r]] = 1;
            std::copy(x.begin() + pick[r] * kFeatureCount, x.begin() + (pick[r] + 1) * kFeatureCount,
                      bx.begin() + r * kFeatureCount);
            by[2 * r] = y[2 * pick[r]];
            by[2 * r + 1] = y[2 * pick[r] + 1];
        }
        XgbMatrix m(bx, pick.size(), kFeatureCount);
        m.setLabels(by, 2);
        XgbBooster b;
        bool cancelled = false;
        b.train(m, xgbParams(options, options.seed + k), options.rounds, [&](size_t done, size_t) {
            if (progress && !progress(k * options.rounds + done, totalRounds)) {
                cancelled = true;
                return false;
            }
            return true;
        });
        if (cancelled)
            throw Cancelled();
        // Out-of-bag predictions.
        std::vector<size_t> oob;
        for (size_t i = 0; i < n; ++i)
            if (!inBag[i])
                oob.push_back(i);
        if (!oob.empty()) {
            std::vector<float> ox(oob.size() * kFeatureCount);
            for (size_t r = 0; r < oob.size(); ++r)
                std::copy(x.begin() + oob[r] * kFeatureCount, x.begin() + (oob[r] + 1) * kFeatureCount,
                          ox.begin() + r * kFeatureCount);
            const std::vector<float> pr = b.predict(XgbMatrix(ox, oob.size(), kFeatureCount));
            for (size_t r = 0; r < oob.size(); ++r) {
                oobSum[2 * oob[r]] += pr[2 * r];
                oobSum[2 * oob[r] + 1] += pr[2 * r + 1];
                ++oobCount[oob[r]];
            }
        }
        d.members.push_back(std::move(b));
    }
    double st = 0, sm = 0;
    int cnt = 0;
    for (size_t i = 0; i < n; ++i)
        if (oobCount[i] > 0) {
            const double et = oobSum[2 * i] / oobCount[i] - y[2 * i];
            const double em = oobSum[2 * i + 1] / oobCount[i] - y[2 * i + 1];
            st += et * et;
            sm += em * em;
            ++cnt;
        }
    d.oobTime = cnt ? std::sqrt(st / cnt) : 0.0;
    d.oobMem = cnt ? std::sqrt(sm / cnt) : 0.0;
    d.buildSplits();
    d.bytes = p.serialize();
    d.digest = fnv1a64(std::string(d.bytes.begin(), d.bytes.end()));
    return p;
}

void LearnedPredictor::predictLogRatios(const float *features, size_t rows, std::vector<float> &timeLog,
                                        std::vector<float> &memLog, std::vector<float> &timeSpread,
                                        std::vector<float> &memSpread) const
{
    timeLog.assign(rows, 0.f);
    memLog.assign(rows, 0.f);
    timeSpread.assign(rows, 0.f);
    memSpread.assign(rows, 0.f);
    if (rows == 0)
        return;
    // Each class of rows the trees cannot tell apart is predicted once (a search's configurations
    // often differ only in what no split looks at, or within one pair of thresholds).
    std::vector<std::uint32_t> classes;
    const std::vector<size_t> firsts = d->classify(features, rows, classes);
    const size_t u = firsts.size();
    std::vector<float> x(u * kFeatureCount);
    for (size_t c = 0; c < u; ++c)
        std::copy(features + firsts[c] * kFeatureCount, features + (firsts[c] + 1) * kFeatureCount,
                  x.begin() + c * kFeatureCount);
    const XgbMatrix m(x, u, kFeatureCount);
    std::vector<double> s1(u * 2, 0.0), s2(u * 2, 0.0);
    {
        std::lock_guard<std::mutex> guard(*d->lock);
        // A batch too small to split: one thread. Every OpenMP region XGBoost opens with more
        // threads leaves its workers spinning (libgomp's busy wait) on cores the search needs.
        d->applyThreads(u < d->parallelRows ? 1 : d->threads);
        for (const XgbBooster &b : d->members) {
            const std::vector<float> pr = b.predict(m);
            for (size_t i = 0; i < u * 2; ++i) {
                s1[i] += pr[i];
                s2[i] += static_cast<double>(pr[i]) * pr[i];
            }
        }
    }
    const double k = static_cast<double>(d->members.size());
    for (size_t i = 0; i < rows; ++i) {
        const size_t c = classes[i];
        const double mt = s1[2 * c] / k, mm = s1[2 * c + 1] / k;
        const double vt = std::max(0.0, s2[2 * c] / k - mt * mt), vm = std::max(0.0, s2[2 * c + 1] / k - mm * mm);
        timeLog[i] = static_cast<float>(mt);
        memLog[i] = static_cast<float>(mm);
        timeSpread[i] = static_cast<float>(std::sqrt(vt + d->oobTime * d->oobTime));
        memSpread[i] = static_cast<float>(std::sqrt(vm + d->oobMem * d->oobMem));
        if (isExtrapolating(features + i * kFeatureCount)) {
            timeSpread[i] = std::max(timeSpread[i], static_cast<float>(kExtrapolationSpread));
            memSpread[i] = std::max(memSpread[i], static_cast<float>(kExtrapolationSpread));
        }
    }
}

static int envelopeIndex(const std::string &key)
{
    int i = -1;
    const auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), i);
    if (ec != std::errc() || ptr != key.data() + key.size() || i < 0 || i >= static_cast<int>(kFeatureCount))
        throw std::runtime_error("stored predictor: /envelope: expected feature indices, found \"" + key + "\"");
    return i;
}

std::string LearnedPredictor::extrapolation(const float *f) const
{
    const int i = d->outsideEnvelope(f);
    if (i < 0)
        return {};
    const double v = f[i];
    const std::string &name = featureNames()[static_cast<size_t>(i)];
    if (d->seen.count(i))
        return "a device (" + name + " " + std::to_string(v) + ") none of the training runs used";
    const auto &[lo, hi] = d->range.at(i);
    return name + " " + std::to_string(v) + " outside the training runs' [" + std::to_string(lo) + ", "
        + std::to_string(hi) + "]";
}

bool LearnedPredictor::isExtrapolating(const float *features) const
{
    return d->outsideEnvelope(features) >= 0;
}

void LearnedPredictor::setThreads(int threads) const
{
    std::lock_guard<std::mutex> guard(*d->lock);
    d->threads = std::max(1, threads);
}

void LearnedPredictor::setParallelPredictRows(size_t rows) const
{
    std::lock_guard<std::mutex> guard(*d->lock);
    d->parallelRows = rows;
}

Prediction LearnedPredictor::predict(const FeatureVector &features, double analyticTimeMs, double analyticPeakBytes,
                                     double analyticPeakUtilisation) const
{
    std::vector<float> tl, ml, ts, ms;
    predictLogRatios(features.data(), 1, tl, ml, ts, ms);
    Prediction p;
    p.timeMs = analyticTimeMs * std::exp(static_cast<double>(tl[0]));
    p.peakBytes = analyticPeakBytes * std::exp(static_cast<double>(ml[0]));
    p.timeSpreadMs = p.timeMs * ts[0];
    p.peakSpreadBytes = p.peakBytes * ms[0];
    p.peakUtilisation = analyticPeakUtilisation * std::exp(static_cast<double>(ml[0]));
    p.oomRisk = isOomRisk(p.peakUtilisation, ms[0]);
    p.extrapolationReason = extrapolation(features.data());
    p.extrapolating = !p.extrapolationReason.empty();
    return p;
}

std::vector<std::uint8_t> LearnedPredictor::serialize() const
{
    if (!d->bytes.empty())
        return d->bytes;
    nlohmann::json j;
    j["format"] = "memx.predictor/1";
    j["kind"] = "xgboost-log-ratio-ensemble";
    j["featureSchema"] = d->schema;
    j["features"] = featureNames();
    j["targets"] = {"log(measured/analytic iteration time)", "log(measured/analytic device-used peak memory)"};
    j["options"] = optionsJson(d->options);
    j["trainingRuns"] = d->runIds;
    j["oobRmse"] = {{"time", d->oobTime}, {"memory", d->oobMem}};
    nlohmann::json seen = nlohmann::json::object(), range = nlohmann::json::object();
    for (const auto &[i, v] : d->seen)
        seen[std::to_string(i)] = v;
    for (const auto &[i, r] : d->range)
        range[std::to_string(i)] = {r.first, r.second};
    j["envelope"] = {{"seen", seen}, {"range", range}};
    nlohmann::json members = nlohmann::json::array();
    for (const XgbBooster &b : d->members)
        members.push_back(nlohmann::json::binary(b.save()));
    j["members"] = members;
    return nlohmann::json::to_bson(j);
}

LearnedPredictor LearnedPredictor::deserialize(const std::vector<std::uint8_t> &bytes)
{
    nlohmann::json j;
    try {
        j = nlohmann::json::from_bson(bytes);
    } catch (const nlohmann::json::exception &e) {
        throw std::runtime_error(std::string("stored predictor is corrupt: ") + e.what());
    }
    auto need = [&](const char *key) -> const nlohmann::json & {
        if (!j.contains(key))
            throw std::runtime_error(std::string("stored predictor: /") + key + " is missing");
        return j.at(key);
    };
    if (!j.is_object() || need("format") != "memx.predictor/1")
        throw std::runtime_error("stored predictor: /format: expected \"memx.predictor/1\"");
    const nlohmann::json &schema = need("featureSchema");
    if (!schema.is_number_integer() || schema.get<int>() != kFeatureSchemaVersion)
        throw std::runtime_error("stored predictor: /featureSchema: expected " + std::to_string(kFeatureSchemaVersion)
                                 + ", found " + schema.dump() + " (retrain with 'memx train')");
    LearnedPredictor p;
    Impl &d = *p.d;
    try {
        const nlohmann::json &o = need("options");
        d.options.ensemble = o.at("ensemble").get<int>();
        d.options.rounds = o.at("rounds").get<int>();
        d.options.maxDepth = o.at("maxDepth").get<int>();
        d.options.eta = o.at("eta").get<double>();
        d.options.lambda = o.at("lambda").get<double>();
        d.options.minChildWeight = o.at("minChildWeight").get<double>();
        d.options.colsampleByTree = o.at("colsampleByTree").get<double>();
        d.options.seed = o.at("seed").get<std::uint64_t>();
        d.options.threads = o.at("threads").get<int>();
        d.runIds = need("trainingRuns").get<std::vector<std::string>>();
        d.oobTime = need("oobRmse").at("time").get<double>();
        d.oobMem = need("oobRmse").at("memory").get<double>();
        if (j.contains("envelope")) { // absent in models stored before the envelope: no check
            for (const auto &[k, v] : j.at("envelope").at("seen").items())
                d.seen[envelopeIndex(k)] = v.get<std::vector<double>>();
            for (const auto &[k, v] : j.at("envelope").at("range").items())
                d.range[envelopeIndex(k)] = {v.at(0).get<double>(), v.at(1).get<double>()};
        }
        for (const nlohmann::json &m : need("members")) {
            if (!m.is_binary())
                throw std::runtime_error("stored predictor: /members: expected binary models");
            XgbBooster b;
            b.load(std::vector<std::uint8_t>(m.get_binary().begin(), m.get_binary().end()));
            d.members.push_back(std::move(b));
        }
        if (!d.members.empty())
            d.buildSplits();
    } catch (const nlohmann::json::exception &e) {
        throw std::runtime_error(std::string("stored predictor is corrupt: ") + e.what());
    } catch (const XgbError &e) {
        throw std::runtime_error(std::string("stored predictor: ") + e.what());
    }
    if (d.members.empty())
        throw std::runtime_error("stored predictor: /members: expected at least one model");
    d.bytes = bytes;
    d.digest = fnv1a64(std::string(bytes.begin(), bytes.end()));
    return p;
}

int LearnedPredictor::schemaVersion() const
{
    return d->schema;
}
size_t LearnedPredictor::members() const
{
    return d->members.size();
}
const std::vector<std::string> &LearnedPredictor::trainingRunIds() const
{
    return d->runIds;
}
const PredictorOptions &LearnedPredictor::options() const
{
    return d->options;
}
double LearnedPredictor::oobTimeRmse() const
{
    return d->oobTime;
}
double LearnedPredictor::oobMemRmse() const
{
    return d->oobMem;
}
std::uint64_t LearnedPredictor::digest() const
{
    return d->digest;
}

std::string LearnedPredictor::describe() const
{
    return "learned (xgboost, " + std::to_string(d->runIds.size()) + " runs, schema v" + std::to_string(d->schema)
        + ")";
}

} // namespace memx
