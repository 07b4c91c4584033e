#pragma once

#include "memx/cluster/cluster.h"
#include "memx/cost/costmodel.h"
#include "memx/export/launchtarget.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"
#include "memx/profile/layerprofile.h"
#include "memx/search/objective.h"
#include "memx/util/progress.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace memx {

/// Each dimension of the heterogeneous search space; see docs/search.md for how they combine.
struct SearchSpaceOptions {
    /// Number of pipeline stages one GPU group (the nodes of one cluster node group) may be cut
    /// into; each stage gets an equal slice. Values that do not divide the group are skipped.
    std::vector<int> stagesPerGroup = {1, 2, 3};
    /// Tensor-parallel degrees (per GPU group; must divide the group's GPUs per node, the stage
    /// slice and the model's heads / KV groups).
    std::vector<int> tensorParallel = {1, 2, 4, 8};
    /// Micro-batch sizes of the stages with the largest data-parallel degree; a stage with fewer
    /// replicas carries proportionally larger micro-batches (every stage moves the same samples
    /// per step).
    std::vector<int> microBatches = {1, 2, 4};
    /// Largest micro-batch any replica may carry.
    int maxReplicaMicroBatch = 32;
    /// Recompute choices, made per device type (heterogeneous recomputation).
    std::vector<RecomputeMethod> recompute = {RecomputeMethod::None, RecomputeMethod::Selective, RecomputeMethod::Full};
    /// Partial recompute (Megatron-LM's --recompute-method block --recompute-num-layers k): every
    /// configuration whose stages of a Full choice fit in memory with all layers recomputed is
    /// also tried with the fewest recomputed layers per stage that fit - the fastest such plan
    /// (recompute time grows and memory falls linearly in k, so no other k is faster and fits).
    /// A stage that fits without recompute then recomputes nothing. Megatron-LM takes one k for
    /// every stage (the largest a stage needs; per model chunk with the interleaved schedule);
    /// FlagScale and Any take k per stage. docs/search.md section 2 ("Partial recompute").
    bool partialRecompute = true;
    /// Data-parallel sharding to try (Plan::distributedOptimizer, Plan::fsdp): plain DDP and the
    /// distributed optimizer by default; Megatron-FSDP's Gradients / Parameters (`--dp-sharding`)
    /// apply to single-stage pipelines with a DP group (others are pruned for "launcher": FSDP runs
    /// without pipeline parallelism; at DP 1 they are "duplicates").
    std::vector<DpSharding> dpSharding = {DpSharding::None, DpSharding::Optimizer};
    /// Model chunks per pipeline rank to try (Megatron-LM's interleaved 1F1B; 1 = plain 1F1B).
    /// A choice > 1 applies to pipelines of at least 3 stages whose micro-batches come in whole
    /// groups of the stage count; the splits then move whole chunks of v layers. Off by default
    /// (`--vpp 1,2,4` searches it): the virtual testbed, which judges `memx compare`, does not
    /// simulate the interleaved schedule.
    std::vector<int> virtualStages = {1};
    /// Context-parallel sizes to try (Megatron-LM's --context-parallel-size; 1 = off). A size
    /// cp > 1 turns each stage's DP group of d TP groups into d / cp replicas of tp x cp GPUs of
    /// one node (so cp must divide every stage's DP and tp x cp the GPUs per node), each holding
    /// seqLength / cp tokens; not with mixed stages. Off by default (`--cp 1,2,4,8`).
    std::vector<int> contextParallel = {1};
    CpComm cpComm = CpComm::P2P; ///< the exchange of the CP plans (`--cp-comm`)
    /// Try every order of the GPU groups along the pipeline (false: cluster file order only).
    bool permuteGroups = true;
    /// Layer splits: the compute-proportional split, the memory-aware split, and neighbours of
    /// the compute-proportional split moving 1..neighbourRadius layers across each boundary.
    int neighbourRadius = 1;
    bool memoryAwareSplit = true;
    /// Cap on pipeline depth (0: the model's layer count).
    int maxStages = 0;
    /// Sequence parallelism on every stage with TP > 1 (Megatron-LM's --sequence-parallel, one
    /// switch for the job; stages at TP 1 are unaffected). Not enumerated: in the cost model it
    /// weakly dominates TP without it - the same collective volume (all-gather + reduce-scatter
    /// instead of all-reduce), the norms and dropout-adds on s / tp tokens, smaller activations
    /// and smaller sends (tst_search::sequenceParallelDominates) - so it is on; off (the CLI's
    /// --no-sequence-parallel) searches the plans without it.
    bool sequenceParallel = true;
    /// Megatron-LM's --overlap-grad-reduce on every plan, and --overlap-param-gather on those with
    /// the distributed optimizer (exposedDpSyncMs). Not enumerated: overlapping never costs time or
    /// memory in the model (the buckets exist either way), it only hides communication. Off, like
    /// Megatron-LM's defaults; the CLI's --overlap-dp turns it on.
    bool overlapDataParallel = false;
    /// FP8 GEMMs (Transformer Engine) on every plan (Plan::fp8). Not enumerated: FP8 changes the
    /// numerics, so it is the user's choice (the CLI's --fp8, the workbench's FP8 box), not the
    /// search's. Every group must have FP8 (GpuSpec::denseFp8Tflops): runSearch refuses others,
    /// the planned search leaves them idle. TP degrees whose GEMM shapes FP8 cannot run
    /// (fp8ShapeProblem) are pruned for "divisibility".
    Fp8Format fp8 = Fp8Format::Off;
    /// The runtime the plans must launch on (memx/export/launchtarget.h): only plans it runs are
    /// evaluated, the others are pruned for "launcher". Any: the cost model's whole space. (The
    /// planned search, memx/search/plannedsearch.h, picks the default from the cluster.)
    LaunchTarget target = LaunchTarget::Any;
    /// Mixed stages: two node groups of different device types may form one stage's
    /// data-parallel group where the target runs that (docs/search.md section 2.1).
    bool mixedStages = true;
    /// Batch flexibility: a base whose samples per step (micro-batch x largest DP) do not divide
    /// the global batch runs roundedMicroBatchCount(globalBatch, step) micro-batches instead of
    /// being pruned for "divisibility"; its plan's global batch is that count x the step
    /// (SearchResult::globalBatchOf, the nearest multiple of the step). Off: only exact batches.
    bool roundGlobalBatch = false;
};

