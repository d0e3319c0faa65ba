// Preference pairs in the dataset store: their tables, the change-log fields undo reverses, reading
// pairs back with their choices and verdicts, and the pairs snapshots freeze.
#include "data/store/pairs_store.h"

#include "data/store/pairs_store_util.h"
#include "data/store/snapshot.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/sha256.h"

#include <cstring>
#include <map>

namespace tb {

using nlohmann::json;

const char* pairsSchemaSql()
{
    // 2 -> 3: preference pairs. A pair is inserted removed and brought in by its operation's
    // change, so undo takes it out again; choices are one row per pair and annotator; history
    // rows of these changes have record_id 0 and a field "pair.<id>.<...>" or
    // "ranking.<id>.removed".
    return R"SQL(
CREATE TABLE pairs (
  id INTEGER PRIMARY KEY,
  prompt TEXT NOT NULL CHECK (json_valid(prompt)),
  chosen TEXT NOT NULL CHECK (json_valid(chosen)),
  rejected TEXT NOT NULL CHECK (json_valid(rejected)),
  plain_text INTEGER NOT NULL DEFAULT 0,
  score_chosen REAL,
  score_rejected REAL,
  margin REAL,
  layout TEXT NOT NULL,
  origin TEXT NOT NULL CHECK (origin IN ('import', 'compare', 'ranking')),
  source_id INTEGER REFERENCES sources(id),
  source_path TEXT NOT NULL DEFAULT '',
  source_line INTEGER NOT NULL DEFAULT 0,
  verdict_id INTEGER,
  ranking_id INTEGER,
  annotator TEXT NOT NULL DEFAULT '',
  split TEXT NOT NULL DEFAULT 'train' CHECK (split IN ('train', 'validation', 'general')),
  swapped INTEGER NOT NULL DEFAULT 0,
  adjudication TEXT CHECK (adjudication IN ('chosen', 'rejected', 'tie', 'skip')),
  removed INTEGER NOT NULL DEFAULT 1,
  operation_id INTEGER NOT NULL REFERENCES operations(id),
  created_at TEXT NOT NULL
);
CREATE INDEX pairs_verdict ON pairs(verdict_id);
CREATE INDEX pairs_ranking ON pairs(ranking_id, annotator);
CREATE TABLE pair_choices (
  pair_id INTEGER NOT NULL REFERENCES pairs(id),
  annotator TEXT NOT NULL,
  choice TEXT NOT NULL CHECK (choice IN ('a', 'b', 'tie', 'skip')),
  verdict TEXT NOT NULL CHECK (verdict IN ('chosen', 'rejected', 'tie', 'skip')),
  at TEXT NOT NULL,
  PRIMARY KEY (pair_id, annotator)
);
CREATE TABLE rankings (
  id INTEGER PRIMARY KEY,
  prompt TEXT NOT NULL CHECK (json_valid(prompt)),
  answers TEXT NOT NULL CHECK (json_valid(answers)),
  removed INTEGER NOT NULL DEFAULT 1,
  operation_id INTEGER NOT NULL REFERENCES operations(id),
  created_at TEXT NOT NULL
);
CREATE TABLE ranking_orders (
  id INTEGER PRIMARY KEY,
  ranking_id INTEGER NOT NULL REFERENCES rankings(id),
  annotator TEXT NOT NULL,
  ranked TEXT NOT NULL CHECK (json_valid(ranked)),
  operation_id INTEGER NOT NULL REFERENCES operations(id),
  at TEXT NOT NULL
);
CREATE TABLE pair_flags (
  pair_id INTEGER NOT NULL REFERENCES pairs(id),
  kind TEXT NOT NULL
);
CREATE INDEX pair_flags_pair ON pair_flags(pair_id);
CREATE TABLE snapshot_pairs (
  snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
  position INTEGER NOT NULL,
  pair_id INTEGER NOT NULL,
  line TEXT NOT NULL,
  PRIMARY KEY (snapshot_id, position)
);
)SQL";
}

