// memx evaluate: cross-validated accuracy of the learned predictor vs the analytic model.
#include "command.h"

#include "memx/predict/crossvalidation.h"
#include "memx/predict/projectpredictor.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/diagnostic.h"

#include <filesystem>
#include <iostream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx evaluate [--project FILE] [--k K] [--loo] [--analytic] [--calibrate] [--json]

Cross-validates the learned predictor on the project's measured runs and scores the analytic cost
model on the same runs, side by side, per hardware group: MAPE of iteration time and of device-used
peak memory; within each ranking set (runs of one group on one cluster) Kendall tau, Top-1 hit and
regret under the time ranking and the memory-balance ranking (T x M). A held-out plan's reruns are
excluded from training. Also prints the noise floor (the same plan measured twice), the signed
median errors and the out-of-memory confusion table: runs that ran / failed out of memory against
the predicted verdict on the fullest GPU (fits, risk of OOM, does not fit). Runs that failed out
of memory never train; a model of every run that ran predicts them.

Options:
  --project FILE   project file (default ./memx-project.memx)
  --loo            leave-one-out
  --k K            k-fold with K folds
                   (neither: both leave-one-out and 5-fold)
  --analytic       the analytic cost model alone (nothing trained; any number of runs)
  --calibrate      calibrate per fold: each fold fits memx profile calibrate's figures (GEMM
                   efficiency, host op cost, per-device memory overheads) on its training runs
                   only; the analytic column is then the calibrated model judged out of sample
                   and the learned model corrects it (a stored calibration is not used)
  --ensemble N     bootstrap members (default 5)
  --rounds N       boosting rounds per member (default 120)
  --json           JSON: per scheme the metrics of both methods and every run's predictions
)";

int run(const std::vector<std::string> &argv)
{
    Args args(argv, {"project", "k", "ensemble", "rounds"}, {"json", "loo", "analytic", "calibrate"});
    if (!args.positional().empty())
        throw UsageError {"unexpected argument \"" + args.positional().front() + "\""};
    const bool perFold = args.has("calibrate");
    if (perFold && args.has("analytic"))
        throw UsageError {"--calibrate calibrates inside cross-validation folds; with --analytic nothing is "
                          "held out (memx profile calibrate prints the calibrated model's out-of-sample error)"};
    const std::string path = args.value("project").value_or("memx-project.memx");
    if (!std::filesystem::exists(path))
        throw LoadError(path, "", "no such project file (import measured runs with 'memx profile import')");
    PredictorOptions opts;
    opts.ensemble = static_cast<int>(args.intValue("ensemble", 1, 100).value_or(opts.ensemble));
    opts.rounds = static_cast<int>(args.intValue("rounds", 1, 100000).value_or(opts.rounds));
    const auto k = args.intValue("k", 2, 1000);
    const bool loo = args.has("loo") || !k;
    const int folds = static_cast<int>(k.value_or(5));
    const bool kfold = k.has_value() || !args.has("loo");

    SqliteStore store(path, false);
    std::vector<std::string> notes;
    const std::vector<TrainingSample> samples = samplesFromStore(store, CostOptions {}, &notes, !perFold);
    if (perFold && loadCalibration(store))
        notes.push_back("the project's stored calibration is not used: each fold fits its own");
    for (const std::string &n : notes)
        std::cerr << "note: " << n << "\n";
    const FoldSampler sampler = perFold ? calibratingSampler(store, CostOptions {}) : FoldSampler {};
    const double band = CostOptions {}.memoryUncertainty;
    std::vector<EvaluationReport> reports;
    try {
        if (args.has("analytic"))
            reports.push_back(analyticReport(samples));
        if (loo && !args.has("analytic"))
            reports.push_back(crossValidate(samples, CvScheme::LeaveOneOut, 0, opts, {}, band, sampler));
        if (kfold && !args.has("analytic"))
            reports.push_back(crossValidate(samples, CvScheme::KFold, folds, opts, {}, band, sampler));
    } catch (const std::invalid_argument &e) {
        throw LoadError(path, "/runs", e.what());
    }
    if (args.has("json")) {
        nlohmann::json j;
        j["project"] = path;
        j["options"] = {{"ensemble", opts.ensemble},
                        {"rounds", opts.rounds},
                        {"maxDepth", opts.maxDepth},
                        {"eta", opts.eta},
                        {"seed", opts.seed}};
        j["reports"] = nlohmann::json::array();
        for (const EvaluationReport &r : reports)
            j["reports"].push_back(toJson(r));
        j["notes"] = notes;
        std::cout << j.dump(2) << "\n";
        return Ok;
    }
    std::cout << "Project " << path << ": " << samples.size() << " measured runs\n\n";
    for (const EvaluationReport &r : reports)
        std::cout << formatReport(r) << "\n";
    return Ok;
}

CommandRegistration reg({"evaluate", "cross-validate the learned predictor against the analytic model", kUsage, &run});

} // namespace
} // namespace memx::cli
