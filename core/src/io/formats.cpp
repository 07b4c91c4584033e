#include "memx/io/formats.h"

#include "memx/io/builtinresources.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"
#include "memx/util/jsonreader.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace memx {

using nlohmann::json;

namespace {

// Largest cluster the planner takes (docs/formats.md): the search's link set-up grows with the
// square of the node count, and a million node groups exhaust any GUI.
constexpr size_t kMaxNodeGroups = 4096;
constexpr long long kMaxNodes = 8192;
constexpr long long kMaxGpus = 65536;

} // namespace

namespace {

constexpr double kHuge = 1e12;

std::optional<Link> parseLink(const json &j, const std::string &pointer, Diagnostics &diags)
{
    JsonObjectReader r(j, pointer, diags);
    if (!r.valid())
        return std::nullopt;
    r.rejectUnknownKeys({"bandwidthGBps", "latencyUs", "curve", "kind"});
    Link link;
    link.bandwidthGBps = r.requireNumber("bandwidthGBps", 1e-6, 1e6);
    link.latencyUs = r.optionalNumber("latencyUs", 0, 1e7).value_or(0.0);
    if (const json *curve = r.optionalArray("curve")) {
        double lastBytes = 0;
        for (size_t i = 0; i < curve->size(); ++i) {
            const std::string cp = jsonPointerJoin(r.pointerTo("curve"), i);
            JsonObjectReader pr((*curve)[i], cp, diags);
            if (!pr.valid())
                continue;
            pr.rejectUnknownKeys({"bytes", "bandwidthGBps"});
            CurvePoint p;
            p.bytes = pr.requireNumber("bytes", 1, 1e15);
            p.bandwidthGBps = pr.requireNumber("bandwidthGBps", 1e-6, 1e6);
            if (p.bytes <= lastBytes && i > 0)
                diags.error(cp + "/bytes",
                            "expected message sizes in increasing order, found "
                                + std::to_string(static_cast<long long>(p.bytes)) + " after "
                                + std::to_string(static_cast<long long>(lastBytes)));
            lastBytes = p.bytes;
            link.curve.push_back(p);
        }
    }
    return link;
}

json linkToJson(const Link &link)
{
    json j {{"bandwidthGBps", link.bandwidthGBps}, {"latencyUs", link.latencyUs}};
    if (!link.curve.empty()) {
        json c = json::array();
        for (const CurvePoint &p : link.curve)
            c.push_back({{"bytes", p.bytes}, {"bandwidthGBps", p.bandwidthGBps}});
        j["curve"] = c;
    }
    return j;
}

json optionalToJson(const std::optional<double> &v)
{
    return v ? json(*v) : json(nullptr);
}

} // namespace

