#pragma once

#include "memx/util/diagnostic.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memx {

/// Parses JSON text; a syntax error becomes a LoadError naming the file, line and column.
nlohmann::json parseJsonText(const std::string &text, const std::string &file);

/// Reads a JSON file (readTextFile + parseJsonText).
nlohmann::json readJsonFile(const std::string &path);

/// Appends a key or index to a JSON pointer, escaping '~' and '/' as RFC 6901 says.
std::string jsonPointerJoin(const std::string &pointer, const std::string &key);
std::string jsonPointerJoin(const std::string &pointer, size_t index);

/// Short description of a JSON value for error messages: `"abc"`, `-3`, `an object`, ...
std::string describeJson(const nlohmann::json &value);

/// Reads typed fields of one JSON object, recording a Diagnostic (with the field's JSON pointer,
/// what was expected and what was found) for every problem instead of stopping at the first.
/// Getters return a fallback value after recording a problem so that the caller can go on and
/// find the other problems; the caller must throw (Diagnostics::throwIfAny) before using them.
class JsonObjectReader {
public:
    /// `value` must outlive the reader. If it is not an object, a problem is recorded and every
    /// getter reports nothing more.
    JsonObjectReader(const nlohmann::json &value, std::string pointer, Diagnostics &diags);

    bool valid() const { return mValid; }
    const std::string &pointer() const { return mPointer; }
    std::string pointerTo(const std::string &key) const { return jsonPointerJoin(mPointer, key); }
    bool has(const std::string &key) const;
    const nlohmann::json *find(const std::string &key) const;

    std::string requireString(const std::string &key);
    std::optional<std::string> optionalString(const std::string &key);
    /// Integer within [min, max]; doubles with a fraction, strings, NaN are rejected.
    long long requireInt(const std::string &key, long long min, long long max);
    std::optional<long long> optionalInt(const std::string &key, long long min, long long max);
    /// Finite number within [min, max].
    double requireNumber(const std::string &key, double min, double max);
    std::optional<double> optionalNumber(const std::string &key, double min, double max);
    /// Number or null ("unknown"): returns nullopt for null.
    std::optional<double> nullableNumber(const std::string &key, double min, double max);
    bool requireBool(const std::string &key);
    std::optional<bool> optionalBool(const std::string &key);
    /// One of `choices`; returns the index of the match.
    int requireEnum(const std::string &key, std::initializer_list<const char *> choices);
    std::optional<int> optionalEnum(const std::string &key, std::initializer_list<const char *> choices);
    /// Array (possibly empty) or nullptr after recording a problem.
    const nlohmann::json *requireArray(const std::string &key);
    const nlohmann::json *optionalArray(const std::string &key);
    const nlohmann::json *requireObject(const std::string &key);
    const nlohmann::json *optionalObject(const std::string &key);

    /// Records a problem for every key not in `known` (catches typos such as "gpu_count").
    void rejectUnknownKeys(std::initializer_list<const char *> known);
    /// Checks a "format" field equals `expected` (e.g. "memx.cluster/1").
    void requireFormat(const std::string &expected);

    void error(const std::string &key, const std::string &message);

private:
    const nlohmann::json *fetch(const std::string &key, bool required, const char *expected);

    const nlohmann::json &mValue;
    std::string mPointer;
    Diagnostics &mDiags;
    bool mValid = true;
};

} // namespace memx
