#include "command.h"

#include "memx/io/formats.h"

#include <stdexcept>
#include <unistd.h>

namespace memx::cli {

Args::Args(const std::vector<std::string> &argv, std::set<std::string> valueOptions, std::set<std::string> switches)
{
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string &a = argv[i];
        if (a == "--help" || a == "-h") {
            mHelp = true;
            continue;
        }
        if (a == "--") {
            mPositional.insert(mPositional.end(), argv.begin() + static_cast<long>(i) + 1, argv.end());
            break;
        }
        if (a.rfind("--", 0) == 0) {
            std::string name = a.substr(2), value;
            bool hasValue = false;
            if (auto eq = name.find('='); eq != std::string::npos) {
                value = name.substr(eq + 1);
                name = name.substr(0, eq);
                hasValue = true;
            }
            if (valueOptions.count(name)) {
                if (!hasValue) {
                    if (i + 1 >= argv.size())
                        throw UsageError {"option --" + name + " needs a value"};
                    value = argv[++i];
                }
                mValues[name] = value;
                mAllValues[name].push_back(value);
            } else if (switches.count(name)) {
                if (hasValue)
                    throw UsageError {"option --" + name + " takes no value"};
                mSwitches.insert(name);
            } else {
                throw UsageError {"unknown option --" + name};
            }
            continue;
        }
        mPositional.push_back(a);
    }
}

bool Args::has(const std::string &name) const
{
    return mSwitches.count(name) || mValues.count(name);
}

std::optional<std::string> Args::value(const std::string &name) const
{
    auto it = mValues.find(name);
    if (it == mValues.end())
        return std::nullopt;
    return it->second;
}

std::vector<std::string> Args::values(const std::string &name) const
{
    auto it = mAllValues.find(name);
    return it == mAllValues.end() ? std::vector<std::string> {} : it->second;
}

Cluster loadClusterOption(const Args &args)
{
    const std::string cluster = args.require("cluster");
    const std::vector<std::string> files = args.values("gpus");
    if (files.empty())
        return loadCluster(cluster);
    return loadCluster(cluster, catalogueWithCustomDevices(files));
}

std::string Args::require(const std::string &name) const
{
    auto v = value(name);
    if (!v)
        throw UsageError {"missing required option --" + name};
    return *v;
}

std::optional<long long> Args::intValue(const std::string &name, long long min, long long max) const
{
    auto v = value(name);
    if (!v)
        return std::nullopt;
    try {
        size_t pos = 0;
        long long n = std::stoll(*v, &pos);
        if (pos != v->size() || n < min || n > max)
            throw std::out_of_range("");
        return n;
    } catch (...) {
        throw UsageError {"option --" + name + " expects an integer from " + std::to_string(min) + " to "
                          + std::to_string(max) + ", found \"" + *v + "\""};
    }
}

std::vector<Command> &commandRegistry()
{
    static std::vector<Command> registry;
    return registry;
}

bool stderrIsTerminal()
{
    return ::isatty(STDERR_FILENO) == 1;
}

} // namespace memx::cli
