// Snapshots at scale and the statement cache: snapshot lines equal nlohmann::json's parse-and-dump
// (the reference, what snapshots wrote before lines were spliced), a store of many varied records
// freezes and exports the bytes that reference gives (SHA-256 checked with Qt's), and changes reuse
// their prepared statements across a rolled-back operation with the same history as before.
#include "data/store/snapshot.h"
#include "data/store/snapshot_line.h"
#include "data/store/store.h"
#include "util/error.h"

#include <QCryptographicHash>
#include <QFile>
#include <QtTest>

#include "test_util.h"

using nlohmann::json;
using tb::DataStore;
using tb::NewRecord;

namespace {

using tbtest::contains;
using tbtest::errorOf;

std::string reference(const std::string& fields, int64_t id)
{
    json j = json::parse(fields);
    j["record_id"] = id;
    return j.dump();
}

// Varied fields: unicode, escapes, control characters, nested values, keys either side of
// "record_id", numbers the splice leaves to the parser.
json variedFields(int i)
{
    json f = {{"instruction",
               "Question " + std::to_string(i) + " caf\u00e9 \xe2\x82\xac \xf0\x9f\x98\x80"},
              {"input", i % 3 == 0 ? std::string("line\nbreak\t\"quoted\" \\ \x01\x1f\x7f") : ""},
              {"output", "answer " + std::to_string(i * 7919)}};
    if (i % 5 == 0)
        f["rank"] = i;  // before "record_id"
    if (i % 7 == 0)
        f["score"] = i / 8.0;  // a float
    if (i % 11 == 0)
        f["a_meta"] = {{"z", {1, -2, true, nullptr}}, {"b", json::object()}, {"c", json::array()}};
    if (i % 13 == 0)
        f["zz"] = -1234567890123;
    return f;
}

// n alpaca records of variedFields(0 .. n - 1).
std::vector<NewRecord> variedRecords(int n)
{
    std::vector<NewRecord> records;
    for (int i = 0; i < n; ++i) {
        NewRecord r;
        r.kind = "alpaca";
        r.fields = variedFields(i);
        records.push_back(r);
    }
    return records;
}

}  // namespace

