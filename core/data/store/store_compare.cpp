// Blind comparison sets, verdicts and preference pairs in the dataset store, written through the
// store's operation log (the verdict and removed fields below are what undo reverses).
#include "data/store/comparisons.h"

#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "util/error.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace tb {

using nlohmann::json;

namespace {

constexpr const char* kItemPrefix = "compare.item.";

std::string removedField(int64_t itemId)
{
    return cat(kItemPrefix, itemId, ".removed");
}

std::string verdictField(int64_t itemId, const std::string& annotator)
{
    return cat(kItemPrefix, itemId, ".verdict.", annotator);
}

// A parsed comparison field: the item and, for a verdict field, the annotator.
struct FieldRef {
    int64_t itemId = 0;
    bool verdict = false;
    std::string annotator;
};

FieldRef parseField(sql::Database& db, const std::string& field)
{
    const size_t begin = std::strlen(kItemPrefix);
    size_t end = begin;
    while (end < field.size() && field[end] >= '0' && field[end] <= '9' && end - begin < 18)
        ++end;
    if (field.rfind(kItemPrefix, 0) == 0 && end > begin && end < field.size() &&
        field[end] == '.') {
        FieldRef ref;
        ref.itemId = std::stoll(field.substr(begin, end - begin));
        const std::string rest = field.substr(end + 1);
        if (rest == "removed")
            return ref;
        if (rest.rfind("verdict.", 0) == 0 && rest.size() > 8) {
            ref.verdict = true;
            ref.annotator = rest.substr(8);
            return ref;
        }
    }
    tb::fail(db.path(), ": unknown comparison field \"", field, "\"");
}

// splitmix64 (Steele, Lea, Flood 2014): a tiny generator with the same output everywhere.
struct SplitMix64 {
    uint64_t state;
    uint64_t next()
    {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
};

const char* const kItemColumns = "i.id, i.set_name, i.position, i.prompt, i.messages, i.source_x, "
                                 "i.answer_x, i.source_y, i.answer_y, i.a_is_x, i.created_at";

json jsonOrNull(const sql::Statement& st, int column)
{
    return st.isNull(column) ? json() : json::parse(st.text(column));
}

ComparisonItem readItem(const sql::Statement& st)
{
    ComparisonItem item;
    item.id = st.int64(0);
    item.setName = st.text(1);
    item.position = st.int64(2);
    item.prompt = st.text(3);
    item.messages = jsonOrNull(st, 4);
    item.sourceX = st.text(5);
    item.answerX = st.text(6);
    item.sourceY = st.text(7);
    item.answerY = st.text(8);
    item.aIsX = st.int64(9) != 0;
    item.createdAt = st.text(10);
    return item;
}

BlindItem blind(const ComparisonItem& item)
{
    BlindItem b;
    b.id = item.id;
    b.position = item.position;
    b.prompt = item.prompt;
    b.messages = item.messages;
    b.answerA = item.aIsX ? item.answerX : item.answerY;
    b.answerB = item.aIsX ? item.answerY : item.answerX;
    return b;
}

// A live (not removed) item; throws naming the id otherwise.
ComparisonItem liveItem(sql::Database& db, int64_t itemId)
{
    sql::Statement st(db, std::string("SELECT ") + kItemColumns +
                              " FROM comparison_items i WHERE i.id = ? AND i.removed = 0");
    st.bind(1, itemId);
    if (!st.step())
        tb::fail(db.path(), ": no comparison item with id ", itemId);
    return readItem(st);
}

const char* const kVerdictColumns =
    "v.id, v.item_id, v.annotator, v.choice, v.winner, v.note, v.at, v.operation_id";

ComparisonVerdict readVerdict(const sql::Statement& st)
{
    return ComparisonVerdict{st.int64(0), st.int64(1), st.text(2), st.text(3),
                             st.text(4),  st.text(5),  st.text(6), st.int64(7)};
}

std::optional<int64_t> activeVerdict(sql::Database& db, int64_t itemId,
                                     const std::string& annotator)
{
    sql::Statement st(db, "SELECT id FROM comparison_verdicts WHERE item_id = ? AND annotator = ? "
                          "AND active = 1");
    st.bind(1, itemId).bind(2, annotator);
    return st.step() ? std::optional<int64_t>(st.int64(0)) : std::nullopt;
}

// Makes `verdictId` the annotator's active verdict on the item (none: null), keeping
// preference_pairs equal to the pairs of the active verdicts that are not ties.
void setActiveVerdict(sql::Database& db, const FieldRef& ref, const json& value)
{
    if (!value.is_null() && !value.is_number_integer())
        tb::fail(db.path(), ": comparison item ", ref.itemId, ": verdict id ", value.dump(),
                 " is not an integer");
    if (const auto old = activeVerdict(db, ref.itemId, ref.annotator)) {
        sql::Statement off(db, "UPDATE comparison_verdicts SET active = 0 WHERE id = ?");
        off.bind(1, *old);
        off.run();
        sql::Statement drop(db, "DELETE FROM preference_pairs WHERE verdict_id = ?");
        drop.bind(1, *old);
        drop.run();
    }
    if (value.is_null())
        return;
    const int64_t verdictId = value.get<int64_t>();
    const ComparisonItem item = liveItem(db, ref.itemId);
    sql::Statement v(db, "SELECT winner, at FROM comparison_verdicts WHERE id = ? AND item_id = ? "
                         "AND annotator = ?");
    v.bind(1, verdictId).bind(2, ref.itemId).bind(3, ref.annotator);
    if (!v.step())
        tb::fail(db.path(), ": no verdict ", verdictId, " by \"", ref.annotator,
                 "\" on comparison item ", ref.itemId);
    const std::string winner = v.text(0), at = v.text(1);
    sql::Statement on(db, "UPDATE comparison_verdicts SET active = 1 WHERE id = ?");
    on.bind(1, verdictId);
    on.run();
    if (winner == "tie")
        return;
    const bool x = winner == "x";
    sql::Statement pair(
        db, "INSERT INTO preference_pairs (verdict_id, item_id, set_name, prompt, messages, "
            "chosen, rejected, annotator, source_chosen, source_rejected, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    pair.bind(1, verdictId)
        .bind(2, item.id)
        .bind(3, item.setName)
        .bind(4, item.prompt)
        .bind(5, item.messages.is_null() ? std::optional<std::string>()
                                         : std::optional<std::string>(item.messages.dump()))
        .bind(6, x ? item.answerX : item.answerY)
        .bind(7, x ? item.answerY : item.answerX)
        .bind(8, ref.annotator)
        .bind(9, x ? item.sourceX : item.sourceY)
        .bind(10, x ? item.sourceY : item.sourceX)
        .bind(11, at);
    pair.run();
}

void setRemoved(sql::Database& db, int64_t itemId, const json& value)
{
    const bool removed = value.is_boolean() && value.get<bool>();
    if (removed) {
        sql::Statement st(
            db, "SELECT count(*) FROM comparison_verdicts WHERE item_id = ? AND active = 1");
        st.bind(1, itemId);
        st.step();
        if (st.int64(0) > 0)
            tb::fail(db.path(), ": comparison item ", itemId, " has ", st.int64(0),
                     " verdict(s); undo them first");
    }
    sql::Statement st(db, "UPDATE comparison_items SET removed = ? WHERE id = ?");
    st.bind(1, int64_t(removed ? 1 : 0)).bind(2, itemId);
    st.run();
}

void checkNewSet(const std::string& path, const NewComparisonSet& set)
{
    const std::string what = cat(path, ": comparison set \"", set.name, "\": ");
    if (set.name.empty())
        tb::fail(path, ": a comparison set needs a name");
    if (set.prompts.empty())
        tb::fail(what, "no prompts");
    if (set.answersX.size() != set.prompts.size() || set.answersY.size() != set.prompts.size())
        tb::fail(what, set.prompts.size(), " prompts but ", set.answersX.size(), " answers of \"",
                 set.sourceX, "\" and ", set.answersY.size(), " of \"", set.sourceY, "\"");
    if (!set.messages.empty() && set.messages.size() != set.prompts.size())
        tb::fail(what, set.prompts.size(), " prompts but ", set.messages.size(), " message lists");
    for (size_t i = 0; i < set.messages.size(); ++i)
        if (!set.messages[i].is_null() && !set.messages[i].is_array())
            tb::fail(what, "the messages of prompt ", i + 1, " are not a JSON array");
    if (set.sourceX.empty() || set.sourceY.empty())
        tb::fail(what, "each source needs a label");
    if (set.sourceX == set.sourceY)
        tb::fail(what, "both sources are labelled \"", set.sourceX, "\"");
}

}  // namespace

bool isComparisonField(const std::string& field)
{
    return field.rfind("compare.", 0) == 0;
}

json readComparisonField(sql::Database& db, const std::string& field)
{
    const FieldRef ref = parseField(db, field);
    sql::Statement st(db, "SELECT removed FROM comparison_items WHERE id = ?");
    st.bind(1, ref.itemId);
    if (!st.step())
        tb::fail(db.path(), ": no comparison item with id ", ref.itemId);
    if (!ref.verdict)
        return st.int64(0) != 0;
    const auto active = activeVerdict(db, ref.itemId, ref.annotator);
    return active ? json(*active) : json();
}

void writeComparisonField(sql::Database& db, const std::string& field, const json& value)
{
    const FieldRef ref = parseField(db, field);
    if (ref.verdict)
        setActiveVerdict(db, ref, value);
    else
        setRemoved(db, ref.itemId, value);
}

std::vector<int64_t> addComparisonSet(DataStore& store, const NewComparisonSet& set,
                                      const std::string& who)
{
    checkNewSet(store.path(), set);
    const size_t n = set.prompts.size();
    // The presentation: a Fisher-Yates shuffle of the new items, then one coin flip per item.
    SplitMix64 rng{set.seed};
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), int64_t(0));
    for (size_t i = n; i-- > 1;)
        std::swap(order[i], order[size_t(rng.next() % (i + 1))]);
    std::vector<bool> aIsX(n);
    for (size_t i = 0; i < n; ++i)
        aIsX[i] = (rng.next() >> 63) != 0;

