// Blind comparison in the dataset store: sets of items (a prompt and the answers of two sources X
// and Y, shown as A and B in a seeded random order), annotators' verdicts on them, and the
// preference pairs (prompt, chosen, rejected) those verdicts yield. Every change is one operation
// in the store's log, so DataStore::undo reverses it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb {

class DataStore;

namespace sql {
class Database;
}

struct NewComparisonSet {
    std::string name;              // the set; adding under an existing name appends to it
    std::string sourceX, sourceY;  // labels of the two answers' sources: "base", a run's name
    std::vector<std::string> prompts;
    // Empty, or one per prompt: the prompt's chat messages (a JSON array), or null for none.
    std::vector<nlohmann::json> messages;
    std::vector<std::string> answersX, answersY;  // one per prompt
    // Presentation: the new items are shuffled (Fisher-Yates) after the set's existing ones, and
    // each gets a coin flip for which answer is A, both from a splitmix64 stream seeded here, so
    // the order is the same on every platform.
    uint64_t seed = 0;
};

// An item as the annotator sees it: no source labels.
struct BlindItem {
    int64_t id = 0;
    int64_t position = 0;  // presentation order within the set (increasing, may have gaps)
    std::string prompt;
    nlohmann::json messages;  // null when none
    std::string answerA, answerB;
};

// An item with its sources, for statistics and export.
struct ComparisonItem {
    int64_t id = 0;
    std::string setName;
    int64_t position = 0;
    std::string prompt;
    nlohmann::json messages;
    std::string sourceX, answerX, sourceY, answerY;
    bool aIsX = true;  // answer A is X's
    std::string createdAt;
};

struct ComparisonVerdict {
    int64_t id = 0;
    int64_t itemId = 0;
    std::string annotator;
    std::string choice;  // a | b | tie: what the annotator picked
    std::string winner;  // x | y | tie: the source that choice names
    std::string note;
    std::string at;
    int64_t operationId = 0;  // DataStore::undo(operationId) takes the verdict back
};

struct PreferencePair {
    int64_t id = 0;
    int64_t verdictId = 0;
    int64_t itemId = 0;
    std::string setName;
    std::string prompt;
    nlohmann::json messages;  // null when none
    std::string chosen, rejected;
    std::string annotator;
    std::string sourceChosen, sourceRejected;
    std::string at;
};

struct ComparisonProgress {
    int64_t judged = 0;  // items with the annotator's verdict
    int64_t total = 0;   // items of the set
};

// Adds items as one "compare" operation (undo takes them out again, refused while they have
// verdicts); returns their ids in input order. Throws tb::Error for an empty name or list,
// unequal list lengths, empty or equal source labels, or messages that are not arrays.
std::vector<int64_t> addComparisonSet(DataStore& store, const NewComparisonSet& set,
                                      const std::string& who);
std::vector<std::string> comparisonSets(const DataStore& store);  // names of live sets, sorted

// The set's live items in presentation order, blind (what the judging UI shows).
std::vector<BlindItem> blindItems(const DataStore& store, const std::string& set);
BlindItem blindItem(const DataStore& store, int64_t itemId);  // throws for an unknown item
std::vector<ComparisonItem> comparisonItems(const DataStore& store, const std::string& set);

// Records `annotator`'s choice ("a", "b" or "tie", as shown) on an item as one "verdict"
// operation; returns the verdict's id. The choice is mapped to the source it names; unless it is a
// tie a preference pair is stored. A second verdict by the same annotator on the item replaces the
// first (its pair too); undoing the second brings the first back. Throws tb::Error naming an
// unknown item, an unknown choice or an empty annotator.
int64_t recordVerdict(DataStore& store, int64_t itemId, const std::string& annotator,
                      const std::string& choice, const std::string& note = {});

// Active verdicts on the set's live items, by presentation order then annotator.
std::vector<ComparisonVerdict> comparisonVerdicts(const DataStore& store, const std::string& set);
std::optional<ComparisonVerdict> verdictOf(const DataStore& store, int64_t itemId,
                                           const std::string& annotator);
// The stored preference pairs, in verdict order; all sets when `set` is empty.
std::vector<PreferencePair> preferencePairs(const DataStore& store, const std::string& set = {});

// The first item in presentation order without the annotator's verdict; none when all are judged.
std::optional<BlindItem> nextUnjudged(const DataStore& store, const std::string& set,
                                      const std::string& annotator);
ComparisonProgress comparisonProgress(const DataStore& store, const std::string& set,
                                      const std::string& annotator);

// --- The comparison fields of the store's change log (DataStore's writeChange and undo use them).
// "compare.item.<id>.removed": the item's removed flag (bool); "compare.item.<id>.verdict.<name>":
// the id of the annotator's active verdict on the item, or null.
bool isComparisonField(const std::string& field);
nlohmann::json readComparisonField(sql::Database& db, const std::string& field);
void writeComparisonField(sql::Database& db, const std::string& field, const nlohmann::json& value);

}  // namespace tb
