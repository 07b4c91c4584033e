#include "memx/profiling/sailorimporter.h"

#include "memx/profiling/profileio.h"
#include "memx/profiling/storedvalues.h"

#include "memx/io/formats.h"
#include "memx/util/fileio.h"
#include "memx/util/jsonreader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace memx {

using nlohmann::json;
namespace fs = std::filesystem;

double sailorFitGBps(const std::vector<double> &coefficients, double capBytesPerSecond, double bytes)
{
    const double x = std::log2(bytes) - std::log2(1e6);
    double v = 0;
    for (double c : coefficients)
        v = v * x + c; // Horner, highest degree first
    const double capGBps = capBytesPerSecond / 1e9;
    // The fits were made on large messages and turn negative for tiny ones: floor at 1% of the cap.
    return std::clamp(v, 0.01 * capGBps, capGBps);
}

namespace {

struct SailorModel {
    const char *name; ///< as in layer_times.json
    const char *folder; ///< folder under measured-runs (empty: none)
    const char *preset; ///< MemX preset the shape starts from
};

constexpr SailorModel kModels[] = {
    {"OPT-350", "OPT-350", "opt-350m"},
    {"GPT-Neo-2.7", "GPT-NEO", "gpt-neo-2.7b"},
    {"OPT-30", "", "opt-30b"},
    {"LLAMA-3-8", "", "llama3-8b"},
};

/// The dataset's sequence length (../shared/DOMAIN.md: "fp16, Adam, no ZeRO, seq 2048").
constexpr int kSailorSeqLength = 2048;

std::string lower(std::string s)
{
    for (char &c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string modelIdFor(const std::string &sailorName)
{
    return "sailor-" + lower(sailorName);
}

const SailorModel *findModel(const std::string &name)
{
    for (const SailorModel &m : kModels)
        if (lower(name) == lower(m.name) || (m.folder[0] && lower(name) == lower(m.folder)))
            return &m;
    return nullptr;
}

std::string knownModelNames()
{
    std::string out;
    for (const SailorModel &m : kModels)
        out += (out.empty() ? "" : ", ") + std::string(m.name);
    return out;
}

/// Parses a decimal integer key of a JSON object ("16").
std::optional<int> intKey(const std::string &key)
{
    if (key.empty() || key.size() > 9 || !std::all_of(key.begin(), key.end(), ::isdigit))
        return std::nullopt;
    return std::stoi(key);
}

struct Fit {
    std::vector<double> coefficients;
    double capBytesPerSecond = 0;
};

class Importer {
public:
    Importer(const std::string &dir, const ProgressFn &progress)
        : mDir(dir)
        , mProgress(progress)
    {
    }

    ImportBatch run()
    {
        if (!fs::is_directory(mDir))
            throw LoadError(mDir, "",
                            "not a folder (expected the Sailor dataset folder holding profiles/, network/, "
                            "training-configs/ and measured-runs/)");
        for (const char *sub : {"profiles/layer_times.json", "profiles/layer_memory.json"})
            if (!fs::exists(fs::path(mDir) / sub))
                throw LoadError((fs::path(mDir) / sub).string(), "",
                                "missing: this does not look like the Sailor dataset folder");
        std::vector<fs::path> configs = listFiles("training-configs", ".json", false);
        std::vector<fs::path> runs = listFiles("measured-runs", ".json", true);
        std::vector<fs::path> network = listFiles("network", ".json", false);
        mTotal = configs.size() + 2 + network.size() + runs.size();

        for (const fs::path &p : configs)
            readTrainingConfig(p), step();
        readLayerTimes(fs::path(mDir) / "profiles/layer_times.json"), step();
        readLayerMemory(fs::path(mDir) / "profiles/layer_memory.json"), step();
        for (const fs::path &p : network)
            readNetworkFile(p), step();
        for (const fs::path &p : runs)
            readRun(p), step();

        for (auto &[id, model] : mModels)
            mBatch.models.push_back(model);
        for (auto &[key, profile] : mProfiles)
            mBatch.profiles.push_back(std::move(profile));
        for (auto &[key, m] : mNetwork)
            mBatch.network.push_back(std::move(m));
        for (auto &[name, cluster] : mClusters)
            mBatch.clusters.push_back(std::move(cluster));
        return std::move(mBatch);
    }

private:
    std::string rel(const fs::path &p) const { return p.lexically_relative(mDir).generic_string(); }
    std::string display(const fs::path &p) const { return p.string(); }

    void step()
    {
        ++mDone;
        if (mProgress && !mProgress(mDone, mTotal))
            throw Cancelled();
    }

    std::vector<fs::path> listFiles(const char *sub, const char *ext, bool recursive)
    {
        std::vector<fs::path> out;
        const fs::path root = fs::path(mDir) / sub;
        if (!fs::is_directory(root))
            return out;
        auto consider = [&](const fs::directory_entry &e) {
            if (e.path().extension() != ext)
                return;
            // A data file replaced by a folder (or a socket, a dangling link) is not skipped
            // silently: the import would quietly lose its records.
            if (!e.is_regular_file())
                throw LoadError(display(e.path()), "",
                                std::string("expected a ") + ext + " file, found "
                                    + (e.is_directory() ? "a folder" : "something that is not a regular file"));
            out.push_back(e.path());
        };
        if (recursive)
            for (const auto &e : fs::recursive_directory_iterator(root))
                consider(e);
        else
            for (const auto &e : fs::directory_iterator(root))
                consider(e);
        std::sort(out.begin(), out.end());
        return out;
    }

    void warn(const fs::path &file, const std::string &pointer, const std::string &message)
    {
        mBatch.warnings.push_back({display(file), pointer, message});
    }

    /// The model for a Sailor name, created from its preset on first use.
    Model &model(const std::string &sailorName, const std::string &file, const std::string &pointer)
    {
        const SailorModel *sm = findModel(sailorName);
        if (!sm)
            throw LoadError(file, pointer,
                            "unknown Sailor model \"" + sailorName + "\" (known: " + knownModelNames() + ")");
        const std::string id = modelIdFor(sm->name);
        auto it = mModels.find(id);
        if (it != mModels.end())
            return it->second;
        Model m = resolveModel(sm->preset);
        m.id = id;
        m.name = std::string(sm->name) + " (Sailor dataset)";
        m.source = std::string("Public Sailor dataset (eth-easl/sailor @ cf2c8e3): shape of MemX preset ") + sm->preset
            + ", sequence 2048, fp16, Adam; no training config in the dataset, so the preset's shape is kept.";
        m.shape.seqLength = kSailorSeqLength;
        m.training.precision = Precision::FP16;
        // Megatron-DeepSpeed's default core attention (no --use-flash-attn): the dataset's measured
        // activation bytes (OPT-350, TP 1: 172 sbh bytes per layer) match Korthikanti's unfused
        // 34 + 5as/h = 194, not the flash 34.
        m.training.attention = AttentionBackend::Unfused;
        return mModels.emplace(id, m).first->second;
    }

    void readTrainingConfig(const fs::path &path)
    {
        const std::string file = display(path);
        const json j = readJsonFile(file);
        Diagnostics diags(file);
        JsonObjectReader r(j, "/", diags);
        if (!r.valid())
            diags.throwIfAny();
        const std::string name = r.requireString("model");
        const int layers = static_cast<int>(r.requireInt("num_layers", 1, 100000));
        const int hidden = static_cast<int>(r.requireInt("hidden_size", 1, 1 << 20));
        const int heads = static_cast<int>(r.requireInt("heads", 1, 1 << 16));
        const auto headDim = r.optionalInt("head_dim", 1, 1 << 16);
        const int vocab = static_cast<int>(r.requireInt("vocab_size", 1, 1 << 24));
        const int seq = static_cast<int>(r.requireInt("sequence_length", 1, 1 << 24));
        const int gbs = static_cast<int>(r.requireInt("global_batch_size", 1, 1 << 24));
        const auto all = r.optionalInt("num_all_layers", 1, 100000);
        diags.throwIfAny();
        if (headDim && *headDim * heads != hidden)
            throw LoadError(file, "/head_dim",
                            "expected heads x head_dim = hidden_size (" + std::to_string(hidden) + "), found "
                                + std::to_string(heads) + " x " + std::to_string(*headDim));
        if (all && *all != layers + 2)
            throw LoadError(file, "/num_all_layers",
                            "expected num_layers + 2 (embedding and head) = " + std::to_string(layers + 2) + ", found "
                                + std::to_string(*all));
        Model &m = model(name, file, "/model");
        const bool hiddenChanged = m.shape.hidden != hidden;
        m.shape.layers = layers;
        m.shape.hidden = hidden;
        m.shape.heads = heads;
        m.shape.kvGroups = heads;
        if (hiddenChanged)
            m.shape.ffnHidden = 4 * hidden;
        m.shape.vocab = vocab;
        m.shape.seqLength = seq;
        m.training.globalBatch = gbs;
        m.source = "Public Sailor dataset (eth-easl/sailor @ cf2c8e3), " + rel(path)
            + ": layers, hidden, heads, vocab, sequence and global batch from the training config; the rest "
              "(norm, MLP, positions, tied embeddings) from the MemX preset of the same name; fp16, Adam, "
              "unfused attention (Megatron-DeepSpeed's default, as the measured activation bytes show).";
    }

    /// Number of profile entries expected for a model: L + 2 (embedding, L layers, head).
    /// Returns how many trailing entries to fold into the head (0 or 1), or throws.
    int foldCount(const Model &m, size_t entries, const std::string &file, const std::string &pointer)
    {
        const size_t l = static_cast<size_t>(m.shape.layers);
        if (entries == l + 2)
            return 0;
        if (entries == l + 3) {
            if (mFoldWarned.insert(m.id + file).second)
                warn(file, pointer,
                     std::to_string(entries) + " layer entries for a " + std::to_string(l)
                         + "-layer model: the extra entry before the output layer (the final norm) "
                           "was added to the output layer");
            return 1;
        }
        throw LoadError(file, pointer,
                        "expected " + std::to_string(l + 2) + " layer entries (embedding, " + std::to_string(l)
                            + " transformer layers, output layer) for model " + m.id + ", found "
                            + std::to_string(entries));
    }

    std::string gpuId(const std::string &name, const std::string &file, const std::string &pointer)
    {
        if (const GpuSpec *spec = builtinCatalogue().find(name))
            return spec->id;
        std::string hint;
        for (const std::string &s : builtinCatalogue().suggest(name))
            hint += (hint.empty() ? "; did you mean \"" : ", \"") + s + "\"";
        throw LoadError(file, pointer,
                        "unknown GPU \"" + name + "\": not in the MemX catalogue" + hint + (hint.empty() ? "" : "?"));
    }

    int intKeyOrThrow(const std::string &key, const std::string &file, const std::string &pointer, const char *what)
    {
        auto v = intKey(key);
        if (!v || *v < 1)
            throw LoadError(file, pointer,
                            std::string("expected ") + what + " (a positive integer), found \"" + key + "\"");
        return *v;
    }

    const json &requireObject(const json &j, const std::string &file, const std::string &pointer)
    {
        if (!j.is_object())
            throw LoadError(file, pointer, "expected an object, found " + describeJson(j));
        return j;
    }

    /// Layer entries "0".."n-1" of an object, in order.
    std::vector<const json *> layerEntries(const json &j, const std::string &file, const std::string &pointer)
    {
        requireObject(j, file, pointer);
        std::vector<const json *> out(j.size(), nullptr);
        for (auto it = j.begin(); it != j.end(); ++it) {
            auto idx = intKey(it.key());
            if (!idx || static_cast<size_t>(*idx) >= j.size())
                throw LoadError(file, jsonPointerJoin(pointer, it.key()),
                                "expected layer indices 0.." + std::to_string(j.size() - 1) + ", found \"" + it.key()
                                    + "\"");
            out[static_cast<size_t>(*idx)] = &it.value();
        }
        return out;
    }

    void readLayerTimes(const fs::path &path)
    {
        const std::string file = display(path);
        const json j = readJsonFile(file);
        requireObject(j, file, "/");
        for (auto mit = j.begin(); mit != j.end(); ++mit) {
            const std::string mp = jsonPointerJoin("/", mit.key());
            Model &m = model(mit.key(), file, mp);
            for (auto git = requireObject(mit.value(), file, mp).begin(); git != mit.value().end(); ++git) {
                const std::string gp = jsonPointerJoin(mp, git.key());
                const std::string gpu = gpuId(git.key(), file, gp);
                for (auto bit = requireObject(git.value(), file, gp).begin(); bit != git.value().end(); ++bit) {
                    const std::string bp = jsonPointerJoin(gp, bit.key());
                    const int mbs = intKeyOrThrow(bit.key(), file, bp, "a micro-batch size");
                    for (auto tit = requireObject(bit.value(), file, bp).begin(); tit != bit.value().end(); ++tit) {
                        const std::string tp = jsonPointerJoin(bp, tit.key());
                        LayerProfile prof;
                        prof.key
                            = {gpu, m.id, intKeyOrThrow(tit.key(), file, tp, "a TP degree"), mbs, m.shape.seqLength};
                        prof.origin = ProfileOrigin::Measured; // timed inside the TP group: includes its collectives
                        prof.source = "sailor:" + rel(path) + "#" + tp;
                        const auto entries = layerEntries(tit.value(), file, tp);
                        const int fold = foldCount(m, entries.size(), file, tp);
                        for (size_t i = 0; i < entries.size(); ++i) {
                            const json &v = *entries[i];
                            const std::string lp = jsonPointerJoin(tp, i);
                            if (!v.is_array() || v.size() != 3)
                                throw LoadError(file, lp,
                                                "expected [forward s, backward s, optimizer s] (three "
                                                "non-negative numbers), found "
                                                    + describeJson(v));
                            // Each time in seconds within what a project stores (the reader's range,
                            // kMaxStoredLayerTimeMs = 1e9 ms = 1e+06 s).
                            static_assert(kMaxStoredLayerTimeMs == 1e9);
                            static const char *const kPart[] = {"forward", "backward", "optimizer"};
                            for (size_t k = 0; k < 3; ++k)
                                if (!v[k].is_number() || !std::isfinite(v[k].get<double>()) || v[k].get<double>() < 0
                                    || v[k].get<double>() * 1000.0 > kMaxStoredLayerTimeMs)
                                    throw LoadError(file, jsonPointerJoin(lp, k),
                                                    std::string("expected the ") + kPart[k]
                                                        + " time in seconds, a number from 0 to " + "1e+06" + ", found "
                                                        + describeJson(v[k]));
                            LayerMeasurement lm;
                            lm.forwardMs = v[0].get<double>() * 1000.0;
                            lm.backwardMs = v[1].get<double>() * 1000.0;
                            lm.optimizerMs = v[2].get<double>() * 1000.0;
                            if (fold && i + 1 == entries.size()) {
                                LayerMeasurement &head = prof.layers.back();
                                head.forwardMs += lm.forwardMs;
                                head.backwardMs += lm.backwardMs;
                                head.optimizerMs += lm.optimizerMs;
                            } else {
                                prof.layers.push_back(lm);
                            }
                        }
                        mProfiles[prof.key] = std::move(prof);
                    }
                }
            }
        }
    }

    void readLayerMemory(const fs::path &path)
    {
        const std::string file = display(path);
        const json j = readJsonFile(file);
        requireObject(j, file, "/");
        for (auto mit = j.begin(); mit != j.end(); ++mit) {
            const std::string mp = jsonPointerJoin("/", mit.key());
            Model &m = model(mit.key(), file, mp);
            for (auto tit = requireObject(mit.value(), file, mp).begin(); tit != mit.value().end(); ++tit) {
                const std::string tp = jsonPointerJoin(mp, tit.key());
                const int tpDegree = intKeyOrThrow(tit.key(), file, tp, "a TP degree");
                const auto entries = layerEntries(tit.value(), file, tp);
                const int fold = foldCount(m, entries.size(), file, tp);
                std::vector<std::pair<double, double>> mem; // params bytes, activation bytes per sample
                for (size_t i = 0; i < entries.size(); ++i) {
                    const std::string lp = jsonPointerJoin(tp, i);
                    Diagnostics diags(file);
                    JsonObjectReader r(*entries[i], lp, diags);
                    const double params = r.requireNumber("params_bytes", 0, 1e15);
                    const double act = r.requireNumber("act_mem_bytes", 0, 1e15);
                    diags.throwIfAny();
                    if (fold && i + 1 == entries.size()) {
                        mem.back().first += params;
                        mem.back().second += act;
                    } else {
                        mem.emplace_back(params, act);
                    }
                }
                if (!plausibleActivations(m, tpDegree, mem, file, tp))
                    continue;
                bool attached = false;
                for (auto &[key, prof] : mProfiles) {
                    if (key.model != m.id || key.tp != tpDegree)
                        continue;
                    attached = true;
                    for (size_t i = 0; i < prof.layers.size() && i < mem.size(); ++i) {
                        prof.layers[i].paramBytes = mem[i].first;
                        // The dataset gives activations for one sample; they grow linearly with the micro-batch.
                        prof.layers[i].activationBytes = mem[i].second * key.microBatch;
                    }
                }
                if (!attached)
                    warn(file, tp,
                         "no time profile of model " + m.id + " at TP " + std::to_string(tpDegree)
                             + ": memory figures not attached to anything");
            }
        }
    }

    /// Measured per-sample activation bytes of the transformer layers against the model's shape
    /// (activationBytesProblem). A contradiction means the profile was measured for another shape
    /// (the public data set's LLAMA-3-8 bytes are of another sequence length): warn and drop this
    /// TP's memory figures, so the rest of the data set still imports.
    bool plausibleActivations(const Model &m, int tp, const std::vector<std::pair<double, double>> &mem,
                              const std::string &file, const std::string &pointer)
    {
        for (size_t i = 1; i + 1 < mem.size(); ++i)
            if (auto why = activationBytesProblem(m, tp, mem[i].second)) {
                warn(file, jsonPointerJoin(jsonPointerJoin(pointer, i), "act_mem_bytes"),
                     *why + "; this TP's memory figures are not used");
                return false;
            }
        return true;
    }

    Fit parseFit(const json &v, const std::string &file, const std::string &pointer)
    {
        Fit f;
        const bool ok = v.is_array() && v.size() == 2 && v[0].is_array() && !v[0].empty() && v[1].is_number()
            && v[1].get<double>() > 0 && std::all_of(v[0].begin(), v[0].end(), [](const json &c) {
                            return c.is_number() && std::isfinite(c.get<double>());
                        });
        if (!ok)
            throw LoadError(file, pointer,
                            "expected a bandwidth fit [[coefficients...], cap bytes/s], found " + describeJson(v));
        for (const json &c : v[0])
            f.coefficients.push_back(c.get<double>());
        f.capBytesPerSecond = v[1].get<double>();
        return f;
    }

    void addFit(LinkScope scope, const std::string &sGpu, int sGpus, const std::string &sZone, const std::string &rGpu,
                int rGpus, const std::string &rZone, const Fit &fit, const fs::path &path, const std::string &pointer)
    {
        NetworkMeasurement m;
        m.scope = scope;
        m.senderGpu = sGpu;
        m.senderGpusPerNode = sGpus;
        m.senderZone = sZone;
        m.receiverGpu = rGpu;
        m.receiverGpusPerNode = rGpus;
        m.receiverZone = rZone;
        m.capGBps = fit.capBytesPerSecond / 1e9;
        m.source = "sailor:" + rel(path) + "#" + pointer;
        for (int e = 10; e <= 30; ++e) {
            const double bytes = std::ldexp(1.0, e);
            m.curve.push_back({bytes, sailorFitGBps(fit.coefficients, fit.capBytesPerSecond, bytes)});
        }
        const std::string key = m.key();
        auto it = mNetwork.find(key);
        if (it != mNetwork.end()) {
            if (it->second.curve != m.curve)
                warn(display(path), pointer,
                     "a different fit for the same link was already read from " + it->second.source
                         + "; this one replaces it");
            else
                return; // the same fit in two files (intra_node_bandwidths.json and network_coeffs_all_homo.json)
        }
        mNetwork[key] = std::move(m);
        mFits[key] = fit;
    }

    /// gpu -> count -> fit
    void readGpuCountFits(const json &j, LinkScope scope, const fs::path &path, const std::string &pointer)
    {
        const std::string file = display(path);
        for (auto git = requireObject(j, file, pointer).begin(); git != j.end(); ++git) {
            const std::string gp = jsonPointerJoin(pointer, git.key());
            const std::string gpu = gpuId(git.key(), file, gp);
            for (auto cit = requireObject(git.value(), file, gp).begin(); cit != git.value().end(); ++cit) {
                const std::string cp = jsonPointerJoin(gp, cit.key());
                const int n = intKeyOrThrow(cit.key(), file, cp, "a GPU count");
                addFit(scope, gpu, n, "", gpu, n, "", parseFit(cit.value(), file, cp), path, cp);
            }
        }
    }

    void readNetworkFile(const fs::path &path)
    {
        const std::string file = display(path);
        const std::string name = path.filename().string();
        if (name == "gcp_communication_cost.json") {
            warn(file, "", "not imported: inter-zone egress prices (USD per GB), not a measurement MemX uses");
            return;
        }
        const json j = readJsonFile(file);
        if (name == "intra_node_bandwidths.json") {
            readGpuCountFits(j, LinkScope::IntraNode, path, "");
        } else if (name == "network_coeffs_all_homo.json") {
            requireObject(j, file, "/");
            for (auto it = j.begin(); it != j.end(); ++it) {
                if (it.key() != "intra" && it.key() != "inter")
                    throw LoadError(file, jsonPointerJoin("/", it.key()),
                                    "expected \"intra\" or \"inter\", found \"" + it.key() + "\"");
                readGpuCountFits(it.value(), it.key() == "intra" ? LinkScope::IntraNode : LinkScope::InterNode, path,
                                 jsonPointerJoin("/", it.key()));
            }
        } else if (name == "multizone_bandwidths_het.json") {
            // zone -> sender GPU -> sender GPUs per node -> zone -> receiver GPU -> receiver GPUs per node -> fit
            for (auto z1 = requireObject(j, file, "/").begin(); z1 != j.end(); ++z1) {
                const std::string p1 = jsonPointerJoin("/", z1.key());
                for (auto g1 = requireObject(z1.value(), file, p1).begin(); g1 != z1.value().end(); ++g1) {
                    const std::string p2 = jsonPointerJoin(p1, g1.key());
                    const std::string sGpu = gpuId(g1.key(), file, p2);
                    for (auto n1 = requireObject(g1.value(), file, p2).begin(); n1 != g1.value().end(); ++n1) {
                        const std::string p3 = jsonPointerJoin(p2, n1.key());
                        const int sN = intKeyOrThrow(n1.key(), file, p3, "a GPU count");
                        for (auto z2 = requireObject(n1.value(), file, p3).begin(); z2 != n1.value().end(); ++z2) {
                            const std::string p4 = jsonPointerJoin(p3, z2.key());
                            for (auto g2 = requireObject(z2.value(), file, p4).begin(); g2 != z2.value().end(); ++g2) {
                                const std::string p5 = jsonPointerJoin(p4, g2.key());
                                const std::string rGpu = gpuId(g2.key(), file, p5);
                                for (auto n2 = requireObject(g2.value(), file, p5).begin(); n2 != g2.value().end();
                                     ++n2) {
                                    const std::string p6 = jsonPointerJoin(p5, n2.key());
                                    const int rN = intKeyOrThrow(n2.key(), file, p6, "a GPU count");
                                    addFit(LinkScope::InterNode, sGpu, sN, z1.key(), rGpu, rN, z2.key(),
                                           parseFit(n2.value(), file, p6), path, p6);
                                }
                            }
                        }
                    }
                }
            }
        } else {
            warn(file, "", "unknown network file: not imported");
        }
    }

    /// Link between nodes of (gpu a, count a) and (gpu b, count b): measured when we have a fit.
    std::optional<json> fittedLinkJson(LinkScope scope, const std::string &a, int na, const std::string &zoneA,
                                       const std::string &b, int nb, const std::string &zoneB)
    {
        NetworkMeasurement probe;
        probe.scope = scope;
        probe.senderGpu = a;
        probe.senderGpusPerNode = na;
        probe.receiverGpu = b;
        probe.receiverGpusPerNode = nb;
        // Prefer the zone-specific fit, then the zone-less (homogeneous) one.
        for (int withZone = 1; withZone >= 0; --withZone) {
            probe.senderZone = withZone ? zoneA : "";
            probe.receiverZone = withZone ? zoneB : "";
            auto it = mNetwork.find(probe.key());
            if (it == mNetwork.end())
                continue;
            const Link l = it->second.toLink();
            json curve = json::array();
            for (const CurvePoint &p : l.curve)
                curve.push_back({{"bytes", p.bytes}, {"bandwidthGBps", p.bandwidthGBps}});
            return json {{"bandwidthGBps", l.bandwidthGBps}, {"latencyUs", 0.0}, {"curve", curve}};
        }
        return std::nullopt;
    }

    /// One node group of the synthetic cluster (one per GPU type and GPUs per node, filled in order).
    struct GroupAlloc {
        std::string sailorName, gpu, zone;
        int gpusPerNode = 0;
        int nodes = 0; ///< nodes used so far
        int nextGpu = 0; ///< next free GPU in the current node (== gpusPerNode: node full)
    };
    /// Where one replica runs.
    struct Placement {
        size_t group;
        int node;
        int firstGpu;
        int tp;
    };
    struct Placements {
        std::vector<GroupAlloc> groups;
        std::vector<std::vector<Placement>> perStage;
    };

    void readRun(const fs::path &path)
    {
        const std::string file = display(path);
        const fs::path relPath = path.lexically_relative(fs::path(mDir) / "measured-runs");
        std::vector<std::string> parts;
        for (const auto &p : relPath)
            parts.push_back(p.string());
        if (parts.size() < 3)
            throw LoadError(file, "", "expected measured-runs/GROUP/MODEL/.../plan_config_*.json");
        const std::string group = parts[0] + "/" + parts[1];
        const Model &m = model(parts[1], file, "");
        const json j = readJsonFile(file);
        Diagnostics diags(file);
        JsonObjectReader r(j, "/", diags);
        if (!r.valid())
            diags.throwIfAny();
        const int mbs = static_cast<int>(r.requireInt("mbs", 1, 1 << 20));
        const int gbs = static_cast<int>(r.requireInt("gbs", 1, 1 << 24));
        const double real = r.requireNumber("real", 1e-9, 1e9);
        const auto maxMem = r.optionalNumber("max_mem", 0, 1e15);
        const int nodesInFile = static_cast<int>(r.requireInt("N", 1, 1 << 20));
        const std::string zone = r.optionalString("zone").value_or("");
        const json *pipelines = r.requireArray("pipeline_list");
        diags.throwIfAny();
        if (pipelines->empty())
            throw LoadError(file, "/pipeline_list", "expected at least one pipeline, found an empty list");
        if (pipelines->size() > 1)
            warn(file, "/pipeline_list",
                 "only the first of " + std::to_string(pipelines->size()) + " pipelines is imported");
        JsonObjectReader pr((*pipelines)[0], "/pipeline_list/0", diags);
        const auto numStages = pr.requireInt("num_stages", 1, 100000);
        const json *lps = pr.requireArray("layers_per_stage");
        const json *tmps = pr.requireArray("tmp_per_stage");
        const json *dps = pr.requireArray("dp");
        diags.throwIfAny();
        const size_t stages = static_cast<size_t>(numStages);
        for (auto [arr, key] : {std::pair {lps, "layers_per_stage"}, {tmps, "tmp_per_stage"}, {dps, "dp"}})
            if (arr->size() != stages)
                throw LoadError(file, std::string("/pipeline_list/0/") + key,
                                "expected " + std::to_string(stages) + " entries (num_stages), found "
                                    + std::to_string(arr->size()));

        const std::vector<int> counts = stageLayerCounts(file, *lps, stages, m);
        Placements placed = placeReplicas(file, *tmps, *dps, stages);
        checkNodeCount(file, placed.groups, nodesInFile);
        const Cluster cluster = syntheticCluster(file, placed.groups, zone);
        Plan plan = buildPlan(path, gbs, mbs, counts, placed, cluster, m);

        MeasuredRun run;
        run.id = "sailor/" + relPath.parent_path().generic_string() + "/" + path.stem().string();
        run.plan = std::move(plan);
        run.clusterName = cluster.name;
        run.cluster = cluster;
        run.modelId = m.id;
        run.iterationTimeMs = real * 1000.0;
        run.peakMemoryBytes = maxMem;
        run.memoryKind = MemoryKind::DeviceUsed;
        run.source = "sailor:" + rel(path);
        run.group = group;
        mClusters.emplace(cluster.name, cluster);
        mBatch.runs.push_back(std::move(run));
    }

    /// Layers of each stage (the embedding and output layers count as entries): each stage's count,
    /// contiguous ranges assumed; a list that is not contiguous is reported.
    std::vector<int> stageLayerCounts(const std::string &file, const json &lps, size_t stages, const Model &m)
    {
        const int L = m.shape.layers;
        std::vector<int> counts;
        int expected = 0;
        bool warned = false;
        for (size_t s = 0; s < stages; ++s) {
            const std::string sp = "/pipeline_list/0/layers_per_stage/" + std::to_string(s);
            const json &list = lps[s];
            if (!list.is_array() || list.empty())
                throw LoadError(file, sp, "expected a non-empty list of layer indices, found " + describeJson(list));
            for (size_t i = 0; i < list.size(); ++i, ++expected) {
                if (!list[i].is_number_integer())
                    throw LoadError(file, jsonPointerJoin(sp, i),
                                    "expected a layer index, found " + describeJson(list[i]));
                if (list[i].get<int>() != expected && !warned) {
                    warn(file, jsonPointerJoin(sp, i),
                         "layer list is not contiguous (expected " + std::to_string(expected) + ", found "
                             + std::to_string(list[i].get<int>()) + "); used the stage's count ("
                             + std::to_string(list.size()) + " entries) and contiguous ranges");
                    warned = true;
                }
            }
            counts.push_back(static_cast<int>(list.size()));
        }
        if (expected != L + 2)
            throw LoadError(file, "/pipeline_list/0/layers_per_stage",
                            "expected " + std::to_string(L + 2) + " layer entries in all (embedding, "
                                + std::to_string(L) + " layers of " + m.id + ", output layer), found "
                                + std::to_string(expected));

        return counts;
    }

    /// Parses the replicas of every stage and assigns them nodes.
    Placements placeReplicas(const std::string &file, const json &tmps, const json &dps, size_t stages)
    {
        Placements out;
        std::vector<GroupAlloc> &groups = out.groups;
        std::vector<std::vector<Placement>> &placements = out.perStage;
        placements.resize(stages);
        for (size_t s = 0; s < stages; ++s) {
            const std::string sp = "/pipeline_list/0/tmp_per_stage/" + std::to_string(s);
            const json &reps = tmps[s];
            const json &dp = dps[s];
            if (!reps.is_array())
                throw LoadError(file, sp, "expected a list of data-parallel replicas, found " + describeJson(reps));
            if (!dp.is_number_integer() || dp.get<long long>() != static_cast<long long>(reps.size()))
                throw LoadError(file, "/pipeline_list/0/dp/" + std::to_string(s),
                                "expected the number of replicas of stage " + std::to_string(s) + " ("
                                    + std::to_string(reps.size()) + "), found " + describeJson(dp));
            for (size_t k = 0; k < reps.size(); ++k) {
                const std::string rp = jsonPointerJoin(sp, k);
                const json &rep = reps[k];
                const bool shape = rep.is_array() && rep.size() == 2 && rep[0].is_array() && rep[1].is_number_integer();
                if (!shape)
                    throw LoadError(file, rp,
                                    "expected a replica [[[gpu type, gpus per node, zone]], tp], found "
                                        + describeJson(rep));
                if (rep[0].size() != 1)
                    throw LoadError(file, rp + "/0",
                                    "expected exactly one [gpu type, gpus per node, zone] per "
                                    "replica (a replica spanning node types is not supported), found "
                                        + std::to_string(rep[0].size()));
                const json &node = rep[0][0];
                if (!node.is_array() || node.size() != 3 || !node[0].is_string() || !node[1].is_number_integer()
                    || !node[2].is_string() || node[1].get<int>() < 1)
                    throw LoadError(file, rp + "/0/0",
                                    "expected [gpu type, gpus per node, zone], found " + describeJson(node));
                const std::string sailorGpu = node[0].get<std::string>();
                const std::string gpu = gpuId(sailorGpu, file, rp + "/0/0/0");
                const int gpn = node[1].get<int>();
                const int tp = rep[1].get<int>();
                if (tp < 1 || tp > gpn)
                    throw LoadError(file, rp + "/1",
                                    "expected a TP degree between 1 and the node's " + std::to_string(gpn)
                                        + " GPUs, found " + std::to_string(tp));
                size_t gi = 0;
                while (gi < groups.size() && !(groups[gi].gpu == gpu && groups[gi].gpusPerNode == gpn))
                    ++gi;
                if (gi == groups.size())
                    groups.push_back({sailorGpu, gpu, node[2].get<std::string>(), gpn, 0, gpn});
                GroupAlloc &g = groups[gi];
                if (g.nextGpu + tp > g.gpusPerNode) {
                    ++g.nodes;
                    g.nextGpu = 0;
                }
                placements[s].push_back({gi, g.nodes - 1, g.nextGpu, tp});
                g.nextGpu += tp;
            }
        }
        return out;
    }

    /// The node count the plan uses against the file's N (a single group keeps the whole allocation).
    void checkNodeCount(const std::string &file, std::vector<GroupAlloc> &groups, int nodesInFile)
    {
        int used = 0;
        for (const GroupAlloc &g : groups)
            used += g.nodes;
        if (used > nodesInFile)
            throw LoadError(file, "/N",
                            "the plan needs " + std::to_string(used)
                                + " nodes, the file says N = " + std::to_string(nodesInFile));
        if (groups.size() == 1)
            groups[0].nodes = nodesInFile; // unused nodes of the allocation are still part of the cluster
        else if (used != nodesInFile)
            warn(file, "/N",
                 "N = " + std::to_string(nodesInFile) + " but the plan uses " + std::to_string(used)
                     + " nodes; the cluster holds the nodes the plan uses");
    }

    /// The cluster, built as JSON and parsed so it is in the canonical form a reload gives.
    Cluster syntheticCluster(const std::string &file, const std::vector<GroupAlloc> &groups, const std::string &zone)
    {
        std::string clusterName = "sailor";
        json nodes = json::array();
        for (const GroupAlloc &g : groups) {
            clusterName += "-" + lower(g.sailorName) + "x" + std::to_string(g.nodes);
            json n {{"name", lower(g.sailorName)}, {"gpu", g.gpu}, {"gpus", g.gpusPerNode}, {"count", g.nodes}};
            if (g.gpusPerNode > 1)
                if (auto intra
                    = fittedLinkJson(LinkScope::IntraNode, g.gpu, g.gpusPerNode, "", g.gpu, g.gpusPerNode, ""))
                    n["intraLink"] = *intra;
            nodes.push_back(n);
        }
        auto inter = fittedLinkJson(LinkScope::InterNode, groups[0].gpu, groups[0].gpusPerNode, groups[0].zone,
                                    groups[0].gpu, groups[0].gpusPerNode, groups[0].zone);
        if (!inter) {
            // Documented default when the dataset has no fit: the device's typical NIC, else 100 Gb/s.
            const GpuSpec *spec = builtinCatalogue().find(groups[0].gpu);
            const double gbps = spec && spec->nicGbps ? *spec->nicGbps : 100.0;
            inter = json {{"bandwidthGBps", gbps / 8.0}, {"latencyUs", 5.0}};
            warn(file, "",
                 "no measured inter-node fit for " + groups[0].gpu + ": default " + std::to_string(gbps / 8.0)
                     + " GB/s");
        }
        json network {{"interNode", *inter}};
        json overrides = json::array();
        for (size_t a = 0; a < groups.size(); ++a)
            for (size_t b = a + 1; b < groups.size(); ++b)
                if (auto l = fittedLinkJson(LinkScope::InterNode, groups[a].gpu, groups[a].gpusPerNode, groups[a].zone,
                                            groups[b].gpu, groups[b].gpusPerNode, groups[b].zone))
                    overrides.push_back(
                        {{"a", lower(groups[a].sailorName)}, {"b", lower(groups[b].sailorName)}, {"link", *l}});
        if (!overrides.empty())
            network["overrides"] = overrides;
        const json clusterJson {{"format", kClusterFormat},
                                {"name", clusterName},
                                {"description",
                                 "Synthetic cluster of the public Sailor measured runs"
                                     + std::string(zone.empty() ? "" : " (zone " + zone + ")")
                                     + "; links from the dataset's fitted bandwidth curves"},
                                {"nodes", nodes},
                                {"network", network}};
        Diagnostics cdiags(file);
        const Cluster cluster = parseCluster(clusterJson, builtinCatalogue(), cdiags);
        if (!cdiags.empty())
            throw LoadError(file, "", "internal: the synthetic cluster is invalid: " + cdiags.items()[0].toString());

        return cluster;
    }

    /// The plan of the run: contiguous layer ranges, one replica per placement.
    Plan buildPlan(const fs::path &path, int gbs, int mbs, const std::vector<int> &counts, const Placements &placed,
                   const Cluster &cluster, const Model &m)
    {
        const std::string file = display(path);
        const int L = m.shape.layers;
        const size_t stages = counts.size();
        Plan plan;
        plan.name = path.stem().string();
        plan.globalBatch = gbs;
        int entry = 0;
        for (size_t s = 0; s < stages; ++s) {
            Stage st;
            const int first = std::max(entry, 1);
            const int end = std::min(entry + counts[s], L + 1);
            st.firstLayer = first - 1;
            st.layerCount = std::max(0, end - first);
            entry += counts[s];
            for (const Placement &p : placed.perStage[s]) {
                Replica rep;
                rep.node = nodeName(cluster.groups[p.group], p.node);
                for (int g = 0; g < p.tp; ++g)
                    rep.gpus.push_back(p.firstGpu + g);
                rep.tp = p.tp;
                rep.microBatch = mbs;
                st.replicas.push_back(std::move(rep));
            }
            plan.stages.push_back(std::move(st));
        }
        Diagnostics pdiags(file);
        validatePlan(plan, cluster, m, pdiags);
        if (!pdiags.empty()) {
            std::vector<Diagnostic> items;
            for (const Diagnostic &d : pdiags.items())
                items.push_back({file, "/pipeline_list/0",
                                 "the imported plan is inconsistent (plan field " + d.pointer + "): " + d.message});
            throw LoadError(items);
        }

        return plan;
    }

    std::string mDir;
    ProgressFn mProgress;
    size_t mDone = 0, mTotal = 0;
    ImportBatch mBatch;
    std::map<std::string, Model> mModels;
    std::map<ProfileKey, LayerProfile> mProfiles;
    std::map<std::string, NetworkMeasurement> mNetwork;
    std::map<std::string, Fit> mFits;
    std::map<std::string, Cluster> mClusters;
    std::set<std::string> mFoldWarned;
};

} // namespace

ImportBatch importSailor(const std::string &dir, const ProgressFn &progress)
{
    return Importer(dir, progress).run();
}

} // namespace memx
