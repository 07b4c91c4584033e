#include "memx/testbed/virtualtestbed.h"

#include "memx/cost/costmodel.h"
#include "memx/cost/schedule.h"
#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"
#include "memx/util/hash.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

namespace memx {

namespace {

constexpr double kGiB = 1073741824.0;

/// splitmix64: a small, well-mixed generator whose sequence is fixed by its state (no dependence
/// on the standard library's distributions, so results are identical on every platform).
class Rng {
public:
    explicit Rng(std::uint64_t state)
        : mState(state)
    {
    }
    std::uint64_t next()
    {
        std::uint64_t z = (mState += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    /// Uniform in (0, 1).
    double uniform() { return (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0; }
    /// Standard normal (Box-Muller).
    double normal()
    {
        const double u1 = uniform(), u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    /// Lognormal factor with mean 1 and coefficient of variation `cv`.
    double lognormalFactor(double cv)
    {
        if (cv <= 0)
            return 1.0;
        const double sigma = std::sqrt(std::log(1.0 + cv * cv));
        return std::exp(sigma * normal() - 0.5 * sigma * sigma);
    }

private:
    std::uint64_t mState;
};

Rng rngFor(std::uint64_t seed, const std::string &context)
{
    return Rng(fnv1a64(std::to_string(seed) + "|" + context));
}

double ceilTo(double x, double q)
{
    return std::ceil(x / q - 1e-12) * q;
}

bool isBf16(const Model &model)
{
    return model.training.precision == Precision::BF16;
}

double peakFlops(const GpuSpec &device, bool bf16)
{
    const auto t = device.peakTflops(bf16);
    if (!t || *t <= 0)
        throw std::invalid_argument("device " + device.id + " has no peak FLOP/s figure");
    return *t * 1e12;
}

double hbmBytesPerSecond(const GpuSpec &device)
{
    return device.memoryBandwidthGBps.value_or(1000.0) * 1e9;
}

bool ll128Capable(const GpuSpec &device)
{
    return device.vendor == "NVIDIA"
        && (device.scaleUpKind == ScaleUpKind::NvLink || device.scaleUpKind == ScaleUpKind::NvSwitch);
}

/// Shape figures of one transformer layer on one TP rank.
struct LayerShape {
    double tokens; // b * s
    double h, q, kv, f, s, headsLocal, d;
    bool swiglu;
};

LayerShape layerShape(const Model &model, int tp, int microBatch)
{
    const ModelShape &s = model.shape;
    LayerShape ls;
    ls.tokens = static_cast<double>(microBatch) * s.seqLength;
    ls.h = s.hidden;
    ls.d = model.kvChannels();
    ls.q = ls.d * s.heads;
    ls.kv = ls.d * (s.kvGroups > 0 ? s.kvGroups : s.heads);
    ls.f = s.ffnHidden;
    ls.s = s.seqLength;
    ls.headsLocal = static_cast<double>(microBatch) * s.heads / tp;
    ls.swiglu = s.swiglu;
    (void)tp;
    return ls;
}

/// Activation tensors one transformer layer keeps for backward, per micro-batch on one TP rank
/// (bytes each), by recompute method. Follows what Megatron's layer saves (Korthikanti et al.).
/// `scoresStored`: the attention backend keeps the s x s tensors (unfused); flash/fused do not.
std::vector<double> layerActivationTensors(const Model &model, int tp, int microBatch, RecomputeMethod rc,
                                           bool sequenceParallel, bool scoresStored, bool fp8 = false)
{
    // FP8: the linear layers keep their inputs as FP8 casts (1 byte per element).
    const double in = fp8 ? 1.0 : 2.0;
    const LayerShape ls = layerShape(model, tp, microBatch);
    const double sbh = ls.tokens * ls.h;
    const double sp = sequenceParallel ? tp : 1.0; // tensors SP shards along the sequence
    if (rc == RecomputeMethod::Full)
        return {2.0 * sbh / sp}; // the layer input only
    std::vector<double> t;
    t.push_back(2.0 * sbh / sp); // layernorm 1 input
    t.push_back(in * sbh / sp); // QKV GEMM input (layernorm output)
    t.push_back(2.0 * ls.tokens * (ls.q + 2 * ls.kv) / tp); // Q, K, V
    if (rc == RecomputeMethod::None && scoresStored) {
        const double scores = ls.headsLocal * ls.s * ls.s;
        t.push_back(2.0 * scores); // softmax output
        t.push_back(1.0 * scores); // attention dropout mask
        t.push_back(2.0 * scores); // dropout output (input of attention x V)
    }
    if (fp8 && !scoresStored)
        t.push_back(2.0 * ls.tokens * ls.q / tp); // flash attention's own 16-bit output
    t.push_back(in * ls.tokens * ls.q / tp); // context (projection input)
    t.push_back(1.0 * sbh / sp); // attention dropout mask
    t.push_back(2.0 * sbh / sp); // layernorm 2 input
    t.push_back(in * sbh / sp); // FC1 input
    const double fc1Out = ls.tokens * ls.f * (ls.swiglu ? 2.0 : 1.0) / tp;
    t.push_back(2.0 * fc1Out); // activation function input
    t.push_back(in * ls.tokens * ls.f / tp); // FC2 input
    t.push_back(1.0 * sbh / sp); // MLP dropout mask
    return t;
}

/// Parameter tensors (element counts) of one transformer layer on one TP rank.
std::vector<double> layerParamTensors(const Model &model, int tp)
{
    const LayerShape ls = layerShape(model, tp, 1);
    return {ls.h * (ls.q + 2 * ls.kv) / tp,
            ls.q / tp * ls.h,
            ls.h * ls.f * (ls.swiglu ? 2.0 : 1.0) / tp,
            ls.f / tp * ls.h,
            2.0 * ls.h,
            2.0 * ls.h};
}

} // namespace

int computeUnits(const GpuSpec &device)
{
    // The catalogue's figure (GpuSpec::computeUnits), else a typical part of the vendor.
    return device.computeUnits.value_or(device.vendor == "AMD" ? 110 : 108);
}

VirtualTestbed::VirtualTestbed(std::uint64_t seed, TestbedOptions options)
    : mSeed(seed)
    , mOptions(std::move(options))
{
}

std::string VirtualTestbed::sourceLabel() const
{
    return "virtual-testbed seed=" + std::to_string(mSeed);
}

double VirtualTestbed::gemmEfficiency(const GpuSpec &device, double m, double n, double k) const
{
    const double vendorEff = device.vendor == "NVIDIA" ? mOptions.nvidiaGemmEfficiency
        : device.vendor == "AMD"                       ? mOptions.amdGemmEfficiency
                                                       : mOptions.otherGemmEfficiency;
    const double tile = mOptions.tileMN;
    // Tile quantisation: the GEMM computes whole tiles, the padding is wasted work.
    const double tileUtil = (m * n) / (ceilTo(m, tile) * ceilTo(n, tile));
    const double kUtil = k / ceilTo(k, mOptions.tileK);
    // Short reductions cannot hide the pipeline prologue/epilogue of each tile.
    const double kDepth = k / (k + 96.0);
    // Wave quantisation: the last wave of tiles leaves compute units idle.
    const double tiles = std::ceil(m / tile - 1e-12) * std::ceil(n / tile - 1e-12);
    const double cu = computeUnits(device);
    const double waves = std::ceil(tiles / cu - 1e-12);
    const double waveUtil = tiles / (waves * cu);
    return vendorEff * tileUtil * kUtil * kDepth * waveUtil;
}

double VirtualTestbed::gemmMs(const GpuSpec &device, bool bf16, double m, double n, double k) const
{
    if (m <= 0 || n <= 0 || k <= 0)
        return 0;
    const double flops = 2.0 * m * n * k;
    return flops / (peakFlops(device, bf16) * gemmEfficiency(device, m, n, k)) * 1e3 + mOptions.kernelLaunchUs * 1e-3;
}

double VirtualTestbed::fp8GemmMs(const GpuSpec &device, double m, double n, double k) const
{
    if (m <= 0 || n <= 0 || k <= 0)
        return 0;
    if (!device.denseFp8Tflops || *device.denseFp8Tflops <= 0)
        throw std::invalid_argument("device " + device.id + " has no FP8 peak (denseFp8Tflops)");
    const double flops = 2.0 * m * n * k;
    return flops / (*device.denseFp8Tflops * 1e12 * gemmEfficiency(device, m, n, k) * mOptions.fp8EfficiencyFactor)
        * 1e3
        + mOptions.kernelLaunchUs * 1e-3;
}

namespace {

/// `count` independent GEMMs of one shape run as one batched kernel: quantisation per GEMM,
/// waves over all tiles together.
double batchedGemmMs(const VirtualTestbed &tb, const GpuSpec &device, bool bf16, double count, double m, double n,
                     double k)
{
    // Equivalent to one GEMM with count x the tiles: stack along M in whole tiles.
    const double tile = tb.options().tileMN;
    const double mPadded = ceilTo(m, tile);
    const double eff = tb.gemmEfficiency(device, mPadded * count, n, k) * (m / mPadded);
    return 2.0 * count * m * n * k / (peakFlops(device, bf16) * eff) * 1e3 + tb.options().kernelLaunchUs * 1e-3;
}

} // namespace

SimulatedLayerTimes VirtualTestbed::transformerLayer(const GpuSpec &device, const Model &model, int tp, int microBatch,
                                                     bool fp8) const
{
    const LayerShape ls = layerShape(model, tp, microBatch);
    const bool bf16 = isBf16(model);
    const double T = ls.tokens;
    struct G {
        double m, n, k;
    };
    const G gemms[] = {
        {T, (ls.q + 2 * ls.kv) / tp, ls.h}, // QKV
        {T, ls.h, ls.q / tp}, // output projection
        {T, ls.f * (ls.swiglu ? 2.0 : 1.0) / tp, ls.h}, // FC1 (gate + up with SwiGLU)
        {T, ls.h, ls.f / tp}, // FC2
    };
    double fwd = 0, bwd = 0;
    const double castBw = hbmBytesPerSecond(device) * mOptions.memoryBoundEfficiency;
    for (const G &g : gemms) {
        if (fp8) {
            // Transformer Engine: cast + transpose of the input (forward) and of the output
            // gradient (backward), one kernel each (read 2 bytes, write 1 + 1).
            fwd += fp8GemmMs(device, g.m, g.n, g.k) + 4.0 * g.m * g.k / castBw * 1e3 + mOptions.kernelLaunchUs * 1e-3;
            bwd += fp8GemmMs(device, g.m, g.k, g.n) + fp8GemmMs(device, g.k, g.n, g.m) + 4.0 * g.m * g.n / castBw * 1e3
                + mOptions.kernelLaunchUs * 1e-3;
            continue;
        }
        fwd += gemmMs(device, bf16, g.m, g.n, g.k);
        bwd += gemmMs(device, bf16, g.m, g.k, g.n); // data gradient
        bwd += gemmMs(device, bf16, g.k, g.n, g.m); // weight gradient (reduction over tokens)
    }
    // Attention core: scores Q K^T (s x s x d) and context P V (s x d x s) per local head.
    fwd += batchedGemmMs(*this, device, bf16, ls.headsLocal, ls.s, ls.s, ls.d);
    fwd += batchedGemmMs(*this, device, bf16, ls.headsLocal, ls.s, ls.d, ls.s);
    bwd += 2.0 * batchedGemmMs(*this, device, bf16, ls.headsLocal, ls.s, ls.s, ls.d);
    bwd += 2.0 * batchedGemmMs(*this, device, bf16, ls.headsLocal, ls.s, ls.d, ls.s);
    // Memory-bound kernels: 2 layernorms, 3 dropouts, 2 residual adds, softmax, activation.
    const double sbh2 = 2.0 * T * ls.h;
    // Flash/fused attention keeps the s x s tensors on chip: no score traffic through HBM.
    const double scores2 = storesNoScores(resolveAttention(model, device)) ? 0.0 : 2.0 * ls.headsLocal * ls.s * ls.s;
    const double actBytes = 2.0 * T * ls.f * (ls.swiglu ? 3.0 : 2.0) / tp;
    const double fwdBytes = 2 * 2 * sbh2 + 3 * 2.5 * sbh2 + 2 * 3 * sbh2 + 2.5 * scores2 + actBytes;
    const double bw = hbmBytesPerSecond(device) * mOptions.memoryBoundEfficiency;
    fwd += fwdBytes / bw * 1e3 + 10 * mOptions.kernelLaunchUs * 1e-3;
    bwd += 2.0 * fwdBytes / bw * 1e3 + 14 * mOptions.kernelLaunchUs * 1e-3;
    return {fwd, bwd};
}

double VirtualTestbed::allReduceMs(int ranks, double bytes, const Link &link, bool nvlinkClass) const
{
    if (ranks <= 1 || bytes <= 0)
        return 0;
    // NCCL picks the protocol from the message size: LL (low latency, half bandwidth), LL128
    // (NVLink only), Simple (full bandwidth, high latency). The switch points make steps.
    double fraction, latencyUs;
    if (bytes < mOptions.llMaxBytes) {
        fraction = mOptions.llBandwidthFraction;
        latencyUs = mOptions.llLatencyUs;
    } else if (bytes < mOptions.ll128MaxBytes && nvlinkClass) {
        fraction = mOptions.ll128BandwidthFraction;
        latencyUs = mOptions.ll128LatencyUs;
    } else {
        fraction = mOptions.simpleBandwidthFraction;
        latencyUs = mOptions.simpleLatencyUs;
    }
    const double n = ranks;
    const double bwBytesPerSecond = link.bandwidthAt(bytes) * 1e9 * fraction;
    const double steps = 2.0 * (n - 1);
    return (steps / n * bytes / bwBytesPerSecond + steps * (latencyUs + link.latencyUs) * 1e-6) * 1e3;
}

double VirtualTestbed::reservedBytes(const std::vector<double> &tensorBytes) const
{
    std::vector<double> sizes;
    sizes.reserve(tensorBytes.size());
    double rounded = 0;
    for (double b : tensorBytes) {
        if (b <= 0)
            continue;
        rounded += ceilTo(b, mOptions.allocatorBlockBytes);
        sizes.push_back(std::round(b));
    }
    std::sort(sizes.begin(), sizes.end());
    const double distinct = static_cast<double>(std::unique(sizes.begin(), sizes.end()) - sizes.begin());
    const double frag = std::min(mOptions.maxFragmentation, mOptions.fragmentationPerDistinctSize * distinct);
    return rounded * (1.0 + frag);
}

namespace {

struct EndTimes {
    double embFwd = 0, embBwd = 0, headFwd = 0, headBwd = 0, embOpt = 0, headOpt = 0, layerOpt = 0;
};

EndTimes endLayers(const VirtualTestbed &tb, const GpuSpec &device, const Model &model, int tp, int microBatch)
{
    const TestbedOptions &o = tb.options();
    const ModelShape &s = model.shape;
    const double T = static_cast<double>(microBatch) * s.seqLength;
    const double bw = hbmBytesPerSecond(device) * o.memoryBoundEfficiency;
    EndTimes e;
    // Embedding: gather of T rows (read + write), dropout; backward: scatter-add into the table.
    e.embFwd = 3.0 * 2.0 * T * s.hidden / bw * 1e3 + 2 * o.kernelLaunchUs * 1e-3;
    e.embBwd = 2.0 * e.embFwd;
    // Output layer: final norm, logits GEMM, fp32 cross-entropy over the local vocabulary shard.
    const double v = static_cast<double>(s.vocab) / tp;
    e.headFwd = tb.gemmMs(device, isBf16(model), T, v, s.hidden) + (4.0 * T * s.hidden + 3.0 * 4.0 * T * v) / bw * 1e3;
    e.headBwd = tb.gemmMs(device, isBf16(model), T, s.hidden, v) + tb.gemmMs(device, isBf16(model), s.hidden, v, T)
        + (2.0 * 4.0 * T * v + 4.0 * T * s.hidden) / bw * 1e3;
    // Adam: 30 bytes of HBM traffic per parameter, memory bound.
    const double perParamMs = 30.0 / bw * 1e3;
    e.embOpt = static_cast<double>(model.embeddingParams()) / tp * perParamMs;
    e.headOpt = static_cast<double>(model.headParams()) / tp * perParamMs;
    e.layerOpt = static_cast<double>(model.paramsPerLayer()) / tp * perParamMs;
    return e;
}

const GpuSpec &deviceById(const Cluster &cluster, const std::string &id)
{
    const int i = cluster.deviceIndex(id);
    if (i < 0)
        throw std::invalid_argument("device \"" + id + "\" is not part of cluster \"" + cluster.name + "\"");
    return cluster.devices[static_cast<size_t>(i)];
}

} // namespace

LayerProfile VirtualTestbed::runProfilingJob(const ProfileJob &job, const Cluster &cluster, const Model &model) const
{
    if (job.kind != ProfileJobKind::PerLayer)
        throw std::invalid_argument("job " + job.id + " is not a per-layer profiling job");
    if (job.tp < 1 || job.microBatch < 1)
        throw std::invalid_argument("job " + job.id + ": TP and micro-batch must be at least 1");
    const GpuSpec &device = deviceById(cluster, job.device);
    const ModelShape &s = model.shape;
    LayerProfile p;
    p.key = ProfileKey {device.id, model.id, job.tp, job.microBatch, s.seqLength};
    p.origin = ProfileOrigin::Simulated;
    p.includesTpCommunication = false; // transformerLayer() times compute only
    p.source = sourceLabel() + " job=" + (job.id.empty() ? "-" : job.id);
    const SimulatedLayerTimes layer = transformerLayer(device, model, job.tp, job.microBatch);
    const EndTimes ends = endLayers(*this, device, model, job.tp, job.microBatch);
    std::vector<double> acts = layerActivationTensors(model, job.tp, job.microBatch, RecomputeMethod::None, false,
                                                      !storesNoScores(resolveAttention(model, device)));
    double actBytes = 0;
    for (double a : acts)
        actBytes += a;
    double layerParams = 0;
    for (double e : layerParamTensors(model, job.tp))
        layerParams += e;

    Rng rng = rngFor(mSeed,
                     "profile|" + device.id + "|" + model.id + "|" + std::to_string(job.tp) + "|"
                         + std::to_string(job.microBatch) + "|" + std::to_string(s.seqLength));
    auto noisy = [&](double ms) { return ms * rng.lognormalFactor(mOptions.profileJitterCv); };
    const double T = static_cast<double>(job.microBatch) * s.seqLength;
    p.layers.resize(static_cast<size_t>(s.layers) + 2);
    LayerMeasurement &emb = p.layers.front();
    emb.forwardMs = noisy(ends.embFwd);
    emb.backwardMs = noisy(ends.embBwd);
    emb.optimizerMs = noisy(ends.embOpt);
    emb.paramBytes = 2.0 * static_cast<double>(model.embeddingParams()) / job.tp;
    emb.activationBytes = 8.0 * T + 1.0 * T * s.hidden; // token ids + dropout mask
    for (int i = 1; i <= s.layers; ++i) {
        LayerMeasurement &m = p.layers[static_cast<size_t>(i)];
        m.forwardMs = noisy(layer.forwardMs);
        m.backwardMs = noisy(layer.backwardMs);
        m.optimizerMs = noisy(ends.layerOpt);
        m.paramBytes = 2.0 * layerParams;
        m.activationBytes = actBytes;
    }
    LayerMeasurement &head = p.layers.back();
    head.forwardMs = noisy(ends.headFwd);
    head.backwardMs = noisy(ends.headBwd);
    head.optimizerMs = noisy(ends.headOpt);
    head.paramBytes = 2.0 * static_cast<double>(model.headParams()) / job.tp;
    head.activationBytes = 2.0 * 4.0 * T * s.vocab / job.tp;
    return p;
}

namespace {

/// Per-stage per-micro-batch forward/backward time of the slowest replica and what it holds.
struct StageSim {
    double forwardMs = 0, backwardMs = 0; // incl. TP collectives and recompute
    double dpSyncMs = 0, optimizerMs = 0; // dpSyncMs: what the iteration waits for (overlap applied)
    double p2pMs = 0; // to the next stage
    std::vector<double> reduceBucketsMs, gatherBucketsMs; // per gradient bucket, in backward order
};

/// The iteration's 1F1B part: the one scheduler (memx/cost/schedule.h) over the stages'
/// per-micro-batch times and sends, each operation scaled by the per-operation noise in the
/// order the event loop runs them. Returns the makespan, ms.
double simulateOneFOneB(const std::vector<StageSim> &st, int m, const std::vector<double> &opNoise)
{
    std::vector<double> fwd(st.size()), bwd(st.size()), p2p(st.empty() ? 0 : st.size() - 1);
    for (size_t i = 0; i < st.size(); ++i) {
        fwd[i] = st[i].forwardMs;
        bwd[i] = st[i].backwardMs;
        if (i + 1 < st.size())
            p2p[i] = st[i].p2pMs;
    }
    return oneFOneBSchedule(fwd, bwd, p2p, m, opNoise).makespanMs;
}

std::string fmtGiB(double bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / kGiB);
    return buf;
}

} // namespace

double simulateOneFOneBMs(const std::vector<double> &forwardMs, const std::vector<double> &backwardMs,
                          const std::vector<double> &p2pMs, int microBatches)
{
    // As documented: missing sends are 0, entries past the last boundary are ignored.
    std::vector<double> sends = p2pMs;
    sends.resize(forwardMs.empty() ? 0 : forwardMs.size() - 1, 0.0);
    return oneFOneBSchedule(forwardMs, backwardMs, sends, microBatches).makespanMs;
}

namespace {

/// What the phases of VirtualTestbed::runPlan share: the testbed, the validated plan and its nodes.
struct PlanSim {
    const VirtualTestbed &tb;
    const Plan &plan;
    const Cluster &cluster;
    const Model &model;
    std::vector<Node> nodes;
    int p = 0; ///< pipeline stages
    int m = 0; ///< micro-batches

    int nodeIndex(const std::string &name) const
    {
        for (size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i].name == name)
                return static_cast<int>(i);
        return -1;
    }
    const Node &nodeOf(const Replica &r) const { return nodes[static_cast<size_t>(nodeIndex(r.node))]; }
    const GpuSpec &deviceOf(const Replica &r) const { return cluster.devices[static_cast<size_t>(nodeOf(r).device)]; }
    /// Layers of `st` that full recompute covers.
    static int recomputedLayers(const Stage &st) { return memx::recomputedLayers(st.recompute, st.layerCount); }
};

/// One replica's forward / backward per micro-batch (compute, recompute, TP collectives) and
/// optimizer step, and the parameters it holds.
struct ReplicaTimes {
    double forwardMs = 0, backwardMs = 0, optimizerMs = 0, localParams = 0;
};

ReplicaTimes replicaTimes(const PlanSim &sim, int si, const Replica &r)
{
    const VirtualTestbed &tb = sim.tb;
    const TestbedOptions &opt = tb.options();
    const Model &model = sim.model;
    const ModelShape &ms = model.shape;
    const Stage &st = sim.plan.stages[static_cast<size_t>(si)];
    const bool first = si == 0, last = si == sim.p - 1;
    const Node &node = sim.nodeOf(r);
    const GpuSpec &dev = sim.deviceOf(r);
    const bool fp8 = sim.plan.fp8 != Fp8Format::Off;
    const SimulatedLayerTimes lt = tb.transformerLayer(dev, model, r.tp, r.microBatch, fp8);
    const EndTimes ends = endLayers(tb, dev, model, r.tp, r.microBatch);
    ReplicaTimes out;
    double fwd = st.layerCount * lt.forwardMs, bwd = st.layerCount * lt.backwardMs;
    if (first) {
        fwd += ends.embFwd;
        bwd += ends.embBwd;
    }
    if (last) {
        fwd += ends.headFwd;
        bwd += ends.headBwd;
    }
    // Recompute runs (part of) the forward again before the backward.
    const int recomputed = PlanSim::recomputedLayers(st);
    bwd += recomputed * lt.forwardMs;
    if (st.recompute.method == RecomputeMethod::Selective) {
        const LayerShape ls = layerShape(model, r.tp, r.microBatch);
        const double core = batchedGemmMs(tb, dev, isBf16(model), ls.headsLocal, ls.s, ls.s, ls.d)
            + batchedGemmMs(tb, dev, isBf16(model), ls.headsLocal, ls.s, ls.d, ls.s)
            + 2.5 * 2.0 * ls.headsLocal * ls.s * ls.s / (hbmBytesPerSecond(dev) * opt.memoryBoundEfficiency) * 1e3;
        bwd += st.layerCount * core;
    }
    // TP collectives: 2 all-reduces forward, 2 backward per layer (+2 per recomputed layer).
    if (r.tp > 1) {
        const double bytes = static_cast<double>(r.microBatch) * ms.seqLength * ms.hidden * 2.0;
        const double one = tb.allReduceMs(r.tp, bytes, node.intraLink, ll128Capable(dev));
        fwd += 2.0 * st.layerCount * one;
        bwd += 2.0 * st.layerCount * one + 2.0 * recomputed * one;
    }
    out.forwardMs = fwd;
    out.backwardMs = bwd;
    double localParams = st.layerCount * static_cast<double>(model.paramsPerLayer()) / r.tp;
    if (first)
        localParams += static_cast<double>(model.embeddingParams()) / r.tp;
    if (last)
        localParams += static_cast<double>(model.headParams()) / r.tp
            + (ms.tiedEmbeddings && sim.p > 1 ? static_cast<double>(model.embeddingParams()) / r.tp : 0);
    out.localParams = localParams;
    out.optimizerMs = localParams * 30.0 / (hbmBytesPerSecond(dev) * opt.memoryBoundEfficiency) * 1e3
        / (sim.plan.distributedOptimizer ? st.dp() : 1);
    if (fp8) { // the first micro-batch casts the layers' weights to FP8 (+ transpose), every rank its own
        const std::vector<double> w = layerParamTensors(model, r.tp);
        out.optimizerMs += st.layerCount * 4.0 * (w[0] + w[1] + w[2] + w[3])
            / (hbmBytesPerSecond(dev) * opt.memoryBoundEfficiency) * 1e3;
    }
    return out;
}

/// The links of a stage's DP group and whether NCCL's LL128 protocol applies to its collectives
/// (one node of LL128-capable devices).
struct DpGroupLinks {
    std::vector<Link> links;
    bool ll128 = false;
};
DpGroupLinks dpGroupLinks(const PlanSim &sim, const std::vector<int> &stageNodes)
{
    DpGroupLinks g;
    g.links = linksAmong(stageNodes, sim.nodes, sim.cluster, CostOptions {});
    g.ll128 = std::all_of(stageNodes.begin(), stageNodes.end(), [&](int n) { return n == stageNodes.front(); });
    for (int ni : stageNodes)
        g.ll128 = g.ll128
            && ll128Capable(sim.cluster.devices[static_cast<size_t>(sim.nodes[static_cast<size_t>(ni)].device)]);
    return g;
}

/// Gradient sync of stage `si`: bucketed all-reduce (or reduce-scatter + all-gather) over its DP
/// group, the slowest link of the group setting the pace. The buckets' times go to `ss`.
double dpSyncMs(const PlanSim &sim, int si, const std::vector<int> &stageNodes, double maxLocalParams, StageSim &ss)
{
    const Stage &st = sim.plan.stages[static_cast<size_t>(si)];
    if (st.dp() <= 1)
        return 0;
    const DpGroupLinks group = dpGroupLinks(sim, stageNodes);
    const std::vector<Link> &links = group.links;
    double total = 0;
    double remaining = maxLocalParams;
    while (remaining > 0) {
        const double bucket = std::min(remaining, sim.tb.options().gradBucketParams);
        remaining -= bucket;
        double worst = 0, worstReduce = 0, worstGather = 0;
        for (const Link &l : links) {
            const double reduce = sim.plan.distributedOptimizer
                ? 0.5 * sim.tb.allReduceMs(st.dp(), bucket * 4.0, l, group.ll128)
                : sim.tb.allReduceMs(st.dp(), bucket * 4.0, l, group.ll128);
            const double gather
                = sim.plan.distributedOptimizer ? 0.5 * sim.tb.allReduceMs(st.dp(), bucket * 2.0, l, group.ll128) : 0.0;
            if (reduce + gather > worst) {
                worst = reduce + gather;
                worstReduce = reduce;
                worstGather = gather;
            }
        }
        ss.reduceBucketsMs.push_back(worstReduce);
        ss.gatherBucketsMs.push_back(worstGather);
        total += worst;
    }
    return total;
}

/// What the iteration waits for of `buckets` (serial collectives) issued as `computeMs` of work
/// produces them in order (bucket k ready at its share of the work): the time past the work's end.
double exposedAfterMs(const std::vector<double> &buckets, double computeMs)
{
    double end = 0, done = 0;
    const double n = static_cast<double>(buckets.size());
    for (size_t k = 0; k < buckets.size(); ++k) {
        done += computeMs / n;
        end = std::max(end, done) + buckets[k];
    }
    return std::max(0.0, end - computeMs);
}

/// Megatron-FSDP (Plan::fsdp) on stage `si`: every micro-batch reduce-scatters each unit's (layer's)
/// gradients as its backward finishes and, sharding the weights, all-gathers each unit before its
/// forward and again before its backward, the collectives queued behind the compute that makes or
/// needs them; what the compute cannot cover lengthens the micro-batch. Per iteration only the
/// updated weights' all-gather of optim_grads stays.
void applyFsdp(const PlanSim &sim, int si, const std::vector<int> &stageNodes, double maxLocalParams, StageSim &ss)
{
    const Stage &st = sim.plan.stages[static_cast<size_t>(si)];
    if (sim.plan.fsdp == DpSharding::None || st.dp() <= 1)
        return;
    const DpGroupLinks group = dpGroupLinks(sim, stageNodes);
    const int units = st.layerCount + (si == 0) + (si == sim.p - 1);
    const double unit = maxLocalParams / units;
    double rs = 0, ag = 0;
    for (const Link &l : group.links) {
        rs = std::max(rs, 0.5 * sim.tb.allReduceMs(st.dp(), unit * 4.0, l, group.ll128));
        ag = std::max(ag, 0.5 * sim.tb.allReduceMs(st.dp(), unit * 2.0, l, group.ll128));
    }
    const bool weights = sim.plan.fsdp == DpSharding::Parameters;
    const double fwd = ss.forwardMs, bwd = ss.backwardMs;
    if (weights)
        ss.forwardMs += exposedAfterMs(std::vector<double>(static_cast<size_t>(units), ag), fwd);
    ss.backwardMs += exposedAfterMs(std::vector<double>(static_cast<size_t>(units), rs + (weights ? ag : 0.0)), bwd);
    std::fill(ss.reduceBucketsMs.begin(), ss.reduceBucketsMs.end(), 0.0);
    if (weights)
        std::fill(ss.gatherBucketsMs.begin(), ss.gatherBucketsMs.end(), 0.0);
    ss.dpSyncMs = std::accumulate(ss.gatherBucketsMs.begin(), ss.gatherBucketsMs.end(), 0.0);
}

/// Megatron's --overlap-grad-reduce / --overlap-param-gather, simulated on the stages' own
/// buckets: pipeline rank 0 overlaps its buckets with the last micro-batch's backward (the
/// gather: with the next first forward); a later rank (Megatron keeps one bucket there) starts
/// when its own last backward ends, ahead of rank 0's by the backwards and sends in between.
void applyDpOverlap(const Plan &plan, std::vector<StageSim> &stages)
{
    if (!plan.overlapGradReduce && !plan.overlapParamGather)
        return;
    double drain = 0, fill = 0;
    for (size_t i = 0; i < stages.size(); ++i) {
        StageSim &s = stages[i];
        const auto sum = [](const std::vector<double> &v) { return std::accumulate(v.begin(), v.end(), 0.0); };
        double reduce = sum(s.reduceBucketsMs), gather = sum(s.gatherBucketsMs);
        if (plan.overlapGradReduce)
            reduce = i == 0 ? exposedAfterMs(s.reduceBucketsMs, s.backwardMs) : std::max(0.0, reduce - drain);
        if (plan.overlapParamGather)
            gather = i == 0 ? exposedAfterMs(s.gatherBucketsMs, s.forwardMs) : std::max(0.0, gather - fill);
        if (!s.reduceBucketsMs.empty())
            s.dpSyncMs = reduce + gather;
        drain += s.backwardMs + s.p2pMs;
        fill += s.forwardMs + s.p2pMs;
    }
}

/// Point-to-point activation send from stage `si` to the next (Simple protocol, whole micro-batch).
double p2pMs(const PlanSim &sim, int si, const std::vector<int> &stageNodes)
{
    if (si == sim.p - 1)
        return 0;
    const TestbedOptions &opt = sim.tb.options();
    const ModelShape &ms = sim.model.shape;
    const Stage &st = sim.plan.stages[static_cast<size_t>(si)];
    const Stage &nx = sim.plan.stages[static_cast<size_t>(si) + 1];
    std::vector<int> nextNodes;
    for (const Replica &r : nx.replicas)
        nextNodes.push_back(sim.nodeIndex(r.node));
    int maxMbs = 0;
    for (const Replica &r : st.replicas)
        maxMbs = std::max(maxMbs, r.microBatch);
    const double bytes = static_cast<double>(maxMbs) * ms.seqLength * ms.hidden * 2.0
        / (sim.plan.sequenceParallel ? st.replicas.front().tp : 1);
    double worst = 0;
    for (const Link &l : linksBetween(stageNodes, nextNodes, sim.nodes, sim.cluster, CostOptions {}))
        worst = std::max(worst,
                         (bytes / (l.bandwidthAt(bytes) * 1e9 * opt.simpleBandwidthFraction)
                          + (l.latencyUs + opt.simpleLatencyUs) * 1e-6)
                             * 1e3);
    return worst;
}

/// Per-stage times of the plan; the replica holding GPU ordinal `stragglerGpu` (-1: none) runs slow.
std::vector<StageSim> stageTimes(const PlanSim &sim, int stragglerGpu)
{
    std::vector<StageSim> stages(static_cast<size_t>(sim.p));
    int gpuOrdinal = 0;
    for (int si = 0; si < sim.p; ++si) {
        const Stage &st = sim.plan.stages[static_cast<size_t>(si)];
        StageSim &ss = stages[static_cast<size_t>(si)];
        double maxLocalParams = 0;
        std::vector<int> stageNodes;
        for (const Replica &r : st.replicas) {
            stageNodes.push_back(sim.nodeIndex(r.node));
            ReplicaTimes rt = replicaTimes(sim, si, r);
            // A straggler GPU slows its whole replica (TP ranks wait for each other).
            if (stragglerGpu >= gpuOrdinal && stragglerGpu < gpuOrdinal + r.tp) {
                rt.forwardMs *= sim.tb.options().stragglerSlowdown;
                rt.backwardMs *= sim.tb.options().stragglerSlowdown;
            }
            gpuOrdinal += r.tp;
            ss.forwardMs = std::max(ss.forwardMs, rt.forwardMs);
            ss.backwardMs = std::max(ss.backwardMs, rt.backwardMs);
            ss.optimizerMs = std::max(ss.optimizerMs, rt.optimizerMs);
            maxLocalParams = std::max(maxLocalParams, rt.localParams);
        }
        ss.dpSyncMs = dpSyncMs(sim, si, stageNodes, maxLocalParams, ss);
        applyFsdp(sim, si, stageNodes, maxLocalParams, ss);
        ss.p2pMs = p2pMs(sim, si, stageNodes);
    }
    applyDpOverlap(sim.plan, stages);
    return stages;
}

/// Device-used peak of one GPU of replica `r` of stage `si`: the caching allocator's reserve of its
/// live tensors (weights, optimizer states, gradient buckets, in-flight activations, working set,
/// logits) plus the CUDA/HIP context and the communicators.
double replicaDeviceUsedBytes(const PlanSim &sim, int si, const Replica &r)
{
    const TestbedOptions &opt = sim.tb.options();
    const Model &model = sim.model;
    const ModelShape &ms = model.shape;
    const Plan &plan = sim.plan;
    const Stage &st = plan.stages[static_cast<size_t>(si)];
    const bool first = si == 0, last = si == sim.p - 1;
    const int inFlight = std::min(sim.p - si, sim.m);
    const GpuSpec &dev = sim.deviceOf(r);
    const bool scoresStored = !storesNoScores(resolveAttention(model, dev));
    std::vector<double> tensors;
    // Weights (16-bit) and optimizer states (fp32 master, m, v) per parameter tensor.
    std::vector<double> params;
    for (int l = 0; l < st.layerCount; ++l)
        for (double e : layerParamTensors(model, r.tp))
            params.push_back(e);
    if (first)
        params.push_back(static_cast<double>(model.embeddingParams()) / r.tp);
    if (last) {
        params.push_back(static_cast<double>(model.headParams()) / r.tp);
        if (ms.tiedEmbeddings && sim.p > 1)
            params.push_back(static_cast<double>(model.embeddingParams()) / r.tp);
    }
    if (plan.fp8 != Fp8Format::Off) { // FP8 weight copies of the linear layers: weight + transpose
        const std::vector<double> w = layerParamTensors(model, r.tp);
        for (int l = 0; l < st.layerCount; ++l)
            for (size_t i = 0; i < 4; ++i)
                tensors.insert(tensors.end(), 2, w[i]);
    }
    // Megatron-FSDP shards the gradients (optim_grads) and the weights (optim_grads_params) too.
    const double gradShare = plan.fsdp != DpSharding::None ? 1.0 / st.dp() : 1.0;
    const double weightShare = plan.fsdp == DpSharding::Parameters ? 1.0 / st.dp() : 1.0;
    double localParams = 0, unitParams = 0;
    for (double e : params) {
        tensors.push_back(2.0 * e * weightShare);
        localParams += e;
        if (!plan.distributedOptimizer)
            for (int k = 0; k < 3; ++k)
                tensors.push_back(4.0 * e);
    }
    for (double e : layerParamTensors(model, r.tp))
        unitParams += e;
    if (plan.fsdp != DpSharding::None)
        for (int k = 0; k < 2; ++k) { // the unit computing and the next one (prefetch / queued reduce)
            tensors.push_back(4.0 * unitParams);
            if (plan.fsdp == DpSharding::Parameters)
                tensors.push_back(2.0 * unitParams);
        }
    // Contiguous fp32 gradient buffer in buckets; distributed optimizer: sharded state buffers.
    for (double left = localParams; left > 0; left -= opt.gradBucketParams) {
        const double bucket = std::min(left, opt.gradBucketParams);
        tensors.push_back(4.0 * bucket * gradShare);
        if (plan.distributedOptimizer)
            for (int k = 0; k < 3; ++k)
                tensors.push_back(4.0 * bucket / st.dp());
    }
    // Activations of the micro-batches in flight.
    const int recomputed = PlanSim::recomputedLayers(st);
    const bool fp8 = plan.fp8 != Fp8Format::Off;
    const auto keptNone = layerActivationTensors(
        model, r.tp, r.microBatch,
        st.recompute.method == RecomputeMethod::Selective ? RecomputeMethod::Selective : RecomputeMethod::None,
        plan.sequenceParallel, scoresStored, fp8);
    const auto keptFull
        = layerActivationTensors(model, r.tp, r.microBatch, RecomputeMethod::Full, plan.sequenceParallel, scoresStored);
    const double T = static_cast<double>(r.microBatch) * ms.seqLength;
    for (int k = 0; k < inFlight; ++k) {
        for (int l = 0; l < st.layerCount; ++l)
            for (double b : (l < recomputed ? keptFull : keptNone))
                tensors.push_back(b);
        if (first) {
            tensors.push_back(8.0 * T);
            tensors.push_back(1.0 * T * ms.hidden);
        }
    }
    // Working set: one layer's full activations (recompute / backward) + its gradients.
    const auto work = layerActivationTensors(model, r.tp, r.microBatch, RecomputeMethod::None, plan.sequenceParallel,
                                             scoresStored, fp8);
    for (double b : work)
        tensors.push_back(b);
    tensors.push_back(*std::max_element(work.begin(), work.end()));
    if (last) {
        tensors.push_back(4.0 * T * ms.vocab / r.tp); // fp32 logits
        tensors.push_back(4.0 * T * ms.vocab / r.tp); // their gradient
    }
    const int groups = (r.tp > 1) + (st.dp() > 1) + (sim.p > 1);
    const double context = dev.vendor == "AMD" ? opt.amdContextBytes : opt.nvidiaContextBytes;
    return sim.tb.reservedBytes(tensors) + context + groups * opt.communicatorBytes;
}

/// Fills out.peakBytesPerGpu and run.peakMemoryBytes; false (with out.error) on the first GPU whose
/// peak exceeds its capacity.
bool simulateMemory(const PlanSim &sim, TestbedRun &out)
{
    bool fits = true;
    double peak = 0;
    for (int si = 0; si < sim.p; ++si)
        for (const Replica &r : sim.plan.stages[static_cast<size_t>(si)].replicas) {
            const GpuSpec &dev = sim.deviceOf(r);
            const double used = replicaDeviceUsedBytes(sim, si, r);
            const double capacity = dev.memoryBytes();
            for (int g = 0; g < r.tp; ++g)
                out.peakBytesPerGpu.push_back(used);
            peak = std::max(peak, used);
            if (used > capacity && fits) {
                fits = false;
                out.error = "out of memory on node " + r.node + " GPU " + std::to_string(r.gpus.front()) + " (" + dev.id
                    + "): " + fmtGiB(used) + " needed, " + fmtGiB(capacity) + " available";
            }
        }
    out.run.peakMemoryBytes = peak;
    return fits;
}

} // namespace

TestbedRun VirtualTestbed::runPlan(const Plan &plan, const Cluster &cluster, const Model &model) const
{
    {
        Diagnostics diags;
        validatePlan(plan, cluster, model, diags);
        if (!diags.empty())
            throw std::invalid_argument("plan is not valid for the cluster/model: " + diags.items().front().toString());
    }
    // The simulator models the plain 1F1B schedule with whole sequences per GPU.
    if (plan.virtualStages > 1)
        throw std::invalid_argument("plan '" + plan.name
                                    + "': the virtual testbed does not simulate the interleaved "
                                      "schedule (virtualStages "
                                    + std::to_string(plan.virtualStages) + ")");
    if (plan.contextParallel > 1)
        throw std::invalid_argument("plan '" + plan.name
                                    + "': the virtual testbed does not simulate context "
                                      "parallelism (contextParallel "
                                    + std::to_string(plan.contextParallel) + ")");
    const PlanSim sim {*this, plan, cluster, model, cluster.nodes(), plan.pp(), plan.microBatches()};
    const std::string planJson = toJson(plan).dump();
    const std::string planHash = fnv1a64Hex(planJson).substr(0, 10);

    TestbedRun out;
    MeasuredRun &run = out.run;
    run.id = "testbed/" + std::to_string(mSeed) + "/" + (plan.name.empty() ? "plan" : plan.name) + "/" + planHash;
    run.plan = plan;
    run.clusterName = cluster.name;
    run.cluster = cluster;
    run.modelId = model.id;
    run.memoryKind = MemoryKind::DeviceUsed;
    run.source = sourceLabel();
    run.group = mOptions.group.empty() ? "testbed/" + cluster.name : mOptions.group;

    Rng runRng = rngFor(mSeed, "run|" + planJson + "|" + cluster.name + "|" + model.id);
    const double runFactor = runRng.lognormalFactor(mOptions.jitterCv);
    int stragglerGpu = -1;
    if (runRng.uniform() < mOptions.stragglerProbability) {
        stragglerGpu = static_cast<int>(runRng.next() % static_cast<std::uint64_t>(plan.totalGpus()));
        out.straggler = true;
    }

    const std::vector<StageSim> stages = stageTimes(sim, stragglerGpu);
    if (!simulateMemory(sim, out)) {
        out.ok = false;
        run.iterationTimeMs = 0;
        return out;
    }

    // Iterations: the 1F1B pipeline, then the slowest gradient sync and optimizer step.
    double dpMax = 0, optMax = 0;
    for (const StageSim &s : stages) {
        dpMax = std::max(dpMax, s.dpSyncMs);
        optMax = std::max(optMax, s.optimizerMs);
    }
    const int iters = std::max(1, mOptions.timedIterations);
    double sum = 0;
    for (int it = 0; it < iters; ++it) {
        // Small per-operation noise (kernel timing variation) inside each iteration.
        Rng itRng = rngFor(mSeed, "iter|" + planHash + "|" + std::to_string(it));
        std::vector<double> opNoise(64);
        for (double &x : opNoise)
            x = itRng.lognormalFactor(mOptions.jitterCv > 0 ? 0.005 : 0.0);
        const double pipe = simulateOneFOneB(stages, sim.m, opNoise);
        const double t = (pipe + dpMax + optMax + mOptions.iterationOverheadMs) * runFactor;
        out.iterationTimesMs.push_back(t);
        sum += t;
    }
    run.iterationTimeMs = sum / iters;
    out.ok = true;
    return out;
}

} // namespace memx
