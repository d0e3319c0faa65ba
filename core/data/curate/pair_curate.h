// Curation of the store's preference pairs: annotator agreement on pairwise choices (percent and
// Cohen's kappa), the pairs awaiting adjudication, and the dedup and leak/PII scan over pair text.
#pragma once

#include "data/curate/agreement.h"
#include "data/curate/curate.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tb {

class DataStore;

// Per annotator pair, over the live pairs both judged (skips left out): percent agreement and
// Cohen's kappa of their verdicts (chosen, rejected or tie, i.e. a/b/tie with the side each
// answer was shown on taken out), as curate/agreement.h defines them.
std::vector<PairAgreement> pairChoiceAgreement(const DataStore& store);
// Live pairs whose annotators' verdicts differ and that have no adjudication, by id.
std::vector<int64_t> disputedPairs(const DataStore& store);

// Exact (and with nearThreshold near) duplicates among the live pairs by pairText, as
// dedupRecords finds them among records; clusterIds are pair ids. With apply the duplicates are
// removed as one "dedup-pairs" operation.
DedupReport dedupPairs(DataStore& store, std::optional<double> nearThreshold, bool apply,
                       const std::string& who);

struct PairScanReport {
    int64_t pairs = 0;
    int64_t flagged = 0;                                 // pairs with at least one finding
    std::map<std::string, int64_t> byKind;               // findings per kind
    std::vector<std::pair<int64_t, std::string>> flags;  // (pair id, kind) per finding
};
// Replaces the pairs' scan flags with a fresh leak/PII scan of every live pair's text, logged as a
// "scan-pairs" operation (nothing to undo: the next scan replaces the flags).
PairScanReport scanPairs(DataStore& store, const std::string& who);

}  // namespace tb
