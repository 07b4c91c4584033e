// One engine behind the CLI and the GUI (issue 19): `memx search --project P` and the workbench on
// the same project and cluster show the same top 10 with the same learned figures (spreads, risk of
// OOM, EXTRAPOLATING), both being the core's planned search; the learned T of the top plan agrees
// with `memx predict --project` (the full estimate's features: an independent path); the GUI's
// Train Predictor stores what `memx train` stores, in the background, and cancels cleanly.
#include "memx/engine/plannedsearch.h"
#include "memx/io/formats.h"
#include "memx/predict/projectpredictor.h"
#include "memx/search/objective.h"
#include "memx/store/sqlitestore.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/mainwindow.h"
#include "memx/ui/planresults.h"
#include "memx/ui/plantablemodel.h"
#include "memx/ui/resultspanel.h"
#include "memx/ui/searchjob.h"

#include <QCheckBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace memx::ui;

namespace {
constexpr int kTimeoutMs = 600000;

struct Run {
    int code = -1;
    QByteArray out, err;
    QJsonObject json() const { return QJsonDocument::fromJson(out).object(); }
};

Run memxCli(const QStringList &args)
{
    QProcess p;
    p.start(QStringLiteral(MEMX_CLI_PATH), args);
    p.waitForFinished(kTimeoutMs);
    return Run {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

/// A 12-GPU NVIDIA + AMD cluster (one 4-GPU node each of A100 40GB, MI250X, H100): heterogeneous,
/// small enough for a test search with the learned predictor.
memx::Cluster testCluster()
{
    memx::Cluster c = memx::loadCluster(MEMX_SOURCE_DIR "/sample_clusters/paper-20gpu-nvidia-amd.json");
    c.name = "engine test 12 GPUs";
    for (memx::NodeGroup &g : c.groups) {
        g.count = 1;
        g.gpusPerNode = 4;
    }
    return c;
}

/// The window's rank-1..k plans (table rows by rank).
QVector<PlanPoint> topRows(const PlanTableModel *model, int k)
{
    QVector<PlanPoint> out(k);
    for (int row = 0; row < model->rowCount(); ++row) {
        const int rank = model->rankOfRow(row);
        if (rank >= 1 && rank <= k)
            out[rank - 1] = model->plans()[row];
    }
    return out;
}
} // namespace

class TestPlannedSearchGui : public QObject {
    Q_OBJECT

    QTemporaryDir mTmp;
    QString mCluster, mProject, mUntrained;

private slots:
    void initTestCase()
    {
        QVERIFY(mTmp.isValid());
        mCluster = mTmp.filePath("cluster.json");
        memx::saveJson(memx::toJson(testCluster()), mCluster.toStdString());
        mUntrained = mTmp.filePath("untrained.memx");
        mProject = mTmp.filePath("trained.memx");
        // Runs of one-stage-per-group plans (the fastest and a spread), so deeper pipelines extrapolate.
        const Run sim
            = memxCli({"profile", "run-simulated", "--project", mUntrained, "--cluster", mCluster, "--model",
                       "llama2-7b", "--top", "6", "--spread", "14", "--stages", "1", "--threads", "2", "--json"});
        QVERIFY2(sim.code == 0, sim.err.constData());
        QVERIFY(sim.json()["runs"].toInt() >= 8);
        QVERIFY(QFile::copy(mUntrained, mProject));
        const Run train
            = memxCli({"train", "--project", mProject, "--folds", "0", "--ensemble", "3", "--rounds", "40"});
        QVERIFY2(train.code == 0, train.err.constData());
    }

    void cliAndGuiShowTheSameTop10()
    {
        const QStringList search
            = {"search",    "--project", mProject, "--cluster", mCluster,    "--model", "llama2-7b",
               "--weights", "1,0.5,0.5", "--top",  "10",        "--threads", "2",       "--json"};
        const Run cli = memxCli(search + QStringList {"--no-cache"});
        QVERIFY2(cli.code == 0, cli.err.constData());
        const QJsonObject cj = cli.json();
        QVERIFY(cj["predictor"].toString().startsWith("learned"));
        const QJsonArray top = cj["top"].toArray();
        QCOMPARE(top.size(), 10);

        MainWindow w(false);
        w.setInteractive(false);
        w.results()->setWeights({1.0, 0.5, 0.5});
        QSignalSpy shown(w.results(), &ResultsPanel::resultsShown);
        QVERIFY2(w.openFile(mProject), qPrintable(w.lastError()));
        QVERIFY(w.searchProject() && w.searchProject()->predictor);
        QVERIFY(shown.wait(kTimeoutMs));
        const PlanResults &results = w.results()->results();
        QVERIFY(results.isLearned());
        QCOMPARE(QString::fromStdString(results.outcome()->result.predictor), cj["predictor"].toString());
        QCOMPARE(results.outcome()->result.evaluated, cj["counts"].toObject()["evaluated"].toVariant().toULongLong());

        const QVector<PlanPoint> rows = topRows(w.results()->tableModel(), 10);
        size_t extrapolatingShown = 0;
        for (int k = 0; k < 10; ++k) {
            const QJsonObject c = top[k].toObject();
            const PlanPoint &g = rows[k];
            QCOMPARE(PlanResults::indexOf(g.id), uint32_t(c["index"].toInt()));
            QCOMPARE(g.timeMs, c["T"].toDouble());
            QCOMPARE(g.peakMemoryFraction, c["M"].toDouble());
            QCOMPARE(g.imbalance, c["B"].toDouble());
            QVERIFY(qAbs(g.score - c["score"].toDouble()) <= 1e-12 * c["score"].toDouble());
            QVERIFY(g.learned);
            QCOMPARE(g.timeSpread, c["timeSpread"].toDouble());
            QCOMPARE(g.memorySpread, c["memorySpread"].toDouble());
            QCOMPARE(g.riskOfOom, c["oomRisk"].toBool());
            QCOMPARE(g.extrapolating, c["extrapolating"].toBool());
            QVERIFY(g.summary.startsWith(c["summary"].toString()));
            // Learned, not analytic: T differs from the analytic estimate of the same plan.
            QVERIFY(g.timeMs != c["estimate"].toObject()["iterationTimeMs"].toDouble());
        }
        for (const PlanPoint &p : w.results()->tableModel()->plans())
            extrapolatingShown += p.extrapolating;
        QVERIFY2(extrapolatingShown > 0, "expected plans outside the training runs among the shown ones");

        // The table says it: spreads and flags in their columns, visible for a learned result.
        const PlanTableModel *model = w.results()->tableModel();
        const int row1 = model->rowOfPlan(rows[0].id);
        QVERIFY(model->index(row1, PlanTableModel::SpreadColumn).data().toString().contains(QChar(0x00b1)));
        QVERIFY(!w.results()->tableView()->isColumnHidden(PlanTableModel::SpreadColumn));
        for (int row = 0; row < model->rowCount(); ++row)
            if (model->plans()[row].extrapolating) {
                QVERIFY(model->index(row, PlanTableModel::FlagsColumn).data().toString().contains("EXTRAPOLATING"));
                // The detail says why, as `memx predict` would.
                const PlanDetail d = results.detail(model->plans()[row].id);
                QVERIFY(d.learnedLine.contains("EXTRAPOLATING"));
                QVERIFY(!d.extrapolationReason.isEmpty());
                QVERIFY(d.html.contains("EXTRAPOLATING"));
                break;
            }
        QVERIFY(w.results()->selectedDetail().learnedLine.startsWith("Learned: T"));

        // The learned T of the top plan, independently: `memx predict --project` on its plan (the
        // full estimate's features rather than the search's fast path).
        const QString planFile = mTmp.filePath("top1.json");
        memx::saveJson(
            nlohmann::json::parse(QJsonDocument(top[0].toObject()["plan"].toObject()).toJson().toStdString()),
            planFile.toStdString());
        const Run predict = memxCli({"predict", "--project", mProject, "--cluster", mCluster, "--model", "llama2-7b",
                                     "--plan", planFile, "--json"});
        QVERIFY2(predict.code == 0, predict.err.constData());
        const QJsonObject learned = predict.json()["learned"].toObject();
        QVERIFY(qAbs(learned["iterationTimeMs"].toDouble() / rows[0].timeMs - 1.0) < 1e-3);
        QCOMPARE(learned["extrapolating"].toBool(), rows[0].extrapolating);
        QCOMPARE(learned["oomRisk"].toBool(), rows[0].riskOfOom);

        // The core function as the CLI calls it, in this process: the same ten.
        memx::SqliteStore store(mProject.toStdString(), false);
        const memx::SearchProject context = memx::loadSearchProject(store);
        memx::SearchRequest req;
        req.cluster = memx::loadCluster(mCluster.toStdString());
        req.model = *store.model("llama2-7b");
        req.threads = 2;
        memx::PlannedSearchOptions noCache;
        noCache.useCache = false;
        memx::PlannedSearchRequest preq; // the cluster's default target, as both front ends
        preq.search = req;
        const memx::PlannedSearch core = memx::plannedSearch(preq, &context, nullptr, noCache);
        const std::vector<uint32_t> coreTop = memx::rank(core.result, memx::ObjectiveWeights {1, 0.5, 0.5}, 10);
        for (int k = 0; k < 10; ++k) {
            QCOMPARE(coreTop[size_t(k)], uint32_t(top[k].toObject()["index"].toInt()));
            QCOMPARE(memx::planFigures(core.result, coreTop[size_t(k)]).timeMs, rows[k].timeMs);
        }

        // The GUI stored its caches in the document's project data; the CLI with its cache now
        // computes and stores the same figures in the project file.
        QVERIFY(!w.document()->projectData().blobKeys(memx::kSearchResultBlobKind).empty());
        const Run cached = memxCli(search);
        QVERIFY2(cached.code == 0, cached.err.constData());
        QCOMPARE(cached.json()["top"].toArray().at(0).toObject()["T"].toDouble(), rows[0].timeMs);
    }

    /// The project's calibration survives open and save, and the workbench's search applies it as
    /// `memx search --project` does (the device figures of the searched cluster).
    void calibrationIsKeptAndApplied()
    {
        const QString calibrated = mTmp.filePath("calibrated.memx");
        QVERIFY(QFile::copy(mUntrained, calibrated));
        memx::Calibration cal;
        memx::DeviceCalibration dev;
        dev.device = "mi250x";
        dev.gemmEfficiency = 0.37;
        cal.devices.push_back(dev);
        {
            memx::SqliteStore store(calibrated.toStdString(), false);
            memx::saveCalibration(store, cal);
        }
        MainWindow w(false);
        w.setInteractive(false);
        QSignalSpy shown(w.results(), &ResultsPanel::resultsShown);
        QVERIFY2(w.openFile(calibrated), qPrintable(w.lastError()));
        QVERIFY(w.searchProject()->calibration.has_value());
        QVERIFY(shown.wait(kTimeoutMs));
        memx::Cluster expected = w.document()->cluster();
        memx::CostOptions cost;
        memx::applyCalibration(cal, expected, cost);
        const auto outcome = w.results()->results().outcome();
        QVERIFY(outcome->calibrated);
        QVERIFY(outcome->request.search.cluster == expected);
        QVERIFY(!(outcome->request.search.cluster == w.document()->cluster()));
        const QString saved = mTmp.filePath("calibrated-saved.memx");
        QVERIFY2(w.saveTo(saved), qPrintable(w.lastError()));
        memx::SqliteStore reopened(saved.toStdString(), false);
        const auto back = memx::loadCalibration(reopened);
        QVERIFY(back.has_value());
        QCOMPARE(back->devices.size(), size_t(1));
        QCOMPARE(*back->devices.front().gemmEfficiency, 0.37);
    }

    /// Issue 17 item 5: the results bar's FSDP box adds Megatron-FSDP's sharding levels to the
    /// workbench's search (the same space as `memx search --dp-sharding none,optim,optim_grads,
    /// optim_grads_params`); such plans are single-stage and say fsdp= in the table.
    void fsdpBoxSearchesMegatronFsdp()
    {
        MainWindow w(false);
        w.setInteractive(false);
        QSignalSpy shown(w.results(), &ResultsPanel::resultsShown);
        QVERIFY2(w.openFile(QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters/h100-8x.json")),
                 qPrintable(w.lastError()));
        QVERIFY(shown.wait(kTimeoutMs));
        const auto fsdpPlans = [&] {
            const memx::SearchResult &r = w.results()->results().outcome()->result;
            size_t n = 0;
            for (size_t i = 0; i < r.size(); ++i) {
                const memx::Plan plan = r.materialize(i);
                if (plan.fsdp != memx::DpSharding::None) {
                    ++n;
                    if (plan.pp() != 1)
                        return size_t(0);
                }
            }
            return n;
        };
        QCOMPARE(fsdpPlans(), size_t(0));
        auto *box = w.results()->findChild<QCheckBox *>(QStringLiteral("fsdp"));
        QVERIFY(box);
        shown.clear();
        box->setChecked(true);
        QVERIFY(shown.wait(kTimeoutMs));
        const std::vector<memx::DpSharding> &levels = w.results()->results().outcome()->result.dpShardingChoices;
        QCOMPARE(levels.size(), size_t(4));
        QVERIFY(fsdpPlans() > 0);
        bool shownInTable = false;
        for (const PlanPoint &p : w.results()->tableModel()->plans())
            shownInTable = shownInTable || p.summary.contains("fsdp=optim_grads");
        QVERIFY(shownInTable);
    }

    void trainPredictorRunsTheCoreTraining()
    {
        MainWindow w(false);
        w.setInteractive(false);
        QSignalSpy shown(w.results(), &ResultsPanel::resultsShown);
        QVERIFY2(w.openFile(mUntrained), qPrintable(w.lastError()));
        QVERIFY(w.searchProject() && !w.searchProject()->predictor);
        QVERIFY(shown.wait(kTimeoutMs));
        QVERIFY(!w.results()->results().isLearned());
        QVERIFY(w.trainAction()->isEnabled());

        // Cancelled: the project keeps no predictor and is not modified.
        QSignalSpy trained(&w, &MainWindow::trainingFinished);
        w.trainPredictor();
        QVERIFY(w.isTraining());
        QVERIFY(!w.trainAction()->isEnabled());
        w.cancelTraining();
        QVERIFY(trained.wait(kTimeoutMs));
        QCOMPARE(trained.back().at(0).toBool(), false);
        QCOMPARE(trained.back().at(1).toString(), QStringLiteral("cancelled"));
        QVERIFY(!memx::loadPredictor(w.document()->projectData()));
        QVERIFY(!w.document()->isModified());

        // Trained: what `memx train` (default options) stores, bit for bit; the next search uses it.
        shown.clear();
        w.trainPredictor();
        QVERIFY(trained.wait(kTimeoutMs));
        QVERIFY2(trained.back().at(0).toBool(), qPrintable(trained.back().at(1).toString()));
        QVERIFY(w.document()->isModified());
        const auto gui = memx::loadPredictor(w.document()->projectData());
        QVERIFY(gui);
        const QString copy = mTmp.filePath("cli-trained.memx");
        QVERIFY(QFile::copy(mUntrained, copy));
        const Run train = memxCli({"train", "--project", copy, "--json"});
        QVERIFY2(train.code == 0, train.err.constData());
        memx::SqliteStore store(copy.toStdString(), false);
        QCOMPARE(gui->digest(), memx::loadPredictor(store)->digest());
        QCOMPARE(memx::predictorMetrics(w.document()->projectData()).dump(), memx::predictorMetrics(store).dump());
        QVERIFY(shown.wait(kTimeoutMs));
        QVERIFY(w.results()->results().isLearned());
        QCOMPARE(w.results()->results().outcome()->result.predictor, gui->describe());
    }
};

QTEST_MAIN(TestPlannedSearchGui)
#include "tst_plannedsearchgui.moc"
