#include "memx/ui/vendorstyle.h"

#include <algorithm>

namespace memx::ui {

QColor vendorColor(const std::string &vendor)
{
    std::string v = vendor;
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (v == "nvidia")
        return QColor(0x76, 0xb9, 0x00);
    if (v == "amd")
        return QColor(0xd9, 0x2b, 0x2b);
    if (v == "intel")
        return QColor(0x00, 0x71, 0xc5);
    if (v == "huawei")
        return QColor(0x8b, 0x12, 0x1a);
    return QColor(0x80, 0x80, 0x88);
}

QColor vendorTextColor(const std::string &vendor)
{
    const QColor c = vendorColor(vendor);
    // Relative luminance (sRGB weights) decides between black and white text.
    const double y = 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF();
    return y > 0.45 ? QColor(Qt::black) : QColor(Qt::white);
}

} // namespace memx::ui
