#include "memx/profiling/runtableimporter.h"

#include "memx/cluster/gpuspec.h"
#include "memx/io/formats.h"
#include "memx/profiling/profileio.h"
#include "memx/util/diagnostic.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

namespace memx {

namespace {

using nlohmann::json;

const char *const kRequired[] = {"source_table",
                                 "row",
                                 "model",
                                 "layers",
                                 "hidden",
                                 "heads",
                                 "seq_len",
                                 "n_gpus",
                                 "tp",
                                 "sp",
                                 "pp",
                                 "cp",
                                 "dp",
                                 "dist_optimizer",
                                 "recompute",
                                 "gbs",
                                 "mbs",
                                 "grad_accum",
                                 "mem_GB_per_gpu",
                                 "step_ms"};

/// One row, with typed access that names the line and column on error.
class Row {
public:
    Row(const std::vector<std::string> &cells, const std::map<std::string, size_t> &cols, std::string file, int line)
        : mCells(cells)
        , mCols(cols)
        , mFile(std::move(file))
        , mLine(line)
    {
    }

    const std::string &text(const std::string &col) const
    {
        static const std::string empty;
        const auto it = mCols.find(col);
        return it == mCols.end() || it->second >= mCells.size() ? empty : mCells[it->second];
    }

    [[noreturn]] void fail(const std::string &col, const std::string &expected) const
    {
        throw LoadError(mFile, where(col), "expected " + expected + ", found \"" + text(col) + "\"");
    }

    std::string where(const std::string &col) const
    {
        return "line " + std::to_string(mLine) + (col.empty() ? std::string() : ", column " + col);
    }

    int integer(const std::string &col, int lo, int hi) const
    {
        const std::string &s = text(col);
        int v = 0;
        const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi)
            fail(col, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return v;
    }

    std::optional<int> optionalInteger(const std::string &col, int lo, int hi) const
    {
        if (text(col).empty())
            return std::nullopt;
        return integer(col, lo, hi);
    }

    double number(const std::string &col, double lo, double hi) const
    {
        const std::string &s = text(col);
        double v = 0;
        const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v) || v < lo || v > hi) {
            std::ostringstream o;
            o << "a number in [" << lo << ", " << hi << "]";
            fail(col, o.str());
        }
        return v;
    }

    int line() const { return mLine; }

private:
    const std::vector<std::string> &mCells;
    const std::map<std::string, size_t> &mCols;
    std::string mFile;
    int mLine;
};

/// "none", "selective", "full" or "full(uniform;N layer[s])" / "full(block;N layers)".
Recompute parseRecompute(const Row &row)
{
    const std::string &s = row.text("recompute");
    Recompute rc;
    if (s == "none")
        return rc;
    if (s == "selective") {
        rc.method = RecomputeMethod::Selective;
        return rc;
    }
    if (s == "full" || s.rfind("full(uniform", 0) == 0) {
        // uniform with N = 1 checkpoints every layer on its own: every layer keeps only its input.
        if (s != "full" && s.find(";1 layer") == std::string::npos)
            row.fail("recompute", "none, selective, full, full(uniform;1 layer) or full(block;N layers)");
        rc.method = RecomputeMethod::Full;
        return rc;
    }
    if (s.rfind("full(block;", 0) == 0) {
        rc.method = RecomputeMethod::Full;
        int n = 0;
        const char *b = s.data() + 11;
        const auto [p, ec] = std::from_chars(b, s.data() + s.size(), n);
        if (ec != std::errc() || n < 1)
            row.fail("recompute", "full(block;N layers) with N >= 1");
        (void)p;
        rc.layers = n;
        return rc;
    }
    row.fail("recompute", "none, selective, full, full(uniform;1 layer) or full(block;N layers)");
}

