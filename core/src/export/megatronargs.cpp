#include "memx/export/megatronargs.h"

#include "memx/util/diagnostic.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

namespace memx {

Recompute normalisedRecompute(const Recompute &r, int layerCount)
{
    if (r.method != RecomputeMethod::Full)
        return {r.method, 0};
    return {RecomputeMethod::Full, r.layers >= layerCount ? 0 : r.layers};
}

namespace {

std::optional<int> toInt(const std::string &s)
{
    if (s.empty() || s.size() > 9
        || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        return std::nullopt;
    return std::stoi(s);
}

/// Expands the layout grammar: "(xyz)*n" and "x*n" repeat, commas are dropped. Returns false on a
/// syntax error.
bool expandLayout(const std::string &s, size_t &pos, std::string &out, bool nested)
{
    while (pos < s.size()) {
        const char c = s[pos];
        if (c == ')') {
            if (!nested)
                return false;
            return true;
        }
        std::string unit;
        if (c == ',' || c == ' ') {
            ++pos;
            continue;
        }
        if (c == '(') {
            ++pos;
            if (!expandLayout(s, pos, unit, true) || pos >= s.size() || s[pos] != ')')
                return false;
            ++pos;
        } else {
            unit = std::string(1, c);
            ++pos;
        }
        int times = 1;
        if (pos < s.size() && s[pos] == '*') {
            size_t end = ++pos;
            while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])))
                ++end;
            const auto n = toInt(s.substr(pos, end - pos));
            if (!n)
                return false;
            times = *n;
            pos = end;
        }
        for (int i = 0; i < times; ++i)
            out += unit;
    }
    return !nested;
}

/// Splits a shell line into words (single and double quotes, backslash escapes); stops at '#'.
std::vector<std::string> shellWords(const std::string &line)
{
    std::vector<std::string> words;
    std::string cur;
    bool inWord = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (c == '\'') {
            const size_t end = line.find('\'', i + 1);
            cur += line.substr(i + 1, end == std::string::npos ? std::string::npos : end - i - 1);
            i = end == std::string::npos ? line.size() : end;
            inWord = true;
        } else if (c == '"') {
            ++i;
            while (i < line.size() && line[i] != '"') {
                if (line[i] == '\\' && i + 1 < line.size())
                    ++i;
                cur += line[i++];
            }
            inWord = true;
        } else if (c == '\\' && i + 1 < line.size()) {
            cur += line[++i];
            inWord = true;
        } else if (std::isspace(static_cast<unsigned char>(c))) {
            if (inWord)
                words.push_back(cur);
            cur.clear();
            inWord = false;
        } else if (c == '#' && !inWord) {
            break;
        } else {
            cur += c;
            inWord = true;
        }
    }
    if (inWord)
        words.push_back(cur);
    return words;
}

} // namespace

namespace {

using FlagValues = std::map<std::string, std::string>;

/// The value flags MemX reads (into the returned map) and the switches (into `a`).
FlagValues collectFlags(const std::vector<std::string> &args, MegatronArgs &a, Diagnostics &diags)
{
    FlagValues values;
    static const std::vector<std::string> valueFlags = {"--tensor-model-parallel-size",
                                                        "--pipeline-model-parallel-size",
                                                        "--micro-batch-size",
                                                        "--global-batch-size",
                                                        "--num-layers",
                                                        "--pipeline-model-parallel-layout",
                                                        "--decoder-first-pipeline-num-layers",
                                                        "--decoder-last-pipeline-num-layers",
                                                        "--recompute-granularity",
                                                        "--recompute-method",
                                                        "--recompute-num-layers",
                                                        "--context-parallel-size",
                                                        "--expert-model-parallel-size",
                                                        "--expert-tensor-parallel-size",
                                                        "--num-experts",
                                                        "--cp-comm-type",
                                                        "--fp8-format",
                                                        "--data-parallel-sharding-strategy",
                                                        "--num-layers-per-virtual-pipeline-stage"};
    for (size_t i = 0; i < args.size(); ++i) {
        std::string flag = args[i];
        std::optional<std::string> value;
        if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = flag.substr(eq + 1);
            flag = flag.substr(0, eq);
        }
        if (std::find(valueFlags.begin(), valueFlags.end(), flag) != valueFlags.end()) {
            if (!value) {
                if (i + 1 >= args.size()) {
                    diags.error("argv", flag + " expects a value, found the end of the arguments");
                    break;
                }
                value = args[++i];
            }
            values[flag] = *value;
        } else if (flag == "--sequence-parallel") {
            a.sequenceParallel = true;
        } else if (flag == "--use-distributed-optimizer") {
            a.distributedOptimizer = true;
        } else if (flag == "--use-megatron-fsdp") {
            values[flag] = "true"; // read with the strategy below
        } else if (flag == "--overlap-grad-reduce") {
            a.overlapGradReduce = true;
        } else if (flag == "--overlap-param-gather") {
            a.overlapParamGather = true;
        } else if (flag == "--bf16") {
            a.bf16 = true;
        } else if (flag == "--fp16") {
            a.fp16 = true;
        } else if (flag == "--use-tp-pp-dp-mapping") {
            a.tpPpDpMapping = true;
        } else if (flag == "--recompute-activations") {
            values["--recompute-granularity"] = "selective";
        }
    }
    return values;
}

