#pragma once

#include "memx/cluster/cluster.h"
#include "memx/cluster/gpuspec.h"
#include "memx/model/model.h"
#include "memx/plan/plan.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace memx {

class Diagnostics;

/// Format tags written in the "format" field of every MemX JSON file.
inline constexpr const char *kCatalogueFormat = "memx.catalogue/1";
inline constexpr const char *kClusterFormat = "memx.cluster/1";
inline constexpr const char *kModelFormat = "memx.model/1";
inline constexpr const char *kPlanFormat = "memx.plan/1";

// Every parse function records all problems it finds in `diags` (file name taken from it) and
// returns its best effort; callers throw with diags.throwIfAny() before using the value.
// The load* functions read a file and throw LoadError listing every problem.

GpuSpec parseGpuSpec(const nlohmann::json &j, const std::string &pointer, Diagnostics &diags);
nlohmann::json toJson(const GpuSpec &spec);

Catalogue parseCatalogue(const std::string &text, const std::string &file);
/// The catalogue shipped with MemX (resources/catalogue/gpus.json, compiled in), parsed once.
const Catalogue &builtinCatalogue();
nlohmann::json toJson(const Catalogue &catalogue);
/// GPU definitions a user adds next to the catalogue (the GUI's "Load GPUs...": a memx.catalogue/1
/// file such as sample_gpus/blackwell-mi355x.json). Beyond the catalogue's rules each device needs
/// what a cluster's own devices need (memoryGiB) and an id (or alias) that is not a `catalogue`
/// device's; at least one device. They come back custom (GpuSpec::custom), ready for a cluster's
/// "devices". Throws LoadError naming the file and every field at fault.
std::vector<GpuSpec> parseCustomDevices(const std::string &text, const std::string &file,
                                        const Catalogue &catalogue = builtinCatalogue());
std::vector<GpuSpec> loadCustomDevices(const std::string &path, const Catalogue &catalogue = builtinCatalogue());
/// Adds the custom `devices` of `file` (in file order) to `known`, the one merge rule of the CLI's
/// --gpus files and the workbench's loaded GPUs: a device with the id of a known one replaces it
/// (the later definition wins); an id or alias that names another known device (its id or one of
/// its aliases) is refused. Throws LoadError naming `file` and each field at fault, leaving `known`
/// unchanged.
void mergeCustomDevices(std::vector<GpuSpec> &known, std::vector<GpuSpec> devices, const std::string &file);
/// `base` plus the custom devices of every file in `paths` (loadCustomDevices, each checked against
/// `base`, merged in order by mergeCustomDevices).
Catalogue catalogueWithCustomDevices(const std::vector<std::string> &paths, const Catalogue &base = builtinCatalogue());

/// Parses a cluster; device ids resolve against the cluster's own "devices" first, then `catalogue`.
Cluster parseCluster(const nlohmann::json &j, const Catalogue &catalogue, Diagnostics &diags);
Cluster loadCluster(const std::string &path, const Catalogue &catalogue = builtinCatalogue());
nlohmann::json toJson(const Cluster &cluster);
/// The reader's rules applied to an in-memory cluster: it is written as JSON and parsed back, so an
/// edit (the GUI's editors call this before every change) is checked exactly as a file would be.
/// Every problem lands in `diags` with its JSON pointer (e.g. "/nodes/2/gpus").
void validateCluster(const Cluster &cluster, Diagnostics &diags, const Catalogue &catalogue = builtinCatalogue());

Model parseModel(const nlohmann::json &j, Diagnostics &diags);
Model loadModel(const std::string &path);
nlohmann::json toJson(const Model &model);
/// The model file's rules applied to an in-memory model (see validateCluster).
void validateModel(const Model &model, Diagnostics &diags);
/// The shipped model presets (resources/models), sorted by id.
const std::vector<Model> &builtinModels();
/// A preset id ("llama2-7b") or a path to a model file.
Model resolveModel(const std::string &idOrPath);

Plan parsePlan(const nlohmann::json &j, Diagnostics &diags);
Plan loadPlan(const std::string &path);
nlohmann::json toJson(const Plan &plan);

/// Writes JSON (2-space indented, trailing newline) atomically.
void saveJson(const nlohmann::json &j, const std::string &path);

} // namespace memx