Model rowModel(const Row &row, const RunTableOptions &o)
{
    Model m;
    const std::string name = row.text("model");
    if (name.empty())
        row.fail("model", "a model name");
    m.shape.layers = row.integer("layers", 1, 100000);
    m.shape.hidden = row.integer("hidden", 1, 1 << 20);
    m.shape.heads = row.integer("heads", 1, 1 << 16);
    if (m.shape.hidden % m.shape.heads != 0)
        row.fail("heads", "a divisor of hidden (" + row.text("hidden") + ")");
    m.shape.kvGroups = m.shape.heads;
    m.shape.ffnHidden = 4 * m.shape.hidden;
    m.shape.vocab = o.vocab;
    m.shape.seqLength = row.integer("seq_len", 1, 1 << 24);
    // GPT-2 as the tutorial's scripts build it: LayerNorm, GeLU, learned positions, tied embeddings.
    m.shape.positionEmbedding = PositionEmbedding::Learned;
    m.training.globalBatch = row.integer("gbs", 1, 1 << 24);
    m.training.precision = Precision::BF16;
    m.training.attention = o.attention;
    m.id = "mt-" + name + (m.shape.seqLength == 1024 ? "" : "-s" + std::to_string(m.shape.seqLength));
    m.name = name + " (megatron-tutorials)";
    m.source = "megatron-tutorials h100_runs.csv (GPT-2 shape of the tutorial's launch scripts)";
    return m;
}

Cluster rowCluster(int gpus, const RunTableOptions &o, const std::string &file)
{
    const json j {{"format", kClusterFormat},
                  {"name", o.gpu + " x" + std::to_string(gpus)},
                  {"description", "One node of the measured-runs table; the GPUs the run used"},
                  {"nodes", json::array({{{"name", "node"}, {"gpu", o.gpu}, {"gpus", gpus}}})},
                  {"network", {{"interNode", {{"bandwidthGBps", 50}, {"latencyUs", 5}}}}}};
    Diagnostics d(file);
    Cluster c = parseCluster(j, builtinCatalogue(), d);
    if (!d.empty())
        throw LoadError(file, "", "cluster of " + o.gpu + ": " + d.items().front().message);
    return c;
}

/// Megatron's rank order (tp fastest, then cp, then dp, then pp): stage i, replica j holds GPUs
/// (i*dp + j)*tp*cp ... + tp*cp - 1 of the node.
Plan rowPlan(const Row &row, const Model &m, const std::string &name)
{
    const int tp = row.integer("tp", 1, 1024), pp = row.integer("pp", 1, 1024), dp = row.integer("dp", 1, 1 << 16);
    const int cp = row.integer("cp", 1, 1024);
    const int mbs = row.integer("mbs", 1, 1 << 16);
    if (m.shape.layers % pp != 0)
        row.fail("pp", "a divisor of layers (" + std::to_string(m.shape.layers) + ")");
    Plan p;
    p.contextParallel = cp;
    if (cp > 1) {
        const auto comm = cpCommFromString(row.text("cp_comm").empty() ? "p2p" : row.text("cp_comm"));
        if (!comm)
            row.fail("cp_comm", "p2p, all_gather or a2a");
        p.cpComm = *comm;
    }
    if (!row.text("layers_per_virtual_stage").empty()) {
        const int perChunk = row.integer("layers_per_virtual_stage", 1, 100000);
        if ((m.shape.layers / pp) % perChunk != 0)
            row.fail("layers_per_virtual_stage",
                     "a divisor of the " + std::to_string(m.shape.layers / pp) + " layers per pipeline stage");
        p.virtualStages = m.shape.layers / pp / perChunk;
    }
    p.name = name;
    p.globalBatch = row.integer("gbs", 1, 1 << 24);
    p.sequenceParallel = row.integer("sp", 0, 1) == 1;
    p.distributedOptimizer = row.integer("dist_optimizer", 0, 1) == 1;
    // The tutorials' launch scripts (scripts/100_*, 112_*, 130_*: the ZERO=1 branch) pass
    // --overlap-grad-reduce --overlap-param-gather together with --use-distributed-optimizer,
    // and neither without it.
    p.overlapGradReduce = p.overlapParamGather = p.distributedOptimizer;
    const Recompute rc = parseRecompute(row);
    const int per = m.shape.layers / pp;
    for (int i = 0; i < pp; ++i) {
        Stage st;
        st.firstLayer = i * per;
        st.layerCount = per;
        st.recompute = rc;
        for (int j = 0; j < dp; ++j) {
            Replica r;
            r.node = "node";
            r.tp = tp;
            r.microBatch = mbs;
            for (int g = 0; g < tp * cp; ++g)
                r.gpus.push_back((i * dp + j) * tp * cp + g);
            st.replicas.push_back(std::move(r));
        }
        p.stages.push_back(std::move(st));
    }
    return p;
}

