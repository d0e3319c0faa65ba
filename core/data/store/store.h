// DataStore: a project's datasets in one SQLite file (WAL): records, sources, annotator labels and
// ratings, notes, an edit history grouped into reversible operations, scan flags, snapshots and
// blind comparisons (data/store/comparisons.h) and preference pairs (data/store/pairs_store.h).
// Every public change is one transaction, so a crash or kill loses no committed edit and never
// leaves a torn one.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tb {

namespace sql {
class Database;
}

enum class ReviewStatus { Pending, Accepted, Rejected, NeedsAdjudication };
const char*
reviewStatusName(ReviewStatus status);  // "pending", "accepted", "rejected", "needs-adjudication"
std::optional<ReviewStatus> parseReviewStatus(const std::string& name);

// A record as it enters the store (import, synthetic generation, entity-pair generation).
struct NewRecord {
    std::string kind;          // alpaca | chat | prompt-completion | text (see data/record.h)
    nlohmann::json fields;     // the record's fields; extra keys (label, ...) kept
    int64_t sourceLine = 0;    // 1-based line in the source file; 0 when not line-based
    int64_t sourceOffset = 0;  // byte offset of the row or chunk in the source file
    int32_t chunkIndex = -1;   // documents: chunk number in its source; -1 otherwise
    int32_t chunkOverlap = 0;  // tokens shared with the previous chunk
    bool synthetic = false;
    std::string split = "train";  // train | validation | general
    int64_t sourceId = 0;         // > 0: overrides the source given to addRecords
};

struct StoredRecord {
    int64_t id = 0;
    std::string kind;
    nlohmann::json fields;
    int64_t sourceId = 0;
    std::string sourcePath;
    int64_t sourceLine = 0;
    int64_t sourceOffset = 0;
    int32_t chunkIndex = -1;
    int32_t chunkOverlap = 0;
    bool synthetic = false;
    ReviewStatus status = ReviewStatus::Pending;
    std::string split = "train";
    int64_t tokenCount = -1;         // tokens of the rendered training text; -1 = not counted yet
    bool removed = false;            // removed by a curation operation (reversible)
    std::optional<int> rating;       // mean of annotators' 1-5 ratings, rounded; none when unrated
    std::vector<std::string> flags;  // scan kinds found in the record
};

// A record's id, kind and fields alone: what dedup and the scan read from every record.
struct RecordFields {
    int64_t id = 0;
    std::string kind;
    nlohmann::json fields;
};

enum class RecordOrder { Id, Status, TokenCount, Split, Kind, Synthetic };

struct RecordQuery {
    std::optional<ReviewStatus> status;
    std::optional<std::string> split;
    std::optional<bool> synthetic;
    std::optional<int64_t> sourceId;
    bool includeRemoved = false;
    bool flaggedOnly = false;
    std::string contains;  // substring of the fields' JSON text (case-insensitive for ASCII)
    RecordOrder order = RecordOrder::Id;
    bool descending = false;
    int64_t offset = 0;
    int64_t limit = -1;  // -1 = all
};

struct SourceInfo {
    int64_t id = 0;
    std::string path;
    std::string format;
    std::string sha256;
    int64_t records = 0;
    int64_t rejected = 0;
    std::string importedAt;
};

struct OperationInfo {
    int64_t id = 0;
    std::string kind;  // import, edit, review, dedup, filter, scan, split, adjudicate, undo, ...
    std::string who;
    std::string at;  // ISO 8601 UTC
    nlohmann::json params;
    nlohmann::json summary;
    int64_t changes = 0;  // history rows
    bool undone = false;
};

struct HistoryEntry {
    int64_t id = 0;
    int64_t operationId = 0;
    int64_t recordId = 0;
    std::string who;
    std::string at;
    std::string field;  // "status", "split", "removed", "fields.output", ...
    nlohmann::json oldValue;
    nlohmann::json newValue;
};

struct AnnotatorLabel {
    int64_t recordId = 0;
    std::string annotator;
    std::string decision;       // accept | reject (empty when only rated)
    std::optional<int> rating;  // 1-5
    std::string at;
};

struct Note {
    int64_t id = 0;
    int64_t recordId = 0;
    std::string author;
    std::string text;
    std::string at;
};

struct ScanFlag {
    int64_t recordId = 0;
    std::string kind;
    std::string field;
    int64_t offset = 0;
    int64_t length = 0;
    std::string masked;
};

class DataStore {
public:
    static constexpr int kSchemaVersion = 4;

