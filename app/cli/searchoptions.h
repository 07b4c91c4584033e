#pragma once

#include "command.h"

#include "memx/search/objective.h"
#include "memx/search/plannedsearch.h"
#include "memx/search/search.h"
#include "memx/store/store.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace memx::cli {

/// Splits "a,b,c" at commas.
std::vector<std::string> splitList(const std::string &text);

/// --NAME a,b,c as integers within [lo, hi]; `dflt` when the option is absent. UsageError otherwise.
/// Option `name` as whole numbers from `lo` to `hi` (memx::parseIntList: sorted, no duplicates);
/// `dflt` when absent; a UsageError naming the option for anything else or an empty list.
std::vector<int> intList(const Args &args, const std::string &name, std::vector<int> dflt, int lo, int hi);

/// --weights T,M,B (three non-negative numbers); the documented default ObjectiveWeights {} when absent.
ObjectiveWeights weightsOption(const Args &args);

/// The options that shape the search space, shared by every command that searches
/// (search, compare, scale): value options and switches to pass to Args, and their effect.
extern const std::set<std::string> kSpaceValueOptions;
extern const std::set<std::string> kSpaceSwitches;
void applySpaceOptions(const Args &args, SearchSpaceOptions &space);

/// The usage lines describing kSpaceValueOptions and kSpaceSwitches.
extern const char *const kSpaceOptionsUsage;

/// --target megatron|flagscale|any (nullopt when absent: the cluster's default); UsageError otherwise.
std::optional<LaunchTarget> targetOption(const Args &args);
/// The planned search of `search` (memx/search/plannedsearch.h) with --target (autoTarget when
/// absent) and --idle-groups N; the space options must already be in `search`.
PlannedSearchRequest plannedRequest(const Args &args, const SearchRequest &search);

/// --model ID|FILE: a model stored in `store` (when given) first, else a preset id or a model file;
/// then --attention auto|flash|fused|unfused replaces its TrainingSettings::attention. Every
/// command that predicts, searches or exports reads its model through this.
Model modelOption(const Args &args, const Store *store = nullptr);
/// --attention auto|flash|fused|unfused, nullopt when absent; UsageError for anything else.
std::optional<AttentionBackend> attentionOption(const Args &args);
extern const std::set<std::string> kModelValueOptions; ///< {"attention"}

} // namespace memx::cli
