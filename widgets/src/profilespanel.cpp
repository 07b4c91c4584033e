#include "memx/ui/profilespanel.h"

#include "memx/profile/augment.h"
#include "memx/profile/importbatch.h"
#include "memx/profile/megatronlog.h"
#include "memx/profile/profileio.h"
#include "memx/profile/sailorimporter.h"
#include "memx/search/search.h"
#include "memx/store/store.h"
#include "memx/ui/clusterdocument.h"
#include "memx/util/diagnostic.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <atomic>
#include <set>

namespace memx::ui {

// ---- MeasurementTableModel ----

void MeasurementTableModel::setData(const memx::Store &store)
{
    beginResetModel();
    mProfiles = store.profiles().profiles();
    mRuns = store.runs();
    endResetModel();
}

int MeasurementTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(mProfiles.size() + mRuns.size());
}

int MeasurementTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant MeasurementTableModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount)
        return {};
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole)
        return {};
    const size_t row = size_t(index.row());
    if (row < mProfiles.size()) {
        const memx::LayerProfile &p = mProfiles[row];
        switch (index.column()) {
        case KindColumn:
            return tr("profile");
        case GpuColumn:
            return QString::fromStdString(p.key.gpu);
        case ModelColumn:
            return QString::fromStdString(p.key.model);
        case TpColumn:
            return p.key.tp;
        case MicroBatchColumn:
            return p.key.microBatch;
        case DetailColumn:
            return tr("%1, %2 layers, seq %3")
                .arg(QString::fromLatin1(memx::toString(p.origin)))
                .arg(int(p.layers.size()) - 2)
                .arg(p.key.seqLength);
        case SourceColumn:
            return QString::fromStdString(p.source);
        }
        return {};
    }
    const memx::MeasuredRun &r = mRuns[row - mProfiles.size()];
    switch (index.column()) {
    case KindColumn:
        return tr("run");
    case GpuColumn: {
        std::set<std::string> devices;
        for (const memx::NodeGroup &g : r.cluster.groups)
            devices.insert(r.cluster.deviceOf(g).id);
        QStringList list;
        for (const std::string &d : devices)
            list << QString::fromStdString(d);
        return QStringLiteral("%1 x %2").arg(r.plan.totalGpus()).arg(list.join(QStringLiteral(", ")));
    }
    case ModelColumn:
        return QString::fromStdString(r.modelId);
    case TpColumn:
        return r.plan.stages.empty() || r.plan.stages.front().replicas.empty()
            ? QVariant()
            : r.plan.stages.front().replicas.front().tp;
    case MicroBatchColumn:
        return r.plan.stages.empty() || r.plan.stages.front().replicas.empty()
            ? QVariant()
            : r.plan.stages.front().replicas.front().microBatch;
    case DetailColumn:
        return r.peakMemoryBytes ? tr("%1 ms, peak %2 GiB (%3)")
                                       .arg(r.iterationTimeMs, 0, 'f', 1)
                                       .arg(*r.peakMemoryBytes / 1073741824.0, 0, 'f', 1)
                                       .arg(QString::fromLatin1(memx::toString(r.memoryKind)))
                                 : tr("%1 ms").arg(r.iterationTimeMs, 0, 'f', 1);
    case SourceColumn:
        return QString::fromStdString(r.id);
    }
    return {};
}

QVariant MeasurementTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount)
        return {};
    static const char *names[] = {"Kind", "GPU", "Model", "TP", "Micro-batch", "Detail", "Source"};
    return tr(names[section]);
}

// ---- coverage ----

int DeviceCoverage::count(char status) const
{
    int n = 0;
    for (const auto &row : cells)
        n += int(std::count(row.begin(), row.end(), status));
    return n;
}

