// SQuAD v1.1's answer metrics, as its official evaluation script (evaluate-v1.1.py) defines them:
// exact match and token F1 of normalised answers, the best over an example's references.
#pragma once

#include "eval/metric.h"

#include <memory>
#include <string>
#include <string_view>

namespace tb::eval {

// The script's normalize_answer: Python's lower(), then every ASCII punctuation character
// (string.punctuation) removed, then the articles "a", "an", "the" as whole words (\b in Unicode
// mode) replaced by a space, then whitespace runs collapsed to one space and the ends trimmed.
std::string normalizeSquadAnswer(std::string_view text);

// 1 when the normalised texts are equal, else 0 (exact_match_score).
double squadExactMatch(std::string_view prediction, std::string_view reference);
// f1_score: the bag-of-tokens overlap (the multiset intersection of the normalised texts'
// whitespace tokens) as F1 of precision (over the prediction's tokens) and recall (over the
// reference's); 0 when nothing overlaps, so also when either text normalises to nothing.
double squadTokenF1(std::string_view prediction, std::string_view reference);

// "exact_match" and "f1": per example the maximum over its references
// (metric_max_over_ground_truths), corpus score the mean over examples, 0-1. Statistics:
// {per-example score, 1}. An example without references throws tb::Error.
std::unique_ptr<Metric> makeExactMatchMetric();
std::unique_ptr<Metric> makeTokenF1Metric();

}  // namespace tb::eval
