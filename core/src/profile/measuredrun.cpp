#include "memx/profile/measuredrun.h"

namespace memx {

const char *toString(MemoryKind kind)
{
    switch (kind) {
    case MemoryKind::AllocatorMax:
        return "allocator-max";
    case MemoryKind::Reserved:
        return "reserved";
    case MemoryKind::DeviceUsed:
        return "device-used";
    }
    return "allocator-max";
}

std::optional<MemoryKind> memoryKindFromString(const std::string &text)
{
    for (MemoryKind k : {MemoryKind::AllocatorMax, MemoryKind::Reserved, MemoryKind::DeviceUsed})
        if (text == toString(k))
            return k;
    return std::nullopt;
}

} // namespace memx
