// Curation over a DataStore: exact and near dedup, filters, the leak/PII scan, token statistics,
// the seeded train/validation split and the rehearsal mix. Each change is one reversible store
// operation.
#pragma once

#include "data/curate/stats.h"
#include "data/store/store.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// Progress in [0, 1] with a phase name; return false to cancel (the call then throws tb::Error,
// nothing is written).
using CurateProgress = std::function<bool(const std::string& phase, double fraction)>;

struct DedupReport {
    int64_t records = 0;          // records considered (not removed)
    int64_t exactDuplicates = 0;  // exact copies (after normalisation) of an earlier record
    int64_t nearDuplicates = 0;   // other records within the threshold of an earlier kept record
    int64_t clusters = 0;         // groups with more than one member
    int64_t removed = 0;          // with apply: exactDuplicates + nearDuplicates
    int64_t operationId = 0;      // with apply: the operation to undo
    std::vector<std::vector<int64_t>> clusterIds;  // record ids, kept record first
};
DedupReport dedupRecords(DataStore& store, std::optional<double> nearThreshold, bool apply,
                         const std::string& who, const CurateProgress& progress = {});

struct FilterOptions {
    std::optional<int64_t> minTokens;  // stored token counts (data stats)
    std::optional<int64_t> maxTokens;
    bool dropEmpty = false;   // records with an empty or missing required field
    std::string regex;        // PCRE2 pattern over the record's text
    bool regexKeeps = false;  // false: matching records are removed; true: only matching ones kept
};
struct FilterReport {
    int64_t records = 0;
    int64_t matched = 0;  // records the filter removes (or, with apply, removed)
    std::map<std::string, int64_t> byReason;  // too_short, too_long, empty, regex
    int64_t operationId = 0;
};
FilterReport filterRecords(DataStore& store, const FilterOptions& options, bool apply,
                           const std::string& who);

struct ScanReport {
    static constexpr size_t kFlagsHeld = 2000;
    int64_t records = 0;
    int64_t flagged = 0;                    // records with at least one match
    int64_t matches = 0;                    // all matches (the store holds every one)
    std::map<std::string, int64_t> byKind;  // matches per kind
    std::vector<ScanFlag> flags;            // the first kFlagsHeld matches, by record id
};
// Replaces the store's scan flags with a fresh scan of every record's text fields, streaming:
// records are read one at a time and the flags written as they are found (one transaction).
ScanReport scanRecords(DataStore& store, const std::string& who,
                       const CurateProgress& progress = {});

struct TokenStatsReport {
    int64_t records = 0;
    LengthStats tokens;     // rendered training text, as the trainer tokenizes it
    int64_t truncated = 0;  // records over maxLength
    int64_t maxLength = 0;
    std::string chatTemplate;  // the family used to render
    std::map<std::string, LengthStats> perField;
    std::map<std::string, Histogram> histograms;  // "total" and each field
    int64_t counted = 0;  // records whose counts were (re)computed in this call
    // Every record's length, each distinct value once: `truncated` for another max length
    // without reading the store again (a few thousand entries at 1M records).
    LengthTally lengths;
};
// Counts tokens with the model folder's tokenizer (stored per record, reused while the tokenizer is
// the same) and summarises them. chatTemplate "auto": the model's, else plain.
TokenStatsReport tokenStats(DataStore& store, const std::string& modelDir, int64_t maxLength,
                            const std::string& chatTemplate = "auto", int bins = 20,
                            const CurateProgress& progress = {});

struct SplitReport {
    int64_t train = 0;
    int64_t validation = 0;
    std::map<std::string, std::pair<int64_t, int64_t>> byLabel;  // label -> (train, validation)
    int64_t operationId = 0;
};
// Assigns train/validation to the records of those two splits (general ones stay), stratified by
// the field `labelField` when given (records without it form their own stratum).
SplitReport splitRecords(DataStore& store, double validationFraction, uint64_t seed,
                         const std::string& labelField, const std::string& who);

struct RehearsalReport {
    int64_t task = 0;   // train records before the mix
    int64_t added = 0;  // general records moved into train
    double ratio = 0;   // achieved general / (task + general)
    int64_t operationId = 0;
};
// Moves a seeded sample of "general" records into train so that they make up `ratio` of it.
RehearsalReport mixRehearsal(DataStore& store, double ratio, uint64_t seed, const std::string& who);

}  // namespace tb
