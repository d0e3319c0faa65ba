// DataStore over SQLite: opening a store, record writes with history, operations and undo, scan
// flags and token counts (the schema and its migrations: store_schema.cpp).
#include "data/store/store.h"

#include "data/record.h"
#include "data/store/comparisons.h"
#include "data/store/pairs_store.h"
#include "data/store/sqlite.h"
#include "util/error.h"
#include "util/json_write.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <limits>

namespace tb {

using nlohmann::json;

namespace {

bool isKnownSplit(const std::string& split)
{
    return split == "train" || split == "validation" || split == "general";
}

json parseOrNull(const sql::Statement& st, int column)
{
    return st.isNull(column) ? json() : json::parse(st.text(column));
}

}  // namespace

const char* reviewStatusName(ReviewStatus status)
{
    switch (status) {
    case ReviewStatus::Pending:
        return "pending";
    case ReviewStatus::Accepted:
        return "accepted";
    case ReviewStatus::Rejected:
        return "rejected";
    case ReviewStatus::NeedsAdjudication:
        return "needs-adjudication";
    }
    return "pending";
}

std::optional<ReviewStatus> parseReviewStatus(const std::string& name)
{
    for (ReviewStatus s : {ReviewStatus::Pending, ReviewStatus::Accepted, ReviewStatus::Rejected,
                           ReviewStatus::NeedsAdjudication})
        if (name == reviewStatusName(s))
            return s;
    return std::nullopt;
}

std::string DataStore::now()
{
    const auto t = std::chrono::system_clock::now();
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t seconds = std::time_t(ms / 1000);
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, int(ms % 1000));
    return buffer;
}

DataStore::DataStore(std::unique_ptr<sql::Database> db, std::string path)
    : m_db(std::move(db)), m_path(std::move(path))
{
}

DataStore::~DataStore() = default;

std::unique_ptr<DataStore> DataStore::open(const std::string& path, bool create)
{
    return openUpTo(path, create, kSchemaVersion);
}

std::unique_ptr<DataStore> DataStore::openAtVersion(const std::string& path, int version)
{
    if (version < 0 || version > kSchemaVersion)
        tb::fail(path, ": no schema version ", version, " (0 to ", kSchemaVersion, ")");
    return openUpTo(path, true, version);
}

std::unique_ptr<DataStore> DataStore::openUpTo(const std::string& path, bool create, int version)
{
    if (path.empty())
        tb::fail("dataset store: no path given");
    auto db = std::make_unique<sql::Database>(path, create);
    sqlite3_busy_timeout(db->handle(), 10000);
    // WAL: readers (the studio's table) never block the writer (an import on a worker);
    // synchronous=FULL makes each committed transaction durable before the call returns.
    db->exec("PRAGMA journal_mode = WAL");
    db->exec("PRAGMA synchronous = FULL");
    db->exec("PRAGMA foreign_keys = ON");
    std::unique_ptr<DataStore> store(new DataStore(std::move(db), path));
    store->migrate(version);
    return store;
}

void DataStore::setBusyTimeout(int milliseconds)
{
    sqlite3_busy_timeout(m_db->handle(), milliseconds);
}

int64_t DataStore::insertOperation(const std::string& kind, const std::string& who,
                                   const json& params, const json& summary)
{
    sql::Statement st(
        *m_db, "INSERT INTO operations (kind, who, at, params, summary) VALUES (?, ?, ?, ?, ?)");
    st.bind(1, kind)
        .bind(2, who.empty() ? std::string("unknown") : who)
        .bind(3, now())
        .bind(4, params.dump())
        .bind(5, summary.dump());
    st.run();
    return m_db->lastInsertId();
}

int64_t DataStore::addSource(const std::string& path, const std::string& format,
                             const std::string& sha256)
{
    sql::Statement st(
        *m_db, "INSERT INTO sources (path, format, sha256, imported_at) VALUES (?, ?, ?, ?)");
    st.bind(1, path).bind(2, format).bind(3, sha256).bind(4, now());
    st.run();
    return m_db->lastInsertId();
}

void DataStore::setSource(int64_t sourceId, const std::string& format, int64_t records,
                          int64_t rejected, const std::string& sha256)
{
    sql::Statement st(*m_db, "UPDATE sources SET format = ?, records = ?, rejected = ?, "
                             "sha256 = CASE WHEN ?5 = '' THEN sha256 ELSE ?5 END WHERE id = ?4");
    st.bind(1, format).bind(2, records).bind(3, rejected).bind(4, sourceId).bind(5, sha256);
    st.run();
}

