#include "memx/ui/nodepropertypanel.h"

#include "memx/io/formats.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/vendorstyle.h"

#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>

namespace memx::ui {

namespace {
enum Page { GroupPage, LinkPage, NetworkPage };
constexpr int kLinkMergeKey = 1;
constexpr int kDefaultBandwidthKey = 2, kDefaultLatencyKey = 3;

QDoubleSpinBox *bandwidthSpin(QWidget *parent)
{
    auto *s = new QDoubleSpinBox(parent);
    s->setRange(0.01, 100000);
    s->setDecimals(2);
    s->setSuffix(QObject::tr(" GB/s"));
    s->setKeyboardTracking(false);
    s->setToolTip(QObject::tr("Per direction, 10^9 bytes/s (200 Gb/s InfiniBand = 25 GB/s)"));
    return s;
}

QDoubleSpinBox *latencySpin(QWidget *parent)
{
    auto *s = new QDoubleSpinBox(parent);
    s->setRange(0, 1e6);
    s->setDecimals(2);
    s->setSuffix(QObject::tr(" \u00b5s"));
    s->setKeyboardTracking(false);
    return s;
}

QLabel *title(QWidget *parent)
{
    auto *l = new QLabel(parent);
    QFont f = l->font();
    f.setBold(true);
    f.setPointSizeF(f.pointSizeF() * 1.1);
    l->setFont(f);
    l->setWordWrap(true);
    return l;
}
} // namespace

NodePropertyPanel::NodePropertyPanel(ClusterDocument *document, QWidget *parent)
    : QWidget(parent)
    , mDocument(document)
{
    mStack = new QStackedWidget(this);
    mStack->addWidget(buildGroupPage());
    mStack->addWidget(buildLinkPage());
    mStack->addWidget(buildNetworkPage());
    mError = new QLabel(this);
    mError->setWordWrap(true);
    mError->setStyleSheet(QStringLiteral("color: #b00020;"));
    mError->hide();
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(mStack);
    layout->addWidget(mError);
    layout->addStretch(1);

    connect(mDocument, &ClusterDocument::clusterReset, this, [this] { setSelection({}, {}); });
    // Fields shrink with a narrow dock (a 1024 px screen) instead of pushing the panel wider
    // than it: an explicit minimum replaces the size hint a spin box takes from its range, and
    // the GPU list shows the start of long device names.
    for (QAbstractSpinBox *box : findChildren<QAbstractSpinBox *>())
        box->setMinimumWidth(72);
    for (QComboBox *combo : findChildren<QComboBox *>()) {
        combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        combo->setMinimumContentsLength(8);
    }
    for (QFormLayout *form : findChildren<QFormLayout *>()) // a field too wide goes under its label
        form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    for (QLineEdit *edit : findChildren<QLineEdit *>())
        if (!qobject_cast<QAbstractSpinBox *>(edit->parent()) && !qobject_cast<QComboBox *>(edit->parent()))
            edit->setMinimumWidth(72);
    connect(mDocument, &ClusterDocument::nodeGroupChanged, this, &NodePropertyPanel::refresh);
    connect(mDocument, &ClusterDocument::nodeGroupAdded, this, &NodePropertyPanel::refresh);
    connect(mDocument, &ClusterDocument::nodeGroupRemoved, this, &NodePropertyPanel::refresh);
    connect(mDocument, &ClusterDocument::networkChanged, this, &NodePropertyPanel::refresh);
    refresh();
}

QWidget *NodePropertyPanel::buildGroupPage()
{
    auto *page = new QWidget(this);
    auto *form = new QFormLayout(page);
    form->setContentsMargins(0, 0, 0, 0);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    mGroupTitle = title(page);
    form->addRow(mGroupTitle);

    mName = new QLineEdit(page);
    mName->setToolTip(tr("Unique name; a group of N nodes names them name-0 ... name-(N-1)"));
    connect(mName, &QLineEdit::editingFinished, this, [this] { editGroup(int(ClusterDocument::GroupField::Name)); });
    form->addRow(tr("&Name:"), mName);

    mGpu = new QComboBox(page);
    mGpu->setMaxVisibleItems(20);
    mGpu->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    mGpu->setMinimumContentsLength(14);
    for (const memx::GpuSpec &d : memx::builtinCatalogue().devices()) {
        QPixmap swatch(10, 10);
        swatch.fill(vendorColor(d.vendor));
        mGpu->addItem(QIcon(swatch),
                      QStringLiteral("%1 %2").arg(QString::fromStdString(d.vendor), QString::fromStdString(d.name)),
                      QString::fromStdString(d.id));
    }
    connect(mGpu, &QComboBox::activated, this, [this] { editGroup(int(ClusterDocument::GroupField::Gpu)); });
    form->addRow(tr("&GPU:"), mGpu);

    mGpusPerNode = new QSpinBox(page);
    mGpusPerNode->setRange(1, 64);
    mGpusPerNode->setKeyboardTracking(false);
    connect(mGpusPerNode, &QSpinBox::valueChanged, this,
            [this] { editGroup(int(ClusterDocument::GroupField::GpusPerNode)); });
    form->addRow(tr("GPUs per &node:"), mGpusPerNode);

    mCount = new QSpinBox(page);
    mCount->setRange(1, 100000);
    mCount->setKeyboardTracking(false);
    mCount->setToolTip(tr("Number of identical nodes in this group"));
    connect(mCount, &QSpinBox::valueChanged, this, [this] { editGroup(int(ClusterDocument::GroupField::Count)); });
    form->addRow(tr("N&odes:"), mCount);

    mIntraOverride = new QCheckBox(tr("Override intra-node link"), page);
    mIntraOverride->setToolTip(tr("Unchecked: derived from the GPU's scale-up link (NVLink, Infinity Fabric, PCIe)"));
    connect(mIntraOverride, &QCheckBox::toggled, this,
            [this] { editGroup(int(ClusterDocument::GroupField::IntraLink)); });
    form->addRow(mIntraOverride);
    mIntraBandwidth = bandwidthSpin(page);
    mIntraLatency = latencySpin(page);
    connect(mIntraBandwidth, &QDoubleSpinBox::valueChanged, this,
            [this] { editGroup(int(ClusterDocument::GroupField::IntraLink)); });
    connect(mIntraLatency, &QDoubleSpinBox::valueChanged, this,
            [this] { editGroup(int(ClusterDocument::GroupField::IntraLink)); });
    form->addRow(tr("Intra bandwidth:"), mIntraBandwidth);
    form->addRow(tr("Intra latency:"), mIntraLatency);

    mGroupInfo = new QLabel(page);
    mGroupInfo->setWordWrap(true);
    mGroupInfo->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(mGroupInfo);
    return page;
}

QWidget *NodePropertyPanel::buildLinkPage()
{
    auto *page = new QWidget(this);
    auto *form = new QFormLayout(page);
    form->setContentsMargins(0, 0, 0, 0);
    mLinkTitle = title(page);
    form->addRow(mLinkTitle);
    mLinkBandwidth = bandwidthSpin(page);
    mLinkLatency = latencySpin(page);
    connect(mLinkBandwidth, &QDoubleSpinBox::valueChanged, this, &NodePropertyPanel::editLink);
    connect(mLinkLatency, &QDoubleSpinBox::valueChanged, this, &NodePropertyPanel::editLink);
    form->addRow(tr("&Bandwidth:"), mLinkBandwidth);
    form->addRow(tr("&Latency:"), mLinkLatency);
    mLinkRemove = new QPushButton(tr("Remove link"), page);
    connect(mLinkRemove, &QPushButton::clicked, this, [this] {
        if (!mLinks.isEmpty())
            mDocument->removeLinkOverrides({mLinks.front()});
    });
    form->addRow(mLinkRemove);
    auto *hint = new QLabel(tr("Traffic between these two nodes (or groups) uses this link instead of the "
                               "default inter-node link."),
                            page);
    hint->setWordWrap(true);
    form->addRow(hint);
    return page;
}

QWidget *NodePropertyPanel::buildNetworkPage()
{
    auto *page = new QWidget(this);
    auto *form = new QFormLayout(page);
    form->setContentsMargins(0, 0, 0, 0);
    auto *t = title(page);
    t->setText(tr("Default inter-node network"));
    form->addRow(t);
    mDefaultBandwidth = bandwidthSpin(page);
    mDefaultLatency = latencySpin(page);
    connect(mDefaultBandwidth, &QDoubleSpinBox::valueChanged, this, &NodePropertyPanel::editDefault);
    connect(mDefaultLatency, &QDoubleSpinBox::valueChanged, this, &NodePropertyPanel::editDefault);
    form->addRow(tr("&Bandwidth:"), mDefaultBandwidth);
    form->addRow(tr("&Latency:"), mDefaultLatency);
    mNetworkInfo = new QLabel(page);
    mNetworkInfo->setWordWrap(true);
    form->addRow(mNetworkInfo);
    return page;
}

void NodePropertyPanel::setSelection(const QVector<int> &groups, const QVector<int> &links)
{
    mGroups = groups;
    mLinks = links;
    showError({});
    refresh();
}

int NodePropertyPanel::currentPage() const
{
    return mStack->currentIndex();
}

QString NodePropertyPanel::errorText() const
{
    return mError->isHidden() ? QString() : mError->text();
}

void NodePropertyPanel::showError(const QString &text)
{
    mError->setText(text);
    mError->setVisible(!text.isEmpty());
}

void NodePropertyPanel::refresh()
{
    const memx::Cluster &c = mDocument->cluster();
    // Drop indices that no longer exist (the canvas re-reports its selection anyway).
    mGroups.erase(
        std::remove_if(mGroups.begin(), mGroups.end(), [&](int g) { return g < 0 || g >= int(c.groups.size()); }),
        mGroups.end());
    mLinks.erase(std::remove_if(mLinks.begin(), mLinks.end(),
                                [&](int l) { return l < 0 || l >= int(c.network.overrides.size()); }),
                 mLinks.end());

    if (!mGroups.isEmpty()) {
        mStack->setCurrentIndex(GroupPage);
        const memx::NodeGroup &g = c.groups[size_t(mGroups.front())];
        const memx::GpuSpec &d = c.deviceOf(g);
        const QSignalBlocker b1(mName), b2(mGpu), b3(mGpusPerNode), b4(mCount), b5(mIntraOverride), b6(mIntraBandwidth),
            b7(mIntraLatency);
        mGroupTitle->setText(mGroups.size() == 1 ? tr("Node group")
                                                 : tr("Node group (first of %1 selected)").arg(mGroups.size()));
        mName->setText(QString::fromStdString(g.name));
        for (const memx::GpuSpec &k : mDocument->knownDevices()) // loaded GPU files: pick them too
            if (mGpu->findData(QString::fromStdString(k.id)) < 0)
                mGpu->addItem(QStringLiteral("%1 %2 (custom)")
                                  .arg(QString::fromStdString(k.vendor), QString::fromStdString(k.name)),
                              QString::fromStdString(k.id));
        int gi = mGpu->findData(QString::fromStdString(d.id));
        if (gi < 0) { // a custom device of this cluster
            mGpu->addItem(
                QStringLiteral("%1 %2 (custom)").arg(QString::fromStdString(d.vendor), QString::fromStdString(d.name)),
                QString::fromStdString(d.id));
            gi = mGpu->count() - 1;
        }
        mGpu->setCurrentIndex(gi);
        mGpusPerNode->setValue(g.gpusPerNode);
        mCount->setValue(g.count);
        const memx::Link intra = c.intraLink(g);
        mIntraOverride->setChecked(g.intraLink.has_value());
        mIntraBandwidth->setValue(intra.bandwidthGBps);
        mIntraLatency->setValue(intra.latencyUs);
        mIntraBandwidth->setEnabled(g.intraLink.has_value());
        mIntraLatency->setEnabled(g.intraLink.has_value());
        const int gpus = g.count * g.gpusPerNode;
        const double pflops = d.peakTflops(true).value_or(0) * gpus / 1000;
        mGroupInfo->setText(tr("%1 GPUs in %2 node(s) \u00b7 %3 GiB \u00b7 %4 PFLOP/s dense %5")
                                .arg(gpus)
                                .arg(g.count)
                                .arg(d.memoryGiB.value_or(0) * gpus, 0, 'f', 0)
                                .arg(pflops, 0, 'f', 2)
                                .arg(d.denseBf16Tflops ? QStringLiteral("BF16") : QStringLiteral("FP16")));
    } else if (!mLinks.isEmpty()) {
        mStack->setCurrentIndex(LinkPage);
        const memx::LinkOverride &o = c.network.overrides[size_t(mLinks.front())];
        const QSignalBlocker b1(mLinkBandwidth), b2(mLinkLatency);
        mLinkTitle->setText(tr("Link %1 \u2194 %2").arg(QString::fromStdString(o.a), QString::fromStdString(o.b)));
        mLinkBandwidth->setValue(o.link.bandwidthGBps);
        mLinkLatency->setValue(o.link.latencyUs);
    } else {
        mStack->setCurrentIndex(NetworkPage);
        const QSignalBlocker b1(mDefaultBandwidth), b2(mDefaultLatency);
        mDefaultBandwidth->setValue(c.network.interNode.bandwidthGBps);
        mDefaultLatency->setValue(c.network.interNode.latencyUs);
        mNetworkInfo->setText(tr("Used between any two nodes without a link override (%n override(s) in this cluster). "
                                 "Select a node or a link on the canvas to edit it.",
                                 nullptr, int(c.network.overrides.size())));
    }
}

void NodePropertyPanel::editGroup(int field)
{
    if (mGroups.isEmpty())
        return;
    const int index = mGroups.front();
    memx::NodeGroup g = mDocument->cluster().groups.at(size_t(index));
    const auto f = ClusterDocument::GroupField(field);
    switch (f) {
    case ClusterDocument::GroupField::Name:
        g.name = mName->text().trimmed().toStdString();
        break;
    case ClusterDocument::GroupField::Gpu:
        g.gpu = mGpu->currentData().toString().toStdString();
        break;
    case ClusterDocument::GroupField::GpusPerNode:
        g.gpusPerNode = mGpusPerNode->value();
        break;
    case ClusterDocument::GroupField::Count:
        g.count = mCount->value();
        break;
    case ClusterDocument::GroupField::IntraLink:
        if (mIntraOverride->isChecked())
            g.intraLink = memx::Link {mIntraBandwidth->value(), mIntraLatency->value(), {}};
        else
            g.intraLink.reset();
        break;
    case ClusterDocument::GroupField::All:
        break;
    }
    QString error;
    if (!mDocument->changeNodeGroup(index, g, f, &error)) {
        refresh();
        showError(tr("Not applied: %1").arg(error));
        return;
    }
    showError({});
}

void NodePropertyPanel::editLink()
{
    if (mLinks.isEmpty())
        return;
    QString error;
    if (!mDocument->changeLinkOverride(mLinks.front(), {mLinkBandwidth->value(), mLinkLatency->value(), {}},
                                       kLinkMergeKey, &error)) {
        refresh();
        showError(tr("Not applied: %1").arg(error));
        return;
    }
    showError({});
}

void NodePropertyPanel::editDefault()
{
    QString error;
    const int key = sender() == mDefaultLatency ? kDefaultLatencyKey : kDefaultBandwidthKey;
    if (!mDocument->setDefaultLink({mDefaultBandwidth->value(), mDefaultLatency->value(), {}}, key, &error)) {
        refresh();
        showError(tr("Not applied: %1").arg(error));
        return;
    }
    showError({});
}

} // namespace memx::ui
