#pragma once

#include "memx/search/objective.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <memory>

class QSettings;

namespace memx::ui {

/// Typed access to the workbench's UI state in QSettings (window layout, recent files, last
/// objective weights, last model). User data never lives here: it is in cluster/project files.
class Settings {
public:
    static constexpr int kMaxRecentFiles = 8;

    /// Uses the application's default QSettings (organisation/application name).
    Settings();
    /// Uses `settings` (not owned), e.g. an INI file in a test.
    explicit Settings(QSettings *settings);
    ~Settings();

    QByteArray windowGeometry() const;
    void setWindowGeometry(const QByteArray &geometry);
    QByteArray windowState() const;
    void setWindowState(const QByteArray &state);

    /// Most recent first, at most kMaxRecentFiles, no duplicates.
    QStringList recentFiles() const;
    /// Moves `path` (made absolute) to the front of the recent files.
    void addRecentFile(const QString &path);
    void removeRecentFile(const QString &path);
    void clearRecentFiles();
    /// The GPU files loaded with "Load GPUs..." (absolute paths, load order), reloaded at start.
    QStringList gpuFiles() const;
    void addGpuFile(const QString &path);
    void removeGpuFile(const QString &path);

    /// The last objective weights (each clamped to 0..1); the documented default
    /// memx::ObjectiveWeights {} on a first run.
    memx::ObjectiveWeights lastWeights() const;
    void setLastWeights(const memx::ObjectiveWeights &weights);

    /// Id of the model preset used last ("llama2-7b" when never set).
    QString lastModelId() const;
    void setLastModelId(const QString &id);

    /// The export dialog's last format (memx::toString of the format; "" when never set) and folder.
    QString lastExportFormat() const;
    void setLastExportFormat(const QString &format);
    QString lastExportDir() const;
    void setLastExportDir(const QString &dir);

private:
    std::unique_ptr<QSettings> mOwned;
    QSettings *mSettings;
};

} // namespace memx::ui
