#include "memx/ui/weightsliders.h"

#include "memx/ui/clusterdocument.h"
#include "memx/ui/undocommands.h"

#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QLabel>
#include <QMenu>
#include <QSlider>
#include <QToolButton>
#include <QUndoStack>

#include <algorithm>
#include <cmath>

namespace memx::ui {

namespace {

constexpr int SliderSteps = 1000; // slider position = weight * 1000

double &component(ObjectiveWeights &w, int k)
{
    return k == 0 ? w.time : (k == 1 ? w.memory : w.balance);
}

ObjectiveWeights clamped(ObjectiveWeights w)
{
    for (int k = 0; k < 3; ++k) {
        double &v = component(w, k);
        v = std::isfinite(v) ? std::clamp(v, 0.0, 1.0) : 0.0;
    }
    return w;
}

} // namespace

WeightSliders::WeightSliders(QWidget *parent)
    : QWidget(parent)
{
    auto *grid = new QGridLayout(this);
    grid->setContentsMargins(4, 4, 4, 4);
    grid->setHorizontalSpacing(8);
    const char *const names[3] = {"&Time", "&Memory", "&Balance"};
    const char *const tips[3] = {
        "Weight of the predicted iteration time (ms)",
        "Weight of the peak per-GPU memory fraction (%)",
        "Weight of the load imbalance between GPUs (CV)",
    };
    for (int k = 0; k < 3; ++k) {
        auto *label = new QLabel(tr(names[k]), this);
        auto *slider = new QSlider(Qt::Horizontal, this);
        slider->setRange(0, SliderSteps);
        slider->setSingleStep(10);
        slider->setPageStep(100);
        slider->setToolTip(tr(tips[k]));
        slider->setMinimumWidth(120);
        auto *spin = new QDoubleSpinBox(this);
        spin->setRange(0.0, 1.0);
        spin->setDecimals(3);
        spin->setSingleStep(0.05);
        spin->setToolTip(tr(tips[k]));
        spin->setKeyboardTracking(false);
        label->setBuddy(slider);
        grid->addWidget(label, k, 0);
        grid->addWidget(slider, k, 1);
        grid->addWidget(spin, k, 2);
        mSliders[k] = slider;
        mSpins[k] = spin;

        connect(slider, &QSlider::valueChanged, this, [this, k](int v) { onSliderValue(k, v); });
        connect(slider, &QSlider::sliderReleased, this, [this] { finishEdit(); });
        connect(spin, &QDoubleSpinBox::valueChanged, this, [this, k](double v) { onSpinValue(k, v); });
    }
    grid->setColumnStretch(1, 1);

    mPresetButton = new QToolButton(this);
    mPresetButton->setText(tr("Presets"));
    mPresetButton->setPopupMode(QToolButton::InstantPopup);
    mPresetButton->setToolTip(tr("Set all three weights at once"));
    auto *menu = new QMenu(mPresetButton);
    const auto list = presets();
    for (int i = 0; i < list.size(); ++i) {
        const auto &w = list[i].second;
        QAction *a = menu->addAction(QStringLiteral("%1  (%2)").arg(list[i].first, weightsText(w)));
        connect(a, &QAction::triggered, this, [this, i] { applyPreset(i); });
    }
    mPresetButton->setMenu(menu);
    grid->addWidget(mPresetButton, 3, 0, 1, 3, Qt::AlignRight);

    syncEditors();
}

QList<QPair<QString, ObjectiveWeights>> WeightSliders::presets()
{
    return {
        {QStringLiteral("Time only"), {1.0, 0.0, 0.0}},
        {QStringLiteral("Balanced"), {1.0, 1.0, 1.0}},
        {QStringLiteral("Memory-aware"), {1.0, 0.5, 0.5}},
    };
}

QSlider *WeightSliders::slider(Metric metric) const
{
    return mSliders[int(metric)];
}

QDoubleSpinBox *WeightSliders::spinBox(Metric metric) const
{
    return mSpins[int(metric)];
}

void WeightSliders::setDocument(ClusterDocument *document)
{
    if (mDocument)
        disconnect(mDocument, nullptr, this, nullptr);
    mDocument = document;
    if (!mDocument)
        return;
    connect(mDocument, &ClusterDocument::objectiveWeightsChanged, this, &WeightSliders::setWeights);
    setWeights(mDocument->objectiveWeights());
}

void WeightSliders::setWeights(const ObjectiveWeights &weights)
{
    const ObjectiveWeights w = clamped(weights);
    if (w == mWeights)
        return;
    mWeights = w;
    syncEditors();
    emit weightsChanged(mWeights);
    emit weightsEditFinished(mWeights);
}

void WeightSliders::applyPreset(int index)
{
    const auto list = presets();
    if (index < 0 || index >= list.size())
        return;
    finishEdit(); // a preset never merges with a previous drag
    userChange(list[index].second);
    finishEdit();
}

void WeightSliders::onSliderValue(int k, int value)
{
    if (mSyncing)
        return;
    ObjectiveWeights w = mWeights;
    component(w, k) = double(value) / SliderSteps;
    userChange(w);
    if (!mSliders[k]->isSliderDown())
        finishEdit(); // keyboard / wheel / page step: each step is a complete edit
}

void WeightSliders::onSpinValue(int k, double value)
{
    if (mSyncing)
        return;
    ObjectiveWeights w = mWeights;
    component(w, k) = value;
    userChange(w);
    finishEdit();
}

void WeightSliders::userChange(const ObjectiveWeights &weights)
{
    const ObjectiveWeights w = clamped(weights);
    if (w == mWeights)
        return;
    const ObjectiveWeights before = mWeights;
    mWeights = w;
    syncEditors();
    mEditOpen = true;
    emit weightsChanged(mWeights);
    if (mDocument) {
        // redo() sets the document's weights, which this widget already shows (no second signal).
        mDocument->undoStack()->push(new ChangeWeightsCommand(mDocument, before, mWeights, mEditSession));
    }
}

void WeightSliders::finishEdit()
{
    if (!mEditOpen)
        return;
    mEditOpen = false;
    ++mEditSession;
    emit weightsEditFinished(mWeights);
}

void WeightSliders::syncEditors()
{
    mSyncing = true;
    for (int k = 0; k < 3; ++k) {
        const double v = component(mWeights, k);
        mSliders[k]->setValue(int(std::lround(v * SliderSteps)));
        mSpins[k]->setValue(v);
    }
    mSyncing = false;
}

} // namespace memx::ui