GpuSpec parseGpuSpec(const json &j, const std::string &pointer, Diagnostics &diags)
{
    GpuSpec d;
    JsonObjectReader r(j, pointer, diags);
    if (!r.valid())
        return d;
    r.rejectUnknownKeys({"id",
                         "aliases",
                         "vendor",
                         "name",
                         "segment",
                         "memoryGiB",
                         "memoryBandwidthGBps",
                         "denseBf16Tflops",
                         "denseFp16Tflops",
                         "denseFp8Tflops",
                         "bf16Supported",
                         "scaleUp",
                         "hostLink",
                         "devicesPerPackage",
                         "nic",
                         "tdpWatts",
                         "verified",
                         "notes",
                         "sources",
                         "measured",
                         "architecture",
                         "flashAttention",
                         "runtimeMemory",
                         "computeUnits"});
    d.id = r.requireString("id");
    if (d.id.empty() && r.has("id"))
        r.error("id", "expected a non-empty device id, found \"\"");
    else if (!d.id.empty() && !isValidDeviceId(d.id))
        r.error("id",
                "expected an id of letters, digits, '.', '_' and '-' that starts with a letter or digit "
                "(it names files and command-line values), found \""
                    + d.id + "\"");
    if (const json *aliases = r.optionalArray("aliases")) {
        for (size_t i = 0; i < aliases->size(); ++i) {
            if ((*aliases)[i].is_string())
                d.aliases.push_back((*aliases)[i].get<std::string>());
            else
                diags.error(jsonPointerJoin(r.pointerTo("aliases"), i),
                            "expected a string, found " + describeJson((*aliases)[i]));
        }
    }
    d.vendor = r.requireString("vendor");
    d.name = r.requireString("name");
    d.segment = r.optionalString("segment").value_or("datacenter");
    d.memoryGiB = r.nullableNumber("memoryGiB", 0.1, 1e5);
    d.memoryBandwidthGBps
        = r.has("memoryBandwidthGBps") ? r.nullableNumber("memoryBandwidthGBps", 1, 1e6) : std::nullopt;
    d.denseBf16Tflops = r.has("denseBf16Tflops") ? r.nullableNumber("denseBf16Tflops", 0.001, 1e6) : std::nullopt;
    d.denseFp16Tflops = r.nullableNumber("denseFp16Tflops", 0.001, 1e6);
    d.denseFp8Tflops = r.has("denseFp8Tflops") ? r.nullableNumber("denseFp8Tflops", 0.001, 1e6) : std::nullopt;
    d.bf16Supported = r.optionalBool("bf16Supported").value_or(d.denseBf16Tflops.has_value());
    if (const json *su = r.optionalObject("scaleUp")) {
        JsonObjectReader s(*su, r.pointerTo("scaleUp"), diags);
        s.rejectUnknownKeys({"kind", "perDirectionGBps", "topology"});
        d.scaleUpKind = static_cast<ScaleUpKind>(s.requireEnum(
            "kind", {"nvlink", "nvswitch", "infinity-fabric", "roce", "hccs", "mlu-link", "blink", "pcie"}));
        d.scaleUpPerDirectionGBps
            = s.has("perDirectionGBps") ? s.nullableNumber("perDirectionGBps", 0.001, 1e6) : std::nullopt;
        d.scaleUpTopology = static_cast<ScaleUpTopology>(
            s.optionalEnum("topology", {"switch", "mesh", "ring", "pairs", "none"}).value_or(4));
    }
    d.hostLink = r.optionalString("hostLink").value_or("");
    d.devicesPerPackage = static_cast<int>(r.optionalInt("devicesPerPackage", 1, 64).value_or(1));
    if (const json *nic = r.optionalObject("nic")) {
        JsonObjectReader s(*nic, r.pointerTo("nic"), diags);
        s.rejectUnknownKeys({"gbps", "description"});
        d.nicGbps = s.has("gbps") ? s.nullableNumber("gbps", 0.001, 1e6) : std::nullopt;
        d.nicDescription = s.optionalString("description").value_or("");
    }
    d.tdpWatts = r.has("tdpWatts") ? r.nullableNumber("tdpWatts", 1, 1e5) : std::nullopt;
    d.architecture = r.optionalString("architecture").value_or("");
    if (auto cu = r.optionalInt("computeUnits", 1, 1 << 20))
        d.computeUnits = static_cast<int>(*cu);
    d.flashAttention = r.optionalBool("flashAttention").value_or(false);
    if (const json *rm = r.optionalObject("runtimeMemory")) {
        JsonObjectReader s(*rm, r.pointerTo("runtimeMemory"), diags);
        s.rejectUnknownKeys({"contextGiB", "communicatorGiB", "reserveFraction", "source"});
        d.runtimeMemory.contextGiB = s.has("contextGiB") ? s.nullableNumber("contextGiB", 0, 64) : std::nullopt;
        d.runtimeMemory.communicatorGiB
            = s.has("communicatorGiB") ? s.nullableNumber("communicatorGiB", 0, 64) : std::nullopt;
        d.runtimeMemory.reserveFraction
            = s.has("reserveFraction") ? s.nullableNumber("reserveFraction", 0, 1) : std::nullopt;
        d.runtimeMemory.source = s.optionalString("source").value_or("");
    }
    d.verified = r.optionalBool("verified").value_or(true);
    d.notes = r.optionalString("notes").value_or("");
    if (const json *src = r.optionalObject("sources")) {
        for (auto it = src->begin(); it != src->end(); ++it) {
            if (it->is_string())
                d.sources[it.key()] = it->get<std::string>();
            else
                diags.error(jsonPointerJoin(r.pointerTo("sources"), it.key()),
                            "expected a string naming the source, found " + describeJson(*it));
        }
    }
    if (const json *m = r.optionalObject("measured")) {
        JsonObjectReader s(*m, r.pointerTo("measured"), diags);
        s.rejectUnknownKeys({"computeEfficiency", "busBandwidthGBps"});
        d.measuredComputeEfficiency
            = s.has("computeEfficiency") ? s.nullableNumber("computeEfficiency", 0.001, 1.0) : std::nullopt;
        d.measuredBusBandwidthGBps
            = s.has("busBandwidthGBps") ? s.nullableNumber("busBandwidthGBps", 0.001, 1e6) : std::nullopt;
    }
    return d;
}

json toJson(const GpuSpec &d)
{
    json j;
    j["id"] = d.id;
    j["aliases"] = d.aliases;
    j["vendor"] = d.vendor;
    j["name"] = d.name;
    j["segment"] = d.segment;
    j["memoryGiB"] = optionalToJson(d.memoryGiB);
    j["memoryBandwidthGBps"] = optionalToJson(d.memoryBandwidthGBps);
    j["denseBf16Tflops"] = optionalToJson(d.denseBf16Tflops);
    j["denseFp16Tflops"] = optionalToJson(d.denseFp16Tflops);
    if (d.denseFp8Tflops) // only when known: files and hashes of devices without FP8 stay as they were
        j["denseFp8Tflops"] = *d.denseFp8Tflops;
    j["bf16Supported"] = d.bf16Supported;
    j["scaleUp"] = {{"kind", toString(d.scaleUpKind)},
                    {"perDirectionGBps", optionalToJson(d.scaleUpPerDirectionGBps)},
                    {"topology", toString(d.scaleUpTopology)}};
    j["hostLink"] = d.hostLink;
    j["devicesPerPackage"] = d.devicesPerPackage;
    j["nic"] = {{"gbps", optionalToJson(d.nicGbps)}, {"description", d.nicDescription}};
    j["tdpWatts"] = optionalToJson(d.tdpWatts);
    if (d.computeUnits)
        j["computeUnits"] = *d.computeUnits;
    if (!d.architecture.empty())
        j["architecture"] = d.architecture;
    j["flashAttention"] = d.flashAttention;
    const GpuSpec::RuntimeMemory &rm = d.runtimeMemory;
    if (rm.contextGiB || rm.communicatorGiB || rm.reserveFraction || !rm.source.empty())
        j["runtimeMemory"] = {{"contextGiB", optionalToJson(rm.contextGiB)},
                              {"communicatorGiB", optionalToJson(rm.communicatorGiB)},
                              {"reserveFraction", optionalToJson(rm.reserveFraction)},
                              {"source", rm.source}};
    j["verified"] = d.verified;
    j["notes"] = d.notes;
    j["sources"] = d.sources;
    j["measured"] = {{"computeEfficiency", optionalToJson(d.measuredComputeEfficiency)},
                     {"busBandwidthGBps", optionalToJson(d.measuredBusBandwidthGBps)}};
    return j;
}