void checkConsistent(const Row &row)
{
    const int n = row.integer("n_gpus", 1, 1 << 20);
    const int tp = row.integer("tp", 1, 1024), pp = row.integer("pp", 1, 1024), dp = row.integer("dp", 1, 1 << 16),
              cp = row.integer("cp", 1, 1 << 16);
    if (static_cast<long long>(tp) * pp * dp * cp != n)
        row.fail("n_gpus", "tp x pp x dp x cp = " + std::to_string(static_cast<long long>(tp) * pp * dp * cp));
    const int gbs = row.integer("gbs", 1, 1 << 24), mbs = row.integer("mbs", 1, 1 << 16),
              ga = row.integer("grad_accum", 1, 1 << 20);
    if (static_cast<long long>(mbs) * dp * ga != gbs)
        row.fail("gbs", "mbs x dp x grad_accum = " + std::to_string(static_cast<long long>(mbs) * dp * ga));
    if (row.integer("sp", 0, 1) == 1 && tp == 1)
        row.fail("sp", "0 with tp 1 (sequence parallelism shards over the tensor-parallel group)");
}

} // namespace

ImportBatch importRunTable(const std::string &text, const std::string &file, const RunTableOptions &o)
{
    if (!builtinCatalogue().find(o.gpu))
        throw LoadError(file, "", "unknown GPU \"" + o.gpu + "\" for the runs (expected a catalogue device id)");
    ImportBatch batch;
    std::istringstream in(text);
    std::string line;
    int lineNo = 0;
    std::map<std::string, size_t> cols;
    std::map<std::string, Model> models;
    std::map<int, Cluster> clusters;
    while (std::getline(in, line)) {
        ++lineNo;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (lineNo == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0)
            line.erase(0, 3);
        if (line.find_first_not_of(" \t,") == std::string::npos)
            continue;
        const std::vector<std::string> cells = splitCsvLine(line);
        if (cols.empty()) {
            for (size_t i = 0; i < cells.size(); ++i)
                cols[cells[i]] = i;
            for (const char *c : kRequired)
                if (!cols.count(c))
                    throw LoadError(file, "line 1",
                                    std::string("expected a header with the column \"") + c + "\", found \"" + line
                                        + "\"");
            continue;
        }
        if (cells.size() > cols.size())
            throw LoadError(file, "line " + std::to_string(lineNo),
                            "expected " + std::to_string(cols.size()) + " cells (the header's), found "
                                + std::to_string(cells.size()));
        const Row row(cells, cols, file, lineNo);
        checkConsistent(row);
        const std::string id = o.groupPrefix + "/" + row.text("source_table") + "/" + row.text("row");
        Model m = rowModel(row, o);
        if (auto it = models.find(m.id); it != models.end()) {
            if (it->second.shape != m.shape)
                throw LoadError(file, row.where("model"),
                                "expected the shape of model " + m.id + " from its first row, found another one");
            m = it->second;
        } else {
            models.emplace(m.id, m);
        }
        const int n = row.integer("n_gpus", 1, 1 << 20);
        if (!clusters.count(n))
            clusters.emplace(n, rowCluster(n, o, file));
        MeasuredRun run;
        run.id = id;
        run.plan = rowPlan(row, m, row.text("make_target").empty() ? id : row.text("make_target"));
        run.cluster = clusters.at(n);
        run.clusterName = run.cluster.name;
        run.modelId = m.id;
        run.memoryKind = o.memoryKind;
        run.source = file + ":" + std::to_string(lineNo);
        run.group = o.groupPrefix + "/" + row.text("source_table");
        if (row.text("mem_GB_per_gpu") == "OOM") {
            run.outOfMemory = true;
            if (!row.text("step_ms").empty())
                row.fail("step_ms", "no time for a run that failed out of memory");
        } else {
            if (!row.text("mem_GB_per_gpu").empty())
                run.peakMemoryBytes = row.number("mem_GB_per_gpu", 0.001, 1e5) * o.memoryUnitBytes;
            run.iterationTimeMs = row.number("step_ms", 0.001, 1e9);
        }
        Diagnostics d(file);
        validatePlan(run.plan, run.cluster, m, d);
        if (!d.empty())
            throw LoadError(file, row.where(""), "the run's plan is invalid: " + d.items().front().message);
        batch.runs.push_back(std::move(run));
    }
    if (cols.empty())
        throw LoadError(file, "line 1", "expected a header line with the run columns, found an empty file");
    for (auto &[id, m] : models)
        batch.models.push_back(m);
    for (auto &[n, c] : clusters)
        batch.clusters.push_back(c);
    return batch;
}

