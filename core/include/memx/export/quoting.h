#pragma once
// The one quoting layer of the exporters: every value written into a generated shell script, YAML
// file, hostfile or comment goes through one of these (see docs/export.md, "Names and quoting").

#include <optional>
#include <string>
#include <string_view>

namespace memx {

/// A bash word that expands to exactly `text`: '...' ('\'' for quotes); bash's $'...' with
/// \n, \t, \xHH escapes when `text` has control characters, so the word stays on one line.
std::string shellQuote(std::string_view text);

/// `text` as printable, single-line text for comments and terminals: C0/C1 control characters,
/// DEL, U+2028/U+2029 (YAML line breaks) and U+FEFF become \n, \r, \t, \e or \xHH / \u0085 style escapes, bytes that
/// are not UTF-8 become \xHH, a backslash becomes \\ (unless `escapeBackslash` is false: terminal output of messages
/// that may already hold escapes). Other UTF-8 is kept. A comment built from it cannot be ended early.
std::string printableText(std::string_view text, bool escapeBackslash = true);

/// A YAML double-quoted scalar that parses back to exactly `text` (YAML 1.1 and 1.2): \" \\ and
/// escapes for every character outside YAML's printable set. Bytes that are not UTF-8 cannot be
/// represented in YAML and become U+FFFD.
std::string yamlQuote(std::string_view text);

/// Why `name` cannot be a host in a hostfile / ssh target / Slurm node list, or std::nullopt when
/// it can: expected 1-253 characters of letters, digits, '.', '-', '_' and ':' (IPv6), not
/// starting with '-' or '.'.
std::optional<std::string> hostNameProblem(std::string_view name);

} // namespace memx