namespace {

/// A device a cluster plans with must state its memory (custom device files and a cluster's
/// /devices alike; the catalogue itself may leave it unknown).
void requireDeviceMemory(const GpuSpec &d, const std::string &pointer, Diagnostics &diags)
{
    if (!d.memoryGiB)
        diags.error(pointer + "/memoryGiB",
                    "expected the device's memory in GiB (a cluster cannot plan with unknown memory), found null");
}

/// The devices of a memx.catalogue/1 text, each also checked by `check` (may be empty).
std::vector<GpuSpec>
parseDeviceList(const std::string &text, const std::string &file,
                const std::function<void(const GpuSpec &, const std::string &, Diagnostics &)> &check)
{
    const json j = parseJsonText(text, file);
    Diagnostics diags(file);
    JsonObjectReader r(j, "/", diags);
    r.requireFormat(kCatalogueFormat);
    r.rejectUnknownKeys({"format", "devices"});
    std::vector<GpuSpec> devices;
    std::set<std::string> ids;
    if (const json *arr = r.requireArray("devices")) {
        for (size_t i = 0; i < arr->size(); ++i) {
            const std::string p = jsonPointerJoin("/devices", i);
            GpuSpec d = parseGpuSpec((*arr)[i], p, diags);
            if (!d.id.empty() && !ids.insert(d.id).second)
                diags.error(p + "/id", "duplicate device id \"" + d.id + "\"");
            else if (check && !d.id.empty())
                check(d, p, diags);
            devices.push_back(std::move(d));
        }
    }
    diags.throwIfAny();
    return devices;
}

} // namespace

Catalogue parseCatalogue(const std::string &text, const std::string &file)
{
    return Catalogue(parseDeviceList(text, file, {}));
}

std::vector<GpuSpec> parseCustomDevices(const std::string &text, const std::string &file, const Catalogue &catalogue)
{
    std::vector<GpuSpec> devices
        = parseDeviceList(text, file, [&](const GpuSpec &d, const std::string &p, Diagnostics &diags) {
              if (const GpuSpec *known = catalogue.find(d.id))
                  diags.error(p + "/id",
                              "expected an id that is not a catalogue device's, found \"" + d.id
                                  + "\" (the catalogue's " + known->name + "); give the custom device its own id");
              for (size_t a = 0; a < d.aliases.size(); ++a)
                  if (const GpuSpec *known = catalogue.find(d.aliases[a]))
                      diags.error(jsonPointerJoin(p + "/aliases", a),
                                  "expected an alias that is not a catalogue device's, found \"" + d.aliases[a]
                                      + "\" (the catalogue's " + known->name + ")");
              requireDeviceMemory(d, p, diags);
          });
    if (devices.empty())
        throw LoadError(file, "/devices", "expected at least one device, found none");
    for (GpuSpec &d : devices)
        d.custom = true;
    return devices;
}

std::vector<GpuSpec> loadCustomDevices(const std::string &path, const Catalogue &catalogue)
{
    return parseCustomDevices(readTextFile(path), path, catalogue);
}

void mergeCustomDevices(std::vector<GpuSpec> &known, std::vector<GpuSpec> devices, const std::string &file)
{
    std::vector<GpuSpec> merged = known; // unchanged when a clash is refused
    Diagnostics diags(file);
    for (size_t i = 0; i < devices.size(); ++i) {
        GpuSpec &d = devices[i];
        const std::string p = jsonPointerJoin("/devices", i);
        const auto clash = [&](const std::string &name, const std::string &pointer, const char *what) {
            for (const GpuSpec &k : merged)
                if (k.id != d.id && k.isNamed(name))
                    diags.error(pointer,
                                std::string("expected ") + what + " no other loaded device has, found \"" + name
                                    + "\" (already " + k.name + "'s, id \"" + k.id + "\")");
        };
        clash(d.id, p + "/id", "an id");
        for (size_t a = 0; a < d.aliases.size(); ++a)
            clash(d.aliases[a], jsonPointerJoin(p + "/aliases", a), "an alias");
        auto same = std::find_if(merged.begin(), merged.end(), [&](const GpuSpec &k) { return k.id == d.id; });
        if (same != merged.end())
            *same = std::move(d); // a later definition of an id replaces the earlier one
        else
            merged.push_back(std::move(d));
    }
    diags.throwIfAny();
    known = std::move(merged);
}

