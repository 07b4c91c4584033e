#include "memx/util/jsonreader.h"

#include "memx/util/fileio.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

namespace memx {

using nlohmann::json;

namespace {

/// Parser callback that refuses a key given twice in one object (nlohmann keeps the last value
/// silently: "gpus": 8, "gpus": 4 would read as 4), naming the duplicate by its JSON pointer.
class DuplicateKeyCheck {
public:
    explicit DuplicateKeyCheck(const std::string &file)
        : mFile(file)
    {
    }

    bool operator()(int, json::parse_event_t event, json &parsed)
    {
        using E = json::parse_event_t;
        if (event == E::object_start || event == E::array_start || event == E::value)
            enterElement();
        switch (event) {
        case E::object_start:
        case E::array_start:
            mFrames.push_back({event == E::array_start, pointer(), {}, {}, 0});
            break;
        case E::object_end:
        case E::array_end:
            mFrames.pop_back();
            break;
        case E::key: {
            Frame &f = mFrames.back();
            f.current = parsed.get<std::string>();
            if (!f.keys.insert(f.current).second)
                throw LoadError(mFile, jsonPointerJoin(f.pointer, f.current),
                                "duplicate key \"" + f.current + "\" (each key may appear once in an object)");
            break;
        }
        case E::value:
            break;
        }
        return true;
    }

private:
    struct Frame {
        bool array = false;
        std::string pointer; ///< of the container itself
        std::set<std::string> keys;
        std::string current; ///< objects: the key being read
        size_t next = 0; ///< arrays: index of the next element
    };
    void enterElement()
    {
        if (!mFrames.empty() && mFrames.back().array)
            mFrames.back().current = std::to_string(mFrames.back().next++);
    }
    std::string pointer() const
    {
        if (mFrames.empty())
            return "";
        return jsonPointerJoin(mFrames.back().pointer, mFrames.back().current);
    }

