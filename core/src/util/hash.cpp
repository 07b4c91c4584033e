#include "memx/util/hash.h"

#include <cstdio>

namespace memx {

std::uint64_t fnv1a64(const std::string &bytes)
{
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

std::string fnv1a64Hex(const std::string &bytes)
{
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(bytes)));
    return buf;
}

std::string jsonHash(const nlohmann::json &value)
{
    return fnv1a64Hex(value.dump());
}

} // namespace memx
