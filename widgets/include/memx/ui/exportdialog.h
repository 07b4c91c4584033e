#pragma once

#include "memx/export/export.h"

#include <QDialog>

#include <optional>
#include <vector>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;

namespace memx::ui {

/// Exports one plan (memx::exportPlan / memx::writeExportFiles): format (Megatron-LM,
/// FlagScale, Slurm, JSON), output folder, master address/port, layer-split style and "overwrite
/// existing files". The dialog regenerates the files on every change and shows either the list of
/// files with a preview of the selected one, or every reason the plan cannot be expressed in the
/// format (a Megatron refusal of a heterogeneous plan points to FlagScale). Export writes all files
/// or none. The JSON export carries `metrics` (the cost model's estimate). GUI thread only.
class ExportDialog : public QDialog {
    Q_OBJECT
public:
    ExportDialog(const memx::Plan &plan, const memx::Cluster &cluster, const memx::Model &model,
                 std::optional<nlohmann::json> metrics, QWidget *parent = nullptr);

    void setFormat(memx::ExportFormat format);
    memx::ExportFormat format() const;
    void setOutputDir(const QString &dir);
    QString outputDir() const;
    void setForce(bool force);
    void setMasterAddress(const QString &host, int port);

    /// Files the current settings produce (empty when refused).
    const std::vector<memx::ExportFile> &files() const { return mFiles; }
    /// Why the plan cannot be exported in the current format (empty when it can).
    QString refusalText() const { return mRefusal; }
    /// Writes the files; on failure shows why in the dialog and returns false.
    bool writeFiles();
    /// Full paths written by the last successful writeFiles().
    QStringList writtenPaths() const { return mWritten; }
    QString statusText() const;

private:
    void regenerate();
    void showPreview(int row);
    void browse();

    memx::ExportRequest mRequest;
    std::vector<memx::ExportFile> mFiles;
    QString mRefusal;
    QStringList mWritten;

    QComboBox *mFormat = nullptr;
    QComboBox *mSplitStyle = nullptr;
    QLineEdit *mDir = nullptr;
    QLineEdit *mMasterAddr = nullptr;
    QSpinBox *mMasterPort = nullptr;
    QCheckBox *mForce = nullptr;
    QListWidget *mFileList = nullptr;
    QPlainTextEdit *mPreview = nullptr;
    QLabel *mStatus = nullptr;
    QPushButton *mExport = nullptr;
};

} // namespace memx::ui