namespace {

// A parsed pair or ranking field.
struct FieldRef {
    bool ranking = false;
    int64_t id = 0;
    std::string what;       // removed | swapped | chosen | rejected | adjudication | choice
    std::string annotator;  // choice
};

FieldRef parseField(sql::Database& db, const std::string& field)
{
    FieldRef ref;
    ref.ranking = field.rfind("ranking.", 0) == 0;
    const size_t begin = ref.ranking ? 8 : 5;
    size_t end = begin;
    while (end < field.size() && field[end] >= '0' && field[end] <= '9' && end - begin < 18)
        ++end;
    if (end > begin && end < field.size() && field[end] == '.') {
        ref.id = std::stoll(field.substr(begin, end - begin));
        const std::string rest = field.substr(end + 1);
        if (rest == "removed" || (!ref.ranking && (rest == "swapped" || rest == "chosen" ||
                                                   rest == "rejected" || rest == "adjudication"))) {
            ref.what = rest;
            return ref;
        }
        if (!ref.ranking && rest.rfind("choice.", 0) == 0 && rest.size() > 7) {
            ref.what = "choice";
            ref.annotator = rest.substr(7);
            return ref;
        }
    }
    fail(db.path(), ": unknown pair field \"", field, "\"");
}

void checkExists(sql::Database& db, const FieldRef& ref)
{
    sql::Statement st(db, ref.ranking ? "SELECT 1 FROM rankings WHERE id = ?"
                                      : "SELECT 1 FROM pairs WHERE id = ?");
    st.bind(1, ref.id);
    if (!st.step())
        fail(db.path(), ": no ", ref.ranking ? "ranking" : "pair", " with id ", ref.id);
}

}  // namespace

bool isPairField(const std::string& field)
{
    return field.rfind("pair.", 0) == 0 || field.rfind("ranking.", 0) == 0;
}

json readPairField(sql::Database& db, const std::string& field)
{
    const FieldRef ref = parseField(db, field);
    checkExists(db, ref);
    if (ref.what == "choice") {
        sql::Statement st(db, "SELECT choice, verdict FROM pair_choices WHERE pair_id = ? AND "
                              "annotator = ?");
        st.bind(1, ref.id).bind(2, ref.annotator);
        return st.step() ? json{{"choice", st.text(0)}, {"verdict", st.text(1)}} : json();
    }
    const std::string column = ref.what == "adjudication" ? "adjudication" : ref.what;
    sql::Statement st(
        db, cat("SELECT ", column, " FROM ", ref.ranking ? "rankings" : "pairs", " WHERE id = ?"));
    st.bind(1, ref.id);
    st.step();
    if (ref.what == "removed" || ref.what == "swapped")
        return st.int64(0) != 0;
    if (st.isNull(0))
        return json();
    return ref.what == "adjudication" ? json(st.text(0)) : json::parse(st.text(0));
}

void writePairField(sql::Database& db, const std::string& field, const json& value)
{
    const FieldRef ref = parseField(db, field);
    checkExists(db, ref);
    if (ref.what == "choice") {
        sql::Statement drop(db, "DELETE FROM pair_choices WHERE pair_id = ? AND annotator = ?");
        drop.bind(1, ref.id).bind(2, ref.annotator);
        drop.run();
        if (value.is_null())
            return;
        if (!value.is_object() || !value.contains("choice") || !value.contains("verdict"))
            fail(db.path(), ": pair ", ref.id, ": invalid choice ", value.dump());
        sql::Statement st(db, "INSERT INTO pair_choices (pair_id, annotator, choice, verdict, at) "
                              "VALUES (?, ?, ?, ?, ?)");
        st.bind(1, ref.id)
            .bind(2, ref.annotator)
            .bind(3, value["choice"].get<std::string>())
            .bind(4, value["verdict"].get<std::string>())
            .bind(5, DataStore::now());
        st.run();
        return;
    }
    sql::Statement st(db, cat("UPDATE ", ref.ranking ? "rankings" : "pairs", " SET ", ref.what,
                              " = ? WHERE id = ?"));
    if (ref.what == "removed" || ref.what == "swapped")
        st.bind(1, int64_t(value.is_boolean() && value.get<bool>() ? 1 : 0));
    else if (ref.what == "adjudication" && value.is_null())
        st.bindNull(1);
    else if (ref.what == "adjudication")
        st.bind(1, value.get<std::string>());
    else
        st.bind(1, value.dump());
    st.bind(2, ref.id);
    st.run();
}

