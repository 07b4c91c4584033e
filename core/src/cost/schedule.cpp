#include "memx/cost/schedule.h"

#include "memx/cost/costmodel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace memx {

namespace {

using Kind = PipelineOp::Kind;

/// Warm-up forwards of stage `i` of `p` with `m` micro-batches.
int warmUp(int p, int i, int m)
{
    return std::min(p - 1 - i, m);
}

/// Kind and micro-batch of the k-th operation (0 <= k < 2m) in stage i's 1F1B order.
void orderAt(int p, int i, int m, int k, Kind &kind, int &mb)
{
    const int warm = warmUp(p, i, m);
    if (k < warm) {
        kind = Kind::Forward;
        mb = k;
    } else if (k < 2 * m - warm) {
        const int r = k - warm;
        kind = r % 2 == 0 ? Kind::Forward : Kind::Backward;
        mb = r % 2 == 0 ? warm + r / 2 : r / 2;
    } else {
        kind = Kind::Backward;
        mb = k - m;
    }
}

/// Position of (kind, mb) in stage i's order (the inverse of orderAt).
int orderOf(int p, int i, int m, Kind kind, int mb)
{
    const int warm = warmUp(p, i, m);
    if (kind == Kind::Forward)
        return mb < warm ? mb : warm + 2 * (mb - warm);
    return mb < m - warm ? warm + 2 * mb + 1 : m + mb;
}

void checkTimes(const std::vector<double> &v, const char *what)
{
    for (size_t i = 0; i < v.size(); ++i) {
        if (!std::isfinite(v[i]) || v[i] < 0)
            throw std::invalid_argument(std::string("oneFOneBSchedule: ") + what + "[" + std::to_string(i)
                                        + "] = " + std::to_string(v[i]) + " (must be finite and >= 0)");
    }
}

void checkInput(const std::vector<double> &forwardMs, const std::vector<double> &backwardMs,
                const std::vector<double> &p2pMs, int m, const std::vector<double> &opNoise)
{
    const size_t p = forwardMs.size();
    if (p == 0)
        throw std::invalid_argument("oneFOneBSchedule: no stages (forwardMs is empty)");
    if (backwardMs.size() != p)
        throw std::invalid_argument("oneFOneBSchedule: " + std::to_string(p) + " forward times but "
                                    + std::to_string(backwardMs.size()) + " backward times (one each per stage)");
    if (!p2pMs.empty() && p2pMs.size() != p - 1)
        throw std::invalid_argument("oneFOneBSchedule: " + std::to_string(p2pMs.size()) + " send times for "
                                    + std::to_string(p) + " stages (need stages - 1 = " + std::to_string(p - 1)
                                    + ", or none)");
    if (m < 1)
        throw std::invalid_argument("oneFOneBSchedule: microBatches = " + std::to_string(m) + " (must be >= 1)");
    if (p * static_cast<size_t>(m) > kMaxPipelineCells)
        throw std::invalid_argument("oneFOneBSchedule: " + std::to_string(p) + " stages x " + std::to_string(m)
                                    + " micro-batches is over the limit of " + std::to_string(kMaxPipelineCells)
                                    + " (stage, micro-batch) pairs");
    checkTimes(forwardMs, "forwardMs");
    checkTimes(backwardMs, "backwardMs");
    checkTimes(p2pMs, "p2pMs");
    checkTimes(opNoise, "opNoise");
}

} // namespace

int PipelineSchedule::opIndex(int stage, int microBatch, PipelineOp::Kind kind) const
{
    if (stage < 0 || stage >= stages || microBatch < 0 || microBatch >= microBatches)
        return -1;
    return stage * 2 * microBatches + orderOf(stages, stage, microBatches, kind, microBatch);
}

double PipelineSchedule::busyMs(int stage) const
{
    if (stage < 0 || stage >= stages)
        return 0;
    const size_t n = 2 * static_cast<size_t>(microBatches);
    double busy = 0;
    for (size_t k = static_cast<size_t>(stage) * n; k < (static_cast<size_t>(stage) + 1) * n && k < ops.size(); ++k)
        busy += ops[k].durationMs();
    return busy;
}

double PipelineSchedule::idleMs(int stage) const
{
    if (stage < 0 || stage >= stages)
        return 0;
    return std::max(0.0, makespanMs - busyMs(stage));
}

double PipelineSchedule::bubbleFraction() const
{
    if (stages <= 0 || makespanMs <= 0)
        return 0;
    double idle = 0;
    for (int i = 0; i < stages; ++i)
        idle += idleMs(i);
    return idle / (stages * makespanMs);
}

