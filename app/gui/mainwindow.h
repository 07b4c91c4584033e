#pragma once

#include "memx/ui/documentstorage.h"
#include "memx/ui/settings.h"

#include <QMainWindow>

class QLabel;
class QMenu;
class QTabWidget;

namespace memx {
class LoadError;
}

namespace memx::ui {
class ClusterCanvas;
class ClusterDocument;
class GpuPalette;
class ModelPanel;
class NodePropertyPanel;
} // namespace memx::ui

/// The workbench main window: wiring only. One ClusterDocument per window; canvas in the centre,
/// GPU palette (left), properties and model (right), results area below the canvas.
class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    /// `rememberLayout` false: ignore and do not write saved settings (screenshots, tests).
    explicit MainWindow(bool rememberLayout = true, QWidget *parent = nullptr);
    ~MainWindow() override;

    /// Path of the sample cluster the workbench opens by default.
    static QString defaultSampleCluster();
    /// Folders holding the shipped sample clusters (source tree first, then the installed data dir).
    static QStringList sampleClusterDirs();

    /// Opens a cluster file into this window (asks to save unsaved edits first when `ask`).
    /// Shows every load problem in a dialog and returns false on failure.
    bool openClusterFile(const QString &path, bool ask = false);
    /// Grabs the window into a PNG once the event loop has painted it, then quits.
    void saveScreenshotAndQuit(const QString &path);

    memx::ui::ClusterDocument *document() const { return mDocument; }
    /// Where the integrator adds result views (Pareto chart, memory bars, plan table) as tabs.
    QTabWidget *resultsArea() const { return mResults; }

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void createMenus();
    void newDocument();
    void openDialog();
    bool save();
    bool saveAs();
    void importCluster();
    void exportCluster();
    bool maybeSave();
    void updateTitle();
    void updateSummary();
    void rebuildRecentMenu();
    void rebuildSampleMenu();
    void showLoadErrors(const QString &title, const memx::LoadError &error);
    void addGpuAtFreeSpot(const QString &deviceId);
    bool isSampleFile(const QString &path) const;

    bool mRememberLayout;
    memx::ui::Settings mSettings;
    memx::ui::ClusterJsonStorage mStorage;
    memx::ui::ClusterDocument *mDocument = nullptr;
    memx::ui::ClusterCanvas *mCanvas = nullptr;
    memx::ui::GpuPalette *mPalette = nullptr;
    memx::ui::NodePropertyPanel *mProperties = nullptr;
    memx::ui::ModelPanel *mModelPanel = nullptr;
    QLabel *mSummary = nullptr;
    QTabWidget *mResults = nullptr;
    QMenu *mRecentMenu = nullptr;
    QMenu *mSampleMenu = nullptr;
    QMenu *mViewMenu = nullptr;
};
