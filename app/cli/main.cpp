// memx: command-line twin of MemX Workbench. Each subcommand lives in its own cmd_*.cpp and
// registers itself; this file only dispatches.
#include "command.h"
#include "terminal.h"

#include "memx/util/diagnostic.h"
#include "memx/util/progress.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

using namespace memx::cli;

static void printOverview()
{
    auto commands = commandRegistry();
    std::sort(commands.begin(), commands.end(), [](const Command &a, const Command &b) { return a.name < b.name; });
    std::cout << "memx " << MEMX_VERSION
              << " - memory-aware parallel planning for heterogeneous GPU clusters\n\n"
                 "Usage: memx COMMAND [OPTIONS]\n       memx COMMAND --help\n\nCommands:\n";
    for (const Command &c : commands)
        std::cout << "  " << c.name << std::string(c.name.size() < 18 ? 18 - c.name.size() : 1, ' ') << c.summary
                  << "\n";
    std::cout << "\nOptions:\n  --help            this overview\n  --version         print the version\n";
}

int main(int argc, char **argv)
{
    installTerminalFilter();
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        printOverview();
        return args.empty() ? Usage : Ok;
    }
    if (args[0] == "--version") {
        std::cout << "memx " << MEMX_VERSION << "\n";
        return Ok;
    }
    // Longest match first, so "profile import" wins over "profile".
    const Command *match = nullptr;
    size_t matchWords = 0;
    for (const Command &c : commandRegistry()) {
        std::vector<std::string> words;
        size_t start = 0;
        while (start <= c.name.size()) {
            size_t sp = c.name.find(' ', start);
            words.push_back(c.name.substr(start, sp == std::string::npos ? std::string::npos : sp - start));
            if (sp == std::string::npos)
                break;
            start = sp + 1;
        }
        if (words.size() <= args.size() && std::equal(words.begin(), words.end(), args.begin())
            && words.size() > matchWords) {
            match = &c;
            matchWords = words.size();
        }
    }
    if (!match) {
        std::cerr << "memx: unknown command '" << args[0] << "'. Run 'memx --help' for the list.\n";
        return Usage;
    }
    std::vector<std::string> rest(args.begin() + static_cast<long>(matchWords), args.end());
    if (std::find(rest.begin(), rest.end(), "--help") != rest.end()
        || std::find(rest.begin(), rest.end(), "-h") != rest.end()) {
        std::cout << match->usage;
        return Ok;
    }
    try {
        return match->run(rest);
    } catch (const UsageError &e) {
        std::cerr << "memx " << match->name << ": " << e.message << "\n\n" << match->usage;
        return Usage;
    } catch (const memx::LoadError &e) {
        for (const auto &d : e.diagnostics())
            std::cerr << "error: " << d.toString() << "\n";
        return Failure;
    } catch (const memx::Cancelled &) {
        // Ctrl-C (CliProgress) stopped work that has nothing partial to show: nothing was written.
        std::cerr << "cancelled: nothing written\n";
        return Cancelled;
    } catch (const std::bad_alloc &) {
        // Not an abort (rc 134) with "terminate called after throwing std::bad_alloc".
        std::cerr << "memx " << match->name
                  << ": error: out of memory; the problem is too large for this machine (narrow the search "
                     "space: --max-bases, fewer --tp/--stages/--mbs values, or a smaller cluster)\n";
        return Failure;
    } catch (const std::exception &e) {
        std::cerr << "memx " << match->name << ": error: " << e.what() << "\n";
        return Failure;
    }
}