void DataStore::inTransaction(const std::function<void()>& body)
{
    sql::Transaction tx(*m_db);
    body();
    tx.commit();
}

DataStore::Inserted DataStore::insertRecords(
    int64_t sourceId, const std::string& who,
    const std::function<void(const std::function<void(const NewRecord&)>&)>& produce,
    const std::string& operationKind, const json& params, const std::vector<Change>& changes)
{
    sql::Transaction tx(*m_db);
    // The records' CHECK constraints (kind, split, json_valid(fields): SQLite would parse every
    // row's JSON again) hold by construction here: the kind and split are checked below and the
    // fields are nlohmann's own output. Skipped for these inserts only.
    // A larger page cache while the rows go in (8 MiB instead of 2): the pages the history rows
    // and the indexes touch stay in memory instead of spilling to the WAL and being read back.
    int64_t cacheSize = 0;
    {
        sql::Statement st(*m_db, "PRAGMA cache_size");
        if (st.step())
            cacheSize = st.int64(0);
    }
    m_db->exec("PRAGMA ignore_check_constraints = ON");
    m_db->exec("PRAGMA cache_size = -8192");
    struct Restore {
        sql::Database& db;
        int64_t cacheSize;
        ~Restore()
        {
            try {
                db.exec("PRAGMA ignore_check_constraints = OFF");
                db.exec("PRAGMA cache_size = " + std::to_string(cacheSize));
            } catch (...) {
            }
        }
    } restore{*m_db, cacheSize};
    const std::string at = now();
    sql::Statement insert(
        *m_db,
        "INSERT INTO records (kind, fields, source_id, source_line, source_offset, chunk_index, "
        "chunk_overlap, synthetic, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    // The operation first, so each batch of new records gets its history rows as it goes ("removed:
    // true -> false", so undo takes them out like any other change); its summary at the end.
    json p = params.is_object() ? params : json::object();
    if (sourceId > 0)
        p["source_id"] = sourceId;
    const int64_t op = insertOperation(operationKind, who, p, json::object());
    sql::Statement history(
        *m_db,
        "INSERT INTO history (operation_id, record_id, who, at, field, old_value, new_value) "
        "SELECT ?, id, ?, ?, 'removed', 'true', 'false' FROM records WHERE id BETWEEN ? AND ?");
    int64_t count = 0;
    int64_t firstId = 0, lastId = 0, recorded = 0;  // history written up to id `recorded`
    std::string fieldsText;                         // reused: one allocation for all rows
    auto recordHistory = [&] {
        if (count == 0 || lastId <= recorded)
            return;
        history.bind(1, op).bind(2, who).bind(3, at).bind(4,
                                                          recorded == 0 ? firstId : recorded + 1);
        history.bind(5, lastId);
        history.run();
        recorded = lastId;
    };
    // Each record's review state row (defaults but the split), by batches as well: one statement
    // per run of records with the same split, so about one per 1,024 records instead of one each.
    sql::Statement state(*m_db, "INSERT INTO record_state (id, split, updated_at) SELECT id, ?, ? "
                                "FROM records WHERE id BETWEEN ? AND ?");
    int64_t stated = 0;      // state rows written up to id `stated`
    std::string stateSplit;  // the split of the records since then
    auto recordState = [&] {
        if (count == 0 || lastId <= stated)
            return;
        state.bind(1, stateSplit).bind(2, at).bind(3, stated == 0 ? firstId : stated + 1);
        state.bind(4, lastId);
        state.run();
        stated = lastId;
    };
    produce([&](const NewRecord& r) {
        if (!isKnownSplit(r.split))
            tb::fail(m_path, ": unknown split \"", r.split, "\" (train, validation or general)");
        if (!isRecordKind(r.kind))
            tb::fail(m_path, ": unknown record kind \"", r.kind,
                     "\" (alpaca, chat, prompt-completion or text)");
        if (r.split != stateSplit) {
            recordState();  // the records before this one, with their split
            stateSplit = r.split;
        }
        fieldsText.clear();
        appendJson(fieldsText, r.fields);  // dump()'s bytes, faster
        insert.bind(1, r.kind).bind(2, fieldsText);
        const int64_t source = r.sourceId > 0 ? r.sourceId : sourceId;
        if (source > 0)
            insert.bind(3, source);
        else
            insert.bindNull(3);
        insert.bind(4, r.sourceLine)
            .bind(5, r.sourceOffset)
            .bind(6, int64_t(r.chunkIndex))
            .bind(7, int64_t(r.chunkOverlap))
            .bind(8, int64_t(r.synthetic ? 1 : 0))
            .bind(9, at);
        insert.run();
        lastId = m_db->lastInsertId();
        if (count == 0)
            firstId = lastId;
        if (++count % 1024 == 0) {
            recordHistory();  // while the rows' pages are still in SQLite's cache
            recordState();
        }
    });
    recordHistory();
    recordState();
    sql::Statement summary(*m_db, "UPDATE operations SET summary = ? WHERE id = ?");
    summary.bind(1, json{{"records", count}, {"first_id", firstId}, {"last_id", lastId}}.dump());
    summary.bind(2, op);
    summary.run();
    for (const Change& c : changes)
        writeChange(op, who, at, c);
    tx.commit();
    return Inserted{count, firstId, op};
}

int64_t DataStore::addRecordsStreaming(
    int64_t sourceId, const std::string& who,
    const std::function<void(const std::function<void(const NewRecord&)>&)>& produce,
    const std::string& operationKind, int64_t* operationId)
{
    const Inserted inserted =
        insertRecords(sourceId, who, produce, operationKind, json::object(), {});
    if (operationId)
        *operationId = inserted.operationId;
    return inserted.count;
}

int64_t DataStore::addRecordsWithChanges(const std::vector<NewRecord>& records,
                                         const std::string& who, const std::string& operationKind,
                                         const json& params, const std::vector<Change>& changes)
{
    return insertRecords(
               0, who,
               [&](const auto& sink) {
                   for (const NewRecord& r : records)
                       sink(r);
               },
               operationKind, params, changes)
        .operationId;
}

std::vector<int64_t> DataStore::addRecords(const std::vector<NewRecord>& records, int64_t sourceId,
                                           const std::string& who, const std::string& operationKind)
{
    const Inserted inserted = insertRecords(sourceId, who,
                                            [&](const auto& sink) {
                                                for (const NewRecord& r : records)
                                                    sink(r);
                                            },
                                            operationKind, json::object(), {});
    // Ids of one transaction's inserts are consecutive: nothing else writes inside it.
    std::vector<int64_t> ids(static_cast<size_t>(inserted.count));
    for (int64_t i = 0; i < inserted.count; ++i)
        ids[size_t(i)] = inserted.firstId + i;
    return ids;
}

namespace {

// Current value of a change target ("status", "split", "removed", "fields.<key>").
json readField(sql::Database& db, int64_t recordId, const std::string& field)
{
    if (isComparisonField(field))
        return readComparisonField(db, field);
    if (isPairField(field))
        return readPairField(db, field);
    // One statement per connection, reused for every change.
    const bool ofFields = field.rfind("fields.", 0) == 0;
    sql::Statement& st =
        db.cached(ofFields ? "SELECT fields FROM records WHERE id = ?"
                           : "SELECT status, split, removed FROM record_state WHERE id = ?");
    const sql::ResetOnExit done(st);
    st.bind(1, recordId);
    if (!st.step())
        tb::fail(db.path(), ": no record with id ", recordId);
    if (field == "status")
        return st.text(0);
    if (field == "split")
        return st.text(1);
    if (field == "removed")
        return st.int64(2) != 0;
    if (ofFields) {
        const json fields = json::parse(st.text(0));
        const std::string key = field.substr(7);
        return fields.contains(key) ? fields[key] : json();
    }
    tb::fail(db.path(), ": unknown record field \"", field, "\"");
}

void writeField(sql::Database& db, int64_t recordId, const std::string& field, const json& value,
                const std::string& at)
{
    if (isComparisonField(field)) {
        writeComparisonField(db, field, value);
    } else if (isPairField(field)) {
        writePairField(db, field, value);
    } else if (field == "status") {
        if (!value.is_string() || !parseReviewStatus(value.get<std::string>()))
            tb::fail(db.path(), ": record ", recordId, ": invalid status ", value.dump());
        sql::Statement& st =
            db.cached("UPDATE record_state SET status = ?, updated_at = ? WHERE id = ?");
        st.bind(1, value.get<std::string>()).bind(2, at).bind(3, recordId);
        st.run();
    } else if (field == "split") {
        if (!value.is_string() || !isKnownSplit(value.get<std::string>()))
            tb::fail(db.path(), ": record ", recordId, ": invalid split ", value.dump(),
                     " (train, validation or general)");
        sql::Statement& st =
            db.cached("UPDATE record_state SET split = ?, updated_at = ? WHERE id = ?");
        st.bind(1, value.get<std::string>()).bind(2, at).bind(3, recordId);
        st.run();
    } else if (field == "removed") {
        sql::Statement& st =
            db.cached("UPDATE record_state SET removed = ?, updated_at = ? WHERE id = ?");
        st.bind(1, int64_t(value.is_boolean() && value.get<bool>() ? 1 : 0))
            .bind(2, at)
            .bind(3, recordId);
        st.run();
    } else if (field.rfind("fields.", 0) == 0) {
        sql::Statement& read = db.cached("SELECT fields FROM records WHERE id = ?");
        const sql::ResetOnExit readDone(read);
        read.bind(1, recordId);
        if (!read.step())
            tb::fail(db.path(), ": no record with id ", recordId);
        json fields = json::parse(read.text(0));
        read.reset();  // before the UPDATE of the same row
        const std::string key = field.substr(7);
        if (value.is_null())
            fields.erase(key);
        else
            fields[key] = value;
        // Token counts belong to the old text; they are recounted by the next statistics run.
        sql::Statement& st = db.cached("UPDATE records SET fields = ? WHERE id = ?");
        st.bind(1, fields.dump()).bind(2, recordId);
        st.run();
        sql::Statement& state = db.cached("UPDATE record_state SET token_count = -1, "
                                          "field_tokens = NULL, updated_at = ? WHERE id = ?");
        state.bind(1, at).bind(2, recordId);
        state.run();
    } else {
        tb::fail(db.path(), ": unknown record field \"", field, "\"");
    }
}

}  // namespace

void DataStore::writeChange(int64_t operationId, const std::string& who, const std::string& at,
                            const Change& change)
{
    const json old =
        change.current ? *change.current : readField(*m_db, change.recordId, change.field);
    if (old == change.value)
        return;
    writeField(*m_db, change.recordId, change.field, change.value, at);
    sql::Statement& h = m_db->cached(
        "INSERT INTO history (operation_id, record_id, who, at, field, old_value, new_value) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)");
    h.bind(1, operationId)
        .bind(2, change.recordId)
        .bind(3, who)
        .bind(4, at)
        .bind(5, change.field)
        .bind(6, old.dump())
        .bind(7, change.value.dump());
    h.run();
}

int64_t DataStore::applyOperation(const std::string& kind, const std::string& who,
                                  const json& params, const json& summary,
                                  const std::vector<Change>& changes)
{
    sql::Transaction tx(*m_db);
    const int64_t op = insertOperation(kind, who, params, summary);
    const std::string at = now();
    for (const Change& c : changes)
        writeChange(op, who, at, c);
    tx.commit();
    return op;
}

int64_t DataStore::applyOperationWith(const std::string& kind, const std::string& who,
                                      const json& params, const json& summary,
                                      const std::function<std::vector<Change>(int64_t)>& prepare)
{
    sql::Transaction tx(*m_db);
    const int64_t op = insertOperation(kind, who, params, summary);
    const std::vector<Change> changes = prepare(op);
    const std::string at = now();
    for (const Change& c : changes)
        writeChange(op, who, at, c);
    tx.commit();
    return op;
}

int64_t DataStore::applyPrepared(const std::string& kind, const std::string& who,
                                 const json& params,
                                 const std::function<Prepared(int64_t)>& prepare)
{
    sql::Transaction tx(*m_db);
    const int64_t op = insertOperation(kind, who, params, json::object());
    const Prepared prepared = prepare(op);
    const std::string at = now();
    for (const Change& c : prepared.changes)
        writeChange(op, who, at, c);
    sql::Statement summary(*m_db, "UPDATE operations SET summary = ? WHERE id = ?");
    summary.bind(1, prepared.summary.dump()).bind(2, op);
    summary.run();
    tx.commit();
    return op;
}

void DataStore::editField(int64_t recordId, const std::string& field, const json& value,
                          const std::string& who)
{
    if (field.empty())
        tb::fail(m_path, ": record ", recordId, ": empty field name");
    applyOperation("edit", who, json{{"record_id", recordId}, {"field", field}}, json::object(),
                   {Change{recordId, "fields." + field, value}});
}

void DataStore::setStatus(int64_t recordId, ReviewStatus status, const std::string& who)
{
    applyOperation("status", who, json{{"record_id", recordId}}, json::object(),
                   {Change{recordId, "status", reviewStatusName(status)}});
}

void DataStore::setSplit(int64_t recordId, const std::string& split, const std::string& who)
{
    applyOperation("split", who, json{{"record_id", recordId}}, json::object(),
                   {Change{recordId, "split", split}});
}

void DataStore::addNote(int64_t recordId, const std::string& author, const std::string& text)
{
    readField(*m_db, recordId, "status");  // checks the record exists
    insertNote(recordId, author, text, now());
}

void DataStore::insertNote(int64_t recordId, const std::string& author, const std::string& text,
                           const std::string& at)
{
    sql::Statement st(*m_db, "INSERT INTO notes (record_id, author, text, at) VALUES (?, ?, ?, ?)");
    st.bind(1, recordId).bind(2, author).bind(3, text).bind(4, at);
    st.run();
}

void DataStore::updateStatusFromLabels(int64_t op, int64_t recordId, const std::string& who,
                                       const std::string& at)
{
    sql::Statement adj(*m_db, "SELECT adjudicated FROM record_state WHERE id = ?");
    adj.bind(1, recordId);
    adj.step();
    if (adj.int64(0) != 0)
        return;  // an adjudicator's decision stands
    sql::Statement st(
        *m_db, "SELECT DISTINCT decision FROM labels WHERE record_id = ? AND decision != ''");
    st.bind(1, recordId);
    std::vector<std::string> decisions;
    while (st.step())
        decisions.push_back(st.text(0));
    std::string status = "pending";
    if (decisions.size() == 1)
        status = decisions[0] == "accept" ? "accepted" : "rejected";
    else if (decisions.size() > 1)
        status = "needs-adjudication";
    writeChange(op, who, at, Change{recordId, "status", status});
}

void DataStore::review(int64_t recordId, const std::string& annotator, const std::string& decision,
                       std::optional<int> rating, const std::string& note)
{
    if (annotator.empty())
        tb::fail(m_path, ": review of record ", recordId, ": the annotator's name is empty");
    if (!decision.empty() && decision != "accept" && decision != "reject")
        tb::fail(m_path, ": review of record ", recordId, ": decision \"", decision,
                 "\" is not accept or reject");
    if (rating && (*rating < 1 || *rating > 5))
        tb::fail(m_path, ": review of record ", recordId, ": rating ", *rating, " is outside 1-5");
    if (decision.empty() && !rating)
        tb::fail(m_path, ": review of record ", recordId, ": neither a decision nor a rating");
    sql::Transaction tx(*m_db);
    readField(*m_db, recordId, "status");
    const std::string at = now();
    const int64_t op = insertOperation("review", annotator,
                                       json{{"record_id", recordId},
                                            {"decision", decision},
                                            {"rating", rating ? json(*rating) : json()}},
                                       json::object());
    // Keep an earlier decision when only a rating arrives, and an earlier rating when only a
    // decision does.
    sql::Statement up(
        *m_db,
        "INSERT INTO labels (record_id, annotator, decision, rating, at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (record_id, annotator) DO UPDATE SET "
        "decision = CASE WHEN excluded.decision = '' THEN decision ELSE excluded.decision END, "
        "rating = coalesce(excluded.rating, rating), at = excluded.at");
    up.bind(1, recordId)
        .bind(2, annotator)
        .bind(3, decision)
        .bind(4, rating ? std::optional<int64_t>(*rating) : std::nullopt)
        .bind(5, at);
    up.run();
    updateStatusFromLabels(op, recordId, annotator, at);
    if (!note.empty())
        insertNote(recordId, annotator, note, at);
    tx.commit();
}

void DataStore::adjudicate(int64_t recordId, const std::string& decision, const std::string& who)
{
    if (decision != "accept" && decision != "reject")
        tb::fail(m_path, ": adjudication of record ", recordId, ": decision \"", decision,
                 "\" is not accept or reject");
    sql::Transaction tx(*m_db);
    const std::string at = now();
    const int64_t op = insertOperation(
        "adjudicate", who, json{{"record_id", recordId}, {"decision", decision}}, json::object());
    writeChange(op, who, at,
                Change{recordId, "status", decision == "accept" ? "accepted" : "rejected"});
    sql::Statement st(*m_db, "UPDATE record_state SET adjudicated = 1 WHERE id = ?");
    st.bind(1, recordId);
    st.run();
    tx.commit();
}

int64_t DataStore::undo(int64_t operationId, const std::string& who)
{
    sql::Transaction tx(*m_db);
    sql::Statement op(*m_db, "SELECT kind, undone_by FROM operations WHERE id = ?");
    op.bind(1, operationId);
    if (!op.step())
        tb::fail(m_path, ": no operation with id ", operationId);
    const std::string kind = op.text(0);
    if (!op.isNull(1))
        tb::fail(m_path, ": operation ", operationId, " (", kind,
                 ") was already undone by operation ", op.int64(1));
    if (kind == "undo")
        tb::fail(m_path, ": operation ", operationId, " is itself an undo; undo is not undoable");
    struct Row {
        int64_t recordId;
        std::string field;
        json oldValue, newValue;
    };
    std::vector<Row> rows;
    sql::Statement h(
        *m_db, "SELECT record_id, field, old_value, new_value FROM history WHERE operation_id = ? "
               "ORDER BY id DESC");
    h.bind(1, operationId);
    while (h.step())
        rows.push_back(Row{h.int64(0), h.text(1), parseOrNull(h, 2), parseOrNull(h, 3)});
    // Only reverse what still holds the operation's value: a later edit must be undone first.
    for (const Row& r : rows) {
        const json current = readField(*m_db, r.recordId, r.field);
        if (current != r.newValue)
            tb::fail(m_path, ": cannot undo operation ", operationId, " (", kind,
                     "): ", r.recordId > 0 ? cat("record ", r.recordId, "'s ") : std::string(),
                     r.field, " changed since (now ", current.dump(),
                     "); undo the later operation first");
    }
    const int64_t undoOp =
        insertOperation("undo", who, json{{"operation_id", operationId}, {"kind", kind}},
                        json{{"changes", rows.size()}});
    const std::string at = now();
    for (const Row& r : rows)
        writeChange(undoOp, who, at, Change{r.recordId, r.field, r.oldValue});
    if (kind == "adjudicate") {
        sql::Statement st(*m_db, "UPDATE record_state SET adjudicated = 0 WHERE id = ?");
        for (const Row& r : rows) {
            st.bind(1, r.recordId);
            st.run();
        }
    }
    sql::Statement mark(*m_db, "UPDATE operations SET undone_by = ? WHERE id = ?");
    mark.bind(1, undoOp).bind(2, operationId);
    mark.run();
    tx.commit();
    return undoOp;
}

void DataStore::replaceScanFlags(const std::vector<ScanFlag>& flags, const std::string& who,
                                 const json& summary)
{
    replaceScanFlags(who, [&](const ScanFlagSink& sink) {
        for (const ScanFlag& f : flags)
            sink(f);
        return summary;
    });
}

void DataStore::replaceScanFlags(const std::string& who,
                                 const std::function<json(const ScanFlagSink&)>& produce)
{
    m_db->exec("CREATE TEMP TABLE IF NOT EXISTS scan_spill (record_id INTEGER, kind TEXT, "
               "field TEXT, offset INTEGER, length INTEGER, masked TEXT)");
    m_db->exec("DELETE FROM temp.scan_spill");
    json summary;
    {
        // One savepoint around the spill's inserts (one commit of the temporary database, not
        // one per flag); it reads the main database but writes nothing there.
        sql::Statement st(*m_db, "INSERT INTO temp.scan_spill (record_id, kind, field, offset, "
                                 "length, masked) VALUES (?, ?, ?, ?, ?, ?)");
        m_db->exec("SAVEPOINT scan_spill");
        try {
            summary = produce([&](const ScanFlag& f) {
                st.bind(1, f.recordId)
                    .bind(2, f.kind)
                    .bind(3, f.field)
                    .bind(4, f.offset)
                    .bind(5, f.length)
                    .bind(6, f.masked);
                st.run();
            });
        } catch (...) {
            m_db->exec("ROLLBACK TO scan_spill");
            m_db->exec("RELEASE scan_spill");
            throw;
        }
        m_db->exec("RELEASE scan_spill");
    }
    sql::Transaction tx(*m_db);
    m_db->exec("DELETE FROM scan_flags");
    m_db->exec("INSERT INTO scan_flags (record_id, kind, field, offset, length, masked) "
               "SELECT record_id, kind, field, offset, length, masked FROM temp.scan_spill "
               "ORDER BY rowid");
    insertOperation("scan", who, json::object(), summary);
    tx.commit();
    m_db->exec("DELETE FROM temp.scan_spill");
}

namespace {

// The tokenizer id the stored counts belong to (meta's "tokenizer").
void storeTokenizerId(sql::Database& db, const std::string& tokenizerId)
{
    sql::Statement meta(db, "INSERT INTO meta (key, value) VALUES ('tokenizer', ?) "
                            "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    meta.bind(1, tokenizerId);
    meta.run();
}

}  // namespace

void DataStore::setTokenCounts(const std::string& tokenizerId,
                               const std::vector<TokenCount>& counts)
{
    sql::Transaction tx(*m_db);
    sql::Statement st(*m_db,
                      "UPDATE record_state SET token_count = ?, field_tokens = ? WHERE id = ?");
    for (const TokenCount& c : counts) {
        st.bind(1, c.total).bind(2, c.perField.dump()).bind(3, c.recordId);
        st.run();
    }
    storeTokenizerId(*m_db, tokenizerId);
    tx.commit();
}

void DataStore::updateTokenCounts(
    const std::string& tokenizerId, int64_t batch,
    const std::function<std::vector<TokenCount>(const std::vector<CountedRecord>&)>& count)
{
    if (batch < 1)
        fail(m_path, ": token counts are read in batches of at least 1 record, not ", batch);
    // Counts stored for this tokenizer on every live record: the pass only reads them (the
    // studio re-summarises on each max-length edit), so it takes no write lock that reviews and
    // imports would wait for.
    bool writes = this->tokenizerId() != tokenizerId;
    if (!writes) {
        sql::Statement uncounted(*m_db, "SELECT EXISTS (SELECT 1 FROM record_state WHERE "
                                        "removed = 0 AND token_count < 0)");
        uncounted.step();
        writes = uncounted.int64(0) != 0;
    }
    sql::Transaction tx(*m_db,
                        writes ? sql::Transaction::Kind::Write : sql::Transaction::Kind::Read);
    // Each batch is read to its end before its counts are written, so no read runs across the
    // updates of the rows it visits.
    sql::Statement read(*m_db,
                        "SELECT r.id, r.kind, r.fields, t.token_count, t.field_tokens FROM records "
                        "r JOIN record_state t ON t.id = r.id WHERE t.removed = 0 AND t.id > ? "
                        "ORDER BY t.id LIMIT ?");
    sql::Statement write(*m_db,
                         "UPDATE record_state SET token_count = ?, field_tokens = ? WHERE id = ?");
    std::vector<CountedRecord> rows;
    for (int64_t after = std::numeric_limits<int64_t>::min();;) {
        rows.clear();
        read.reset();
        read.bind(1, after).bind(2, batch);
        while (read.step()) {
            CountedRecord& r = rows.emplace_back();
            r.record = {read.int64(0), read.text(1), json::parse(read.text(2))};
            r.tokenCount = read.int64(3);
            r.perField = parseOrNull(read, 4);
        }
        if (rows.empty())
            break;
        after = rows.back().record.id;
        for (const TokenCount& c : count(rows)) {
            write.bind(1, c.total).bind(2, c.perField.dump()).bind(3, c.recordId);
            write.run();
        }
        if (int64_t(rows.size()) < batch)
            break;
    }
    if (writes)
        storeTokenizerId(*m_db, tokenizerId);
    tx.commit();
}

std::string DataStore::tokenizerId() const
{
    sql::Statement st(*m_db, "SELECT value FROM meta WHERE key = 'tokenizer'");
    return st.step() ? st.text(0) : std::string();
}

}  // namespace tb
