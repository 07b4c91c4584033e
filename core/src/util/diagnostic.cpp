#include "memx/util/diagnostic.h"

namespace memx {

std::string Diagnostic::toString() const
{
    std::string out;
    if (!file.empty())
        out += file + ": ";
    if (!pointer.empty())
        out += pointer + ": ";
    out += message;
    return out;
}

void Diagnostics::error(const std::string &pointer, const std::string &message)
{
    mItems.push_back({mFile, pointer.empty() ? std::string("/") : pointer, message});
}

void Diagnostics::append(const Diagnostics &other)
{
    mItems.insert(mItems.end(), other.mItems.begin(), other.mItems.end());
}

void Diagnostics::throwIfAny() const
{
    if (!mItems.empty())
        throw LoadError(mItems);
}

static std::string joinDiagnostics(const std::vector<Diagnostic> &items)
{
    std::string out;
    for (const Diagnostic &d : items) {
        if (!out.empty())
            out += '\n';
        out += d.toString();
    }
    return out;
}

/// `text` with every byte that is not part of valid UTF-8 written as "\xNN": messages quote the
/// user's input (a JSON syntax error's "last read", a CSV cell), which may be binary; printed
/// raw they corrupt terminals and JSON output (found by tests/data/bad-inputs/cluster-binary.json).
static std::string validUtf8(const std::string &text)
{
    std::string out;
    const auto *s = reinterpret_cast<const unsigned char *>(text.data());
    const size_t n = text.size();
    for (size_t i = 0; i < n;) {
        const unsigned char c = s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        bool ok = len > 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; ++k)
            ok = (s[i + k] & 0xC0) == 0x80;
        if (ok && len > 1) {
            // Reject overlong forms, surrogates and code points above U+10FFFF.
            const unsigned cp = len == 2 ? ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu)
                : len == 3
                ? ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu)
                : ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
            ok = (len == 2 && cp >= 0x80) || (len == 3 && cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF))
                || (len == 4 && cp >= 0x10000 && cp <= 0x10FFFF);
        }
        if (ok) {
            out.append(text, i, len);
            i += len;
        } else {
            static const char *hex = "0123456789ABCDEF";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xF];
            ++i;
        }
    }
    return out;
}

static std::vector<Diagnostic> printable(std::vector<Diagnostic> items)
{
    for (Diagnostic &d : items)
        d.message = validUtf8(d.message);
    return items;
}

LoadError::LoadError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(joinDiagnostics(printable(diagnostics)))
    , mDiagnostics(printable(std::move(diagnostics)))
{
}

LoadError::LoadError(std::string file, std::string pointer, std::string message)
    : LoadError(std::vector<Diagnostic> {{std::move(file), std::move(pointer), std::move(message)}})
{
}

} // namespace memx
