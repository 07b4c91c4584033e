#include "memx/ui/clusterdocument.h"
#include "memx/ui/plantablemodel.h"
#include "memx/ui/undocommands.h"
#include "memx/ui/weightsliders.h"

#include <QDir>
#include <QDoubleSpinBox>
#include <QMenu>
#include <QSlider>
#include <QToolButton>
#include <QUndoStack>
#include <QtTest>

using namespace memx::ui;
using memx::ObjectiveWeights;

namespace {

PlanPoint plan(quint32 id, double timeMs, double mem, double cv)
{
    PlanPoint p;
    p.id = id;
    p.timeMs = timeMs;
    p.peakMemoryFraction = mem;
    p.imbalance = cv;
    p.summary = QStringLiteral("plan %1").arg(id);
    return p;
}

// Simulates a mouse drag of `slider` through `values` (press, moves, release).
void drag(QSlider *slider, std::initializer_list<int> values)
{
    slider->setSliderDown(true);
    for (int v : values)
        slider->setValue(v);
    slider->setSliderDown(false);
}

} // namespace

class TestWeightSliders : public QObject {
    Q_OBJECT
private slots:
    void sliderEmitsLive()
    {
        WeightSliders w;
        w.setWeights({1.0, 0.0, 0.0});
        QSignalSpy live(&w, &WeightSliders::weightsChanged);
        QSignalSpy finished(&w, &WeightSliders::weightsEditFinished);
        drag(w.slider(Metric::Memory), {100, 250, 400});
        QCOMPARE(live.count(), 3);
        QCOMPARE(finished.count(), 1);
        QCOMPARE(live.at(1).at(0).value<memx::ObjectiveWeights>(), (ObjectiveWeights {1.0, 0.25, 0.0}));
        QCOMPARE(finished.at(0).at(0).value<memx::ObjectiveWeights>().memory, 0.4);
        QCOMPARE(w.spinBox(Metric::Memory)->value(), 0.4); // field follows the slider
        QCOMPARE(w.weights().memory, 0.4);
    }

    void spinSyncsSlider()
    {
        WeightSliders w;
        QSignalSpy live(&w, &WeightSliders::weightsChanged);
        QSignalSpy finished(&w, &WeightSliders::weightsEditFinished);
        w.spinBox(Metric::Balance)->setValue(0.125);
        QCOMPARE(w.slider(Metric::Balance)->value(), 125);
        QCOMPARE(w.weights().balance, 0.125);
        QCOMPARE(live.count(), 1);
        QCOMPARE(finished.count(), 1);
        QCOMPARE(live.at(0).at(0).value<memx::ObjectiveWeights>().balance, 0.125);
        // Out-of-range input is clamped by setWeights.
        w.setWeights({2.0, -1.0, 0.5});
        QCOMPARE(w.weights(), (ObjectiveWeights {1.0, 0.0, 0.5}));
        QCOMPARE(w.slider(Metric::Time)->value(), 1000);
    }

    void presets()
    {
        ClusterDocument doc;
        QUndoStack &stack = *doc.undoStack();
        WeightSliders w;
        w.setDocument(&doc);
        w.applyPreset(0);
        QCOMPARE(w.weights(), (ObjectiveWeights::timeOnly()));
        w.applyPreset(1);
        QCOMPARE(w.weights(), (ObjectiveWeights {1.0, 1.0, 1.0}));
        QCOMPARE(stack.count(), 2); // two presets = two undo steps, never merged
        w.applyPreset(2);
        QCOMPARE(w.weights(), (ObjectiveWeights {1.0, 0.5, 0.5}));
        stack.undo();
        QCOMPARE(w.weights(), (ObjectiveWeights {1.0, 1.0, 1.0}));
        QCOMPARE(doc.objectiveWeights(), (ObjectiveWeights {1.0, 1.0, 1.0})); // the weights live in the document
        QVERIFY(w.presetButton()->menu());
        QCOMPARE(w.presetButton()->menu()->actions().size(), 3);
    }

