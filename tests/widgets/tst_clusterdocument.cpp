// ClusterDocument: every edit is undoable and restores the exact cluster; validation rejects bad
// values; drags merge; save -> reopen gives the same cluster.
#include "memx/io/formats.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/documentstorage.h"
#include "memx/ui/undocommands.h"
#include "memx/util/diagnostic.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

#include <functional>

using namespace memx::ui;

class TestClusterDocument : public QObject {
    Q_OBJECT

private:
    static QString sample(const char *name) { return QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters/") + name; }
    static memx::Model llama() { return memx::resolveModel("llama2-7b"); }
    void openSample(ClusterDocument &doc, const char *name = "paper-20gpu-nvidia-amd.json")
    {
        doc.reset({}, llama());
        doc.load(sample(name), ClusterJsonStorage());
    }

private slots:
    void loadSample()
    {
        ClusterDocument doc;
        QSignalSpy reset(&doc, &ClusterDocument::clusterReset);
        openSample(doc);
        QCOMPARE(reset.count(), 2);
        QCOMPARE(doc.cluster().groups.size(), size_t(3));
        QCOMPARE(doc.cluster().totalGpus(), 20); // 2x4 A100 + 8 MI250X + 4 H100
        QVERIFY(!doc.isModified());
        QVERIFY(doc.filePath().endsWith(QLatin1String("paper-20gpu-nvidia-amd.json")));
        // Loading must leave the cluster exactly as the core loader produces it.
        QCOMPARE(doc.cluster(), memx::loadCluster(sample("paper-20gpu-nvidia-amd.json").toStdString()));
    }

    void loadErrorKeepsDocument()
    {
        ClusterDocument doc;
        openSample(doc);
        const memx::Cluster before = doc.cluster();
        try {
            doc.load(QStringLiteral(MEMX_SOURCE_DIR "/tests/data/broken/cluster-unknown-gpu.json"),
                     ClusterJsonStorage());
            QFAIL("expected LoadError");
        } catch (const memx::LoadError &e) {
            QVERIFY(!e.diagnostics().empty());
            QVERIFY2(e.diagnostics().front().pointer.find("/nodes/") == 0, e.what());
        }
        QCOMPARE(doc.cluster(), before);
    }

    void addNodeUndoRedo()
    {
        ClusterDocument doc;
        openSample(doc);
        const memx::Cluster before = doc.cluster();
        QSignalSpy added(&doc, &ClusterDocument::nodeGroupAdded);
        QSignalSpy removed(&doc, &ClusterDocument::nodeGroupRemoved);
        const int idx = doc.addNodeGroup("gaudi2", QPointF(100, 300), 8);
        QCOMPARE(idx, 3);
        QCOMPARE(added.count(), 1);
        QCOMPARE(added.front().front().toInt(), 3);
        const memx::Cluster after = doc.cluster();
        QCOMPARE(after.groups.size(), size_t(4));
        QCOMPARE(after.groups[3].name, std::string("gaudi2"));
        QCOMPARE(after.groups[3].x, 100.0);
        QCOMPARE(after.totalGpus(), 28);
        QVERIFY(after.deviceIndex("gaudi2") >= 0); // the device travels with the cluster
        QVERIFY(doc.isModified());

        doc.undoStack()->undo();
        QCOMPARE(removed.count(), 1);
        QCOMPARE(doc.cluster(), before); // devices list pruned back too
        QVERIFY(!doc.isModified());
        doc.undoStack()->redo();
        QCOMPARE(doc.cluster(), after);

        // A second group of the same GPU gets a fresh name.
        QCOMPARE(doc.addNodeGroup("gaudi2", QPointF(0, 0)), 4);
        QCOMPARE(doc.cluster().groups[4].name, std::string("gaudi2_2"));
        QCOMPARE(doc.addNodeGroup("no-such-gpu", QPointF(0, 0)), -1);
    }

    void moveMergesOneDrag()
    {
        ClusterDocument doc;
        openSample(doc);
        const memx::Cluster before = doc.cluster();
        // One drag: three mouse moves with drag id 7 -> one undo step.
        for (int step = 1; step <= 3; ++step)
            doc.moveNodeGroups({0, 2}, {QPointF(10 * step, 5), QPointF(520 + 10 * step, 5)}, 7);
        QCOMPARE(doc.undoStack()->count(), 1);
        QCOMPARE(doc.cluster().groups[0].x, 30.0);
        QCOMPARE(doc.cluster().groups[2].x, 550.0);
        // A second drag is its own step.
        doc.moveNodeGroups({0, 2}, {QPointF(0, 100), QPointF(0, 200)}, 8);
        QCOMPARE(doc.undoStack()->count(), 2);
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster().groups[0].x, 30.0);
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster(), before);
    }

    void removeUndoRestoresLinks()
    {
        ClusterDocument doc;
        openSample(doc, "paper-20gpu-mixed-consumer.json");
        const memx::Cluster before = doc.cluster();
        const int rtx = doc.groupIndexOf("rtx4090");
        QVERIFY(rtx >= 0);
        QVERIFY(!before.network.overrides.empty());
        doc.removeNodeGroups({rtx});
        for (const auto &o : doc.cluster().network.overrides) // no link may point at a removed node
            QVERIFY2(o.a != "rtx4090" && o.b != "rtx4090", o.a.c_str());
        QCOMPARE(doc.cluster().groups.size(), before.groups.size() - 1);
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster(), before);
        doc.undoStack()->redo();
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster(), before);

        // Remove several at once (unsorted, duplicated) = one step.
        doc.removeNodeGroups({2, 0, 2});
        QCOMPARE(doc.undoStack()->count(), 1); // replaces the undone step
        QCOMPARE(doc.undoStack()->index(), 1);
        QCOMPARE(doc.cluster().groups.size(), before.groups.size() - 2);
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster(), before);
    }

    void changeGroupValidation_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("expectedError");
        QTest::newRow("0 GPUs") << "gpus"
                                << "0"
                                << "1 to 64";
        QTest::newRow("65 GPUs") << "gpus"
                                 << "65"
                                 << "1 to 64";
        QTest::newRow("0 nodes") << "count"
                                 << "0"
                                 << "node count";
        QTest::newRow("empty name") << "name"
                                    << ""
                                    << "non-empty";
        QTest::newRow("duplicate name") << "name"
                                        << "mi250x"
                                        << "duplicate node name";
        QTest::newRow("clashes with expanded node") << "name"
                                                    << "a100-1"
                                                    << "used twice";
        QTest::newRow("unknown gpu") << "gpu"
                                     << "xyz-9000"
                                     << "expected a device id from the catalogue";
        QTest::newRow("zero link bandwidth") << "intra"
                                             << "0"
                                             << "bandwidth";
    }

    void changeGroupValidation()
    {
        QFETCH(QString, field);
        QFETCH(QString, value);
        QFETCH(QString, expectedError);
        ClusterDocument doc;
        openSample(doc);
        const memx::Cluster before = doc.cluster();
        memx::NodeGroup g = before.groups[2]; // h100, count 1
        if (field == QLatin1String("gpus"))
            g.gpusPerNode = value.toInt();
        else if (field == QLatin1String("count"))
            g.count = value.toInt();
        else if (field == QLatin1String("name"))
            g.name = value.toStdString();
        else if (field == QLatin1String("gpu"))
            g.gpu = value.toStdString();
        else
            g.intraLink = memx::Link {value.toDouble(), 1.0, {}};
        QString error;
        QVERIFY(!doc.changeNodeGroup(2, g, ClusterDocument::GroupField::All, &error));
        QVERIFY2(error.contains(expectedError), qPrintable(error));
        QCOMPARE(doc.cluster(), before);
        QCOMPARE(doc.undoStack()->count(), 0);
    }

    void editorsRefuseExactlyWhatTheReaderRefuses()
    {
        // One validation: the editor's verdict on an edit equals the cluster reader's verdict on a
        // file holding the edited cluster (memx::validateCluster), for accepted and refused edits.
        ClusterDocument doc;
        openSample(doc);
        const memx::Cluster before = doc.cluster();
        struct Edit {
            const char *what;
            std::function<void(memx::NodeGroup &)> apply;
        };
        const std::vector<Edit> edits = {
            {"space in name (quoted by every export)", [](memx::NodeGroup &g) { g.name = "my node"; }},
            {"64 GPUs per node", [](memx::NodeGroup &g) { g.gpusPerNode = 64; }},
            {"100000 nodes (over the 8192-node cluster limit)", [](memx::NodeGroup &g) { g.count = 100000; }},
            {"zero intra-node latency",
             [](memx::NodeGroup &g) {
                 g.intraLink = memx::Link {100.0, 0.0, {}};
             }},
            {"negative intra-node latency",
             [](memx::NodeGroup &g) {
                 g.intraLink = memx::Link {100.0, -1.0, {}};
             }},
        };
        for (const Edit &e : edits) {
            memx::NodeGroup g = before.groups[2];
            e.apply(g);
            memx::Cluster file = before;
            file.groups[2] = g;
            memx::Diagnostics reader;
            memx::validateCluster(file, reader);
            QString error;
            const bool accepted = doc.changeNodeGroup(2, g, ClusterDocument::GroupField::All, &error);
            QVERIFY2(accepted == reader.empty(), e.what);
            if (accepted)
                doc.undoStack()->undo();
            else
                QVERIFY2(error.contains(QString::fromStdString(reader.items().front().message)), qPrintable(error));
            QCOMPARE(doc.cluster(), before);
        }
        // The cluster-size limit is the reader's too (its message names the limit).
        memx::NodeGroup huge = before.groups[2];
        huge.count = 100000;
        QString error;
        QVERIFY(!doc.changeNodeGroup(2, huge, ClusterDocument::GroupField::All, &error));
        QVERIFY2(error.contains(QStringLiteral("8192 nodes")), qPrintable(error));
    }

    void changeGroupAndRenameFollowsLinks()
    {
        ClusterDocument doc;
        openSample(doc, "paper-20gpu-mixed-consumer.json");
        const memx::Cluster before = doc.cluster();
        const int rtx = doc.groupIndexOf("rtx4090");
        memx::NodeGroup g = before.groups[size_t(rtx)];
        g.name = "consumer";
        QString error;
        QVERIFY2(doc.changeNodeGroup(rtx, g, ClusterDocument::GroupField::Name, &error), qPrintable(error));
        int renamed = 0;
        for (const auto &o : doc.cluster().network.overrides) {
            QVERIFY(o.a != "rtx4090" && o.b != "rtx4090");
            renamed += (o.a == "consumer") + (o.b == "consumer");
        }
        int original = 0;
        for (const auto &o : before.network.overrides)
            original += (o.a == "rtx4090") + (o.b == "rtx4090");
        QCOMPARE(renamed, original);
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster(), before);
    }

    void propertyEditsMergePerField()
    {
        ClusterDocument doc;
        openSample(doc);
        memx::NodeGroup g = doc.cluster().groups[0];
        for (int n = 5; n <= 8; ++n) { // spin box stepping 4 -> 8 = one step
            g.gpusPerNode = n;
            QVERIFY(doc.changeNodeGroup(0, g, ClusterDocument::GroupField::GpusPerNode));
        }
        QCOMPARE(doc.undoStack()->count(), 1);
        // The History entry says what changed (the merged drag: 4 -> 8); the Edit menu stays short.
        const QString name = QString::fromStdString(g.name);
        QCOMPARE(doc.undoStack()->command(0)->text(), name + QStringLiteral(": GPUs per node 4 \u2192 8"));
        QCOMPARE(doc.undoStack()->undoText(), QStringLiteral("Change node group ") + name);
        g.count = 3;
        QVERIFY(doc.changeNodeGroup(0, g, ClusterDocument::GroupField::Count));
        QCOMPARE(doc.undoStack()->count(), 2);
        QCOMPARE(doc.undoStack()->command(1)->text(), name + QStringLiteral(": nodes 2 \u2192 3"));
        QCOMPARE(doc.cluster().totalGpus(), 3 * 8 + 8 + 4);
        doc.undoStack()->undo();
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster().groups[0].gpusPerNode, 4);
        QCOMPARE(doc.cluster().groups[0].count, 2);
    }

    /// History texts of network and model edits name the field and both values.
    void historySaysWhatChanged()
    {
        ClusterDocument doc;
        openSample(doc);
        memx::Link link = doc.cluster().network.interNode;
        const double before = link.latencyUs;
        link.latencyUs = before + 7;
        QVERIFY(doc.setDefaultLink(link));
        QCOMPARE(doc.undoStack()->command(doc.undoStack()->count() - 1)->text(),
                 QStringLiteral("Change default network: default link latency %1 \u2192 %2 \u00b5s")
                     .arg(before)
                     .arg(before + 7));
        memx::Model m = doc.model();
        m.id = "custom";
        m.shape.layers = 30;
        m.training.globalBatch = 256;
        const int layers = doc.model().shape.layers, batch = doc.model().training.globalBatch;
        QVERIFY(doc.setModel(m));
        QCOMPARE(
            doc.undoStack()->command(doc.undoStack()->count() - 1)->text(),
            QStringLiteral("Change model: layers %1 \u2192 30; global batch %2 \u2192 256").arg(layers).arg(batch));
        QCOMPARE(doc.undoStack()->undoText(), QStringLiteral("Change model"));
        QCOMPARE(describeModelChange(memx::resolveModel("llama2-7b"), memx::resolveModel("gpt3-1.3b")),
                 QStringLiteral("Llama-2 7B \u2192 GPT-3 XL 1.3B"));
    }

    void linkOverrides()
    {
        ClusterDocument doc;
        openSample(doc);
        const memx::Cluster before = doc.cluster();
        QString error;
        QCOMPARE(doc.addLinkOverride("a100", "h100", {50, 2, {}}, &error), 0);
        QCOMPARE(doc.cluster().network.overrides.size(), size_t(1));
        // Node name of an expanded group is a valid end too.
        QCOMPARE(doc.addLinkOverride("a100-1", "mi250x", {12.5, 3, {}}, &error), 1);
        QCOMPARE(doc.addLinkOverride("h100", "a100", {50, 2, {}}, &error), -1); // already connected
        QVERIFY(error.contains(QLatin1String("already")));
        // A group linked to itself sets the links among its own nodes: the reader accepts it, so does the editor.
        QCOMPARE(doc.addLinkOverride("a100", "a100", {50, 2, {}}, &error), 2);
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster().network.overrides.size(), size_t(2));
        QCOMPARE(doc.addLinkOverride("a100", "nope", {50, 2, {}}, &error), -1);
        QCOMPARE(doc.addLinkOverride("a100", "mi250x", {0, 2, {}}, &error), -1);

        // Default links and node-pair lookup use the new override.
        const auto nodes = doc.cluster().nodes();
        QCOMPARE(doc.cluster().interNodeLink(nodes[1], nodes[2]).bandwidthGBps, 12.5);
        QCOMPARE(doc.cluster().interNodeLink(nodes[0], nodes[2]).bandwidthGBps, 25.0);

        QVERIFY(doc.changeLinkOverride(0, {100, 1, {}}, 1));
        QVERIFY(doc.changeLinkOverride(0, {150, 1, {}}, 1)); // merged with the previous
        QVERIFY(!doc.changeLinkOverride(0, {-1, 1, {}}, 1, &error));
        QCOMPARE(doc.cluster().network.overrides[0].link.bandwidthGBps, 150.0);
        QVERIFY(doc.setDefaultLink({50, 4, {}}));
        QCOMPARE(doc.undoStack()->count(), 4);

        // Shrinking a100 to one node drops the link to a100-1 (that node is gone).
        memx::NodeGroup g = doc.cluster().groups[0];
        g.count = 1;
        QVERIFY(doc.changeNodeGroup(0, g, ClusterDocument::GroupField::Count));
        QCOMPARE(doc.cluster().network.overrides.size(), size_t(1));
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster().network.overrides.size(), size_t(2));

        doc.removeLinkOverrides({0, 1});
        QVERIFY(doc.cluster().network.overrides.empty());
        while (doc.undoStack()->canUndo())
            doc.undoStack()->undo();
        QCOMPARE(doc.cluster(), before);
    }

    void modelEdits()
    {
        ClusterDocument doc;
        openSample(doc);
        QSignalSpy changed(&doc, &ClusterDocument::modelChanged);
        memx::Model m = doc.model();
        m.shape.heads = 33; // 4096 / 33 is not an integer head size
        QString error;
        QVERIFY(!doc.setModel(m, 0, &error));
        QVERIFY2(error.contains(QLatin1String("heads")), qPrintable(error));
        QCOMPARE(changed.count(), 0);
        m = doc.model();
        m.training.globalBatch = 512;
        QVERIFY2(doc.setModel(m, 0, &error), qPrintable(error));
        QCOMPARE(changed.count(), 1);
        QCOMPARE(doc.model().training.globalBatch, 512);
        doc.undoStack()->undo();
        QCOMPARE(doc.model(), llama());
    }

    void saveReopenCompare()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        ClusterDocument doc;
        openSample(doc, "paper-20gpu-mixed-consumer.json");
        QVERIFY(doc.addNodeGroup("mi300x", QPointF(40, 420), 8) >= 0);
        QVERIFY(doc.addLinkOverride("mi300x", "a100", {40, 3, {}}) >= 0);
        memx::NodeGroup g = doc.cluster().groups[0];
        g.intraLink = memx::Link {300, 1.5, {}};
        g.count = 2;
        QVERIFY(doc.changeNodeGroup(0, g));
        doc.moveNodeGroups({1}, {QPointF(-75.5, 12.25)}, 1);
        QVERIFY(doc.isModified());
        const QString path = dir.filePath(QStringLiteral("edited.json"));
        QSignalSpy modified(&doc, &ClusterDocument::modifiedChanged);
        doc.save(path, ClusterJsonStorage());
        QVERIFY(!doc.isModified());
        QCOMPARE(modified.count(), 1);
        QCOMPARE(doc.filePath(), path);

        ClusterDocument reopened;
        reopened.load(path, ClusterJsonStorage());
        QCOMPARE(reopened.cluster(), doc.cluster());
        QCOMPARE(memx::loadCluster(path.toStdString()), doc.cluster());
    }

    void saveRefusesUnloadableCluster()
    {
        QTemporaryDir dir;
        ClusterDocument doc;
        openSample(doc);
        doc.removeNodeGroups({0, 1, 2}); // a cluster file needs at least one node group
        const QString path = dir.filePath(QStringLiteral("empty.json"));
        QVERIFY_THROWS_EXCEPTION(memx::LoadError, doc.save(path, ClusterJsonStorage()));
        QVERIFY(!QFile::exists(path));
        QVERIFY(doc.isModified());
    }
};

QTEST_MAIN(TestClusterDocument)
#include "tst_clusterdocument.moc"
