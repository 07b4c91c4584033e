#include "memx/ui/settings.h"

#include <QFileInfo>
#include <QSettings>

#include <algorithm>
#include <cmath>

namespace memx::ui {

namespace {
const QString kGeometry = QStringLiteral("window/geometry");
const QString kState = QStringLiteral("window/state");
const QString kRecent = QStringLiteral("files/recent");
const QString kWeightTime = QStringLiteral("objective/timeWeight");
const QString kWeightMemory = QStringLiteral("objective/memoryWeight");
const QString kWeightBalance = QStringLiteral("objective/balanceWeight");
const QString kModel = QStringLiteral("model/lastId");
const QString kExportFormat = QStringLiteral("export/format");
const QString kExportDir = QStringLiteral("export/dir");

double weight(const QSettings &s, const QString &key, double fallback)
{
    bool ok = false;
    const double v = s.value(key, fallback).toDouble(&ok);
    return ok && std::isfinite(v) ? std::clamp(v, 0.0, 1.0) : fallback;
}
} // namespace

Settings::Settings()
    : mOwned(std::make_unique<QSettings>())
    , mSettings(mOwned.get())
{
}

Settings::Settings(QSettings *settings)
    : mSettings(settings)
{
}

Settings::~Settings() = default;

QByteArray Settings::windowGeometry() const
{
    return mSettings->value(kGeometry).toByteArray();
}

void Settings::setWindowGeometry(const QByteArray &geometry)
{
    mSettings->setValue(kGeometry, geometry);
}

QByteArray Settings::windowState() const
{
    return mSettings->value(kState).toByteArray();
}

void Settings::setWindowState(const QByteArray &state)
{
    mSettings->setValue(kState, state);
}

QStringList Settings::recentFiles() const
{
    QStringList files = mSettings->value(kRecent).toStringList();
    files.removeAll(QString());
    files.removeDuplicates();
    return files.mid(0, kMaxRecentFiles);
}

void Settings::addRecentFile(const QString &path)
{
    const QString abs = QFileInfo(path).absoluteFilePath();
    QStringList files = recentFiles();
    files.removeAll(abs);
    files.prepend(abs);
    mSettings->setValue(kRecent, files.mid(0, kMaxRecentFiles));
}

void Settings::removeRecentFile(const QString &path)
{
    QStringList files = recentFiles();
    files.removeAll(QFileInfo(path).absoluteFilePath());
    files.removeAll(path);
    mSettings->setValue(kRecent, files);
}

QStringList Settings::gpuFiles() const
{
    QStringList files = mSettings->value(QStringLiteral("gpuFiles")).toStringList();
    files.removeAll(QString());
    files.removeDuplicates();
    return files;
}

void Settings::addGpuFile(const QString &path)
{
    QStringList files = gpuFiles();
    const QString abs = QFileInfo(path).absoluteFilePath();
    if (!files.contains(abs))
        files.append(abs);
    mSettings->setValue(QStringLiteral("gpuFiles"), files);
}

void Settings::removeGpuFile(const QString &path)
{
    QStringList files = gpuFiles();
    files.removeAll(QFileInfo(path).absoluteFilePath());
    files.removeAll(path);
    mSettings->setValue(QStringLiteral("gpuFiles"), files);
}

void Settings::clearRecentFiles()
{
    mSettings->remove(kRecent);
}

memx::ObjectiveWeights Settings::lastWeights() const
{
    const memx::ObjectiveWeights d; // the documented default
    return {weight(*mSettings, kWeightTime, d.time), weight(*mSettings, kWeightMemory, d.memory),
            weight(*mSettings, kWeightBalance, d.balance)};
}

void Settings::setLastWeights(const memx::ObjectiveWeights &w)
{
    mSettings->setValue(kWeightTime, std::clamp(w.time, 0.0, 1.0));
    mSettings->setValue(kWeightMemory, std::clamp(w.memory, 0.0, 1.0));
    mSettings->setValue(kWeightBalance, std::clamp(w.balance, 0.0, 1.0));
}

QString Settings::lastModelId() const
{
    const QString id = mSettings->value(kModel).toString();
    return id.isEmpty() ? QStringLiteral("llama2-7b") : id;
}

void Settings::setLastModelId(const QString &id)
{
    mSettings->setValue(kModel, id);
}

QString Settings::lastExportFormat() const
{
    return mSettings->value(kExportFormat).toString();
}

void Settings::setLastExportFormat(const QString &format)
{
    mSettings->setValue(kExportFormat, format);
}

QString Settings::lastExportDir() const
{
    return mSettings->value(kExportDir).toString();
}

void Settings::setLastExportDir(const QString &dir)
{
    mSettings->setValue(kExportDir, dir);
}

} // namespace memx::ui
