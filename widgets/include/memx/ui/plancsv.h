#pragma once

#include "memx/ui/resultsviewtypes.h"

#include <QString>
#include <QVector>

namespace memx::ui {

/// One field of a CSV row (RFC 4180): quoted when it holds a comma, a quote or a line break,
/// quotes doubled. A field a spreadsheet would run as a formula (starting with =, +, - or @ and
/// not a number) gets a leading apostrophe inside the quotes.
QString csvField(const QString &text);

/// Plans as CSV (RFC 4180, "\r\n" line ends, UTF-8 when written): a header line, then one row per
/// plan in the given order. Columns: `rank` (only when `ranks` has one entry per plan), `plan`
/// (the core's configuration index, the number exports write as "search #n"), `time_ms`,
/// `peak_memory_pct`, `imbalance_cv`, `score` (lower is better), `pareto`, `oom`, `risk_of_oom`,
/// `launcher`, `idle`, `summary`; when any plan has learned figures also `time_spread_pct`,
/// `memory_spread_pct` and `extrapolating`. Numbers are full precision ('g', 10 digits), flags 0/1.
QString plansCsv(const QVector<PlanPoint> &plans, const QVector<int> &ranks = {});

/// Writes `text` to `path` all or nothing (QSaveFile). False with `error` naming the file and
/// the reason on failure; the old file stays then.
bool writeTextFile(const QString &path, const QString &text, QString *error);

} // namespace memx::ui
