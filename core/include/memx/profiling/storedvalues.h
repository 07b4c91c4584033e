#pragma once

namespace memx {

struct ImportBatch;

/// Ranges of the values a project stores: one definition for the project reader (the parse
/// functions of memx/profiling/profileio.h that SqliteStore reads records with) and for every
/// importer, which checks them first and names its own file, line and field.
constexpr double kMaxStoredLayerTimeMs = 1e9; ///< forward/backward/optimizer time of one layer
constexpr double kMaxStoredRunTimeMs = 1e12; ///< measured iteration time of a run
constexpr double kMaxStoredBytes = 1e15; ///< parameter, activation and peak memory bytes

/// Reads every record of `batch` back exactly as the project's reader will (toJson, then the
/// reader's parse function), so nothing is written that would make the project unreadable.
/// Throws LoadError naming each refused record (its source, else "(import)"), the stored field
/// (JSON pointer under /profiles/<key>, /runs/<id>, ...) and what was expected.
void checkStorable(const ImportBatch &batch);

} // namespace memx