std::vector<DeviceCoverage> profileCoverage(const memx::ProfileSet &profiles, const memx::Cluster &cluster,
                                            const memx::Model &model)
{
    std::vector<DeviceCoverage> out;
    std::vector<std::string> seen;
    const memx::SearchSpaceOptions defaults;
    for (const memx::NodeGroup &g : cluster.groups) {
        const std::string device = cluster.deviceOf(g).id;
        auto it = std::find_if(out.begin(), out.end(), [&](const DeviceCoverage &c) { return c.device == device; });
        if (it == out.end()) {
            out.push_back({device, {}, defaults.microBatches, {}});
            it = out.end() - 1;
        }
        for (int tp : defaults.tensorParallel)
            if (tp <= g.gpusPerNode && std::find(it->tps.begin(), it->tps.end(), tp) == it->tps.end())
                it->tps.push_back(tp);
    }
    for (DeviceCoverage &c : out) {
        std::sort(c.tps.begin(), c.tps.end());
        std::vector<memx::LayerProfile> mine;
        for (const memx::LayerProfile &p : profiles.profiles())
            if (p.key.gpu == c.device && p.key.model == model.id && p.key.seqLength == model.shape.seqLength)
                mine.push_back(p);
        for (int tp : c.tps) {
            std::vector<char> row;
            for (int b : c.microBatches) {
                char status = '-';
                std::vector<memx::LayerProfile> sameTp;
                for (const memx::LayerProfile &p : mine) {
                    if (p.key.tp == tp && p.key.microBatch == b)
                        status = p.origin == memx::ProfileOrigin::Measured ? 'M' : (status == 'M' ? 'M' : 'I');
                    if (p.key.tp == tp && p.origin == memx::ProfileOrigin::Measured)
                        sameTp.push_back(p);
                }
                if (status == '-' && !sameTp.empty() && memx::interpolateMicroBatch(sameTp, b))
                    status = 'I';
                row.push_back(status);
            }
            c.cells.push_back(row);
        }
    }
    return out;
}

// ---- ProfilesPanel ----

struct ProfilesPanel::Import {
    std::atomic<bool> cancel {false};
    std::atomic<quint64> done {0}, total {0};
    QFutureWatcher<void> watcher;
    memx::ImportBatch batch; // written by the worker, read after it finished
    QString error;
    QString what;
};

ProfilesPanel::ProfilesPanel(ClusterDocument *document, QWidget *parent)
    : QWidget(parent)
    , mDocument(document)
{
    mModel = new MeasurementTableModel(this);
    mView = new QTableView;
    mView->setModel(mModel);
    mView->verticalHeader()->hide();
    mView->verticalHeader()->setDefaultSectionSize(mView->fontMetrics().height() + 6);
    mView->horizontalHeader()->setStretchLastSection(true);
    mView->setSelectionBehavior(QAbstractItemView::SelectRows);
    mView->setWordWrap(false);
    mCoverage = new QTextBrowser;
    mCoverage->setOpenLinks(false);
    mSummary = new QLabel;
    mSummary->setWordWrap(true);
    mProgress = new QProgressBar;
    mProgress->setVisible(false);
    mSailor = new QPushButton(tr("Public dataset..."));
    mSailor->setToolTip(tr("Import the public Sailor measurements folder (per-layer profiles, measured runs, "
                           "network fits), e.g. ../shared/data/public/sailor"));
    mLog = new QPushButton(tr("Megatron log..."));
    mLog->setToolTip(tr("Import a Megatron-LM training log as a measured run of the plan selected in the results"));
    mFiles = new QPushButton(tr("CSV/JSON..."));
    mFiles->setToolTip(tr("Import per-layer profiles from CSV or JSON files (docs/formats-profiles.md)"));
    auto *buttons = new QHBoxLayout;
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->addWidget(new QLabel(tr("Import:")));
    buttons->addWidget(mSailor);
    buttons->addWidget(mLog);
    buttons->addWidget(mFiles);
    buttons->addStretch(1);

    auto *split = new QSplitter(Qt::Vertical);
    split->addWidget(mCoverage);
    split->addWidget(mView);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(buttons);
    layout->addWidget(mProgress);
    layout->addWidget(mSummary);
    layout->addWidget(split, 1);

    connect(mSailor, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Public Dataset Folder (sailor)"));
        if (!dir.isEmpty())
            importPublicDataset(dir);
    });
    connect(mFiles, &QPushButton::clicked, this, [this] {
        const QStringList files = QFileDialog::getOpenFileNames(this, tr("Import Profiles"), QString(),
                                                                tr("Profiles (*.csv *.json);;All files (*)"));
        if (!files.isEmpty())
            importProfileFiles(files);
    });
    connect(mLog, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getOpenFileName(this, tr("Import Megatron-LM Log"), QString(),
                                                          tr("Logs (*.log *.txt *.out);;All files (*)"));
        if (!file.isEmpty())
            importMegatronLog(file);
    });
    connect(this, &ProfilesPanel::importFinished, this, [this](bool ok, const QString &message) {
        if (!ok && !message.isEmpty())
            QMessageBox::warning(this, tr("Import failed"), message);
    });
    for (auto signal :
         {&ClusterDocument::projectDataChanged, &ClusterDocument::clusterReset, &ClusterDocument::modelChanged})
        connect(mDocument, signal, this, &ProfilesPanel::refresh);
    for (auto signal :
         {&ClusterDocument::nodeGroupAdded, &ClusterDocument::nodeGroupRemoved, &ClusterDocument::nodeGroupChanged})
        connect(mDocument, signal, this, &ProfilesPanel::refresh);
    setCurrentPlan(std::nullopt);
    refresh();
}