    void dragIsOneUndoStep()
    {
        ClusterDocument doc;
        doc.setObjectiveWeights(ObjectiveWeights::timeOnly());
        QUndoStack &stack = *doc.undoStack();
        WeightSliders w;
        w.setDocument(&doc);
        QCOMPARE(w.weights(), ObjectiveWeights::timeOnly()); // shows the document's weights
        drag(w.slider(Metric::Memory), {100, 200, 300, 700});
        QCOMPARE(stack.count(), 1);
        drag(w.slider(Metric::Time), {900, 500});
        QCOMPARE(stack.count(), 2); // a second drag is a second step
        QCOMPARE(w.weights(), (ObjectiveWeights {0.5, 0.7, 0.0}));
        QCOMPARE(doc.objectiveWeights(), (ObjectiveWeights {0.5, 0.7, 0.0}));
        QVERIFY(doc.isModified()); // a weight edit is an edit of the document

        QSignalSpy live(&w, &WeightSliders::weightsChanged);
        stack.undo();
        QCOMPARE(w.weights(), (ObjectiveWeights {1.0, 0.7, 0.0}));
        QCOMPARE(w.slider(Metric::Time)->value(), 1000);
        QCOMPARE(stack.count(), 2); // undo does not push new commands
        stack.undo();
        QCOMPARE(w.weights(), (ObjectiveWeights::timeOnly()));
        QCOMPARE(w.spinBox(Metric::Memory)->value(), 0.0);
        QCOMPARE(live.count(), 2);
        stack.redo();
        QCOMPARE(w.weights(), (ObjectiveWeights {1.0, 0.7, 0.0}));
    }

    void commandMerge()
    {
        ClusterDocument doc;
        doc.setObjectiveWeights(ObjectiveWeights::timeOnly());
        WeightSliders w;
        w.setDocument(&doc);
        QUndoStack stack;
        // A caller pushing commands itself: same session merges, another session does not.
        stack.push(new ChangeWeightsCommand(&doc, {1.0, 0.0, 0.0}, {1.0, 0.2, 0.0}, 7));
        stack.push(new ChangeWeightsCommand(&doc, {1.0, 0.2, 0.0}, {1.0, 0.6, 0.0}, 7));
        QCOMPARE(stack.count(), 1);
        const auto *cmd = static_cast<const ChangeWeightsCommand *>(stack.command(0));
        QCOMPARE(cmd->before(), (ObjectiveWeights::timeOnly()));
        QCOMPARE(cmd->after(), (ObjectiveWeights {1.0, 0.6, 0.0}));
        stack.push(new ChangeWeightsCommand(&doc, {1.0, 0.6, 0.0}, {1.0, 0.6, 0.3}, 8));
        QCOMPARE(stack.count(), 2);
        QCOMPARE(w.weights(), (ObjectiveWeights {1.0, 0.6, 0.3})); // push() runs redo()
        stack.undo();
        stack.undo();
        QCOMPARE(w.weights(), (ObjectiveWeights::timeOnly()));
    }

    void sliderChangesTopPlanWhenItShould()
    {
        // Hand-worked with the core objective score = T'^wT * M'^wM (wB = 0), X' = X / max X:
        //   A: T=100 M=0.9 -> T'=0.8333, M'=1
        //   B: T=120 M=0.5 -> T'=1,      M'=0.5556
        //   C: T=110 M=0.5 -> T'=0.9167, M'=0.5556
        //   wM = 0.1: A = 0.8333, C = 0.9167 * 0.5556^0.1 = 0.8643, B = 0.9429 -> A on top
        //   wM = 0.3: A = 0.8333, C = 0.9167 * 0.8385 = 0.7687, B = 0.8384   -> C on top, B third
        //   (C beats A once wM > ln(0.9167/0.8333) / ln(1/0.5556) = 0.162)
        QVector<PlanPoint> plans = {plan(1, 100.0, 0.9, 0.1), plan(2, 120.0, 0.5, 0.1), plan(3, 110.0, 0.5, 0.1)};
        PlanTableModel model;
        WeightSliders w;
        w.setWeights({1.0, 0.0, 0.0});
        auto rerank = [&](const ObjectiveWeights &weights) {
            scorePlans(plans, weights);
            QVector<double> scores;
            for (const auto &p : plans)
                scores << p.score;
            model.updateScores(scores);
        };
        scorePlans(plans, w.weights());
        model.setPlans(plans);
        connect(&w, &WeightSliders::weightsChanged, &model, rerank);
        QCOMPARE(model.topPlanId(), 1u);

        QSlider *memory = w.slider(Metric::Memory);
        memory->setSliderDown(true);
        memory->setValue(100);
        QCOMPARE(model.topPlanId(), 1u); // not yet
        memory->setValue(300);
        QCOMPARE(model.topPlanId(), 3u); // re-ranked live, during the drag
        memory->setSliderDown(false);
        QCOMPARE(model.index(1, PlanTableModel::RankColumn).data().toInt(), 3);
    }

    void screenshot()
    {
        const QString dir = qEnvironmentVariable("MEMX_SCREENSHOT_DIR");
        if (dir.isEmpty())
            QSKIP("set MEMX_SCREENSHOT_DIR to write screenshots");
        QDir().mkpath(dir);
        WeightSliders w;
        w.setWeights({1.0, 0.5, 0.25});
        w.resize(w.sizeHint().expandedTo(QSize(360, 0)));
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.grab().save(dir + "/weight-sliders.png"));
    }
};

QTEST_MAIN(TestWeightSliders)
#include "tst_weightsliders.moc"
