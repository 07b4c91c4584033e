#include "memx/profile/profilejob.h"

namespace memx {

const char *toString(ProfileJobKind kind)
{
    return kind == ProfileJobKind::PerLayer ? "per-layer" : "end-to-end";
}

std::optional<ProfileJobKind> profileJobKindFromString(const std::string &text)
{
    if (text == "per-layer")
        return ProfileJobKind::PerLayer;
    if (text == "end-to-end")
        return ProfileJobKind::EndToEnd;
    return std::nullopt;
}

} // namespace memx