Catalogue catalogueWithCustomDevices(const std::vector<std::string> &paths, const Catalogue &base)
{
    std::vector<GpuSpec> devices = base.devices(); // custom ids and aliases are not base's (loadCustomDevices)
    for (const std::string &path : paths)
        mergeCustomDevices(devices, loadCustomDevices(path, base), path);
    return Catalogue(std::move(devices));
}

json toJson(const Catalogue &catalogue)
{
    json devices = json::array();
    for (const GpuSpec &d : catalogue.devices())
        devices.push_back(toJson(d));
    return {{"format", kCatalogueFormat}, {"devices", devices}};
}

namespace {

/// /devices: the cluster's own device definitions.
void parseClusterDevices(JsonObjectReader &r, Cluster &c, Diagnostics &diags)
{
    if (const json *devs = r.optionalArray("devices")) {
        for (size_t i = 0; i < devs->size(); ++i) {
            const std::string p = jsonPointerJoin("/devices", i);
            GpuSpec d = parseGpuSpec((*devs)[i], p, diags);
            d.custom = true;
            if (!d.id.empty() && c.deviceIndex(d.id) >= 0)
                diags.error(p + "/id", "duplicate device id \"" + d.id + "\"");
            else if (!d.id.empty())
                requireDeviceMemory(d, p, diags);
            c.devices.push_back(std::move(d));
        }
    }
}

/// The size limits of /nodes (false when over them).
bool clusterWithinLimits(JsonObjectReader &r, const json *nodes)
{
    // Size limits, checked before anything is expanded: the search's link set-up grows with the
    // square of the node count, and a million node groups exhaust any GUI.
    if (nodes && nodes->size() > kMaxNodeGroups) {
        r.error("nodes",
                "expected at most " + std::to_string(kMaxNodeGroups) + " node groups, found "
                    + std::to_string(nodes->size()));
        return false;
    }
    if (nodes) {
        long long totalNodes = 0, totalGpus = 0;
        for (const json &n : *nodes)
            if (n.is_object()) {
                // Values outside their own range are reported by the per-group checks below.
                const auto in = [&](const char *key, long long lo, long long hi, long long dflt) {
                    if (!n.contains(key))
                        return dflt;
                    const json &v = n[key];
                    return v.is_number_integer() && v.get<long long>() >= lo && v.get<long long>() <= hi
                        ? v.get<long long>()
                        : 0LL;
                };
                const long long count = in("count", 1, 100000, 1), gpus = in("gpus", 1, 64, 1);
                totalNodes += count;
                totalGpus += count * gpus;
            }
        if (totalNodes > kMaxNodes || totalGpus > kMaxGpus) {
            r.error("nodes",
                    "expected a cluster of at most " + std::to_string(kMaxNodes) + " nodes and "
                        + std::to_string(kMaxGpus) + " GPUs (the planner's limits), found " + std::to_string(totalNodes)
                        + " nodes and " + std::to_string(totalGpus) + " GPUs");
            return false;
        }
    }
    return true;
}

/// /nodes: the node groups (devices from /devices or the catalogue); `names` gets their names.
void parseNodeGroups(const json *nodes, const Catalogue &catalogue, Cluster &c, std::set<std::string> &names,
                     Diagnostics &diags)
{
    if (nodes) {
        for (size_t i = 0; i < nodes->size(); ++i) {
            const std::string p = jsonPointerJoin("/nodes", i);
            JsonObjectReader nr((*nodes)[i], p, diags);
            if (!nr.valid())
                continue;
            nr.rejectUnknownKeys({"name", "gpu", "gpus", "count", "intraLink", "x", "y"});
            NodeGroup g;
            g.name = nr.requireString("name");
            g.gpu = nr.requireString("gpu");
            g.gpusPerNode = static_cast<int>(nr.requireInt("gpus", 1, 64));
            g.count = static_cast<int>(nr.optionalInt("count", 1, 100000).value_or(1));
            g.x = nr.optionalNumber("x", -1e7, 1e7).value_or(0.0);
            g.y = nr.optionalNumber("y", -1e7, 1e7).value_or(0.0);
            if (const json *il = nr.optionalObject("intraLink"))
                g.intraLink = parseLink(*il, nr.pointerTo("intraLink"), diags);
            if (nr.has("name") && g.name.empty())
                nr.error("name", "expected a non-empty node name, found \"\"");
            else if (!g.name.empty() && !names.insert(g.name).second)
                nr.error("name", "duplicate node name \"" + g.name + "\"");
            if (!g.gpu.empty() && c.deviceIndex(g.gpu) < 0) {
                if (const GpuSpec *spec = catalogue.find(g.gpu)) {
                    if (!spec->memoryGiB)
                        nr.error("gpu",
                                 "device \"" + spec->id
                                     + "\" has unknown memory in the catalogue; define it under /devices "
                                       "with measured figures");
                    g.gpu = spec->id;
                    c.devices.push_back(*spec);
                } else {
                    std::string hint;
                    const auto s = catalogue.suggest(g.gpu);
                    for (size_t k = 0; k < s.size(); ++k)
                        hint += (k ? ", " : "; did you mean ") + std::string("\"") + s[k] + "\"";
                    nr.error("gpu",
                             "expected a device id from the catalogue (memx catalogue) or from /devices, "
                             "found \""
                                 + g.gpu + "\"" + hint);
                }
            } else if (!g.gpu.empty()) {
                g.gpu = c.devices[static_cast<size_t>(c.deviceIndex(g.gpu))].id;
            }
            c.groups.push_back(std::move(g));
        }
    }
}

/// The expanded node names (which must not collide with other groups' names either).
std::set<std::string> expandedNodeNames(const Cluster &c, Diagnostics &diags)
{
    std::set<std::string> expanded;
    for (size_t gi = 0; gi < c.groups.size(); ++gi) {
        for (int k = 0; k < c.groups[gi].count; ++k) {
            const std::string n = nodeName(c.groups[gi], k);
            if (!expanded.insert(n).second)
                diags.error(jsonPointerJoin("/nodes", gi) + "/name",
                            "node name \"" + n + "\" (after expanding groups) is used twice");
        }
    }

    return expanded;
}

/// /network: the default inter-node link and the overrides naming nodes or groups.
void parseNetwork(JsonObjectReader &r, const std::set<std::string> &names, const std::set<std::string> &expanded,
                  Cluster &c, Diagnostics &diags)
{
    const json *net = r.requireObject("network");
    if (net) {
        JsonObjectReader nr(*net, "/network", diags);
        nr.rejectUnknownKeys({"interNode", "overrides"});
        if (const json *inter = nr.requireObject("interNode"))
            if (auto link = parseLink(*inter, "/network/interNode", diags))
                c.network.interNode = *link;
        if (const json *ov = nr.optionalArray("overrides")) {
            for (size_t i = 0; i < ov->size(); ++i) {
                const std::string p = jsonPointerJoin("/network/overrides", i);
                JsonObjectReader orr((*ov)[i], p, diags);
                if (!orr.valid())
                    continue;
                orr.rejectUnknownKeys({"a", "b", "link"});
                LinkOverride o;
                o.a = orr.requireString("a");
                o.b = orr.requireString("b");
                for (const char *key : {"a", "b"}) {
                    const std::string &n = key[0] == 'a' ? o.a : o.b;
                    if (!n.empty() && !names.count(n) && !expanded.count(n))
                        orr.error(key, "expected the name of a node or node group, found \"" + n + "\"");
                }
                for (size_t k = 0; k < c.network.overrides.size(); ++k) {
                    const LinkOverride &q = c.network.overrides[k];
                    if (!o.a.empty() && ((q.a == o.a && q.b == o.b) || (q.a == o.b && q.b == o.a)))
                        orr.error("b",
                                  "\"" + o.a + "\" and \"" + o.b + "\" are already connected by "
                                      + jsonPointerJoin("/network/overrides", k));
                }
                if (const json *l = orr.requireObject("link"))
                    if (auto link = parseLink(*l, orr.pointerTo("link"), diags))
                        o.link = *link;
                c.network.overrides.push_back(std::move(o));
            }
        }
    }
}

} // namespace

