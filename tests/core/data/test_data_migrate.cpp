// Store migrations: a store of schema version 3 (review columns in `records`), written row by row
// as that version's Tunebench wrote it, opens at the current version with every record, label,
// note, flag and history row intact, the review state in `record_state` with its indexes, and undo
// of the old operations and new ones working; a store whose rows break a foreign key stays at 3.
#include "data/curate/curate.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"

#include <QtTest>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "test_util.h"

using nlohmann::json;
using tb::DataStore;
using tb::ReviewStatus;

namespace {

using tbtest::contains;
using tbtest::errorOf;
using tbtest::tempPath;

// Four records of one import (ids 1-4) and the operations of version 3's Tunebench on them: a
// split moved record 1 to validation, annotators disagreed on record 2 and a lead rejected it, an
// edit of record 3's output (token counts reset), a dedup removed record 4. Record 1 has token
// counts, a note; record 3 a scan flag.
const char* const kVersion3Rows = R"SQL(
INSERT INTO sources (id, path, format, sha256, records, rejected, imported_at) VALUES
  (1, 'a.jsonl', 'alpaca', 'abc', 4, 0, '2026-01-01T00:00:00.000Z');
INSERT INTO operations (id, kind, who, at, params, summary) VALUES
  (1, 'import', 'ana', '2026-01-01T00:00:00.000Z', '{"source_id":1}',
   '{"first_id":1,"last_id":4,"records":4}'),
  (2, 'split', 'ana', '2026-01-01T00:00:01.000Z', '{"seed":0}', '{"train":3,"validation":1}'),
  (3, 'review', 'ana', '2026-01-01T00:00:02.000Z', '{"record_id":2}', '{}'),
  (4, 'review', 'ben', '2026-01-01T00:00:03.000Z', '{"record_id":2}', '{}'),
  (5, 'adjudicate', 'lead', '2026-01-01T00:00:04.000Z', '{"decision":"reject","record_id":2}',
   '{}'),
  (6, 'edit', 'ben', '2026-01-01T00:00:05.000Z', '{"field":"output","record_id":3}', '{}'),
  (7, 'dedup', 'ana', '2026-01-01T00:00:06.000Z', '{}', '{"removed":1}');
INSERT INTO records (id, kind, fields, source_id, source_line, source_offset, status, adjudicated,
                     split, token_count, field_tokens, removed, created_at, updated_at) VALUES
  (1, 'alpaca', '{"input":"","instruction":"Say hi","output":"hello"}', 1, 1, 0, 'pending', 0,
   'validation', 7, '{"input":0,"instruction":3,"output":4}', 0, '2026-01-01T00:00:00.000Z',
   '2026-01-01T00:00:01.000Z'),
  (2, 'alpaca', '{"input":"","instruction":"Add","output":"2+2=5"}', 1, 2, 55, 'rejected', 1,
   'train', -1, NULL, 0, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:04.000Z'),
  (3, 'alpaca', '{"input":"","instruction":"Mail","output":"three"}', 1, 3, 110, 'pending', 0,
   'train', -1, NULL, 0, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:05.000Z'),
  (4, 'alpaca', '{"input":"","instruction":"Say hi","output":"hello"}', 1, 4, 160, 'pending',
   0, 'train', -1, NULL, 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:06.000Z');
INSERT INTO history (operation_id, record_id, who, at, field, old_value, new_value) VALUES
  (1, 1, 'ana', '2026-01-01T00:00:00.000Z', 'removed', 'true', 'false'),
  (1, 2, 'ana', '2026-01-01T00:00:00.000Z', 'removed', 'true', 'false'),
  (1, 3, 'ana', '2026-01-01T00:00:00.000Z', 'removed', 'true', 'false'),
  (1, 4, 'ana', '2026-01-01T00:00:00.000Z', 'removed', 'true', 'false'),
  (2, 1, 'ana', '2026-01-01T00:00:01.000Z', 'split', '"train"', '"validation"'),
  (3, 2, 'ana', '2026-01-01T00:00:02.000Z', 'status', '"pending"', '"accepted"'),
  (4, 2, 'ben', '2026-01-01T00:00:03.000Z', 'status', '"accepted"', '"needs-adjudication"'),
  (5, 2, 'lead', '2026-01-01T00:00:04.000Z', 'status', '"needs-adjudication"', '"rejected"'),
  (6, 3, 'ben', '2026-01-01T00:00:05.000Z', 'fields.output', '"3"', '"three"'),
  (7, 4, 'ana', '2026-01-01T00:00:06.000Z', 'removed', 'false', 'true');
INSERT INTO labels (record_id, annotator, decision, rating, at) VALUES
  (2, 'ana', 'accept', NULL, '2026-01-01T00:00:02.000Z'),
  (2, 'ben', 'reject', 2, '2026-01-01T00:00:03.000Z');
INSERT INTO notes (record_id, author, text, at) VALUES
  (1, 'ana', 'greeting style', '2026-01-01T00:00:02.000Z');
INSERT INTO scan_flags (record_id, kind, field, offset, length, masked) VALUES
  (3, 'email', 'output', 0, 5, 't***e');
)SQL";

// A version-3 store at `path` (the shipped migration steps up to 3) holding `rows`, written with
// foreign keys off (so a test may break one).
void writeVersion3Store(const std::string& path, const std::string& rows)
{
    auto store = DataStore::openAtVersion(path, 3);
    QCOMPARE(store->schemaVersion(), 3);
    store->database().exec("PRAGMA foreign_keys = OFF");
    tb::sql::Transaction tx(store->database());
    store->database().exec(rows);
    tx.commit();
}

// Column `index` of every row `sql` returns.
std::vector<std::string> column(tb::sql::Database& db, const std::string& sql, int index = 0)
{
    tb::sql::Statement st(db, sql);
    std::vector<std::string> out;
    while (st.step())
        out.push_back(st.text(index));
    return out;
}

}  // namespace

class TestDataMigrate : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void version3StoreMigratesIntact()
    {
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "old.tbstore");
        writeVersion3Store(path, kVersion3Rows);
        auto store = DataStore::open(path, false);
        QCOMPARE(store->schemaVersion(), DataStore::kSchemaVersion);
        auto& db = store->database();

        // The schema: review columns in record_state with its indexes, none left in records.
        const std::vector<std::string> recordColumns =
            column(db, "SELECT name FROM pragma_table_info('records')");
        QCOMPARE(recordColumns,
                 (std::vector<std::string>{"id", "kind", "fields", "source_id", "source_line",
                                           "source_offset", "chunk_index", "chunk_overlap",
                                           "synthetic", "created_at"}));
        QCOMPARE(column(db, "SELECT name FROM pragma_table_info('record_state')"),
                 (std::vector<std::string>{"id", "status", "adjudicated", "split", "removed",
                                           "token_count", "field_tokens", "updated_at"}));
        QCOMPARE(column(db, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name "
                            "IN ('records', 'record_state') ORDER BY name"),
                 (std::vector<std::string>{"record_state_split", "record_state_status"}));
        const std::string plan =
            column(db,
                   "EXPLAIN QUERY PLAN SELECT id FROM record_state WHERE split = 'validation' "
                   "AND removed = 0",
                   3)
                .at(0);
        QVERIFY2(contains(plan, "record_state_split"), plan.c_str());
        QCOMPARE(column(db, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
        QVERIFY(column(db, "PRAGMA foreign_key_check").empty());
        QCOMPARE(column(db, "PRAGMA foreign_keys"), std::vector<std::string>{"1"});

        // Every record as it was.
        tb::RecordQuery all;
        all.includeRemoved = true;
        const std::vector<tb::StoredRecord> rs = store->records(all);
        QCOMPARE(rs.size(), size_t(4));
        QCOMPARE(rs[0].fields,
                 json({{"input", ""}, {"instruction", "Say hi"}, {"output", "hello"}}));
        QCOMPARE(rs[0].split, std::string("validation"));
        QCOMPARE(rs[0].tokenCount, int64_t(7));
        QCOMPARE(rs[0].sourcePath, std::string("a.jsonl"));
        QCOMPARE(rs[1].status, ReviewStatus::Rejected);
        QCOMPARE(rs[1].rating, std::optional<int>(2));
        QCOMPARE(rs[1].sourceOffset, int64_t(55));
        QCOMPARE(rs[2].fields["output"], json("three"));
        QCOMPARE(rs[2].flags, std::vector<std::string>{"email"});
        QVERIFY(rs[3].removed);
        QCOMPARE(store->count(), int64_t(3));
        QCOMPARE(store->fieldTokenCounts(all).at(0),
                 json({{"input", 0}, {"instruction", 3}, {"output", 4}}));
        tb::RecordQuery validation;
        validation.split = "validation";
        QCOMPARE(store->recordIds(validation), std::vector<int64_t>{1});
        QCOMPARE(store->history().size(), size_t(10));
        QCOMPARE(store->labels(2).size(), size_t(2));
        QCOMPARE(store->notes(1).at(0).text, std::string("greeting style"));

        // The old operations undo as before: the edit, the split, the adjudication (which also
        // clears the adjudicated mark, so the annotators' labels decide again), the dedup.
        store->undo(6, "li");
        QCOMPARE(store->record(3).fields["output"], json("3"));
        QCOMPARE(store->record(3).tokenCount, int64_t(-1));
        store->undo(2, "li");
        QCOMPARE(store->record(1).split, std::string("train"));
        store->undo(5, "li");
        QCOMPARE(store->record(2).status, ReviewStatus::NeedsAdjudication);
        store->review(2, "cat", "reject");
        QCOMPARE(store->record(2).status, ReviewStatus::NeedsAdjudication);
        store->undo(7, "li");
        QCOMPARE(store->count(), int64_t(4));

        // New work on the migrated store: an import gets state rows, a split and its undo.
        tb::NewRecord general;
        general.kind = "alpaca";
        general.fields = {{"instruction", "x"}, {"input", ""}, {"output", "y"}};
        general.split = "general";
        const std::vector<int64_t> added = store->addRecords({general}, 0, "ana");
        QCOMPARE(added, std::vector<int64_t>{5});
        QCOMPARE(store->record(5).split, std::string("general"));
        const tb::SplitReport split = tb::splitRecords(*store, 0.5, 3, "", "ana");
        QCOMPARE(split.train + split.validation, int64_t(4));
        QCOMPARE(int64_t(store->recordIds(validation).size()), split.validation);
        store->undo(split.operationId, "ana");
        QVERIFY(store->recordIds(validation).empty());
        store.reset();

        // Reopened: nothing to migrate, the same records.
        store = DataStore::open(path, false);
        QCOMPARE(store->count(all), int64_t(5));
        QCOMPARE(column(store->database(), "PRAGMA integrity_check"),
                 std::vector<std::string>{"ok"});
    }

    // Two connections open the same old store at once (the studio's Data page and a snapshot
    // list do): both read version 3, one migrates, the other waits for the write lock and then
    // finds the step applied instead of running it again ("table record_state already exists").
    void concurrentOpensMigrateOnce()
    {
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "shared.tbstore");
        writeVersion3Store(path, kVersion3Rows);
        auto writer = std::make_unique<tb::sql::Database>(path, false);
        writer->exec("BEGIN IMMEDIATE");  // both opens read version 3, then queue for the lock
        std::string errors[2];
        std::atomic<int> started{0};
        std::vector<std::thread> threads;
        for (int i = 0; i < 2; ++i)
            threads.emplace_back([&, i] {
                ++started;
                errors[i] = errorOf([&] {
                    if (DataStore::open(path, false)->schemaVersion() != DataStore::kSchemaVersion)
                        tb::fail(path, ": opened but not migrated");
                });
            });
        while (started < 2)
            std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        writer->exec("COMMIT");
        for (std::thread& t : threads)
            t.join();
        QVERIFY2(errors[0].empty(), errors[0].c_str());
        QVERIFY2(errors[1].empty(), errors[1].c_str());
        tb::sql::Database db(path, false);
        QCOMPARE(column(db, "SELECT count(*) FROM record_state"), std::vector<std::string>{"4"});
        QCOMPARE(column(db, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
    }

    // A version-3 store whose rows break a foreign key (a label of a record that does not exist,
    // written with foreign keys off) is not migrated: the error names the table, the store stays
    // at version 3 with its rows.
    void brokenForeignKeyStopsTheMigration()
    {
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "broken.tbstore");
        writeVersion3Store(path,
                           std::string(kVersion3Rows) +
                               "INSERT INTO labels (record_id, annotator, decision, at) VALUES "
                               "(99, 'ana', 'accept', '2026-01-01T00:00:07.000Z');");
        const std::string e = errorOf([&] { DataStore::open(path, false); });
        QVERIFY2(contains(e, "schema version 3") && contains(e, "labels"), e.c_str());
        tb::sql::Database db(path, false);
        QCOMPARE(column(db, "PRAGMA user_version"), std::vector<std::string>{"3"});
        QCOMPARE(column(db, "SELECT count(*) FROM records WHERE split = 'validation'"),
                 std::vector<std::string>{"1"});
        QVERIFY(column(db, "SELECT name FROM sqlite_master WHERE name = 'record_state'").empty());
    }
};

QTEST_MAIN(TestDataMigrate)
#include "test_data_migrate.moc"
