#include "memx/store/sqlitestore.h"

#include "memx/io/formats.h"
#include "memx/profiling/profileio.h"
#include "memx/util/diagnostic.h"
#include "memx/util/jsonreader.h"
#include "sqlitedb.h"

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <stdexcept>

#include <unistd.h>

namespace memx {

using nlohmann::json;
using sqlite::Database;
using sqlite::Statement;
using sqlite::TransactionGuard;

namespace {

/// 'MEMX' in PRAGMA application_id marks a MemX project file.
constexpr long long kApplicationId = 0x4D454D58;

struct Migration {
    int version;
    const char *description;
    const char *sql;
};

/// Schema migrations, applied in order; migration N brings a file from version N-1 to N.
/// Never edit a released migration: append a new one.
const Migration kMigrations[] = {
    {1, "initial schema: clusters, models, profiles, runs, network, blobs",
     R"sql(
CREATE TABLE schema_migrations(version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL);
CREATE TABLE clusters(name TEXT PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE models(id TEXT PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE profiles(gpu TEXT NOT NULL, model TEXT NOT NULL, tp INTEGER NOT NULL, micro_batch INTEGER NOT NULL,
                      seq_length INTEGER NOT NULL, origin TEXT NOT NULL, json TEXT NOT NULL,
                      PRIMARY KEY(gpu, model, tp, micro_batch, seq_length));
CREATE TABLE runs(id TEXT PRIMARY KEY, model_id TEXT NOT NULL, hw_group TEXT NOT NULL, json TEXT NOT NULL);
CREATE INDEX runs_by_group ON runs(hw_group);
CREATE TABLE network(key TEXT PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE blobs(kind TEXT NOT NULL, key TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY(kind, key));
)sql"},
};

std::string nowIso()
{
    std::time_t t = std::time(nullptr);
    std::tm tm {};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

} // namespace

struct SqliteStore::Impl {
    std::unique_ptr<Database> db;
    int openedVersion = 0;
    bool explicitTx = false;

    /// Runs `f` inside the open explicit transaction, or in its own one.
    template<typename F> void write(F &&f)
    {
        if (explicitTx) {
            f();
            return;
        }
        TransactionGuard g(*db);
        f();
        g.commit();
    }

    json readJson(const std::string &text, const std::string &where) const
    {
        try {
            return json::parse(text);
        } catch (const json::exception &e) {
            throw LoadError(db->path(), where, std::string("corrupt record in the project file: ") + e.what());
        }
    }
    template<typename T, typename Parse>
    T parseRecord(const std::string &text, const std::string &where, Parse parse) const
    {
        const json j = readJson(text, where);
        Diagnostics diags(db->path());
        T value = parse(j, where, diags);
        diags.throwIfAny();
        return value;
    }
};

namespace {

/// Highest version schema_migrations records (0 when the table is missing or unreadable).
long long recordedSchemaVersion(Database &db)
{
    try {
        Statement s(db, "SELECT max(version) FROM schema_migrations");
        return s.step() ? s.integer(0) : 0;
    } catch (const std::runtime_error &) {
        return 0;
    }
}

} // namespace

int SqliteStore::schemaVersion()
{
    return kMigrations[std::size(kMigrations) - 1].version;
}

SqliteStore::SqliteStore(const std::string &path, bool create)
    : d(std::make_unique<Impl>())
{
    if (!create && !std::filesystem::exists(path))
        throw LoadError(path, "", "no such project file");
    // Opening an existing project never turns another file into one: an empty file stays empty.
    std::error_code sizeError;
    if (!create && std::filesystem::is_regular_file(path) && std::filesystem::file_size(path, sizeError) == 0
        && !sizeError)
        throw LoadError(path, "", "not a MemX project file (the file is empty)");
    // A project the user may not write is opened for reading (listing, searching); a write then
    // fails with "the project file is read-only ..." instead of every command failing.
    // A file with no write bit at all (chmod 444) counts as read-only even for root, who may write
    // it; so does an existing file the user may not write, also when `create` is asked for.
    const bool exists = std::filesystem::exists(path);
    const auto perms = std::filesystem::status(path).permissions();
    const bool noWriteBit = (perms & std::filesystem::perms::all
                             & (std::filesystem::perms::owner_write | std::filesystem::perms::group_write
                                | std::filesystem::perms::others_write))
        == std::filesystem::perms::none;
    const bool readOnly = exists && (::access(path.c_str(), W_OK) != 0 || noWriteBit);
    try {
        d->db = std::make_unique<Database>(path, create, readOnly);
        // Reading the header also detects "file is not a database".
        const long long appId = d->db->pragmaInt("application_id");
        const long long version = d->db->pragmaInt("user_version");
        const long long tables = [&] {
            Statement s(*d->db, "SELECT count(*) FROM sqlite_master");
            return s.step() ? s.integer(0) : 0;
        }();
        if (appId != kApplicationId && (tables > 0 || version != 0))
            throw LoadError(path, "", "not a MemX project file (an SQLite database of another application)");
        if (!create && tables == 0)
            throw LoadError(path, "", "not a MemX project file (an SQLite database without MemX tables)");
        if (version == 0 && tables > 0)
            throw LoadError(path, "",
                            "the project file's schema version (PRAGMA user_version) is 0 although it holds MemX "
                            "tables: its header was changed by another program; restore it from a backup, or set "
                            "the version back (sqlite3 FILE 'PRAGMA user_version="
                                + std::to_string(recordedSchemaVersion(*d->db)) + "')");
        if (version > schemaVersion())
            throw LoadError(path, "",
                            "the project file has schema version " + std::to_string(version)
                                + ", newer than this MemX understands (" + std::to_string(schemaVersion())
                                + "); open it with a newer MemX");
        d->openedVersion = static_cast<int>(version);
        if (readOnly && version < schemaVersion())
            throw LoadError(path, "",
                            "the project file is read-only and has schema version " + std::to_string(version)
                                + ", older than this MemX's " + std::to_string(schemaVersion())
                                + ": make it writable once so that it can be upgraded");
        if (!readOnly)
            d->db->exec("PRAGMA journal_mode=WAL");
        d->db->exec("PRAGMA foreign_keys=ON");
        if (version < schemaVersion()) {
            TransactionGuard g(*d->db);
            for (const Migration &m : kMigrations) {
                if (m.version <= version)
                    continue;
                d->db->exec(m.sql);
                Statement s(*d->db, "INSERT INTO schema_migrations(version, description, applied_at) VALUES(?,?,?)");
                s.bind(1, static_cast<long long>(m.version))
                    .bind(2, std::string(m.description))
                    .bind(3, nowIso())
                    .run();
                d->db->exec("PRAGMA user_version=" + std::to_string(m.version));
            }
            d->db->exec("PRAGMA application_id=" + std::to_string(kApplicationId));
            g.commit();
        }
    } catch (const std::runtime_error &e) {
        if (dynamic_cast<const LoadError *>(&e))
            throw;
        // sqlite errors read "<path>: <what>: <sqlite message>"; the LoadError names the file once
        // and says what the file is not (found by tests/data/bad-inputs/project-*.memx).
        std::string message = e.what();
        if (message.rfind(path + ": ", 0) == 0)
            message.erase(0, path.size() + 2);
        if (message.find("file is not a database") != std::string::npos)
            message = "not a MemX project file (expected an SQLite database; " + message + ")";
        else if (message.find("malformed") != std::string::npos)
            message = "the project file is damaged (" + message + "); restore it from a backup";
        throw LoadError(path, "", message);
    }
}

SqliteStore::~SqliteStore()
{
    if (d && d->explicitTx && d->db)
        try {
            d->db->exec("ROLLBACK");
        } catch (...) {
        }
}

const std::string &SqliteStore::path() const
{
    return d->db->path();
}
int SqliteStore::fileSchemaVersion() const
{
    return d->openedVersion;
}

void SqliteStore::saveAs(const std::string &path) const
{
    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    const fs::path tmp = dir / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()));
    std::error_code ec;
    fs::remove(tmp, ec);
    try {
        sqlite::backupTo(*d->db, tmp.string());
    } catch (...) {
        fs::remove(tmp, ec);
        fs::remove(fs::path(tmp.string() + "-wal"), ec);
        fs::remove(fs::path(tmp.string() + "-shm"), ec);
        throw;
    }
    // A stale write-ahead log next to the target would be replayed into the new file.
    fs::remove(fs::path(path + "-wal"), ec);
    fs::remove(fs::path(path + "-shm"), ec);
    fs::rename(tmp, target, ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw std::runtime_error(path + ": cannot save the project: " + ec.message());
    }
}

void SqliteStore::begin()
{
    if (d->explicitTx)
        throw std::logic_error("SqliteStore: a transaction is already open (transactions do not nest)");
    d->db->exec("BEGIN IMMEDIATE");
    d->explicitTx = true;
}

void SqliteStore::commit()
{
    if (!d->explicitTx)
        throw std::logic_error("SqliteStore: commit() without begin()");
    d->db->exec("COMMIT");
    d->explicitTx = false;
}

void SqliteStore::rollback()
{
    if (!d->explicitTx)
        throw std::logic_error("SqliteStore: rollback() without begin()");
    d->explicitTx = false;
    d->db->exec("ROLLBACK");
}

bool SqliteStore::inTransaction() const
{
    return d->explicitTx;
}

// ---- clusters / models ----

void SqliteStore::putCluster(const Cluster &cluster)
{
    if (cluster.name.empty())
        throw std::invalid_argument("a stored cluster needs a name");
    d->write([&] {
        Statement s(*d->db, "INSERT OR REPLACE INTO clusters(name, json) VALUES(?, ?)");
        s.bind(1, cluster.name).bind(2, toJson(cluster).dump()).run();
    });
}

std::optional<Cluster> SqliteStore::cluster(const std::string &name) const
{
    Statement s(*d->db, "SELECT json FROM clusters WHERE name = ?");
    s.bind(1, name);
    if (!s.step())
        return std::nullopt;
    return d->parseRecord<Cluster>(
        s.text(0), "/clusters/" + name,
        [](const json &j, const std::string &, Diagnostics &dg) { return parseCluster(j, builtinCatalogue(), dg); });
}

std::vector<std::string> SqliteStore::clusterNames() const
{
    std::vector<std::string> out;
    Statement s(*d->db, "SELECT name FROM clusters ORDER BY name");
    while (s.step())
        out.push_back(s.text(0));
    return out;
}

void SqliteStore::putModel(const Model &model)
{
    if (model.id.empty())
        throw std::invalid_argument("a stored model needs an id");
    d->write([&] {
        Statement s(*d->db, "INSERT OR REPLACE INTO models(id, json) VALUES(?, ?)");
        s.bind(1, model.id).bind(2, toJson(model).dump()).run();
    });
}

std::optional<Model> SqliteStore::model(const std::string &id) const
{
    Statement s(*d->db, "SELECT json FROM models WHERE id = ?");
    s.bind(1, id);
    if (!s.step())
        return std::nullopt;
    return d->parseRecord<Model>(s.text(0), "/models/" + id,
                                 [](const json &j, const std::string &, Diagnostics &dg) { return parseModel(j, dg); });
}

std::vector<std::string> SqliteStore::modelIds() const
{
    std::vector<std::string> out;
    Statement s(*d->db, "SELECT id FROM models ORDER BY id");
    while (s.step())
        out.push_back(s.text(0));
    return out;
}

// ---- profiles ----

void SqliteStore::putProfile(const LayerProfile &profile)
{
    if (profile.key.gpu.empty() || profile.key.model.empty())
        throw std::invalid_argument("a stored profile needs a GPU and a model");
    d->write([&] {
        Statement s(*d->db,
                    "INSERT OR REPLACE INTO profiles(gpu, model, tp, micro_batch, seq_length, origin, json) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?)");
        s.bind(1, profile.key.gpu)
            .bind(2, profile.key.model)
            .bind(3, static_cast<long long>(profile.key.tp))
            .bind(4, static_cast<long long>(profile.key.microBatch))
            .bind(5, static_cast<long long>(profile.key.seqLength))
            .bind(6, std::string(toString(profile.origin)))
            .bind(7, toJson(profile).dump())
            .run();
    });
}

static LayerProfile parseStoredProfile(const json &j, const std::string &where, Diagnostics &diags)
{
    // Stored GPU ids may be custom devices: accept them as they are (empty catalogue = no check).
    LayerProfile p = parseLayerProfile(j, where, diags, Catalogue());
    return p;
}

std::optional<LayerProfile> SqliteStore::profile(const ProfileKey &key) const
{
    Statement s(*d->db,
                "SELECT json FROM profiles WHERE gpu = ? AND model = ? AND tp = ? AND micro_batch = ? AND "
                "seq_length = ?");
    s.bind(1, key.gpu)
        .bind(2, key.model)
        .bind(3, static_cast<long long>(key.tp))
        .bind(4, static_cast<long long>(key.microBatch))
        .bind(5, static_cast<long long>(key.seqLength));
    if (!s.step())
        return std::nullopt;
    return d->parseRecord<LayerProfile>(s.text(0), "/profiles", parseStoredProfile);
}

ProfileSet SqliteStore::profiles() const
{
    ProfileSet set;
    Statement s(*d->db,
                "SELECT json, gpu, model, tp, micro_batch, seq_length FROM profiles ORDER BY gpu, model, tp, "
                "micro_batch, seq_length");
    while (s.step()) // the key in the pointer is what `memx profile remove` takes
        set.add(d->parseRecord<LayerProfile>(s.text(0),
                                             "/profiles/" + s.text(1) + "/" + s.text(2) + "/tp"
                                                 + std::to_string(s.integer(3)) + "/mb" + std::to_string(s.integer(4))
                                                 + "/seq" + std::to_string(s.integer(5)),
                                             parseStoredProfile));
    return set;
}

size_t SqliteStore::removeProfiles(ProfileOrigin origin)
{
    size_t n = 0;
    d->write([&] {
        Statement s(*d->db, "DELETE FROM profiles WHERE origin = ?");
        s.bind(1, std::string(toString(origin))).run();
        n = static_cast<size_t>(d->db->changes());
    });
    return n;
}

bool SqliteStore::removeProfile(const ProfileKey &key)
{
    size_t n = 0;
    d->write([&] {
        Statement s(
            *d->db,
            "DELETE FROM profiles WHERE gpu = ? AND model = ? AND tp = ? AND micro_batch = ? AND seq_length = ?");
        s.bind(1, key.gpu)
            .bind(2, key.model)
            .bind(3, static_cast<long long>(key.tp))
            .bind(4, static_cast<long long>(key.microBatch))
            .bind(5, static_cast<long long>(key.seqLength))
            .run();
        n = static_cast<size_t>(d->db->changes());
    });
    return n > 0;
}

bool SqliteStore::removeRun(const std::string &id)
{
    size_t n = 0;
    d->write([&] {
        Statement s(*d->db, "DELETE FROM runs WHERE id = ?");
        s.bind(1, id).run();
        n = static_cast<size_t>(d->db->changes());
    });
    return n > 0;
}

// ---- runs ----

void SqliteStore::putRun(const MeasuredRun &run)
{
    if (run.id.empty())
        throw std::invalid_argument("a stored run needs an id");
    d->write([&] {
        Statement s(*d->db, "INSERT OR REPLACE INTO runs(id, model_id, hw_group, json) VALUES(?, ?, ?, ?)");
        s.bind(1, run.id).bind(2, run.modelId).bind(3, run.group).bind(4, toJson(run).dump()).run();
    });
}

std::optional<MeasuredRun> SqliteStore::run(const std::string &id) const
{
    Statement s(*d->db, "SELECT json FROM runs WHERE id = ?");
    s.bind(1, id);
    if (!s.step())
        return std::nullopt;
    return d->parseRecord<MeasuredRun>(s.text(0), "/runs/" + id, parseMeasuredRun);
}

std::vector<MeasuredRun> SqliteStore::runs() const
{
    std::vector<MeasuredRun> out;
    Statement s(*d->db, "SELECT id, json FROM runs ORDER BY id");
    while (s.step())
        out.push_back(d->parseRecord<MeasuredRun>(s.text(1), "/runs/" + s.text(0), parseMeasuredRun));
    return out;
}

// ---- network ----

void SqliteStore::putNetwork(const NetworkMeasurement &m)
{
    d->write([&] {
        Statement s(*d->db, "INSERT OR REPLACE INTO network(key, json) VALUES(?, ?)");
        s.bind(1, m.key()).bind(2, toJson(m).dump()).run();
    });
}

std::vector<NetworkMeasurement> SqliteStore::networkMeasurements() const
{
    std::vector<NetworkMeasurement> out;
    Statement s(*d->db, "SELECT key, json FROM network ORDER BY key");
    while (s.step())
        out.push_back(d->parseRecord<NetworkMeasurement>(s.text(1), "/network/" + s.text(0), parseNetworkMeasurement));
    return out;
}

// ---- blobs ----

void SqliteStore::putBlob(const std::string &kind, const std::string &key, const std::vector<std::uint8_t> &bytes)
{
    d->write([&] {
        Statement s(*d->db, "INSERT OR REPLACE INTO blobs(kind, key, data) VALUES(?, ?, ?)");
        s.bind(1, kind).bind(2, key).bind(3, bytes).run();
    });
}

std::optional<std::vector<std::uint8_t>> SqliteStore::blob(const std::string &kind, const std::string &key) const
{
    Statement s(*d->db, "SELECT data FROM blobs WHERE kind = ? AND key = ?");
    s.bind(1, kind).bind(2, key);
    if (!s.step())
        return std::nullopt;
    return s.bytes(0);
}

std::vector<std::string> SqliteStore::blobKeys(const std::string &kind) const
{
    std::vector<std::string> out;
    Statement s(*d->db, "SELECT key FROM blobs WHERE kind = ? ORDER BY key");
    s.bind(1, kind);
    while (s.step())
        out.push_back(s.text(0));
    return out;
}

void SqliteStore::removeBlob(const std::string &kind, const std::string &key)
{
    d->write([&] {
        Statement s(*d->db, "DELETE FROM blobs WHERE kind = ? AND key = ?");
        s.bind(1, kind).bind(2, key).run();
    });
}

} // namespace memx
