// Profiles panel: the minimal-set profiling plan, writing its jobs, running it on the virtual
// testbed (import into the project, coverage), cancel leaving the project untouched.
#include "coverageutils.h"
#include "memx/io/formats.h"
#include "memx/profiling/coverage.h"
#include "memx/profiling/minimalset.h"
#include "memx/testbed/virtualtestbed.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/profilespanel.h"
#include "memx/ui/profilingjobmodel.h"
#include "memx/util/fileio.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include <map>
#include <set>

using namespace memx::ui;
using memx::CoverageStatus;
using memx::DeviceCoverage;
using memxtest::coverageOf;

namespace {
constexpr int kTimeoutMs = 240000; // a loaded 2-core machine; normally a second or two

const char *kSample = MEMX_SOURCE_DIR "/sample_clusters/paper-20gpu-nvidia-amd.json";

std::map<std::string, int> perLayerCounts(const std::vector<memx::KernelPoint> &points)
{
    std::map<std::string, int> out;
    for (const memx::KernelPoint &k : points)
        ++out[k.device];
    return out;
}
} // namespace

class TestProfilingPanel : public QObject {
    Q_OBJECT

    memx::Cluster mCluster;
    memx::Model mModel;
    memx::ProfilingPlan mReference; // computed here with the core, independently of the panel

    void resetDocument(ClusterDocument &doc) { doc.reset(mCluster, mModel); }

private slots:
    void initTestCase()
    {
        mCluster = memx::loadCluster(kSample);
        mModel = memx::resolveModel("llama2-7b");
        mReference = memx::planMinimalSet(mCluster, mModel, memx::MinimalSetOptions {});
        QVERIFY(!mReference.jobs.empty());
    }

