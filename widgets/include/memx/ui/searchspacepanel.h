#pragma once

#include "memx/engine/plannedsearch.h"
#include "memx/plan/plan.h"

#include <QWidget>

#include <cstdint>
#include <optional>
#include <vector>

class QCheckBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace memx::ui {

/// The search-space settings of the workbench: the dimensions `memx search` takes as options
/// (--stages, --max-stages, --tp, --mbs, --max-mbs, --vpp, --cp, --recompute, --idle-groups,
/// --max-bases), with the same defaults. An empty list means the core's default.
struct SearchSpaceSettings {
    std::vector<int> stagesPerGroup, tensorParallel, microBatches, virtualStages, contextParallel;
    int maxStages = 0; ///< 0: no limit
    int maxReplicaMicroBatch = memx::SearchSpaceOptions {}.maxReplicaMicroBatch;
    std::vector<memx::RecomputeMethod> recompute; ///< empty: the default (none, selective, full)
    int maxIdleGroups = memx::PlannedSearchRequest {}.maxIdleGroups;
    std::uint64_t maxBases = memx::kDefaultMaxBases;

    /// Writes the settings into a planned search's request and options.
    void applyTo(memx::PlannedSearchRequest &request, memx::PlannedSearchOptions &options) const;
    bool operator==(const SearchSpaceSettings &) const = default;
};

/// Editor of SearchSpaceSettings (the Search Space dock). Every valid edit emits changed() (the
/// window re-searches); an invalid list is shown in red, naming the field and what it expects, and
/// is not applied until fixed. *Defaults* restores memx search's defaults. setLastNarrowing()
/// shows how the last search narrowed the space to the budget. GUI thread only.
class SearchSpacePanel : public QWidget {
    Q_OBJECT
public:
    explicit SearchSpacePanel(QWidget *parent = nullptr);

    const SearchSpaceSettings &settings() const { return mSettings; }
    /// Shows `settings` in the fields (no changed()).
    void setSettings(const SearchSpaceSettings &settings);
    void resetToDefaults();
    /// "" when every field is valid, else the problems, one per line.
    QString errorText() const;
    /// The last search's narrowing ("" when its space was within the budget).
    void setLastNarrowing(const QString &text, std::uint64_t budget);

    QLineEdit *field(const char *name) const;
    QSpinBox *budgetField() const { return mBudget; }
    QCheckBox *recomputeBox(memx::RecomputeMethod m) const { return mRecompute[int(m)]; }

signals:
    void changed();

private:
    void onEdited();
    void showSettings();

    SearchSpaceSettings mSettings;
    struct ListField {
        const char *name;
        QString label; ///< the form label without '&' and ':', for error messages
        QLineEdit *edit;
        int lo, hi;
        std::vector<int> SearchSpaceSettings::*member;
    };
    std::vector<ListField> mLists;
    QSpinBox *mMaxStages = nullptr, *mMaxMbs = nullptr, *mIdleGroups = nullptr, *mBudget = nullptr;
    QCheckBox *mRecompute[3] = {};
    QLabel *mError = nullptr, *mNarrowing = nullptr;
};

} // namespace memx::ui
