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
/// (memx::parseCustomDevices: memory required, a valid id, an id no catalogue device has; then
/// memx::mergeCustomDevices against the devices already loaded) before the dialog accepts; a
/// refusal is shown in the dialog, naming the field by its label.
class GpuDefinitionDialog : public QDialog {
    Q_OBJECT

public:
    /// `known`: the custom devices already loaded; the templates are the built-in catalogue's
    /// devices, then these.
    explicit GpuDefinitionDialog(std::vector<memx::GpuSpec> known, QWidget *parent = nullptr);

    /// The device as the fields describe it (custom, verified false, its template in notes).
    memx::GpuSpec device() const;
    /// core's verdict on device(): empty when it is a valid custom device that may join the known
    /// ones (a redefinition of one of their ids replaces it); otherwise one line per problem,
    /// "Label: what was expected".
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

    std::vector<memx::GpuSpec> mKnown, mTemplates;
    QComboBox *mTemplate = nullptr;
    QLineEdit *mId = nullptr, *mName = nullptr, *mVendor = nullptr;
    QDoubleSpinBox *mMemory = nullptr, *mBandwidth = nullptr, *mBf16 = nullptr, *mFp8 = nullptr, *mScaleUp = nullptr,
                   *mNic = nullptr;
    QLabel *mError = nullptr;
};

} // namespace memx::ui
