#include "memx/ui/gpudefinitiondialog.h"

#include "memx/io/formats.h"
#include "memx/util/diagnostic.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

#include <map>

namespace memx::ui {

namespace {

QDoubleSpinBox *figureField(double max, int decimals, const QString &suffix, const QString &zeroText = {})
{
    auto *f = new QDoubleSpinBox;
    f->setRange(0, max);
    f->setDecimals(decimals);
    f->setSuffix(suffix);
    if (!zeroText.isEmpty())
        f->setSpecialValueText(zeroText);
    return f;
}

std::optional<double> figure(const QDoubleSpinBox *f)
{
    return f->value() > 0 ? std::optional<double>(f->value()) : std::nullopt;
}

} // namespace

GpuDefinitionDialog::GpuDefinitionDialog(std::vector<memx::GpuSpec> known, QWidget *parent)
    : QDialog(parent)
    , mKnown(std::move(known))
    , mTemplates(memx::builtinCatalogue().devices())
{
    mTemplates.insert(mTemplates.end(), mKnown.begin(), mKnown.end());
    setWindowTitle(tr("New GPU"));
    mTemplate = new QComboBox;
    for (const memx::GpuSpec &d : mTemplates)
        mTemplate->addItem(
            QStringLiteral("%1 %2").arg(QString::fromStdString(d.vendor), QString::fromStdString(d.name)));
    mTemplate->setToolTip(tr("A similar device: its scale-up topology, architecture, attention kernels and runtime "
                             "memory are kept; edit the datasheet figures below"));
    mId = new QLineEdit;
    mId->setToolTip(tr("Key the cluster files use (\"gpu\": ...), e.g. b300-sxm; not a catalogue device's"));
    mName = new QLineEdit;
    mVendor = new QLineEdit;
    mMemory = figureField(1e5, 2, tr(" GiB"));
    mMemory->setToolTip(tr("Usable memory as the runtime reports it (GiB, 2^30 bytes)"));
    mBandwidth = figureField(1e6, 0, tr(" GB/s"), tr("unknown"));
    mBf16 = figureField(1e6, 1, tr(" TFLOP/s"), tr("none"));
    mBf16->setToolTip(tr("Dense BF16 peak (no sparsity)"));
    mFp8 = figureField(1e6, 1, tr(" TFLOP/s"), tr("no FP8"));
    mFp8->setToolTip(tr("Dense FP8 peak with FP32 accumulation; \"no FP8\": FP8 plans are refused on it"));
    mScaleUp = figureField(1e5, 1, tr(" GB/s"), tr("unknown"));
    mScaleUp->setToolTip(tr("Scale-up link per GPU and direction (NVLink, Infinity Fabric, ...)"));
    mNic = figureField(1e5, 0, tr(" Gb/s"), tr("unknown"));
    mNic->setToolTip(tr("Scale-out NIC per GPU"));
    mError = new QLabel;
    mError->setWordWrap(true);
    mError->setStyleSheet(QStringLiteral("color: #b00020"));
    mError->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto *form = new QFormLayout;
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    form->addRow(tr("&Based on:"), mTemplate);
    form->addRow(tr("&Id:"), mId);
    form->addRow(tr("&Name:"), mName);
    form->addRow(tr("&Vendor:"), mVendor);
    form->addRow(tr("&Memory:"), mMemory);
    form->addRow(tr("Memory &bandwidth:"), mBandwidth);
    form->addRow(tr("Dense BF1&6:"), mBf16);
    form->addRow(tr("Dense FP&8:"), mFp8);
    form->addRow(tr("&Scale-up link:"), mScaleUp);
    form->addRow(tr("N&IC:"), mNic);
    auto *note = new QLabel(tr("Saved as a GPU file of your own (reloaded at every start) and marked unverified: "
                               "calibrate it with profiles before trusting its times."));
    note->setWordWrap(true);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(note);
    layout->addWidget(mError);
    layout->addWidget(buttons);

    connect(mTemplate, &QComboBox::currentIndexChanged, this, &GpuDefinitionDialog::applyTemplate);
    applyTemplate(mTemplate->currentIndex());
}

void GpuDefinitionDialog::applyTemplate(int index)
{
    if (index < 0 || size_t(index) >= mTemplates.size())
        return;
    const memx::GpuSpec &t = mTemplates[size_t(index)];
    // A fresh id and name to edit (the template's own would be refused).
    mId->setText(QString::fromStdString(t.id) + QStringLiteral("-custom"));
    mName->setText(QString::fromStdString(t.name) + tr(" (custom)"));
    mVendor->setText(QString::fromStdString(t.vendor));
    mMemory->setValue(t.memoryGiB.value_or(0));
    mBandwidth->setValue(t.memoryBandwidthGBps.value_or(0));
    mBf16->setValue(t.denseBf16Tflops.value_or(0));
    mFp8->setValue(t.denseFp8Tflops.value_or(0));
    mScaleUp->setValue(t.scaleUpPerDirectionGBps.value_or(0));
    mNic->setValue(t.nicGbps.value_or(0));
    mError->clear();
}

memx::GpuSpec GpuDefinitionDialog::device() const
{
    memx::GpuSpec d;
    const int index = mTemplate->currentIndex();
    if (index >= 0 && size_t(index) < mTemplates.size())
        d = mTemplates[size_t(index)];
    const std::string base = d.name;
    d.id = mId->text().trimmed().toStdString();
    d.aliases.clear(); // the template's aliases are the template's
    d.name = mName->text().trimmed().toStdString();
    d.vendor = mVendor->text().trimmed().toStdString();
    d.memoryGiB = figure(mMemory);
    d.memoryBandwidthGBps = figure(mBandwidth);
    d.denseBf16Tflops = figure(mBf16);
    d.bf16Supported = d.denseBf16Tflops.has_value();
    d.denseFp8Tflops = figure(mFp8);
    d.scaleUpPerDirectionGBps = figure(mScaleUp);
    d.nicGbps = figure(mNic);
    d.verified = false;
    d.notes = base.empty() ? std::string("defined in MemX Workbench")
                           : "defined in MemX Workbench from " + base + "; unverified";
    d.sources.clear(); // the figures are the user's now (notes name the template)
    d.measuredComputeEfficiency.reset();
    d.measuredBusBandwidthGBps.reset();
    d.custom = true;
    return d;
}

std::string GpuDefinitionDialog::fileText() const
{
    return memx::toJson(memx::Catalogue(std::vector<memx::GpuSpec> {device()})).dump(2) + "\n";
}

QString GpuDefinitionDialog::check() const
{
    // The fields' labels for core's JSON pointers ("/devices/0/memoryGiB" -> "Memory").
    static const std::map<std::string, QString> labels {
        {"id", tr("Id")},
        {"name", tr("Name")},
        {"vendor", tr("Vendor")},
        {"memoryGiB", tr("Memory")},
        {"memoryBandwidthGBps", tr("Memory bandwidth")},
        {"denseBf16Tflops", tr("Dense BF16")},
        {"denseFp8Tflops", tr("Dense FP8")},
        {"scaleUp", tr("Scale-up link")},
        {"nic", tr("NIC")},
    };
    try {
        std::vector<memx::GpuSpec> known = mKnown;
        memx::mergeCustomDevices(known, memx::parseCustomDevices(fileText(), "the new GPU"), "the new GPU");
    } catch (const memx::LoadError &e) {
        QStringList lines;
        for (const memx::Diagnostic &d : e.diagnostics()) {
            const std::string prefix = "/devices/0/";
            const std::string field = d.pointer.rfind(prefix, 0) == 0
                ? d.pointer.substr(prefix.size(), d.pointer.find('/', prefix.size()) - prefix.size())
                : std::string();
            const auto label = labels.find(field);
            lines << (label != labels.end() ? label->second : QString::fromStdString(d.pointer)) + QStringLiteral(": ")
                    + QString::fromStdString(d.message);
        }
        return lines.join(u'\n');
    } catch (const std::exception &e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

void GpuDefinitionDialog::accept()
{
    const QString why = check();
    mError->setText(why);
    if (why.isEmpty())
        QDialog::accept();
}

} // namespace memx::ui
