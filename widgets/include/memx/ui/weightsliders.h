#pragma once

#include "memx/ui/resultsviewtypes.h"

#include <QPointer>
#include <QUndoCommand>
#include <QWidget>

class QDoubleSpinBox;
class QSlider;
class QToolButton;
class QUndoStack;

namespace memx::ui {

/// Three objective weights (time, memory, balance), each 0..1, as a slider plus a numeric field
/// kept in sync, and a presets menu ("Time only" 1/0/0, "Balanced" 1/1/1, "Memory-aware" 1/0.5/0.5).
///
/// Signals: weightsChanged(t, m, b) fires live on every change (during a drag too), so a caller can
/// re-rank from cached metrics; weightsEditFinished(t, m, b) fires once when an edit ends (slider
/// released, keyboard step, spin box edited, preset chosen, or an undo/redo).
///
/// Undo: with setUndoStack() the widget pushes one ChangeWeightsCommand per live change; commands of
/// the same edit merge (mergeWith), so one drag is one undo step. Without a stack no commands are made;
/// a caller may push ChangeWeightsCommand itself. GUI thread only.
class WeightSliders : public QWidget {
    Q_OBJECT
public:
    explicit WeightSliders(QWidget *parent = nullptr);

    ObjectiveWeights weights() const { return mWeights; }
    /// Sets all three weights (clamped to 0..1); emits weightsChanged and weightsEditFinished if
    /// anything changed. Never pushes undo commands (commands call this to apply themselves).
    void setWeights(const ObjectiveWeights &weights);

    /// Undo stack to push ChangeWeightsCommand onto (not owned; may be null).
    void setUndoStack(QUndoStack *stack);
    QUndoStack *undoStack() const { return mUndoStack; }

    /// The named presets, in menu order.
    static QList<QPair<QString, ObjectiveWeights>> presets();
    /// Applies preset `index` of presets() as one undoable edit.
    void applyPreset(int index);

    QSlider *slider(Metric metric) const;
    QDoubleSpinBox *spinBox(Metric metric) const;
    QToolButton *presetButton() const { return mPresetButton; }

signals:
    void weightsChanged(double time, double memory, double balance);
    void weightsEditFinished(double time, double memory, double balance);

private:
    void onSliderValue(int k, int value);
    void onSpinValue(int k, double value);
    void userChange(const ObjectiveWeights &w);
    void finishEdit();
    void syncEditors();

    ObjectiveWeights mWeights;
    QSlider *mSliders[3] = {};
    QDoubleSpinBox *mSpins[3] = {};
    QToolButton *mPresetButton = nullptr;
    QPointer<QUndoStack> mUndoStack;
    int mEditSession = 0;
    bool mEditOpen = false;
    bool mSyncing = false;
};

/// Undoable change of the objective weights. Commands with the same target and edit session merge,
/// so all live changes of one slider drag collapse into one undo step; redo/undo call
/// WeightSliders::setWeights. The target is held by QPointer (a deleted widget makes this a no-op).
class ChangeWeightsCommand : public QUndoCommand {
public:
    /// `session` groups commands that should merge (e.g. one drag); use a fresh value per edit.
    ChangeWeightsCommand(WeightSliders *target, const ObjectiveWeights &before, const ObjectiveWeights &after,
                         int session = 0, QUndoCommand *parent = nullptr);

    static constexpr int CommandId = 0x4d585701;
    int id() const override { return CommandId; }
    bool mergeWith(const QUndoCommand *other) override;
    void undo() override;
    void redo() override;

    ObjectiveWeights before() const { return mBefore; }
    ObjectiveWeights after() const { return mAfter; }

private:
    void updateText();

    QPointer<WeightSliders> mTarget;
    ObjectiveWeights mBefore;
    ObjectiveWeights mAfter;
    int mSession;
};

} // namespace memx::ui
