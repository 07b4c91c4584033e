// Quoting for generated shell, YAML and hostfiles (memx/export/quoting.h).
#include "memx/export/quoting.h"

#include <cstdint>

namespace memx {
namespace {

std::string hex2(unsigned v)
{
    const char *digits = "0123456789abcdef";
    return {digits[(v >> 4) & 0xf], digits[v & 0xf]};
}

std::string hex4(unsigned v)
{
    return hex2(v >> 8) + hex2(v & 0xff);
}

/// Decodes one UTF-8 sequence at `i`; returns the code point and its length, or length 0 when the
/// bytes are not valid UTF-8 (overlong forms and surrogates included).
std::pair<char32_t, size_t> decodeUtf8(std::string_view s, size_t i)
{
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80)
        return {b, 1};
    size_t len = b >= 0xf0 && b < 0xf5 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 && b < 0xe0 ? 2 : 0;
    if (len == 0 || (b >= 0xf0 && len != 4) || i + len > s.size())
        return {0, 0};
    char32_t cp = b & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
    for (size_t k = 1; k < len; ++k) {
        const auto c = static_cast<unsigned char>(s[i + k]);
        if ((c & 0xc0) != 0x80)
            return {0, 0};
        cp = (cp << 6) | (c & 0x3f);
    }
    const bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return {0, 0};
    return {cp, len};
}

/// C0, DEL, C1, and the characters YAML 1.1 treats as line breaks (U+2028, U+2029; U+0085 is C1)
/// plus the byte-order mark: none of them may appear raw in a comment or a YAML scalar.
bool isControl(char32_t cp)
{
    return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff;
}

/// YAML's printable set (YAML 1.1 c-printable, which PyYAML and OmegaConf enforce). Printable but
/// still escaped: the line breaks U+0085, U+2028, U+2029 (a parser folds them) and U+FEFF.
bool yamlPrintable(char32_t cp)
{
    return (cp >= 0x20 && cp <= 0x7e) || cp == 0x85 || (cp >= 0xa0 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd)
        || (cp >= 0x10000 && cp <= 0x10ffff);
}

} // namespace

std::string shellQuote(std::string_view text)
{
    bool control = false;
    for (char c : text)
        control = control || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    if (!control) {
        std::string out = "'";
        for (char c : text)
            out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return out + "'";
    }
    std::string out = "$'";
    for (char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if (c == '\\' || c == '\'')
            out += std::string("\\") + c;
        else if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (b < 0x20 || b == 0x7f)
            out += "\\x" + hex2(b);
        else
            out += c;
    }
    return out + "'";
}

std::string printableText(std::string_view text, bool escapeBackslash)
{
    std::string out;
    for (size_t i = 0; i < text.size();) {
        const auto [cp, len] = decodeUtf8(text, i);
        if (len == 0) {
            out += "\\x" + hex2(static_cast<unsigned char>(text[i]));
            ++i;
            continue;
        }
        if (cp == '\\' && escapeBackslash)
            out += "\\\\";
        else if (cp == '\n')
            out += "\\n";
        else if (cp == '\r')
            out += "\\r";
        else if (cp == '\t')
            out += "\\t";
        else if (cp == 0x1b)
            out += "\\e";
        else if (isControl(cp))
            out += cp < 0x80 ? "\\x" + hex2(static_cast<unsigned>(cp)) : "\\u" + hex4(static_cast<unsigned>(cp));
        else
            out.append(text.substr(i, len));
        i += len;
    }
    return out;
}

std::string yamlQuote(std::string_view text)
{
    std::string out = "\"";
    for (size_t i = 0; i < text.size();) {
        auto [cp, len] = decodeUtf8(text, i);
        if (len == 0) {
            out += "\\uFFFD";
            ++i;
            continue;
        }
        if (cp == '"' || cp == '\\')
            out += std::string("\\") + static_cast<char>(cp);
        else if (cp == '\n')
            out += "\\n";
        else if (cp == '\t')
            out += "\\t";
        else if (!yamlPrintable(cp) || isControl(cp))
            out += cp < 0x100  ? "\\x" + hex2(static_cast<unsigned>(cp))
                : cp < 0x10000 ? "\\u" + hex4(static_cast<unsigned>(cp))
                               : "\\U" + hex4(static_cast<unsigned>(cp >> 16)) + hex4(cp & 0xffff);
        else
            out.append(text.substr(i, len));
        i += len;
    }
    return out + "\"";
}

std::optional<std::string> hostNameProblem(std::string_view name)
{
    if (name.empty() || name.size() > 253)
        return "expected a host name or IP address of 1 to 253 characters, found " + std::to_string(name.size());
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.'
            || c == '-' || c == '_' || c == ':';
        if (!ok)
            return "expected a host name or IP address (letters, digits, '.', '-', '_', ':'), found \""
                + printableText(name) + "\"";
    }
    if (name.front() == '-' || name.front() == '.')
        return "expected a host name or IP address not starting with '" + std::string(1, name.front()) + "', found \""
            + printableText(name) + "\"";
    return std::nullopt;
}

} // namespace memx
