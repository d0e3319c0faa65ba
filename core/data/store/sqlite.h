// A thin RAII layer over libsqlite3 for the dataset store: a connection, prepared statements with
// typed binds and columns, and transactions that roll back unless committed. Errors become
// tb::Error naming the database file and the SQLite message.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

struct sqlite3;
struct sqlite3_stmt;

namespace tb::sql {

class Database;

class Statement {
public:
    Statement(Database& db, std::string_view sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    Statement(Statement&& other) noexcept;

    // Binds are 1-based, as in SQLite; returns *this to chain.
    Statement& bind(int index, int64_t value);
    Statement& bind(int index, int value) { return bind(index, int64_t(value)); }
    Statement& bind(int index, double value);
    Statement& bind(int index, std::string_view text);
    Statement& bind(int index, const std::string& text)
    {
        return bind(index, std::string_view(text));
    }
    Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
    Statement& bindNull(int index);
    template <typename T> Statement& bind(int index, const std::optional<T>& value)
    {
        return value ? bind(index, *value) : bindNull(index);
    }

    // Advances to the next row; false when done. Throws on errors.
    bool step();
    // Runs to completion (INSERT/UPDATE/DELETE); resets so the statement can be reused.
    void run();
    void reset();

    // Columns are 0-based, as in SQLite.
    int64_t int64(int column) const;
    double real(int column) const;
    std::string text(int column) const;
    bool isNull(int column) const;

private:
    Database* m_db;
    sqlite3_stmt* m_stmt = nullptr;
};

class Database {
public:
    // Opens (creating when `create`) a database file. Throws tb::Error naming the path.
    Database(const std::string& path, bool create);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    void exec(std::string_view sql);
    // A statement prepared once per connection and kept for reuse (a change per record in one
    // transaction prepares nothing): returned reset, its bindings cleared. Valid across
    // transactions and rollbacks. Not reentrant: finish with one (run(), or reset() after reading)
    // before asking for the same SQL again.
    Statement& cached(std::string_view sql);
    int64_t lastInsertId() const;
    int64_t changes() const;
    const std::string& path() const { return m_path; }
    sqlite3* handle() const { return m_db; }
    [[noreturn]] void fail(std::string_view what, int rc) const;

private:
    sqlite3* m_db = nullptr;
    std::string m_path;
    std::unordered_map<std::string, std::unique_ptr<Statement>> m_cache;
};

// Resets a (cached) statement when the scope ends, however it ends: a read left on a row would
// keep its read transaction open.
class ResetOnExit {
public:
    explicit ResetOnExit(Statement& st) : m_st(st) {}
    ~ResetOnExit() { m_st.reset(); }
    ResetOnExit(const ResetOnExit&) = delete;
    ResetOnExit& operator=(const ResetOnExit&) = delete;

private:
    Statement& m_st;
};

// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit() ran. Inside an open
// transaction it is a savepoint (commit releases it into the outer one, destruction undoes it).
class Transaction {
public:
    // Write: BEGIN IMMEDIATE, the write lock from the start (no upgrade that can fail midway).
    // Read: a deferred BEGIN, one consistent snapshot that takes no lock a writer waits for.
    enum class Kind { Write, Read };
    explicit Transaction(Database& db, Kind kind = Kind::Write);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    Database& m_db;
    bool m_done = false;
    bool m_nested = false;  // a savepoint inside an open transaction
};

}  // namespace tb::sql
