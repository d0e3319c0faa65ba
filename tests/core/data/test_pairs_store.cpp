// Preference pairs in the dataset store: the migration of a version-2 store, imports, pairs from
// blind-comparison verdicts, rankings, choices as shown with swaps, edits and adjudication (each
// with its undo), agreement and Cohen's kappa against hand-computed figures, snapshot contents
// and export, and dedup and the leak/PII scan over pairs.
#include "data/curate/pair_curate.h"
#include "data/store/comparisons.h"
#include "data/store/pairs_store.h"
#include "data/store/snapshot.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "util/error.h"

#include <QtTest>

#include "test_util.h"

#include <sqlite3.h>

#include <cmath>

using nlohmann::json;
using tb::DataStore;
using tbtest::contains;
using tbtest::errorOf;

namespace {

void exec(const std::string& path, const char* sql)
{
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    char* error = nullptr;
    sqlite3_exec(db, sql, nullptr, nullptr, &error);
    const std::string message = error ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    QVERIFY2(message.empty(), message.c_str());
}

std::string plainRow(const std::string& prompt, const std::string& chosen,
                     const std::string& rejected)
{
    return json{{"prompt", prompt}, {"chosen", chosen}, {"rejected", rejected}}.dump() + "\n";
}

// A store with `rows` imported as pairs.
std::unique_ptr<DataStore> withPairs(const QTemporaryDir& dir, const std::string& rows,
                                     tb::PairImportReport* report = nullptr)
{
    auto store = DataStore::open(dir.filePath("s.tbstore").toStdString());
    const std::string file = tbtest::writeText(dir, "pairs.jsonl", rows);
    const auto r = tb::importPairs(*store, file, tb::PairLayout::Auto, "ann");
    if (report)
        *report = r;
    return store;
}

std::vector<int64_t> liveIds(const DataStore& store)
{
    std::vector<int64_t> ids;
    for (const auto& p : tb::storedPairs(store))
        ids.push_back(p.id);
    return ids;
}

std::string contentOf(const std::vector<tb::ChatMessage>& m)
{
    return m.empty() ? std::string() : m.back().content;
}

}  // namespace

class TestPairsStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void migratesAVersionTwoStore();
    void importIsOneUndoableOperation();
    void pairsFromComparisonVerdicts();
    void rankingsMakeEveryOrderedPair();
    void choicesSwapEditAdjudicate();
    void agreementAndKappa();
    void snapshotsFreezePairs();
    void dedupAndScanCoverPairs();
    void pagesByIdEqualTheWholeRead();
};

void TestPairsStore::migratesAVersionTwoStore()
{
    QTemporaryDir dir;
    const std::string path = dir.filePath("old.tbstore").toStdString();
    int64_t item = 0;
    {
        // Version 2: the schema without what migrations 3 and 4 add (a record in version 2's
        // layout, its review columns in `records`).
        auto store = DataStore::openAtVersion(path, 2);
        store->database().exec(
            "INSERT INTO records (kind, fields, created_at, updated_at) VALUES ('alpaca', "
            "'{\"instruction\":\"a\",\"output\":\"b\"}', '2026-01-01T00:00:00.000Z', "
            "'2026-01-01T00:00:00.000Z')");
        tb::NewComparisonSet set;
        set.name = "s";
        set.sourceX = "base";
        set.sourceY = "tuned";
        set.prompts = {"p"};
        set.answersX = {"x"};
        set.answersY = {"y"};
        item = tb::addComparisonSet(*store, set, "ann").front();
        tb::recordVerdict(*store, item, "ann", "a");
    }
    auto store = DataStore::open(path, false);
    QCOMPARE(store->schemaVersion(), DataStore::kSchemaVersion);
    QCOMPARE(store->count(), int64_t(1));
    QCOMPARE(tb::preferencePairs(*store).size(), size_t(1));
    // The verdict given before the migration becomes a stored pair.
    const auto report = tb::pairsFromComparisons(*store, "s", "ann");
    QCOMPARE(report.added, int64_t(1));
    const auto pairs = tb::storedPairs(*store);
    QCOMPARE(pairs.size(), size_t(1));
    QCOMPARE(pairs[0].origin, std::string("compare"));
    QCOMPARE(contentOf(pairs[0].pair.prompt), std::string("p"));
    const auto verdict = tb::verdictOf(*store, item, "ann");
    const bool xWon = verdict->winner == "x";
    QCOMPARE(contentOf(pairs[0].pair.chosen), std::string(xWon ? "x" : "y"));
    QCOMPARE(contentOf(pairs[0].pair.rejected), std::string(xWon ? "y" : "x"));
}

