// NodePropertyPanel and ModelPanel: edits reach the document as undo steps, invalid values are
// refused with an inline message, the panels follow undo/redo.
#include "memx/io/formats.h"
#include "memx/search/spacelists.h"
#include "memx/store/memorystore.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/documentstorage.h"
#include "memx/ui/modelpanel.h"
#include "memx/ui/nodepropertypanel.h"
#include "memx/ui/searchspacepanel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
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

    /// The project's models (as a Sailor import stores them) and model files are in the model
    /// combo; picking one applies it as an undo step; a refused file names the file and the field.
    void modelPanelProjectAndFileModels()
    {
        ClusterDocument doc;
        open(doc);
        memx::MemoryStore store;
        memx::Model sailor = memx::resolveModel("gpt3-1.3b");
        sailor.id = "sailor-opt-350m";
        sailor.name = "OPT-350M (Sailor)";
        sailor.shape.layers = 24;
        sailor.shape.hidden = 1024;
        sailor.shape.heads = 16;
        sailor.shape.kvGroups = 16;
        sailor.shape.ffnHidden = 4096;
        store.putModel(sailor);
        doc.reset(doc.cluster(), doc.model(), store);
        ModelPanel panel(&doc);
        QComboBox *combo = panel.presetCombo();
        const int idx = combo->findData(QStringLiteral("sailor-opt-350m"));
        QVERIFY(idx >= 0);
        QVERIFY(combo->itemText(idx).endsWith(QStringLiteral("(project)")));
        QVERIFY(combo->findData(QStringLiteral("llama2-7b")) >= 0); // presets stay
        QCOMPARE(combo->itemData(combo->count() - 1).toString(), QStringLiteral("custom"));
        combo->setCurrentIndex(idx);
        emit combo->activated(idx);
        QCOMPARE(doc.model(), sailor);
        QCOMPARE(panel.spin("layers")->value(), 24);
        // Editing its shape makes it custom, like a preset.
        panel.spin("layers")->setValue(12);
        QCOMPARE(doc.model().id, std::string("custom"));
        doc.undoStack()->undo();
        QCOMPARE(doc.model(), sailor);
        QCOMPARE(combo->currentData().toString(), QStringLiteral("sailor-opt-350m"));

        // A model file: applied, offered as "(file)", one undo step.
        QTemporaryDir dir;
        memx::Model mine = memx::resolveModel("llama2-7b");
        mine.id = "my-llama-30l";
        mine.name = "My Llama 30L";
        mine.shape.layers = 30;
        const QString good = dir.filePath(QStringLiteral("mine.json"));
        {
            QFile f(good);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray::fromStdString(memx::toJson(mine).dump(2)));
        }
        const int steps = doc.undoStack()->index();
        QVERIFY2(panel.loadModelFile(good), qPrintable(panel.errorText()));
        QCOMPARE(doc.model(), mine);
        QCOMPARE(doc.undoStack()->index(), steps + 1); // one undo step
        QCOMPARE(combo->currentData().toString(), QStringLiteral("my-llama-30l"));
        QVERIFY(combo->currentText().endsWith(QStringLiteral("(file)")));

        // A refused file: the file and the field are named, the document is unchanged.
        const QString bad = dir.filePath(QStringLiteral("bad-model.json"));
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            nlohmann::json j = memx::toJson(mine);
            j["shape"]["hidden"] = -5;
            f.write(QByteArray::fromStdString(j.dump(2)));
        }
        QVERIFY(!panel.loadModelFile(bad));
        QVERIFY2(panel.errorText().contains(QStringLiteral("bad-model.json")), qPrintable(panel.errorText()));
        QVERIFY2(panel.errorText().contains(QStringLiteral("hidden")), qPrintable(panel.errorText()));
        QCOMPARE(doc.model(), mine);
        QVERIFY(!panel.loadModelFile(dir.filePath(QStringLiteral("missing.json"))));
        QVERIFY(panel.errorText().contains(QStringLiteral("missing.json")));
        QCOMPARE(doc.model(), mine);
    }

    /// The search-space editor: lists parsed like memx search's options, refused input named,
    /// defaults as memx search's, the settings written into a planned search's request.
    void searchSpacePanel()
    {
        // memx::parseIntList, memx search's parser of --stages/--tp/--mbs/--vpp/--cp too.
        std::string error;
        QCOMPARE(*memx::parseIntList(" 4, 1 2,,2 ", 1, 64, &error), (std::vector<int> {1, 2, 4}));
        QVERIFY(memx::parseIntList("", 1, 64, &error)->empty());
        QVERIFY(!memx::parseIntList("1, 0", 1, 64, &error));
        QVERIFY2(error.find("\"0\"") != std::string::npos && error.find("1 to 64") != std::string::npos, error.c_str());
        QVERIFY(!memx::parseIntList("2.5", 1, 64, &error));
        QVERIFY(!memx::parseIntList("4x", 1, 64, &error));
        QCOMPARE(memx::spaceListBounds("mbs").hi, 1024);

        SearchSpacePanel panel;
        QSignalSpy changed(&panel, &SearchSpacePanel::changed);
        QVERIFY(panel.settings() == SearchSpaceSettings {});
        QCOMPARE(panel.budgetField()->value(), int(memx::kDefaultMaxBases));
        QVERIFY(panel.field("tp")->placeholderText().contains(QStringLiteral("1, 2, 4, 8")));
        panel.field("stages")->setText(QStringLiteral("1,2"));
        emit panel.field("stages")->editingFinished();
        QCOMPARE(changed.count(), 1);
        QCOMPARE(panel.settings().stagesPerGroup, (std::vector<int> {1, 2}));
        emit panel.field("stages")->editingFinished(); // no change: no signal
        QCOMPARE(changed.count(), 1);
        panel.field("mbs")->setText(QStringLiteral("1, 99999"));
        emit panel.field("mbs")->editingFinished();
        QCOMPARE(changed.count(), 1);
        QVERIFY2(panel.errorText().contains(QStringLiteral("Micro-batch sizes")), qPrintable(panel.errorText()));
        panel.field("mbs")->setText(QStringLiteral("2"));
        emit panel.field("mbs")->editingFinished();
        QCOMPARE(changed.count(), 2);
        QVERIFY(panel.errorText().isEmpty());
        for (auto m : {memx::RecomputeMethod::None, memx::RecomputeMethod::Selective, memx::RecomputeMethod::Full})
            panel.recomputeBox(m)->setChecked(false);
        QVERIFY(panel.errorText().contains(QStringLiteral("Recompute")));
        panel.recomputeBox(memx::RecomputeMethod::Full)->setChecked(true);
        QCOMPARE(panel.settings().recompute, (std::vector<memx::RecomputeMethod> {memx::RecomputeMethod::Full}));
        panel.budgetField()->setValue(20000);

        memx::PlannedSearchRequest request;
        memx::PlannedSearchOptions options;
        panel.settings().applyTo(request, options);
        const memx::SearchSpaceOptions defaults;
        QCOMPARE(request.search.space.stagesPerGroup, (std::vector<int> {1, 2}));
        QCOMPARE(request.search.space.microBatches, (std::vector<int> {2}));
        QCOMPARE(request.search.space.tensorParallel, defaults.tensorParallel); // left empty: the default
        QCOMPARE(request.search.space.recompute, (std::vector<memx::RecomputeMethod> {memx::RecomputeMethod::Full}));
        QCOMPARE(options.maxBases, uint64_t(20000));

        const int before = int(changed.count());
        panel.resetToDefaults();
        QVERIFY(panel.settings() == SearchSpaceSettings {});
        QCOMPARE(int(changed.count()), before + 1);
        QVERIFY(panel.field("stages")->text().isEmpty());
        QVERIFY(panel.recomputeBox(memx::RecomputeMethod::Selective)->isChecked());
    }
};

QTEST_MAIN(TestPanels)
#include "tst_panels.moc"
