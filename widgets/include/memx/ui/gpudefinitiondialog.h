#pragma once

#include "memx/cluster/gpuspec.h"

#include <QDialog>

#include <vector>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;

namespace memx::ui {

/// "New GPU...": defines a device the catalogue lacks, starting from a similar one (its scale-up
/// topology, architecture, attention kernels and runtime memory are kept; the figures a datasheet
/// gives are edited). The result is checked with core's rules for custom devices
/// (memx::parseCustomDevices: memory required, an id and aliases no catalogue device has) before
/// the dialog accepts; a refusal is shown in the dialog, naming the field.
class GpuDefinitionDialog : public QDialog {
    Q_OBJECT

public:
    /// `templates`: the devices to start from (the catalogue, then loaded custom ones).
    GpuDefinitionDialog(std::vector<memx::GpuSpec> templates, const memx::Catalogue &catalogue,
                        QWidget *parent = nullptr);

    /// The device as the fields describe it (custom, verified false, its template in notes).
    memx::GpuSpec device() const;
    /// core's verdict on device(): empty when it is a valid custom device.
    QString check() const;
    /// The memx.catalogue/1 text of device() (what is written to the user's GPU file).
    std::string fileText() const;

    QComboBox *templateBox() const { return mTemplate; }
    QLineEdit *idField() const { return mId; }
    QLineEdit *nameField() const { return mName; }
    QDoubleSpinBox *memoryField() const { return mMemory; }
    QDoubleSpinBox *bf16Field() const { return mBf16; }
    QLabel *errorLabel() const { return mError; }

    void accept() override;

private:
    void applyTemplate(int index);

    std::vector<memx::GpuSpec> mTemplates;
    const memx::Catalogue &mCatalogue;
    QComboBox *mTemplate = nullptr;
    QLineEdit *mId = nullptr, *mName = nullptr, *mVendor = nullptr;
    QDoubleSpinBox *mMemory = nullptr, *mBandwidth = nullptr, *mBf16 = nullptr, *mFp8 = nullptr, *mScaleUp = nullptr,
                   *mNic = nullptr;
    QLabel *mError = nullptr;
};

} // namespace memx::ui
