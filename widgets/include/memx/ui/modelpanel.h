#pragma once

#include "memx/model/model.h"

#include <QWidget>

#include <vector>

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;
class QToolButton;

namespace memx::ui {

class ClusterDocument;

/// Model editor: a model combo (memx::builtinModels(), then the project's models - e.g. the
/// `sailor-*` models a Sailor import creates, whose measured profiles then apply - then models
/// loaded from files with *Load...*, then "Custom"; a project model replaces a preset of its id,
/// as `memx search --project --model` resolves it), the transformer shape
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
    QToolButton *loadButton() const { return mLoad; }
    /// Loads a model file (memx::loadModel: the model JSON `memx validate` checks) and applies it
    /// as one undo step; it stays in the combo for this window. False, with the file and the
    /// reader's message (field and what was expected) shown in red, when the file is refused;
    /// the document is unchanged then.
    bool loadModelFile(const QString &path);
    /// Models the combo offers, in its order (without "Custom").
    const std::vector<memx::Model> &choices() const { return mChoices; }
    QComboBox *attentionCombo() const { return mAttention; }
    QSpinBox *spin(const char *field) const;

private:
    enum Field { Layers, Hidden, Heads, KvGroups, Ffn, Vocab, SeqLength, GlobalBatch, FieldCount };

    void refresh();
    /// Rebuilds the combo from the presets, the project's models and the loaded files.
    void populateChoices();
    void selectCurrent();
    void onLoadClicked();
    void applyDraft(int mergeKey);
    void onPreset(int index);
    void onField(int field);
    void updateInfo();

    ClusterDocument *mDocument;
    memx::Model mDraft;
    QComboBox *mPreset = nullptr;
    QToolButton *mLoad = nullptr;
    std::vector<memx::Model> mChoices; ///< combo item i (before "Custom") is mChoices[i]
    std::vector<memx::Model> mLoaded; ///< models loaded from files in this window
    QSpinBox *mSpins[FieldCount] = {};
    QCheckBox *mSwiglu = nullptr, *mTied = nullptr;
    QComboBox *mPrecision = nullptr;
    QComboBox *mAttention = nullptr;
    QLabel *mInfo = nullptr, *mError = nullptr;
};

} // namespace memx::ui