    // Opens or creates a store file; runs migrations up to kSchemaVersion in one transaction each.
    // A file that is not SQLite, is corrupt, or comes from a newer Tunebench gets a tb::Error
    // naming it.
    static std::unique_ptr<DataStore> open(const std::string& path, bool create = true);
    // A store created or opened and migrated only up to schema `version` (<= kSchemaVersion): the
    // tests write stores of older versions with it. Only what that version had works on it.
    static std::unique_ptr<DataStore> openAtVersion(const std::string& path, int version);
    ~DataStore();

    const std::string& path() const { return m_path; }
    // How long a change waits for another connection's write (an import, token statistics on a
    // worker) before failing with "database is locked": 10 s by default; a connection on the GUI
    // thread sets it short, so a keypress never freezes the window behind a long job.
    void setBusyTimeout(int milliseconds);
    int schemaVersion() const;

    // --- Writing. Every call is one transaction. `who` names the person or tool for the history.
    // A new source file entry (import). Returns its id.
    int64_t addSource(const std::string& path, const std::string& format,
                      const std::string& sha256);
    // The counts of an import; its file's SHA-256 too unless sha256 is empty.
    void setSource(int64_t sourceId, const std::string& format, int64_t records, int64_t rejected,
                   const std::string& sha256 = "");
    // Runs `body` as one transaction: the store's own transactions inside it become savepoints, so
    // several calls (a source, its records, its counts) commit together or not at all.
    void inTransaction(const std::function<void()>& body);
    // Inserts records in one transaction (an import is all or nothing); returns their ids in order.
    std::vector<int64_t> addRecords(const std::vector<NewRecord>& records, int64_t sourceId,
                                    const std::string& who,
                                    const std::string& operationKind = "import");
    // Streaming variant for large imports: `produce` is called with a sink until it returns; the
    // whole import is still one transaction. Returns the number of records inserted; *operationId,
    // when given, gets the import's operation.
    struct Change;
    int64_t addRecordsStreaming(
        int64_t sourceId, const std::string& who,
        const std::function<void(const std::function<void(const NewRecord&)>&)>& produce,
        const std::string& operationKind = "import", int64_t* operationId = nullptr);
    // Inserts records and applies changes to existing ones as ONE operation and transaction
    // (chunking: new chunk records in, their originals removed; undo reverses both).
    int64_t addRecordsWithChanges(const std::vector<NewRecord>& records, const std::string& who,
                                  const std::string& operationKind, const nlohmann::json& params,
                                  const std::vector<Change>& changes);

    // Replaces one field (a key of the record's fields) and records old/new in the history.
    void editField(int64_t recordId, const std::string& field, const nlohmann::json& value,
                   const std::string& who);
    void setStatus(int64_t recordId, ReviewStatus status, const std::string& who);
    void setSplit(int64_t recordId, const std::string& split, const std::string& who);
    void addNote(int64_t recordId, const std::string& author, const std::string& text);

    // Review: an annotator's accept/reject decision and/or a 1-5 rating. The record's status
    // follows its labels: all decisions agree -> accepted/rejected; they differ ->
    // needs-adjudication. A non-empty note is added by the annotator in the same transaction.
    void review(int64_t recordId, const std::string& annotator, const std::string& decision,
                std::optional<int> rating = std::nullopt, const std::string& note = {});
    // Settles a record in the adjudication queue (or overrides any status) with the final decision.
    void adjudicate(int64_t recordId, const std::string& decision, const std::string& who);

    // --- Operations: a group of recorded changes that `undo` reverses as a whole.
    struct Change {
        int64_t recordId = 0;  // 0 for the comparison fields, which name their item themselves
        std::string field;     // status | split | removed | fields.<key> | compare.item.<id>.<...>
        nlohmann::json value;
        // The field's current value where the caller read it inside the same transaction (an
        // applyPrepared step): the change then skips its own read of it. Empty: it is read.
        std::optional<nlohmann::json> current = std::nullopt;
    };
    // Applies changes as one operation in one transaction; returns the operation id.
    int64_t applyOperation(const std::string& kind, const std::string& who,
                           const nlohmann::json& params, const nlohmann::json& summary,
                           const std::vector<Change>& changes);
    // The same for changes whose targets are inserted in the same transaction: `prepare` gets the
    // new operation's id, writes the rows the changes point to, and returns the changes (the
    // comparison code inserts a verdict, then activates it as a change undo can reverse).
    int64_t applyOperationWith(const std::string& kind, const std::string& who,
                               const nlohmann::json& params, const nlohmann::json& summary,
                               const std::function<std::vector<Change>(int64_t)>& prepare);
    // The same where the changes and the summary both come from reading the store: `prepare`
    // runs inside the transaction (what it reads cannot change before the changes are written,
    // so it may fill Change::current), gets the operation's id, and returns the summary and the
    // changes.
    struct Prepared {
        nlohmann::json summary = nlohmann::json::object();
        std::vector<Change> changes;
    };
    int64_t applyPrepared(const std::string& kind, const std::string& who,
                          const nlohmann::json& params,
                          const std::function<Prepared(int64_t)>& prepare);
    // Reverses every change of an operation (newest first) as a new "undo" operation. Throws when
    // the operation was already undone or a later change touched the same record fields.
    int64_t undo(int64_t operationId, const std::string& who);

