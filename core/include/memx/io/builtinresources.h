#pragma once

#include <string_view>
#include <vector>

namespace memx {

/// A resource file compiled into the binary.
struct BuiltinResource {
    std::string_view name; ///< file name, e.g. "llama2-7b.json"
    std::string_view text;
};

/// resources/catalogue/gpus.json as shipped.
std::string_view builtinCatalogueJson();
/// resources/models/*.json as shipped, sorted by file name.
std::vector<BuiltinResource> builtinModelJson();

} // namespace memx