void TestPairsStore::importIsOneUndoableOperation()
{
    QTemporaryDir dir;
    tb::PairImportReport report;
    auto store = withPairs(dir,
                           plainRow("p1", "a", "b") + "{\"prompt\": \"p\"}\n" +
                               plainRow("p2", "c", "d") + plainRow("p3", "e", "e"),
                           &report);
    QCOMPARE(report.imported, int64_t(2));
    QCOMPARE(report.rejected.size(), size_t(2));
    QVERIFY(contains(report.rejected[0].location, "pairs.jsonl:2"));
    QCOMPARE(report.rejected[0].reason, std::string("missing key \"chosen\""));
    QVERIFY(contains(report.rejected[1].location, "pairs.jsonl:4"));
    const auto pairs = tb::storedPairs(*store);
    QCOMPARE(pairs.size(), size_t(2));
    QCOMPARE(pairs[0].pair.promptText, std::string("p1"));
    QCOMPARE(pairs[1].sourceLine, int64_t(3));
    QCOMPARE(pairs[1].origin, std::string("import"));
    QCOMPARE(pairs[1].verdict, std::string("chosen"));
    QCOMPARE(store->sources().back().records, int64_t(2));
    QCOMPARE(store->sources().back().rejected, int64_t(2));
    const auto ops = store->operations();
    QCOMPARE(ops.back().kind, std::string("import-pairs"));
    QCOMPARE(ops.back().changes, int64_t(2));
    store->undo(report.operationId, "ann");
    QVERIFY(tb::storedPairs(*store).empty());
    QCOMPARE(tb::storedPairs(*store, true).size(), size_t(2));
    // A file without a valid pair stores nothing.
    const size_t before = store->operations().size();
    const std::string bad = tbtest::writeText(dir, "bad.jsonl", "{\"prompt\": 1}\n");
    QVERIFY(contains(errorOf([&] { tb::importPairs(*store, bad, tb::PairLayout::Auto, "a"); }),
                     "no valid preference pair"));
    QCOMPARE(store->operations().size(), before);
    // Cancelled while storing (the studio's Cancel): nothing stored, no source, no operation.
    std::string rows;
    for (int i = 0; i < 600; ++i)
        rows += plainRow("q" + std::to_string(i), "good", "bad");
    const std::string many = tbtest::writeText(dir, "many.jsonl", rows);
    const size_t sources = store->sources().size();
    int calls = 0;
    const std::string cancelled = errorOf([&] {
        tb::importPairs(*store, many, tb::PairLayout::Auto, "a",
                        [&](const std::string& phase, double) {
                            ++calls;
                            return phase != "storing pairs" || calls < 4;
                        });
    });
    QVERIFY2(contains(cancelled, "pairs import: cancelled"), cancelled.c_str());
    QCOMPARE(store->operations().size(), before);
    QCOMPARE(store->sources().size(), sources);
    QCOMPARE(tb::storedPairs(*store, true).size(), size_t(2));
}