/// A positive integer flag, `fallback` when absent (an error when not a positive integer).
int intFlag(const FlagValues &values, const std::string &flag, int fallback, Diagnostics &diags)
{
    auto it = values.find(flag);
    if (it == values.end())
        return fallback;
    const auto n = toInt(it->second);
    if (!n || *n < 1) {
        diags.error("argv", flag + " expects a positive integer, found \"" + it->second + "\"");
        return fallback;
    }
    return *n;
}

/// Layers per stage: --pipeline-model-parallel-layout, --decoder-first/last-pipeline-num-layers,
/// else an even split.
void parseStageLayers(FlagValues &values, MegatronArgs &a, Diagnostics &diags)
{
    auto intOf = [&](const std::string &flag, int fallback) { return intFlag(values, flag, fallback, diags); };
    if (values.count("--pipeline-model-parallel-layout")) {
        const std::string text = values["--pipeline-model-parallel-layout"];
        std::string flat;
        size_t pos = 0;
        if (!expandLayout(text, pos, flat, false)) {
            diags.error("argv", "--pipeline-model-parallel-layout: cannot parse \"" + text + "\"");
        } else {
            std::vector<std::string> stages(1);
            for (char c : flat) {
                if (c == '|')
                    stages.emplace_back();
                else
                    stages.back() += c;
            }
            const auto count = [&](char sym) { return std::count(flat.begin(), flat.end(), sym); };
            if (flat.empty() || flat.front() != 'E' || flat.back() != 'L' || count('E') != 1 || count('L') != 1)
                diags.error("argv",
                            "--pipeline-model-parallel-layout: expected one E at the start and one L at the "
                            "end, found \""
                                + text + "\"");
            if (count('t') != a.numLayers)
                diags.error("argv",
                            "--pipeline-model-parallel-layout: expected " + std::to_string(a.numLayers)
                                + " t layers (--num-layers), found " + std::to_string(count('t')));
            if (stages.size() % static_cast<size_t>(a.pp) != 0) {
                diags.error("argv",
                            "--pipeline-model-parallel-layout: expected a multiple of " + std::to_string(a.pp)
                                + " stages (pp x virtual stages), found " + std::to_string(stages.size()));
            } else {
                // Virtual stage j x pp + i belongs to rank i.
                a.virtualStages = static_cast<int>(stages.size()) / a.pp;
                a.stageLayers.assign(static_cast<size_t>(a.pp), 0);
                for (size_t c = 0; c < stages.size(); ++c)
                    a.stageLayers[c % static_cast<size_t>(a.pp)]
                        += static_cast<int>(std::count(stages[c].begin(), stages[c].end(), 't'));
            }
        }
    } else if (values.count("--decoder-first-pipeline-num-layers")
               || values.count("--decoder-last-pipeline-num-layers")) {
        const bool hasFirst = values.count("--decoder-first-pipeline-num-layers") > 0;
        const bool hasLast = values.count("--decoder-last-pipeline-num-layers") > 0;
        const int first = intOf("--decoder-first-pipeline-num-layers", 0);
        const int last = intOf("--decoder-last-pipeline-num-layers", 0);
        const int middleStages = a.pp - (hasFirst ? 1 : 0) - (hasLast ? 1 : 0);
        const int rest = a.numLayers - first - last;
        if (middleStages < 0 || rest < 0 || (middleStages == 0 && rest != 0)
            || (middleStages > 0 && rest % middleStages != 0)) {
            diags.error("argv",
                        "--decoder-first/last-pipeline-num-layers: the " + std::to_string(rest)
                            + " remaining layers do not divide over " + std::to_string(middleStages)
                            + " middle stages");
        } else {
            if (hasFirst)
                a.stageLayers.push_back(first);
            for (int i = 0; i < middleStages; ++i)
                a.stageLayers.push_back(rest / middleStages);
            if (hasLast)
                a.stageLayers.push_back(last);
        }
    } else if (a.numLayers > 0) {
        if (a.numLayers % a.pp != 0)
            diags.error("argv",
                        "--num-layers " + std::to_string(a.numLayers) + " is not divisible by the "
                            + std::to_string(a.pp) + " pipeline stages");
        else
            a.stageLayers.assign(static_cast<size_t>(a.pp), a.numLayers / a.pp);
    }
}

