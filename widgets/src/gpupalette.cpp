#include "memx/ui/gpupalette.h"

#include "memx/io/formats.h"
#include "memx/ui/gpucataloguemodel.h"

#include <QAction>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QResizeEvent>
#include <QSortFilterProxyModel>
#include <QStyle>
#include <QTreeView>
#include <QVBoxLayout>

namespace memx::ui {

GpuPalette::GpuPalette(QWidget *parent)
    : QWidget(parent)
{
    mModel = new GpuCatalogueModel(memx::builtinCatalogue(), this);
    mProxy = new QSortFilterProxyModel(this);
    mProxy->setSourceModel(mModel);
    mProxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    mProxy->setRecursiveFilteringEnabled(true);
    mFilter = new QLineEdit(this);
    mFilter->setPlaceholderText(tr("Filter GPUs..."));
    mFilter->setClearButtonEnabled(true);
    connect(mFilter, &QLineEdit::textChanged, mProxy, &QSortFilterProxyModel::setFilterFixedString);

    mView = new QTreeView(this);
    mView->setModel(mProxy);
    mView->setDragEnabled(true);
    mView->setDragDropMode(QAbstractItemView::DragOnly);
    mView->setSelectionMode(QAbstractItemView::SingleSelection);
    mView->setRootIsDecorated(true);
    mView->setUniformRowHeights(true);
    mView->setAlternatingRowColors(true);
    mView->expandAll();
    mView->header()->setStretchLastSection(false);
    mView->header()->setSectionResizeMode(GpuCatalogueModel::NameColumn, QHeaderView::Stretch);
    mView->header()->setSectionResizeMode(GpuCatalogueModel::MemoryColumn, QHeaderView::ResizeToContents);
    mView->header()->setSectionResizeMode(GpuCatalogueModel::ComputeColumn, QHeaderView::ResizeToContents);
    connect(mView, &QTreeView::activated, this, [this](const QModelIndex &proxyIndex) {
        const QString id = proxyIndex.data(GpuCatalogueModel::DeviceIdRole).toString();
        if (!id.isEmpty())
            emit gpuActivated(id);
    });
    connect(mFilter, &QLineEdit::textChanged, mView, &QTreeView::expandAll);
    connect(mModel, &QAbstractItemModel::modelReset, mView, &QTreeView::expandAll);
    // Removing the devices of a loaded GPU file (an absolute path; the open cluster's own devices
    // have a label instead and go with the cluster).
    mRemove = new QAction(tr("&Remove GPU File from Palette"), mView);
    mRemove->setShortcut(QKeySequence::Delete);
    mRemove->setShortcutContext(Qt::WidgetShortcut);
    mRemove->setEnabled(false);
    mView->addAction(mRemove);
    const auto originOf = [this](const QModelIndex &proxyIndex) {
        const QString origin = proxyIndex.data(GpuCatalogueModel::OriginRole).toString();
        return !origin.isEmpty() && QFileInfo(origin).isAbsolute() ? origin : QString();
    };
    const auto updateRemove = [this, originOf] {
        const QString origin = originOf(mView->currentIndex());
        mRemove->setEnabled(!origin.isEmpty());
        mRemove->setToolTip(origin.isEmpty() ? QString()
                                             : tr("Remove the GPUs of %1").arg(QFileInfo(origin).fileName()));
    };
    connect(mView->selectionModel(), &QItemSelectionModel::currentChanged, this, updateRemove);
    connect(mModel, &QAbstractItemModel::modelReset, this, updateRemove);
    connect(mRemove, &QAction::triggered, this, [this, originOf] {
        if (const QString origin = originOf(mView->currentIndex()); !origin.isEmpty())
            emit removeRequested(origin);
    });
    mView->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(mView, &QWidget::customContextMenuRequested, this, [this, updateRemove](const QPoint &pos) {
        const QModelIndex at = mView->indexAt(pos);
        if (!at.isValid())
            return;
        mView->setCurrentIndex(at);
        updateRemove();
        QMenu menu(this);
        menu.addAction(mRemove);
        menu.exec(mView->viewport()->mapToGlobal(pos));
    });

    mLoad = new QPushButton(tr("Load GPUs..."), this);
    mLoad->setToolTip(tr("Add GPUs the catalogue lacks from a memx.catalogue/1 file (e.g. "
                         "sample_gpus/blackwell-mi355x.json: B200, GB200, MI355X)"));
    connect(mLoad, &QPushButton::clicked, this, &GpuPalette::loadRequested);
    mNew = new QPushButton(tr("New GPU..."), this);
    mNew->setToolTip(tr("Define a GPU the catalogue lacks, starting from a similar one"));
    connect(mNew, &QPushButton::clicked, this, &GpuPalette::newRequested);
    // Side by side, neither widening the dock (two buttons' minimum widths pushed the right dock
    // column of a 1024 px window to 1069 px).
    for (QPushButton *b : {mLoad, mNew})
        b->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    auto *buttons = new QHBoxLayout;
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->addWidget(mLoad);
    buttons->addWidget(mNew);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(mFilter);
    layout->addWidget(mView);
    layout->addLayout(buttons);
}

void GpuPalette::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    const bool narrow = width() < FiguresMinWidth;
    mView->setColumnHidden(GpuCatalogueModel::MemoryColumn, narrow);
    mView->setColumnHidden(GpuCatalogueModel::ComputeColumn, narrow);
    // Narrow: less indentation, more of each name (the rest is in its tooltip).
    mView->setIndentation(narrow ? 10 : style()->pixelMetric(QStyle::PM_TreeViewIndentation, nullptr, mView));
}

} // namespace memx::ui
