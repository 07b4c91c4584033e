#include "memx/profiling/profileio.h"

#include "memx/io/formats.h"
#include "memx/profiling/storedvalues.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"
#include "memx/util/jsonreader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace memx {

using nlohmann::json;

std::optional<ProfileOrigin> profileOriginFromString(const std::string &text)
{
    for (ProfileOrigin o : {ProfileOrigin::Measured, ProfileOrigin::Simulated, ProfileOrigin::Interpolated})
        if (text == toString(o))
            return o;
    return std::nullopt;
}

static json optionalJson(const std::optional<double> &v)
{
    return v ? json(*v) : json(nullptr);
}

/// Resolves a GPU id or alias to the catalogue id; records a problem (with suggestions) when unknown.
static std::string resolveGpu(const std::string &name, const Catalogue &catalogue, Diagnostics &diags,
                              const std::string &pointer)
{
    if (name.empty() || catalogue.devices().empty())
        return name;
    if (const GpuSpec *spec = catalogue.find(name))
        return spec->id;
    std::string hint;
    const auto suggestions = catalogue.suggest(name);
    if (!suggestions.empty()) {
        hint = " (did you mean";
        for (size_t i = 0; i < suggestions.size(); ++i)
            hint += (i ? ", \"" : " \"") + suggestions[i] + "\"";
        hint += "?)";
    }
    diags.error(pointer, "unknown GPU \"" + name + "\": expected a catalogue id or alias" + hint);
    return name;
}

json toJson(const LayerProfile &p)
{
    json layers = json::array();
    for (const LayerMeasurement &m : p.layers)
        layers.push_back({{"forwardMs", m.forwardMs},
                          {"backwardMs", m.backwardMs},
                          {"optimizerMs", m.optimizerMs},
                          {"paramBytes", optionalJson(m.paramBytes)},
                          {"activationBytes", optionalJson(m.activationBytes)}});
    json j {{"gpu", p.key.gpu},
            {"model", p.key.model},
            {"tp", p.key.tp},
            {"microBatch", p.key.microBatch},
            {"seqLength", p.key.seqLength},
            {"origin", toString(p.origin)},
            {"layers", layers}};
    if (!p.source.empty())
        j["source"] = p.source;
    if (!p.includesTpCommunication)
        j["includesTpCommunication"] = false;
    return j;
}

LayerProfile parseLayerProfile(const json &j, const std::string &pointer, Diagnostics &diags,
                               const Catalogue &catalogue)
{
    LayerProfile p;
    JsonObjectReader r(j, pointer, diags);
    if (!r.valid())
        return p;
    r.rejectUnknownKeys(
        {"gpu", "model", "tp", "microBatch", "seqLength", "origin", "source", "layers", "includesTpCommunication"});
    p.key.gpu = resolveGpu(r.requireString("gpu"), catalogue, diags, r.pointerTo("gpu"));
    p.key.model = r.requireString("model");
    if (r.has("model") && p.key.model.empty())
        r.error("model", "expected a model id, found an empty string");
    p.key.tp = static_cast<int>(r.requireInt("tp", 1, 1024));
    p.key.microBatch = static_cast<int>(r.requireInt("microBatch", 1, 1 << 20));
    p.key.seqLength = static_cast<int>(r.requireInt("seqLength", 1, 1 << 24));
    if (auto o = r.optionalEnum("origin", {"measured", "simulated", "interpolated"}))
        p.origin = static_cast<ProfileOrigin>(*o);
    p.source = r.optionalString("source").value_or("");
    p.includesTpCommunication = r.optionalBool("includesTpCommunication").value_or(true);
    if (const json *layers = r.requireArray("layers")) {
        if (layers->size() < 3)
            r.error("layers",
                    "expected at least 3 layers (embedding, one transformer layer, output layer), found "
                        + std::to_string(layers->size()));
        for (size_t i = 0; i < layers->size(); ++i) {
            JsonObjectReader lr((*layers)[i], jsonPointerJoin(r.pointerTo("layers"), i), diags);
            if (!lr.valid())
                continue;
            lr.rejectUnknownKeys({"forwardMs", "backwardMs", "optimizerMs", "paramBytes", "activationBytes"});
            LayerMeasurement m;
            m.forwardMs = lr.requireNumber("forwardMs", 0, kMaxStoredLayerTimeMs);
            m.backwardMs = lr.requireNumber("backwardMs", 0, kMaxStoredLayerTimeMs);
            m.optimizerMs = lr.optionalNumber("optimizerMs", 0, kMaxStoredLayerTimeMs).value_or(0.0);
            // Absent or null: unknown.
            if (lr.has("paramBytes"))
                m.paramBytes = lr.nullableNumber("paramBytes", 0, kMaxStoredBytes);
            if (lr.has("activationBytes"))
                m.activationBytes = lr.nullableNumber("activationBytes", 0, kMaxStoredBytes);
            p.layers.push_back(m);
        }
    }
    return p;
}