/// Recompute per stage (--recompute-granularity / --recompute-method / --recompute-num-layers).
void parseStageRecompute(FlagValues &values, MegatronArgs &a, Diagnostics &diags)
{
    auto intOf = [&](const std::string &flag, int fallback) { return intFlag(values, flag, fallback, diags); };
    const std::string granularity = values.count("--recompute-granularity") ? values["--recompute-granularity"] : "";
    const std::string method = values.count("--recompute-method") ? values["--recompute-method"] : "";
    for (int layers : a.stageLayers) {
        Recompute r;
        if (granularity == "selective") {
            r.method = RecomputeMethod::Selective;
        } else if (granularity == "full") {
            r.method = RecomputeMethod::Full;
            // "block N" recomputes the first N layers of every model chunk (Megatron-LM's
            // TransformerBlock): min(N, chunk layers) x chunks per stage.
            const int v = std::max(1, a.virtualStages);
            if (method == "block")
                r.layers = v * std::min(intOf("--recompute-num-layers", layers), layers / v);
            else if (method != "uniform")
                diags.error("argv",
                            "--recompute-granularity full expects --recompute-method uniform or block, found \""
                                + method + "\"");
        } else if (!granularity.empty()) {
            diags.error("argv", "--recompute-granularity expects full or selective, found \"" + granularity + "\"");
        }
        a.stageRecompute.push_back(normalisedRecompute(r, layers));
    }
}

} // namespace

MegatronArgs parseMegatronArgs(const std::vector<std::string> &args, Diagnostics &diags)
{
    MegatronArgs a;
    FlagValues values = collectFlags(args, a, diags);
    auto intOf = [&](const std::string &flag, int fallback) { return intFlag(values, flag, fallback, diags); };
    a.tp = intOf("--tensor-model-parallel-size", 1);
    a.pp = intOf("--pipeline-model-parallel-size", 1);
    a.microBatch = intOf("--micro-batch-size", 0);
    a.globalBatch = intOf("--global-batch-size", 0);
    a.numLayers = intOf("--num-layers", 0);
    if (a.microBatch == 0)
        diags.error("argv", "--micro-batch-size is required");
    if (a.numLayers == 0)
        diags.error("argv", "--num-layers is required");
    a.contextParallel = intOf("--context-parallel-size", 1);
    a.expertParallel = intOf("--expert-model-parallel-size", 1);
    a.expertTensorParallel = intOf("--expert-tensor-parallel-size", 0);
    a.numExperts = intOf("--num-experts", 0);
    if (a.expertParallel > 1 && a.numExperts == 0)
        diags.error("argv",
                    "--expert-model-parallel-size " + std::to_string(a.expertParallel)
                        + " needs --num-experts (Megatron-LM: num_experts must be non None)");
    if (values.count("--cp-comm-type")) {
        if (const auto c = cpCommFromString(values["--cp-comm-type"]))
            a.cpComm = *c;
        else
            diags.error("argv",
                        "--cp-comm-type expects p2p, all_gather or a2a, found \"" + values["--cp-comm-type"] + "\"");
    }
    if (values.count("--fp8-format")) {
        const auto f = fp8FromString(values["--fp8-format"]);
        if (f && *f != Fp8Format::Off)
            a.fp8 = *f;
        else
            diags.error("argv", "--fp8-format expects hybrid or e4m3, found \"" + values["--fp8-format"] + "\"");
    }
    if (values.count("--data-parallel-sharding-strategy")) {
        const std::string &v = values["--data-parallel-sharding-strategy"];
        if (v != "no_shard" && v != "optim" && v != "optim_grads" && v != "optim_grads_params")
            diags.error("argv",
                        "--data-parallel-sharding-strategy expects no_shard, optim, optim_grads or optim_grads_params, "
                        "found \""
                            + v + "\"");
    }
    if (values.count("--use-megatron-fsdp")) {
        // Megatron-FSDP v1 (the default) always runs the distributed optimizer; the strategy
        // defaults to optim_grads_params.
        a.distributedOptimizer = true;
        const std::string v = values.count("--data-parallel-sharding-strategy")
            ? values["--data-parallel-sharding-strategy"]
            : std::string("optim_grads_params");
        if (const auto d = dpShardingFromString(v); d && *d >= DpSharding::Gradients)
            a.fsdp = *d;
    }
    parseStageLayers(values, a, diags);
    if (values.count("--num-layers-per-virtual-pipeline-stage") && !a.stageLayers.empty()) {
        const int perChunk = intOf("--num-layers-per-virtual-pipeline-stage", 1);
        if (a.stageLayers.front() % perChunk != 0)
            diags.error("argv",
                        "--num-layers-per-virtual-pipeline-stage " + std::to_string(perChunk) + " does not divide the "
                            + std::to_string(a.stageLayers.front()) + " layers per pipeline stage");
        else
            a.virtualStages = a.stageLayers.front() / perChunk;
    }
    parseStageRecompute(values, a, diags);
    return a;
}