    void planShowsJobsPerGpuType()
    {
        ClusterDocument doc;
        resetDocument(doc);
        ProfilesPanel panel(&doc);
        panel.setInteractive(false);
        QAbstractItemModelTester tester(panel.jobModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy done(&panel, &ProfilesPanel::profilingPlanFinished);
        QVERIFY(!panel.jobModel()->hasPlan());
        panel.planProfiling();
        QVERIFY(panel.isBusy());
        QVERIFY(done.wait(kTimeoutMs));
        QVERIFY2(done.front().at(0).toBool(), qPrintable(done.front().at(1).toString()));
        QVERIFY(!panel.isBusy());

        const ProfilingJobModel *m = panel.jobModel();
        QVERIFY(m->hasPlan());
        QCOMPARE(m->rowCount(), int(mReference.jobs.size()));
        // Per GPU type of the sample (A100-40, MI250X, H100): as many per-layer jobs as the core's
        // minimal set measures kernels on that device.
        std::set<std::string> clusterDevices;
        for (const memx::NodeGroup &g : mCluster.groups)
            clusterDevices.insert(mCluster.deviceOf(g).id);
        QCOMPARE(clusterDevices.size(), size_t(3));
        const std::map<std::string, int> expected = perLayerCounts(mReference.measured);
        std::map<std::string, int> shown;
        std::set<memx::KernelPoint> shownKernels;
        int endToEnd = 0;
        std::map<std::string, int> memoryJobs;
        for (int row = 0; row < m->rowCount(); ++row) {
            const QString kind = m->index(row, ProfilingJobModel::KindColumn).data().toString();
            if (kind == QLatin1String("end-to-end")) {
                ++endToEnd;
                QVERIFY(!m->index(row, ProfilingJobModel::WhatColumn).data().toString().isEmpty());
                continue;
            }
            if (kind == QLatin1String("memory")) { // memory calibration: one set per GPU type
                const std::string device
                    = m->index(row, ProfilingJobModel::DeviceColumn).data().toString().toStdString();
                QVERIFY2(clusterDevices.count(device), device.c_str());
                ++memoryJobs[device];
                continue;
            }
            QCOMPARE(kind, QStringLiteral("per-layer"));
            const std::string device = m->index(row, ProfilingJobModel::DeviceColumn).data().toString().toStdString();
            ++shown[device];
            shownKernels.insert({device, m->index(row, ProfilingJobModel::TpColumn).data().toInt(),
                                 m->index(row, ProfilingJobModel::MicroBatchColumn).data().toInt()});
        }
        QCOMPARE(shown, expected);
        for (const std::string &d : clusterDevices) {
            QVERIFY2(shown[d] > 0, d.c_str());
            QVERIFY2(memoryJobs[d] >= 2, d.c_str()); // 1 GPU at two micro-batch sizes (+ data-parallel)
        }
        QCOMPARE(shownKernels, std::set<memx::KernelPoint>(mReference.measured.begin(), mReference.measured.end()));
        int memoryTotal = 0;
        for (const auto &[device, n] : memoryJobs)
            memoryTotal += n;
        QCOMPARE(endToEnd, int(mReference.jobs.size() - mReference.measured.size()) - memoryTotal);
        const QString summary = panel.planSummary();
        QVERIFY2(summary.startsWith(QStringLiteral("%1 jobs").arg(mReference.jobs.size())), qPrintable(summary));
        QVERIFY2(summary.contains(QString::number(mReference.profilingGpuHours, 'f', 1)), qPrintable(summary));

        // Write the jobs as `memx profile plan --out` does; the manifest loads back with every job.
        QTemporaryDir dir;
        QString error;
        QVERIFY2(panel.writeJobFiles(dir.path(), false, &error), qPrintable(error));
        const QString manifestPath = dir.filePath(QStringLiteral("manifest.json"));
        QVERIFY(QFileInfo::exists(manifestPath));
        const memx::ProfileManifest manifest
            = memx::parseManifest(memx::readTextFile(manifestPath.toStdString()), manifestPath.toStdString());
        QCOMPARE(manifest.jobs.size(), mReference.jobs.size());
        QVERIFY(manifest.cluster == mCluster);
        QCOMPARE(manifest.model.id, mModel.id);
        // Existing files are refused (nothing written) unless overwriting.
        const QByteArray before = memx::readTextFile(manifestPath.toStdString()).c_str();
        QVERIFY(!panel.writeJobFiles(dir.path(), false, &error));
        QVERIFY2(error.contains(QStringLiteral("exists")), qPrintable(error));
        QCOMPARE(QByteArray(memx::readTextFile(manifestPath.toStdString()).c_str()), before);
        QVERIFY2(panel.writeJobFiles(dir.path(), true, &error), qPrintable(error));

        // Changing the cluster drops the plan (it no longer matches); moving a box does not.
        doc.moveNodeGroups({0}, {QPointF(mCluster.groups[0].x + 50, mCluster.groups[0].y)}, 1);
        QVERIFY(panel.jobModel()->hasPlan());
        memx::NodeGroup g = doc.cluster().groups[0];
        g.count += 1;
        QVERIFY(doc.changeNodeGroup(0, g));
        QVERIFY(!panel.jobModel()->hasPlan());
        QVERIFY(!panel.writeJobFiles(dir.path(), true, &error));
    }

    void testbedRunImportsIntoProject()
    {
        ClusterDocument doc;
        resetDocument(doc);
        ProfilesPanel panel(&doc);
        panel.setInteractive(false);
        QVERIFY(!doc.isModified());
        for (const DeviceCoverage &c : coverageOf(doc.projectData().profiles(), doc.cluster(), doc.model()))
            QCOMPARE(c.count(CoverageStatus::Missing), int(c.tps.size() * c.microBatches.size()));

        QSignalSpy done(&panel, &ProfilesPanel::importFinished);
        QSignalSpy dataChanged(&doc, &ClusterDocument::projectDataChanged);
        panel.runOnTestbed(1); // no plan shown: planned in the same background task
        QVERIFY(panel.isBusy());
        QVERIFY(done.wait(kTimeoutMs));
        QVERIFY2(done.front().at(0).toBool(), qPrintable(done.front().at(1).toString()));
        QCOMPARE(dataChanged.count(), 1);
        QVERIFY(doc.isModified());
        QVERIFY(panel.jobModel()->hasPlan());
        QCOMPARE(panel.jobModel()->rowCount(), int(mReference.jobs.size()));

        // Independently: the core's testbed on the reference plan's jobs.
        const memx::VirtualTestbed testbed(1);
        size_t expectedRuns = 0;
        for (const memx::ProfileJob &j : mReference.jobs) {
            if (j.kind == memx::ProfileJobKind::EndToEnd && testbed.runPlan(*j.plan, mCluster, mModel).ok)
                ++expectedRuns;
            if (j.kind == memx::ProfileJobKind::Memory
                && testbed.runPlan(*j.plan, mCluster, memx::memoryCalibrationModel(mModel, j.layerVariants.front())).ok)
                ++expectedRuns;
        }
        const memx::MemoryStore &data = doc.projectData();
        QCOMPARE(data.profiles().size(), mReference.measured.size());
        const memx::ProfileSet profiles = data.profiles(); // by value: keep it alive over the loop
        for (const memx::LayerProfile &p : profiles.profiles()) {
            QCOMPARE(p.origin, memx::ProfileOrigin::Simulated);
            QVERIFY2(p.source.rfind("virtual-testbed seed=1 job=layer-", 0) == 0, p.source.c_str());
        }
        QCOMPARE(data.runs().size(), expectedRuns);
        for (const memx::MeasuredRun &r : data.runs())
            QVERIFY(r.peakMemoryBytes.has_value());
        QCOMPARE(panel.model()->profileCount(), int(mReference.measured.size()));
        QCOMPARE(panel.model()->runCount(), int(expectedRuns));

        // Coverage over the kernels the space uses: every measured kernel of the plan is a simulated
        // cell, every other kernel the space needs is interpolated (the minimal set's promise). A
        // grid cell the space does not use is blank, or interpolated when it lies inside the
        // measured range (mixed-type stages put micro-batch sizes of one TP degree into the grid).
        const std::set<memx::KernelPoint> measured(mReference.measured.begin(), mReference.measured.end());
        const std::set<memx::KernelPoint> needed(mReference.needed.begin(), mReference.needed.end());
        int simulatedCells = 0, usedCells = 0;
        for (const DeviceCoverage &c : coverageOf(profiles, doc.cluster(), doc.model(), &mReference.needed)) {
            QVERIFY2(c.count(CoverageStatus::Simulated) > 0, c.device.c_str());
            for (size_t t = 0; t < c.tps.size(); ++t)
                for (size_t b = 0; b < c.microBatches.size(); ++b) {
                    const memx::KernelPoint k {c.device, c.tps[t], c.microBatches[b]};
                    const char cell = static_cast<char>(c.cells[t][b]);
                    if (measured.count(k))
                        QCOMPARE(cell, 'S');
                    else if (needed.count(k))
                        QCOMPARE(cell, 'I');
                    else
                        QVERIFY(cell == ' ' || cell == 'I');
                    simulatedCells += cell == 'S';
                    usedCells += needed.count(k) && cell != ' ';
                }
        }
        QCOMPARE(simulatedCells, int(mReference.measured.size()));
        QCOMPARE(usedCells, int(mReference.needed.size()));
        QVERIFY(panel.coverageHtml().contains(QStringLiteral("simulated")));
    }

    void cancelLeavesProjectUntouched()
    {
        ClusterDocument doc;
        memx::MemoryStore existing;
        memx::LayerProfile p;
        p.key = {"h100-sxm", "gpt3-1.3b", 1, 1, 2048}; // no key the testbed run produces
        p.origin = memx::ProfileOrigin::Measured;
        p.source = "hand-made";
        p.layers.resize(24 + 2); // gpt3-1.3b: embedding, 24 transformer layers, head
        {
            memx::StoreTransaction tx(existing);
            existing.putProfile(p);
            tx.commit();
        }
        doc.reset(mCluster, mModel, existing);
        ProfilesPanel panel(&doc);
        panel.setInteractive(false);
        QSignalSpy done(&panel, &ProfilesPanel::importFinished);
        QSignalSpy dataChanged(&doc, &ClusterDocument::projectDataChanged);

        panel.runOnTestbed(1);
        QVERIFY(panel.isBusy());
        panel.cancel(); // before the worker can have finished: whatever it produced is dropped
        QVERIFY(done.wait(kTimeoutMs));
        QCOMPARE(done.front().at(0).toBool(), false);
        QCOMPARE(done.front().at(1).toString(), QStringLiteral("cancelled"));
        QVERIFY(!panel.isBusy());
        QCOMPARE(dataChanged.count(), 0);
        QVERIFY(!doc.isModified());
        QCOMPARE(doc.projectData().profiles().size(), size_t(1));
        const memx::ProfileSet kept = doc.projectData().profiles();
        QVERIFY(kept.profiles().front() == p);
        QCOMPARE(doc.projectData().runs().size(), size_t(0));
        QCOMPARE(doc.projectData().clusterNames().size(), size_t(0));

        // Cancelling the planning shows no plan.
        QSignalSpy planned(&panel, &ProfilesPanel::profilingPlanFinished);
        panel.planProfiling();
        panel.cancel();
        QVERIFY(planned.wait(kTimeoutMs));
        QCOMPARE(planned.front().at(0).toBool(), false);
        QVERIFY(!panel.jobModel()->hasPlan());

        // A task after a cancelled one runs normally.
        done.clear();
        panel.runOnTestbed(1);
        QVERIFY(done.wait(kTimeoutMs));
        QVERIFY2(done.front().at(0).toBool(), qPrintable(done.front().at(1).toString()));
        QCOMPARE(doc.projectData().profiles().size(), mReference.measured.size() + 1);
    }
};

QTEST_MAIN(TestProfilingPanel)
#include "tst_profilingpanel.moc"