void TestPairsStore::pairsFromComparisonVerdicts()
{
    QTemporaryDir dir;
    auto store = DataStore::open(dir.filePath("c.tbstore").toStdString());
    tb::NewComparisonSet set;
    set.name = "s";
    set.sourceX = "base";
    set.sourceY = "tuned";
    set.prompts = {"p0", "p1", "p2"};
    set.messages = {json::array({{{"role", "system"}, {"content", "sys"}},
                                 {{"role", "user"}, {"content", "p0"}}}),
                    json(), json()};
    set.answersX = {"x0", "x1", "x2"};
    set.answersY = {"y0", "y1", "y2"};
    const auto items = tb::addComparisonSet(*store, set, "ann");
    tb::recordVerdict(*store, items[0], "ann", "a");
    tb::recordVerdict(*store, items[1], "ann", "b");
    tb::recordVerdict(*store, items[2], "ann", "tie");  // a tie yields no pair
    auto first = tb::pairsFromComparisons(*store, "s", "ann");
    QCOMPARE(first.added, int64_t(2));
    QCOMPARE(first.skipped, int64_t(0));
    const auto pairs = tb::storedPairs(*store);
    QCOMPARE(pairs.size(), size_t(2));
    QCOMPARE(pairs[0].pair.prompt.size(), size_t(2));  // the item's messages
    QCOMPARE(pairs[0].pair.prompt[0].role, std::string("system"));
    QCOMPARE(pairs[1].pair.prompt.size(), size_t(1));  // the prompt as a user turn
    QCOMPARE(pairs[0].sourcePath, std::string("s"));
    QCOMPARE(pairs[0].annotator, std::string("ann"));
    const auto again = tb::pairsFromComparisons(*store, "s", "ann");
    QCOMPARE(again.added, int64_t(0));
    QCOMPARE(again.skipped, int64_t(2));
    QCOMPARE(again.operationId, int64_t(0));
    store->undo(first.operationId, "ann");
    QVERIFY(tb::storedPairs(*store).empty());
    QCOMPARE(tb::pairsFromComparisons(*store, "", "ann").added, int64_t(2));
    // A set name with a typo is named with the sets there are (it reported "added 0").
    const std::string error = errorOf([&] { tb::pairsFromComparisons(*store, "S", "ann"); });
    QVERIFY2(error.find(": no comparison set 'S' (sets: s)") != std::string::npos, error.c_str());
}

void TestPairsStore::rankingsMakeEveryOrderedPair()
{
    QTemporaryDir dir;
    auto store = DataStore::open(dir.filePath("r.tbstore").toStdString());
    const std::vector<tb::ChatMessage> prompt = {{"user", "Name a colour"}};
    const int64_t id = tb::addRanking(*store, prompt, {"red", "green", "blue"}, "ann");
    QCOMPARE(tb::rankings(*store).size(), size_t(1));
    const auto ids = tb::recordRanking(*store, id, "ann", {2, 0, 1});
    QCOMPARE(ids.size(), size_t(3));  // K(K-1)/2
    auto pairs = tb::storedPairs(*store);
    std::vector<std::string> got;
    for (const auto& p : pairs)
        got.push_back(contentOf(p.pair.chosen) + ">" + contentOf(p.pair.rejected));
    QCOMPARE(got, (std::vector<std::string>{"blue>red", "blue>green", "red>green"}));
    QCOMPARE(pairs[0].rankingId, id);
    QCOMPARE(contentOf(pairs[0].pair.prompt), std::string("Name a colour"));
    // A new order by the same annotator replaces the old pairs; undo brings them back.
    const auto second = tb::recordRanking(*store, id, "ann", {0, 1, 2});
    pairs = tb::storedPairs(*store);
    QCOMPARE(pairs.size(), size_t(3));
    QCOMPARE(pairs[0].id, second[0]);
    QCOMPARE(contentOf(pairs[0].pair.chosen) + ">" + contentOf(pairs[0].pair.rejected),
             std::string("red>green"));
    tb::recordRanking(*store, id, "bob", {1, 0, 2});
    QCOMPARE(tb::storedPairs(*store).size(), size_t(6));
    const int64_t rankOp = store->operations()[store->operations().size() - 2].id;
    store->undo(rankOp, "ann");
    QCOMPARE(liveIds(*store).size(), size_t(6));
    QCOMPARE(liveIds(*store)[0], ids[0]);
    QVERIFY(contains(errorOf([&] {
                         tb::recordRanking(*store, id, "ann", {0, 0, 1});
                     }),
                     "must name each of the 3 answers"));
    QVERIFY(contains(errorOf([&] {
                         tb::recordRanking(*store, id, "ann", {0, 1});
                     }),
                     "must name each"));
    QVERIFY(contains(errorOf([&] {
                         tb::recordRanking(*store, 99, "ann", {0, 1});
                     }),
                     "no ranking with id 99"));
    QVERIFY(contains(errorOf([&] { tb::addRanking(*store, prompt, {"a"}, "x"); }),
                     "at least 2 answers"));
    QVERIFY(contains(errorOf([&] {
                         tb::addRanking(*store, prompt, {"a", "a"}, "x");
                     }),
                     "identical"));
    QVERIFY(contains(errorOf([&] {
                         tb::addRanking(*store, prompt, {"a", " "}, "x");
                     }),
                     "answer 2 is empty"));
    QVERIFY(contains(errorOf([&] {
                         tb::addRanking(*store, {}, {"a", "b"}, "x");
                     }),
                     "empty prompt"));
}

