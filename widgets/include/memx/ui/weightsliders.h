#pragma once

#include "memx/search/objective.h"
#include "memx/ui/resultsviewtypes.h"

#include <QPointer>
#include <QWidget>

class QDoubleSpinBox;
class QSlider;
class QToolButton;

namespace memx::ui {

class ClusterDocument;

/// Three objective weights (time, memory, balance), each 0..1, as a slider plus a numeric field
/// kept in sync, and a presets menu ("Time only" 1/0/0, "Balanced" 1/1/1, "Memory-aware" 1/0.5/0.5).
///
/// Signals: weightsChanged(w) fires live on every change (during a drag too), so a caller can
/// re-rank from cached metrics; weightsEditFinished(w) fires once when an edit ends (slider
/// released, keyboard step, spin box edited, preset chosen, or an undo/redo).
///
/// The weights live in the document: with setDocument() the widget shows the document's weights
/// (following ClusterDocument::objectiveWeightsChanged, so undo/redo move the sliders) and each live
/// user change pushes one ChangeWeightsCommand onto the document's undo stack; commands of the same
/// edit merge, so one drag is one undo step. Without a document the widget is a plain editor of
/// its own weights (no undo). GUI thread only.
class WeightSliders : public QWidget {
    Q_OBJECT
public:
    explicit WeightSliders(QWidget *parent = nullptr);

    ObjectiveWeights weights() const { return mWeights; }
    /// Sets all three weights (clamped to 0..1); emits weightsChanged and weightsEditFinished if
    /// anything changed. Never pushes undo commands (commands call this to apply themselves).
    void setWeights(const ObjectiveWeights &weights);

    /// The document whose weights this widget edits (not owned; may be null).
    void setDocument(ClusterDocument *document);
    ClusterDocument *document() const { return mDocument; }

    /// The named presets, in menu order.
    static QList<QPair<QString, ObjectiveWeights>> presets();
    /// Applies preset `index` of presets() as one undoable edit.
    void applyPreset(int index);

    QSlider *slider(Metric metric) const;
    QDoubleSpinBox *spinBox(Metric metric) const;
    QToolButton *presetButton() const { return mPresetButton; }

signals:
    void weightsChanged(const memx::ObjectiveWeights &weights);
    void weightsEditFinished(const memx::ObjectiveWeights &weights);

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
    QPointer<ClusterDocument> mDocument;
    int mEditSession = 0;
    bool mEditOpen = false;
    bool mSyncing = false;
};

} // namespace memx::ui
