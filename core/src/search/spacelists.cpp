#include "memx/search/spacelists.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace memx {

const SpaceListBounds &spaceListBounds(const std::string &option)
{
    for (const SpaceListBounds &b : kSpaceListBounds)
        if (option == b.option)
            return b;
    throw std::invalid_argument("no search-space list \"" + option + "\"");
}

std::optional<std::vector<int>> parseIntList(const std::string &text, int lo, int hi, std::string *error)
{
    std::vector<int> out;
    size_t i = 0;
    while (i < text.size()) {
        const auto separator = [](char c) { return c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\n'; };
        while (i < text.size() && separator(text[i]))
            ++i;
        size_t end = i;
        while (end < text.size() && !separator(text[end]))
            ++end;
        if (end == i)
            break;
        const std::string part = text.substr(i, end - i);
        int v = 0;
        const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
        if (ec != std::errc() || ptr != part.data() + part.size() || v < lo || v > hi) {
            if (error)
                *error = "expected comma-separated integers from " + std::to_string(lo) + " to " + std::to_string(hi)
                    + ", found \"" + part + "\"";
            return std::nullopt;
        }
        out.push_back(v);
        i = end;
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

} // namespace memx
