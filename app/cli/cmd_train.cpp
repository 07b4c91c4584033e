// memx train: fit the learned (XGBoost) predictor on the project's measured runs.
#include "command.h"
#include "progress.h"

#include "memx/engine/training.h"
#include "memx/predict/projectpredictor.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/diagnostic.h"

#include <filesystem>
#include <iomanip>
#include <iostream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx train [--project FILE] [--folds K] [--ensemble N] [--rounds N] [--json]

Trains the dual-output XGBoost predictor on every measured run of the project (iteration time and
device-used peak memory, as log-ratios over the analytic cost model with the project's profiles)
and stores it in the project with its feature schema version, the ids of the runs it was trained on
and its cross-validation metrics. `memx predict` and `memx search` with --project then use it.

Options:
  --project FILE   project file (default ./memx-project.memx)
  --folds K        k-fold cross-validation reported with the model (default 5; 0 = none)
  --ensemble N     bootstrap members (default 5): their spread is the prediction's confidence
  --rounds N       boosting rounds per member (default 120)
  --json           machine-readable summary
)";

int run(const std::vector<std::string> &argv)
{
    Args args(argv, {"project", "folds", "ensemble", "rounds"}, {"json"});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    const std::string path = args.value("project").value_or("memx-project.memx");
    if (!std::filesystem::exists(path))
        throw LoadError(path, "", "no such project file (import measured runs with 'memx profile import')");
    TrainOptions options;
    PredictorOptions &opts = options.predictor;
    opts.ensemble = static_cast<int>(args.intValue("ensemble", 1, 100).value_or(opts.ensemble));
    opts.rounds = static_cast<int>(args.intValue("rounds", 1, 100000).value_or(opts.rounds));
    options.folds = static_cast<int>(args.intValue("folds", 0, 1000).value_or(5));

    SqliteStore store(path, false);
    TrainOutcome outcome;
    try {
        CliProgress progress("thousandths (samples, training, cross-validation)");
        outcome = trainProjectPredictor(store, options, progress.callback()); // Ctrl-C: memx::Cancelled
    } catch (const std::invalid_argument &e) {
        throw LoadError(path, "/runs", e.what());
    }
    for (const std::string &n : outcome.notes)
        std::cerr << "note: " << n << "\n";
    savePredictor(store, outcome.predictor, outcome.metrics);
    const LearnedPredictor &model = outcome.predictor;
    const nlohmann::json &metrics = outcome.metrics;
    const std::optional<EvaluationReport> &cv = outcome.crossValidation;
    const std::vector<std::string> &notes = outcome.notes;

    if (args.has("json")) {
        nlohmann::json j = metrics;
        j["project"] = path;
        j["predictor"] = model.describe();
        j["members"] = model.members();
        j["trainingRuns"] = model.trainingRunIds();
        j["notes"] = notes;
        std::cout << j.dump(2) << "\n";
        return Ok;
    }
    std::cout << "Trained " << model.describe() << " on " << path << "\n";
    std::cout << "  " << model.members() << " bootstrap members x " << opts.rounds
              << " rounds; out-of-bag RMS error of log(measured/analytic): time " << std::fixed << std::setprecision(3)
              << model.oobTimeRmse() << ", memory " << model.oobMemRmse() << "\n";
    if (cv) {
        std::cout << "  " << cv->folds << "-fold cross-validation (plans held out with their reruns): time MAPE "
                  << std::setprecision(1) << cv->learned.all.timeMapePct << "% (analytic "
                  << cv->analytic.all.timeMapePct << "%), memory MAPE " << cv->learned.all.memMapePct << "% (analytic "
                  << cv->analytic.all.memMapePct << "%)\n";
    }
    std::cout << "  stored as blob " << kPredictorBlobKind << "/" << kPredictorBlobKey
              << "; 'memx evaluate' for the full report\n";
    return Ok;
}

CommandRegistration reg({"train", "train the learned (XGBoost) time + memory predictor on measured runs", kUsage,
                         &run});

} // namespace
} // namespace memx::cli
