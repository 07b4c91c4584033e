// memx search / memx predict as binaries: JSON shape, exit codes, usage errors, and that
// predict on a plan from search reports the same iteration time.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include "testutils.h"

using Run = memxtest::CliRun;
using memxtest::runMemx;

static const QString kSamples = QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters");

/// Writes `plan` as dir/plan.json (what a user saves from `memx search --json`); its path, or ""
/// when the file cannot be written.
static QString savePlan(const QTemporaryDir &dir, const QJsonObject &plan)
{
    const QString path = dir.filePath("plan.json");
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(plan).toJson()) <= 0)
        return {};
    return path;
}

/// `memx export --format megatron` of the plan at `planPath` into dir/launch: node 0's launch
/// script, or "" with `why` (the export's stderr, or the missing file).
static QByteArray exportMegatronScript(const QString &cluster, const QString &model, const QString &planPath,
                                       const QTemporaryDir &dir, QByteArray &why)
{
    const Run e = runMemx({"export", "--cluster", cluster, "--model", model, "--plan", planPath, "--format", "megatron",
                           "--out", dir.filePath("launch")});
    if (e.code != 0) {
        why = e.err;
        return {};
    }
    QFile script(dir.filePath("launch/launch-node0.sh"));
    if (!script.open(QIODevice::ReadOnly)) {
        why = "no launch-node0.sh written";
        return {};
    }
    return script.readAll();
}

