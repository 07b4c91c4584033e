#pragma once

// Helpers shared by the test programs (included from tests/<layer>/tst_*.cpp).

#include <QByteArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QtGlobal>

namespace memxtest {

/// One finished run of the `memx` CLI built with the tests (MEMX_CLI_PATH).
struct CliRun {
    int code = -1; ///< exit code
    QByteArray out, err;
    QString outText() const { return QString::fromUtf8(out); }
    QString errText() const { return QString::fromUtf8(err); }
    /// stdout parsed as a JSON object (empty when it is not one).
    QJsonObject json() const { return QJsonDocument::fromJson(out).object(); }
};

/// Runs `memx args...` to completion; a run that does not finish within `timeoutMs` fails the
/// test program loudly (qFatal) instead of returning a half-read result.
inline CliRun runMemx(const QStringList &args, int timeoutMs = 300000)
{
    QProcess p;
    p.start(QStringLiteral(MEMX_CLI_PATH), args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished(5000);
        qFatal("memx %s did not finish within %d ms", qPrintable(args.join(QLatin1Char(' '))), timeoutMs);
    }
    return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

} // namespace memxtest