PipelineSchedule oneFOneBSchedule(const std::vector<double> &forwardMs, const std::vector<double> &backwardMs,
                                  const std::vector<double> &p2pMs, int m, const std::vector<double> &opNoise)
{
    checkInput(forwardMs, backwardMs, p2pMs, m, opNoise);
    const int p = static_cast<int>(forwardMs.size());
    const size_t perStage = 2 * static_cast<size_t>(m);
    PipelineSchedule s;
    s.stages = p;
    s.microBatches = m;
    s.p2pMs = p2pMs.empty() ? std::vector<double>(static_cast<size_t>(p - 1), 0.0) : p2pMs;
    s.ops.resize(static_cast<size_t>(p) * perStage);
    for (int i = 0; i < p; ++i) {
        for (int k = 0; k < static_cast<int>(perStage); ++k) {
            PipelineOp &op = s.ops[static_cast<size_t>(i) * perStage + static_cast<size_t>(k)];
            op.stage = i;
            orderAt(p, i, m, k, op.kind, op.microBatch);
        }
    }

    // Discrete-event loop: sweep the stages, each running its next operations in order while
    // their input has arrived. next[i] = operations stage i has run; an operation of stage j is
    // done iff its position in j's order is below next[j].
    std::vector<size_t> next(static_cast<size_t>(p), 0);
    std::vector<double> clock(static_cast<size_t>(p), 0.0);
    auto endOf = [&](int stage, Kind kind, int mb, double &end) {
        const size_t k = static_cast<size_t>(orderOf(p, stage, m, kind, mb));
        if (k >= next[static_cast<size_t>(stage)])
            return false;
        end = s.ops[static_cast<size_t>(stage) * perStage + k].endMs;
        return true;
    };
    size_t remaining = s.ops.size(), noiseIdx = 0;
    while (remaining > 0) {
        bool progressed = false;
        for (int i = 0; i < p; ++i) {
            size_t &k = next[static_cast<size_t>(i)];
            while (k < perStage) {
                PipelineOp &op = s.ops[static_cast<size_t>(i) * perStage + k];
                const bool fwd = op.kind == Kind::Forward;
                double ready = 0;
                if (fwd && i > 0) {
                    if (!endOf(i - 1, Kind::Forward, op.microBatch, ready))
                        break;
                    ready += s.p2pMs[static_cast<size_t>(i - 1)];
                } else if (!fwd && i < p - 1) {
                    if (!endOf(i + 1, Kind::Backward, op.microBatch, ready))
                        break;
                    ready += s.p2pMs[static_cast<size_t>(i)];
                }
                const double noise = opNoise.empty() ? 1.0 : opNoise[noiseIdx++ % opNoise.size()];
                const double dur = (fwd ? forwardMs : backwardMs)[static_cast<size_t>(i)] * noise;
                op.startMs = std::max(clock[static_cast<size_t>(i)], ready);
                op.endMs = op.startMs + dur;
                clock[static_cast<size_t>(i)] = op.endMs;
                ++k;
                --remaining;
                progressed = true;
            }
        }
        if (!progressed)
            throw std::logic_error("oneFOneBSchedule: deadlocked"); // cannot happen for 1F1B orders
    }
    s.makespanMs = *std::max_element(clock.begin(), clock.end());
    return s;
}

PipelineSchedule oneFOneBSchedule(const PlanEstimate &e)
{
    if (e.stages.empty())
        throw std::invalid_argument("oneFOneBSchedule: the estimate has no stages");
    const size_t p = e.stages.size();
    std::vector<double> fwd(p), bwd(p), recompute(p), p2p(p - 1);
    for (size_t i = 0; i < p; ++i) {
        const StageEstimate &se = e.stages[i];
        const double comm = se.tpCommMs + se.cpCommMs + se.moeCommMs + se.fsdpCommMs;
        fwd[i] = std::clamp(se.forwardMs + 0.5 * comm, 0.0, std::max(0.0, se.stepMs));
        bwd[i] = std::max(0.0, se.stepMs - fwd[i]);
        recompute[i] = std::clamp(se.recomputeMs, 0.0, bwd[i]);
        if (i + 1 < p)
            p2p[i] = se.p2pMs;
    }
    PipelineSchedule s = oneFOneBSchedule(fwd, bwd, p2p, e.microBatches);
    for (PipelineOp &op : s.ops) {
        if (op.kind == Kind::Backward)
            op.recomputeMs = recompute[static_cast<size_t>(op.stage)];
    }
    return s;
}

} // namespace memx
