// Preference pairs in the dataset store: pairs imported from files, taken from blind-comparison
// verdicts or made from rankings of K answers; annotators' choices on each pair as shown (A/B,
// swappable), answer edits and adjudication; the pairs training reads, frozen into snapshots.
// Every change is one operation in the store's log, so DataStore::undo reverses it.
#pragma once

#include "data/pairs.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tb {

class DataStore;

namespace sql {
class Database;
}

// An annotator's choice on a pair: `choice` as shown (a | b | tie | skip) and `verdict`, what it
// says about the stored pair: chosen (the stored chosen answer is better), rejected (the stored
// rejected answer is), tie or skip.
struct PairChoice {
    int64_t pairId = 0;
    std::string annotator;
    std::string choice;
    std::string verdict;
    std::string at;
};

struct StoredPair {
    int64_t id = 0;
    PairExample pair;        // as stored (edits applied); source "store pair <id>"
    std::string origin;      // import | compare | ranking
    std::string sourcePath;  // import: the file; compare: the set; ranking: ""
    int64_t sourceLine = 0;  // import: the row's line
    int64_t verdictId = 0;   // compare: the comparison verdict the pair came from
    int64_t rankingId = 0;   // ranking: the ranking and the annotator whose order made it
    std::string annotator;
    std::string split = "train";
    bool swapped = false;  // shown as A: the stored rejected answer (false: the chosen one)
    std::optional<std::string> adjudication;  // the adjudicator's verdict (chosen | rejected | ...)
    std::vector<PairChoice> choices;          // by annotator
    // What training reads: chosen (as stored), rejected (flipped), tie, skip, or disputed
    // (annotators' verdicts differ and no adjudication). Only chosen and rejected are trained on.
    std::string verdict;
    bool removed = false;
    std::vector<std::string> flags;  // scan kinds found in the pair
};

// The verdict of a pair: the adjudication when there is one, else the annotators' common verdict
// ("disputed" when they differ), else "chosen" (the pair as stored).
std::string pairVerdict(const std::optional<std::string>& adjudication,
                        const std::vector<PairChoice>& choices);
// The pair as training reads it: flipped when the verdict is "rejected" (scores swapped, margin
// dropped); none for a removed pair or a tie, skip or disputed verdict.
std::optional<PairExample> trainingPair(const StoredPair& pair);

struct PairImportReport {
    int64_t imported = 0;
    std::vector<PairRejection> rejected;  // "file:line" and reason, in file order
    int64_t sourceId = 0;
    int64_t operationId = 0;  // DataStore::undo(operationId) takes the pairs out again
};
// Reads a pair file (readPairFile) and stores its valid pairs as one "import-pairs" operation.
// Throws tb::Error (nothing stored) when the file is unreadable or holds no valid pair, or when
// `progress` (phase, fraction) returns false: "pairs import: cancelled", nothing stored.
PairImportReport
importPairs(DataStore& store, const std::string& path, PairLayout layout, const std::string& who,
            const std::function<bool(const std::string& phase, double fraction)>& progress = {});

struct FromComparisonsReport {
    int64_t added = 0;
    int64_t skipped = 0;                  // verdicts whose pair is already stored (live)
    std::vector<PairRejection> rejected;  // "compare verdict <id>" and reason
    int64_t operationId = 0;              // 0 when nothing was added
};
// Turns the blind-comparison preference pairs of a set (all sets when empty) into stored pairs,
// skipping verdicts already taken; one "pairs-from-compare" operation. Throws tb::Error naming
// the store's sets when `set` is not one of them.
FromComparisonsReport pairsFromComparisons(DataStore& store, const std::string& set,
                                           const std::string& who);

// A prompt (ending with a user turn) and K >= 2 distinct answers to rank; one "ranking" operation.
int64_t addRanking(DataStore& store, const std::vector<ChatMessage>& prompt,
                   const std::vector<std::string>& answers, const std::string& who);
