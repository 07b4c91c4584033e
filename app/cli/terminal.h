#pragma once
// Terminal output that names from user files cannot hijack (ESC sequences retitling the terminal,
// BEL, carriage returns overwriting lines): every byte the CLI prints goes through one filter.

#include <iosfwd>
#include <string>
#include <string_view>

namespace memx::cli {

/// `text` with control characters escaped (\e, \r, \x07, \u009b ...); newlines and tabs kept.
std::string terminalText(std::string_view text);

/// Installs the escaping filter on std::cout and std::cerr (main() calls it once). Everything
/// printed afterwards has its control characters escaped, except '\n' and '\t'.
void installTerminalFilter();

/// The unfiltered standard error, for progress lines that redraw themselves with '\r'.
std::ostream &rawStderr();

} // namespace memx::cli