    const std::string &mFile;
    std::vector<Frame> mFrames;
};

} // namespace

nlohmann::json parseJsonText(const std::string &text, const std::string &file)
{
    try {
        return json::parse(text, DuplicateKeyCheck(file));
    } catch (const json::parse_error &e) {
        // Translate the byte offset into line and column.
        size_t byte = e.byte == 0 ? 0 : e.byte - 1;
        if (byte > text.size())
            byte = text.size();
        size_t line = 1, col = 1;
        for (size_t i = 0; i < byte; ++i) {
            if (text[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        std::string what = e.what();
        // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
        const auto colon = what.find(": ", what.find("parse error"));
        std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
        if (text.find_first_not_of(" \t\r\n") == std::string::npos)
            detail = "the file is empty, expected a JSON object";
        throw LoadError(file, "line " + std::to_string(line) + ", column " + std::to_string(col),
                        "invalid JSON: " + detail);
    } catch (const json::out_of_range &e) {
        // A number too large for a double ("1e400") is out_of_range 406, not a parse_error; it
        // escaped as an exception without the file name (found by fuzz_cluster, fuzz_profile_json).
        std::string what = e.what();
        const auto quote = what.find('\'');
        const std::string literal
            = quote == std::string::npos ? std::string() : what.substr(quote + 1, what.rfind('\'') - quote - 1);
        std::string where;
        if (const size_t at = literal.empty() ? std::string::npos : text.find(literal); at != std::string::npos) {
            const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + at, '\n'));
            const size_t lineStart = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
            where = "line " + std::to_string(line) + ", column " + std::to_string(at - lineStart + 1);
        }
        throw LoadError(file, where,
                        "invalid JSON: the number " + literal
                            + " is out of range (numbers must fit a double, at most about 1.8e308)");
    }
}

nlohmann::json readJsonFile(const std::string &path)
{
    return parseJsonText(readTextFile(path), path);
}

std::string jsonPointerJoin(const std::string &pointer, const std::string &key)
{
    std::string escaped;
    for (char c : key) {
        if (c == '~')
            escaped += "~0";
        else if (c == '/')
            escaped += "~1";
        else
            escaped += c;
    }
    return (pointer == "/" ? std::string() : pointer) + "/" + escaped;
}

std::string jsonPointerJoin(const std::string &pointer, size_t index)
{
    return jsonPointerJoin(pointer, std::to_string(index));
}

std::string describeJson(const json &value)
{
    switch (value.type()) {
    case json::value_t::null:
        return "null";
    case json::value_t::object:
        return "an object";
    case json::value_t::array:
        return "an array";
    case json::value_t::boolean:
        return value.get<bool>() ? "true" : "false";
    case json::value_t::string: {
        std::string s = value.get<std::string>();
        if (s.size() > 60)
            s = s.substr(0, 57) + "...";
        return "\"" + s + "\"";
    }
    default: {
        std::string s = value.dump();
        return s.size() > 60 ? s.substr(0, 57) + "..." : s;
    }
    }
}

JsonObjectReader::JsonObjectReader(const json &value, std::string pointer, Diagnostics &diags)
    : mValue(value)
    , mPointer(pointer.empty() ? "/" : std::move(pointer))
    , mDiags(diags)
{
    if (!mValue.is_object()) {
        mValid = false;
        mDiags.error(mPointer, "expected an object, found " + describeJson(mValue));
    }
}

bool JsonObjectReader::has(const std::string &key) const
{
    return mValid && mValue.contains(key);
}

const json *JsonObjectReader::find(const std::string &key) const
{
    if (!mValid)
        return nullptr;
    auto it = mValue.find(key);
    return it == mValue.end() ? nullptr : &*it;
}

void JsonObjectReader::error(const std::string &key, const std::string &message)
{
    mDiags.error(key.empty() ? mPointer : pointerTo(key), message);
}

const json *JsonObjectReader::fetch(const std::string &key, bool required, const char *expected)
{
    if (!mValid)
        return nullptr;
    const json *v = find(key);
    if (!v) {
        if (required)
            mDiags.error(pointerTo(key), std::string("missing required field, expected ") + expected);
        return nullptr;
    }
    return v;
}

std::string JsonObjectReader::requireString(const std::string &key)
{
    if (!fetch(key, true, "a string"))
        return {};
    return optionalString(key).value_or(std::string());
}

std::optional<std::string> JsonObjectReader::optionalString(const std::string &key)
{
    const json *v = fetch(key, false, "a string");
    if (!v)
        return std::nullopt;
    if (!v->is_string()) {
        error(key, "expected a string, found " + describeJson(*v));
        return std::nullopt;
    }
    return v->get<std::string>();
}

static std::string formatNumber(double v)
{
    std::ostringstream ss;
    ss << v;
    return ss.str();
}

std::optional<long long> JsonObjectReader::optionalInt(const std::string &key, long long min, long long max)
{
    const json *v = fetch(key, false, "an integer");
    if (!v)
        return std::nullopt;
    const std::string range = " from " + std::to_string(min) + " to " + std::to_string(max);
    long long value = 0;
    if (v->is_number_integer()) {
        if (v->is_number_unsigned() && v->get<unsigned long long>() > static_cast<unsigned long long>(max)) {
            error(key, "expected an integer" + range + ", found " + describeJson(*v));
            return std::nullopt;
        }
        value = v->get<long long>();
    } else if (v->is_number_float()) {
        const double d = v->get<double>();
        if (!std::isfinite(d) || std::floor(d) != d || std::fabs(d) > 9e15) {
            error(key, "expected an integer" + range + ", found " + describeJson(*v));
            return std::nullopt;
        }
        value = static_cast<long long>(d);
    } else {
        error(key, "expected an integer" + range + ", found " + describeJson(*v));
        return std::nullopt;
    }
    if (value < min || value > max) {
        error(key, "expected an integer" + range + ", found " + std::to_string(value));
        return std::nullopt;
    }
    return value;
}

long long JsonObjectReader::requireInt(const std::string &key, long long min, long long max)
{
    if (!fetch(key, true, ("an integer from " + std::to_string(min) + " to " + std::to_string(max)).c_str()))
        return min;
    return optionalInt(key, min, max).value_or(min);
}

std::optional<double> JsonObjectReader::optionalNumber(const std::string &key, double min, double max)
{
    const json *v = fetch(key, false, "a number");
    if (!v)
        return std::nullopt;
    const std::string range = " from " + formatNumber(min) + " to " + formatNumber(max);
    if (!v->is_number()) {
        error(key, "expected a number" + range + ", found " + describeJson(*v));
        return std::nullopt;
    }
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < min || d > max) {
        error(key, "expected a number" + range + ", found " + describeJson(*v));
        return std::nullopt;
    }
    return d;
}

double JsonObjectReader::requireNumber(const std::string &key, double min, double max)
{
    if (!fetch(key, true, ("a number from " + formatNumber(min) + " to " + formatNumber(max)).c_str()))
        return min;
    return optionalNumber(key, min, max).value_or(min);
}

std::optional<double> JsonObjectReader::nullableNumber(const std::string &key, double min, double max)
{
    const json *v = fetch(key, true, "a number or null (unknown)");
    if (!v || v->is_null())
        return std::nullopt;
    return optionalNumber(key, min, max);
}

std::optional<bool> JsonObjectReader::optionalBool(const std::string &key)
{
    const json *v = fetch(key, false, "true or false");
    if (!v)
        return std::nullopt;
    if (!v->is_boolean()) {
        error(key, "expected true or false, found " + describeJson(*v));
        return std::nullopt;
    }
    return v->get<bool>();
}

bool JsonObjectReader::requireBool(const std::string &key)
{
    if (!fetch(key, true, "true or false"))
        return false;
    return optionalBool(key).value_or(false);
}

static std::string choiceList(std::initializer_list<const char *> choices)
{
    std::string out;
    size_t i = 0;
    for (const char *c : choices) {
        if (i > 0)
            out += (i + 1 == choices.size()) ? " or " : ", ";
        out += "\"" + std::string(c) + "\"";
        ++i;
    }
    return out;
}

std::optional<int> JsonObjectReader::optionalEnum(const std::string &key, std::initializer_list<const char *> choices)
{
    const json *v = fetch(key, false, "a string");
    if (!v)
        return std::nullopt;
    if (v->is_string()) {
        const std::string s = v->get<std::string>();
        int i = 0;
        for (const char *c : choices) {
            if (s == c)
                return i;
            ++i;
        }
    }
    error(key, "expected one of " + choiceList(choices) + ", found " + describeJson(*v));
    return std::nullopt;
}

int JsonObjectReader::requireEnum(const std::string &key, std::initializer_list<const char *> choices)
{
    if (!fetch(key, true, ("one of " + choiceList(choices)).c_str()))
        return 0;
    return optionalEnum(key, choices).value_or(0);
}

const json *JsonObjectReader::optionalArray(const std::string &key)
{
    const json *v = fetch(key, false, "an array");
    if (!v)
        return nullptr;
    if (!v->is_array()) {
        error(key, "expected an array, found " + describeJson(*v));
        return nullptr;
    }
    return v;
}

const json *JsonObjectReader::requireArray(const std::string &key)
{
    if (!fetch(key, true, "an array"))
        return nullptr;
    return optionalArray(key);
}

const json *JsonObjectReader::optionalObject(const std::string &key)
{
    const json *v = fetch(key, false, "an object");
    if (!v)
        return nullptr;
    if (!v->is_object()) {
        error(key, "expected an object, found " + describeJson(*v));
        return nullptr;
    }
    return v;
}

const json *JsonObjectReader::requireObject(const std::string &key)
{
    if (!fetch(key, true, "an object"))
        return nullptr;
    return optionalObject(key);
}

void JsonObjectReader::rejectUnknownKeys(std::initializer_list<const char *> known)
{
    if (!mValid)
        return;
    for (auto it = mValue.begin(); it != mValue.end(); ++it) {
        bool ok = false;
        for (const char *k : known)
            if (it.key() == k)
                ok = true;
        if (!ok)
            mDiags.error(pointerTo(it.key()), "unknown field; expected one of " + choiceList(known));
    }
}

void JsonObjectReader::requireFormat(const std::string &expected)
{
    if (!mValid)
        return;
    const json *v = find("format");
    if (!v) {
        error("format", "missing required field, expected \"" + expected + "\"");
        return;
    }
    if (!v->is_string() || v->get<std::string>() != expected) {
        std::string found = describeJson(*v);
        std::string hint;
        if (v->is_string()) {
            const std::string s = v->get<std::string>();
            const auto slash = expected.find('/');
            if (s.rfind(expected.substr(0, slash + 1), 0) == 0)
                hint = " (this file was written by a newer or older MemX; version " + s.substr(slash + 1)
                    + " is not supported)";
        }
        error("format", "expected \"" + expected + "\", found " + found + hint);
    }
}

} // namespace memx