json toJson(const MeasuredRun &run)
{
    return {{"id", run.id},
            {"plan", toJson(run.plan)},
            {"clusterName", run.clusterName},
            {"cluster", toJson(run.cluster)},
            {"modelId", run.modelId},
            {"iterationTimeMs", run.iterationTimeMs},
            {"peakMemoryBytes", optionalJson(run.peakMemoryBytes)},
            {"memoryKind", toString(run.memoryKind)},
            {"source", run.source},
            {"date", run.date},
            {"group", run.group},
            {"outOfMemory", run.outOfMemory}};
}

/// Re-records the problems of a nested document under `prefix`.
static void appendNested(Diagnostics &to, const Diagnostics &nested, const std::string &prefix)
{
    for (const Diagnostic &d : nested.items())
        to.error(prefix + (d.pointer == "/" ? std::string() : d.pointer), d.message);
}

MeasuredRun parseMeasuredRun(const json &j, const std::string &pointer, Diagnostics &diags)
{
    MeasuredRun run;
    JsonObjectReader r(j, pointer, diags);
    if (!r.valid())
        return run;
    r.rejectUnknownKeys({"id", "plan", "clusterName", "cluster", "modelId", "iterationTimeMs", "peakMemoryBytes",
                         "memoryKind", "source", "date", "group", "outOfMemory"});
    run.id = r.requireString("id");
    run.clusterName = r.requireString("clusterName");
    run.modelId = r.requireString("modelId");
    run.iterationTimeMs = r.requireNumber("iterationTimeMs", 0, kMaxStoredRunTimeMs);
    run.peakMemoryBytes = r.nullableNumber("peakMemoryBytes", 0, kMaxStoredBytes);
    if (auto k = r.optionalEnum("memoryKind", {"allocator-max", "reserved", "device-used"}))
        run.memoryKind = static_cast<MemoryKind>(*k);
    run.source = r.optionalString("source").value_or("");
    run.date = r.optionalString("date").value_or("");
    run.group = r.optionalString("group").value_or("");
    run.outOfMemory = r.optionalBool("outOfMemory").value_or(false);
    if (const json *plan = r.requireObject("plan")) {
        Diagnostics nested(diags.file());
        run.plan = parsePlan(*plan, nested);
        appendNested(diags, nested, r.pointerTo("plan"));
    }
    if (const json *cluster = r.requireObject("cluster")) {
        Diagnostics nested(diags.file());
        run.cluster = parseCluster(*cluster, builtinCatalogue(), nested);
        appendNested(diags, nested, r.pointerTo("cluster"));
    }
    return run;
}

json toJson(const NetworkMeasurement &m)
{
    json curve = json::array();
    for (const CurvePoint &p : m.curve)
        curve.push_back({p.bytes, p.bandwidthGBps});
    return {{"scope", toString(m.scope)},
            {"senderGpu", m.senderGpu},
            {"senderGpusPerNode", m.senderGpusPerNode},
            {"senderZone", m.senderZone},
            {"receiverGpu", m.receiverGpu},
            {"receiverGpusPerNode", m.receiverGpusPerNode},
            {"receiverZone", m.receiverZone},
            {"capGBps", m.capGBps},
            {"curve", curve},
            {"source", m.source}};
}

