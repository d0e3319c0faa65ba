// DataStore's queries: records by filter and order (the studio's table reads ordered ids, then rows
// by id), sources, operations, history, labels, notes and scan flags.
#include "data/store/store.h"

#include "data/store/sqlite.h"
#include "util/error.h"

namespace tb {

using nlohmann::json;

namespace {

// A record's review state (t) with its fields and provenance (r): every record has both rows. A
// query that reads no column of r reads record_state alone (its indexes cover split and status),
// never touching the records' wide rows.
const char* const kFromState = " FROM record_state t";
const char* const kFromBoth = " FROM record_state t JOIN records r ON r.id = t.id";

const char* const kRecordColumns =
    "r.id, r.kind, r.fields, r.source_id, coalesce(s.path, ''), r.source_line, r.source_offset, "
    "r.chunk_index, "
    "r.chunk_overlap, r.synthetic, t.status, t.split, t.token_count, t.removed, "
    "(SELECT round(avg(rating)) FROM labels l WHERE l.record_id = t.id AND l.rating IS NOT NULL), "
    "(SELECT group_concat(DISTINCT kind) FROM scan_flags f WHERE f.record_id = t.id)";

StoredRecord readRecord(const sql::Statement& st)
{
    StoredRecord r;
    r.id = st.int64(0);
    r.kind = st.text(1);
    r.fields = json::parse(st.text(2));
    r.sourceId = st.isNull(3) ? 0 : st.int64(3);
    r.sourcePath = st.text(4);
    r.sourceLine = st.int64(5);
    r.sourceOffset = st.int64(6);
    r.chunkIndex = int32_t(st.int64(7));
    r.chunkOverlap = int32_t(st.int64(8));
    r.synthetic = st.int64(9) != 0;
    r.status = parseReviewStatus(st.text(10)).value_or(ReviewStatus::Pending);
    r.split = st.text(11);
    r.tokenCount = st.int64(12);
    r.removed = st.int64(13) != 0;
    if (!st.isNull(14))
        r.rating = int(st.int64(14));
    const std::string flags = st.text(15);
    for (size_t begin = 0; begin < flags.size();) {
        size_t end = flags.find(',', begin);
        if (end == std::string::npos)
            end = flags.size();
        r.flags.push_back(flags.substr(begin, end - begin));
        begin = end + 1;
    }
    return r;
}

std::string whereClause(const RecordQuery& q, std::vector<std::string>& binds)
{
    std::string w = " WHERE 1";
    if (!q.includeRemoved)
        w += " AND t.removed = 0";
    if (q.status) {
        w += " AND t.status = ?";
        binds.push_back(reviewStatusName(*q.status));
    }
    if (q.split) {
        w += " AND t.split = ?";
        binds.push_back(*q.split);
    }
    if (q.synthetic)
        w += *q.synthetic ? " AND r.synthetic = 1" : " AND r.synthetic = 0";
    if (q.sourceId)
        w += " AND r.source_id = " + std::to_string(*q.sourceId);
    if (q.flaggedOnly)
        w += " AND EXISTS (SELECT 1 FROM scan_flags f WHERE f.record_id = t.id)";
    if (!q.contains.empty()) {
        w += " AND instr(lower(r.fields), lower(?)) > 0";
        binds.push_back(q.contains);
    }
    return w;
}

std::string orderClause(const RecordQuery& q)
{
    // By t.id, not r.id: the same value, but SQLite then reads record_state first (through an index
    // of split or status in id order where the filter has one) and needs no sort; ORDER BY r.id
    // after an index search of t sorts every row, fields and all.
    const char* column = "t.id";
    switch (q.order) {
    case RecordOrder::Id:
        column = "t.id";
        break;
    case RecordOrder::Status:
        column = "t.status";
        break;
    case RecordOrder::TokenCount:
        column = "t.token_count";
        break;
    case RecordOrder::Split:
        column = "t.split";
        break;
    case RecordOrder::Kind:
        column = "r.kind";
        break;
    case RecordOrder::Synthetic:
        column = "r.synthetic";
        break;
    }
    std::string o = std::string(" ORDER BY ") + column + (q.descending ? " DESC" : " ASC");
    if (q.order != RecordOrder::Id)
        o += std::string(", t.id") + (q.descending ? " DESC" : " ASC");
    if (q.limit >= 0 || q.offset > 0)
        o += " LIMIT " + std::to_string(q.limit) + " OFFSET " + std::to_string(q.offset);
    return o;
}

json parseOrNull(const sql::Statement& st, int column)
{
    return st.isNull(column) ? json() : json::parse(st.text(column));
}

// Whether the query's filter or order reads a column of records (r).
bool readsRecords(const RecordQuery& q, bool ordered)
{
    return q.synthetic || q.sourceId || !q.contains.empty() ||
           (ordered && (q.order == RecordOrder::Kind || q.order == RecordOrder::Synthetic));
}

// "SELECT <columns> FROM record_state t [JOIN records r] <joins>" with the query's filter (and,
// when ordered, its order and page), bound. `withRecords`: the columns read r.
sql::Statement recordStatement(sql::Database& db, const std::string& columns,
                               const RecordQuery& query, bool ordered, bool withRecords,
                               const char* joins = "")
{
    std::vector<std::string> binds;
    const bool both = withRecords || readsRecords(query, ordered);
    sql::Statement st(db, "SELECT " + columns + (both ? kFromBoth : kFromState) + joins +
                              whereClause(query, binds) +
                              (ordered ? orderClause(query) : std::string()));
    for (size_t i = 0; i < binds.size(); ++i)
        st.bind(int(i + 1), binds[i]);
    return st;
}

}  // namespace

int64_t DataStore::count(const RecordQuery& query) const
{
    sql::Statement st = recordStatement(*m_db, "count(*)", query, false, false);
    st.step();
    return st.int64(0);
}

void DataStore::forEach(const RecordQuery& query,
                        const std::function<bool(const StoredRecord&)>& visit) const
{
    sql::Statement st = recordStatement(*m_db, kRecordColumns, query, true, true,
                                        " LEFT JOIN sources s ON s.id = r.source_id");
    while (st.step())
        if (!visit(readRecord(st)))
            break;
}

void DataStore::forEachFields(const RecordQuery& query,
                              const std::function<bool(const RecordFields&)>& visit) const
{
    sql::Statement st = recordStatement(*m_db, "r.id, r.kind, r.fields", query, true, true);
    RecordFields r;
    while (st.step()) {
        r.id = st.int64(0);
        r.kind = st.text(1);
        r.fields = json::parse(st.text(2));
        if (!visit(r))
            break;
    }
}

RecordFields DataStore::recordFields(int64_t id) const
{
    sql::Statement st(*m_db, "SELECT r.id, r.kind, r.fields FROM records r WHERE r.id = ?");
    st.bind(1, id);
    if (!st.step())
        tb::fail(m_path, ": no record with id ", id);
    return RecordFields{st.int64(0), st.text(1), json::parse(st.text(2))};
}

std::vector<StoredRecord> DataStore::records(const RecordQuery& query) const
{
    std::vector<StoredRecord> out;
    forEach(query, [&](const StoredRecord& r) {
        out.push_back(r);
        return true;
    });
    return out;
}

std::vector<int64_t> DataStore::recordIds(const RecordQuery& query) const
{
    sql::Statement st = recordStatement(*m_db, "t.id", query, true, false);
    std::vector<int64_t> ids;
    while (st.step())
        ids.push_back(st.int64(0));
    return ids;
}

std::vector<json> DataStore::fieldTokenCounts(const RecordQuery& query) const
{
    sql::Statement st = recordStatement(*m_db, "t.field_tokens", query, true, false);
    std::vector<json> out;
    while (st.step())
        out.push_back(parseOrNull(st, 0));
    return out;
}

StoredRecord DataStore::record(int64_t id) const
{
    sql::Statement st(*m_db, std::string("SELECT ") + kRecordColumns + kFromBoth +
                                 " LEFT JOIN sources s ON s.id = r.source_id WHERE t.id = ?");
    st.bind(1, id);
    if (!st.step())
        tb::fail(m_path, ": no record with id ", id);
    return readRecord(st);
}

std::vector<SourceInfo> DataStore::sources() const
{
    sql::Statement st(
        *m_db,
        "SELECT id, path, format, sha256, records, rejected, imported_at FROM sources ORDER BY id");
    std::vector<SourceInfo> out;
    while (st.step())
        out.push_back(SourceInfo{st.int64(0), st.text(1), st.text(2), st.text(3), st.int64(4),
                                 st.int64(5), st.text(6)});
    return out;
}

std::vector<OperationInfo> DataStore::operations() const
{
    sql::Statement st(*m_db, "SELECT o.id, o.kind, o.who, o.at, o.params, o.summary, o.undone_by, "
                             "(SELECT count(*) FROM history h WHERE h.operation_id = o.id) FROM "
                             "operations o ORDER BY o.id");
    std::vector<OperationInfo> out;
    while (st.step())
        out.push_back(OperationInfo{st.int64(0), st.text(1), st.text(2), st.text(3),
                                    json::parse(st.text(4)), json::parse(st.text(5)), st.int64(7),
                                    !st.isNull(6)});
    return out;
}

std::vector<HistoryEntry> DataStore::history(std::optional<int64_t> recordId) const
{
    sql::Statement st(
        *m_db, recordId
                   ? "SELECT id, operation_id, record_id, who, at, field, old_value, new_value "
                     "FROM history WHERE record_id = ? ORDER BY id"
                   : "SELECT id, operation_id, record_id, who, at, field, old_value, new_value "
                     "FROM history ORDER BY id");
    if (recordId)
        st.bind(1, *recordId);
    std::vector<HistoryEntry> out;
    while (st.step())
        out.push_back(HistoryEntry{st.int64(0), st.int64(1), st.int64(2), st.text(3), st.text(4),
                                   st.text(5), parseOrNull(st, 6), parseOrNull(st, 7)});
    return out;
}

std::vector<AnnotatorLabel> DataStore::labels(std::optional<int64_t> recordId) const
{
    sql::Statement st(*m_db, recordId
                                 ? "SELECT record_id, annotator, decision, rating, at FROM labels "
                                   "WHERE record_id = ? ORDER BY annotator"
                                 : "SELECT record_id, annotator, decision, rating, at FROM labels "
                                   "ORDER BY record_id, annotator");
    if (recordId)
        st.bind(1, *recordId);
    std::vector<AnnotatorLabel> out;
    while (st.step()) {
        AnnotatorLabel l{st.int64(0), st.text(1), st.text(2), std::nullopt, st.text(4)};
        if (!st.isNull(3))
            l.rating = int(st.int64(3));
        out.push_back(l);
    }
    return out;
}

std::vector<Note> DataStore::notes(int64_t recordId) const
{
    sql::Statement st(
        *m_db, "SELECT id, record_id, author, text, at FROM notes WHERE record_id = ? ORDER BY id");
    st.bind(1, recordId);
    std::vector<Note> out;
    while (st.step())
        out.push_back(Note{st.int64(0), st.int64(1), st.text(2), st.text(3), st.text(4)});
    return out;
}

std::vector<ScanFlag> DataStore::scanFlags(std::optional<int64_t> recordId) const
{
    sql::Statement st(
        *m_db, recordId ? "SELECT record_id, kind, field, offset, length, masked FROM scan_flags "
                          "WHERE record_id = ? ORDER BY record_id, offset"
                        : "SELECT record_id, kind, field, offset, length, masked FROM scan_flags "
                          "ORDER BY record_id, offset");
    if (recordId)
        st.bind(1, *recordId);
    std::vector<ScanFlag> out;
    while (st.step())
        out.push_back(
            ScanFlag{st.int64(0), st.text(1), st.text(2), st.int64(3), st.int64(4), st.text(5)});
    return out;
}

}  // namespace tb
