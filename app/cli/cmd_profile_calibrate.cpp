// memx profile calibrate: fits the cost model's device figures to the project's measured runs.
#include "command.h"
#include "progress.h"

#include "memx/cost/calibration.h"
#include "memx/io/formats.h"
#include "memx/predict/projectpredictor.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/diagnostic.h"

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx profile calibrate [--project FILE] [--folds K] [--dry-run] [--json]

Fits the analytic cost model to the project's measured runs and stores the figures in the
project, where predict, search, compare, train and evaluate (--project) use them:
  time    one host cost per framework op (the framework decides it) and per GPU type the GEMM
          efficiency, minimising the mean |log(predicted / measured)| iteration time;
  memory  per GPU type the device-used overheads, by least squares over the runs with a
          device-used peak: measured - allocator peak = reserve x allocator peak + context +
          groups x communicator buffers (figures kept >= 0).
Prints the figures, the MAPE with the built-in defaults and calibrated (in-sample), and the
out-of-sample MAPE of a K-fold check (default 5; each fold predicted with figures fitted on the
others). Runs that failed out of memory are not used. Stored caches are dropped; retrain a stored
predictor afterwards (memx train) so its features match.

Options:
  --project FILE   project file (default ./memx-project.memx)
  --folds K        folds of the out-of-sample check (0: none)
  --dry-run        print, do not store
  --json           print the calibration as JSON
)";

std::string num(const std::optional<double> &v, int precision)
{
    if (!v)
        return "-";
    std::ostringstream o;
    o << std::fixed << std::setprecision(precision) << *v;
    return o.str();
}

void print(const Calibration &c)
{
    std::cout << std::fixed << std::setprecision(1);
    std::cout << "Calibrated on " << c.runs << " measured runs; host cost per framework op "
              << num(c.hostOpMicroseconds, 1) << " us\n\n";
    std::cout << "  device               runs(T/M)  GEMM eff  context GiB  comm GiB  reserve   T MAPE% before/after"
                 "   M MAPE% before/after\n";
    for (const DeviceCalibration &d : c.devices)
        std::cout << "  " << std::left << std::setw(20) << d.device << std::right << std::setw(6) << d.timeRuns << "/"
                  << std::left << std::setw(4) << d.memoryRuns << std::right << std::setw(9) << num(d.gemmEfficiency, 3)
                  << std::setw(13) << num(d.contextGiB, 2) << std::setw(10) << num(d.communicatorGiB, 2) << std::setw(9)
                  << num(d.reserveFraction, 3) << std::setw(13) << d.timeMapeBeforePct << " / " << std::setw(5)
                  << d.timeMapeAfterPct << std::setw(15) << d.memMapeBeforePct << " / " << std::setw(5)
                  << d.memMapeAfterPct << "\n";
    std::cout << "\nAll runs: time MAPE " << c.timeMapeDefaultsPct << "% with the defaults, " << c.timeMapeCalibratedPct
              << "% calibrated (in-sample)";
    if (c.folds)
        std::cout << ", " << c.timeMapeOutOfSamplePct << "% out-of-sample (" << c.folds << "-fold)";
    std::cout << "\n          memory MAPE " << c.memMapeDefaultsPct << "% with the defaults, " << c.memMapeCalibratedPct
              << "% calibrated (in-sample)";
    if (c.folds)
        std::cout << ", " << c.memMapeOutOfSamplePct << "% out-of-sample";
    std::cout << "\n";
}

int run(const std::vector<std::string> &argv)
{
    Args args(argv, {"project", "folds"}, {"json", "dry-run"});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    const std::string path = args.value("project").value_or("memx-project.memx");
    if (!std::filesystem::exists(path))
        throw LoadError(path, "", "no such project file (import measured runs with 'memx profile import')");
    const int folds = static_cast<int>(args.intValue("folds", 0, 100).value_or(5));
    SqliteStore store(path, false);
    const ProfileSet profiles = store.profiles();
    const auto modelOf = projectModels(store);
    Calibration c;
    {
        CliProgress progress("estimates");
        try {
            c = calibrate(store.runs(), modelOf, profiles.empty() ? nullptr : &profiles, CostOptions {}, folds,
                          progress.callback());
        } catch (const std::invalid_argument &e) {
            throw LoadError(path, "/runs", e.what());
        } catch (const std::runtime_error &e) {
            if (progress.interrupted())
                return Cancelled;
            throw;
        }
    }
    if (!args.has("dry-run"))
        saveCalibration(store, c);
    if (args.has("json")) {
        nlohmann::json j = toJson(c);
        j["project"] = path;
        j["stored"] = !args.has("dry-run");
        std::cout << j.dump(2) << "\n";
        return Ok;
    }
    print(c);
    if (!args.has("dry-run"))
        std::cout << "Stored in " << path << (loadPredictor(store) ? "; retrain the predictor: memx train" : "")
                  << "\n";
    return Ok;
}

CommandRegistration reg({"profile calibrate", "fit the cost model's device figures to the project's measured runs",
                         kUsage, &run});

} // namespace
} // namespace memx::cli
