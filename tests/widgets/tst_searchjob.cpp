// SearchJob: background search with progress, cancel, supersession; the UI thread stays free.
#include "memx/io/formats.h"
#include "memx/search/objective.h"
#include "memx/ui/planresults.h"
#include "memx/ui/searchjob.h"

#include <QSignalSpy>
#include <QTimer>
#include <QtTest>

using namespace memx::ui;
using memx::ObjectiveWeights;

namespace {
constexpr int kTimeoutMs = 240000;

memx::SearchRequest request(const char *cluster, const char *model = "llama2-7b")
{
    memx::SearchRequest r;
    r.cluster = memx::loadCluster(std::string(MEMX_SOURCE_DIR "/sample_clusters/") + cluster);
    r.model = memx::resolveModel(model);
    return r;
}
} // namespace

class TestSearchJob : public QObject {
    Q_OBJECT
private slots:
    void searchCompletesInTheBackground()
    {
        // The 20-GPU sample search runs in the worker; this (UI) thread keeps processing events
        // (a timer ticks meanwhile). How long the UI thread may be busy is measured, not asserted:
        // tests/bench/bench_gui.cpp (figures in docs/gui.md).
        SearchJob job;
        QSignalSpy finished(&job, &SearchJob::finished);
        QSignalSpy progress(&job, &SearchJob::progress);
        int ticks = 0;
        QTimer timer;
        timer.setInterval(5);
        connect(&timer, &QTimer::timeout, this, [&] { ++ticks; });
        timer.start();
        job.start(request("paper-20gpu-nvidia-amd.json"));
        QVERIFY(job.isRunning());
        QVERIFY(finished.wait(kTimeoutMs));
        timer.stop();
        QVERIFY2(ticks > 0, "the UI thread processed no timer event while the search ran");
        QVERIFY(progress.count() > 0);
        const auto outcome = finished.front().at(0).value<std::shared_ptr<const SearchOutcome>>();
        // The planned search: FlagScale (the sample's default target), the MI250X group idle.
        memx::PlannedSearchRequest planned;
        planned.search = request("paper-20gpu-nvidia-amd.json");
        const memx::PlannedSearchResult reference = memx::runPlannedSearch(planned);
        QCOMPARE(outcome->result.evaluated, reference.result.evaluated);
        QCOMPARE(outcome->result.timeMs, reference.result.timeMs);
        QCOMPARE(outcome->target, memx::LaunchTarget::FlagScale);
        QCOMPARE(outcome->subsets.size(), reference.subsets.size());
        QCOMPARE(outcome->idleText(0), std::string("idle: mi250x (8 GPUs)"));
        QVERIFY(!outcome->front.empty());
        QCOMPARE(outcome->front, memx::paretoFront(outcome->result));
        QVERIFY(!job.isRunning());

        // Mapping to the views: the shown set ranks exactly like the whole result.
        PlanResults results;
        results.setOutcome(outcome, {1.0, 0.5, 0.5});
        const auto top = memx::rank(outcome->result, memx::ObjectiveWeights {1.0, 0.5, 0.5}, 20);
        QCOMPARE(results.topPlanId(), PlanResults::idOf(top.front()));
        const QVector<PlanPoint> points = results.points();
        QVERIFY(points.size() >= qsizetype(outcome->front.size()));
        QVERIFY(size_t(points.size()) <= outcome->front.size() + PlanResults::TopShown + PlanResults::SampleShown + 3);
        // Scores over the shown set equal exp(logScores over the whole result).
        const auto all = memx::logScores(memx::metricsOf(outcome->result), memx::ObjectiveWeights {1.0, 0.5, 0.5});
        for (const PlanPoint &p : points)
            QVERIFY(qAbs(std::log(p.score) - all[PlanResults::indexOf(p.id)]) < 1e-9);
        // The 20 best by score in the shown set are the core's top 20, in order.
        QVector<PlanPoint> sorted = points;
        std::sort(sorted.begin(), sorted.end(), [](const PlanPoint &a, const PlanPoint &b) {
            // The core's total order: score, then T, M, B, then index.
            if (a.score != b.score)
                return a.score < b.score;
            if (a.timeMs != b.timeMs)
                return a.timeMs < b.timeMs;
            if (a.peakMemoryFraction != b.peakMemoryFraction)
                return a.peakMemoryFraction < b.peakMemoryFraction;
            if (a.imbalance != b.imbalance)
                return a.imbalance < b.imbalance;
            return PlanResults::indexOf(a.id) < PlanResults::indexOf(b.id);
        });
        for (int i = 0; i < 20; ++i)
            QCOMPARE(sorted[i].id, PlanResults::idOf(top[size_t(i)]));
        // Detail of the top plan: the estimate agrees with the search's metrics.
        const PlanDetail d = results.detail(results.topPlanId());
        QVERIFY(qAbs(d.estimate.iterationTimeMs - outcome->result.timeMs[top.front()]) < 1e-6);
        QCOMPARE(d.bars.size(), qsizetype(20));
        QCOMPARE(d.stages.size(), qsizetype(d.plan.stages.size()));
    }

