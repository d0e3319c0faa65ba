// The dataset store's schema: the migrations from an empty file to DataStore::kSchemaVersion.
#include "data/store/pairs_store.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "util/error.h"

namespace tb {

namespace {

// Each entry migrates the schema from version i to i + 1; never edit a shipped step, append a new
// one.
const char* const kMigrations[] = {
    // 0 -> 1: the initial schema.
    R"SQL(
CREATE TABLE sources (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  format TEXT NOT NULL,
  sha256 TEXT NOT NULL DEFAULT '',
  records INTEGER NOT NULL DEFAULT 0,
  rejected INTEGER NOT NULL DEFAULT 0,
  imported_at TEXT NOT NULL
);
CREATE TABLE records (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('alpaca', 'chat', 'prompt-completion', 'text')),
  fields TEXT NOT NULL CHECK (json_valid(fields)),
  source_id INTEGER REFERENCES sources(id),
  source_line INTEGER NOT NULL DEFAULT 0,
  source_offset INTEGER NOT NULL DEFAULT 0,
  chunk_index INTEGER NOT NULL DEFAULT -1,
  chunk_overlap INTEGER NOT NULL DEFAULT 0,
  synthetic INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'accepted', 'rejected', 'needs-adjudication')),
  adjudicated INTEGER NOT NULL DEFAULT 0,
  split TEXT NOT NULL DEFAULT 'train' CHECK (split IN ('train', 'validation', 'general')),
  token_count INTEGER NOT NULL DEFAULT -1,
  field_tokens TEXT,
  removed INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX records_status ON records(status, removed);
CREATE INDEX records_split ON records(split, removed);
CREATE TABLE operations (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  who TEXT NOT NULL,
  at TEXT NOT NULL,
  params TEXT NOT NULL DEFAULT '{}',
  summary TEXT NOT NULL DEFAULT '{}',
  undone_by INTEGER
);
CREATE TABLE history (
  id INTEGER PRIMARY KEY,
  operation_id INTEGER NOT NULL REFERENCES operations(id),
  record_id INTEGER NOT NULL,
  who TEXT NOT NULL,
  at TEXT NOT NULL,
  field TEXT NOT NULL,
  old_value TEXT,
  new_value TEXT
);
CREATE INDEX history_record ON history(record_id);
CREATE INDEX history_operation ON history(operation_id);
CREATE TABLE labels (
  record_id INTEGER NOT NULL REFERENCES records(id),
  annotator TEXT NOT NULL,
  decision TEXT NOT NULL DEFAULT '' CHECK (decision IN ('', 'accept', 'reject')),
  rating INTEGER CHECK (rating BETWEEN 1 AND 5),
  at TEXT NOT NULL,
  PRIMARY KEY (record_id, annotator)
);
CREATE TABLE notes (
  id INTEGER PRIMARY KEY,
  record_id INTEGER NOT NULL REFERENCES records(id),
  author TEXT NOT NULL,
  text TEXT NOT NULL,
  at TEXT NOT NULL
);
CREATE INDEX notes_record ON notes(record_id);
CREATE TABLE scan_flags (
  record_id INTEGER NOT NULL REFERENCES records(id),
  kind TEXT NOT NULL,
  field TEXT NOT NULL,
  offset INTEGER NOT NULL,
  length INTEGER NOT NULL,
  masked TEXT NOT NULL
);
CREATE INDEX scan_flags_record ON scan_flags(record_id);
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE snapshots (
  id TEXT PRIMARY KEY,
  version INTEGER NOT NULL,
  split TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  records INTEGER NOT NULL,
  manifest TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE snapshot_records (
  snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
  position INTEGER NOT NULL,
  record_id INTEGER NOT NULL,
  kind TEXT NOT NULL,
  line TEXT NOT NULL,
  PRIMARY KEY (snapshot_id, position)
);
)SQL",
    // 1 -> 2: blind comparisons. An item holds a prompt and the answers of two sources (X, Y) with
    // the side each is shown on (a_is_x: answer A is X's); a verdict is one annotator's choice, the
    // active one per item and annotator counts; a preference pair exists for each active verdict
    // that is not a tie. History rows of these changes have record_id 0 and a field
    // "compare.item.<id>.removed" or "compare.item.<id>.verdict.<annotator>".
    R"SQL(
CREATE TABLE comparison_items (
  id INTEGER PRIMARY KEY,
  set_name TEXT NOT NULL,
  position INTEGER NOT NULL,
  prompt TEXT NOT NULL,
  messages TEXT CHECK (messages IS NULL OR json_valid(messages)),
  source_x TEXT NOT NULL,
  answer_x TEXT NOT NULL,
  source_y TEXT NOT NULL,
  answer_y TEXT NOT NULL,
  a_is_x INTEGER NOT NULL CHECK (a_is_x IN (0, 1)),
  removed INTEGER NOT NULL DEFAULT 0,
  operation_id INTEGER NOT NULL REFERENCES operations(id),
  created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX comparison_items_set ON comparison_items(set_name, position);
CREATE TABLE comparison_verdicts (
  id INTEGER PRIMARY KEY,
  item_id INTEGER NOT NULL REFERENCES comparison_items(id),
  annotator TEXT NOT NULL,
  choice TEXT NOT NULL CHECK (choice IN ('a', 'b', 'tie')),
  winner TEXT NOT NULL CHECK (winner IN ('x', 'y', 'tie')),
  note TEXT NOT NULL DEFAULT '',
  active INTEGER NOT NULL DEFAULT 0,
  operation_id INTEGER NOT NULL REFERENCES operations(id),
  at TEXT NOT NULL
);
CREATE UNIQUE INDEX comparison_verdicts_active ON comparison_verdicts(item_id, annotator)
  WHERE active = 1;
CREATE TABLE preference_pairs (
  id INTEGER PRIMARY KEY,
  verdict_id INTEGER NOT NULL UNIQUE REFERENCES comparison_verdicts(id),
  item_id INTEGER NOT NULL REFERENCES comparison_items(id),
  set_name TEXT NOT NULL,
  prompt TEXT NOT NULL,
  messages TEXT,
  chosen TEXT NOT NULL,
  rejected TEXT NOT NULL,
  annotator TEXT NOT NULL,
  source_chosen TEXT NOT NULL,
  source_rejected TEXT NOT NULL,
  at TEXT NOT NULL
);
CREATE INDEX preference_pairs_set ON preference_pairs(set_name);
)SQL",
    // 2 -> 3: preference pairs, rankings and pairwise review (data/store/pairs_store.cpp).
    pairsSchemaSql(),
    // 3 -> 4: the columns that review, split and statistics change move out of `records` into
    // `record_state`, one narrow row per record (~50-100 bytes instead of the record's ~600), so a
    // split or a status change rewrites a row of that size. `records` keeps what is written once
    // (kind, fields, provenance) and is rebuilt without the moved columns (SQLite's procedure for
    // changing a table: a new table, the rows copied, the old dropped, the new renamed; migrate()
    // turns foreign keys off around it and checks them before the commit). Ids stay the same.
    R"SQL(
CREATE TABLE record_state (
  id INTEGER PRIMARY KEY REFERENCES records(id),
  status TEXT NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'accepted', 'rejected', 'needs-adjudication')),
  adjudicated INTEGER NOT NULL DEFAULT 0,
  split TEXT NOT NULL DEFAULT 'train' CHECK (split IN ('train', 'validation', 'general')),
  removed INTEGER NOT NULL DEFAULT 0,
  token_count INTEGER NOT NULL DEFAULT -1,
  field_tokens TEXT,
  updated_at TEXT NOT NULL
);
INSERT INTO record_state (id, status, adjudicated, split, removed, token_count, field_tokens,
                          updated_at)
  SELECT id, status, adjudicated, split, removed, token_count, field_tokens, updated_at
  FROM records ORDER BY id;