NetworkMeasurement parseNetworkMeasurement(const json &j, const std::string &pointer, Diagnostics &diags)
{
    NetworkMeasurement m;
    JsonObjectReader r(j, pointer, diags);
    if (!r.valid())
        return m;
    r.rejectUnknownKeys({"scope", "senderGpu", "senderGpusPerNode", "senderZone", "receiverGpu", "receiverGpusPerNode",
                         "receiverZone", "capGBps", "curve", "source"});
    m.scope = r.requireEnum("scope", {"intra", "inter"}) == 0 ? LinkScope::IntraNode : LinkScope::InterNode;
    m.senderGpu = r.requireString("senderGpu");
    m.senderGpusPerNode = static_cast<int>(r.requireInt("senderGpusPerNode", 1, 1024));
    m.senderZone = r.optionalString("senderZone").value_or("");
    m.receiverGpu = r.requireString("receiverGpu");
    m.receiverGpusPerNode = static_cast<int>(r.requireInt("receiverGpusPerNode", 1, 1024));
    m.receiverZone = r.optionalString("receiverZone").value_or("");
    m.capGBps = r.optionalNumber("capGBps", 0, 1e9).value_or(0.0);
    m.source = r.optionalString("source").value_or("");
    if (const json *curve = r.requireArray("curve")) {
        for (size_t i = 0; i < curve->size(); ++i) {
            const json &pt = (*curve)[i];
            if (!pt.is_array() || pt.size() != 2 || !pt[0].is_number() || !pt[1].is_number()) {
                diags.error(jsonPointerJoin(r.pointerTo("curve"), i),
                            "expected [bytes, GB/s], found " + describeJson(pt));
                continue;
            }
            m.curve.push_back({pt[0].get<double>(), pt[1].get<double>()});
        }
    }
    return m;
}

std::vector<LayerProfile> parseProfileJson(const std::string &text, const std::string &file, const Catalogue &catalogue)
{
    const json j = parseJsonText(text, file);
    Diagnostics diags(file);
    std::vector<LayerProfile> out;
    JsonObjectReader r(j, "/", diags);
    if (r.valid()) {
        r.requireFormat(kProfileFormat);
        r.rejectUnknownKeys({"format", "profiles"});
        if (const json *profiles = r.requireArray("profiles")) {
            std::map<ProfileKey, size_t> seen;
            for (size_t i = 0; i < profiles->size(); ++i) {
                const std::string p = jsonPointerJoin("/profiles", i);
                LayerProfile lp = parseLayerProfile((*profiles)[i], p, diags, catalogue);
                if (lp.source.empty())
                    lp.source = file;
                auto [it, inserted] = seen.emplace(lp.key, i);
                if (!inserted && !lp.key.gpu.empty())
                    diags.error(p,
                                "duplicate profile: same gpu, model, tp, microBatch and seqLength as /profiles/"
                                    + std::to_string(it->second));
                out.push_back(std::move(lp));
            }
        }
    }
    diags.throwIfAny();
    return out;
}

std::string profilesToJsonText(const std::vector<LayerProfile> &profiles)
{
    json arr = json::array();
    for (const LayerProfile &p : profiles)
        arr.push_back(toJson(p));
    return json {{"format", kProfileFormat}, {"profiles", arr}}.dump(2) + "\n";
}

// ---- CSV ----

std::vector<std::string> splitCsvLine(const std::string &line)
{
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                cell += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                cell += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            cells.push_back(cell);
            cell.clear();
        } else {
            cell += c;
        }
    }
    cells.push_back(cell);
    for (std::string &s : cells) {
        const auto b = s.find_first_not_of(" \t");
        const auto e = s.find_last_not_of(" \t");
        s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    }
    return cells;
}

