#include "memx/profile/profilejob.h"

#include <algorithm>

namespace memx {

const char *toString(ProfileJobKind kind)
{
    switch (kind) {
    case ProfileJobKind::PerLayer:
        return "per-layer";
    case ProfileJobKind::EndToEnd:
        return "end-to-end";
    case ProfileJobKind::Memory:
        return "memory";
    }
    return "end-to-end";
}

Model memoryCalibrationModel(const Model &model, int layers)
{
    Model m = model;
    m.shape.layers = std::max(1, std::min(layers, model.shape.layers));
    m.id = model.id + "-memcal-L" + std::to_string(m.shape.layers);
    m.name = (model.name.empty() ? model.id : model.name) + " (memory calibration, " + std::to_string(m.shape.layers)
        + " layers)";
    return m;
}

std::optional<ProfileJobKind> profileJobKindFromString(const std::string &text)
{
    if (text == "per-layer")
        return ProfileJobKind::PerLayer;
    if (text == "end-to-end")
        return ProfileJobKind::EndToEnd;
    if (text == "memory")
        return ProfileJobKind::Memory;
    return std::nullopt;
}

} // namespace memx