RunTableOptions vTrainOptions()
{
    RunTableOptions o;
    o.gpu = "a100-80gb-sxm";
    o.attention = AttentionBackend::Unfused;
    o.groupPrefix = "vtrain";
    return o;
}

ImportBatch importVTrainTable(const std::string &text, const std::string &file, const RunTableOptions &options)
{
    static const char *const kColumns[] = {"# GPUs",
                                           "global batch",
                                           "micro batch",
                                           "hidden size",
                                           "attention heads",
                                           "# layers",
                                           "sequence length",
                                           "tensor parallelism",
                                           "data parallelism",
                                           "pipeline parallelism",
                                           "iteration time (ms)"};
    std::istringstream in(text);
    std::string line,
        out = std::string("source_table,row,make_target,model,layers,hidden,heads,seq_len,n_gpus,tp,sp,pp,"
                          "layers_per_virtual_stage,cp,cp_comm,dp,dist_optimizer,recompute,gbs,mbs,"
                          "grad_accum,mem_GB_per_gpu,step_ms,note\n");
    int lineNo = 0;
    bool header = true;
    while (std::getline(in, line)) {
        ++lineNo;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (lineNo == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0)
            line.erase(0, 3);
        if (line.find_first_not_of(" \t,") == std::string::npos)
            continue;
        const std::vector<std::string> c = splitCsvLine(line);
        if (header) {
            header = false;
            bool ok = c.size() == 11;
            for (size_t i = 0; ok && i < 11; ++i)
                ok = c[i] == kColumns[i];
            if (!ok)
                throw LoadError(file, "line " + std::to_string(lineNo),
                                "expected vTrain's header \"# GPUs,global batch,...,iteration time (ms)\", found \""
                                    + line + "\"");
            continue;
        }
        if (c.size() != 11)
            throw LoadError(file, "line " + std::to_string(lineNo),
                            "expected 11 cells, found " + std::to_string(c.size()));
        // The rewritten row keeps the line number in its id; grad_accum = gbs / (mbs x dp) is
        // checked again by importRunTable (an indivisible row fails there, naming "gbs").
        long long gbs = 0, mbs = 0, dp = 0;
        std::from_chars(c[1].data(), c[1].data() + c[1].size(), gbs);
        std::from_chars(c[2].data(), c[2].data() + c[2].size(), mbs);
        std::from_chars(c[8].data(), c[8].data() + c[8].size(), dp);
        // mbs x dp checked for overflow (fuzz_runtable: 464 x 77777777777777777 was UB); a row
        // whose step does not fit is left to importRunTable's range checks with grad_accum 1.
        const bool stepFits = mbs > 0 && dp > 0 && mbs <= std::numeric_limits<long long>::max() / dp;
        const long long ga = stepFits ? std::max(1LL, gbs / (mbs * dp)) : 1;
        out += c[0] + "gpu,L" + std::to_string(lineNo) + ",,gpt-h" + c[3] + "-L" + c[5] + "," + c[5] + "," + c[3] + ","
            + c[4] + "," + c[6] + "," + c[0] + "," + c[7] + ",0," + c[9] + ",,1,," + c[8] + ",0,full," + c[1] + ","
            + c[2] + "," + std::to_string(ga) + ",," + c[10] + ",\n";
    }
    return importRunTable(out, file, options);
}

} // namespace memx
