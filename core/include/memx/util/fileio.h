#pragma once

#include <string>

namespace memx {

/// Reads a whole file. Throws LoadError naming the path when it cannot be read.
std::string readTextFile(const std::string &path);

/// Writes `content` to `path` atomically: the data goes to a temporary file in the same folder,
/// is flushed to disk, then renamed over `path`. Until the rename the previous file is untouched,
/// so a crash or a full disk never leaves a half-written file. Throws std::runtime_error naming
/// the path and the system error on failure (the temporary is removed).
void writeFileAtomically(const std::string &path, const std::string &content);

} // namespace memx