void TestPairsStore::choicesSwapEditAdjudicate()
{
    QTemporaryDir dir;
    auto store = withPairs(dir, plainRow("p", "good", "bad"));
    const int64_t id = liveIds(*store)[0];
    auto pair = [&] { return tb::storedPair(*store, id); };
    // a, as shown unswapped, is the stored chosen answer.
    tb::recordPairChoice(*store, id, "ann", "a");
    QCOMPARE(pair().verdict, std::string("chosen"));
    const int64_t swapOp = tb::swapPair(*store, id, "ann");
    QVERIFY(pair().swapped);
    // Shown swapped, a is the stored rejected answer: bob disagrees with ann.
    tb::recordPairChoice(*store, id, "bob", "a");
    QCOMPARE(pair().choices[1].verdict, std::string("rejected"));
    QCOMPARE(pair().verdict, std::string("disputed"));
    QVERIFY(!tb::trainingPair(pair()));
    QCOMPARE(tb::disputedPairs(*store), std::vector<int64_t>{id});
    // The adjudicator picks b as shown (the stored chosen answer).
    const int64_t adjOp = tb::adjudicatePair(*store, id, "b", "lead");
    QCOMPARE(*pair().adjudication, std::string("chosen"));
    QCOMPARE(pair().verdict, std::string("chosen"));
    QVERIFY(tb::disputedPairs(*store).empty());
    QCOMPARE(tb::trainingPair(pair())->chosenText, std::string("good"));
    store->undo(adjOp, "lead");
    QVERIFY(!pair().adjudication);
    // Both say the stored rejected answer is better: a flipped pair for training.
    tb::recordPairChoice(*store, id, "ann", "a");  // now also "rejected" (shown swapped)
    QCOMPARE(pair().verdict, std::string("rejected"));
    const auto flipped = tb::trainingPair(pair());
    QCOMPARE(flipped->chosenText, std::string("bad"));
    QCOMPARE(flipped->rejectedText, std::string("good"));
    tb::recordPairChoice(*store, id, "ann", "tie");
    QCOMPARE(pair().verdict, std::string("disputed"));
    tb::recordPairChoice(*store, id, "bob", "tie");
    QCOMPARE(pair().verdict, std::string("tie"));
    QVERIFY(!tb::trainingPair(pair()));
    // Undo of bob's tie brings back his earlier choice.
    store->undo(store->operations().back().id, "bob");
    QCOMPARE(pair().choices[1].choice, std::string("a"));
    // ann changed her first choice since: undoing it waits for that; the swap does not.
    QVERIFY(contains(errorOf([&] { store->undo(swapOp - 1, "ann"); }), "changed since"));
    store->undo(swapOp, "ann");
    QVERIFY(!pair().swapped);
    // Edits.
    const int64_t editOp = tb::editPairAnswer(*store, id, "rejected", "worse", "ann");
    QCOMPARE(pair().pair.rejectedText, std::string("worse"));
    QVERIFY(contains(errorOf([&] { tb::editPairAnswer(*store, id, "chosen", "worse", "ann"); }),
                     "chosen is identical to rejected"));
    QVERIFY(contains(errorOf([&] { tb::editPairAnswer(*store, id, "chosen", "", "ann"); }),
                     "empty chosen answer"));
    QVERIFY(contains(errorOf([&] { tb::editPairAnswer(*store, id, "middle", "x", "ann"); }),
                     "not chosen or rejected"));
    store->undo(editOp, "ann");
    QCOMPARE(pair().pair.rejectedText, std::string("bad"));
    QVERIFY(contains(errorOf([&] { tb::recordPairChoice(*store, id, "ann", "c"); }),
                     "is not a, b, tie or skip"));
    QVERIFY(contains(errorOf([&] { tb::recordPairChoice(*store, 99, "ann", "a"); }),
                     "no pair with id 99"));
    QVERIFY(contains(errorOf([&] { tb::recordPairChoice(*store, id, "", "a"); }),
                     "annotator's name is empty"));
}

