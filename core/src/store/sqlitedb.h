#pragma once

// Thin RAII wrappers over the SQLite3 C API used by SqliteStore. Private to the store.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace memx::sqlite {

/// An open database connection; closes it on destruction. Errors throw std::runtime_error
/// naming the file and SQLite's message.
class Database {
public:
    /// Opens `path` read-write (or, with `readOnly`, for reading only); with `create` the file is
    /// created when absent.
    Database(const std::string &path, bool create, bool readOnly = false);
    ~Database();
    Database(const Database &) = delete;
    Database &operator=(const Database &) = delete;

    sqlite3 *handle() const { return mDb; }
    const std::string &path() const { return mPath; }
    /// Runs one or more statements without results.
    void exec(const std::string &sql);
    /// Throws std::runtime_error with SQLite's current message when `rc` is an error code
    /// (a read-only file and a table changed by another program get messages a user can act on).
    void check(int rc, const char *what) const;
    bool readOnly() const { return mReadOnly; }
    /// Result of "PRAGMA name" as an integer.
    long long pragmaInt(const std::string &name);
    long long changes() const;

private:
    sqlite3 *mDb = nullptr;
    std::string mPath;
    bool mReadOnly = false;
};

/// A prepared statement; finalized on destruction. Bind indices are 1-based, columns 0-based.
class Statement {
public:
    Statement(Database &db, const std::string &sql);
    ~Statement();
    Statement(const Statement &) = delete;
    Statement &operator=(const Statement &) = delete;

    Statement &bind(int index, const std::string &text);
    Statement &bind(int index, long long value);
    Statement &bind(int index, const std::vector<std::uint8_t> &bytes);
    /// Next row: true when a row is available, false when done.
    bool step();
    /// Runs a statement that returns no rows.
    void run();
    std::string text(int column) const;
    long long integer(int column) const;
    std::vector<std::uint8_t> bytes(int column) const;

private:
    Database &mDb;
    sqlite3_stmt *mStmt = nullptr;
};

/// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit() was called.
class TransactionGuard {
public:
    explicit TransactionGuard(Database &db);
    ~TransactionGuard();
    TransactionGuard(const TransactionGuard &) = delete;
    TransactionGuard &operator=(const TransactionGuard &) = delete;
    void commit();

private:
    Database &mDb;
    bool mDone = false;
};

/// Copies database `from` into a new file at `path` with the online backup API.
void backupTo(Database &from, const std::string &path);

} // namespace memx::sqlite
