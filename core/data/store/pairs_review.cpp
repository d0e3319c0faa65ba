// Writing preference pairs into the store, each call one operation of its log: imports, pairs from
// blind-comparison verdicts, rankings, annotators' choices, swaps, answer edits and adjudication.
#include "data/store/comparisons.h"
#include "data/store/pairs_store.h"
#include "data/store/pairs_store_util.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "util/error.h"
#include "util/sha256.h"

#include <algorithm>
#include <set>

namespace tb {

using nlohmann::json;

namespace {

json messagesJson(const std::vector<ChatMessage>& messages)
{
    json out = json::array();
    for (const ChatMessage& m : messages)
        out.push_back({{"role", m.role}, {"content", m.content}});
    return out;
}

std::vector<ChatMessage> messagesFrom(const json& list)
{
    std::vector<ChatMessage> out;
    for (const json& m : list)
        out.push_back(ChatMessage{m.value("role", std::string()), m.value("content", "")});
    return out;
}

}  // namespace

json storedPrompt(const PairExample& pair)
{
    return pair.plainText ? json(pair.promptText) : messagesJson(pair.prompt);
}

json storedAnswer(const PairExample& pair, bool chosen)
{
    if (pair.plainText)
        return chosen ? pair.chosenText : pair.rejectedText;
    return messagesJson(chosen ? pair.chosen : pair.rejected);
}

PairExample pairFromStored(const json& prompt, const json& chosen, const json& rejected,
                           bool plainText)
{
    PairExample p;
    p.plainText = plainText;
    if (plainText) {
        p.promptText = prompt.get<std::string>();
        p.chosenText = chosen.get<std::string>();
        p.rejectedText = rejected.get<std::string>();
    } else {
        p.prompt = messagesFrom(prompt);
        p.chosen = messagesFrom(chosen);
        p.rejected = messagesFrom(rejected);
    }
    return p;
}

int64_t insertPair(sql::Database& db, const PairExample& pair, const PairOrigin& origin,
                   int64_t operationId)
{
    sql::Statement st(
        db, "INSERT INTO pairs (prompt, chosen, rejected, plain_text, score_chosen, "
            "score_rejected, margin, layout, origin, source_id, source_path, source_line, "
            "verdict_id, ranking_id, annotator, operation_id, created_at) VALUES (?, ?, ?, ?, ?, "
            "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    st.bind(1, storedPrompt(pair).dump())
        .bind(2, storedAnswer(pair, true).dump())
        .bind(3, storedAnswer(pair, false).dump())
        .bind(4, int64_t(pair.plainText ? 1 : 0))
        .bind(5, pair.scoreChosen)
        .bind(6, pair.scoreRejected)
        .bind(7, pair.margin)
        .bind(8, pairLayoutName(pair.layout))
        .bind(9, origin.origin)
        .bind(10, origin.sourceId > 0 ? std::optional<int64_t>(origin.sourceId) : std::nullopt)
        .bind(11, origin.sourcePath)
        .bind(12, origin.sourceLine)
        .bind(13, origin.verdictId > 0 ? std::optional<int64_t>(origin.verdictId) : std::nullopt)
        .bind(14, origin.rankingId > 0 ? std::optional<int64_t>(origin.rankingId) : std::nullopt)
        .bind(15, origin.annotator)
        .bind(16, operationId)
        .bind(17, DataStore::now());
    st.run();
    return db.lastInsertId();
}

namespace {

std::string pairField(int64_t id, const std::string& what)
{
    return cat("pair.", id, ".", what);
}

// The pair's "removed" and "swapped" flags; throws unless it exists and is live.
bool liveSwapped(sql::Database& db, int64_t pairId)
{
    sql::Statement st(db, "SELECT removed, swapped FROM pairs WHERE id = ?");
    st.bind(1, pairId);
    if (!st.step() || st.int64(0) != 0)
        fail(db.path(), ": no pair with id ", pairId);
    return st.int64(1) != 0;
}

// What a choice as shown says about the stored pair.
std::string verdictOfChoice(const std::string& path, int64_t pairId, const std::string& choice,
                            bool swapped)
{
    if (choice == "tie" || choice == "skip")
        return choice;
    if (choice != "a" && choice != "b")
        fail(path, ": pair ", pairId, ": choice \"", choice, "\" is not a, b, tie or skip");
    return (choice == "a") != swapped ? "chosen" : "rejected";
}

int64_t lineOf(const std::string& location)
{
    const size_t colon = location.rfind(':');
    return colon == std::string::npos ? 0 : std::atoll(location.c_str() + colon + 1);
}

}  // namespace

PairImportReport
importPairs(DataStore& store, const std::string& path, PairLayout layout, const std::string& who,
            const std::function<bool(const std::string& phase, double fraction)>& progress)
{
    const auto heard = [&](const char* phase, double fraction) {
        if (progress && !progress(phase, fraction))
            fail("pairs import: cancelled");  // inside the operation: rolled back, nothing stored
    };
    heard("reading pairs", 0.0);
    const PairFile file = readPairFile(path, layout);
    heard("reading pairs", 0.4);
    const std::string sha = sha256File(path);
    PairImportReport report;
    report.rejected = file.rejected;
    report.imported = int64_t(file.pairs.size());
    const std::string format = cat("pairs/", pairLayoutName(layout));
    report.operationId = store.applyOperationWith(
        "import-pairs", who, json{{"path", path}, {"layout", pairLayoutName(layout)}},
        json{{"pairs", report.imported}, {"rejected", int64_t(report.rejected.size())}},
        [&](int64_t op) {
            report.sourceId = store.addSource(path, format, sha);
            store.setSource(report.sourceId, format, report.imported,
                            int64_t(report.rejected.size()));
            std::vector<DataStore::Change> changes;
            const double n = double(std::max<size_t>(file.pairs.size(), 1));
            for (const PairExample& p : file.pairs) {
                if (changes.size() % 256 == 0)
                    heard("storing pairs", 0.5 + 0.5 * double(changes.size()) / n);
                PairOrigin origin;
                origin.origin = "import";
                origin.sourceId = report.sourceId;
                origin.sourcePath = path;
                origin.sourceLine = lineOf(p.source);
                const int64_t id = insertPair(store.database(), p, origin, op);
                changes.push_back({0, pairField(id, "removed"), false});
            }
            return changes;
        });
    return report;
}

FromComparisonsReport pairsFromComparisons(DataStore& store, const std::string& set,
                                           const std::string& who)
{
    // A set that is not there (a typo) is named, not read as a set with no verdicts.
    if (!set.empty()) {
        const std::vector<std::string> sets = comparisonSets(store);
        if (std::find(sets.begin(), sets.end(), set) == sets.end()) {
            std::string names;
            for (const auto& s : sets)
                names += (names.empty() ? "" : ", ") + s;
            fail(store.path(), ": no comparison set '", set, "' (",
                 sets.empty() ? std::string("the store has none") : "sets: " + names, ")");
        }
    }
    FromComparisonsReport report;
    std::vector<std::pair<PreferencePair, PairExample>> todo;
    sql::Statement taken(store.database(),
                         "SELECT 1 FROM pairs WHERE verdict_id = ? AND origin = 'compare' AND "
                         "removed = 0");
    for (const PreferencePair& pp : preferencePairs(store, set)) {
        taken.bind(1, pp.verdictId);
        const bool already = taken.step();
        taken.reset();
        if (already) {
            ++report.skipped;
            continue;
        }
        const json prompt = pp.messages.is_array()
                                ? pp.messages
                                : json::array({{{"role", "user"}, {"content", pp.prompt}}});
        const json row = {{"prompt", prompt},
                          {"chosen", {{{"role", "assistant"}, {"content", pp.chosen}}}},
                          {"rejected", {{{"role", "assistant"}, {"content", pp.rejected}}}}};
        try {
            todo.emplace_back(pp, parsePairRow(row, PairLayout::Standard));
        } catch (const Error& e) {
            report.rejected.push_back({cat("compare verdict ", pp.verdictId), e.what()});
        }
    }
    if (todo.empty())
        return report;
    report.added = int64_t(todo.size());
    report.operationId = store.applyOperationWith(
        "pairs-from-compare", who, json{{"set", set}},
        json{{"pairs", report.added}, {"skipped", report.skipped}}, [&](int64_t op) {
            std::vector<DataStore::Change> changes;
            for (const auto& [pp, pair] : todo) {
                PairOrigin origin{"compare", 0, pp.setName, 0, pp.verdictId, 0, pp.annotator};
                const int64_t id = insertPair(store.database(), pair, origin, op);
                changes.push_back({0, pairField(id, "removed"), false});
            }
            return changes;
        });
    return report;
}

int64_t addRanking(DataStore& store, const std::vector<ChatMessage>& prompt,
                   const std::vector<std::string>& answers, const std::string& who)
{
    const std::string what = cat(store.path(), ": ranking: ");
    if (answers.size() < 2)
        fail(what, "needs at least 2 answers, got ", answers.size());
    if (std::set<std::string>(answers.begin(), answers.end()).size() != answers.size())
        fail(what, "two answers are identical");
    for (size_t i = 0; i < answers.size(); ++i)
        if (answers[i].find_first_not_of(" \t\r\n") == std::string::npos)
            fail(what, "answer ", i + 1, " is empty");
    // The prompt passes the checks of a standard conversational pair.
    try {
        parsePairRow({{"prompt", messagesJson(prompt)},
                      {"chosen", {{{"role", "assistant"}, {"content", answers[0]}}}},
                      {"rejected", {{{"role", "assistant"}, {"content", answers[1]}}}}},
                     PairLayout::Standard);
    } catch (const Error& e) {
        fail(what, e.what());
    }
    int64_t id = 0;
    store.applyOperationWith(
        "ranking", who, json::object(), json{{"answers", answers.size()}}, [&](int64_t op) {
            sql::Statement st(store.database(),
                              "INSERT INTO rankings (prompt, answers, operation_id, created_at) "
                              "VALUES (?, ?, ?, ?)");
            st.bind(1, messagesJson(prompt).dump())
                .bind(2, json(answers).dump())
                .bind(3, op)
                .bind(4, DataStore::now());
            st.run();
            id = store.database().lastInsertId();
            return std::vector<DataStore::Change>{{0, cat("ranking.", id, ".removed"), false}};
        });
    return id;
}

std::vector<Ranking> rankings(const DataStore& store)
{
    sql::Statement st(store.database(),
                      "SELECT id, prompt, answers FROM rankings WHERE removed = 0 ORDER BY id");
    std::vector<Ranking> out;
    while (st.step())
        out.push_back(Ranking{st.int64(0), messagesFrom(json::parse(st.text(1))),
                              json::parse(st.text(2)).get<std::vector<std::string>>()});
    return out;
}

std::vector<int64_t> recordRanking(DataStore& store, int64_t rankingId,
                                   const std::string& annotator, const std::vector<int>& order)
{
    const std::string what = cat(store.path(), ": ranking ", rankingId, ": ");
    if (annotator.empty())
        fail(what, "the annotator's name is empty");
    std::vector<int64_t> ids;
    store.applyOperationWith(
        "rank", annotator, json{{"ranking_id", rankingId}, {"order", order}},
        json{{"pairs", order.size() * (order.size() - (order.empty() ? 0 : 1)) / 2}},
        [&](int64_t op) {
            sql::Database& db = store.database();
            std::optional<Ranking> ranking;
            for (Ranking& r : rankings(store))
                if (r.id == rankingId)
                    ranking = std::move(r);
            if (!ranking)
                fail(store.path(), ": no ranking with id ", rankingId);
            std::vector<int> sorted = order;
            std::sort(sorted.begin(), sorted.end());
            bool permutation = sorted.size() == ranking->answers.size();
            for (size_t i = 0; permutation && i < sorted.size(); ++i)
                permutation = sorted[i] == int(i);
            if (!permutation)
                fail(what, "the order must name each of the ", ranking->answers.size(),
                     " answers (0 to ", ranking->answers.size() - 1, ") once");
            std::vector<DataStore::Change> changes;
            sql::Statement old(db, "SELECT id FROM pairs WHERE ranking_id = ? AND annotator = ? "
                                   "AND origin = 'ranking' AND removed = 0");
            old.bind(1, rankingId).bind(2, annotator);
            while (old.step())
                changes.push_back({0, pairField(old.int64(0), "removed"), true});
            for (size_t i = 0; i < order.size(); ++i) {
                for (size_t j = i + 1; j < order.size(); ++j) {
                    PairExample p;
                    p.prompt = ranking->prompt;
                    p.chosen = {{"assistant", ranking->answers[size_t(order[i])]}};
                    p.rejected = {{"assistant", ranking->answers[size_t(order[j])]}};
                    const PairOrigin origin{"ranking", 0, "", 0, 0, rankingId, annotator};
                    ids.push_back(insertPair(db, p, origin, op));
                    changes.push_back({0, pairField(ids.back(), "removed"), false});
                }
            }
            sql::Statement st(db, "INSERT INTO ranking_orders (ranking_id, annotator, ranked, "
                                  "operation_id, at) VALUES (?, ?, ?, ?, ?)");
            st.bind(1, rankingId)
                .bind(2, annotator)
                .bind(3, json(order).dump())
                .bind(4, op)
                .bind(5, DataStore::now());
            st.run();
            return changes;
        });
    return ids;
}

int64_t recordPairChoice(DataStore& store, int64_t pairId, const std::string& annotator,
                         const std::string& choice)
{
    if (annotator.empty())
        fail(store.path(), ": choice on pair ", pairId, ": the annotator's name is empty");
    const json params = {{"pair_id", pairId}, {"annotator", annotator}, {"choice", choice}};
    return store.applyOperationWith("pair-choice", annotator, params, json::object(), [&](int64_t) {
        const bool swapped = liveSwapped(store.database(), pairId);
        const std::string verdict = verdictOfChoice(store.path(), pairId, choice, swapped);
        return std::vector<DataStore::Change>{{0, pairField(pairId, "choice." + annotator),
                                               json{{"choice", choice}, {"verdict", verdict}}}};
    });
}

int64_t swapPair(DataStore& store, int64_t pairId, const std::string& who)
{
    return store.applyOperationWith(
        "pair-swap", who, json{{"pair_id", pairId}}, json::object(), [&](int64_t) {
            const bool swapped = liveSwapped(store.database(), pairId);
            return std::vector<DataStore::Change>{{0, pairField(pairId, "swapped"), !swapped}};
        });
}

int64_t editPairAnswer(DataStore& store, int64_t pairId, const std::string& side,
                       const std::string& text, const std::string& who)
{
    const std::string what = cat(store.path(), ": edit of pair ", pairId, ": ");
    if (side != "chosen" && side != "rejected")
        fail(what, "side \"", side, "\" is not chosen or rejected");
    return store.applyOperationWith(
        "pair-edit", who, json{{"pair_id", pairId}, {"side", side}}, json::object(), [&](int64_t) {
            liveSwapped(store.database(), pairId);
            PairExample p = storedPair(store, pairId).pair;
            if (p.plainText)
                (side == "chosen" ? p.chosenText : p.rejectedText) = text;
            else
                (side == "chosen" ? p.chosen : p.rejected) = {{"assistant", text}};
            try {
                parsePairRow(pairToJson(p), PairLayout::Standard);
            } catch (const Error& e) {
                fail(what, e.what());
            }
            return std::vector<DataStore::Change>{
                {0, pairField(pairId, side), storedAnswer(p, side == "chosen")}};
        });
}

int64_t adjudicatePair(DataStore& store, int64_t pairId, const std::string& choice,
                       const std::string& who)
{
    return store.applyOperationWith(
        "pair-adjudicate", who, json{{"pair_id", pairId}, {"choice", choice}}, json::object(),
        [&](int64_t) {
            const bool swapped = liveSwapped(store.database(), pairId);
            const std::string verdict = verdictOfChoice(store.path(), pairId, choice, swapped);
            return std::vector<DataStore::Change>{{0, pairField(pairId, "adjudication"), verdict}};
        });
}

}  // namespace tb
