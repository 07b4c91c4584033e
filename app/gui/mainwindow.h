#pragma once

#include "memx/cluster/cluster.h"

#include <QMainWindow>

class QLabel;
class QTreeWidget;

/// The workbench main window: wiring only.
class MainWindow : public QMainWindow
{
    Q_OBJECT

public:
    explicit MainWindow(QWidget *parent = nullptr);

    /// Path of the sample cluster the workbench opens by default.
    static QString defaultSampleCluster();
    bool openClusterFile(const QString &path);
    /// Grabs the window into a PNG once the event loop has painted it, then quits.
    void saveScreenshotAndQuit(const QString &path);

private:
    memx::Cluster mCluster;
    QLabel *mSummary = nullptr;
    QTreeWidget *mNodes = nullptr;
};
