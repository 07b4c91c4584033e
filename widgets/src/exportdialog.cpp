#include "memx/ui/exportdialog.h"

#include "memx/util/diagnostic.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

namespace memx::ui {

namespace {
const memx::ExportFormat kFormats[] = {memx::ExportFormat::Megatron, memx::ExportFormat::FlagScale,
                                       memx::ExportFormat::Slurm, memx::ExportFormat::Json};

QString diagnosticsText(const std::vector<memx::Diagnostic> &diags)
{
    QStringList lines;
    for (const memx::Diagnostic &d : diags)
        lines << QString::fromStdString(d.pointer.empty() ? d.message : d.pointer + ": " + d.message);
    return lines.join(QLatin1Char('\n'));
}
} // namespace

ExportDialog::ExportDialog(const memx::Plan &plan, const memx::Cluster &cluster, const memx::Model &model,
                           std::optional<nlohmann::json> metrics, QWidget *parent)
    : QDialog(parent)
{
    setWindowTitle(tr("Export Plan"));
    mRequest.plan = plan;
    mRequest.cluster = cluster;
    mRequest.model = model;
    mRequest.metrics = std::move(metrics);
    mRequest.planFile = "plan";

    mFormat = new QComboBox;
    mFormat->addItem(tr("Megatron-LM launch scripts (one per node)"));
    mFormat->addItem(tr("FlagScale heterogeneous experiment (YAML + hostfile)"));
    mFormat->addItem(tr("Slurm batch job (sbatch + Megatron-LM scripts)"));
    mFormat->addItem(tr("JSON plan with predicted metrics"));
    mSplitStyle = new QComboBox;
    mSplitStyle->addItem(tr("--pipeline-model-parallel-layout (Megatron core 0.13+)"));
    mSplitStyle->addItem(tr("--decoder-first/last-pipeline-num-layers (core 0.10+)"));
    mDir = new QLineEdit(QDir::homePath() + QStringLiteral("/memx-export"));
    auto *browseButton = new QToolButton;
    browseButton->setText(tr("..."));
    auto *dirRow = new QHBoxLayout;
    dirRow->addWidget(mDir, 1);
    dirRow->addWidget(browseButton);
    mMasterAddr = new QLineEdit;
    mMasterAddr->setPlaceholderText(tr("the plan's first node"));
    mMasterPort = new QSpinBox;
    mMasterPort->setRange(1, 65535);
    mMasterPort->setValue(29500);
    auto *masterRow = new QHBoxLayout;
    masterRow->addWidget(mMasterAddr, 1);
    masterRow->addWidget(new QLabel(tr("port")));
    masterRow->addWidget(mMasterPort);
    mForce = new QCheckBox(tr("Overwrite existing files"));

    auto *form = new QFormLayout;
    form->addRow(tr("Format:"), mFormat);
    form->addRow(tr("Layer split flags:"), mSplitStyle);
    form->addRow(tr("Output folder:"), dirRow);
    form->addRow(tr("Master address:"), masterRow);
    form->addRow(QString(), mForce);

    mFileList = new QListWidget;
    mPreview = new QPlainTextEdit;
    mPreview->setReadOnly(true);
    mPreview->setLineWrapMode(QPlainTextEdit::NoWrap);
    mPreview->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    auto *split = new QSplitter(Qt::Horizontal);
    split->addWidget(mFileList);
    split->addWidget(mPreview);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    mStatus = new QLabel;
    mStatus->setWordWrap(true);
    mStatus->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    mExport = buttons->addButton(tr("Export"), QDialogButtonBox::AcceptRole);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(new QLabel(tr("Files:")));
    layout->addWidget(split, 1);
    layout->addWidget(mStatus);
    layout->addWidget(buttons);
    resize(900, 620);

    connect(mFormat, &QComboBox::currentIndexChanged, this, &ExportDialog::regenerate);
    connect(mSplitStyle, &QComboBox::currentIndexChanged, this, &ExportDialog::regenerate);
    connect(mMasterAddr, &QLineEdit::textChanged, this, &ExportDialog::regenerate);
    connect(mMasterPort, &QSpinBox::valueChanged, this, &ExportDialog::regenerate);
    connect(mDir, &QLineEdit::textChanged, this, &ExportDialog::regenerate);
    connect(mFileList, &QListWidget::currentRowChanged, this, &ExportDialog::showPreview);
    connect(browseButton, &QToolButton::clicked, this, &ExportDialog::browse);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(mExport, &QPushButton::clicked, this, [this] {
        if (writeFiles())
            accept();
    });
    regenerate();
}

void ExportDialog::setFormat(memx::ExportFormat format)
{
    for (int i = 0; i < 4; ++i)
        if (kFormats[i] == format)
            mFormat->setCurrentIndex(i);
}

memx::ExportFormat ExportDialog::format() const
{
    return kFormats[std::max(0, mFormat->currentIndex())];
}

void ExportDialog::setOutputDir(const QString &dir)
{
    mDir->setText(dir);
}

QString ExportDialog::outputDir() const
{
    return mDir->text();
}

void ExportDialog::setForce(bool force)
{
    mForce->setChecked(force);
}

void ExportDialog::setMasterAddress(const QString &host, int port)
{
    mMasterAddr->setText(host);
    mMasterPort->setValue(port);
}

QString ExportDialog::statusText() const
{
    return mStatus->text();
}

void ExportDialog::browse()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Export To"), mDir->text());
    if (!dir.isEmpty())
        mDir->setText(dir);
}

