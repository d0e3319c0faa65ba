// RAII wrappers over libsqlite3: every failure names the database file and SQLite's own message.
#include "data/store/sqlite.h"

#include "util/error.h"

#include <sqlite3.h>

namespace tb::sql {

Database::Database(const std::string& path, bool create) : m_path(path)
{
    // SQLite's memory statistics take a global mutex on every allocation; nothing reads them.
    // (It must be set before SQLite initialises: the first connection does it.)
    static const bool configured = [] {
        sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
        return true;
    }();
    (void)configured;
    const int flags =
        SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(path.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        const std::string message = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        sqlite3_close(m_db);
        m_db = nullptr;
        tb::fail(path, ": cannot open the dataset store: ", message);
    }
    sqlite3_extended_result_codes(m_db, 1);
}

Database::~Database()
{
    m_cache.clear();  // finalized before the connection closes
    sqlite3_close_v2(m_db);
}

Statement& Database::cached(std::string_view sql)
{
    auto it = m_cache.find(std::string(sql));
    if (it == m_cache.end())
        it = m_cache.emplace(std::string(sql), std::make_unique<Statement>(*this, sql)).first;
    it->second->reset();
    return *it->second;
}

namespace {

// SQLite's own words, with what they mean for a store and what to do where a user can act.
std::string explain(int rc, const std::string& message)
{
    switch (rc & 0xff) {
    case SQLITE_NOTADB:
        return "not a Tunebench dataset store (the file is not an SQLite database)";
    case SQLITE_CORRUPT:
        return "the store file is corrupt (" + message + ")";
    case SQLITE_READONLY:
        return "the store cannot be written: the file or its folder is read-only for this user, "
               "or on a read-only disk (" +
               message + ")";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return "the store is busy: another job or program is writing to it (" + message +
               "); try again when it has finished";
    case SQLITE_FULL:
        return "the disk holding the store is full (" + message + "); nothing was written";
    default:
        return message;
    }
}

}  // namespace

void Database::fail(std::string_view what, int rc) const
{
    tb::fail(m_path, ": ", what, ": ",
             explain(rc, m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc)));
}

void Database::exec(std::string_view sql)
{
    char* error = nullptr;
    const std::string text(sql);
    const int rc = sqlite3_exec(m_db, text.c_str(), nullptr, nullptr, &error);
    if (rc != SQLITE_OK) {
        const std::string message = error ? error : sqlite3_errstr(rc);
        sqlite3_free(error);
        tb::fail(m_path, ": ", explain(rc, message));
    }
}

int64_t Database::lastInsertId() const
{
    return sqlite3_last_insert_rowid(m_db);
}

int64_t Database::changes() const
{
    return sqlite3_changes64(m_db);
}

Statement::Statement(Database& db, std::string_view sql) : m_db(&db)
{
    const int rc = sqlite3_prepare_v2(db.handle(), sql.data(), int(sql.size()), &m_stmt, nullptr);
    if (rc != SQLITE_OK)
        db.fail(tb::cat("preparing \"", sql.substr(0, 60), "\""), rc);
}

Statement::Statement(Statement&& other) noexcept : m_db(other.m_db), m_stmt(other.m_stmt)
{
    other.m_stmt = nullptr;
}

Statement::~Statement()
{
    sqlite3_finalize(m_stmt);
}

Statement& Statement::bind(int index, int64_t value)
{
    sqlite3_bind_int64(m_stmt, index, value);
    return *this;
}

Statement& Statement::bind(int index, double value)
{
    sqlite3_bind_double(m_stmt, index, value);
    return *this;
}

Statement& Statement::bind(int index, std::string_view text)
{
    sqlite3_bind_text64(m_stmt, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    return *this;
}

Statement& Statement::bindNull(int index)
{
    sqlite3_bind_null(m_stmt, index);
    return *this;
}

bool Statement::step()
{
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    const std::string sql = sqlite3_sql(m_stmt) ? sqlite3_sql(m_stmt) : "";
    sqlite3_reset(m_stmt);
    m_db->fail(tb::cat("running \"", sql.substr(0, 60), "\""), rc);
}

void Statement::run()
{
    while (step()) {
    }
    reset();
}

void Statement::reset()
{
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

int64_t Statement::int64(int column) const
{
    return sqlite3_column_int64(m_stmt, column);
}

double Statement::real(int column) const
{
    return sqlite3_column_double(m_stmt, column);
}

std::string Statement::text(int column) const
{
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, column));
    return p ? std::string(p, size_t(sqlite3_column_bytes(m_stmt, column))) : std::string();
}

bool Statement::isNull(int column) const
{
    return sqlite3_column_type(m_stmt, column) == SQLITE_NULL;
}

Transaction::Transaction(Database& db, Kind kind) : m_db(db)
{
    // Inside another transaction, a savepoint: its commit keeps its changes for the outer one's,
    // its rollback undoes only them.
    m_nested = sqlite3_get_autocommit(m_db.handle()) == 0;
    m_db.exec(m_nested ? "SAVEPOINT tb_nested" : kind == Kind::Write ? "BEGIN IMMEDIATE" : "BEGIN");
}

Transaction::~Transaction()
{
    if (!m_done)
        sqlite3_exec(m_db.handle(),
                     m_nested ? "ROLLBACK TO tb_nested; RELEASE tb_nested" : "ROLLBACK", nullptr,
                     nullptr, nullptr);
}

void Transaction::commit()
{
    m_db.exec(m_nested ? "RELEASE tb_nested" : "COMMIT");
    m_done = true;
}

}  // namespace tb::sql
