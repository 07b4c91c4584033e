// NodePropertyPanel and ModelPanel: edits reach the document as undo steps, invalid values are
// refused with an inline message, the panels follow undo/redo.
#include "memx/io/formats.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/documentstorage.h"
#include "memx/ui/modelpanel.h"
#include "memx/ui/nodepropertypanel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QTest>
#include <QUndoStack>

using namespace memx::ui;

class TestPanels : public QObject {
    Q_OBJECT

private:
    static void open(ClusterDocument &doc)
    {
        doc.reset({}, memx::resolveModel("llama2-7b"));
        doc.load(QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters/paper-20gpu-nvidia-amd.json"), ClusterJsonStorage());
    }

private slots:
    void pagesFollowSelection()
    {
        ClusterDocument doc;
        open(doc);
        NodePropertyPanel panel(&doc);
        QCOMPARE(panel.currentPage(), 2); // nothing selected: default network
        QCOMPARE(panel.defaultBandwidthSpin()->value(), 25.0);
        panel.setSelection({1}, {});
        QCOMPARE(panel.currentPage(), 0);
        QCOMPARE(panel.nameEdit()->text(), QStringLiteral("mi250x"));
        QCOMPARE(panel.gpusPerNodeSpin()->value(), 8);
        QCOMPARE(panel.gpuCombo()->currentData().toString(), QStringLiteral("mi250x"));
        QVERIFY(doc.addLinkOverride("a100", "h100", {50, 2, {}}) == 0);
        panel.setSelection({}, {0});
        QCOMPARE(panel.currentPage(), 1);
        QCOMPARE(panel.linkBandwidthSpin()->value(), 50.0);
    }

    void groupEditsAreUndoable()
    {
        ClusterDocument doc;
        open(doc);
        NodePropertyPanel panel(&doc);
        panel.setSelection({0}, {});
        panel.countSpin()->setValue(3);
        QCOMPARE(doc.cluster().groups[0].count, 3);
        panel.gpusPerNodeSpin()->setValue(8);
        QCOMPARE(doc.cluster().totalGpus(), 3 * 8 + 8 + 4);
        const int gaudi = panel.gpuCombo()->findData(QStringLiteral("gaudi2"));
        QVERIFY(gaudi >= 0);
        panel.gpuCombo()->setCurrentIndex(gaudi);
        emit panel.gpuCombo()->activated(gaudi);
        QCOMPARE(doc.cluster().groups[0].gpu, std::string("gaudi2"));
        QCOMPARE(doc.undoStack()->count(), 3);
        doc.undoStack()->undo();
        QCOMPARE(panel.gpuCombo()->currentData().toString(), QStringLiteral("a100-40gb-sxm")); // panel follows undo
        doc.undoStack()->undo();
        QCOMPARE(panel.gpusPerNodeSpin()->value(), 4);
    }

    void invalidNameRefused()
    {
        ClusterDocument doc;
        open(doc);
        const memx::Cluster before = doc.cluster();
        NodePropertyPanel panel(&doc);
        panel.setSelection({2}, {});
        panel.nameEdit()->setText(QStringLiteral("a100-0")); // a node of group a100
        emit panel.nameEdit()->editingFinished();
        QVERIFY2(panel.errorText().contains(QLatin1String("used twice")), qPrintable(panel.errorText()));
        QCOMPARE(doc.cluster(), before);
        QCOMPARE(panel.nameEdit()->text(), QStringLiteral("h100")); // reverted
        panel.nameEdit()->setText(QStringLiteral("hopper"));
        emit panel.nameEdit()->editingFinished();
        QVERIFY(panel.errorText().isEmpty());
        QCOMPARE(doc.cluster().groups[2].name, std::string("hopper"));
    }

    void defaultNetworkEdit()
    {
        ClusterDocument doc;
        open(doc);
        NodePropertyPanel panel(&doc);
        panel.defaultBandwidthSpin()->setValue(50);
        panel.defaultBandwidthSpin()->setValue(100); // same field: merged
        QCOMPARE(doc.cluster().network.interNode.bandwidthGBps, 100.0);
        QCOMPARE(doc.undoStack()->count(), 1);
        doc.undoStack()->undo();
        QCOMPARE(panel.defaultBandwidthSpin()->value(), 25.0);
    }

    void modelPanelPresetAndCustom()
    {
        ClusterDocument doc;
        open(doc);
        ModelPanel panel(&doc);
        QCOMPARE(panel.presetCombo()->currentData().toString(), QStringLiteral("llama2-7b"));
        QCOMPARE(panel.spin("layers")->value(), 32);
        const int idx = panel.presetCombo()->findData(QStringLiteral("gpt3-1.3b"));
        QVERIFY(idx >= 0);
        panel.presetCombo()->setCurrentIndex(idx);
        emit panel.presetCombo()->activated(idx);
        QCOMPARE(doc.model().id, std::string("gpt3-1.3b"));
        QCOMPARE(panel.spin("hidden")->value(), 2048);

        // Shape edit -> custom model.
        panel.spin("layers")->setValue(30);
        QCOMPARE(doc.model().id, std::string("custom"));
        QCOMPARE(doc.model().shape.layers, 30);
        QCOMPARE(panel.presetCombo()->currentData().toString(), QStringLiteral("custom"));

        // Invalid draft (hidden not divisible by heads) is kept in the panel, not applied.
        const memx::Model valid = doc.model();
        panel.spin("heads")->setValue(7);
        QVERIFY2(panel.errorText().contains(QLatin1String("heads")), qPrintable(panel.errorText()));
        QCOMPARE(doc.model(), valid);
        QCOMPARE(panel.draft().shape.heads, 7);
        panel.spin("heads")->setValue(16); // fixed: applied
        QVERIFY(panel.errorText().isEmpty());
        QCOMPARE(doc.model().shape.heads, 16);

        panel.spin("globalBatch")->setValue(256);
        QCOMPARE(doc.model().training.globalBatch, 256);
        while (doc.undoStack()->canUndo())
            doc.undoStack()->undo();
        QCOMPARE(doc.model(), memx::resolveModel("llama2-7b"));
        QCOMPARE(panel.spin("layers")->value(), 32);
    }
};

QTEST_MAIN(TestPanels)
#include "tst_panels.moc"