Cluster parseCluster(const json &j, const Catalogue &catalogue, Diagnostics &diags)
{
    Cluster c;
    JsonObjectReader r(j, "/", diags);
    if (!r.valid())
        return c;
    r.requireFormat(kClusterFormat);
    r.rejectUnknownKeys({"format", "name", "description", "devices", "nodes", "network"});
    c.name = r.requireString("name");
    c.description = r.optionalString("description").value_or("");
    parseClusterDevices(r, c, diags);
    std::set<std::string> names;
    const json *nodes = r.requireArray("nodes");
    if (nodes && nodes->empty())
        r.error("nodes", "expected at least one node group, found an empty list");
    if (!clusterWithinLimits(r, nodes))
        return c;
    parseNodeGroups(nodes, catalogue, c, names, diags);
    const std::set<std::string> expanded = expandedNodeNames(c, diags);
    parseNetwork(r, names, expanded, c, diags);
    return c;
}

void validateCluster(const Cluster &cluster, Diagnostics &diags, const Catalogue &catalogue)
{
    (void)parseCluster(toJson(cluster), catalogue, diags);
}

void validateModel(const Model &model, Diagnostics &diags)
{
    (void)parseModel(toJson(model), diags);
}

Cluster loadCluster(const std::string &path, const Catalogue &catalogue)
{
    const json j = readJsonFile(path);
    Diagnostics diags(path);
    Cluster c = parseCluster(j, catalogue, diags);
    diags.throwIfAny();
    return c;
}