class TestSearchCli : public QObject {
    Q_OBJECT

private slots:
    void searchJsonAndPredictAgree()
    {
        const QString cluster = kSamples + "/paper-20gpu-nvidia-amd.json";
        // The cost model's whole space (--target any): the paper's 31,240 configurations and more.
        const Run r = runMemx({"search", "--cluster", cluster, "--model", "llama2-7b", "--json", "--top", "3",
                               "--weights", "1,0.5,0.2", "--threads", "2", "--target", "any"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        const QJsonObject counts = j["counts"].toObject();
        QVERIFY(counts["evaluated"].toDouble() >= 31240);
        QCOMPARE(j["target"].toObject()["name"].toString(), QStringLiteral("any"));
        QCOMPARE(j["target"].toObject()["fromCluster"].toBool(), false);
        QCOMPARE(counts["enumerated"].toDouble(),
                 counts["evaluated"].toDouble() + counts["pruned"].toObject()["total"].toDouble());
        QCOMPARE(j["top"].toArray().size(), 3);
        QVERIFY(j["paretoFront"].toArray().size() >= 1);
        const QJsonObject top = j["top"].toArray()[0].toObject();
        QCOMPARE(top["estimate"].toObject()["gpus"].toArray().size() + top["idleGpus"].toInt(), 20);
        QVERIFY(top["launchers"].isArray());
        // Scores are non-decreasing down the table.
        double prev = 0;
        for (const auto &v : j["top"].toArray()) {
            QVERIFY(v.toObject()["score"].toDouble() >= prev);
            prev = v.toObject()["score"].toDouble();
        }

        QTemporaryDir dir;
        const QString planPath = savePlan(dir, top["plan"].toObject());
        QVERIFY(!planPath.isEmpty());
        const Run p = runMemx({"predict", "--cluster", cluster, "--model", "llama2-7b", "--plan", planPath, "--json"});
        QVERIFY2(p.code == 0, p.err.constData());
        const QJsonObject pj = QJsonDocument::fromJson(p.out).object();
        QVERIFY(qAbs(pj["iterationTimeMs"].toDouble() - top["T"].toDouble()) < 1e-6 * top["T"].toDouble());
        QCOMPARE(pj["stages"].toArray().size(), top["plan"].toObject()["stages"].toArray().size());

        const Run table = runMemx({"predict", "--cluster", cluster, "--model", "llama2-7b", "--plan", planPath});
        QCOMPARE(table.code, 0);
        QVERIFY(table.out.contains("headroom"));
    }

    /// --overlap-dp: the plans carry Megatron's overlap flags (the gather with the distributed
    /// optimizer only), predict of the written plan gives the search's time, and the export's
    /// launch script has the flags.
    void overlapDpEndToEnd()
    {
        const QString cluster = kSamples + "/h100-8x.json";
        const Run r = runMemx({"search", "--cluster", cluster, "--model", "llama2-7b", "--json", "--top", "5",
                               "--overlap-dp", "--dist-opt", "on"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject top = QJsonDocument::fromJson(r.out).object()["top"].toArray()[0].toObject();
        const QJsonObject plan = top["plan"].toObject();
        QVERIFY(plan["overlapGradReduce"].toBool());
        QCOMPARE(plan["overlapParamGather"].toBool(), plan["distributedOptimizer"].toBool());
        QTemporaryDir dir;
        const QString planPath = savePlan(dir, plan);
        QVERIFY(!planPath.isEmpty());
        const Run p = runMemx({"predict", "--cluster", cluster, "--model", "llama2-7b", "--plan", planPath, "--json"});
        QVERIFY2(p.code == 0, p.err.constData());
        const double t = QJsonDocument::fromJson(p.out).object()["iterationTimeMs"].toDouble();
        QVERIFY(qAbs(t - top["T"].toDouble()) < 1e-6 * top["T"].toDouble());
        QByteArray why;
        const QByteArray text = exportMegatronScript(cluster, "llama2-7b", planPath, dir, why);
        QVERIFY2(!text.isEmpty(), why.constData());
        QVERIFY(text.contains("--overlap-grad-reduce"));
        QCOMPARE(text.contains("--overlap-param-gather"), plan["distributedOptimizer"].toBool());
    }

    /// --fp8 hybrid: every plan carries the format, predict of the written plan gives the search's
    /// time (faster than the best BF16 plan), the export writes Transformer Engine's FP8 flags;
    /// an unknown format is a usage error.
    void fp8EndToEnd()
    {
        const QString cluster = kSamples + "/h100-8x.json";
        const Run bf = runMemx({"search", "--cluster", cluster, "--model", "llama2-7b", "--json", "--top", "1"});
        QVERIFY2(bf.code == 0, bf.err.constData());
        const double bfT = QJsonDocument::fromJson(bf.out).object()["top"].toArray()[0].toObject()["T"].toDouble();
        const Run r = runMemx(
            {"search", "--cluster", cluster, "--model", "llama2-7b", "--json", "--top", "5", "--fp8", "hybrid"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonArray tops = QJsonDocument::fromJson(r.out).object()["top"].toArray();
        for (const auto &v : tops)
            QCOMPARE(v.toObject()["plan"].toObject()["fp8"].toString(), QStringLiteral("hybrid"));
        const QJsonObject top = tops[0].toObject();
        QVERIFY2(top["T"].toDouble() < bfT,
                 qPrintable(QString::number(top["T"].toDouble()) + " vs " + QString::number(bfT)));
        QTemporaryDir dir;
        const QString planPath = savePlan(dir, top["plan"].toObject());
        QVERIFY(!planPath.isEmpty());
        const Run p = runMemx({"predict", "--cluster", cluster, "--model", "llama2-7b", "--plan", planPath, "--json"});
        QVERIFY2(p.code == 0, p.err.constData());
        const double t = QJsonDocument::fromJson(p.out).object()["iterationTimeMs"].toDouble();
        QVERIFY(qAbs(t - top["T"].toDouble()) < 1e-6 * top["T"].toDouble());
        QByteArray why;
        const QByteArray text = exportMegatronScript(cluster, "llama2-7b", planPath, dir, why);
        QVERIFY2(!text.isEmpty(), why.constData());
        QVERIFY(text.contains("--transformer-impl transformer_engine"));
        QVERIFY(text.contains("--fp8-format hybrid"));

        const Run bad = runMemx({"search", "--cluster", cluster, "--model", "llama2-7b", "--fp8", "fp16"});
        QCOMPARE(bad.code, 2);
        QVERIFY2(bad.err.contains("--fp8: expected off, hybrid or e4m3"), bad.err.constData());
    }

    /// Issue 17 item 5: a model that fits 8 x H100 without pipeline and tensor parallelism only
    /// when Megatron-FSDP shards the weights (llama2-13b, TP 1, one stage: 6 bytes per parameter
    /// of 13 B replicated is 78 GB before activations). The plain search says so and names the
    /// option; with it every plan shards the weights, predict agrees, the Megatron export starts
    /// Megatron-FSDP and FlagScale refuses it.
    void fsdpEndToEnd()
    {
        const QString cluster = kSamples + "/h100-8x.json";
        const QStringList base {"search", "--cluster", cluster, "--model", "llama2-13b", "--stages", "1", "--tp", "1"};
        const Run none = runMemx(base + QStringList {"--json"});
        QVERIFY2(none.code == 0, none.err.constData());
        const QJsonObject nj = QJsonDocument::fromJson(none.out).object();
        QCOMPARE(nj["top"].toArray().size(), 0);
        QVERIFY2(nj["advice"].toObject()["text"].toString().contains("--dp-sharding optim_grads_params"),
                 none.out.constData());
        const Run r = runMemx(base + QStringList {"--json", "--top", "5", "--dp-sharding", "optim_grads_params"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonArray tops = QJsonDocument::fromJson(r.out).object()["top"].toArray();
        QVERIFY(!tops.isEmpty());
        for (const auto &v : tops)
            QCOMPARE(v.toObject()["plan"].toObject()["fsdp"].toString(), QStringLiteral("optim_grads_params"));
        const QJsonObject top = tops[0].toObject();
        QTemporaryDir dir;
        const QString planPath = savePlan(dir, top["plan"].toObject());
        QVERIFY(!planPath.isEmpty());
        const Run p = runMemx({"predict", "--cluster", cluster, "--model", "llama2-13b", "--plan", planPath, "--json"});
        QVERIFY2(p.code == 0, p.err.constData());
        const double t = QJsonDocument::fromJson(p.out).object()["iterationTimeMs"].toDouble();
        QVERIFY(qAbs(t - top["T"].toDouble()) < 1e-6 * top["T"].toDouble());
        const QJsonObject stage0 = QJsonDocument::fromJson(p.out).object()["stages"].toArray()[0].toObject();
        QVERIFY(stage0["fsdpCommMs"].toDouble() > 0);
        QByteArray why;
        const QByteArray text = exportMegatronScript(cluster, "llama2-13b", planPath, dir, why);
        QVERIFY2(!text.isEmpty(), why.constData());
        QVERIFY(text.contains("--use-megatron-fsdp"));
        QVERIFY(text.contains("--data-parallel-sharding-strategy optim_grads_params"));
        QVERIFY(text.contains("unset CUDA_DEVICE_MAX_CONNECTIONS"));
        QVERIFY(!text.contains("export CUDA_DEVICE_MAX_CONNECTIONS=1"));
        const Run fs = runMemx({"export", "--cluster", cluster, "--model", "llama2-13b", "--plan", planPath, "--format",
                                "flagscale", "--out", dir.filePath("fs")});
        QVERIFY(fs.code != 0);
        QVERIFY2(fs.err.contains("/fsdp"), fs.err.constData());

        const Run bad = runMemx(base + QStringList {"--dp-sharding", "zero3"});
        QCOMPARE(bad.code, 2);
        QVERIFY2(bad.err.contains("--dp-sharding: expected none, optim, optim_grads, optim_grads_params or all"),
                 bad.err.constData());
        const Run both = runMemx(base + QStringList {"--dp-sharding", "all", "--dist-opt", "on"});
        QCOMPARE(both.code, 2);
    }

    /// The default target follows the cluster: FlagScale for the NVIDIA + AMD sample, the MI250X
    /// group idle (no ROCm in FlagScale); every listed plan names its launcher and idle GPUs.
    void defaultTargetAndIdleGroups()
    {
        const Run r = runMemx({"search", "--cluster", kSamples + "/paper-20gpu-nvidia-amd.json", "--model", "llama2-7b",
                               "--json", "--top", "5", "--threads", "2"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(j["target"].toObject()["name"].toString(), QStringLiteral("flagscale"));
        QVERIFY(j["target"].toObject()["fromCluster"].toBool());
        QVERIFY(j["target"].toObject()["reason"].toString().contains("mi250x"));
        QVERIFY(j["subsets"].toArray().size() >= 2);
        QVERIFY(j["counts"].toObject()["pruned"].toObject()["launcher"].toDouble() > 0);
        for (const auto &v : j["top"].toArray()) {
            QCOMPARE(v.toObject()["launchers"].toArray().first().toString(), QStringLiteral("flagscale"));
            QVERIFY(v.toObject()["idle"].toString().contains("mi250x (8 GPUs)"));
        }
        const Run table = runMemx({"search", "--cluster", kSamples + "/paper-20gpu-nvidia-amd.json", "--model",
                                   "llama2-7b", "--top", "2", "--target", "megatron"});
        QVERIFY2(table.code == 0, table.err.constData());
        QVERIFY2(table.out.contains("target megatron (chosen by the user"), table.out.constData());
        const Run bad = runMemx(
            {"search", "--cluster", kSamples + "/h100-8x.json", "--model", "gpt3-1.3b", "--target", "deepspeed"});
        QCOMPARE(bad.code, 2);
        QVERIFY(bad.err.contains("--target: expected megatron, flagscale or any"));
    }

    /// What-if from the command line: with the cluster before an edit as --baseline, its plans
    /// (the added H100 node idle) are one more subset.
    void baselineFromTheCommandLine()
    {
        QTemporaryDir dir;
        QFile in(kSamples + "/paper-20gpu-nvidia-amd.json");
        QVERIFY(in.open(QIODevice::ReadOnly));
        QJsonObject c = QJsonDocument::fromJson(in.readAll()).object();
        QJsonArray nodes = c["nodes"].toArray();
        QJsonObject h100 = nodes[2].toObject();
        h100["count"] = 2;
        nodes[2] = h100;
        c["nodes"] = nodes;
        const QString bigger = dir.filePath("plus-h100.json");
        QFile out(bigger);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QJsonDocument(c).toJson());
        out.close();
        const Run r = runMemx({"search", "--cluster", bigger, "--model", "llama2-7b", "--stages", "1", "--json",
                               "--top", "1", "--baseline", kSamples + "/paper-20gpu-nvidia-amd.json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonArray subsets = QJsonDocument::fromJson(r.out).object()["subsets"].toArray();
        QCOMPARE(subsets.first().toObject()["label"].toString(), QStringLiteral("the cluster before the edit"));
        QCOMPARE(subsets.first().toObject()["usedNodes"].toArray(), (QJsonArray {2, 0, 1}));
        QVERIFY(subsets.first().toObject()["configurations"].toInt() > 0);
    }

    /// --gpus FILE: a cluster naming a device of a custom GPU file (not in the catalogue) is
    /// refused without it; with it, search, predict and export plan with the file's figures.
    void customGpusFile()
    {
        QTemporaryDir dir;
        const QString gpus = QStringLiteral(MEMX_SOURCE_DIR "/sample_gpus/blackwell-mi355x.json");
        QFile gpuFile(gpus);
        QVERIFY(gpuFile.open(QIODevice::ReadOnly));
        double b200GiB = 0;
        for (const auto &d : QJsonDocument::fromJson(gpuFile.readAll()).object()["devices"].toArray())
            if (d.toObject()["id"].toString() == QStringLiteral("b200-sxm"))
                b200GiB = d.toObject()["memoryGiB"].toDouble();
        QVERIFY(b200GiB > 100);
        const QString cluster = dir.filePath("b200.json");
        QFile c(cluster);
        QVERIFY(c.open(QIODevice::WriteOnly));
        c.write(R"({"format": "memx.cluster/1", "name": "2 x 8 B200",
                    "nodes": [{"name": "b200", "gpu": "b200-sxm", "gpus": 8, "count": 2}],
                    "network": {"interNode": {"bandwidthGBps": 50, "latencyUs": 5}}})");
        c.close();

        const Run without = runMemx({"search", "--cluster", cluster, "--model", "llama2-7b"});
        QCOMPARE(without.code, 1);
        QVERIFY2(without.err.contains("b200-sxm") && without.err.contains("b200.json"), without.err.constData());

        const Run r
            = runMemx({"search", "--cluster", cluster, "--gpus", gpus, "--model", "llama2-7b", "--json", "--top", "1"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject top = QJsonDocument::fromJson(r.out).object()["top"].toArray()[0].toObject();
        const QJsonArray perGpu = top["estimate"].toObject()["gpus"].toArray();
        QCOMPARE(perGpu.size(), 16);
        for (const auto &g : perGpu) // usable memory: the file's figure, less nothing
            QCOMPARE(g.toObject()["capacityBytes"].toDouble(), b200GiB * 1024.0 * 1024.0 * 1024.0);

        const QString planPath = savePlan(dir, top["plan"].toObject());
        const Run p = runMemx(
            {"predict", "--cluster", cluster, "--gpus", gpus, "--model", "llama2-7b", "--plan", planPath, "--json"});
        QVERIFY2(p.code == 0, p.err.constData());
        QVERIFY(qAbs(QJsonDocument::fromJson(p.out).object()["iterationTimeMs"].toDouble() - top["T"].toDouble())
                < 1e-6 * top["T"].toDouble());
        const Run e = runMemx({"export", "--cluster", cluster, "--gpus", gpus, "--model", "llama2-7b", "--plan",
                               planPath, "--format", "megatron", "--out", dir.filePath("launch")});
        QVERIFY2(e.code == 0, e.err.constData());
        QVERIFY(QFile::exists(dir.filePath("launch/launch-node0.sh")));

        // A broken GPU file is named with its field.
        const QString broken = dir.filePath("broken.json");
        QFile b(broken);
        QVERIFY(b.open(QIODevice::WriteOnly));
        b.write(R"({"format": "memx.catalogue/1", "devices": [{"id": "x1", "name": "X1", "vendor": "X"}]})");
        b.close();
        const Run bad = runMemx({"search", "--cluster", cluster, "--gpus", broken, "--model", "llama2-7b"});
        QCOMPARE(bad.code, 1);
        QVERIFY2(bad.err.contains("broken.json") && bad.err.contains("memoryGiB"), bad.err.constData());
    }

    void usageErrors()
    {
        const QString cluster = kSamples + "/h100-8x.json";
        QCOMPARE(runMemx({"search", "--cluster", cluster}).code, 2); // --model missing
        const Run w = runMemx({"search", "--cluster", cluster, "--model", "gpt3-1.3b", "--weights", "1,x,0"});
        QCOMPARE(w.code, 2);
        QVERIFY(w.err.contains("--weights"));
        const Run rc = runMemx({"search", "--cluster", cluster, "--model", "gpt3-1.3b", "--recompute", "half"});
        QCOMPARE(rc.code, 2);
        QVERIFY(rc.err.contains("--recompute"));
        const Run missing = runMemx({"search", "--cluster", kSamples + "/nope.json", "--model", "gpt3-1.3b"});
        QCOMPARE(missing.code, 1);
    }

    void tableOutput()
    {
        const Run r
            = runMemx({"search", "--cluster", kSamples + "/h100-8x.json", "--model", "gpt3-1.3b", "--top", "2"});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY(r.out.contains("evaluated"));
        QVERIFY(r.out.contains("PP"));
        QVERIFY(r.err.isEmpty()); // no progress bar when stderr is not a terminal
    }
};

QTEST_GUILESS_MAIN(TestSearchCli)
#include "tst_searchcli.moc"
