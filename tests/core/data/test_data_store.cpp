// The dataset store: schema and migrations, bad files, record queries, edit history and undo,
// review status from annotators' labels, adjudication, snapshots (hash checked with Qt's SHA-256),
// and kill -9 during writes.
#include "data/store/snapshot.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "util/error.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QtTest>

#include "test_util.h"

#include <sqlite3.h>

#include <csignal>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

using nlohmann::json;
using tb::DataStore;
using tb::NewRecord;
using tb::ReviewStatus;

namespace {

using tbtest::contains;
using tbtest::errorOf;
using tbtest::numbered;
using tbtest::tempPath;

NewRecord alpaca(const std::string& instruction, const std::string& output,
                 const std::string& split = "train")
{
    NewRecord r;
    r.kind = "alpaca";
    r.fields = {{"instruction", instruction}, {"input", ""}, {"output", output}};
    r.split = split;
    return r;
}

// PRAGMA integrity_check through a separate connection: "ok" when the file is consistent.
std::string integrity(const std::string& path)
{
    sqlite3* db = nullptr;
    sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr);
    std::string result = sqlite3_step(st) == SQLITE_ROW
                             ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0))
                             : "?";
    sqlite3_finalize(st);
    sqlite3_close(db);
    return result;
}

}  // namespace

class TestDataStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void createsVersionedSchemaAndReopens()
    {
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "project.tbstore");
        {
            auto store = DataStore::open(path);
            QCOMPARE(store->schemaVersion(), DataStore::kSchemaVersion);
            store->addRecords({alpaca("a", "b")}, 0, "ann");
        }
        auto store = DataStore::open(path, false);
        QCOMPARE(store->count(), int64_t(1));
        QCOMPARE(integrity(path), std::string("ok"));
        // WAL mode is on (readers never block the writer).
        sqlite3* db = nullptr;
        sqlite3_open(path.c_str(), &db);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
        QCOMPARE(sqlite3_step(st), SQLITE_ROW);
        QCOMPARE(QByteArray(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))),
                 QByteArray("wal"));
        sqlite3_finalize(st);
        sqlite3_close(db);
    }

    void badFilesGetClearMessages()
    {
        QTemporaryDir dir;
        const std::string text = tempPath(dir, "notes.txt");
        std::ofstream(text)
            << "this is not a database, just some text that is long enough to have a header ......"
               "...............................................................\n";
        std::string e = errorOf([&] { DataStore::open(text); });
        QVERIFY2(contains(e, text) && contains(e, "not a Tunebench dataset store"), e.c_str());

        // Someone else's SQLite database.
        const std::string other = tempPath(dir, "other.db");
        sqlite3* db = nullptr;
        sqlite3_open(other.c_str(), &db);
        sqlite3_exec(db, "CREATE TABLE invoices (id INTEGER)", nullptr, nullptr, nullptr);
        sqlite3_close(db);
        e = errorOf([&] { DataStore::open(other); });
        QVERIFY2(contains(e, other) && contains(e, "other tables"), e.c_str());

        // A store written by a newer Tunebench.
        const std::string newer = tempPath(dir, "newer.tbstore");
        DataStore::open(newer);
        sqlite3_open(newer.c_str(), &db);
        sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
        sqlite3_close(db);
        e = errorOf([&] { DataStore::open(newer); });
        QVERIFY2(contains(e, newer) && contains(e, "schema version 99") && contains(e, "newer"),
                 e.c_str());
        // A version number set by hand: negative (it crashed, indexing the migrations with it),
        // or lower than the tables (a migration step finds its tables there).
        for (const auto& [version, expect] :
             {std::pair<const char*, const char*>{"-2147483648",
                                                  "schema version -2147483648 is not"},
              {"-1", "schema version -1 is not"},
              {"1", "its tables do not match its version number"}}) {
            sqlite3_open(newer.c_str(), &db);
            sqlite3_exec(db, (std::string("PRAGMA user_version = ") + version).c_str(), nullptr,
                         nullptr, nullptr);
            sqlite3_close(db);
            e = errorOf([&] { DataStore::open(newer); });
            QVERIFY2(contains(e, newer) && contains(e, expect), e.c_str());
        }

        e = errorOf([&] { DataStore::open(tempPath(dir, "missing.tbstore"), false); });
        QVERIFY2(contains(e, "missing.tbstore"), e.c_str());
    }

    void queriesFilterSortAndPage()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        std::vector<NewRecord> rs;
        for (int i = 0; i < 10; ++i)
            rs.push_back(alpaca("question " + std::to_string(i), "Answer " + std::to_string(i),
                                i < 7 ? "train" : "validation"));
        rs[3].synthetic = true;
        const auto ids = store->addRecords(rs, 0, "importer");
        QCOMPARE(ids.size(), size_t(10));
        QCOMPARE(store->record(ids[4]).fields["output"].get<std::string>(),
                 std::string("Answer 4"));
        tb::RecordQuery q;
        q.split = "validation";
        QCOMPARE(store->count(q), int64_t(3));
        q = {};
        q.synthetic = true;
        QCOMPARE(store->recordIds(q), std::vector<int64_t>{ids[3]});
        q = {};
        q.contains = "ANSWER 9";
        QCOMPARE(store->recordIds(q), std::vector<int64_t>{ids[9]});
        q = {};
        q.descending = true;
        q.offset = 2;
        q.limit = 3;
        QCOMPARE(store->recordIds(q), (std::vector<int64_t>{ids[7], ids[6], ids[5]}));
        QCOMPARE(store->record(ids[0]).status, ReviewStatus::Pending);
        QVERIFY(contains(errorOf([&] { store->record(9999); }), "no record with id 9999"));
        NewRecord bad = alpaca("x", "y", "holdout");
        QVERIFY(contains(errorOf([&] { store->addRecords({bad}, 0, "x"); }),
                         "unknown split \"holdout\""));
        QCOMPARE(store->count(), int64_t(10));  // the failed import left nothing behind
        // Inserts skip SQLite's CHECK constraints (they hold by construction): the kind is checked
        // in C++, and the constraints are back for every other write.
        NewRecord odd = alpaca("x", "y");
        odd.kind = "essay";
        QVERIFY(contains(errorOf([&] { store->addRecords({odd}, 0, "x"); }),
                         "unknown record kind \"essay\""));
        QVERIFY(contains(errorOf([&] {
                             store->database().exec(
                                 "UPDATE records SET kind = 'essay' WHERE id = " +
                                 std::to_string(ids[0]));
                         }),
                         "CHECK constraint failed"));
        QCOMPARE(store->count(), int64_t(10));
    }

    // Import writes each record's state row in batches, one per run of equal splits: splits that
    // change from record to record and across the batches' boundaries all arrive.
    void importKeepsEachRecordsSplit()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        std::vector<NewRecord> rs;
        for (int i = 0; i < 2500; ++i)
            rs.push_back(alpaca(numbered("q", i), "a",
                                i % 7 == 0               ? "validation"
                                : i >= 1000 && i < 1100  ? "general"
                                : i == 1023 || i == 2047 ? "general"
                                                         : "train"));
        const auto ids = store->addRecords(rs, 0, "importer");
        tb::RecordQuery all;
        all.includeRemoved = true;
        const auto stored = store->records(all);
        QCOMPARE(stored.size(), rs.size());
        for (size_t i = 0; i < rs.size(); ++i) {
            QCOMPARE(stored[i].id, ids[i]);
            QCOMPARE(stored[i].split, rs[i].split);
            QCOMPARE(stored[i].status, ReviewStatus::Pending);
            QCOMPARE(stored[i].tokenCount, int64_t(-1));
        }
        tb::RecordQuery general;
        general.split = "general";
        QCOMPARE(store->count(general), int64_t(85 + 1));  // 1000-1099 but 15 multiples of 7; 2047
    }

    void editsAreRecordedAndUndoable()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const int64_t id = store->addRecords({alpaca("Say hi", "hello")}, 0, "importer")[0];
        store->editField(id, "output", "Hello!", "maria");
        auto h = store->history(id);
        QCOMPARE(h.back().who, std::string("maria"));
        QCOMPARE(h.back().field, std::string("fields.output"));
        QCOMPARE(h.back().oldValue, json("hello"));
        QCOMPARE(h.back().newValue, json("Hello!"));
        QVERIFY(!h.back().at.empty());
        const int64_t editOp = h.back().operationId;

        store->editField(id, "output", "Hi there", "li");
        const int64_t secondOp = store->history(id).back().operationId;
        // The first edit cannot be undone while a later one changed the same field.
        const std::string e = errorOf([&] { store->undo(editOp, "maria"); });
        QVERIFY2(contains(e, "changed since") && contains(e, "fields.output"), e.c_str());
        store->undo(secondOp, "li");
        QCOMPARE(store->record(id).fields["output"], json("Hello!"));
        store->undo(editOp, "maria");
        QCOMPARE(store->record(id).fields["output"], json("hello"));
        QVERIFY(contains(errorOf([&] { store->undo(editOp, "maria"); }), "already undone"));

        // An import is an operation too: undo removes its records (soft, reversible).
        const auto ops = store->operations();
        QCOMPARE(ops.front().kind, std::string("import"));
        store->undo(ops.front().id, "maria");
        QCOMPARE(store->count(), int64_t(0));
        tb::RecordQuery all;
        all.includeRemoved = true;
        QCOMPARE(store->count(all), int64_t(1));

        store->addNote(id, "li", "check the greeting style");
        QCOMPARE(store->notes(id).at(0).text, std::string("check the greeting style"));
    }

    void reviewStatusFollowsAnnotators()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const auto ids = store->addRecords({alpaca("a", "1"), alpaca("b", "2"), alpaca("c", "3")},
                                           0, "importer");
        store->review(ids[0], "ana", "accept", 5);
        QCOMPARE(store->record(ids[0]).status, ReviewStatus::Accepted);
        store->review(ids[0], "ben", "accept", 4);
        QCOMPARE(store->record(ids[0]).status, ReviewStatus::Accepted);
        QCOMPARE(store->record(ids[0]).rating,
                 std::optional<int>(5));  // round(4.5) = 5 (SQLite rounds half away)

        store->review(ids[1], "ana", "accept");
        store->review(ids[1], "ben", "reject");
        QCOMPARE(store->record(ids[1]).status, ReviewStatus::NeedsAdjudication);
        tb::RecordQuery queue;
        queue.status = ReviewStatus::NeedsAdjudication;
        QCOMPARE(store->recordIds(queue), std::vector<int64_t>{ids[1]});
        store->adjudicate(ids[1], "reject", "lead");
        QCOMPARE(store->record(ids[1]).status, ReviewStatus::Rejected);
        // A later rating does not reopen an adjudicated record.
        store->review(ids[1], "cat", "", 2);
        QCOMPARE(store->record(ids[1]).status, ReviewStatus::Rejected);
        QCOMPARE(store->labels(ids[1]).size(), size_t(3));

        // Rating alone keeps an earlier decision.
        store->review(ids[2], "ana", "reject");
        store->review(ids[2], "ana", "", 1);
        const auto l = store->labels(ids[2]);
        QCOMPARE(l.size(), size_t(1));
        QCOMPARE(l[0].decision, std::string("reject"));
        QCOMPARE(l[0].rating, std::optional<int>(1));

        QVERIFY(contains(errorOf([&] { store->review(ids[2], "ana", "maybe"); }),
                         "not accept or reject"));
        QVERIFY(contains(errorOf([&] { store->review(ids[2], "ana", "", 6); }), "outside 1-5"));
        QVERIFY(contains(errorOf([&] { store->review(ids[2], "", "accept"); }),
                         "annotator's name is empty"));

        // A decision with a note: both in, or, when the review is refused, neither.
        store->review(ids[0], "dan", "accept", std::nullopt, "clear and short");
        QCOMPARE(store->notes(ids[0]).size(), size_t(1));
        QCOMPARE(store->notes(ids[0])[0].text, std::string("clear and short"));
        QCOMPARE(store->notes(ids[0])[0].author, std::string("dan"));
        QVERIFY(contains(errorOf([&] { store->review(ids[0], "dan", "maybe", 3, "lost?"); }),
                         "not accept or reject"));
        QCOMPARE(store->notes(ids[0]).size(), size_t(1));
    }

    void busyTimeoutBoundsTheWait()
    {
        // A second connection's change behind another's open write waits its busy timeout, then
        // fails naming the lock: 0.2 s here where the default is 10 s (the bound below is far
        // from both, a check that the setting applies, not a timing).
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "s.tbstore");
        auto writer = DataStore::open(path);
        const auto ids = writer->addRecords({alpaca("a", "1")}, 0, "importer");
        auto gui = DataStore::open(path, false);
        gui->setBusyTimeout(200);
        std::string error;
        qint64 waited = 0;
        writer->inTransaction([&] {
            writer->addNote(ids[0], "worker", "holding the write lock");
            QElapsedTimer clock;
            clock.start();
            error = errorOf([&] { gui->addNote(ids[0], "gui", "waits"); });
            waited = clock.elapsed();
        });
        QVERIFY2(contains(error, "database is locked"), error.c_str());
        QVERIFY2(contains(error, "the store is busy: another job or program is writing to it"),
                 error.c_str());
        QVERIFY2(waited < 5000, qPrintable(QString::number(waited)));
        QCOMPARE(gui->notes(ids[0]).size(), size_t(1));  // the writer's, committed
        gui->addNote(ids[0], "gui", "after");            // the lock is free again
        QCOMPARE(writer->notes(ids[0]).size(), size_t(2));
    }

    void readOnlyStoreSaysWhy()
    {
        // A change to a store that cannot be written fails naming the file and why (SQLite says
        // only "attempt to write a readonly database"). query_only gives SQLite's read-only
        // error for root too, who writes through a read-only file's permissions.
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "s.tbstore");
        DataStore::open(path)->addRecords({alpaca("a", "1")}, 0, "importer");
        tb::sql::Database db(path, false);
        db.exec("PRAGMA query_only = ON");
        for (const std::string& error :
             {errorOf([&] { db.exec("DELETE FROM records"); }),
              errorOf([&] { tb::sql::Statement(db, "DELETE FROM records").run(); })})
            QVERIFY2(contains(error, path) && contains(error, "the store cannot be written") &&
                         contains(error, "read-only") && contains(error, "readonly database"),
                     error.c_str());
        QCOMPARE(DataStore::open(path, false)->recordIds({}).size(), size_t(1));
    }

    void severalCallsInOneTransaction()
    {
        // inTransaction: the store's own transactions inside become savepoints, so an import's
        // source, records and counts commit together; an error anywhere leaves none of them.
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "s.tbstore");
        auto store = DataStore::open(path);
        const std::string failed = errorOf([&] {
            store->inTransaction([&] {
                const int64_t source = store->addSource("a.jsonl", "alpaca", "");
                store->addRecords({alpaca("a", "1")}, source, "importer");
                QCOMPARE(store->count(), int64_t(1));  // visible inside
                throw tb::Error("killed mid-import");
            });
        });
        QCOMPARE(failed, std::string("killed mid-import"));
        QCOMPARE(store->count(), int64_t(0));
        QVERIFY(store->sources().empty());
        store->inTransaction([&] {
            const int64_t source = store->addSource("b.jsonl", "alpaca", "");
            store->addRecords({alpaca("b", "2"), alpaca("c", "3")}, source, "importer");
            store->setSource(source, "alpaca", 2, 0, "abc");
        });
        auto reopened = DataStore::open(path);
        QCOMPARE(reopened->count(), int64_t(2));
        QCOMPARE(reopened->sources().size(), size_t(1));
        QCOMPARE(reopened->sources()[0].records, int64_t(2));
        QCOMPARE(integrity(path), std::string("ok"));
    }

    void snapshotsFreezeAcceptedRecords()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const auto ids = store->addRecords(
            {alpaca("a", "1"), alpaca("b", "2"), alpaca("c", "3"), alpaca("d", "4", "validation")},
            0, "importer");
        QVERIFY(contains(errorOf([&] { tb::createSnapshot(*store, {}); }), "no accepted records"));
        for (int64_t id : {ids[0], ids[2], ids[3]})
            store->review(id, "ana", "accept");
        tb::SnapshotOptions o;
        o.templateInfo = {{"chat_template", "alpaca"}};
        const tb::SnapshotInfo s = tb::createSnapshot(*store, o);
        QCOMPARE(s.id, std::string("train-v1"));
        QCOMPARE(s.records, int64_t(2));
        QCOMPARE(s.manifest["template"]["chat_template"], json("alpaca"));
        QCOMPARE(s.manifest["counts"]["by_kind"]["alpaca"], json(2));

        // The export's bytes hash to the recorded SHA-256 (checked with Qt's independent
        // implementation).
        const std::string file = tb::exportSnapshot(*store, s.id, tempPath(dir, "export"));
        QFile f(QString::fromStdString(file));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        QCOMPARE(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex().toStdString(),
                 s.sha256);
        QCOMPARE(bytes.count('\n'), qsizetype(2));
        QVERIFY(
            QFile::exists(QString::fromStdString(tempPath(dir, "export/train-v1.manifest.json"))));

        // Later edits do not change a frozen snapshot; a new one gets the next version.
        store->editField(ids[0], "output", "changed", "ana");
        const auto frozen = tb::snapshotRecords(*store, s.id);
        QCOMPARE(frozen.size(), size_t(2));
        QCOMPARE(frozen[0].fields["output"], json("1"));
        QCOMPARE(frozen[0].recordId, ids[0]);
        const tb::SnapshotInfo s2 = tb::createSnapshot(*store, o);
        QCOMPARE(s2.id, std::string("train-v2"));
        QVERIFY(s2.sha256 != s.sha256);
        QVERIFY(contains(errorOf([&] { tb::findSnapshot(*store, "train-v9"); }),
                         "known: train-v1, train-v2"));

        // Tampering with the frozen lines is detected.
        sqlite3* db = nullptr;
        sqlite3_open(store->path().c_str(), &db);
        sqlite3_exec(db,
                     "UPDATE snapshot_records SET line = '{\"x\":1}' WHERE snapshot_id = "
                     "'train-v1' AND position = 0",
                     nullptr, nullptr, nullptr);
        sqlite3_close(db);
        QVERIFY(contains(errorOf([&] { tb::snapshotRecords(*store, "train-v1"); }),
                         "does not match its SHA-256"));
        // A line that is not JSON any more names the snapshot and the record, not the parser.
        sqlite3_open(store->path().c_str(), &db);
        sqlite3_exec(db,
                     "UPDATE snapshot_records SET line = 'not json' WHERE snapshot_id = "
                     "'train-v2' AND position = 1",
                     nullptr, nullptr, nullptr);
        sqlite3_close(db);
        const std::string broken = errorOf([&] { tb::snapshotRecords(*store, "train-v2"); });
        QVERIFY2(contains(broken, "snapshot train-v2, record " + std::to_string(ids[2]) +
                                      ": its frozen line is not JSON"),
                 broken.c_str());

        // A record edited into a shape training cannot read is not frozen, and is named.
        store->editField(ids[3], "instruction", json{{"a", 1}}, "ana");
        tb::SnapshotOptions val;
        val.split = "validation";
        const std::string refused = errorOf([&] { tb::createSnapshot(*store, val); });
        QVERIFY2(contains(refused, "record " + std::to_string(ids[3]) +
                                       " (alpaca) cannot be trained on: field \"instruction\""),
                 refused.c_str());
    }

    // A writer killed with SIGKILL at an arbitrary instant: every acknowledged edit survives, the
    // big import in flight is all or nothing, and the file passes SQLite's integrity check.
    void killDuringWriteKeepsCommittedEdits()
    {
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "kill.tbstore");
        int64_t id = 0;
        {
            auto store = DataStore::open(path);
            id = store->addRecords({alpaca("count", "0")}, 0, "setup")[0];
        }
        for (int round = 0; round < 3; ++round) {
            int pipeFds[2];
            QCOMPARE(pipe(pipeFds), 0);
            const pid_t child = fork();
            if (child == 0) {
                close(pipeFds[0]);
                auto store = DataStore::open(path);
                for (int i = 1;; ++i) {
                    store->editField(id, "output", std::to_string(round * 100000 + i), "writer");
                    const int32_t acked = round * 100000 + i;
                    if (write(pipeFds[1], &acked, sizeof acked) != sizeof acked)
                        _exit(1);
                    if (i % 20 == 0) {  // now and then a large import that the kill may interrupt
                        store->addRecordsStreaming(0, "writer", [](const auto& sink) {
                            for (int k = 0; k < 20000; ++k)
                                sink(alpaca("bulk " + std::to_string(k), "row"));
                        });
                    }
                }
            }
            close(pipeFds[1]);
            int32_t lastAcked = 0, value = 0;
            int reads = 0;
            while (reads < 25 + round * 7 &&
                   read(pipeFds[0], &value, sizeof value) == sizeof value) {
                lastAcked = value;
                ++reads;
            }
            kill(child, SIGKILL);
            waitpid(child, nullptr, 0);
            while (read(pipeFds[0], &value, sizeof value) == sizeof value)
                lastAcked = value;  // acknowledged before the kill landed
            close(pipeFds[0]);

            QCOMPARE(integrity(path), std::string("ok"));
            auto store = DataStore::open(path);
            const int64_t stored =
                std::stoll(store->record(id).fields["output"].get<std::string>());
            QVERIFY2(stored >= lastAcked,
                     qPrintable(
                         QStringLiteral("stored %1 < acknowledged %2").arg(stored).arg(lastAcked)));
            QVERIFY(stored <=
                    lastAcked + 1);  // at most the edit whose acknowledgement the kill cut off
            // Imports are whole: the count is 1 + a multiple of 20,000.
            tb::RecordQuery all;
            all.includeRemoved = true;
            QCOMPARE((store->count(all) - 1) % 20000, int64_t(0));
        }
    }
};

QTEST_MAIN(TestDataStore)
#include "test_data_store.moc"
