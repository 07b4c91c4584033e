#pragma once

#include "memx/plan/plan.h"

#include <string>
#include <vector>

namespace memx {

class Diagnostics;

/// What a Megatron-LM command line says about parallelism, batch, layer split and recompute.
/// Used to read exported scripts back (round-trip tests) and to import existing launch scripts.
struct MegatronArgs {
    int tp = 1;
    int pp = 1;
    int microBatch = 0;
    int globalBatch = 0; ///< 0 when --global-batch-size is absent
    int numLayers = 0;
    bool sequenceParallel = false;
    bool distributedOptimizer = false;
    bool overlapGradReduce = false; ///< --overlap-grad-reduce
    bool overlapParamGather = false; ///< --overlap-param-gather
    bool bf16 = false;
    bool fp16 = false;
    bool tpPpDpMapping = false; ///< --use-tp-pp-dp-mapping (rank order tp-cp-ep-pp-dp)
    int contextParallel = 1; ///< --context-parallel-size
    int expertParallel = 1; ///< --expert-model-parallel-size
    int expertTensorParallel = 0; ///< --expert-tensor-parallel-size (0: absent, Megatron's default = TP)
    int numExperts = 0; ///< --num-experts (0: dense)
    CpComm cpComm = CpComm::P2P; ///< --cp-comm-type
    Fp8Format fp8 = Fp8Format::Off; ///< --fp8-format
    /// --use-megatron-fsdp with --data-parallel-sharding-strategy optim_grads / optim_grads_params
    /// (the default); None otherwise (no_shard and optim are the distributed optimizer here)
    DpSharding fsdp = DpSharding::None;
    int virtualStages = 1; ///< from --num-layers-per-virtual-pipeline-stage or the layout's p x v stages
    std::vector<int> stageLayers; ///< transformer layers per pipeline stage (size pp)
    std::vector<Recompute> stageRecompute; ///< per stage, Full layers normalised (0 = all)
};

/// Interprets Megatron-LM flags (the argument list of pretrain_gpt.py). Understands
/// --pipeline-model-parallel-layout (grammar of reference section 1.3; p x v stages give v
/// virtual stages), --num-layers-per-virtual-pipeline-stage, --context-parallel-size, --cp-comm-type,
/// --decoder-first/last-pipeline-num-layers, and the recompute flags (uniform/block/selective).
/// Unknown flags are ignored; malformed values are recorded in `diags` with pointer "argv".
MegatronArgs parseMegatronArgs(const std::vector<std::string> &args, Diagnostics &diags);

/// One exported per-node launch script read back.
struct LaunchScript {
    std::string nodeName; ///< NODE_NAME=...
    int nnodes = 0;
    int nodeRank = -1;
    int nprocPerNode = 0;
    std::vector<int> visibleDevices; ///< from CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES
    std::vector<std::string> megatronArgs; ///< the MEGATRON_ARGS=( ... ) array, one token per word
};

/// Reads a launch script written by the Megatron export. Problems go to `diags` ("line N").
LaunchScript parseLaunchScript(const std::string &text, Diagnostics &diags);

/// Recompute normalised for comparison: Full with layers >= layerCount becomes Full with 0 (all).
Recompute normalisedRecompute(const Recompute &r, int layerCount);

} // namespace memx