class TestDataSnapshot : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void linesEqualTheParsersDump()
    {
        const std::vector<std::string> cases = {
            "{}",
            "{\"a\":1}",
            "{\"z\":1}",
            "{\"input\":\"\",\"instruction\":\"x\",\"output\":\"y\"}",
            "{\"record_a\":1,\"record_j\":2}",
            "{\"record_id\":5,\"x\":1}",     // its own record_id: overwritten
            "{\"a\":1.5,\"z\":2}",           // float
            "{\"a\":1e3}",                   // exponent
            "{\"a\":-0}",                    // not the dump's form
            "{\"a\":007}",                   // (invalid JSON: both throw)
            "{\"a\":12345678901234567890}",  // beyond int64
            "{ \"a\": 1 }",                  // spaces
            "{\"b\":1,\"a\":2}",             // unsorted keys
            "{\"a\":1,\"a\":2}",             // duplicate keys
            "{\"a\\u0062\":1}",              // escaped key
            "{\"a\":\"\\/\"}",               // an escape the dump never writes
            "{\"a\":\"\\u00e9\"}",           // \u for a printable character
            "{\"a\":\"\\u0001\\u001f\\b\\f\\n\\r\\t\\\"\\\\\"}",
            "{\"a\":\"\\u0008\"}",  // \u where the dump writes \b
            "{\"a\":\"\\u001F\"}",  // uppercase hex
            "{\"a\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
            "{\"a\":[1,[2,{\"y\":null,\"x\":false}],\"s\"],\"b\":{\"d\":true,\"c\":[]}}",
            "{\"a\":{\"b\":2,\"a\":1}}",  // unsorted nested keys
            "{\"a\":[1,2,]}",             // (invalid)
            "{\"a\":tru}",                // (invalid)
            "{\"a\":1}x",                 // trailing bytes (invalid)
            "[1,2]",                      // not an object: both throw
        };
        for (const std::string& c : cases) {
            std::string expected = "<throws>", got = "<throws>";
            try {
                expected = reference(c, 42);
            } catch (const std::exception&) {
            }
            try {
                got = tb::snapshotLine(c, 42);
            } catch (const std::exception&) {
            }
            QVERIFY2(got == expected, qPrintable(QString::fromStdString(c + " -> " + got)));
        }
        for (int i = 0; i < 500; ++i) {
            const std::string stored = variedFields(i).dump();
            QCOMPARE(tb::snapshotLine(stored, i), reference(stored, i));
        }
    }

    void manyRecordsFreezeAndExportTheReferenceBytes()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(dir.filePath("many.tbstore").toStdString());
        const std::vector<NewRecord> records = variedRecords(3000);
        const auto ids = store->addRecords(records, 0, "importer");
        store->setSplit(ids[1], "validation", "ana");  // left out of the train snapshot
        tb::SnapshotOptions o;
        o.acceptedOnly = false;
        const tb::SnapshotInfo s = tb::createSnapshot(*store, o);
        std::string expected;
        for (size_t i = 0; i < records.size(); ++i)
            if (i != 1)
                expected += reference(records[i].fields.dump(), ids[i]) + "\n";
        QCOMPARE(s.records, int64_t(records.size() - 1));
        QCOMPARE(tb::snapshotJsonl(*store, s.id), expected);
        const std::string file =
            tb::exportSnapshot(*store, s.id, dir.filePath("out").toStdString());
        QFile f(QString::fromStdString(file));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        QCOMPARE(bytes.toStdString(), expected);
        QCOMPARE(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex().toStdString(),
                 s.sha256);
        QCOMPARE(s.manifest["sha256"], json(s.sha256));
        QCOMPARE(QDir(dir.filePath("out")).entryList(QDir::Files).size(), qsizetype(2));  // no temp
        // An export over another that does not get through leaves no manifest of the old one
        // beside whatever JSONL is there (the JSONL's place is a folder here, so it fails).
        const QString again = dir.filePath("again");
        QVERIFY(QDir().mkpath(again + "/" + QString::fromStdString(s.id) + ".jsonl"));
        const std::string oldManifest =
            (again + "/" + QString::fromStdString(s.id) + ".manifest.json").toStdString();
        tb::writeFileAtomic(oldManifest, "{\"records\": 1}\n");
        QVERIFY(!errorOf([&] { tb::exportSnapshot(*store, s.id, again.toStdString()); }).empty());
        QVERIFY(!tb::fileExists(oldManifest));
        const auto frozen = tb::snapshotRecords(*store, s.id);
        QCOMPARE(frozen.size(), records.size() - 1);
        QCOMPARE(frozen[2].fields, records[3].fields);

        // A failing snapshot (no token counts for a length filter) leaves no entry behind.
        o.minTokens = 1;
        QVERIFY(contains(errorOf([&] { tb::createSnapshot(*store, o); }), "no token count"));
        QCOMPARE(tb::listSnapshots(*store).size(), size_t(1));
    }

    void changesReuseStatementsAcrossARollback()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(dir.filePath("ops.tbstore").toStdString());
        std::vector<NewRecord> records(50);
        for (auto& r : records) {
            r.kind = "alpaca";
            r.fields = {{"instruction", "q"}, {"input", ""}, {"output", "a"}};
        }
        const auto ids = store->addRecords(records, 0, "importer");
        const size_t historyBefore = store->history().size();
        // The last change is invalid: the whole operation rolls back.
        std::vector<DataStore::Change> bad;
        for (int64_t id : ids)
            bad.push_back({id, "split", "validation"});
        bad.push_back({ids[0], "split", "holdout"});
        QVERIFY(contains(errorOf([&] { store->applyOperation("split", "ana", {}, {}, bad); }),
                         "invalid split"));
        QCOMPARE(store->history().size(), historyBefore);
        tb::RecordQuery validation;
        validation.split = "validation";
        QCOMPARE(store->count(validation), int64_t(0));

        // The same statements then write a valid operation: one history row per real change.
        std::vector<DataStore::Change> good;
        for (size_t i = 0; i < ids.size(); ++i)
            good.push_back({ids[i], "split", i % 2 ? "validation" : "train"});
        good.push_back({ids[3], "fields.output", "edited"});
        good.push_back({ids[3], "status", "accepted"});
        const int64_t op = store->applyOperation("split", "ana", {}, {}, good);
        QCOMPARE(store->count(validation), int64_t(ids.size() / 2));
        const auto history = store->history();
        QCOMPARE(history.size(), historyBefore + ids.size() / 2 + 2);
        const auto& h = history[historyBefore];
        QCOMPARE(h.operationId, op);
        QCOMPARE(h.recordId, ids[1]);
        QCOMPARE(h.field, std::string("split"));
        QCOMPARE(h.oldValue, json("train"));
        QCOMPARE(h.newValue, json("validation"));
        QCOMPARE(store->recordFields(ids[3]).fields["output"], json("edited"));
        store->undo(op, "ana");
        QCOMPARE(store->count(validation), int64_t(0));
        QCOMPARE(store->recordFields(ids[3]).fields["output"], json("a"));
        QVERIFY(contains(errorOf([&] { store->setSplit(999999, "train", "ana"); }),
                         "no record with id 999999"));
    }
    // Progress climbs by record id to the pairs phase; a cancel anywhere stores nothing and leaves
    // the version free, and the snapshot made afterwards equals one made without progress.
    void progressAndCancel()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(dir.filePath("p.tbstore").toStdString());
        const std::vector<NewRecord> records = variedRecords(10000);
        store->addRecords(records, 0, "importer");
        tb::SnapshotOptions o;
        o.acceptedOnly = false;
        std::vector<std::pair<std::string, double>> heard;
        const auto listen = [&heard](const std::string& phase, double fraction) {
            heard.emplace_back(phase, fraction);
            return true;
        };
        const tb::SnapshotInfo first = tb::createSnapshot(*store, o, listen);
        QCOMPARE(first.id, std::string("train-v1"));
        QVERIFY(heard.size() >= 7);  // 0, four of 2,048 rows, the pairs' two
        QCOMPARE(heard.front().first, std::string("records"));
        QCOMPARE(heard.front().second, 0.0);
        QCOMPARE(heard.back(), std::make_pair(std::string("pairs"), 1.0));
        double last = 0.0;
        for (const auto& [phase, fraction] : heard) {
            if (phase == "records") {
                QVERIFY(fraction >= last && fraction <= 1.0);
                last = fraction;
            }
        }
        QVERIFY2(last > 0.75 && last < 1.0, qPrintable(QString::number(last)));

        // Cancelled at each report in turn: the error says so and nothing is stored.
        for (size_t stopAt = 0; stopAt < heard.size(); stopAt += 3) {
            size_t calls = 0;
            const std::string error = errorOf([&] {
                tb::createSnapshot(*store, o,
                                   [&](const std::string&, double) { return calls++ < stopAt; });
            });
            QVERIFY2(contains(error, "snapshot cancelled"), error.c_str());
            QVERIFY2(contains(error, "p.tbstore"), error.c_str());
            QCOMPARE(tb::listSnapshots(*store).size(), size_t(1));
        }
        const tb::SnapshotInfo second = tb::createSnapshot(*store, o);
        QCOMPARE(second.id, std::string("train-v2"));
        QCOMPARE(second.sha256, first.sha256);
        QCOMPARE(second.records, int64_t(10000));
    }
};

QTEST_MAIN(TestDataSnapshot)
#include "test_data_snapshot.moc"