    std::vector<int64_t> ids;
    const json params = {{"set", set.name},
                         {"source_x", set.sourceX},
                         {"source_y", set.sourceY},
                         {"seed", set.seed}};
    store.applyOperationWith("compare", who, params, json{{"items", n}}, [&](int64_t op) {
        sql::Database& db = store.database();
        sql::Statement last(
            db, "SELECT coalesce(max(position), -1) FROM comparison_items WHERE set_name = ?");
        last.bind(1, set.name);
        last.step();
        const int64_t first = last.int64(0) + 1;
        // Inserted as removed, then brought in by the operation's changes, so undo can take
        // them out like records.
        sql::Statement insert(
            db, "INSERT INTO comparison_items (set_name, position, prompt, messages, "
                "source_x, answer_x, source_y, answer_y, a_is_x, removed, operation_id, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)");
        const std::string at = DataStore::now();
        std::vector<DataStore::Change> changes;
        for (size_t i = 0; i < n; ++i) {
            const json messages = set.messages.empty() ? json() : set.messages[i];
            insert.bind(1, set.name)
                .bind(2, first + order[i])
                .bind(3, set.prompts[i])
                .bind(4, messages.is_null() ? std::optional<std::string>()
                                            : std::optional<std::string>(messages.dump()))
                .bind(5, set.sourceX)
                .bind(6, set.answersX[i])
                .bind(7, set.sourceY)
                .bind(8, set.answersY[i])
                .bind(9, int64_t(aIsX[i] ? 1 : 0))
                .bind(10, op)
                .bind(11, at);
            insert.run();
            ids.push_back(db.lastInsertId());
            changes.push_back({0, removedField(ids.back()), false});
        }
        return changes;
    });
    return ids;
}