namespace {

const char* const kPairColumns =
    "id, prompt, chosen, rejected, plain_text, score_chosen, score_rejected, margin, layout, "
    "origin, source_path, source_line, verdict_id, ranking_id, annotator, split, swapped, "
    "adjudication, removed";

std::optional<double> realOrNone(const sql::Statement& st, int column)
{
    return st.isNull(column) ? std::nullopt : std::optional<double>(st.real(column));
}

StoredPair readPair(const sql::Statement& st)
{
    StoredPair p;
    p.id = st.int64(0);
    p.pair = pairFromStored(json::parse(st.text(1)), json::parse(st.text(2)),
                            json::parse(st.text(3)), st.int64(4) != 0);
    p.pair.scoreChosen = realOrNone(st, 5);
    p.pair.scoreRejected = realOrNone(st, 6);
    p.pair.margin = realOrNone(st, 7);
    p.pair.layout = parsePairLayout(st.text(8)).value_or(PairLayout::Standard);
    p.pair.source = cat("store pair ", p.id);
    p.origin = st.text(9);
    p.sourcePath = st.text(10);
    p.sourceLine = st.int64(11);
    p.verdictId = st.isNull(12) ? 0 : st.int64(12);
    p.rankingId = st.isNull(13) ? 0 : st.int64(13);
    p.annotator = st.text(14);
    p.split = st.text(15);
    p.swapped = st.int64(16) != 0;
    if (!st.isNull(17))
        p.adjudication = st.text(17);
    p.removed = st.int64(18) != 0;
    return p;
}

// Choices and flags of the pairs, and the verdict they yield. A few pairs (a table's page, one
// pair) are looked up by id through the tables' indexes; many are read in one pass each.
void complete(const DataStore& store, std::vector<StoredPair>& pairs)
{
    if (pairs.size() <= 256) {
        sql::Statement c(store.database(),
                         "SELECT pair_id, annotator, choice, verdict, at FROM pair_choices WHERE "
                         "pair_id = ? ORDER BY annotator");
        sql::Statement f(store.database(),
                         "SELECT DISTINCT kind FROM pair_flags WHERE pair_id = ? ORDER BY kind");
        for (StoredPair& p : pairs) {
            p.choices.clear();
            p.flags.clear();
            if (!p.removed) {  // as pairChoices: the choices of live pairs
                c.bind(1, p.id);
                while (c.step())
                    p.choices.push_back(
                        PairChoice{c.int64(0), c.text(1), c.text(2), c.text(3), c.text(4)});
                c.reset();
            }
            f.bind(1, p.id);
            while (f.step())
                p.flags.push_back(f.text(0));
            f.reset();
            p.verdict = pairVerdict(p.adjudication, p.choices);
        }
        return;
    }
    std::map<int64_t, std::vector<PairChoice>> choices;
    for (PairChoice& c : pairChoices(store))
        choices[c.pairId].push_back(std::move(c));
    std::map<int64_t, std::vector<std::string>> flags;
    sql::Statement f(store.database(),
                     "SELECT DISTINCT pair_id, kind FROM pair_flags ORDER BY pair_id, kind");
    while (f.step())
        flags[f.int64(0)].push_back(f.text(1));
    for (StoredPair& p : pairs) {
        p.choices = choices[p.id];
        p.flags = flags[p.id];
        p.verdict = pairVerdict(p.adjudication, p.choices);
    }
}

}  // namespace

std::string pairVerdict(const std::optional<std::string>& adjudication,
                        const std::vector<PairChoice>& choices)
{
    if (adjudication)
        return *adjudication;
    if (choices.empty())
        return "chosen";
    for (const PairChoice& c : choices)
        if (c.verdict != choices.front().verdict)
            return "disputed";
    return choices.front().verdict;
}

std::optional<PairExample> trainingPair(const StoredPair& stored)
{
    if (stored.removed || (stored.verdict != "chosen" && stored.verdict != "rejected"))
        return std::nullopt;
    PairExample p = stored.pair;
    if (stored.verdict == "rejected") {
        std::swap(p.chosen, p.rejected);
        std::swap(p.chosenText, p.rejectedText);
        std::swap(p.scoreChosen, p.scoreRejected);
        p.margin.reset();
    }
    return p;
}

std::vector<PairChoice> pairChoices(const DataStore& store)
{
    sql::Statement st(store.database(),
                      "SELECT c.pair_id, c.annotator, c.choice, c.verdict, c.at FROM pair_choices "
                      "c JOIN pairs p ON p.id = c.pair_id WHERE p.removed = 0 "
                      "ORDER BY c.pair_id, c.annotator");
    std::vector<PairChoice> out;
    while (st.step())
        out.push_back(PairChoice{st.int64(0), st.text(1), st.text(2), st.text(3), st.text(4)});
    return out;
}

std::vector<StoredPair> storedPairsById(const DataStore& store, const std::vector<int64_t>& ids)
{
    sql::Statement st(store.database(), cat("SELECT ", kPairColumns, " FROM pairs WHERE id = ?"));
    std::vector<StoredPair> out;
    out.reserve(ids.size());
    for (int64_t id : ids) {
        st.bind(1, id);
        if (st.step()) {
            out.push_back(readPair(st));
        } else {
            StoredPair& gone = out.emplace_back();  // not in the store: shown as removed
            gone.id = id;
            gone.removed = true;
        }
        st.reset();
    }
    complete(store, out);
    return out;
}