/// The micro-batch count of a step of `stepSamples` sequences nearest to `globalBatch`
/// sequences: round(globalBatch / stepSamples), a tie going up, at least 1. A plan with it runs
/// count x stepSamples sequences per iteration (SearchSpaceOptions::roundGlobalBatch).
int roundedMicroBatchCount(int globalBatch, int stepSamples);

/// Streaming search (SearchRequest::stream): configurations are evaluated and dropped unless they
/// can still be shown. Kept: every configuration whose score is within a rounding tolerance of the
/// topK-th best for some objective in `objectives` (ranking ties broken as rank() does), every
/// configuration of the exact (T, M, B) Pareto front, and the first configuration with the largest
/// T, M and B (so the objective's normalisers, objectiveScaleOf, are those of the whole space).
/// rank() and paretoFront() of the streamed result then give the same plans, in the same order and
/// with the same scores, as on the full result (tst_search: streamedSearchEqualsFullSearch).
struct StreamOptions {
    std::vector<ObjectiveWeights> objectives = {ObjectiveWeights {}};
    size_t topK = 100;
    /// Rows (configurations) a worker buffers before it drops what can no longer be shown; the
    /// memory of the search is about threads x bufferRows x ~60 bytes plus what is kept.
    size_t bufferRows = 1 << 16;
};

/// Everything a search needs: an immutable snapshot.
struct SearchRequest {
    Cluster cluster;
    Model model;
    int globalBatch = 0; ///< 0: the model's training.globalBatch
    SearchSpaceOptions space;
    CostOptions cost;
    ProfileSet profiles; ///< may be empty
    int threads = 0; ///< 0: std::thread::hardware_concurrency()
    /// Also fill SearchResult::features (kFeatureCount floats per configuration, the learned
    /// predictor's input; memx/cost/features.h). Off: the analytic search is unchanged.
    bool collectFeatures = false;
    /// Set: stream the space through evaluation and keep only what StreamOptions says (the
    /// result's size() is then far below `evaluated`; SearchResult::streamed). Not with
    /// collectFeatures (a learned predictor re-scores every configuration).
    std::optional<StreamOptions> stream;
    /// Cancelled during evaluation, a result holds the chunks completed before the cancel (what
    /// `memx search` prints). False: a cancelled result is returned empty at once (for callers
    /// that discard it, e.g. planMinimalSet; gathering the chunks took up to ~0.6 s on 6 M rows).
    bool keepPartialOnCancel = true;
};

