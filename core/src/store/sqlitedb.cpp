#include "sqlitedb.h"

#include <sqlite3.h>

#include <stdexcept>

namespace memx::sqlite {

namespace {

/// SQLite's message, made actionable where the user can do something about it.
std::string explain(const std::string &path, int rc, const std::string &sqliteMessage)
{
    if ((rc & 0xff) == SQLITE_READONLY)
        return "the project file is read-only (" + sqliteMessage
            + "): it was opened for reading only; make it writable (chmod u+w " + path + ") to change it";
    if (sqliteMessage.rfind("no such column", 0) == 0 || sqliteMessage.rfind("no such table", 0) == 0)
        return "the project file's tables are not those of a MemX project (" + sqliteMessage
            + "; changed by another program?): restore it from a backup";
    return sqliteMessage;
}

} // namespace

Database::Database(const std::string &path, bool create, bool readOnly)
    : mPath(path)
    , mReadOnly(readOnly)
{
    const int flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0))
        | SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(path.c_str(), &mDb, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = mDb ? sqlite3_errmsg(mDb) : sqlite3_errstr(rc);
        sqlite3_close(mDb);
        mDb = nullptr;
        throw std::runtime_error(path + ": cannot open the project file: " + msg);
    }
    sqlite3_extended_result_codes(mDb, 1);
    sqlite3_busy_timeout(mDb, 5000);
}

Database::~Database()
{
    sqlite3_close_v2(mDb);
}

void Database::check(int rc, const char *what) const
{
    if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE)
        return;
    throw std::runtime_error(mPath + ": " + what + ": " + explain(mPath, rc, sqlite3_errmsg(mDb)));
}

void Database::exec(const std::string &sql)
{
    char *err = nullptr;
    const int rc = sqlite3_exec(mDb, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        std::string msg = explain(mPath, rc, err ? err : sqlite3_errstr(rc));
        sqlite3_free(err);
        throw std::runtime_error(mPath + ": " + msg);
    }
}

long long Database::pragmaInt(const std::string &name)
{
    Statement s(*this, "PRAGMA " + name);
    return s.step() ? s.integer(0) : 0;
}

long long Database::changes() const
{
    return sqlite3_changes(mDb);
}

Statement::Statement(Database &db, const std::string &sql)
    : mDb(db)
{
    mDb.check(sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &mStmt, nullptr), "preparing a statement");
}

Statement::~Statement()
{
    sqlite3_finalize(mStmt);
}

Statement &Statement::bind(int index, const std::string &text)
{
    mDb.check(sqlite3_bind_text(mStmt, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT), "bind");
    return *this;
}

Statement &Statement::bind(int index, long long value)
{
    mDb.check(sqlite3_bind_int64(mStmt, index, value), "bind");
    return *this;
}

Statement &Statement::bind(int index, const std::vector<std::uint8_t> &bytes)
{
    mDb.check(sqlite3_bind_blob64(mStmt, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT), "bind");
    return *this;
}

bool Statement::step()
{
    const int rc = sqlite3_step(mStmt);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    mDb.check(rc, "executing a statement");
    return false;
}

void Statement::run()
{
    while (step()) { }
}

std::string Statement::text(int column) const
{
    const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(mStmt, column));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(mStmt, column))) : std::string();
}

long long Statement::integer(int column) const
{
    return sqlite3_column_int64(mStmt, column);
}

std::vector<std::uint8_t> Statement::bytes(int column) const
{
    const auto *p = static_cast<const std::uint8_t *>(sqlite3_column_blob(mStmt, column));
    const int n = sqlite3_column_bytes(mStmt, column);
    return p ? std::vector<std::uint8_t>(p, p + n) : std::vector<std::uint8_t>();
}

TransactionGuard::TransactionGuard(Database &db)
    : mDb(db)
{
    mDb.exec("BEGIN IMMEDIATE");
}

TransactionGuard::~TransactionGuard()
{
    if (!mDone)
        sqlite3_exec(mDb.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void TransactionGuard::commit()
{
    mDb.exec("COMMIT");
    mDone = true;
}

void backupTo(Database &from, const std::string &path)
{
    Database to(path, true);
    sqlite3_backup *b = sqlite3_backup_init(to.handle(), "main", from.handle(), "main");
    if (!b)
        to.check(sqlite3_errcode(to.handle()), "starting the backup");
    const int rc = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE)
        throw std::runtime_error(path + ": copying the project failed: " + sqlite3_errstr(rc));
    to.check(sqlite3_errcode(to.handle()), "finishing the backup");
}

} // namespace memx::sqlite