ProfilesPanel::~ProfilesPanel()
{
    if (mImport) {
        mImport->cancel = true;
        mImport->watcher.waitForFinished();
    }
}

void ProfilesPanel::setCurrentPlan(std::optional<memx::Plan> plan)
{
    mPlan = std::move(plan);
    mLog->setEnabled(mPlan.has_value() && !mImport);
}

bool ProfilesPanel::isImporting() const
{
    return mImport != nullptr;
}

QString ProfilesPanel::coverageHtml() const
{
    return mCoverage->toHtml();
}

void ProfilesPanel::refresh()
{
    const memx::MemoryStore &data = mDocument->projectData();
    mModel->setData(data);
    mView->resizeColumnsToContents();
    mSummary->setText(tr("%1 per-layer profiles, %2 measured runs, %3 network measurements in this project.")
                          .arg(mModel->profileCount())
                          .arg(mModel->runCount())
                          .arg(data.networkMeasurements().size()));

    const memx::Model &model = mDocument->model();
    QString html = tr("<b>Coverage for %1</b> (sequence %2) - which (TP, micro-batch) cells the search uses are "
                      "<span style='color:#2e7d32'>M measured</span>, <span style='color:#1565c0'>I "
                      "interpolated</span> or <span style='color:#888'>- estimated by the analytic model</span>:")
                       .arg(QString::fromStdString(model.id).toHtmlEscaped())
                       .arg(model.shape.seqLength);
    for (const DeviceCoverage &c : profileCoverage(data.profiles(), mDocument->cluster(), model)) {
        html += QStringLiteral("<p><b>%1</b>: %2 measured, %3 interpolated, %4 estimated<br>"
                               "<table cellspacing='0' cellpadding='2'><tr><td>TP \\ mbs</td>")
                    .arg(QString::fromStdString(c.device).toHtmlEscaped())
                    .arg(c.count('M'))
                    .arg(c.count('I'))
                    .arg(c.count('-'));
        for (int b : c.microBatches)
            html += QStringLiteral("<td align='center'>&nbsp;%1&nbsp;</td>").arg(b);
        html += QStringLiteral("</tr>");
        for (size_t t = 0; t < c.tps.size(); ++t) {
            html += QStringLiteral("<tr><td align='center'>%1</td>").arg(c.tps[t]);
            for (char s : c.cells[t]) {
                const char *colour = s == 'M' ? "#2e7d32" : s == 'I' ? "#1565c0" : "#888";
                html += QStringLiteral("<td align='center' style='color:%1'><b>%2</b></td>")
                            .arg(QLatin1String(colour), QChar(QLatin1Char(s)));
            }
            html += QStringLiteral("</tr>");
        }
        html += QStringLiteral("</table></p>");
    }
    if (data.profiles().empty())
        html += tr("<p style='color:#666'>No profiles yet: every time is the analytic cost model's estimate. Import "
                   "measurements (the public dataset covers OPT-350M, GPT-Neo 2.7B, OPT-30B and Llama-3 8B as "
                   "<i>sailor-*</i> models) to replace estimates with measured per-layer times.</p>");
    mCoverage->setHtml(html);
}