json toJson(const Cluster &c)
{
    json j;
    j["format"] = kClusterFormat;
    j["name"] = c.name;
    if (!c.description.empty())
        j["description"] = c.description;
    json devs = json::array();
    for (const GpuSpec &d : c.devices)
        if (d.custom)
            devs.push_back(toJson(d));
    if (!devs.empty())
        j["devices"] = devs;
    json nodes = json::array();
    for (const NodeGroup &g : c.groups) {
        json n {{"name", g.name}, {"gpu", g.gpu}, {"gpus", g.gpusPerNode}};
        if (g.count != 1)
            n["count"] = g.count;
        if (g.intraLink)
            n["intraLink"] = linkToJson(*g.intraLink);
        if (g.x != 0 || g.y != 0) {
            n["x"] = g.x;
            n["y"] = g.y;
        }
        nodes.push_back(n);
    }
    j["nodes"] = nodes;
    json net {{"interNode", linkToJson(c.network.interNode)}};
    if (!c.network.overrides.empty()) {
        json ov = json::array();
        for (const LinkOverride &o : c.network.overrides)
            ov.push_back({{"a", o.a}, {"b", o.b}, {"link", linkToJson(o.link)}});
        net["overrides"] = ov;
    }
    j["network"] = net;
    return j;
}

Model parseModel(const json &j, Diagnostics &diags)
{
    Model m;
    JsonObjectReader r(j, "/", diags);
    if (!r.valid())
        return m;
    r.requireFormat(kModelFormat);
    r.rejectUnknownKeys({"format", "id", "name", "source", "shape", "training"});
    m.id = r.requireString("id");
    m.name = r.optionalString("name").value_or(m.id);
    m.source = r.optionalString("source").value_or("");
    if (const json *sh = r.requireObject("shape")) {
        JsonObjectReader s(*sh, "/shape", diags);
        s.rejectUnknownKeys({"layers", "hidden", "heads", "kvGroups", "ffnHidden", "vocab", "seqLength", "swiglu",
                             "tiedEmbeddings", "normalization", "positionEmbedding", "rotaryBase", "moe"});
        ModelShape &x = m.shape;
        x.layers = static_cast<int>(s.requireInt("layers", 1, 100000));
        x.hidden = static_cast<int>(s.requireInt("hidden", 1, 1 << 20));
        x.heads = static_cast<int>(s.requireInt("heads", 1, 1 << 16));
        x.kvGroups = static_cast<int>(s.optionalInt("kvGroups", 1, 1 << 16).value_or(x.heads));
        x.ffnHidden = static_cast<int>(s.optionalInt("ffnHidden", 1, 1 << 22).value_or(4LL * x.hidden));
        x.vocab = static_cast<int>(s.requireInt("vocab", 1, 1 << 24));
        x.seqLength = static_cast<int>(s.requireInt("seqLength", 1, 1 << 24));
        x.swiglu = s.optionalBool("swiglu").value_or(false);
        x.tiedEmbeddings = s.optionalBool("tiedEmbeddings").value_or(true);
        x.normalization
            = static_cast<Normalization>(s.optionalEnum("normalization", {"LayerNorm", "RMSNorm"}).value_or(0));
        x.positionEmbedding
            = static_cast<PositionEmbedding>(s.optionalEnum("positionEmbedding", {"learned", "rope"}).value_or(0));
        x.rotaryBase = static_cast<int>(s.optionalInt("rotaryBase", 1, 1000000000).value_or(10000));
        if (const json *moe = s.optionalObject("moe")) {
            JsonObjectReader e(*moe, "/shape/moe", diags);
            e.rejectUnknownKeys({"experts", "topK", "expertFfnHidden", "sharedExpertFfnHidden"});
            x.moe.experts = static_cast<int>(e.requireInt("experts", 2, 1 << 16));
            x.moe.topK = static_cast<int>(e.requireInt("topK", 1, 1 << 16));
            // Megatron-LM: moe_ffn_hidden_size defaults to ffn_hidden_size.
            x.moe.expertFfnHidden
                = static_cast<int>(e.optionalInt("expertFfnHidden", 1, 1 << 22).value_or(x.ffnHidden));
            x.moe.sharedExpertFfnHidden
                = static_cast<int>(e.optionalInt("sharedExpertFfnHidden", 0, 1 << 22).value_or(0));
            if (x.moe.experts > 0 && x.moe.topK > x.moe.experts)
                e.error("topK",
                        "expected at most experts (" + std::to_string(x.moe.experts) + "), found "
                            + std::to_string(x.moe.topK));
        }
        if (x.heads > 0 && x.hidden % x.heads != 0)
            s.error("heads",
                    "expected a divisor of hidden (" + std::to_string(x.hidden) + "), found "
                        + std::to_string(x.heads));
        if (x.kvGroups > 0 && x.heads % x.kvGroups != 0)
            s.error("kvGroups",
                    "expected a divisor of heads (" + std::to_string(x.heads) + "), found "
                        + std::to_string(x.kvGroups));
    }
    if (const json *tr = r.requireObject("training")) {
        JsonObjectReader t(*tr, "/training", diags);
        t.rejectUnknownKeys({"globalBatch", "precision", "optimizer", "attention"});
        m.training.globalBatch = static_cast<int>(t.requireInt("globalBatch", 1, 1 << 24));
        m.training.precision = static_cast<Precision>(t.optionalEnum("precision", {"bf16", "fp16"}).value_or(0));
        m.training.optimizer = static_cast<Optimizer>(t.optionalEnum("optimizer", {"adam", "sgd"}).value_or(0));
        m.training.attention = static_cast<AttentionBackend>(
            t.optionalEnum("attention", {"auto", "flash", "fused", "unfused"}).value_or(0));
    }
    return m;
}

