#pragma once

#include <QColor>
#include <QString>

#include <string>

namespace memx::ui {

/// Fill colour of a vendor's node boxes and palette swatches (NVIDIA green, AMD red, Intel blue,
/// Huawei dark red, others grey).
QColor vendorColor(const std::string &vendor);
/// A colour that reads well on top of vendorColor(vendor).
QColor vendorTextColor(const std::string &vendor);

/// MIME type of a GPU dragged from the palette; the payload is the device id in UTF-8.
inline constexpr const char *kGpuMimeType = "application/x-memx-gpu";

} // namespace memx::ui