/// Why candidate configurations were rejected.
struct PruneCounts {
    uint64_t divisibility
        = 0; ///< batch / micro-batch / TP / stage slices do not divide, or the interleaved schedule does not apply
    uint64_t microBatchLimit = 0; ///< a replica would need a micro-batch > maxReplicaMicroBatch
    uint64_t layers = 0; ///< more stages than layers, or a split leaves a stage without layers
    uint64_t outOfMemory = 0; ///< some GPU exceeds its capacity
    uint64_t duplicates = 0; ///< a split already produced for the same base, a distributed-optimizer
                             ///< base whose stages all have DP 1 (same plan as the plain optimizer), or a
                             ///< recompute choice of a device type that decides no stage (mixed stages), or a
                             ///< partial-recompute variant that is a per-type recompute plan after all (every
                             ///< layer recomputed, or a type's stages none while "none" is offered), or a
                             ///< Megatron-FSDP base without a DP group
    /// the launch target cannot run it (SearchSpaceOptions::target), or Megatron-FSDP on a
    /// pipeline of more than one stage
    uint64_t launcher = 0;
    uint64_t total() const { return divisibility + microBatchLimit + layers + outOfMemory + duplicates + launcher; }
    PruneCounts &operator+=(const PruneCounts &o);
};

/// Structural description of one pipeline the search considered (order of group slices + TP).
struct SearchStage {
    int group = 0; ///< index into Cluster::groups
    int slice = 0; ///< which slice of the group (0..slices-1)
    int slices = 1; ///< how many stages the group is cut into
    int tp = 1;
    int dp = 1; ///< replicas of the stage (both parts of a mixed stage)
    /// Mixed stage: the same slice of a second group (another device type) joins the data-parallel
    /// group; `dp2` of the `dp` replicas are on `group2`, listed after those on `group`. -1: none.
    int group2 = -1;
    int dp2 = 0;
    /// Per-sample speed of one replica of each part: the replicas' micro-batches are
    /// mixedMicroBatches(samples per step, dp - dp2, dp2, weight, weight2).
    double weight = 1, weight2 = 1;
    bool mixed() const { return group2 >= 0; }
};

/// Micro-batches (part 1, part 2) of a mixed stage whose `dp1` + `dp2` replicas carry `samples`
/// sequences per step together: positive integers with dp1 x b1 + dp2 x b2 = samples minimising
/// the slower part's pace max(b1 / w1, b2 / w2) (Metis-style: faster replicas take larger
/// micro-batches); the smallest b1 among equals. std::nullopt when no such pair exists.
std::optional<std::pair<int, int>> mixedMicroBatches(int samples, int dp1, int dp2, double w1, double w2);

/// Largest cluster runSearch accepts (the cluster reader's limits, memx/io/formats.h): more nodes
/// or GPUs are refused with std::invalid_argument naming the cluster. Set-up is linear in nodes
/// (one LinkTable, memx/cost/linktable.h, per search).
constexpr int kMaxSearchNodes = 8192;
constexpr int kMaxSearchGpus = 65536;

/// Most transformer layers one pipeline stage of a searched plan may hold (SearchResult stores
/// layer counts in 8 bits). A split that would put more on one stage is pruned for "layers"
/// (e.g. a 300-layer model needs at least 2 stages), never wrapped around.
constexpr int kMaxStageLayers = 255;