CREATE TABLE records_rebuilt (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('alpaca', 'chat', 'prompt-completion', 'text')),
  fields TEXT NOT NULL CHECK (json_valid(fields)),
  source_id INTEGER REFERENCES sources(id),
  source_line INTEGER NOT NULL DEFAULT 0,
  source_offset INTEGER NOT NULL DEFAULT 0,
  chunk_index INTEGER NOT NULL DEFAULT -1,
  chunk_overlap INTEGER NOT NULL DEFAULT 0,
  synthetic INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);
INSERT INTO records_rebuilt (id, kind, fields, source_id, source_line, source_offset, chunk_index,
                             chunk_overlap, synthetic, created_at)
  SELECT id, kind, fields, source_id, source_line, source_offset, chunk_index, chunk_overlap,
         synthetic, created_at
  FROM records ORDER BY id;
DROP TABLE records;
ALTER TABLE records_rebuilt RENAME TO records;
CREATE INDEX record_state_status ON record_state(status, removed);
CREATE INDEX record_state_split ON record_state(split, removed);
)SQL",
};
constexpr int kMigrationCount = int(sizeof(kMigrations) / sizeof(kMigrations[0]));
static_assert(kMigrationCount == DataStore::kSchemaVersion);

}  // namespace

int DataStore::schemaVersion() const
{
    sql::Statement st(*m_db, "PRAGMA user_version");
    st.step();
    return int(st.int64(0));
}