std::vector<std::string> comparisonSets(const DataStore& store)
{
    sql::Statement st(store.database(), "SELECT DISTINCT set_name FROM comparison_items WHERE "
                                        "removed = 0 ORDER BY set_name");
    std::vector<std::string> out;
    while (st.step())
        out.push_back(st.text(0));
    return out;
}

std::vector<ComparisonItem> comparisonItems(const DataStore& store, const std::string& set)
{
    sql::Statement st(store.database(),
                      std::string("SELECT ") + kItemColumns +
                          " FROM comparison_items i WHERE i.set_name = ? AND i.removed = 0 "
                          "ORDER BY i.position");
    st.bind(1, set);
    std::vector<ComparisonItem> out;
    while (st.step())
        out.push_back(readItem(st));
    return out;
}

std::vector<BlindItem> blindItems(const DataStore& store, const std::string& set)
{
    std::vector<BlindItem> out;
    for (const ComparisonItem& item : comparisonItems(store, set))
        out.push_back(blind(item));
    return out;
}

BlindItem blindItem(const DataStore& store, int64_t itemId)
{
    return blind(liveItem(store.database(), itemId));
}

int64_t recordVerdict(DataStore& store, int64_t itemId, const std::string& annotator,
                      const std::string& choice, const std::string& note)
{
    const std::string what = cat(store.path(), ": verdict on comparison item ", itemId, ": ");
    if (annotator.empty())
        tb::fail(what, "the annotator's name is empty");
    if (choice != "a" && choice != "b" && choice != "tie")
        tb::fail(what, "choice \"", choice, "\" is not a, b or tie");
    int64_t verdictId = 0;
    const json params = {{"item_id", itemId}, {"annotator", annotator}, {"choice", choice}};
    store.applyOperationWith("verdict", annotator, params, json::object(), [&](int64_t op) {
        sql::Database& db = store.database();
        const ComparisonItem item = liveItem(db, itemId);
        const std::string winner =
            choice == "tie" ? "tie" : ((choice == "a") == item.aIsX ? "x" : "y");
        sql::Statement st(db, "INSERT INTO comparison_verdicts (item_id, annotator, choice, "
                              "winner, note, operation_id, at) VALUES (?, ?, ?, ?, ?, ?, ?)");
        st.bind(1, itemId)
            .bind(2, annotator)
            .bind(3, choice)
            .bind(4, winner)
            .bind(5, note)
            .bind(6, op)
            .bind(7, DataStore::now());
        st.run();
        verdictId = db.lastInsertId();
        return std::vector<DataStore::Change>{{0, verdictField(itemId, annotator), verdictId}};
    });
    return verdictId;
}

