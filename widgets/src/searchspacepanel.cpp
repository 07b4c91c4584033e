#include "memx/ui/searchspacepanel.h"

#include "memx/search/spacelists.h"

#include <QCheckBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cstring>

namespace memx::ui {

void SearchSpaceSettings::applyTo(memx::PlannedSearchRequest &request, memx::PlannedSearchOptions &options) const
{
    memx::SearchSpaceOptions &sp = request.search.space;
    if (!stagesPerGroup.empty())
        sp.stagesPerGroup = stagesPerGroup;
    if (!tensorParallel.empty())
        sp.tensorParallel = tensorParallel;
    if (!microBatches.empty())
        sp.microBatches = microBatches;
    if (!virtualStages.empty())
        sp.virtualStages = virtualStages;
    if (!contextParallel.empty())
        sp.contextParallel = contextParallel;
    if (!recompute.empty())
        sp.recompute = recompute;
    sp.maxStages = maxStages;
    sp.maxReplicaMicroBatch = maxReplicaMicroBatch;
    request.maxIdleGroups = maxIdleGroups;
    options.maxBases = maxBases;
}

namespace {
QString joined(const std::vector<int> &v)
{
    QStringList s;
    for (int x : v)
        s << QString::number(x);
    return s.join(QStringLiteral(", "));
}
} // namespace

SearchSpacePanel::SearchSpacePanel(QWidget *parent)
    : QWidget(parent)
{
    const memx::SearchSpaceOptions defaults;
    auto *form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    struct Spec {
        const char *name;
        const char *label;
        const char *tip;
        std::vector<int> SearchSpaceSettings::*member;
        std::vector<int> def;
    };
    const Spec specs[] = {
        {"stages", QT_TR_NOOP("&Stages per group:"),
         QT_TR_NOOP("Pipeline stages each node group may hold (memx search --stages)"),
         &SearchSpaceSettings::stagesPerGroup, defaults.stagesPerGroup},
        {"tp", QT_TR_NOOP("&TP degrees:"), QT_TR_NOOP("Tensor-parallel degrees (--tp); at most the GPUs per node"),
         &SearchSpaceSettings::tensorParallel, defaults.tensorParallel},
        {"mbs", QT_TR_NOOP("&Micro-batch sizes:"),
         QT_TR_NOOP(
             "Micro-batch sizes of the widest stages; a stage with fewer replicas carries proportionally more (--mbs)"),
         &SearchSpaceSettings::microBatches, defaults.microBatches},
        {"vpp", QT_TR_NOOP("&Interleaving (VPP):"),
         QT_TR_NOOP("Model chunks per pipeline rank, interleaved 1F1B (--vpp)"), &SearchSpaceSettings::virtualStages,
         defaults.virtualStages},
        {"cp", QT_TR_NOOP("&Context parallel:"), QT_TR_NOOP("Context-parallel sizes (--cp)"),
         &SearchSpaceSettings::contextParallel, defaults.contextParallel},
    };
    for (const Spec &s : specs) {
        auto *edit = new QLineEdit(this);
        edit->setObjectName(QLatin1String(s.name));
        edit->setPlaceholderText(tr("default: %1").arg(joined(s.def)));
        edit->setToolTip(tr(s.tip));
        edit->setClearButtonEnabled(true);
        connect(edit, &QLineEdit::editingFinished, this, &SearchSpacePanel::onEdited);
        form->addRow(tr(s.label), edit);
        QString label = tr(s.label);
        label.remove(u'&').remove(u':');
        const memx::SpaceListBounds &b = memx::spaceListBounds(s.name); // memx search's bounds
        mLists.push_back({s.name, label, edit, b.lo, b.hi, s.member});
    }
    mMaxStages = new QSpinBox(this);
    mMaxStages->setRange(0, 64);
    mMaxStages->setSpecialValueText(tr("no limit"));
    mMaxStages->setToolTip(tr("Deepest pipeline (--max-stages)"));
    form->insertRow(1, tr("&Deepest pipeline:"), mMaxStages);
    mMaxMbs = new QSpinBox(this);
    mMaxMbs->setRange(1, 1024);
    mMaxMbs->setToolTip(tr("Largest per-replica micro-batch (--max-mbs)"));
    form->addRow(tr("&Largest micro-batch:"), mMaxMbs);
    auto *rc = new QHBoxLayout;
    rc->setContentsMargins(0, 0, 0, 0);
    const char *rcNames[] = {QT_TR_NOOP("none"), QT_TR_NOOP("selective"), QT_TR_NOOP("full")};
    for (int i = 0; i < 3; ++i) {
        mRecompute[i] = new QCheckBox(tr(rcNames[i]), this);
        connect(mRecompute[i], &QCheckBox::toggled, this, &SearchSpacePanel::onEdited);
        rc->addWidget(mRecompute[i]);
    }
    rc->addStretch(1);
    form->addRow(tr("Recompute:"), rc);
    mIdleGroups = new QSpinBox(this);
    mIdleGroups->setRange(0, 16);
    mIdleGroups->setToolTip(tr("The slowest N node groups may also stay idle: one more subset searched each "
                               "(--idle-groups)"));
    form->addRow(tr("Idle &groups:"), mIdleGroups);
    mBudget = new QSpinBox(this);
    mBudget->setRange(1000, 2000000000);
    mBudget->setSingleStep(100000);
    mBudget->setGroupSeparatorShown(true);
    mBudget->setSuffix(tr(" bases"));
    mBudget->setToolTip(tr("Budget of base configurations (--max-bases, default %1): a larger space is narrowed "
                           "(fewer stages, TP degrees, micro-batches...) until it fits; memory and time grow with it")
                            .arg(QLocale().toString(qulonglong(memx::kDefaultMaxBases))));
    form->addRow(tr("&Budget:"), mBudget);
    for (QSpinBox *s : {mMaxStages, mMaxMbs, mIdleGroups, mBudget}) {
        s->setKeyboardTracking(false);
        connect(s, &QSpinBox::valueChanged, this, &SearchSpacePanel::onEdited);
    }

    auto *defaultsButton = new QPushButton(tr("&Defaults"), this);
    defaultsButton->setToolTip(tr("memx search's defaults"));
    connect(defaultsButton, &QPushButton::clicked, this, &SearchSpacePanel::resetToDefaults);
    mError = new QLabel(this);
    mError->setWordWrap(true);
    mError->setStyleSheet(QStringLiteral("color: #b00020;"));
    mError->hide();
    mNarrowing = new QLabel(this);
    mNarrowing->setWordWrap(true);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addLayout(form);
    layout->addWidget(defaultsButton, 0, Qt::AlignLeft);
    layout->addWidget(mError);
    layout->addWidget(mNarrowing);
    layout->addStretch(1);
    showSettings();
}

QLineEdit *SearchSpacePanel::field(const char *name) const
{
    for (const ListField &f : mLists)
        if (std::strcmp(f.name, name) == 0)
            return f.edit;
    return nullptr;
}

void SearchSpacePanel::showSettings()
{
    for (const ListField &f : mLists) {
        const QSignalBlocker block(f.edit);
        f.edit->setText(joined(mSettings.*f.member));
    }
    for (QSpinBox *s : {mMaxStages, mMaxMbs, mIdleGroups, mBudget})
        s->blockSignals(true);
    mMaxStages->setValue(mSettings.maxStages);
    mMaxMbs->setValue(mSettings.maxReplicaMicroBatch);
    mIdleGroups->setValue(mSettings.maxIdleGroups);
    mBudget->setValue(int(std::min<std::uint64_t>(mSettings.maxBases, std::uint64_t(mBudget->maximum()))));
    for (QSpinBox *s : {mMaxStages, mMaxMbs, mIdleGroups, mBudget})
        s->blockSignals(false);
    const std::vector<memx::RecomputeMethod> rc
        = mSettings.recompute.empty() ? memx::SearchSpaceOptions {}.recompute : mSettings.recompute;
    for (int i = 0; i < 3; ++i) {
        const QSignalBlocker block(mRecompute[i]);
        mRecompute[i]->setChecked(std::find(rc.begin(), rc.end(), memx::RecomputeMethod(i)) != rc.end());
    }
    mError->hide();
}

void SearchSpacePanel::setSettings(const SearchSpaceSettings &settings)
{
    mSettings = settings;
    showSettings();
}

void SearchSpacePanel::resetToDefaults()
{
    const bool differs = !(mSettings == SearchSpaceSettings {});
    mSettings = {};
    showSettings();
    if (differs)
        emit changed();
}

QString SearchSpacePanel::errorText() const
{
    return mError->isHidden() ? QString() : mError->text();
}

void SearchSpacePanel::setLastNarrowing(const QString &text, std::uint64_t budget)
{
    const QString b = QLocale().toString(qulonglong(budget));
    mNarrowing->setText(text.isEmpty() ? tr("The last search's space was within the budget (%1 bases).").arg(b)
                                       : tr("The last search was narrowed to %1 bases: %2").arg(b, text));
}

void SearchSpacePanel::onEdited()
{
    SearchSpaceSettings next = mSettings;
    QStringList problems;
    for (const ListField &f : mLists) {
        std::string error;
        const auto v = memx::parseIntList(f.edit->text().toStdString(), f.lo, f.hi, &error);
        if (!v) {
            problems << tr("%1: %2").arg(f.label, QString::fromStdString(error));
            continue;
        }
        next.*f.member = *v;
    }
    next.maxStages = mMaxStages->value();
    next.maxReplicaMicroBatch = mMaxMbs->value();
    next.maxIdleGroups = mIdleGroups->value();
    next.maxBases = std::uint64_t(mBudget->value());
    next.recompute.clear();
    for (int i = 0; i < 3; ++i)
        if (mRecompute[i]->isChecked())
            next.recompute.push_back(memx::RecomputeMethod(i));
    if (next.recompute.empty())
        problems << tr("Recompute: tick at least one of none, selective, full");
    else if (next.recompute == memx::SearchSpaceOptions {}.recompute)
        next.recompute.clear(); // the default
    if (!problems.isEmpty()) {
        mError->setText(tr("Not applied yet: %1").arg(problems.join(QStringLiteral("\n"))));
        mError->show();
        return;
    }
    mError->hide();
    if (next == mSettings)
        return;
    mSettings = next;
    emit changed();
}

} // namespace memx::ui