struct Ranking {
    int64_t id = 0;
    std::vector<ChatMessage> prompt;
    std::vector<std::string> answers;
};
std::vector<Ranking> rankings(const DataStore& store);  // live ones, by id
// An annotator's order of the answers (indices into answers, best first, each once): every
// ordered pair (i ranked before j) becomes a stored pair chosen = answer i, rejected = answer j,
// K(K-1)/2 in all, replacing the pairs of the annotator's earlier order of the ranking; one "rank"
// operation. Returns the new pairs' ids.
std::vector<int64_t> recordRanking(DataStore& store, int64_t rankingId,
                                   const std::string& annotator, const std::vector<int>& order);

// Pairwise review. `choice` (a | b | tie | skip) refers to the pair as shown now (swapped or
// not); a second choice by the same annotator replaces the first. Each returns its operation.
int64_t recordPairChoice(DataStore& store, int64_t pairId, const std::string& annotator,
                         const std::string& choice);
int64_t swapPair(DataStore& store, int64_t pairId, const std::string& who);  // which answer is A
// Replaces the stored chosen or rejected answer ("chosen" | "rejected") with `text` (one
// assistant turn, or the text itself for a plain-text pair).
int64_t editPairAnswer(DataStore& store, int64_t pairId, const std::string& side,
                       const std::string& text, const std::string& who);
// The adjudicator's final choice (a | b | tie | skip, as shown now); it overrides annotators'
// choices in what training reads.
int64_t adjudicatePair(DataStore& store, int64_t pairId, const std::string& choice,
                       const std::string& who);

std::vector<StoredPair> storedPairs(const DataStore& store, bool includeRemoved = false);
// The ids of the stored pairs that are not removed, in id order (what storedPairs lists, without
// reading each pair's texts and choices: the review table's row order).
std::vector<int64_t> storedPairIds(const DataStore& store);
StoredPair storedPair(const DataStore& store, int64_t pairId);  // throws for an unknown id
// The pairs of `ids` in that order (a table's page), each looked up by id; an id the store does
// not hold comes back as a removed pair with that id.
std::vector<StoredPair> storedPairsById(const DataStore& store, const std::vector<int64_t>& ids);
// The ids of the pairs `annotator` has a choice on, ascending (one pass over the choices).
std::vector<int64_t> pairsJudgedBy(const DataStore& store, const std::string& annotator);
std::vector<PairChoice> pairChoices(const DataStore& store);  // of live pairs, by pair, name

// Replaces the pairs' scan flags (kind and field per finding); `flags` are (pair id, kind).
void replacePairFlags(DataStore& store, const std::vector<std::pair<int64_t, std::string>>& flags);

// Snapshots (data/store/snapshot.h freezes pairs with records): the JSONL lines of the pairs
// training reads from `split` (pairToJson of trainingPair plus "pair_id", by id), and the writing
// of a snapshot's pairs inside createSnapshot's transaction.
std::vector<std::string> trainingPairLines(const DataStore& store, const std::string& split,
                                           bool excludeFlagged);
void freezeSnapshotPairs(sql::Database& db, const std::string& snapshotId,
                         const std::vector<std::string>& lines);
// The pairs a snapshot froze (source "store pair <id>"), their hash checked against the
// manifest; empty for a snapshot made before pairs existed. The trainer reads exactly this.
std::vector<PairExample> snapshotPairs(const DataStore& store, const std::string& snapshotId);
// Writes the snapshot's pairs to `path` in TRL's standard layout (atomically); returns how many.
int64_t exportPairsJsonl(const DataStore& store, const std::string& snapshotId,
                         const std::string& path);

// --- The pair fields of the store's change log (DataStore's writeChange and undo use them):
// "pair.<id>.removed" | ".swapped" (bool), ".chosen" | ".rejected" (the answer's JSON),
// ".adjudication" (verdict or null), ".choice.<annotator>" ({"choice", "verdict"} or null), and
// "ranking.<id>.removed".
bool isPairField(const std::string& field);
nlohmann::json readPairField(sql::Database& db, const std::string& field);
void writePairField(sql::Database& db, const std::string& field, const nlohmann::json& value);
// The schema step that adds the pair tables (DataStore's migration 2 -> 3).
const char* pairsSchemaSql();

}  // namespace tb
