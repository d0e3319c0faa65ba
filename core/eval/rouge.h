// ROUGE-N and ROUGE-L F-measure exactly as Google's rouge-score 0.1.2 package computes them
// (RougeScorer.score / score_multi with its DefaultTokenizer), from Lin, "ROUGE: A Package for
// Automatic Evaluation of Summaries", 2004.
#pragma once

#include "eval/metric.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tb::eval {

// rouge-score's tokenize(): Python's lower(), every run of characters outside [a-z0-9] a
// separator (so non-ASCII letters separate words), and with `stemmer` the Porter stemmer (NLTK's,
// see porter_stemmer.h) applied to the tokens longer than 3 characters.
std::vector<std::string> rougeTokenize(std::string_view text, bool stemmer);

struct RougeScore {
    double precision = 0, recall = 0, fmeasure = 0;
};

// ROUGE-N: n-gram multiset overlap; precision over the prediction's n-grams and recall over the
// target's, each count at least 1 in the denominator; F = 2PR/(P+R), 0 when P+R = 0.
RougeScore rougeN(const std::vector<std::string>& target,
                  const std::vector<std::string>& prediction, int n);
// ROUGE-L: the longest common subsequence of tokens; all zeros when either side has no tokens.
RougeScore rougeL(const std::vector<std::string>& target,
                  const std::vector<std::string>& prediction);

// The n of makeRougeMetric that asks for ROUGE-L.
constexpr int kRougeL = 'L';

// "rouge1", "rouge2" (any n of 1-9 gives "rouge<n>") or, with n = kRougeL, "rougeL": per example
// the F-measure against the reference that scores highest (score_multi), corpus score the mean
// over examples, 0-1. Statistics: {F, 1}. Throws tb::Error for another n.
std::unique_ptr<Metric> makeRougeMetric(int n, bool stemmer);

}  // namespace tb::eval
