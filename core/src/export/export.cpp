// Export entry point: dispatch by format, JSON plan export, shared helpers, writing files.
#include "memx/export/export.h"

#include "exportcommon.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"
#include "memx/util/hash.h"

#include <ctime>
#include <filesystem>
#include <set>
#include <sys/stat.h>

namespace memx {

const char *toString(ExportFormat format)
{
    switch (format) {
    case ExportFormat::Megatron:
        return "megatron";
    case ExportFormat::FlagScale:
        return "flagscale";
    case ExportFormat::Slurm:
        return "slurm";
    case ExportFormat::Json:
        return "json";
    }
    return "megatron";
}

std::optional<ExportFormat> parseExportFormat(const std::string &text)
{
    for (ExportFormat f : {ExportFormat::Megatron, ExportFormat::FlagScale, ExportFormat::Slurm, ExportFormat::Json})
        if (text == toString(f))
            return f;
    return std::nullopt;
}

std::string currentUtcIso8601()
{
    const std::time_t now = std::time(nullptr);
    std::tm tm {};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

namespace exportdetail {

std::string planFileName(const ExportRequest &request)
{
    return request.planFile.empty() ? "plan" : request.planFile;
}

std::string exportDate(const ExportOptions &options)
{
    return options.date.empty() ? currentUtcIso8601() : options.date;
}

std::string safeName(const std::string &text)
{
    std::string out;
    for (char c : text) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
            || c == '_' || c == '.';
        if (ok)
            out += c;
        else if (!out.empty() && out.back() != '-')
            out += '-';
    }
    while (!out.empty() && out.back() == '-')
        out.pop_back();
    if (out.size() > 48)
        out.resize(48);
    return out.empty() ? "plan" : out;
}

std::string jobName(const ExportRequest &request)
{
    return request.options.jobName.empty() ? "memx-" + safeName(request.plan.name) : safeName(request.options.jobName);
}

int deviceOfNode(const Cluster &cluster, const std::string &node)
{
    const auto n = cluster.findNode(node);
    return n ? n->device : -1;
}

bool chooseBf16(const ExportRequest &request, std::string &note)
{
    if (request.model.training.precision == Precision::FP16) {
        note = "the model's training precision is fp16";
        return false;
    }
    std::set<std::string> without;
    for (const Stage &s : request.plan.stages)
        for (const Replica &r : s.replicas) {
            const int d = deviceOfNode(request.cluster, r.node);
            if (d >= 0 && !request.cluster.devices[static_cast<size_t>(d)].bf16Supported)
                without.insert(request.cluster.devices[static_cast<size_t>(d)].id);
        }
    if (without.empty())
        return true;
    note = "";
    for (const std::string &id : without)
        note += (note.empty() ? "" : ", ") + id;
    note += " cannot run BF16 (one precision flag for the whole job)";
    return false;
}

std::string defaultDataArgs(const Model &model)
{
    return "--mock-data --tokenizer-type NullTokenizer --vocab-size " + std::to_string(model.shape.vocab);
}

std::string defaultTrainArgs()
{
    return "--train-iters 100 --lr 1.0e-4 --min-lr 1.0e-5 --lr-decay-style cosine --lr-warmup-iters 10 "
           "--weight-decay 0.1 --clip-grad 1.0 --log-interval 1 --eval-iters 0";
}

std::vector<std::pair<std::string, std::string>> megatronShapeFlags(const Model &model)
{
    const ModelShape &s = model.shape;
    std::vector<std::pair<std::string, std::string>> f;
    f.emplace_back("--num-layers", std::to_string(s.layers));
    f.emplace_back("--hidden-size", std::to_string(s.hidden));
    f.emplace_back("--ffn-hidden-size", std::to_string(s.ffnHidden));
    f.emplace_back("--num-attention-heads", std::to_string(s.heads));
    f.emplace_back("--kv-channels", std::to_string(model.kvChannels()));
    if (s.kvGroups != s.heads) {
        f.emplace_back("--group-query-attention", "");
        f.emplace_back("--num-query-groups", std::to_string(s.kvGroups));
    }
    f.emplace_back("--seq-length", std::to_string(s.seqLength));
    f.emplace_back("--max-position-embeddings", std::to_string(s.seqLength));
    f.emplace_back("--position-embedding-type",
                   s.positionEmbedding == PositionEmbedding::Rope ? "rope" : "learned_absolute");
    // Always written for RoPE (Megatron's default 10000 is Llama-2's; Llama-3 needs 500000).
    if (s.positionEmbedding == PositionEmbedding::Rope)
        f.emplace_back("--rotary-base", std::to_string(s.rotaryBase));
    if (s.swiglu)
        f.emplace_back("--swiglu", "");
    f.emplace_back("--normalization", s.normalization == Normalization::RMSNorm ? "RMSNorm" : "LayerNorm");
    // The attention backend the memory estimate assumed (auto resolves per device the same way).
    f.emplace_back("--attention-backend", toString(model.training.attention));
    if (!s.tiedEmbeddings)
        f.emplace_back("--untie-embeddings-and-output-weights", "");
    // The Model type has no bias field: Llama-style models (SwiGLU + RMSNorm) have no linear biases.
    if (s.swiglu && s.normalization == Normalization::RMSNorm)
        f.emplace_back("--disable-bias-linear", "");
    if (s.isMoe()) {
        // Megatron-core's MoE as its Mixtral / DeepSeek recipes run it: dropless top-k routing with
        // the auxiliary load-balancing loss, all-to-all token dispatch, grouped expert GEMMs.
        f.emplace_back("--num-experts", std::to_string(s.moe.experts));
        f.emplace_back("--moe-router-topk", std::to_string(s.moe.topK));
        f.emplace_back("--moe-ffn-hidden-size", std::to_string(s.moe.expertFfnHidden));
        if (s.moe.sharedExpertFfnHidden > 0)
            f.emplace_back("--moe-shared-expert-intermediate-size", std::to_string(s.moe.sharedExpertFfnHidden));
        f.emplace_back("--moe-router-load-balancing-type", "aux_loss");
        f.emplace_back("--moe-aux-loss-coeff", "1e-2");
        f.emplace_back("--moe-token-dispatcher-type", "alltoall");
        f.emplace_back("--moe-grouped-gemm", "");
    }
    return f;
}

std::vector<std::pair<std::string, std::string>> rocmEnvironment()
{
    return {{"GPU_MAX_HW_QUEUES", "2"}, {"TORCH_NCCL_HIGH_PRIORITY", "1"}, {"NCCL_CHECKS_DISABLE", "1"},
            {"NCCL_IB_GID_INDEX", "3"}, {"NCCL_CROSS_NIC", "0"},           {"NCCL_PROTO", "Simple"},
            {"RCCL_MSCCL_ENABLE", "0"}, {"HSA_NO_SCRATCH_RECLAIM", "1"},   {"TOKENIZERS_PARALLELISM", "false"}};
}

std::string visibleDevicesVariable(const GpuSpec &device)
{
    return device.vendor == "AMD" ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES";
}

std::string joinInts(const std::vector<int> &values, const char *sep)
{
    std::string out;
    for (size_t i = 0; i < values.size(); ++i)
        out += (i ? sep : "") + std::to_string(values[i]);
    return out;
}

} // namespace exportdetail

using namespace exportdetail;

void checkMegatronExpressible(const ExportRequest &request, Diagnostics &diags)
{
    MegatronShape shape;
    Diagnostics d(planFileName(request));
    analyseMegatron(request.plan, request.cluster, request.model, request.options.splitStyle, shape, d);
    diags.append(d);
}

void checkFlagScaleExpressible(const ExportRequest &request, Diagnostics &diags)
{
    FlagScaleShape shape;
    Diagnostics d(planFileName(request));
    analyseFlagScale(request.plan, request.cluster, request.model, shape, d);
    diags.append(d);
}

namespace {

std::vector<ExportFile> writeJsonPlan(const ExportRequest &request, Diagnostics &diags)
{
    Diagnostics d(planFileName(request));
    validatePlan(request.plan, request.cluster, request.model, d);
    if (request.metrics && !request.metrics->is_object())
        d.error("/metrics",
                "expected the predicted metrics as a JSON object, found " + std::string(request.metrics->type_name()));
    if (!d.empty()) {
        diags.append(d);
        return {};
    }
    nlohmann::json j = toJson(request.plan);
    if (request.metrics)
        j["metrics"] = *request.metrics;
    j["provenance"] = {{"cluster", request.cluster.name},
                       {"clusterHash", jsonHash(toJson(request.cluster))},
                       {"model", request.model.id},
                       {"modelHash", jsonHash(toJson(request.model))},
                       {"planHash", jsonHash(toJson(request.plan))},
                       {"predictor", request.options.predictor},
                       {"date", exportDate(request.options)},
                       {"memxVersion", MEMX_VERSION}};
    return {{"plan.json", j.dump(2) + "\n", false}};
}

} // namespace

std::vector<ExportFile> exportPlan(const ExportRequest &request)
{
    Diagnostics diags(planFileName(request));
    std::vector<ExportFile> files;
    switch (request.format) {
    case ExportFormat::Megatron:
    case ExportFormat::Slurm: {
        MegatronShape shape;
        if (!analyseMegatron(request.plan, request.cluster, request.model, request.options.splitStyle, shape, diags))
            break;
        shape.bf16 = chooseBf16(request, shape.precisionNote);
        if (request.format == ExportFormat::Slurm)
            checkSlurmHostNames(request, shape, diags);
        if (diags.empty())
            files
                = request.format == ExportFormat::Megatron ? writeMegatron(request, shape) : writeSlurm(request, shape);
        break;
    }
    case ExportFormat::FlagScale: {
        FlagScaleShape shape;
        if (analyseFlagScale(request.plan, request.cluster, request.model, shape, diags))
            files = writeFlagScale(request, shape);
        break;
    }
    case ExportFormat::Json:
        files = writeJsonPlan(request, diags);
        break;
    }
    diags.throwIfAny();
    return files;
}

std::vector<std::string> writeExportFiles(const std::vector<ExportFile> &files, const std::string &dir, bool force)
{
    namespace fs = std::filesystem;
    Diagnostics diags(dir);
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
        diags.error("", "expected an output folder, found a file");
    std::set<std::string> seen;
    for (const ExportFile &f : files) {
        const fs::path rel(f.path);
        bool safe = !f.path.empty() && rel.is_relative();
        for (const auto &part : rel)
            safe = safe && part != ".." && part != ".";
        if (!safe) {
            diags.error(f.path, "expected a relative path inside the output folder");
            continue;
        }
        if (!seen.insert(f.path).second) {
            diags.error(f.path, "the export produced this file twice");
            continue;
        }
        const fs::path target = fs::path(dir) / rel;
        if (fs::is_directory(target, ec))
            diags.error(f.path, "expected a file name, found an existing folder");
        else if (fs::exists(target, ec) && !force)
            diags.error(f.path, "the file exists; nothing was written (use --force to overwrite)");
    }
    diags.throwIfAny();
    std::vector<std::string> written;
    for (const ExportFile &f : files) {
        const fs::path target = fs::path(dir) / f.path;
        fs::create_directories(target.parent_path(), ec);
        if (ec)
            throw LoadError(dir, f.path, "cannot create folder " + target.parent_path().string() + ": " + ec.message());
        writeFileAtomically(target.string(), f.content);
        if (f.executable && ::chmod(target.c_str(), 0755) != 0)
            throw LoadError(dir, f.path, "cannot make the script executable");
        written.push_back(target.string());
    }
    return written;
}

} // namespace memx