std::vector<ComparisonVerdict> comparisonVerdicts(const DataStore& store, const std::string& set)
{
    sql::Statement st(store.database(),
                      std::string("SELECT ") + kVerdictColumns +
                          " FROM comparison_verdicts v JOIN comparison_items i ON i.id = v.item_id "
                          "WHERE i.set_name = ? AND i.removed = 0 AND v.active = 1 "
                          "ORDER BY i.position, v.annotator");
    st.bind(1, set);
    std::vector<ComparisonVerdict> out;
    while (st.step())
        out.push_back(readVerdict(st));
    return out;
}

std::optional<ComparisonVerdict> verdictOf(const DataStore& store, int64_t itemId,
                                           const std::string& annotator)
{
    sql::Statement st(store.database(),
                      std::string("SELECT ") + kVerdictColumns +
                          " FROM comparison_verdicts v WHERE v.item_id = ? AND v.annotator = ? "
                          "AND v.active = 1");
    st.bind(1, itemId).bind(2, annotator);
    return st.step() ? std::optional<ComparisonVerdict>(readVerdict(st)) : std::nullopt;
}

std::vector<PreferencePair> preferencePairs(const DataStore& store, const std::string& set)
{
    const std::string sql =
        std::string("SELECT id, verdict_id, item_id, set_name, prompt, messages, chosen, "
                    "rejected, annotator, source_chosen, source_rejected, at FROM "
                    "preference_pairs") +
        (set.empty() ? "" : " WHERE set_name = ?") + " ORDER BY verdict_id";
    sql::Statement st(store.database(), sql);
    if (!set.empty())
        st.bind(1, set);
    std::vector<PreferencePair> out;
    while (st.step())
        out.push_back(PreferencePair{st.int64(0), st.int64(1), st.int64(2), st.text(3), st.text(4),
                                     jsonOrNull(st, 5), st.text(6), st.text(7), st.text(8),
                                     st.text(9), st.text(10), st.text(11)});
    return out;
}

std::optional<BlindItem> nextUnjudged(const DataStore& store, const std::string& set,
                                      const std::string& annotator)
{
    sql::Statement st(store.database(),
                      std::string("SELECT ") + kItemColumns +
                          " FROM comparison_items i WHERE i.set_name = ? AND i.removed = 0 AND "
                          "NOT EXISTS (SELECT 1 FROM comparison_verdicts v WHERE v.item_id = i.id "
                          "AND v.annotator = ? AND v.active = 1) ORDER BY i.position LIMIT 1");
    st.bind(1, set).bind(2, annotator);
    return st.step() ? std::optional<BlindItem>(blind(readItem(st))) : std::nullopt;
}

ComparisonProgress comparisonProgress(const DataStore& store, const std::string& set,
                                      const std::string& annotator)
{
    sql::Statement st(store.database(),
                      "SELECT count(*), (SELECT count(*) FROM comparison_verdicts v JOIN "
                      "comparison_items j ON j.id = v.item_id WHERE j.set_name = ?1 AND "
                      "j.removed = 0 AND v.annotator = ?2 AND v.active = 1) FROM "
                      "comparison_items i WHERE i.set_name = ?1 AND i.removed = 0");
    st.bind(1, set).bind(2, annotator);
    st.step();
    return ComparisonProgress{st.int64(1), st.int64(0)};
}

}  // namespace tb
