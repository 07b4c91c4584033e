#pragma once

#include "memx/profile/importbatch.h"
#include "memx/util/progress.h"

#include <functional>
#include <string>

namespace memx {

/// Imports the public Sailor measured dataset (eth-easl/sailor; layout in ../shared/DOMAIN.md):
///   DIR/training-configs/*.json          -> models "sailor-<name>" (preset shape + the config)
///   DIR/profiles/layer_times.json        -> measured LayerProfiles (seconds -> ms)
///   DIR/profiles/layer_memory.json       -> paramBytes / activationBytes of those profiles
///   DIR/network/*.json                   -> NetworkMeasurements (fits sampled 1 KiB .. 1 GiB)
///   DIR/measured-runs/GROUP/MODEL/N*/plan_config_*.json -> MeasuredRuns, each with its own cluster
/// Unknown GPU or model names, malformed files and inconsistent plans throw LoadError naming the
/// file and JSON pointer. Repaired oddities (a non-contiguous layer list) become warnings.
/// `progress(done, total)` is called per file; returning false throws Cancelled (memx/util/progress.h).
ImportBatch importSailor(const std::string &dir, const ProgressFn &progress = {});

/// Bandwidth in GB/s of a Sailor fit [coefficients (highest degree first), cap bytes/s] for a
/// message of `bytes`: polynomial at x = log2(bytes) - log2(1e6), clamped to [0, cap / 1e9].
double sailorFitGBps(const std::vector<double> &coefficients, double capBytesPerSecond, double bytes);

} // namespace memx
