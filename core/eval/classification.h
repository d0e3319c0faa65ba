// Classification metrics over normalised labels: accuracy, the per-class report (precision,
// recall, F1, support, macro and micro F1, confusion matrix) and the pair F1 of the
// entity-matching template. Conventions follow scikit-learn with zero_division=0: a ratio whose
// denominator is 0 is 0.
#pragma once

#include "eval/metric.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tb::eval {

// A label as compared: Python's lower(); whitespace trimmed and each inner run of it one space;
// then, until nothing changes, quote characters (" ' ` and the typographic “ ” ‘ ’ « ») stripped
// from both ends and punctuation (. , ; : ! ? and …) from the end, trimming again after each.
// "  'Positive'. " and "POSITIVE" are both "positive"; inner punctuation stays ("e.g. this").
std::string normalizeLabel(std::string_view label);

struct ClassMetrics {
    std::string label;
    double precision = 0;  // tp / (tp + fp)
    double recall = 0;     // tp / (tp + fn)
    double f1 = 0;         // 2 tp / (2 tp + fp + fn)
    int64_t support = 0;   // examples whose reference is this label
};

struct ClassificationReport {
    // The normalised labels of references and predictions together, sorted (bytewise); a
    // predicted label no reference has is a class with support 0.
    std::vector<std::string> labels;
    std::vector<ClassMetrics> classes;  // one per label, in `labels` order
    int64_t examples = 0;
    double accuracy = 0;        // share of examples whose prediction equals the reference
    double macroPrecision = 0;  // unweighted means over all labels
    double macroRecall = 0;
    double macroF1 = 0;
    double microF1 = 0;  // from the summed tp, fp, fn (equals accuracy for one label each)
    // confusion[r][p]: examples with reference labels[r] predicted as labels[p].
    std::vector<std::vector<int64_t>> confusion;
};

// One reference per prediction, both normalised first; throws tb::Error when the sizes differ.
ClassificationReport classificationReport(const std::vector<std::string>& predictions,
                                          const std::vector<std::string>& references);

// "accuracy": 1 when the normalised prediction equals any normalised reference, else 0; corpus
// score the mean, 0-1. Statistics: {correct, 1}.
std::unique_ptr<Metric> makeAccuracyMetric();

// The class of an answer of the entity-matching template (completion "Yes"/"No", store label
// "match"/"non-match"): after normalizeLabel, 1 for "yes" and "match", 0 for "no", "non-match"
// and "no match", -1 for anything else ("yes, they are" included).
int matchLabelClass(std::string_view label);

// "match_f1": F1 of the match class over examples, an example's class that of its first
// reference (tb::Error when that is neither class). Statistics {tp, fp, fn}; a prediction of
// neither class counts as wrong: a false negative when the reference is a match, a false positive
// when it is not. Score 2 tp / (2 tp + fp + fn), 0 when that is 0/0 (no match anywhere, none
// predicted).
std::unique_ptr<Metric> makeMatchF1Metric();

}  // namespace tb::eval
