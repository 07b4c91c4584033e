#include "memx/ui/modelpanel.h"

#include "memx/io/formats.h"
#include "memx/ui/clusterdocument.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <cstring>

namespace memx::ui {

namespace {
constexpr const char *kFieldNames[]
    = {"layers", "hidden", "heads", "kvGroups", "ffnHidden", "vocab", "seqLength", "globalBatch"};
constexpr int kMergeBase = 100; // merge keys 100 + field; 0 (no merge) for presets and toggles
} // namespace

ModelPanel::ModelPanel(ClusterDocument *document, QWidget *parent)
    : QWidget(parent)
    , mDocument(document)
{
    auto *form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    mPreset = new QComboBox(this);
    mPreset->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    mPreset->setMinimumContentsLength(12);
    mPreset->setToolTip(tr("Built-in presets, the project's models (e.g. sailor-* from a Sailor import: their "
                           "measured profiles apply) and models loaded from files"));
    connect(mPreset, &QComboBox::activated, this, &ModelPanel::onPreset);
    mLoad = new QToolButton(this);
    mLoad->setText(tr("Load..."));
    mLoad->setToolTip(tr("Load a model file (JSON, as memx validate --model reads it)"));
    connect(mLoad, &QToolButton::clicked, this, &ModelPanel::onLoadClicked);
    auto *presetRow = new QHBoxLayout;
    presetRow->setContentsMargins(0, 0, 0, 0);
    presetRow->addWidget(mPreset, 1);
    presetRow->addWidget(mLoad);
    form->addRow(tr("&Model:"), presetRow);
    if (auto *label = qobject_cast<QLabel *>(form->labelForField(presetRow)))
        label->setBuddy(mPreset);

    const char *labels[]
        = {QT_TR_NOOP("&Layers:"),          QT_TR_NOOP("&Hidden size:"), QT_TR_NOOP("Attention h&eads:"),
           QT_TR_NOOP("&KV groups:"),       QT_TR_NOOP("&FFN hidden:"),  QT_TR_NOOP("&Vocabulary:"),
           QT_TR_NOOP("&Sequence length:"), QT_TR_NOOP("&Global batch:")};
    const int maxima[] = {1000, 1 << 20, 4096, 4096, 1 << 22, 1 << 22, 1 << 20, 1 << 24};
    for (int f = 0; f < FieldCount; ++f) {
        auto *s = new QSpinBox(this);
        s->setRange(1, maxima[f]);
        s->setKeyboardTracking(false);
        s->setGroupSeparatorShown(true);
        s->setObjectName(QLatin1String(kFieldNames[f]));
        connect(s, &QSpinBox::valueChanged, this, [this, f] { onField(f); });
        mSpins[f] = s;
        if (f == GlobalBatch) {
            s->setSuffix(tr(" sequences"));
            s->setToolTip(tr("Sequences per training iteration (all data-parallel replicas together)"));
        }
        form->addRow(tr(labels[f]), s);
    }
    mSpins[KvGroups]->setToolTip(tr("Query groups for grouped-query attention; equal to the heads without GQA"));
    mSwiglu = new QCheckBox(tr("SwiGLU MLP"), this);
    mTied = new QCheckBox(tr("Tied input/output embeddings"), this);
    connect(mSwiglu, &QCheckBox::toggled, this, [this](bool on) {
        mDraft.shape.swiglu = on;
        applyDraft(0);
    });
    connect(mTied, &QCheckBox::toggled, this, [this](bool on) {
        mDraft.shape.tiedEmbeddings = on;
        applyDraft(0);
    });
    form->insertRow(8, QString(), mSwiglu);
    form->insertRow(9, QString(), mTied);
    mPrecision = new QComboBox(this);
    mPrecision->addItem(QStringLiteral("BF16"), int(memx::Precision::BF16));
    mPrecision->addItem(QStringLiteral("FP16"), int(memx::Precision::FP16));
    connect(mPrecision, &QComboBox::activated, this, [this] {
        mDraft.training.precision = memx::Precision(mPrecision->currentData().toInt());
        applyDraft(0);
    });
    form->addRow(tr("P&recision:"), mPrecision);
    mAttention = new QComboBox(this);
    mAttention->addItem(tr("Auto (per GPU)"), int(memx::AttentionBackend::Auto));
    mAttention->addItem(tr("Flash"), int(memx::AttentionBackend::Flash));
    mAttention->addItem(tr("Fused"), int(memx::AttentionBackend::Fused));
    mAttention->addItem(tr("Unfused"), int(memx::AttentionBackend::Unfused));
    mAttention->setToolTip(tr("Attention backend of the run (Megatron-LM --attention-backend). Auto: flash/fused "
                              "where the GPU supports it (NVIDIA Ampere and newer, AMD CDNA2+), unfused elsewhere. "
                              "Flash and fused never store the s\u00d7s score tensors."));
    connect(mAttention, &QComboBox::activated, this, [this] {
        mDraft.training.attention = memx::AttentionBackend(mAttention->currentData().toInt());
        applyDraft(0);
    });
    form->addRow(tr("A&ttention:"), mAttention);

    mInfo = new QLabel(this);
    mInfo->setWordWrap(true);
    mError = new QLabel(this);
    mError->setWordWrap(true);
    mError->setStyleSheet(QStringLiteral("color: #b00020;"));
    mError->hide();
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addLayout(form);
    layout->addWidget(mInfo);
    layout->addWidget(mError);
    layout->addStretch(1);

    connect(mDocument, &ClusterDocument::modelChanged, this, &ModelPanel::refresh);
    connect(mDocument, &ClusterDocument::projectDataChanged, this, [this] {
        populateChoices();
        selectCurrent();
    });
    connect(mDocument, &ClusterDocument::clusterReset, this, [this] {
        populateChoices();
        refresh();
    });
    populateChoices();
    refresh();
}

void ModelPanel::populateChoices()
{
    mChoices.clear();
    auto add = [this](const memx::Model &m) {
        for (memx::Model &c : mChoices) {
            if (c.id == m.id) { // a project or file model replaces the preset of its id
                c = m;
                return false;
            }
        }
        mChoices.push_back(m);
        return true;
    };
    for (const memx::Model &m : memx::builtinModels())
        add(m);
    const size_t presets = mChoices.size();
    for (const std::string &id : mDocument->projectData().modelIds()) {
        try {
            if (const auto m = mDocument->projectData().model(id))
                add(*m);
        } catch (const std::exception &) {
            // A stored model the reader refuses is not offered (the Profiles dock reports it).
        }
    }
    const size_t project = mChoices.size();
    for (const memx::Model &m : mLoaded)
        add(m);
    // The document's model when it is none of these (a project saved with a model from a file).
    const memx::Model &current = mDocument->model();
    if (current.id != "custom")
        add(current);
    const QSignalBlocker block(mPreset);
    mPreset->clear();
    for (size_t i = 0; i < mChoices.size(); ++i) {
        const memx::Model &m = mChoices[i];
        QString text = QString::fromStdString(m.name.empty() ? m.id : m.name);
        if (i >= presets && i < project)
            text += tr(" (project)");
        else if (i >= project)
            text += tr(" (file)");
        mPreset->addItem(text, QString::fromStdString(m.id));
        mPreset->setItemData(int(i), QString::fromStdString(m.id), Qt::ToolTipRole);
    }
    mPreset->addItem(tr("Custom"), QStringLiteral("custom"));
}

void ModelPanel::selectCurrent()
{
    const QSignalBlocker block(mPreset);
    const int p = mPreset->findData(QString::fromStdString(mDraft.id));
    mPreset->setCurrentIndex(p >= 0 ? p : mPreset->count() - 1);
}

bool ModelPanel::loadModelFile(const QString &path)
{
    memx::Model m;
    try {
        m = memx::loadModel(path.toStdString());
    } catch (const std::exception &e) {
        mError->setText(tr("Cannot load %1: %2").arg(QFileInfo(path).fileName(), QString::fromUtf8(e.what())));
        mError->show();
        return false;
    }
    bool replaced = false;
    for (memx::Model &l : mLoaded) {
        if (l.id == m.id) {
            l = m;
            replaced = true;
        }
    }
    if (!replaced)
        mLoaded.push_back(m);
    populateChoices();
    mDraft = m;
    applyDraft(0);
    return errorText().isEmpty();
}

void ModelPanel::onLoadClicked()
{
    const QString path
        = QFileDialog::getOpenFileName(this, tr("Load Model"), QString(), tr("Model files (*.json);;All files (*)"));
    if (!path.isEmpty())
        loadModelFile(path);
}

QSpinBox *ModelPanel::spin(const char *field) const
{
    for (int f = 0; f < FieldCount; ++f)
        if (std::strcmp(kFieldNames[f], field) == 0)
            return mSpins[f];
    return nullptr;
}

QString ModelPanel::errorText() const
{
    return mError->isHidden() ? QString() : mError->text();
}

void ModelPanel::refresh()
{
    mDraft = mDocument->model();
    const memx::ModelShape &s = mDraft.shape;
    const int values[]
        = {s.layers, s.hidden, s.heads, s.kvGroups, s.ffnHidden, s.vocab, s.seqLength, mDraft.training.globalBatch};
    for (int f = 0; f < FieldCount; ++f) {
        const QSignalBlocker block(mSpins[f]);
        mSpins[f]->setValue(values[f]);
    }
    {
        const QSignalBlocker b1(mSwiglu), b2(mTied), b3(mPreset), b4(mPrecision), b5(mAttention);
        mAttention->setCurrentIndex(mAttention->findData(int(mDraft.training.attention)));
        mSwiglu->setChecked(s.swiglu);
        mTied->setChecked(s.tiedEmbeddings);
        mPrecision->setCurrentIndex(mPrecision->findData(int(mDraft.training.precision)));
    }
    selectCurrent();
    mError->hide();
    updateInfo();
}

void ModelPanel::updateInfo()
{
    const double params = double(mDraft.totalParams());
    mInfo->setText(tr("%1 B parameters \u00b7 head size %2 \u00b7 %3 tokens per iteration")
                       .arg(params / 1e9, 0, 'f', 2)
                       .arg(mDraft.kvChannels())
                       .arg(QLocale().toString(double(mDraft.training.globalBatch) * mDraft.shape.seqLength, 'f', 0)));
}

void ModelPanel::onPreset(int index)
{
    const QString id = mPreset->itemData(index).toString();
    for (const memx::Model &m : mChoices) {
        if (QString::fromStdString(m.id) == id) {
            mDraft = m;
            applyDraft(0);
            return;
        }
    }
    // "Custom": keep the shape, only mark it as ours.
    mDraft.id = "custom";
    mDraft.name = "Custom model";
    applyDraft(0);
}

void ModelPanel::onField(int field)
{
    const int v = mSpins[field]->value();
    memx::ModelShape &s = mDraft.shape;
    switch (Field(field)) {
    case Layers:
        s.layers = v;
        break;
    case Hidden:
        s.hidden = v;
        break;
    case Heads:
        s.heads = v;
        break;
    case KvGroups:
        s.kvGroups = v;
        break;
    case Ffn:
        s.ffnHidden = v;
        break;
    case Vocab:
        s.vocab = v;
        break;
    case SeqLength:
        s.seqLength = v;
        break;
    case GlobalBatch:
        mDraft.training.globalBatch = v;
        break;
    case FieldCount:
        break;
    }
    applyDraft(kMergeBase + field);
}

void ModelPanel::applyDraft(int mergeKey)
{
    // A preset (or project / file model) whose shape was edited is no longer that model.
    for (const memx::Model &m : mChoices) {
        if (m.id == mDraft.id && m.shape != mDraft.shape) {
            mDraft.id = "custom";
            mDraft.name = "Custom (from " + m.name + ")";
            mDraft.source.clear();
        }
    }
    updateInfo();
    QString error;
    if (!mDocument->setModel(mDraft, mergeKey, &error)) {
        mError->setText(tr("Not applied yet: %1").arg(error));
        mError->show();
        return;
    }
    mError->hide();
    selectCurrent();
}

} // namespace memx::ui