void ExportDialog::regenerate()
{
    mRequest.format = format();
    mRequest.options.masterAddr = mMasterAddr->text().trimmed().toStdString();
    mRequest.options.masterPort = mMasterPort->value();
    mRequest.options.splitStyle
        = mSplitStyle->currentIndex() == 1 ? memx::LayerSplitStyle::FirstLast : memx::LayerSplitStyle::Layout;
    mRequest.options.outputDir = QDir(mDir->text()).absolutePath().toStdString();
    mSplitStyle->setEnabled(mRequest.format == memx::ExportFormat::Megatron
                            || mRequest.format == memx::ExportFormat::Slurm);
    mFiles.clear();
    mRefusal.clear();
    mFileList->clear();
    mPreview->clear();
    try {
        mFiles = memx::exportPlan(mRequest);
    } catch (const memx::LoadError &e) {
        mRefusal = diagnosticsText(e.diagnostics());
    } catch (const std::exception &e) {
        mRefusal = QString::fromUtf8(e.what());
    }
    if (!mRefusal.isEmpty()) {
        mPreview->setLineWrapMode(QPlainTextEdit::WidgetWidth); // reasons are prose: never clip them
        mPreview->setPlainText(tr("This plan cannot be exported as %1:\n\n%2")
                                   .arg(QString::fromLatin1(memx::toString(mRequest.format)), mRefusal));
        mStatus->setText(tr("<span style='color:#b00'>Refused: see the reasons above.</span>"));
        mExport->setEnabled(false);
        return;
    }
    for (const memx::ExportFile &f : mFiles)
        mFileList->addItem(QString::fromStdString(f.path)
                           + (f.executable ? QStringLiteral("  (executable)") : QString()));
    mFileList->setCurrentRow(0);
    mStatus->setText(tr("%n file(s) will be written to %1.", nullptr, int(mFiles.size()))
                         .arg(QDir::toNativeSeparators(QDir(mDir->text()).absolutePath()).toHtmlEscaped()));
    mExport->setEnabled(true);
}

void ExportDialog::showPreview(int row)
{
    mPreview->setLineWrapMode(QPlainTextEdit::NoWrap); // files: keep their lines as written
    if (row >= 0 && size_t(row) < mFiles.size())
        mPreview->setPlainText(QString::fromStdString(mFiles[size_t(row)].content));
}

bool ExportDialog::writeFiles()
{
    mWritten.clear();
    if (mFiles.empty())
        return false;
    try {
        for (const std::string &p :
             memx::writeExportFiles(mFiles, QDir(mDir->text()).absolutePath().toStdString(), mForce->isChecked()))
            mWritten << QString::fromStdString(p);
    } catch (const memx::LoadError &e) {
        mStatus->setText(tr("<span style='color:#b00'>Nothing written: %1</span>")
                             .arg(diagnosticsText(e.diagnostics())
                                      .toHtmlEscaped()
                                      .replace(QLatin1Char('\n'), QStringLiteral("<br>"))));
        return false;
    } catch (const std::exception &e) {
        mStatus->setText(
            tr("<span style='color:#b00'>Nothing written: %1</span>").arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
        return false;
    }
    mStatus->setText(tr("Wrote %n file(s).", nullptr, int(mWritten.size())));
    return true;
}

} // namespace memx::ui
