// Inter-annotator agreement over labelled records: per annotator pair, percent agreement and
// Cohen's kappa, and the records on which annotators disagree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct Label {
    int64_t recordId = 0;
    std::string annotator;
    std::string value;  // compared byte for byte
};

struct PairAgreement {
    std::string annotatorA, annotatorB;  // A < B
    int64_t items = 0;                   // records labelled by both
    int64_t agreed = 0;                  // of those, records with equal values
    double percent = 0;                  // 100 * agreed / items
    double kappa = 0;                    // Cohen's kappa
};

// One entry per pair of annotators who labelled at least one record in common, sorted by (A, B).
// Cohen's kappa = (po - pe) / (1 - pe): po = agreed / items, pe = sum over the categories used by
// either annotator on the shared records of pA(c) * pB(c), each annotator's share of those records
// labelled c. When pe == 1 (both gave every shared record the same single category) kappa is 1 if
// po == 1, else 0. When an annotator labelled a record more than once, the last label counts.
std::vector<PairAgreement> pairwiseAgreement(const std::vector<Label>& labels);

// Ids of records whose annotators gave different values (last label per annotator), increasing.
std::vector<int64_t> disagreements(const std::vector<Label>& labels);

}  // namespace tb
