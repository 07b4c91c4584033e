#pragma once

#include <QVector>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QStackedWidget;

namespace memx::ui {

class ClusterDocument;

/// Property editor for the canvas selection: the first selected node group (name, GPU type, GPUs
/// per node, node count, intra-node link override), else the first selected link override
/// (bandwidth, latency), else the cluster's default inter-node network. Every edit goes through
/// ClusterDocument (undoable; consecutive edits of one field merge); rejected values are shown
/// inline in red and the fields return to the document's values.
class NodePropertyPanel : public QWidget {
    Q_OBJECT

public:
    explicit NodePropertyPanel(ClusterDocument *document, QWidget *parent = nullptr);

    /// What the panel edits; call when the canvas selection changes.
    void setSelection(const QVector<int> &groups, const QVector<int> &links);

    /// The page currently shown: 0 group, 1 link, 2 network.
    int currentPage() const;
    /// The last validation message ("" when the last edit was accepted).
    QString errorText() const;

    // Editors (exposed for tests and keyboard focus).
    QLineEdit *nameEdit() const { return mName; }
    QComboBox *gpuCombo() const { return mGpu; }
    QSpinBox *gpusPerNodeSpin() const { return mGpusPerNode; }
    QSpinBox *countSpin() const { return mCount; }
    QDoubleSpinBox *linkBandwidthSpin() const { return mLinkBandwidth; }
    QDoubleSpinBox *defaultBandwidthSpin() const { return mDefaultBandwidth; }

private:
    void refresh();
    void showError(const QString &text);
    void editGroup(int field);
    void editLink();
    void editDefault();
    QWidget *buildGroupPage();
    QWidget *buildLinkPage();
    QWidget *buildNetworkPage();

    ClusterDocument *mDocument;
    QVector<int> mGroups, mLinks;
    QStackedWidget *mStack = nullptr;
    QLabel *mError = nullptr;

    QLabel *mGroupTitle = nullptr, *mGroupInfo = nullptr;
    QLineEdit *mName = nullptr;
    QComboBox *mGpu = nullptr;
    QSpinBox *mGpusPerNode = nullptr, *mCount = nullptr;
    QCheckBox *mIntraOverride = nullptr;
    QDoubleSpinBox *mIntraBandwidth = nullptr, *mIntraLatency = nullptr;

    QLabel *mLinkTitle = nullptr;
    QDoubleSpinBox *mLinkBandwidth = nullptr, *mLinkLatency = nullptr;
    QPushButton *mLinkRemove = nullptr;

    QLabel *mNetworkInfo = nullptr;
    QDoubleSpinBox *mDefaultBandwidth = nullptr, *mDefaultLatency = nullptr;
};

} // namespace memx::ui
