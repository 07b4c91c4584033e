// Regression tests of issue 21 through the real binary: `memx profile remove` unblocks a project
// holding a record its reader refuses; `memx profile plan` on the 512-GPU sample stays within the
// search budget instead of growing until bad_alloc.
#include "memx/io/formats.h"
#include "memx/store/sqlitestore.h"

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

class TestHardeningCli : public QObject {
    Q_OBJECT

private slots:
    /// Issue 21 item 6: every group pruned for "layers" (more node groups than layers) said "try
    /// recompute"; the hint now names the reason.
    void noPlanHintNamesTheReason()
    {
        QTemporaryDir tmp;
        memx::Model model = memx::resolveModel("gpt3-1.3b");
        model.id = "two-layers";
        model.shape.layers = 2; // the 20-GPU sample has 3 node groups
        const QString modelFile = tmp.filePath("two-layers.json");
        memx::saveJson(memx::toJson(model), modelFile.toStdString());
        // Every group in use (no idle subsets, no mixed stages, the whole space): 3 stages at least.
        const Run r = runMemx({"search", "--cluster", kSamples + "/paper-20gpu-nvidia-amd.json", "--model", modelFile,
                               "--stages", "1", "--target", "any", "--idle-groups", "0", "--no-mixed-stages"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.out.contains("no plan fits this cluster; every pipeline has at least one stage per node group (or "
                                "per mixed pair of groups), and the cluster's 3 groups are more than the model's 2 "
                                "layers"),
                 r.out.constData());
        // With the slowest group idle (the default), two stages do.
        const Run idle = runMemx({"search", "--cluster", kSamples + "/paper-20gpu-nvidia-amd.json", "--model",
                                  modelFile, "--stages", "1", "--target", "any", "--no-mixed-stages"});
        QVERIFY2(idle.code == 0, idle.out.constData());
        QVERIFY2(idle.out.contains("with every group no plan fits"), idle.out.constData());
        QVERIFY(!r.out.contains("try recompute"));
    }

    /// Issue 21 item 4: `profile plan` on the shipped 512-GPU sample enumerated every group
    /// order (~400 MB/s until bad_alloc, rc 134). It now narrows to the search budget and says so.
    void planOn512GpusIsBounded()
    {
        const Run plan = runMemx(
            {"profile", "plan", "--cluster", kSamples + "/cross-vendor-512gpu.json", "--model", "llama2-7b", "--json"});
        QVERIFY2(plan.code == 0, plan.err.constData());
        QVERIFY2(plan.err.contains("note: space narrowed to 500000 base configurations"), plan.err.constData());
        QVERIFY(plan.json()["measuredKernels"].toArray().size() > 0);
        // A budget too small for any space is a clear refusal, not an abort.
        const Run tiny = runMemx({"profile", "plan", "--cluster", kSamples + "/cross-vendor-512gpu.json", "--model",
                                  "llama2-7b", "--max-bases", "0"});
        QCOMPARE(tiny.code, 2);
    }

    /// Issue 21 item 3: a record the reader refuses (written before imports were checked) locked
    /// the user out of the project and no command removed it. `profile list` names the record;
    /// `profile remove` deletes it without reading it; the rest of the project is kept.
    void removeUnblocksAPoisonedProject()
    {
        QTemporaryDir tmp;
        const QString project = tmp.filePath("p.memx");
        const QString csv = QStringLiteral(MEMX_SOURCE_DIR "/tests/data/profiles/small.csv");
        QCOMPARE(runMemx({"profile", "import", "--project", project, "--format", "csv", csv}).code, 0);
        {
            memx::SqliteStore store(project.toStdString(), false);
            memx::LayerProfile bad = store.profiles().profiles().front();
            bad.key.tp = 8; // a new record beside the good ones
            bad.layers[1].forwardMs = 1e10; // over the reader's 1e9 ms (Sailor's 1e7 s layer time)
            store.putProfile(bad);
        }
        const Run listed = runMemx({"profile", "list", "--project", project});
        QCOMPARE(listed.code, 1);
        const QString pointer = "/profiles/a100-80gb-sxm/toy-2l/tp8/mb1/seq2048";
        QVERIFY2(listed.err.contains((project + ": " + pointer
                                      + "/layers/1/forwardMs: expected a number from 0 to "
                                        "1e+09, found 10000000000.0")
                                         .toUtf8()),
                 listed.err.constData());
        const Run removed = runMemx({"profile", "remove", "--project", project, "--profile", pointer.mid(10)});
        QVERIFY2(removed.code == 0, removed.err.constData());
        QVERIFY(removed.out.contains("Removed profile a100-80gb-sxm/toy-2l/tp8/mb1/seq2048"));
        const Run after = runMemx({"profile", "list", "--project", project, "--json"});
        QVERIFY2(after.code == 0, after.err.constData());
        QCOMPARE(after.json()["profiles"].toArray().size(), 2); // the imported ones are still there
        // Removing what is not there changes nothing and says so.
        const Run again = runMemx({"profile", "remove", "--project", project, "--profile", pointer.mid(10)});
        QCOMPARE(again.code, 1);
        QVERIFY2(again.err.contains("no profile a100-80gb-sxm/toy-2l/tp8/mb1/seq2048 in this project"),
                 again.err.constData());
        const Run noRun = runMemx({"profile", "remove", "--project", project, "--run", "nope"});
        QCOMPARE(noRun.code, 1);
        QCOMPARE(runMemx({"profile", "remove", "--project", project, "--profile", "a/b/c"}).code, 2);
    }
};

QTEST_GUILESS_MAIN(TestHardeningCli)
#include "tst_hardeningcli.moc"