std::vector<int64_t> pairsJudgedBy(const DataStore& store, const std::string& annotator)
{
    sql::Statement st(store.database(),
                      "SELECT pair_id FROM pair_choices WHERE annotator = ? ORDER BY pair_id");
    st.bind(1, annotator);
    std::vector<int64_t> out;
    while (st.step())
        out.push_back(st.int64(0));
    return out;
}

std::vector<StoredPair> storedPairs(const DataStore& store, bool includeRemoved)
{
    sql::Statement st(store.database(),
                      cat("SELECT ", kPairColumns, " FROM pairs",
                          includeRemoved ? "" : " WHERE removed = 0", " ORDER BY id"));
    std::vector<StoredPair> out;
    while (st.step())
        out.push_back(readPair(st));
    complete(store, out);
    return out;
}

std::vector<int64_t> storedPairIds(const DataStore& store)
{
    sql::Statement st(store.database(), "SELECT id FROM pairs WHERE removed = 0 ORDER BY id");
    std::vector<int64_t> out;
    while (st.step())
        out.push_back(st.int64(0));
    return out;
}

StoredPair storedPair(const DataStore& store, int64_t pairId)
{
    sql::Statement st(store.database(), cat("SELECT ", kPairColumns, " FROM pairs WHERE id = ?"));
    st.bind(1, pairId);
    if (!st.step())
        fail(store.path(), ": no pair with id ", pairId);
    std::vector<StoredPair> one{readPair(st)};
    complete(store, one);
    return one.front();
}

void replacePairFlags(DataStore& store, const std::vector<std::pair<int64_t, std::string>>& flags)
{
    sql::Database& db = store.database();
    sql::Transaction tx(db);
    db.exec("DELETE FROM pair_flags");
    sql::Statement st(db, "INSERT INTO pair_flags (pair_id, kind) VALUES (?, ?)");
    for (const auto& [id, kind] : flags) {
        st.bind(1, id).bind(2, kind);
        st.run();
    }
    tx.commit();
}

std::vector<std::string> trainingPairLines(const DataStore& store, const std::string& split,
                                           bool excludeFlagged)
{
    std::vector<std::string> lines;
    for (const StoredPair& p : storedPairs(store)) {
        if (p.split != split || (excludeFlagged && !p.flags.empty()))
            continue;
        if (const auto t = trainingPair(p)) {
            json line = pairToJson(*t);
            line["pair_id"] = p.id;
            lines.push_back(line.dump());
        }
    }
    return lines;
}

void freezeSnapshotPairs(sql::Database& db, const std::string& snapshotId,
                         const std::vector<std::string>& lines)
{
    sql::Statement st(db, "INSERT INTO snapshot_pairs (snapshot_id, position, pair_id, line) "
                          "VALUES (?, ?, ?, ?)");
    for (size_t i = 0; i < lines.size(); ++i) {
        st.bind(1, snapshotId)
            .bind(2, int64_t(i))
            .bind(3, json::parse(lines[i])["pair_id"].get<int64_t>())
            .bind(4, lines[i]);
        st.run();
    }
}

std::vector<PairExample> snapshotPairs(const DataStore& store, const std::string& snapshotId)
{
    const SnapshotInfo info = findSnapshot(store, snapshotId);
    if (!info.manifest.contains("pairs"))
        return {};
    sql::Statement st(store.database(), "SELECT pair_id, line FROM snapshot_pairs WHERE "
                                        "snapshot_id = ? ORDER BY position");
    st.bind(1, snapshotId);
    std::string content;
    std::vector<PairExample> out;
    while (st.step()) {
        const std::string line = st.text(1);
        content += line + '\n';
        json row = json::parse(line);
        row.erase("pair_id");
        PairExample p = parsePairRow(row, PairLayout::Standard);
        p.source = cat("store pair ", st.int64(0));
        out.push_back(std::move(p));
    }
    const std::string expected = info.manifest["pairs"].value("sha256", std::string());
    if (sha256Hex(content) != expected)
        fail(store.path(), ": the pairs of snapshot ", snapshotId,
             " do not match their SHA-256: the store was modified outside Tunebench");
    return out;
}

int64_t exportPairsJsonl(const DataStore& store, const std::string& snapshotId,
                         const std::string& path)
{
    const std::vector<PairExample> pairs = snapshotPairs(store, snapshotId);
    if (pairs.empty())
        fail(store.path(), ": snapshot ", snapshotId, " holds no preference pairs");
    std::string content;
    for (const PairExample& p : pairs)
        content += pairToJson(p).dump() + '\n';
    writeFileAtomic(path, content);
    return int64_t(pairs.size());
}

}  // namespace tb
