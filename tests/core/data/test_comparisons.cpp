// Blind comparison in the dataset store: the migration of a version-1 store, seeded blind
// presentation, verdicts and preference pairs read through a second connection, undo and
// re-judgement, win rates against the Wilson interval solved independently, Cohen's kappa against
// its definition on a hand-made case, and bad input.
#include "data/curate/comparison.h"
#include "data/store/comparisons.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "util/error.h"

#include <QtTest>

#include "test_util.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <set>

using nlohmann::json;
using tb::DataStore;

namespace {

using tbtest::contains;
using tbtest::errorOf;
using tbtest::numbered;
using tbtest::tempPath;

// n prompts "p<i>" with answers "x<i>" of source "base" and "y<i>" of source "tuned".
tb::NewComparisonSet makeSet(const std::string& name, int n, uint64_t seed,
                             const std::string& sourceX = "base",
                             const std::string& sourceY = "tuned")
{
    tb::NewComparisonSet set;
    set.name = name;
    set.sourceX = sourceX;
    set.sourceY = sourceY;
    set.seed = seed;
    for (int i = 0; i < n; ++i) {
        set.prompts.push_back(numbered("p", i));
        set.answersX.push_back(numbered("x", i));
        set.answersY.push_back(numbered("y", i));
    }
    return set;
}

// The choice ("a" or "b") that names source `side` ("x" or "y") on an item as shown.
std::string choiceFor(const DataStore& store, int64_t itemId, const std::string& side)
{
    const tb::BlindItem b = tb::blindItem(store, itemId);
    const bool xIsA = b.answerA.rfind("x", 0) == 0;  // the answers of source X start with "x"
    return (side == "x") == xIsA ? "a" : "b";
}

std::set<std::string> tableNames(const std::string& path)
{
    auto store = DataStore::open(path, false);
    std::set<std::string> names;
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW)
        names.insert(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return names;
}

// The Wilson interval's bounds as the roots of (phat - p)^2 = z^2 p (1 - p) / n, a quadratic in p.
std::pair<double, double> wilsonByQuadratic(double successes, double n, double z)
{
    const double phat = successes / n, k = z * z / n;
    const double a = 1 + k, b = -(2 * phat + k), c = phat * phat;
    const double root = std::sqrt(b * b - 4 * a * c);
    return {(-b - root) / (2 * a), (-b + root) / (2 * a)};
}

}  // namespace

