#include "mainwindow.h"

#include "memx/io/formats.h"
#include "memx/ui/clustersummary.h"
#include "memx/util/diagnostic.h"

#include <QApplication>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QStatusBar>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

MainWindow::MainWindow(QWidget *parent) : QMainWindow(parent)
{
    auto *central = new QWidget(this);
    auto *layout = new QVBoxLayout(central);
    mSummary = new QLabel(central);
    mSummary->setWordWrap(true);
    mNodes = new QTreeWidget(central);
    mNodes->setHeaderLabels({tr("Node group"), tr("GPU"), tr("Vendor"), tr("GPUs/node"), tr("Nodes"), tr("Memory (GiB)")});
    mNodes->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    layout->addWidget(mSummary);
    layout->addWidget(mNodes);
    setCentralWidget(central);
    resize(1100, 700);
}

QString MainWindow::defaultSampleCluster()
{
    for (const QString &dir : {QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters"), QStringLiteral(MEMX_DATA_DIR "/sample_clusters")}) {
        const QString path = dir + QStringLiteral("/paper-20gpu-nvidia-amd.json");
        if (QFileInfo::exists(path))
            return path;
    }
    return QString();
}

bool MainWindow::openClusterFile(const QString &path)
{
    try {
        mCluster = memx::loadCluster(path.toStdString());
    } catch (const std::exception &e) {
        QMessageBox::warning(this, tr("Cannot open cluster"), QString::fromStdString(e.what()));
        return false;
    }
    setWindowTitle(tr("%1 - MemX Workbench").arg(QString::fromStdString(mCluster.name)));
    mSummary->setText(QStringLiteral("<b>%1</b><br>%2")
                          .arg(QString::fromStdString(mCluster.name).toHtmlEscaped(),
                               memx::ui::clusterSummaryLine(mCluster).toHtmlEscaped()));
    mNodes->clear();
    for (const auto &g : mCluster.groups) {
        const auto &d = mCluster.deviceOf(g);
        auto *item = new QTreeWidgetItem(mNodes);
        item->setText(0, QString::fromStdString(g.name));
        item->setText(1, QString::fromStdString(d.name));
        item->setText(2, QString::fromStdString(d.vendor));
        item->setText(3, QString::number(g.gpusPerNode));
        item->setText(4, QString::number(g.count));
        item->setText(5, QString::number(d.memoryGiB.value_or(0), 'f', 1));
    }
    statusBar()->showMessage(tr("Opened %1").arg(path));
    return true;
}

void MainWindow::saveScreenshotAndQuit(const QString &path)
{
    QTimer::singleShot(500, this, [this, path] {
        grab().save(path);
        QApplication::quit();
    });
}
