#pragma once
// The planned search both front ends run (memx search / compare / scale, the workbench): the
// launch target (the cluster's default or the user's), node groups left idle (the groups the
// target cannot run, the slowest groups, the cluster before an edit), one runSearch per subset
// merged into one SearchResult over the whole cluster, notes on what the idle groups say, and,
// when nothing fits, why and which batch sizes do (docs/search.md section 2.2).

#include "memx/search/search.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace memx {

struct PlannedSearchRequest {
    /// Cluster, model, space, cost, profiles, threads. `search.space.target` is used when
    /// `autoTarget` is false.
    SearchRequest search;
    /// Take the target from defaultLaunchTarget(cluster).
    bool autoTarget = true;
    /// The slowest 1..maxIdleGroups groups (per-GPU speed) may also stay idle: each is one more
    /// subset searched (always keeping one group).
    int maxIdleGroups = 2;
    /// The cluster before an edit (a what-if): when `search.cluster` holds it (the same groups in
    /// the same order, as many nodes or more, the same devices and network), its plans - the
    /// added nodes idle - are searched too, so the re-search finds them (and their cached
    /// predictions) again.
    std::optional<Cluster> baseline;
    /// When nothing fits: verify nearby global batch sizes by searching them (each a planned
    /// search of the same subsets), at most this many; -1: no advice at all.
    int maxVerifiedBatches = 6;
    /// Budget of base configurations of the largest subset (0: none): the common space is
    /// narrowed with narrowToBudget until every subset fits (steps in PlannedSearchResult::narrowed).
    uint64_t maxBases = 0;
};

/// One subset of node groups that was searched.
struct IdleSubset {
    std::vector<int> usedNodes; ///< per group of the cluster: nodes used (0: the group is idle)
    std::string label; ///< e.g. "every group", "every group but the slowest (mi250x)", "the cluster before the edit"
    int parent = -1; ///< the subset (index into subsets) this one leaves more groups idle than, -1: none
    size_t first = 0, count = 0; ///< its configurations in the merged result: [first, first + count)
    uint64_t enumerated = 0; ///< candidates it considered
    uint64_t evaluated = 0; ///< its valid configurations (> count when the search streamed)
    double bestTimeMs = 0; ///< its fastest plan's T (0: no plan)
};

/// Why nothing fits, and what does.
struct NoPlanAdvice {
    /// The dominant prune reason: "divisibility", "micro-batch limit", "out of memory",
    /// "layers", "launcher" or "empty space".
    std::string reason;
    std::string text; ///< what to change, with the verified numbers
    std::vector<int> globalBatches; ///< global batch sizes near the requested one that give plans (verified)
    std::vector<int> microBatches; ///< micro-batch sizes that divide the requested global batch (arithmetic)
};

struct PlannedSearchResult {
    SearchResult result; ///< every subset's configurations, over the whole cluster
    LaunchTarget target = LaunchTarget::Any;
    bool targetFromCluster = true; ///< the default target of the cluster (not the user's)
    std::string targetReason; ///< why this target (and which groups it cannot run)
    std::vector<IdleSubset> subsets; ///< in the order of their configurations
    std::vector<std::string> notes; ///< what the idle subsets found (e.g. slow GPUs that make every plan slower)
    std::vector<std::string> narrowed; ///< narrowToBudget's steps (PlannedSearchRequest::maxBases)
    std::optional<NoPlanAdvice> advice; ///< set when nothing fits (and the search was not cancelled)

    /// The subset configuration `index` belongs to.
    const IdleSubset &subsetOf(size_t index) const;
    /// GPUs of the cluster configuration `index` leaves idle.
    int idleGpus(size_t index) const;
    /// "" or e.g. "idle: mi250x (8 GPUs)".
    std::string idleText(size_t index) const;
};

/// GPUs of `cluster` a plan of `subset` leaves idle.
int idleGpus(const Cluster &cluster, const IdleSubset &subset);
/// "" or e.g. "idle: mi250x (8 GPUs), h100 (1 of 2 nodes, 4 GPUs)".
std::string idleText(const Cluster &cluster, const IdleSubset &subset);

/// The search of one subset: runSearch by default. The CLI's runs the learned predictor with its
/// caches after runSearch (the result must keep runSearch's decoding tables).
using SubsetSearch = std::function<SearchResult(const SearchRequest &, const ProgressFn &)>;

/// The cluster with only the first `usedNodes[g]` nodes of each group g (groups with 0 removed;
/// node-name overrides follow the renamed nodes: a group left with one node names it after the group).
Cluster subCluster(const Cluster &cluster, const std::vector<int> &usedNodes);

/// The subsets of a planned search, decided without searching (cheap: a UI thread may call it):
/// the target, and per subset the groups' nodes it uses and its request (on subCluster, with the
/// common space narrowed to PlannedSearchRequest::maxBases).
struct SubsetPlan {
    LaunchTarget target = LaunchTarget::Any;
    bool targetFromCluster = true;
    std::string targetReason;
    struct Subset {
        std::vector<int> usedNodes;
        std::string label;
        int parent = -1;
    };
    std::vector<Subset> subsets;
    std::vector<SearchRequest> requests; ///< one per subset, in the order they are searched
    std::vector<std::string> narrowed; ///< narrowToBudget's steps
};
/// Throws std::invalid_argument for a cluster without GPUs.
SubsetPlan planSubsets(const PlannedSearchRequest &request);

/// Runs the planned search. Progress spans every subset (and the verification searches); a
/// cancel stops it with `result.cancelled` set and the subsets completed so far. Throws
/// std::invalid_argument like runSearch, and when the merged result would exceed 2^32 base
/// configurations.
PlannedSearchResult runPlannedSearch(const PlannedSearchRequest &request, const ProgressFn &progress = {},
                                     const SubsetSearch &search = {});
/// The same with its subsets already planned (planSubsets(request)).
PlannedSearchResult runPlannedSearch(const PlannedSearchRequest &request, const SubsetPlan &plan,
                                     const ProgressFn &progress = {}, const SubsetSearch &search = {});

/// Merges subset results (each searched on subCluster(cluster, usedNodes[k])) into one result
/// over `cluster`: the same plans (materialize names the cluster's nodes), metrics, features and
/// counts. Used by runPlannedSearch; public for tests.
SearchResult mergeSubsetResults(const Cluster &cluster, const std::vector<std::vector<int>> &usedNodes,
                                std::vector<SearchResult> &&results);

} // namespace memx