void TestPairsStore::agreementAndKappa()
{
    QTemporaryDir dir;
    std::string rows;
    for (int i = 0; i < 11; ++i)
        rows += plainRow(tbtest::numbered("p", i), "c", "r");
    auto store = withPairs(dir, rows);
    const auto ids = liveIds(*store);
    // Verdicts (c = chosen, r = rejected, t = tie), hand-counted:
    //   ann: c c c c c r r r t t    bob: c c c r r r r t t c
    // agreed 6 of 10: po = 0.6; ann c5 r3 t2, bob c4 r4 t2: pe = .5*.4 + .3*.4 + .2*.2 = 0.36;
    // kappa = (0.6 - 0.36) / (1 - 0.36) = 0.375.
    const std::string ann = "cccccrrrtt", bob = "cccrrrrttc";
    auto shown = [](char v, bool swapped) -> std::string {
        if (v == 't')
            return "tie";
        return (v == 'c') != swapped ? "a" : "b";
    };
    for (size_t i = 0; i < 10; ++i) {
        tb::recordPairChoice(*store, ids[i], "ann", shown(ann[i], false));
        // bob judges half of the pairs shown swapped: his verdicts must not depend on it.
        const bool swap = i % 2 == 1;
        if (swap)
            tb::swapPair(*store, ids[i], "bob");
        tb::recordPairChoice(*store, ids[i], "bob", shown(bob[i], swap));
    }
    tb::recordPairChoice(*store, ids[10], "ann", "a");    // judged by one annotator only
    tb::recordPairChoice(*store, ids[0], "cat", "skip");  // skips are left out
    const auto agreement = tb::pairChoiceAgreement(*store);
    QCOMPARE(agreement.size(), size_t(1));
    QCOMPARE(agreement[0].annotatorA, std::string("ann"));
    QCOMPARE(agreement[0].annotatorB, std::string("bob"));
    QCOMPARE(agreement[0].items, int64_t(10));
    QCOMPARE(agreement[0].agreed, int64_t(6));
    QVERIFY(std::abs(agreement[0].percent - 60.0) < 1e-9);
    QVERIFY(std::abs(agreement[0].kappa - 0.375) < 1e-9);
    // Disagreements (pairs 4, 5, 8, 10) and pair 1 (cat's skip beside two "chosen") are disputed.
    QCOMPARE(tb::disputedPairs(*store),
             (std::vector<int64_t>{ids[0], ids[3], ids[4], ids[7], ids[9]}));
}