    void replaceScanFlags(const std::vector<ScanFlag>& flags, const std::string& who,
                          const nlohmann::json& summary);
    // The same for flags too many to hold: `produce` calls its sink with every flag and returns
    // the operation's summary. The flags wait in a temporary table of this connection (written
    // while `produce` may read the store) and replace the old ones in one transaction at the
    // end, so a failure or cancel inside `produce` leaves the store as it was.
    using ScanFlagSink = std::function<void(const ScanFlag&)>;
    void replaceScanFlags(const std::string& who,
                          const std::function<nlohmann::json(const ScanFlagSink&)>& produce);
    // Stores token counts (rendered total and per field) for a tokenizer id; one transaction.
    struct TokenCount {
        int64_t recordId = 0;
        int64_t total = 0;
        nlohmann::json perField;  // {"instruction": 12, ...}
    };
    void setTokenCounts(const std::string& tokenizerId, const std::vector<TokenCount>& counts);
    // The same streamed (data stats): `count` gets the live records in id order, up to `batch` at
    // a time, each with its stored counts (tokenCount -1 and perField null where it has none), and
    // returns the counts to store for any of them; the tokenizer id is stored at the end. One
    // transaction: a throw inside `count` (a cancel) leaves the store as it was.
    struct CountedRecord {
        RecordFields record;
        int64_t tokenCount = -1;
        nlohmann::json perField;
    };
    void updateTokenCounts(
        const std::string& tokenizerId, int64_t batch,
        const std::function<std::vector<TokenCount>(const std::vector<CountedRecord>&)>& count);
    std::string tokenizerId() const;  // of the stored counts; "" when none

    // --- Reading.
    int64_t count(const RecordQuery& query = {}) const;
    std::vector<StoredRecord> records(const RecordQuery& query = {}) const;
    StoredRecord record(int64_t id) const;  // throws when there is no such record
    std::vector<int64_t> recordIds(const RecordQuery& query = {}) const;
    // Visits records in query order without holding them all; return false to stop.
    void forEach(const RecordQuery& query,
                 const std::function<bool(const StoredRecord&)>& visit) const;
    // The same with only id, kind and fields, none of forEach's joins and per-record lookups.
    void forEachFields(const RecordQuery& query,
                       const std::function<bool(const RecordFields&)>& visit) const;
    RecordFields recordFields(int64_t id) const;  // throws when there is no such record
    std::vector<nlohmann::json> fieldTokenCounts(const RecordQuery& query = {}) const;

    std::vector<SourceInfo> sources() const;
    std::vector<OperationInfo> operations() const;
    std::vector<HistoryEntry> history(std::optional<int64_t> recordId = std::nullopt) const;
    std::vector<AnnotatorLabel> labels(std::optional<int64_t> recordId = std::nullopt) const;
    std::vector<Note> notes(int64_t recordId) const;
    std::vector<ScanFlag> scanFlags(std::optional<int64_t> recordId = std::nullopt) const;

    // Low-level access for the snapshot and curation code in core/data.
    sql::Database& database() const { return *m_db; }
    static std::string now();  // ISO 8601 UTC, milliseconds

private:
    DataStore(std::unique_ptr<sql::Database> db, std::string path);
    static std::unique_ptr<DataStore> openUpTo(const std::string& path, bool create, int version);
    void migrate(int target);
    int64_t insertOperation(const std::string& kind, const std::string& who,
                            const nlohmann::json& params, const nlohmann::json& summary);
    void writeChange(int64_t operationId, const std::string& who, const std::string& at,
                     const Change& change);
    struct Inserted {
        int64_t count = 0;
        int64_t firstId = 0;  // ids of one transaction's inserts are consecutive
        int64_t operationId = 0;
    };
    Inserted
    insertRecords(int64_t sourceId, const std::string& who,
                  const std::function<void(const std::function<void(const NewRecord&)>&)>& produce,
                  const std::string& operationKind, const nlohmann::json& params,
                  const std::vector<Change>& changes);
    void updateStatusFromLabels(int64_t operationId, int64_t recordId, const std::string& who,
                                const std::string& at);
    void insertNote(int64_t recordId, const std::string& author, const std::string& text,
                    const std::string& at);

    std::unique_ptr<sql::Database> m_db;
    std::string m_path;
};

}  // namespace tb