void DataStore::migrate(int target)
{
    const auto refuseNewer = [&](int version) {
        if (version < 0)  // PRAGMA user_version is any 32-bit number: ours count up from 0
            tb::fail(m_path, ": schema version ", version, " is not one of Tunebench's (0 to ",
                     kSchemaVersion, "): not a Tunebench dataset store, or a damaged one");
        if (version > kSchemaVersion)
            tb::fail(m_path, ": the store has schema version ", version,
                     ", newer than this Tunebench understands (", kSchemaVersion,
                     "); open it with a newer Tunebench");
    };
    // A fresh file must be empty; an SQLite file with other tables is someone else's database.
    const auto refuseForeign = [&] {
        sql::Statement st(*m_db, "SELECT count(*) FROM sqlite_master");
        st.step();
        if (st.int64(0) != 0)
            tb::fail(m_path,
                     ": not a Tunebench dataset store (an SQLite database with other tables)");
    };
    const int version = schemaVersion();
    refuseNewer(version);
    if (version >= target) {
        if (version == 0)
            refuseForeign();
        return;
    }
    // Foreign keys off while the steps run (a step may rebuild a table others refer to, SQLite's
    // documented procedure); each step checks them before it commits. The pragma is a no-op inside
    // a transaction, so it is set around them.
    m_db->exec("PRAGMA foreign_keys = OFF");
    struct ForeignKeysOn {
        sql::Database& db;
        ~ForeignKeysOn()
        {
            try {
                db.exec("PRAGMA foreign_keys = ON");
            } catch (...) {
            }
        }
    } foreignKeysOn{*m_db};
    for (int v = version; v < target;) {
        sql::Transaction tx(*m_db);
        // Read again under the write lock: another connection opening the same store (a second
        // window, a page's snapshot list, the CLI) may have applied steps since the read above.
        if (const int current = schemaVersion(); current != v) {
            refuseNewer(current);
            v = current;
            continue;  // the transaction, unused, rolls back
        }
        if (v == 0)
            refuseForeign();
        try {
            m_db->exec(kMigrations[v]);
        } catch (const Error& e) {
            // A step that finds its own tables already there, or misses the ones it changes:
            // the version number and the tables disagree (set by hand, or another program's
            // database). Anything else (a full disk, an I/O error) is said as it is.
            const std::string what = e.what();
            const bool mismatch = what.find("already exists") != std::string::npos ||
                                  what.find("no such table") != std::string::npos ||
                                  what.find("no such column") != std::string::npos ||
                                  what.find("duplicate column") != std::string::npos;
            tb::fail(m_path, ": migrating the store from schema version ", v, " to ", v + 1,
                     " failed (", what, ")",
                     mismatch ? ": its tables do not match its version number; the store is "
                                "left as it was (damaged, or not a Tunebench store)"
                              : "; the store is left as it was");
        }
        {
            sql::Statement check(*m_db, "PRAGMA foreign_key_check");
            if (check.step())
                tb::fail(m_path, ": migrating the store from schema version ", v, " to ", v + 1,
                         ": a row of table ", check.text(0), " refers to a missing row of ",
                         check.text(2), "; the store is left at version ", v);
        }
        m_db->exec("PRAGMA user_version = " + std::to_string(v + 1));
        tx.commit();
        ++v;
    }
}

}  // namespace tb