    /// What-if: one more H100 node with the cluster before it as the baseline. The baseline's
    /// subset is the earlier search's own (the new node idle): it comes back from the job's result
    /// cache, and the plans the new node makes possible are searched.
    void whatIfReusesTheEarlierSubsets()
    {
        SearchJob job;
        QSignalSpy finished(&job, &SearchJob::finished);
        memx::SearchRequest before = request("paper-20gpu-nvidia-amd.json");
        before.space.stagesPerGroup = {1};
        job.start(before);
        QVERIFY(finished.wait(kTimeoutMs));
        const auto first = finished.front().at(0).value<std::shared_ptr<const SearchOutcome>>();
        QCOMPARE(first->subsetsReused, size_t(0));
        memx::PlannedSearchRequest after;
        after.search = before;
        after.search.cluster.groups[2].count += 1;
        after.baseline = before.cluster;
        job.start(after);
        QVERIFY(finished.wait(kTimeoutMs));
        const auto second = finished.back().at(0).value<std::shared_ptr<const SearchOutcome>>();
        QCOMPARE(second->subsetsReused, size_t(1));
        const auto it = std::find_if(second->subsets.begin(), second->subsets.end(), [](const memx::IdleSubset &x) {
            return x.label == "the cluster before the edit";
        });
        QVERIFY(it != second->subsets.end());
        QCOMPARE(it->count, first->subsets.front().count);
        for (size_t i = 0; i < it->count; i += it->count / 20 + 1) {
            QCOMPARE(second->result.timeMs[it->first + i], first->result.timeMs[first->subsets.front().first + i]);
            QVERIFY(second->idleText(it->first + i).find("h100 (1 of 2 nodes, 4 GPUs)") != std::string::npos);
        }
        QVERIFY(second->result.size() > first->result.size());
    }

    void newerRequestSupersedesOlder()
    {
        SearchJob job;
        QSignalSpy finished(&job, &SearchJob::finished);
        QSignalSpy cancelled(&job, &SearchJob::cancelled);
        const quint64 first = job.start(request("paper-20gpu-nvidia-amd.json"));
        const quint64 second = job.start(request("h100-8x.json"));
        QCOMPARE(second, first + 1);
        QVERIFY(finished.wait(kTimeoutMs));
        QTest::qWait(200); // a late result of the first job must not arrive either
        QCOMPARE(finished.count(), 1);
        QCOMPARE(cancelled.count(), 0); // superseded, not cancelled by the user
        const auto outcome = finished.front().at(0).value<std::shared_ptr<const SearchOutcome>>();
        QCOMPARE(outcome->jobId, second);
        QCOMPARE(outcome->result.cluster.name, request("h100-8x.json").cluster.name);
        QCOMPARE(job.lastOutcome(), outcome);
    }

    void cancelStopsTheSearch()
    {
        SearchJob job;
        QSignalSpy finished(&job, &SearchJob::finished);
        QSignalSpy cancelled(&job, &SearchJob::cancelled);
        const quint64 id = job.start(request("paper-20gpu-nvidia-amd.json"));
        job.cancel();
        QVERIFY(cancelled.wait(kTimeoutMs));
        QCOMPARE(cancelled.front().at(0).toULongLong(), id);
        QCOMPARE(finished.count(), 0);
        QVERIFY(!job.isRunning());
    }

    void unusableRequestFails()
    {
        SearchJob job;
        QSignalSpy failed(&job, &SearchJob::failed);
        memx::SearchRequest empty;
        empty.model = memx::resolveModel("llama2-7b");
        job.start(empty);
        QVERIFY(failed.wait(kTimeoutMs));
        QVERIFY(!failed.front().at(1).toString().isEmpty());
    }
};

QTEST_MAIN(TestSearchJob)
#include "tst_searchjob.moc"
