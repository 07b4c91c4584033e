#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace memx {
struct Cluster;
}

namespace memx::cli {

/// Parsed command line of one subcommand: --name value / --name=value options, boolean
/// switches and positional arguments. Unknown options are errors.
class Args {
public:
    /// `valueOptions` take a value; `switches` do not. Throws UsageError on a bad command line.
    Args(const std::vector<std::string> &argv, std::set<std::string> valueOptions, std::set<std::string> switches);

    bool has(const std::string &name) const;
    /// The last value given for option `name` (an option given twice: the later one).
    std::optional<std::string> value(const std::string &name) const;
    /// Every value given for a repeatable option `name`, in command-line order.
    std::vector<std::string> values(const std::string &name) const;
    std::string require(const std::string &name) const;
    /// Integer option within [min, max]; throws UsageError naming the option otherwise.
    std::optional<long long> intValue(const std::string &name, long long min, long long max) const;
    const std::vector<std::string> &positional() const { return mPositional; }
    bool help() const { return mHelp; }

private:
    std::map<std::string, std::string> mValues;
    std::map<std::string, std::vector<std::string>> mAllValues;
    std::set<std::string> mSwitches;
    std::vector<std::string> mPositional;
    bool mHelp = false;
};

/// The cluster of --cluster FILE, its GPUs looked up in the built-in catalogue plus the custom
/// devices of every --gpus FILE (memx.catalogue/1, memx::loadCustomDevices; a later file's
/// definition of an id replaces an earlier one's), the files the workbench's Load GPUs... reads.
Cluster loadClusterOption(const Args &args);

/// A mistake on the command line: printed with the command's usage, exit code 2.
struct UsageError {
    std::string message;
};

/// One `memx` subcommand. Commands register themselves with a static CommandRegistration.
struct Command {
    std::string name; ///< e.g. "validate" or "profile import"
    std::string summary; ///< one line for `memx --help`
    std::string usage; ///< full help text for `memx NAME --help`
    int (*run)(const std::vector<std::string> &args) = nullptr;
};

std::vector<Command> &commandRegistry();

struct CommandRegistration {
    explicit CommandRegistration(Command command) { commandRegistry().push_back(std::move(command)); }
};

/// Exit codes shared by all commands.
enum ExitCode { Ok = 0, Failure = 1, Usage = 2, Cancelled = 130 };

/// True when stderr is a terminal (progress bars are drawn only then).
bool stderrIsTerminal();

} // namespace memx::cli
