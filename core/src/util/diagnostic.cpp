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

LoadError::LoadError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(joinDiagnostics(diagnostics))
    , mDiagnostics(std::move(diagnostics))
{}

LoadError::LoadError(std::string file, std::string pointer, std::string message)
    : LoadError(std::vector<Diagnostic>{{std::move(file), std::move(pointer), std::move(message)}})
{}

} // namespace memx