Model loadModel(const std::string &path)
{
    const json j = readJsonFile(path);
    Diagnostics diags(path);
    Model m = parseModel(j, diags);
    diags.throwIfAny();
    return m;
}

json toJson(const Model &m)
{
    const ModelShape &s = m.shape;
    json j;
    j["format"] = kModelFormat;
    j["id"] = m.id;
    j["name"] = m.name;
    if (!m.source.empty())
        j["source"] = m.source;
    j["shape"] = {{"layers", s.layers},
                  {"hidden", s.hidden},
                  {"heads", s.heads},
                  {"kvGroups", s.kvGroups},
                  {"ffnHidden", s.ffnHidden},
                  {"vocab", s.vocab},
                  {"seqLength", s.seqLength},
                  {"swiglu", s.swiglu},
                  {"tiedEmbeddings", s.tiedEmbeddings},
                  {"normalization", toString(s.normalization)},
                  {"positionEmbedding", toString(s.positionEmbedding)}};
    if (s.rotaryBase != ModelShape {}.rotaryBase)
        j["shape"]["rotaryBase"] = s.rotaryBase;
    if (s.isMoe()) {
        j["shape"]["moe"] = {{"experts", s.moe.experts},
                             {"topK", s.moe.topK},
                             {"expertFfnHidden", s.moe.expertFfnHidden},
                             {"sharedExpertFfnHidden", s.moe.sharedExpertFfnHidden}};
    }
    j["training"] = {{"globalBatch", m.training.globalBatch},
                     {"precision", toString(m.training.precision)},
                     {"optimizer", toString(m.training.optimizer)},
                     {"attention", toString(m.training.attention)}};
    return j;
}

const Catalogue &builtinCatalogue()
{
    static const Catalogue catalogue = parseCatalogue(std::string(builtinCatalogueJson()), "<builtin catalogue>");
    return catalogue;
}

const std::vector<Model> &builtinModels()
{
    static const std::vector<Model> models = [] {
        std::vector<Model> out;
        for (const BuiltinResource &res : builtinModelJson()) {
            const std::string file = "<builtin>/models/" + std::string(res.name);
            Diagnostics diags(file);
            Model m = parseModel(parseJsonText(std::string(res.text), file), diags);
            diags.throwIfAny();
            out.push_back(std::move(m));
        }
        std::sort(out.begin(), out.end(), [](const Model &a, const Model &b) { return a.id < b.id; });
        return out;
    }();
    return models;
}

Model resolveModel(const std::string &idOrPath)
{
    for (const Model &m : builtinModels())
        if (m.id == idOrPath)
            return m;
    if (idOrPath.find('/') == std::string::npos && idOrPath.find(".json") == std::string::npos) {
        std::string ids;
        for (const Model &m : builtinModels())
            ids += (ids.empty() ? "" : ", ") + m.id;
        throw LoadError(idOrPath, "", "expected a model preset id (" + ids + ") or a path to a model file");
    }
    return loadModel(idOrPath);
}

