#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace memx {

/// One problem found in a user's input: where it is and what is wrong.
/// `file` is the path as the user gave it (may be empty for in-memory input), `pointer` a JSON
/// pointer ("/nodes/2/gpus") or "line N" for text formats, `message` says what was expected and
/// what was found.
struct Diagnostic {
    std::string file;
    std::string pointer;
    std::string message;

    /// "file: /pointer: message" - the one format every tool prints.
    std::string toString() const;
};

/// Collects every problem of one input so they can all be reported at once.
class Diagnostics {
public:
    explicit Diagnostics(std::string file = {})
        : mFile(std::move(file))
    {
    }

    void error(const std::string &pointer, const std::string &message);
    /// Appends problems found by another pass (keeps their own file name).
    void append(const Diagnostics &other);

    const std::string &file() const { return mFile; }
    bool empty() const { return mItems.empty(); }
    size_t size() const { return mItems.size(); }
    const std::vector<Diagnostic> &items() const { return mItems; }

    /// Throws LoadError with all collected problems when there is any.
    void throwIfAny() const;

private:
    std::string mFile;
    std::vector<Diagnostic> mItems;
};

/// Thrown when an input cannot be used; what() lists every problem, one per line.
class LoadError : public std::runtime_error {
public:
    explicit LoadError(std::vector<Diagnostic> diagnostics);
    LoadError(std::string file, std::string pointer, std::string message);

    const std::vector<Diagnostic> &diagnostics() const { return mDiagnostics; }

private:
    std::vector<Diagnostic> mDiagnostics;
};

} // namespace memx
