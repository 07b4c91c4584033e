// Escaping filter for the CLI's standard output and error (terminal.h).
#include "terminal.h"

#include "memx/export/quoting.h"

#include <iostream>
#include <streambuf>

namespace memx::cli {
namespace {

/// Forwards to another streambuf, escaping C0 controls (but '\n', '\t'), DEL and UTF-8 C1 controls.
class EscapingBuf : public std::streambuf {
public:
    explicit EscapingBuf(std::streambuf *target)
        : mTarget(target)
    {
    }

protected:
    int_type overflow(int_type ch) override
    {
        if (traits_type::eq_int_type(ch, traits_type::eof()))
            return traits_type::not_eof(ch);
        put(static_cast<unsigned char>(traits_type::to_char_type(ch)));
        return ch;
    }

    std::streamsize xsputn(const char *s, std::streamsize n) override
    {
        for (std::streamsize i = 0; i < n; ++i)
            put(static_cast<unsigned char>(s[i]));
        return n;
    }

    int sync() override
    {
        if (mPendingC2)
            mTarget->sputc(static_cast<char>(0xc2));
        mPendingC2 = false;
        return mTarget->pubsync();
    }

private:
    void put(unsigned char c)
    {
        if (mPendingC2) {
            mPendingC2 = false;
            if (c >= 0x80 && c < 0xa0) { // U+0080..U+009F: C1 controls (0x9b is CSI)
                write(memx::printableText(std::string {static_cast<char>(0xc2), static_cast<char>(c)}, false));
                return;
            }
            mTarget->sputc(static_cast<char>(0xc2));
        }
        if (c == 0xc2) {
            mPendingC2 = true;
        } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
            write(memx::printableText(std::string(1, static_cast<char>(c)), false));
        } else {
            mTarget->sputc(static_cast<char>(c));
        }
    }

    void write(const std::string &s) { mTarget->sputn(s.data(), static_cast<std::streamsize>(s.size())); }

    std::streambuf *mTarget;
    bool mPendingC2 = false;
};

std::streambuf *gRawErr = nullptr;

} // namespace

std::string terminalText(std::string_view text)
{
    std::string out;
    size_t start = 0;
    // printableText escapes '\n' and '\t' too; keep those as they are.
    for (size_t i = 0; i <= text.size(); ++i)
        if (i == text.size() || text[i] == '\n' || text[i] == '\t') {
            out += memx::printableText(text.substr(start, i - start), false);
            if (i < text.size())
                out += text[i];
            start = i + 1;
        }
    return out;
}

void installTerminalFilter()
{
    // Never destroyed: std::cout and std::cerr are flushed by the runtime after main returns (in
    // ios_base::Init's destructor, after function-local statics are gone), so their buffers must
    // outlive every static. (A static buffer here crashed every memx exit under ASan.)
    static EscapingBuf *const out = new EscapingBuf(std::cout.rdbuf());
    static EscapingBuf *const err = new EscapingBuf(std::cerr.rdbuf());
    gRawErr = std::cerr.rdbuf();
    std::cout.rdbuf(out);
    std::cerr.rdbuf(err);
}

std::ostream &rawStderr()
{
    static std::ostream raw(nullptr);
    raw.rdbuf(gRawErr ? gRawErr : std::cerr.rdbuf());
    return raw;
}

} // namespace memx::cli