/// Result of one search: counts, timings, per-configuration metrics in flat arrays (index i
/// describes configuration i) and a compact encoding from which materialize(i) rebuilds a Plan.
struct SearchResult {
    // counts
    uint64_t enumerated = 0; ///< candidates considered (= pruned.total() + evaluated)
    PruneCounts pruned;
    uint64_t evaluated = 0; ///< valid configurations with metrics (size of the arrays)
    bool cancelled = false;
    // timings
    double enumerateEvaluateMs = 0;
    int threads = 1;
    // metrics, one entry per evaluated configuration
    std::vector<double> timeMs; ///< T: iteration time, ms
    std::vector<double> peakMemory; ///< M: highest per-GPU utilisation (device-used / capacity)
    std::vector<double> imbalance; ///< B: coefficient of variation of per-GPU utilisation
    std::vector<double> peakBytes; ///< highest per-GPU device-used bytes
    // compact encoding
    std::vector<uint32_t> baseOf; ///< base configuration index of each configuration
    std::vector<uint32_t> splitOffset; ///< offset of its layer counts in `layerCounts`
    /// Layer count per stage, concatenated (<= kMaxStageLayers). A partial-recompute configuration
    /// (SearchSpaceOptions::partialRecompute) is followed by its recomputed layers per stage, so it
    /// holds 2 x stages bytes: entry p + i is stage i's recomputed layers when its device type's
    /// choice is Full (0: none, the stage runs without recompute), 0 otherwise.
    std::vector<uint8_t> layerCounts;

    /// Decoding tables (filled by runSearch).
    struct Pipeline {
        std::vector<SearchStage> stages;
        /// Per stage, parts of the canonical plan signature (memx/predict/predictioncache.h):
        /// device id + intra-node link class of its replicas, link class of its DP group ("-" for
        /// DP 1) and of the links to the next stage (empty for the last stage).
        std::vector<std::string> replicaClass, dpClass, p2pClass;
        /// Per stage: replica class of a mixed stage's second part ("" for a stage of one group).
        std::vector<std::string> replicaClass2;
        /// The class string of stage `stage`'s replicas that signatureWords' class id stands for:
        /// replicaClass, plus replicaClass2 and the part sizes for a mixed stage.
        std::string replicaKey(size_t stage) const;
    };
    std::vector<Pipeline> pipelines; ///< pipeline shapes (group order, slices, TP per stage)
    std::vector<int> microBatchSizes; ///< values of the micro-batch dimension
    std::vector<RecomputeMethod> recomputeChoices;
    std::vector<DpSharding> dpShardingChoices;
    std::vector<int> virtualStageChoices = {1}; ///< values of the interleaved-schedule dimension
    std::vector<int> contextParallelChoices = {1}; ///< values of the context-parallel dimension
    CpComm cpComm = CpComm::P2P;
    std::vector<std::string> deviceTypes; ///< device ids, the recompute choice is per entry
    Cluster cluster;
    Model model;
    int globalBatch = 0; ///< the requested global batch
    bool sequenceParallel = false;
    bool overlapDataParallel = false; ///< SearchSpaceOptions::overlapDataParallel of the search
    Fp8Format fp8 = Fp8Format::Off; ///< SearchSpaceOptions::fp8 of the search
    /// SearchSpaceOptions::roundGlobalBatch of the search: a configuration's global batch is
    /// globalBatchOf(index), the nearest multiple of its samples per step.
    bool roundGlobalBatch = false;
    /// A streamed search (SearchRequest::stream): only the configurations that can be shown were
    /// kept (size() < evaluated).
    bool streamed = false;

    /// Learned predictor's input, size() x kFeatureCount, row-major (SearchRequest::collectFeatures).
    std::vector<float> features;
    /// Which model produced T, M and peakBytes: "analytic" or LearnedPredictor::describe().
    std::string predictor = "analytic";
    /// With the learned predictor: one-sigma relative spread of T and of memory per configuration,
    /// and 1 where predicted peak + spread >= capacity ("risk of OOM"). Empty for the analytic model.
    std::vector<float> timeSpread, memSpread;
    std::vector<uint8_t> oomRisk;
    /// With the learned predictor: 1 where the configuration lies outside the training runs'
    /// envelope (LearnedPredictor::extrapolation; its spreads were widened). Empty for the analytic model.
    std::vector<uint8_t> extrapolating;

