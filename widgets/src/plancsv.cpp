#include "memx/ui/plancsv.h"

#include "memx/ui/planresults.h"

#include <QFileInfo>
#include <QSaveFile>
#include <QStringList>

#include <algorithm>

namespace memx::ui {

QString csvField(const QString &text)
{
    QString t = text;
    if (!t.isEmpty() && QStringLiteral("=+-@").contains(t.front())) {
        bool number = false;
        t.toDouble(&number);
        if (!number)
            t.prepend(u'\'');
    }
    const bool quote
        = t.contains(u',') || t.contains(u'"') || t.contains(u'\n') || t.contains(u'\r') || t.startsWith(u'\'');
    if (!quote)
        return t;
    t.replace(QStringLiteral("\""), QStringLiteral("\"\""));
    return u'"' + t + u'"';
}

QString plansCsv(const QVector<PlanPoint> &plans, const QVector<int> &ranks)
{
    const bool withRank = !ranks.isEmpty() && ranks.size() == plans.size();
    const bool learned = std::any_of(plans.begin(), plans.end(), [](const PlanPoint &p) { return p.learned; });
    QStringList header;
    if (withRank)
        header << QStringLiteral("rank");
    header << QStringLiteral("plan") << QStringLiteral("time_ms") << QStringLiteral("peak_memory_pct")
           << QStringLiteral("imbalance_cv") << QStringLiteral("score") << QStringLiteral("pareto")
           << QStringLiteral("oom") << QStringLiteral("risk_of_oom") << QStringLiteral("launcher")
           << QStringLiteral("idle") << QStringLiteral("summary");
    if (learned)
        header << QStringLiteral("time_spread_pct") << QStringLiteral("memory_spread_pct")
               << QStringLiteral("extrapolating");
    QString out = header.join(u',') + QStringLiteral("\r\n");
    auto num = [](double v) { return QString::number(v, 'g', 10); };
    auto flag = [](bool b) { return b ? QStringLiteral("1") : QStringLiteral("0"); };
    for (qsizetype i = 0; i < plans.size(); ++i) {
        const PlanPoint &p = plans[i];
        QStringList row;
        if (withRank)
            row << QString::number(ranks[i]);
        row << QString::number(PlanResults::indexOf(p.id)) << num(p.timeMs) << num(p.peakMemoryFraction * 100.0)
            << num(p.imbalance) << num(p.score) << flag(p.onFront) << flag(p.oom) << flag(p.riskOfOom)
            << csvField(p.launcher) << csvField(p.idle) << csvField(p.summary);
        if (learned)
            row << (p.learned ? num(p.timeSpread * 100.0) : QString())
                << (p.learned ? num(p.memorySpread * 100.0) : QString()) << flag(p.extrapolating);
        out += row.join(u',') + QStringLiteral("\r\n");
    }
    return out;
}

bool writeTextFile(const QString &path, const QString &text, QString *error)
{
    QSaveFile file(path);
    auto fail = [&](const QString &why) {
        if (error)
            *error = QObject::tr("Cannot write %1: %2").arg(QFileInfo(path).fileName(), why);
        return false;
    };
    if (!file.open(QIODevice::WriteOnly))
        return fail(file.errorString());
    const QByteArray bytes = text.toUtf8();
    if (file.write(bytes) != bytes.size())
        return fail(file.errorString());
    if (!file.commit())
        return fail(file.errorString());
    return true;
}

} // namespace memx::ui