static std::optional<double> parseNumberCell(const std::string &s)
{
    double v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

static std::string csvNumber(double v)
{
    char buf[64];
    const auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc() ? std::string(buf, ptr) : std::to_string(v);
}

static std::string csvCell(const std::string &s)
{
    if (s.find_first_of(",\"\n") == std::string::npos)
        return s;
    std::string out = "\"";
    for (char c : s)
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

std::vector<LayerProfile> parseProfileCsv(const std::string &text, const std::string &file, const Catalogue &catalogue)
{
    static const std::vector<std::string> kColumns
        = {"gpu",        "model",       "tp",           "micro_batch", "seq_length",      "layer",
           "forward_ms", "backward_ms", "optimizer_ms", "param_bytes", "activation_bytes"};
    Diagnostics diags(file);
    std::map<ProfileKey, std::map<int, LayerMeasurement>> rows;
    std::map<ProfileKey, int> firstLine;
    size_t lineNo = 0, pos = 0;
    bool header = false;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
        pos = nl == std::string::npos ? text.size() : nl + 1;
        ++lineNo;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos || line[line.find_first_not_of(" \t")] == '#')
            continue;
        const std::string where = "line " + std::to_string(lineNo);
        std::vector<std::string> cells = splitCsvLine(line);
        if (!header) {
            if (cells != kColumns) {
                diags.error(where,
                            std::string("expected the header \"") + kProfileCsvHeader + "\", found \"" + line + "\"");
                diags.throwIfAny();
            }
            header = true;
            continue;
        }
        if (cells.size() != kColumns.size()) {
            diags.error(where,
                        "expected " + std::to_string(kColumns.size()) + " columns, found "
                            + std::to_string(cells.size()));
            continue;
        }
        const size_t before = diags.size();
        auto number = [&](size_t col, double min, double max, bool optional) -> std::optional<double> {
            const std::string at = where + ", column " + kColumns[col];
            if (cells[col].empty()) {
                if (!optional)
                    diags.error(at, "expected a number, found an empty cell");
                return std::nullopt;
            }
            auto v = parseNumberCell(cells[col]);
            if (!v)
                diags.error(at, "expected a number, found \"" + cells[col] + "\"");
            else if (*v < min || *v > max)
                diags.error(
                    at, "expected a number in [" + csvNumber(min) + ", " + csvNumber(max) + "], found " + cells[col]);
            else
                return v;
            return std::nullopt;
        };
        auto integer = [&](size_t col, double min, double max) -> int {
            auto v = number(col, min, max, false);
            if (v && std::floor(*v) != *v) {
                diags.error(where + ", column " + kColumns[col], "expected an integer, found " + cells[col]);
                return 0;
            }
            return v ? static_cast<int>(*v) : 0;
        };
        ProfileKey key;
        if (cells[0].empty())
            diags.error(where + ", column gpu", "expected a GPU id or alias, found an empty cell");
        else
            key.gpu = resolveGpu(cells[0], catalogue, diags, where + ", column gpu");
        key.model = cells[1];
        if (key.model.empty())
            diags.error(where + ", column model", "expected a model id, found an empty cell");
        key.tp = integer(2, 1, 1024);
        key.microBatch = integer(3, 1, 1 << 20);
        key.seqLength = integer(4, 1, 1 << 24);
        const int layer = integer(5, 0, 100000);
        LayerMeasurement m;
        m.forwardMs = number(6, 0, kMaxStoredLayerTimeMs, false).value_or(0);
        m.backwardMs = number(7, 0, kMaxStoredLayerTimeMs, false).value_or(0);
        m.optimizerMs = number(8, 0, kMaxStoredLayerTimeMs, true).value_or(0);
        m.paramBytes = number(9, 0, kMaxStoredBytes, true);
        m.activationBytes = number(10, 0, kMaxStoredBytes, true);
        if (diags.size() != before)
            continue;
        firstLine.emplace(key, static_cast<int>(lineNo));
        auto &layers = rows[key];
        if (!layers.emplace(layer, m).second)
            diags.error(where + ", column layer", "layer " + std::to_string(layer) + " of this profile appears twice");
    }
    if (!header)
        diags.error("line 1", std::string("expected the header \"") + kProfileCsvHeader + "\", found an empty file");
    diags.throwIfAny(); // row errors first: a dropped row would also show up as a missing layer
    std::vector<LayerProfile> out;
    for (auto &[key, layers] : rows) {
        LayerProfile p;
        p.key = key;
        p.source = file;
        int expect = 0;
        for (auto &[index, m] : layers) {
            if (index != expect) {
                diags.error("line " + std::to_string(firstLine[key]),
                            "profile " + key.gpu + "/" + key.model + " tp " + std::to_string(key.tp) + " micro-batch "
                                + std::to_string(key.microBatch) + ": layer " + std::to_string(expect)
                                + " is missing (layers must be numbered 0..n-1)");
                break;
            }
            p.layers.push_back(m);
            ++expect;
        }
        if (p.layers.size() < 3 && static_cast<int>(layers.size()) == expect)
            diags.error("line " + std::to_string(firstLine[key]),
                        "profile " + key.gpu + "/" + key.model + " has " + std::to_string(p.layers.size())
                            + " layers, expected at least 3 (embedding, transformer layers, output layer)");
        out.push_back(std::move(p));
    }
    diags.throwIfAny();
    return out;
}