    size_t size() const { return timeMs.size(); }
    /// Canonical signature key of configuration `index`: equal to
    /// planSignature(materialize(index), cluster).key, built without materialising the plan.
    std::string signatureKey(size_t index) const;
    /// The same content as signatureKey(index) as 32-bit words, without building strings: gbs, m,
    /// distributed optimizer, sequence parallel (bit 0; virtual stages > 1 shifted left by one),
    /// stage count, then per stage first layer, layer
    /// count, recompute method, recompute layers, replica class id, TP, replica micro-batch, DP,
    /// DP class id, P2P class id. Class ids come from classIds[pipeline][3 * stage + k] (k = 0
    /// replicaKey(stage), 1 dpClass, 2 p2pClass of pipelines[pipeline]); with an injective id map,
    /// equal words mean equal keys (a mixed stage's second micro-batch follows from the rest).
    /// `out` is overwritten.
    void signatureWords(size_t index, const std::vector<std::vector<uint32_t>> &classIds,
                        std::vector<uint32_t> &out) const;
    /// The full Plan of configuration `index` (< size()).
    Plan materialize(size_t index) const;
    /// Configuration `index`'s recomputed layers per stage (see layerCounts), or nullptr when it
    /// recomputes whole stages (every configuration of a search without partial recompute).
    const uint8_t *recomputedLayersOf(size_t index) const;
    /// The parts of a base configuration index (mixed radix: pipeline, micro-batch, recompute
    /// combination over deviceTypes, context parallelism, virtual stages, distributed optimizer,
    /// the last varying fastest).
    struct BaseParts {
        size_t pipeline = 0, microBatch = 0, recompute = 0, distributedOptimizer = 0, virtualStages = 0,
               contextParallel = 0;
    };
    BaseParts decodeBase(uint64_t base) const;
    uint64_t encodeBase(const BaseParts &parts) const;
    /// The Plan of base configuration `base` with the given layer count per stage and, for a
    /// partial-recompute configuration, recomputed layers per stage (recomputedLayersOf).
    Plan planOfBase(uint64_t base, const uint8_t *layerCounts, const uint8_t *recomputedLayers = nullptr) const;
    /// Sequences per iteration of a plan of base `base`: globalBatch, or with roundGlobalBatch the
    /// rounded micro-batch count x the samples per step.
    int globalBatchOfBase(uint64_t base) const;
    int globalBatchOf(size_t index) const { return globalBatchOfBase(baseOf.at(index)); }
    /// Per stage of base `base`'s pipeline: the micro-batch of each replica of the stage's first
    /// part and of a mixed stage's second part (0 for a stage of one group), as planOfBase sets
    /// them, without building the plan (node names are the costly part of planOfBase).
    std::vector<std::pair<int, int>> stageMicroBatchesOfBase(uint64_t base) const;
    /// Recompute choice of each device type for configuration `index` (parallel to deviceTypes).
    std::vector<RecomputeMethod> recomputeOf(size_t index) const;
};

/// Upper bound on the number of base configurations (pipeline shape x micro-batch x recompute
/// per device type x context parallelism x virtual stages x distributed optimizer) of `request`'s space, computed
/// without enumerating (pipeline shapes with mixed stages included; the launch target's rules are not applied).
uint64_t baseConfigurationBound(const SearchRequest &request);

/// Narrows `request.space` step by step until baseConfigurationBound() <= maxBases, in this
/// order: no context parallelism; no interleaved schedule; no mixed-type stages; keep the cluster's group order; drop
/// the smallest TP degree (repeatedly, keeping one); drop the largest stages-per-group value (keeping one); drop
/// selective recompute; keep only the distributed optimizer. Returns one human-readable note per step taken (empty:
/// unchanged).
std::vector<std::string> narrowToBudget(SearchRequest &request, uint64_t maxBases);

/// Enumerates, prunes and evaluates the space. Deterministic: the result is identical for any
/// thread count. Throws std::invalid_argument on an unusable request (e.g. no GPUs, no batch).
/// A cancelled result has `cancelled` set and holds only the chunks completed before the cancel
/// (nothing, no pipelines and zero counts, when cancelled during set-up).
/// Progress: (done, total) in base configurations (memx/util/progress.h). During set-up (pipeline
/// enumeration and kernel tables, before the space's size is known) runSearch calls it with (0, 0)
/// at once and then about every 10 ms, so a cancel is honoured from the start.
SearchResult runSearch(const SearchRequest &request, const ProgressFn &progress = {});

/// Checks every configuration of `result` against what any plan of the search must satisfy: its
/// stages hold between 1 and kMaxStageLayers layers and together the model's layers; every GPU of
/// every node group is used exactly once (the group's slices times TP x DP cover it); the micro-
/// batch count times the samples per step is the plan's global batch, and every stage's DP divides
/// the samples per step. Throws std::logic_error naming the first configuration that does not.
/// runSearch calls it on its result in builds without NDEBUG (debug, ASan); tests call it anywhere.
void checkSearchInvariants(const SearchResult &result);

} // namespace memx
