#include "memx/ui/resultsviewtypes.h"

#include "memx/search/objective.h"

#include <algorithm>
#include <cmath>

namespace memx::ui {

QString metricLabel(Metric metric)
{
    switch (metric) {
    case Metric::Time:
        return QStringLiteral("Time per iteration (ms)");
    case Metric::Memory:
        return QStringLiteral("Peak memory (% of capacity)");
    case Metric::Balance:
        return QStringLiteral("Imbalance (CV)");
    }
    return {};
}

QString formatMetric(Metric metric, double value)
{
    switch (metric) {
    case Metric::Time:
        if (value >= 10000.0) // 10 s and more read in seconds, not 1,400,000 ms
            return QStringLiteral("%1 s").arg(value / 1000.0, 0, 'f', value < 100000.0 ? 2 : 1);
        return QStringLiteral("%1 ms").arg(value, 0, 'f', value < 100.0 ? 2 : 1);
    case Metric::Memory:
        return QStringLiteral("%1 %").arg(value * 100.0, 0, 'f', 1);
    case Metric::Balance:
        return QStringLiteral("%1 CV").arg(value, 0, 'f', 3);
    }
    return {};
}

bool timeInSeconds(const QVector<PlanPoint> &plans)
{
    return std::any_of(plans.begin(), plans.end(), [](const PlanPoint &p) { return p.timeMs >= kTimeSecondsFromMs; });
}

double utilisationCv(const QVector<GpuMemoryBar> &bars)
{
    // Over the GPUs the plan uses, as the cost model's B: idle GPUs (stage -1) hold nothing.
    int n = 0;
    double sum = 0.0;
    for (const auto &b : bars)
        if (b.stage >= 0) {
            sum += b.utilisation();
            ++n;
        }
    if (n < 2)
        return 0.0;
    const double mean = sum / n;
    if (mean <= 0.0)
        return 0.0;
    double sq = 0.0;
    for (const auto &b : bars)
        if (b.stage >= 0) {
            const double d = b.utilisation() - mean;
            sq += d * d;
        }
    return std::sqrt(sq / n) / mean;
}

QColor vendorColor(const QString &vendor)
{
    const QString v = vendor.toLower();
    if (v == QLatin1String("nvidia"))
        return QColor(0x76, 0xb9, 0x00);
    if (v == QLatin1String("amd"))
        return QColor(0xd0, 0x21, 0x2b);
    if (v == QLatin1String("intel"))
        return QColor(0x00, 0x71, 0xc5);
    return QColor(0x80, 0x80, 0x80);
}

} // namespace memx::ui

namespace memx::ui {

void scorePlans(QVector<PlanPoint> &plans, const ObjectiveWeights &weights)
{
    // The core objective (memx/search/objective.h), so views rank exactly like `memx search`.
    std::vector<double> t, m, b;
    t.reserve(size_t(plans.size()));
    m.reserve(size_t(plans.size()));
    b.reserve(size_t(plans.size()));
    for (const auto &p : plans) {
        t.push_back(p.timeMs);
        m.push_back(p.peakMemoryFraction);
        b.push_back(p.imbalance);
    }
    const memx::MetricView view {t.data(), m.data(), b.data(), t.size()};
    const std::vector<double> logs = memx::logScores(view, weights);
    for (qsizetype i = 0; i < plans.size(); ++i)
        plans[i].score = std::exp(logs[size_t(i)]);
}

} // namespace memx::ui
