#pragma once

#include "memx/model/model.h"
#include "memx/profile/importbatch.h"
#include "memx/profile/measuredrun.h"

#include <string>

namespace memx {

/// What the measured-runs table does not say, and the importer must be told (defaults: the
/// public megatron-tutorials h100_runs.csv, see ../shared/data/public/README.md).
struct RunTableOptions {
    std::string gpu = "h100-sxm"; ///< catalogue device of every run
    int vocab = 50257; ///< tokenizer vocabulary (GPT-2 BPE); Megatron pads it itself
    AttentionBackend attention = AttentionBackend::Auto; ///< the scripts' --attention-backend
    /// Bytes per unit of mem_GB_per_gpu. The tutorial's "GB" is nvidia-smi's MiB / 1000 (its log
    /// shows "33321 / 81559 MB" for the 33.3 of tbl-101 R1).
    double memoryUnitBytes = 1000.0 * 1048576.0;
    MemoryKind memoryKind = MemoryKind::DeviceUsed; ///< nvidia-smi: device-used
    std::string groupPrefix = "megatron-tutorials"; ///< group = prefix/source_table
};

/// Imports a table of measured runs with the megatron-tutorials columns (source_table, row,
/// make_target, model, layers, hidden, heads, seq_len, n_gpus, tp, sp, pp,
/// layers_per_virtual_stage, cp, cp_comm, dp, dist_optimizer, recompute, gbs, mbs, grad_accum,
/// mem_GB_per_gpu (a number or OOM), step_ms, note; any order, extra columns ignored). Each row
/// becomes a MeasuredRun on a one-node cluster of n_gpus `gpu` devices, with a model per
/// distinct shape; context-parallel rows (cp, cp_comm) and interleaved rows
/// (layers_per_virtual_stage) become Plan::contextParallel / Plan::virtualStages. Throws LoadError naming the file,
/// line and column for a malformed cell, an inconsistent row (tp x pp x dp x cp != n_gpus, gbs != mbs x dp x
/// grad_accum, ...), or one model name with two shapes.
ImportBatch importRunTable(const std::string &text, const std::string &file, const RunTableOptions &options = {});

/// Options for vTrain's ground_truth_single.csv: Megatron-DeepSpeed on one NVLink node of A100s,
/// activation recomputation on (its config: use_checkpoint true), default (unfused) attention,
/// GPT-2 vocabulary; no memory column.
RunTableOptions vTrainOptions();
/// Imports vTrain's table (columns "# GPUs, global batch, micro batch, hidden size, attention
/// heads, # layers, sequence length, tensor parallelism, data parallelism, pipeline parallelism,
/// iteration time (ms)"): each row is rewritten as a run-table row (full recompute, no memory)
/// and read by importRunTable, so both share every check. Runs are grouped per GPU count
/// ("vtrain/<n> GPUs"); ranking sets are (cluster, model, global batch).
ImportBatch importVTrainTable(const std::string &text, const std::string &file,
                              const RunTableOptions &options = vTrainOptions());

} // namespace memx