void TestPairsStore::snapshotsFreezePairs()
{
    QTemporaryDir dir;
    auto store = withPairs(dir, plainRow("p0", "a", "b"));
    // A snapshot made before any of the other pairs: only the first.
    tb::SnapshotOptions options;
    const auto before = tb::createSnapshot(*store, options);
    QCOMPARE(before.records, int64_t(0));
    QCOMPARE(before.manifest["pairs"]["count"].get<int64_t>(), int64_t(1));
    const std::string more =
        tbtest::writeText(dir, "more.jsonl",
                          plainRow("p1", "c", "d") + plainRow("p2", "e", "f") +
                              plainRow("p3", "g", "h") + plainRow("p4", "i", "j") +
                              json{{"prompt", {{{"role", "user"}, {"content", "q"}}}},
                                   {"chosen", {{{"role", "assistant"}, {"content", "x"}}}},
                                   {"rejected", {{{"role", "assistant"}, {"content", "y"}}}},
                                   {"score_chosen", 2},
                                   {"score_rejected", 1},
                                   {"margin", 0.5}}
                                  .dump());
    const int64_t op = tb::importPairs(*store, more, tb::PairLayout::Auto, "ann").operationId;
    QVERIFY(op > 0);
    const auto ids = liveIds(*store);
    QCOMPARE(ids.size(), size_t(6));
    tb::recordPairChoice(*store, ids[1], "ann", "b");  // flipped
    tb::recordPairChoice(*store, ids[2], "ann", "tie");
    tb::recordPairChoice(*store, ids[3], "ann", "skip");
    tb::recordPairChoice(*store, ids[4], "ann", "a");
    tb::recordPairChoice(*store, ids[4], "bob", "b");  // disputed
    tb::recordPairChoice(*store, ids[5], "ann", "b");  // flipped, scores swapped, margin dropped
    tb::NewRecord r;
    r.kind = "alpaca";
    r.fields = {{"instruction", "i"}, {"output", "o"}};
    const int64_t rec = store->addRecords({r}, 0, "ann")[0];
    store->setStatus(rec, tb::ReviewStatus::Accepted, "ann");
    const auto snap = tb::createSnapshot(*store, options);
    QCOMPARE(snap.records, int64_t(1));
    QCOMPARE(snap.manifest["pairs"]["count"].get<int64_t>(), int64_t(3));
    const auto pairs = tb::snapshotPairs(*store, snap.id);
    QCOMPARE(pairs.size(), size_t(3));
    QCOMPARE(pairs[0].source, tbtest::numbered("store pair ", ids[0]));
    QCOMPARE(pairs[0].chosenText, std::string("a"));
    QCOMPARE(pairs[1].source, tbtest::numbered("store pair ", ids[1]));
    QCOMPARE(pairs[1].chosenText, std::string("d"));
    QCOMPARE(pairs[1].rejectedText, std::string("c"));
    QCOMPARE(contentOf(pairs[2].chosen), std::string("y"));
    QCOMPARE(*pairs[2].scoreChosen, 1.0);
    QCOMPARE(*pairs[2].scoreRejected, 2.0);
    QVERIFY(!pairs[2].margin);
    QCOMPARE(tb::snapshotPairs(*store, before.id).size(), size_t(1));
    // Later changes leave the frozen pairs as they were.
    store->undo(op, "ann");
    QCOMPARE(tb::snapshotPairs(*store, snap.id).size(), size_t(3));
    // Export: TRL's standard layout, one row per line.
    const std::string out = dir.filePath("out/pairs.jsonl").toStdString();
    tb::makeDirectories(dir.filePath("out").toStdString());
    QCOMPARE(tb::exportPairsJsonl(*store, snap.id, out), int64_t(3));
    std::string expected;
    for (const auto& p : pairs)
        expected += tb::pairToJson(p).dump() + "\n";
    QCOMPARE(tb::readFile(out), expected);
    QVERIFY(contains(tb::readFile(out), "{\"chosen\":\"d\",\"prompt\":\"p1\",\"rejected\":\"c\"}"));
    // A tampered line is found.
    exec(store->path(), "UPDATE snapshot_pairs SET line = replace(line, '\"d\"', '\"z\"')");
    QVERIFY(contains(errorOf([&] { tb::snapshotPairs(*store, snap.id); }), "SHA-256"));
    // A store without records or pairs still refuses an empty snapshot.
    QTemporaryDir other;
    auto empty = DataStore::open(other.filePath("e.tbstore").toStdString());
    QVERIFY(contains(errorOf([&] { tb::createSnapshot(*empty, options); }), "no accepted"));
}

void TestPairsStore::dedupAndScanCoverPairs()
{
    QTemporaryDir dir;
    auto store = withPairs(dir, plainRow("Sky colour?", "Blue", "Green") +
                                    plainRow("sky  COLOUR?", "blue", "green") +
                                    plainRow("Mail me", "at jane.doe@example.com", "no") +
                                    plainRow("Other", "x", "y"));
    const auto ids = liveIds(*store);
    const auto found = tb::dedupPairs(*store, std::nullopt, false, "ann");
    QCOMPARE(found.records, int64_t(4));
    QCOMPARE(found.exactDuplicates, int64_t(1));
    QCOMPARE(found.clusterIds, (std::vector<std::vector<int64_t>>{{ids[0], ids[1]}}));
    QCOMPARE(found.operationId, int64_t(0));
    const auto applied = tb::dedupPairs(*store, std::nullopt, true, "ann");
    QCOMPARE(applied.removed, int64_t(1));
    QCOMPARE(liveIds(*store), (std::vector<int64_t>{ids[0], ids[2], ids[3]}));
    store->undo(applied.operationId, "ann");
    QCOMPARE(liveIds(*store).size(), size_t(4));

    const auto scan = tb::scanPairs(*store, "ann");
    QCOMPARE(scan.pairs, int64_t(4));
    QCOMPARE(scan.flagged, int64_t(1));
    QCOMPARE(scan.byKind.at("email"), int64_t(1));
    QCOMPARE(tb::storedPair(*store, ids[2]).flags, std::vector<std::string>{"email"});
    QVERIFY(tb::storedPair(*store, ids[0]).flags.empty());
    QCOMPARE(store->operations().back().kind, std::string("scan-pairs"));
    tb::SnapshotOptions options;
    options.excludeFlagged = true;
    const auto snap = tb::createSnapshot(*store, options);
    QCOMPARE(tb::snapshotPairs(*store, snap.id).size(), size_t(3));
}