Plan parsePlan(const json &j, Diagnostics &diags)
{
    Plan p;
    JsonObjectReader r(j, "/", diags);
    if (!r.valid())
        return p;
    r.requireFormat(kPlanFormat);
    r.rejectUnknownKeys({"format", "name", "globalBatch", "sequenceParallel", "distributedOptimizer",
                         "overlapGradReduce", "overlapParamGather", "virtualStages", "contextParallel", "cpComm", "fp8",
                         "fsdp", "expertParallel", "expertTensorParallel", "stages", "metrics", "provenance"});
    p.name = r.optionalString("name").value_or("");
    p.globalBatch = static_cast<int>(r.requireInt("globalBatch", 1, 1 << 24));
    p.sequenceParallel = r.optionalBool("sequenceParallel").value_or(false);
    p.distributedOptimizer = r.optionalBool("distributedOptimizer").value_or(false);
    p.overlapGradReduce = r.optionalBool("overlapGradReduce").value_or(false);
    p.overlapParamGather = r.optionalBool("overlapParamGather").value_or(false);
    p.virtualStages = static_cast<int>(r.optionalInt("virtualStages", 1, 1024).value_or(1));
    p.contextParallel = static_cast<int>(r.optionalInt("contextParallel", 1, 1024).value_or(1));
    if (j.contains("cpComm"))
        p.cpComm = static_cast<CpComm>(r.requireEnum("cpComm", {"p2p", "all_gather", "a2a"}));
    if (j.contains("fp8"))
        p.fp8 = static_cast<Fp8Format>(r.requireEnum("fp8", {"off", "hybrid", "e4m3"}));
    if (j.contains("fsdp")) {
        constexpr DpSharding kFsdp[] = {DpSharding::None, DpSharding::Gradients, DpSharding::Parameters};
        const int f = r.requireEnum("fsdp", {"none", "optim_grads", "optim_grads_params"});
        p.fsdp = kFsdp[f >= 0 && f < 3 ? f : 0];
    }
    p.expertParallel = static_cast<int>(r.optionalInt("expertParallel", 1, 1 << 16).value_or(1));
    p.expertTensorParallel = static_cast<int>(r.optionalInt("expertTensorParallel", 1, 1024).value_or(0));
    const json *stages = r.requireArray("stages");
    if (stages && stages->empty())
        r.error("stages", "expected at least one pipeline stage, found an empty list");
    if (stages) {
        for (size_t si = 0; si < stages->size(); ++si) {
            const std::string sp = jsonPointerJoin("/stages", si);
            JsonObjectReader s((*stages)[si], sp, diags);
            if (!s.valid())
                continue;
            s.rejectUnknownKeys({"firstLayer", "layerCount", "recompute", "replicas"});
            Stage st;
            st.firstLayer = static_cast<int>(s.requireInt("firstLayer", 0, 100000));
            st.layerCount = static_cast<int>(s.requireInt("layerCount", 1, 100000));
            if (const json *rc = s.optionalObject("recompute")) {
                JsonObjectReader rr(*rc, sp + "/recompute", diags);
                rr.rejectUnknownKeys({"method", "layers"});
                st.recompute.method
                    = static_cast<RecomputeMethod>(rr.requireEnum("method", {"none", "selective", "full"}));
                st.recompute.layers = static_cast<int>(rr.optionalInt("layers", 0, 100000).value_or(0));
                if (st.recompute.method != RecomputeMethod::Full && st.recompute.layers != 0)
                    rr.error("layers",
                             "expected no layer count unless method is \"full\", found "
                                 + std::to_string(st.recompute.layers));
            }
            if (const json *reps = s.requireArray("replicas")) {
                for (size_t ri = 0; ri < reps->size(); ++ri) {
                    const std::string rp = jsonPointerJoin(sp + "/replicas", ri);
                    JsonObjectReader rr((*reps)[ri], rp, diags);
                    if (!rr.valid())
                        continue;
                    rr.rejectUnknownKeys({"node", "gpus", "tp", "microBatch"});
                    Replica rep;
                    rep.node = rr.requireString("node");
                    rep.tp = static_cast<int>(rr.requireInt("tp", 1, 1024));
                    rep.microBatch = static_cast<int>(rr.requireInt("microBatch", 1, 1 << 20));
                    if (const json *gpus = rr.requireArray("gpus")) {
                        for (size_t gi = 0; gi < gpus->size(); ++gi) {
                            const json &g = (*gpus)[gi];
                            if (g.is_number_integer() && g.get<long long>() >= 0 && g.get<long long>() < 1024)
                                rep.gpus.push_back(g.get<int>());
                            else
                                diags.error(jsonPointerJoin(rp + "/gpus", gi),
                                            "expected a GPU index from 0 to 1023, found " + describeJson(g));
                        }
                    }
                    st.replicas.push_back(std::move(rep));
                }
            }
            p.stages.push_back(std::move(st));
        }
    }
    return p;
}

Plan loadPlan(const std::string &path)
{
    const json j = readJsonFile(path);
    Diagnostics diags(path);
    Plan p = parsePlan(j, diags);
    diags.throwIfAny();
    return p;
}

json toJson(const Plan &p)
{
    json j;
    j["format"] = kPlanFormat;
    if (!p.name.empty())
        j["name"] = p.name;
    j["globalBatch"] = p.globalBatch;
    j["sequenceParallel"] = p.sequenceParallel;
    j["distributedOptimizer"] = p.distributedOptimizer;
    if (p.overlapGradReduce)
        j["overlapGradReduce"] = true;
    if (p.overlapParamGather)
        j["overlapParamGather"] = true;
    if (p.virtualStages != 1)
        j["virtualStages"] = p.virtualStages;
    if (p.contextParallel != 1) {
        j["contextParallel"] = p.contextParallel;
        j["cpComm"] = toString(p.cpComm);
    }
    if (p.fp8 != Fp8Format::Off)
        j["fp8"] = toString(p.fp8);
    if (p.fsdp != DpSharding::None)
        j["fsdp"] = toString(p.fsdp);
    if (p.expertParallel != 1)
        j["expertParallel"] = p.expertParallel;
    if (p.expertTensorParallel != 0)
        j["expertTensorParallel"] = p.expertTensorParallel;
    json stages = json::array();
    for (const Stage &s : p.stages) {
        json st {{"firstLayer", s.firstLayer}, {"layerCount", s.layerCount}};
        json rc {{"method", toString(s.recompute.method)}};
        if (s.recompute.method == RecomputeMethod::Full && s.recompute.layers > 0)
            rc["layers"] = s.recompute.layers;
        st["recompute"] = rc;
        json reps = json::array();
        for (const Replica &r : s.replicas)
            reps.push_back({{"node", r.node}, {"gpus", r.gpus}, {"tp", r.tp}, {"microBatch", r.microBatch}});
        st["replicas"] = reps;
        stages.push_back(st);
    }
    j["stages"] = stages;
    return j;
}

void saveJson(const json &j, const std::string &path)
{
    writeFileAtomically(path, j.dump(2) + "\n");
}

} // namespace memx