std::string profilesToCsv(const std::vector<LayerProfile> &profiles)
{
    std::string out = std::string(kProfileCsvHeader) + "\n";
    for (const LayerProfile &p : profiles) {
        for (size_t i = 0; i < p.layers.size(); ++i) {
            const LayerMeasurement &m = p.layers[i];
            out += csvCell(p.key.gpu) + "," + csvCell(p.key.model) + "," + std::to_string(p.key.tp) + ","
                + std::to_string(p.key.microBatch) + "," + std::to_string(p.key.seqLength) + "," + std::to_string(i)
                + "," + csvNumber(m.forwardMs) + "," + csvNumber(m.backwardMs) + "," + csvNumber(m.optimizerMs) + ","
                + (m.paramBytes ? csvNumber(*m.paramBytes) : std::string()) + ","
                + (m.activationBytes ? csvNumber(*m.activationBytes) : std::string()) + "\n";
        }
    }
    return out;
}

std::vector<LayerProfile> loadProfileFile(const std::string &path, const Catalogue &catalogue)
{
    const std::string text = readTextFile(path);
    auto endsWith = [&](const char *ext) {
        const std::string e(ext);
        return path.size() >= e.size()
            && std::equal(e.rbegin(), e.rend(), path.rbegin(), [](char a, char b) { return a == std::tolower(b); });
    };
    if (endsWith(".json"))
        return parseProfileJson(text, path, catalogue);
    if (endsWith(".csv"))
        return parseProfileCsv(text, path, catalogue);
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{')
        return parseProfileJson(text, path, catalogue);
    return parseProfileCsv(text, path, catalogue);
}

std::optional<std::string> activationBytesProblem(const Model &m, int tp, double bytesPerSample)
{
    const double s = m.shape.seqLength, h = m.shape.hidden, a = m.shape.heads;
    const double sbh = s * h;
    const double flash = sbh * (10.0 + 24.0 / tp), unfused = flash + sbh * 5.0 * a * s / h / tp;
    if (bytesPerSample >= 0.5 * flash && bytesPerSample <= 2.0 * unfused)
        return std::nullopt;
    std::ostringstream o;
    o << "measured activation bytes " << bytesPerSample << " per sequence contradict the shape of model " << m.id
      << " (sequence " << m.shape.seqLength << ", hidden " << m.shape.hidden << ", " << m.shape.heads << " heads, TP "
      << tp << "): expected between " << 0.5 * flash << " (half the flash-attention figure) and " << 2.0 * unfused
      << " (twice the unfused one)";
    return o.str();
}

std::vector<Diagnostic> profileShapeProblems(const std::vector<LayerProfile> &profiles,
                                             const std::function<std::optional<Model>(const std::string &)> &modelOf,
                                             const std::string &file)
{
    std::vector<Diagnostic> out;
    for (const LayerProfile &p : profiles) {
        const std::optional<Model> m = modelOf ? modelOf(p.key.model) : std::nullopt;
        if (!m)
            continue;
        for (size_t i = 1; i + 1 < p.layers.size(); ++i) {
            const std::optional<double> &bytes = p.layers[i].activationBytes;
            if (!bytes)
                continue;
            if (auto why = activationBytesProblem(*m, p.key.tp, *bytes / std::max(1, p.key.microBatch))) {
                out.push_back({file,
                               "profile " + p.key.gpu + "/" + p.key.model + " tp " + std::to_string(p.key.tp)
                                   + " micro-batch " + std::to_string(p.key.microBatch) + ", layer " + std::to_string(i)
                                   + ", activationBytes",
                               *why});
                break;
            }
        }
    }
    return out;
}

} // namespace memx