void TestPairsStore::pagesByIdEqualTheWholeRead()
{
    // 300 pairs: the whole read takes every choice and flag in one pass each, a page of a few ids
    // looks them up by id; both give each pair the same choices, flags and verdict.
    QTemporaryDir dir;
    std::string rows = plainRow("Mail me", "at jane.doe@example.com", "no") +
                       plainRow("Mail me", "at jane.doe@example.com", "no");
    for (int i = 0; i < 298; ++i)
        rows += plainRow("Prompt " + std::to_string(i), "good " + std::to_string(i), "bad");
    auto store = withPairs(dir, rows);
    const auto ids = liveIds(*store);
    QCOMPARE(ids.size(), size_t(300));
    tb::recordPairChoice(*store, ids[0], "ann", "a");
    tb::recordPairChoice(*store, ids[0], "bob", "b");
    tb::recordPairChoice(*store, ids[1], "ann", "tie");
    tb::recordPairChoice(*store, ids[299], "ann", "b");
    tb::scanPairs(*store, "ann");  // flags both mail pairs
    QCOMPARE(tb::dedupPairs(*store, std::nullopt, true, "ann").removed, int64_t(1));  // ids[1]
    std::map<int64_t, tb::StoredPair> whole;
    for (auto& p : tb::storedPairs(*store, true))
        whole[p.id] = std::move(p);
    QCOMPARE(whole.size(), size_t(300));
    // The table's ids: the live pairs in id order, as the whole read lists them.
    std::vector<int64_t> live;
    for (const tb::StoredPair& p : tb::storedPairs(*store))
        live.push_back(p.id);
    QCOMPARE(live.size(), size_t(299));
    QCOMPARE(tb::storedPairIds(*store), live);
    const std::vector<int64_t> page{ids[299], ids[1], 987654, ids[0], ids[150]};
    const auto byId = tb::storedPairsById(*store, page);
    QCOMPARE(byId.size(), page.size());
    for (size_t i = 0; i < page.size(); ++i) {
        const tb::StoredPair& got = byId[i];
        QCOMPARE(got.id, page[i]);
        if (page[i] == 987654) {  // not in the store
            QVERIFY(got.removed);
            continue;
        }
        const tb::StoredPair& want = whole.at(page[i]);
        QCOMPARE(got.removed, want.removed);
        QCOMPARE(got.flags, want.flags);
        QCOMPARE(got.verdict, want.verdict);
        QCOMPARE(got.choices.size(), want.choices.size());
        for (size_t c = 0; c < got.choices.size(); ++c) {
            QCOMPARE(got.choices[c].annotator, want.choices[c].annotator);
            QCOMPARE(got.choices[c].verdict, want.choices[c].verdict);
        }
    }
    QCOMPARE(byId[3].verdict, std::string("disputed"));  // ann and bob differ on ids[0]
    QCOMPARE(byId[3].flags, std::vector<std::string>{"email"});
    QVERIFY(byId[1].removed && byId[1].choices.empty());  // removed: its choice not shown
    QCOMPARE(byId[0].verdict, std::string("rejected"));
    QCOMPARE(tb::pairsJudgedBy(*store, "ann"), (std::vector<int64_t>{ids[0], ids[1], ids[299]}));
    QCOMPARE(tb::pairsJudgedBy(*store, "bob"), std::vector<int64_t>{ids[0]});
}

QTEST_GUILESS_MAIN(TestPairsStore)
#include "test_pairs_store.moc"
