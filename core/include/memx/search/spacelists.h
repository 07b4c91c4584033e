#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memx {

/// The integer-list dimensions of the search space as `memx search` (--stages, --tp, --mbs,
/// --vpp, --cp) and the workbench's Search Space dock take them: one bounds table for both.
struct SpaceListBounds {
    const char *option; ///< the CLI option without "--"
    int lo, hi;
};
inline constexpr SpaceListBounds kSpaceListBounds[] = {
    {"stages", 1, 64}, {"tp", 1, 64}, {"mbs", 1, 1024}, {"vpp", 1, 64}, {"cp", 1, 64},
};
/// The bounds of `option` (one of kSpaceListBounds); throws std::invalid_argument otherwise.
const SpaceListBounds &spaceListBounds(const std::string &option);

/// Whole numbers from `lo` to `hi` separated by commas, semicolons or spaces ("4, 1 2"), sorted
/// and without duplicates; empty text gives an empty list. std::nullopt and `error` ("expected
/// comma-separated integers from 1 to 64, found \"0\"") for anything else.
std::optional<std::vector<int>> parseIntList(const std::string &text, int lo, int hi, std::string *error);

} // namespace memx
