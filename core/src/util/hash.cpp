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

std::string hex16(std::uint64_t value)
{
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
    return buf;
}

std::string fnv1a64Hex(const std::string &bytes)
{
    return hex16(fnv1a64(bytes));
}

std::string exactNumber(double value)
{
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    return buf;
}

std::string jsonHash(const nlohmann::json &value)
{
    return fnv1a64Hex(value.dump());
}

} // namespace memx
