#pragma once

#include "memx/cluster/gpuspec.h"
#include "memx/io/formats.h"
#include "memx/model/model.h"
#include "memx/profile/layerprofile.h"
#include "memx/profile/measuredrun.h"
#include "memx/profile/networkmeasurement.h"
#include "memx/util/diagnostic.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace memx {

class Diagnostics;

/// Format tag of MemX profile files (see docs/formats-profiles.md).
inline constexpr const char *kProfileFormat = "memx.profile/1";
/// Header of the CSV profile format, in this column order.
inline constexpr const char *kProfileCsvHeader
    = "gpu,model,tp,micro_batch,seq_length,layer,forward_ms,backward_ms,optimizer_ms,param_bytes,activation_bytes";

std::optional<ProfileOrigin> profileOriginFromString(const std::string &text);

// JSON of single values (used by the profile file format and by the project store). Parse
// functions record every problem in `diags` with its JSON pointer and return their best effort.
// GPU names are resolved to catalogue ids through `catalogue`; an empty catalogue accepts any name.
nlohmann::json toJson(const LayerProfile &profile);
LayerProfile parseLayerProfile(const nlohmann::json &j, const std::string &pointer, Diagnostics &diags,
                               const Catalogue &catalogue = builtinCatalogue());
/// One CSV line split into trimmed cells ("" quoting as RFC 4180).
std::vector<std::string> splitCsvLine(const std::string &line);
nlohmann::json toJson(const MeasuredRun &run);
MeasuredRun parseMeasuredRun(const nlohmann::json &j, const std::string &pointer, Diagnostics &diags);
nlohmann::json toJson(const NetworkMeasurement &m);
NetworkMeasurement parseNetworkMeasurement(const nlohmann::json &j, const std::string &pointer, Diagnostics &diags);

/// A "memx.profile/1" JSON file: {"format": ..., "profiles": [ ... ]}. GPU names may be catalogue
/// ids or aliases and are stored as ids. Throws LoadError listing every problem.
std::vector<LayerProfile> parseProfileJson(const std::string &text, const std::string &file,
                                           const Catalogue &catalogue = builtinCatalogue());
std::string profilesToJsonText(const std::vector<LayerProfile> &profiles);

/// The CSV profile format: kProfileCsvHeader, one row per layer; rows of one key form one profile
/// whose layers must be numbered 0..n-1 (any order). Empty param/activation cells mean unknown.
/// Errors name "line N, column NAME". Throws LoadError listing every problem.
std::vector<LayerProfile> parseProfileCsv(const std::string &text, const std::string &file,
                                          const Catalogue &catalogue = builtinCatalogue());
std::string profilesToCsv(const std::vector<LayerProfile> &profiles);

/// Why `bytesPerSample` (activation bytes one transformer layer keeps for backward, per sequence,
/// on one of `tp` ranks) contradicts `model`'s shape, or nullopt: Korthikanti et al.'s per-layer
/// figure spans the flash-attention bytes sbh(10 + 24/t) to the unfused ones + 5as^2b/t; outside
/// half the one and twice the other the bytes were measured for another shape (another sequence
/// length, hidden size or TP).
std::optional<std::string> activationBytesProblem(const Model &model, int tp, double bytesPerSample);

/// Every profile whose model `modelOf` knows, checked with activationBytesProblem on each
/// transformer layer's activationBytes (per micro-batch / micro-batch): one Diagnostic per
/// contradicting profile, naming `file`, the profile (gpu, model, TP, micro-batch), the layer and
/// the activationBytes field. Profiles of unknown models are not checked.
std::vector<Diagnostic> profileShapeProblems(const std::vector<LayerProfile> &profiles,
                                             const std::function<std::optional<Model>(const std::string &)> &modelOf,
                                             const std::string &file);

/// Reads a .csv or .json profile file (by extension; content sniffing for anything else).
std::vector<LayerProfile> loadProfileFile(const std::string &path, const Catalogue &catalogue = builtinCatalogue());

} // namespace memx