LaunchScript parseLaunchScript(const std::string &text, Diagnostics &diags)
{
    LaunchScript s;
    bool inArgs = false;
    size_t lineNo = 0;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = text.find('\n', start);
        const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        start = end == std::string::npos ? text.size() + 1 : end + 1;
        ++lineNo;
        const std::vector<std::string> words = shellWords(line);
        if (words.empty())
            continue;
        if (inArgs) {
            if (words.front() == ")") {
                inArgs = false;
                continue;
            }
            s.megatronArgs.insert(s.megatronArgs.end(), words.begin(), words.end());
            continue;
        }
        if (words.front() == "MEGATRON_ARGS=(") {
            inArgs = true;
            continue;
        }
        if (words.front().rfind("NODE_NAME=", 0) == 0) {
            s.nodeName = words.front().substr(10);
            continue;
        }
        if (words.size() >= 2 && words[0] == "export"
            && (words[1].rfind("CUDA_VISIBLE_DEVICES=", 0) == 0 || words[1].rfind("HIP_VISIBLE_DEVICES=", 0) == 0)) {
            std::string list = words[1].substr(words[1].find('=') + 1);
            size_t p = 0;
            while (p <= list.size()) {
                const size_t comma = list.find(',', p);
                const auto n = toInt(list.substr(p, comma == std::string::npos ? std::string::npos : comma - p));
                if (!n)
                    diags.error("line " + std::to_string(lineNo), "expected a list of GPU indices, found " + list);
                else
                    s.visibleDevices.push_back(*n);
                if (comma == std::string::npos)
                    break;
                p = comma + 1;
            }
            continue;
        }
        for (size_t i = 0; i + 1 < words.size(); ++i) {
            int *target = words[i] == "--nnodes"                                   ? &s.nnodes
                : words[i] == "--node_rank" || words[i] == "--node-rank"           ? &s.nodeRank
                : words[i] == "--nproc_per_node" || words[i] == "--nproc-per-node" ? &s.nprocPerNode
                                                                                   : nullptr;
            if (!target)
                continue;
            const auto n = toInt(words[i + 1]);
            if (!n)
                diags.error("line " + std::to_string(lineNo), words[i] + " expects an integer, found " + words[i + 1]);
            else
                *target = *n;
        }
    }
    if (inArgs)
        diags.error("line " + std::to_string(lineNo), "MEGATRON_ARGS=( is not closed");
    if (s.nnodes <= 0 || s.nodeRank < 0 || s.nprocPerNode <= 0)
        diags.error("", "expected torchrun --nnodes, --node_rank and --nproc_per_node");
    return s;
}

} // namespace memx
