// Review across annotators: agreement per annotator pair (percent and Cohen's kappa), the
// disagreement log and its export to CSV or JSONL, from the labels in a DataStore.
#pragma once

#include "data/curate/agreement.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

class DataStore;

struct DisagreementEntry {
    int64_t recordId = 0;
    std::vector<std::pair<std::string, std::string>>
        decisions;       // (annotator, accept|reject), by name
    std::string status;  // the record's status now
};

struct AgreementReport {
    std::vector<PairAgreement> pairs;
    std::vector<DisagreementEntry> disagreements;
    int64_t adjudicationQueue = 0;  // records in needs-adjudication
};

// Agreement over accept/reject decisions (ratings are not categories here).
AgreementReport reviewAgreement(const DataStore& store);

// Writes the disagreement log atomically; format "csv" (record_id, annotator, decision, status; one
// row per annotator decision) or "jsonl" (one record per line with all its decisions).
void exportDisagreements(const DataStore& store, const std::string& path,
                         const std::string& format);

}  // namespace tb