template<typename Work> void ProfilesPanel::runImport(const QString &what, Work work)
{
    if (mImport)
        return;
    auto import = std::make_shared<Import>();
    import->what = what;
    mImport = import;
    for (QPushButton *b : {mSailor, mLog, mFiles})
        b->setEnabled(false);
    mProgress->setVisible(true);
    mProgress->setRange(0, 0);
    mProgress->setFormat(what);
    auto *timer = new QTimer(this);
    timer->setInterval(100);
    connect(timer, &QTimer::timeout, this, [this, import] {
        if (import->total > 0) {
            mProgress->setRange(0, int(import->total));
            mProgress->setValue(int(import->done));
        }
    });
    timer->start();
    connect(&import->watcher, &QFutureWatcher<void>::finished, this, [this, import, timer] {
        timer->deleteLater();
        mImport.reset();
        mProgress->setVisible(false);
        for (QPushButton *b : {mSailor, mFiles})
            b->setEnabled(true);
        mLog->setEnabled(mPlan.has_value());
        if (!import->error.isEmpty()) {
            emit importFinished(false, import->error);
            return;
        }
        try {
            mDocument->importData(import->batch);
        } catch (const std::exception &e) {
            emit importFinished(false, QString::fromUtf8(e.what()));
            return;
        }
        emit importFinished(true, tr("%1: %2 items imported").arg(import->what).arg(import->batch.itemCount()));
    });
    Import *state = import.get();
    import->watcher.setFuture(QtConcurrent::run([state, work] {
        try {
            state->batch = work([state](size_t done, size_t total) {
                state->done = done;
    state->total = total;
    return !state->cancel.load();
});
} // namespace memx::ui
catch (const memx::LoadError &e)
{
    QStringList lines;
    for (const memx::Diagnostic &d : e.diagnostics())
        lines << QString::fromStdString(d.toString());
    state->error = lines.mid(0, 20).join(QLatin1Char('\n'));
}
catch (const memx::ImportCancelled &)
{
    state->error = QObject::tr("cancelled");
}
catch (const std::exception &e)
{
    state->error = QString::fromUtf8(e.what());
}
}));
}

void ProfilesPanel::importPublicDataset(const QString &dir)
{
    const std::string path = dir.toStdString();
    runImport(
        tr("Importing %1").arg(QFileInfo(dir).fileName()),
        [path](const std::function<bool(size_t, size_t)> &progress) { return memx::importSailor(path, progress); });
}

void ProfilesPanel::importProfileFiles(const QStringList &files)
{
    std::vector<std::string> paths;
    for (const QString &f : files)
        paths.push_back(f.toStdString());
    runImport(tr("Importing %n profile file(s)", nullptr, int(files.size())),
              [paths](const std::function<bool(size_t, size_t)> &progress) {
                  memx::ImportBatch batch;
                  for (size_t i = 0; i < paths.size(); ++i) {
                      for (memx::LayerProfile &p : memx::loadProfileFile(paths[i]))
                          batch.profiles.push_back(std::move(p));
                      if (progress && !progress(i + 1, paths.size()))
                          throw memx::ImportCancelled {};
                  }
                  return batch;
              });
}

bool ProfilesPanel::importMegatronLog(const QString &file)
{
    if (!mPlan) {
        emit importFinished(false, tr("Select the plan the log ran in the results first."));
        return false;
    }
    try {
        memx::ImportBatch batch;
        batch.runs.push_back(
            memx::importMegatronLog(file.toStdString(), *mPlan, mDocument->cluster(), mDocument->model()));
        mDocument->importData(batch);
    } catch (const memx::LoadError &e) {
        QStringList lines;
        for (const memx::Diagnostic &d : e.diagnostics())
            lines << QString::fromStdString(d.toString());
        emit importFinished(false, lines.join(QLatin1Char('\n')));
        return false;
    } catch (const std::exception &e) {
        emit importFinished(false, QString::fromUtf8(e.what()));
        return false;
    }
    emit importFinished(true, tr("Imported %1").arg(QFileInfo(file).fileName()));
    return true;
}

} // namespace memx::ui