class TestComparisons : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void migratesAVersionOneStore()
    {
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "old.tbstore");
        // Version 1: the first schema, two records in its layout.
        DataStore::openAtVersion(path, 1)->database().exec(
            "INSERT INTO records (kind, fields, created_at, updated_at) VALUES ('alpaca', "
            "'{\"instruction\":\"a\",\"output\":\"b\"}', 'T', 'T'), ('alpaca', "
            "'{\"instruction\":\"a\",\"output\":\"b\"}', 'T', 'T')");
        sqlite3* db = nullptr;
        sqlite3_open(path.c_str(), &db);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db,
                           "SELECT group_concat(name, ' ') FROM (SELECT name FROM "
                           "sqlite_master WHERE type = 'table' ORDER BY name)",
                           -1, &st, nullptr);
        sqlite3_step(st);
        const std::string v1 = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr);
        sqlite3_step(st);
        QCOMPARE(sqlite3_column_int(st, 0), 1);
        sqlite3_finalize(st);
        sqlite3_close(db);
        QCOMPARE(v1, std::string("history labels meta notes operations records scan_flags "
                                 "snapshot_records snapshots sources"));

        auto store = DataStore::open(path, false);
        QCOMPARE(store->schemaVersion(), DataStore::kSchemaVersion);
        QCOMPARE(store->count(), int64_t(2));  // the records survive
        const auto tables = tableNames(path);
        QVERIFY(tables.count("comparison_items") && tables.count("comparison_verdicts") &&
                tables.count("preference_pairs"));
        const auto ids = tb::addComparisonSet(*store, makeSet("s", 2, 1), "ann");
        QCOMPARE(ids.size(), size_t(2));
        QCOMPARE(tb::recordVerdict(*store, ids[0], "ann", "a") > 0, true);
    }

    void presentationIsSeededAndBlind()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const auto ids = tb::addComparisonSet(*store, makeSet("first", 12, 42), "ann");
        QCOMPARE(ids.size(), size_t(12));
        const auto items = tb::comparisonItems(*store, "first");
        const auto blind = tb::blindItems(*store, "first");
        QCOMPARE(blind.size(), size_t(12));
        std::set<std::string> prompts;
        int aIsX = 0;
        bool shuffled = false;
        for (size_t i = 0; i < blind.size(); ++i) {
            QCOMPARE(blind[i].id, items[i].id);
            QVERIFY(i == 0 || blind[i].position > blind[i - 1].position);
            prompts.insert(blind[i].prompt);
            const std::string n = blind[i].prompt.substr(1);
            // A and B are the item's two answers, on the side its coin flip gave.
            QCOMPARE(blind[i].answerA, std::string(items[i].aIsX ? "x" : "y").append(n));
            QCOMPARE(blind[i].answerB, std::string(items[i].aIsX ? "y" : "x").append(n));
            aIsX += items[i].aIsX;
            shuffled = shuffled || blind[i].prompt != numbered("p", i);
            QCOMPARE(items[i].sourceX, std::string("base"));
        }
        QCOMPARE(prompts.size(), size_t(12));  // a permutation of the prompts
        QVERIFY(shuffled);
        QVERIFY(aIsX > 0 && aIsX < 12);  // both sides occur
        // The ids come back in input order.
        for (size_t i = 0; i < ids.size(); ++i)
            QCOMPARE(tb::blindItem(*store, ids[i]).prompt, numbered("p", i));

        // The same seed gives the same presentation, another seed another one.
        tb::addComparisonSet(*store, makeSet("again", 12, 42), "ann");
        tb::addComparisonSet(*store, makeSet("other", 12, 43), "ann");
        const auto again = tb::blindItems(*store, "again");
        const auto other = tb::blindItems(*store, "other");
        bool differs = false;
        for (size_t i = 0; i < blind.size(); ++i) {
            QCOMPARE(again[i].prompt, blind[i].prompt);
            QCOMPARE(again[i].answerA, blind[i].answerA);
            differs = differs || other[i].prompt != blind[i].prompt ||
                      other[i].answerA != blind[i].answerA;
        }
        QVERIFY(differs);
        QCOMPARE(tb::comparisonSets(*store), (std::vector<std::string>{"again", "first", "other"}));

        // Appending to a set places the new items after the existing ones.
        tb::addComparisonSet(*store, makeSet("first", 3, 7), "ann");
        const auto grown = tb::blindItems(*store, "first");
        QCOMPARE(grown.size(), size_t(15));
        for (size_t i = 0; i < 12; ++i)
            QCOMPARE(grown[i].id, blind[i].id);
    }

    void verdictsStorePairsThatASecondConnectionReads()
    {
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "s.tbstore");
        auto store = DataStore::open(path);
        tb::NewComparisonSet set = makeSet("chat", 3, 5);
        set.messages = {json::array({{{"role", "user"}, {"content", "p0"}}}), json(), json()};
        const auto ids = tb::addComparisonSet(*store, set, "ann");
        auto reader = DataStore::open(path, false);

        const tb::BlindItem shown = tb::blindItem(*store, ids[0]);
        const int64_t v = tb::recordVerdict(*store, ids[0], "ana", "a", "A is more precise");
        const auto pairs = tb::preferencePairs(*reader, "chat");
        QCOMPARE(pairs.size(), size_t(1));
        const tb::PreferencePair& p = pairs[0];
        QCOMPARE(p.verdictId, v);
        QCOMPARE(p.itemId, ids[0]);
        QCOMPARE(p.prompt, std::string("p0"));
        QCOMPARE(p.messages, set.messages[0]);
        QCOMPARE(p.chosen, shown.answerA);  // "a" chose the answer shown as A
        QCOMPARE(p.rejected, shown.answerB);
        QCOMPARE(p.annotator, std::string("ana"));
        const bool aWasX = shown.answerA == "x0";
        QCOMPARE(p.sourceChosen, std::string(aWasX ? "base" : "tuned"));
        QCOMPARE(p.sourceRejected, std::string(aWasX ? "tuned" : "base"));
        const auto verdicts = tb::comparisonVerdicts(*reader, "chat");
        QCOMPARE(verdicts.size(), size_t(1));
        QCOMPARE(verdicts[0].note, std::string("A is more precise"));
        QCOMPARE(verdicts[0].choice, std::string("a"));
        QCOMPARE(verdicts[0].winner, std::string(aWasX ? "x" : "y"));

        // "b" chooses B; a tie stores a verdict and no pair.
        const tb::BlindItem second = tb::blindItem(*store, ids[1]);
        tb::recordVerdict(*store, ids[1], "ana", "b");
        tb::recordVerdict(*store, ids[2], "ana", "tie", "both fine");
        const auto all = tb::preferencePairs(*reader);
        QCOMPARE(all.size(), size_t(2));
        QCOMPARE(all[1].chosen, second.answerB);
        QVERIFY(all[1].messages.is_null());
        QCOMPARE(tb::comparisonVerdicts(*reader, "chat").size(), size_t(3));
        QVERIFY(!tb::nextUnjudged(*reader, "chat", "ana"));
        const auto progress = tb::comparisonProgress(*reader, "chat", "ana");
        QCOMPARE(progress.judged, int64_t(3));
        QCOMPARE(progress.total, int64_t(3));
        QCOMPARE(tb::comparisonProgress(*reader, "chat", "ben").judged, int64_t(0));
        QCOMPARE(tb::nextUnjudged(*reader, "chat", "ben")->id,
                 tb::blindItems(*reader, "chat")[0].id);
    }

    void undoAndRejudgement()
    {
        QTemporaryDir dir;
        const std::string path = tempPath(dir, "s.tbstore");
        auto store = DataStore::open(path);
        const auto ids = tb::addComparisonSet(*store, makeSet("s", 2, 9), "ann");
        auto reader = DataStore::open(path, false);
        const tb::BlindItem item = tb::blindItem(*store, ids[0]);

        const int64_t first = tb::recordVerdict(*store, ids[0], "ana", "a", "first look");
        const int64_t firstOp = tb::verdictOf(*store, ids[0], "ana")->operationId;
        const int64_t second = tb::recordVerdict(*store, ids[0], "ana", "b", "second look");
        const int64_t secondOp = tb::verdictOf(*store, ids[0], "ana")->operationId;
        // The re-judgement replaced the verdict and its pair.
        auto verdicts = tb::comparisonVerdicts(*reader, "s");
        QCOMPARE(verdicts.size(), size_t(1));
        QCOMPARE(verdicts[0].id, second);
        auto pairs = tb::preferencePairs(*reader, "s");
        QCOMPARE(pairs.size(), size_t(1));
        QCOMPARE(pairs[0].chosen, item.answerB);
        QCOMPARE(tb::comparisonProgress(*reader, "s", "ana").judged, int64_t(1));

        // The first verdict cannot be undone under the second; undoing the second restores it.
        std::string e = errorOf([&] { store->undo(firstOp, "ana"); });
        QVERIFY2(contains(e, "changed since") && contains(e, "verdict.ana"), e.c_str());
        store->undo(secondOp, "ana");
        verdicts = tb::comparisonVerdicts(*reader, "s");
        QCOMPARE(verdicts.size(), size_t(1));
        QCOMPARE(verdicts[0].id, first);
        QCOMPARE(verdicts[0].note, std::string("first look"));
        pairs = tb::preferencePairs(*reader, "s");
        QCOMPARE(pairs.size(), size_t(1));
        QCOMPARE(pairs[0].chosen, item.answerA);
        QCOMPARE(pairs[0].verdictId, first);

        // The set cannot be taken out while it has verdicts.
        const int64_t setOp = store->operations().front().id;
        QCOMPARE(store->operations().front().kind, std::string("compare"));
        e = errorOf([&] { store->undo(setOp, "ann"); });
        QVERIFY2(contains(e, "has 1 verdict"), e.c_str());
        QCOMPARE(tb::blindItems(*reader, "s").size(), size_t(2));  // the refused undo wrote nothing

        // Undoing the first verdict removes its pair, seen by the other connection.
        store->undo(firstOp, "ana");
        QVERIFY(tb::preferencePairs(*reader).empty());
        QVERIFY(tb::comparisonVerdicts(*reader, "s").empty());
        QCOMPARE(tb::nextUnjudged(*reader, "s", "ana")->id, tb::blindItems(*reader, "s")[0].id);

        // A tie replaced by a choice gains a pair; undo takes it back to the tie (no pair).
        tb::recordVerdict(*store, ids[1], "ben", "tie");
        QVERIFY(tb::preferencePairs(*reader).empty());
        tb::recordVerdict(*store, ids[1], "ben", "a");
        QCOMPARE(tb::preferencePairs(*reader).size(), size_t(1));
        store->undo(tb::verdictOf(*store, ids[1], "ben")->operationId, "ben");
        QVERIFY(tb::preferencePairs(*reader).empty());
        QCOMPARE(tb::verdictOf(*reader, ids[1], "ben")->choice, std::string("tie"));
        store->undo(tb::verdictOf(*store, ids[1], "ben")->operationId, "ben");

        // Now the set can go; its items leave every listing.
        store->undo(setOp, "ann");
        QVERIFY(tb::blindItems(*reader, "s").empty());
        QVERIFY(tb::comparisonSets(*reader).empty());
        e = errorOf([&] { tb::recordVerdict(*store, ids[0], "ana", "a"); });
        QVERIFY2(contains(e, numbered("no comparison item with id ", ids[0])), e.c_str());
    }

    void wilsonIntervalAndWinRates()
    {
        // The interval against the quadratic's roots, and 8 of 10 against the published value
        // (statsmodels' proportion_confint(8, 10, method="wilson"): 0.4902 to 0.9433).
        for (const auto& [s, n] : std::vector<std::pair<double, double>>{
                 {8, 10}, {0, 5}, {5, 5}, {3.5, 7}, {41.5, 100}, {1, 1}}) {
            const tb::Interval w = tb::wilsonInterval(s, n);
            const auto [lo, hi] = wilsonByQuadratic(s, n, 1.959963984540054);
            QVERIFY2(std::abs(w.lo - lo) < 1e-12 && std::abs(w.hi - hi) < 1e-12,
                     qPrintable(QStringLiteral("%1/%2: %3 %4 vs %5 %6")
                                    .arg(s)
                                    .arg(n)
                                    .arg(w.lo)
                                    .arg(w.hi)
                                    .arg(lo)
                                    .arg(hi)));
        }
        const tb::Interval eight = tb::wilsonInterval(8, 10);
        QVERIFY(std::abs(eight.lo - 0.4902) < 5e-5);
        QVERIFY(std::abs(eight.hi - 0.9433) < 5e-5);

        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const auto ids = tb::addComparisonSet(*store, makeSet("s", 6, 3), "ann");
        // A second batch with the sources the other way round folds into the same pair.
        const auto swapped =
            tb::addComparisonSet(*store, makeSet("s", 2, 4, "tuned", "base"), "ann");
        // ana: Y (tuned) wins 3, X (base) wins 1, 2 ties; ben: tuned, tuned.
        const char* ana[] = {"y", "y", "y", "x", "tie", "tie"};
        for (size_t i = 0; i < 6; ++i)
            tb::recordVerdict(*store, ids[i], "ana",
                              std::string(ana[i]) == "tie" ? "tie"
                                                           : choiceFor(*store, ids[i], ana[i]));
        // On the swapped items "x" is tuned: ben picks tuned on both.
        tb::recordVerdict(*store, swapped[0], "ben", choiceFor(*store, swapped[0], "x"));
        tb::recordVerdict(*store, swapped[1], "ben", choiceFor(*store, swapped[1], "x"));
        const tb::ComparisonSummary summary = tb::summarizeComparison(*store, "s");
        QCOMPARE(summary.winRates.size(), size_t(1));
        const tb::WinRate& w = summary.winRates[0];
        QCOMPARE(w.sourceX, std::string("base"));
        QCOMPARE(w.sourceY, std::string("tuned"));
        QCOMPARE(w.verdicts, int64_t(8));
        QCOMPARE(w.winsY, int64_t(5));
        QCOMPARE(w.winsX, int64_t(1));
        QCOMPARE(w.ties, int64_t(2));
        QCOMPARE(w.rate, (5 + 2 / 2.0) / 8);
        const auto [lo, hi] = wilsonByQuadratic(6, 8, 1.959963984540054);
        QVERIFY(std::abs(w.interval.lo - lo) < 1e-12 && std::abs(w.interval.hi - hi) < 1e-12);
        QCOMPARE(summary.prompts.size(), size_t(8));
    }

    void kappaAndPerPromptVerdicts()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const auto ids = tb::addComparisonSet(*store, makeSet("s", 6, 11), "ann");
        // ana: X X Y tie Y X; ben: X Y Y tie X X. Agreed on 4 of 6: po = 4/6. Marginals are equal
        // (X 3, Y 2, tie 1 each): pe = (3*3 + 2*2 + 1*1) / 36 = 14/36.
        // kappa = (24/36 - 14/36) / (22/36) = 10/22.
        const char* ana[] = {"x", "x", "y", "tie", "y", "x"};
        const char* ben[] = {"x", "y", "y", "tie", "x", "x"};
        const auto choose = [&](const char* side, int64_t id) {
            return std::string(side) == "tie" ? std::string("tie") : choiceFor(*store, id, side);
        };
        for (size_t i = 0; i < 6; ++i) {
            tb::recordVerdict(*store, ids[i], "ana", choose(ana[i], ids[i]));
            tb::recordVerdict(*store, ids[i], "ben", choose(ben[i], ids[i]));
        }
        // cid judges the first two only: with ana both X (agree), with ben X then Y.
        tb::recordVerdict(*store, ids[0], "cid", choose("x", ids[0]));
        tb::recordVerdict(*store, ids[1], "cid", choose("x", ids[1]));

        const tb::ComparisonSummary summary = tb::summarizeComparison(*store, "s");
        QCOMPARE(summary.agreement.size(), size_t(3));
        const tb::PairAgreement& ab = summary.agreement[0];
        QCOMPARE(ab.annotatorA, std::string("ana"));
        QCOMPARE(ab.annotatorB, std::string("ben"));
        QCOMPARE(ab.items, int64_t(6));
        QCOMPARE(ab.agreed, int64_t(4));
        QVERIFY(std::abs(ab.kappa - 10.0 / 22.0) < 1e-12);
        // ana-cid: both X on both items: one category only, po = 1 -> kappa 1 (agreement.h).
        const tb::PairAgreement& ac = summary.agreement[1];
        QCOMPARE(ac.annotatorB, std::string("cid"));
        QCOMPARE(ac.items, int64_t(2));
        QCOMPARE(ac.kappa, 1.0);
        // ben-cid: ben X, Y; cid X, X: po = 1/2, pe = (1/2)(1) = 1/2... kappa = 0.
        const tb::PairAgreement& bc = summary.agreement[2];
        QCOMPARE(bc.items, int64_t(2));
        QVERIFY(std::abs(bc.kappa - 0.0) < 1e-12);

        // Per prompt, in presentation order: each annotator's outcome and the majority.
        std::map<int64_t, tb::PromptVerdicts> byItem;
        for (const auto& p : summary.prompts)
            byItem[p.itemId] = p;
        const auto& p0 = byItem.at(ids[0]);
        QCOMPARE(p0.outcomes.size(), size_t(3));
        QCOMPARE(p0.outcomes[2], (std::pair<std::string, std::string>("cid", "x")));
        QCOMPARE(p0.majority, std::string("x"));
        QCOMPARE(byItem.at(ids[1]).majority, std::string("x"));  // x, y, x
        QCOMPARE(byItem.at(ids[3]).majority, std::string("tie"));
        QCOMPARE(byItem.at(ids[4]).majority, std::string(""));  // y against x: no majority
        QCOMPARE(summary.prompts[0].itemId, tb::blindItems(*store, "s")[0].id);
    }

    void badInputIsNamed()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const auto ids = tb::addComparisonSet(*store, makeSet("s", 2, 1), "ann");
        const size_t ops = store->operations().size();
        std::string e = errorOf([&] { tb::recordVerdict(*store, 999, "ana", "a"); });
        QVERIFY2(contains(e, "no comparison item with id 999"), e.c_str());
        e = errorOf([&] { tb::recordVerdict(*store, ids[0], "ana", "c"); });
        QVERIFY2(contains(e, "choice \"c\"") && contains(e, "a, b or tie"), e.c_str());
        e = errorOf([&] { tb::recordVerdict(*store, ids[0], "", "a"); });
        QVERIFY2(contains(e, "annotator"), e.c_str());
        e = errorOf([&] { tb::blindItem(*store, 12345); });
        QVERIFY2(contains(e, "12345"), e.c_str());
        QCOMPARE(store->operations().size(), ops);  // the failed verdicts wrote nothing

        tb::NewComparisonSet bad = makeSet("t", 3, 1);
        bad.answersY.pop_back();
        e = errorOf([&] { tb::addComparisonSet(*store, bad, "ann"); });
        QVERIFY2(contains(e, "3 prompts but 3 answers of \"base\" and 2 of \"tuned\""), e.c_str());
        bad = makeSet("t", 2, 1, "base", "base");
        e = errorOf([&] { tb::addComparisonSet(*store, bad, "ann"); });
        QVERIFY2(contains(e, "both sources are labelled \"base\""), e.c_str());
        bad = makeSet("", 2, 1);
        QVERIFY(contains(errorOf([&] { tb::addComparisonSet(*store, bad, "ann"); }), "name"));
        bad = makeSet("t", 0, 1);
        QVERIFY(contains(errorOf([&] { tb::addComparisonSet(*store, bad, "ann"); }), "no prompts"));
        bad = makeSet("t", 2, 1);
        bad.messages = {json::array(), json("hello")};
        e = errorOf([&] { tb::addComparisonSet(*store, bad, "ann"); });
        QVERIFY2(contains(e, "messages of prompt 2"), e.c_str());
        QCOMPARE(store->operations().size(), ops);
        QCOMPARE(tb::comparisonSets(*store), std::vector<std::string>{"s"});
    }
};

QTEST_GUILESS_MAIN(TestComparisons)
#include "test_comparisons.moc"
