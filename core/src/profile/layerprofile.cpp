#include "memx/profile/layerprofile.h"

namespace memx {

const char *toString(ProfileOrigin origin)
{
    switch (origin) {
    case ProfileOrigin::Measured:
        return "measured";
    case ProfileOrigin::Simulated:
        return "simulated";
    case ProfileOrigin::Interpolated:
        return "interpolated";
    }
    return "measured";
}

void ProfileSet::add(LayerProfile profile)
{
    for (LayerProfile &p : mProfiles) {
        if (p.key == profile.key) {
            p = std::move(profile);
            return;
        }
    }
    mProfiles.push_back(std::move(profile));
}

const LayerProfile *ProfileSet::find(const ProfileKey &key) const
{
    for (const LayerProfile &p : mProfiles)
        if (p.key == key)
            return &p;
    return nullptr;
}

} // namespace memx
