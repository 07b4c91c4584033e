#pragma once

#include "memx/model/model.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;

namespace memx::ui {

class ClusterDocument;

/// Model editor: a preset combo (memx::builtinModels() plus "Custom"), the transformer shape
/// (layers, hidden, heads, KV groups, FFN, vocabulary, sequence length, SwiGLU, tied embeddings),
/// global batch and precision. Edits form a draft; a valid draft is applied to the document
/// (undoable; consecutive edits of one field merge), an invalid one is shown inline in red and
/// kept until it is fixed. Editing a preset's shape turns the model into "custom".
class ModelPanel : public QWidget {
    Q_OBJECT

public:
    explicit ModelPanel(ClusterDocument *document, QWidget *parent = nullptr);

    /// The model being edited (equals the document's model unless it is invalid).
    const memx::Model &draft() const { return mDraft; }
    /// Validation problems of the draft ("" when valid).
    QString errorText() const;

    QComboBox *presetCombo() const { return mPreset; }
    QComboBox *attentionCombo() const { return mAttention; }
    QSpinBox *spin(const char *field) const;

private:
    enum Field { Layers, Hidden, Heads, KvGroups, Ffn, Vocab, SeqLength, GlobalBatch, FieldCount };

    void refresh();
    void applyDraft(int mergeKey);
    void onPreset(int index);
    void onField(int field);
    void updateInfo();

    ClusterDocument *mDocument;
    memx::Model mDraft;
    QComboBox *mPreset = nullptr;
    QSpinBox *mSpins[FieldCount] = {};
    QCheckBox *mSwiglu = nullptr, *mTied = nullptr;
    QComboBox *mPrecision = nullptr;
    QComboBox *mAttention = nullptr;
    QLabel *mInfo = nullptr, *mError = nullptr;
};

} // namespace memx::ui
