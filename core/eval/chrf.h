// chrF (Popović, 2015, "chrF: character n-gram F-score for automatic MT evaluation") and chrF++
// (Popović, 2017, "chrF++: words helping character n-grams") as sacrebleu 2.6.0 computes them, in
// its 0-100 units and with its defaults: character n-grams up to 6, beta 2, mixed case, no epsilon
// smoothing; word n-grams up to 2 for chrF++.
//
// Definition. Character n-grams are taken over the text with all (Unicode) whitespace removed,
// characters being code points. Word n-grams (chrF++) are taken over the whitespace-separated
// words, a word longer than one character losing one ASCII punctuation mark to a word of its own:
// the last character when it is one, else the first. For each order (characters 1..6, then words
// 1..word order) a segment contributes [hypothesis n-grams, reference n-grams, matches], matches
// being the clipped overlap; the hypothesis count is 0 for an order in which the reference has no
// n-gram. With several references the segment takes the statistics of the reference with the
// best sentence chrF (the first on a tie). The score averages precision and recall over the
// orders in which both the hypothesis and the reference have n-grams, then
//   chrF = 100 * (1 + beta^2) * P * R / (beta^2 * P + R),
// 0 when P + R is 0 (no such order, or no match).
#pragma once

#include "eval/metric.h"

#include <memory>
#include <string>
#include <vector>

namespace tb::eval {

constexpr int kChrfCharOrder = 6;
constexpr int kChrfBeta = 2;

// The segment's statistics, 3 * (kChrfCharOrder + wordOrder) values. Throws tb::Error when refs is
// empty.
std::vector<double> chrfStats(const std::string& hyp, const std::vector<std::string>& refs,
                              int wordOrder);
// chrF from summed statistics (their length gives the word order).
double chrfFromStats(const std::vector<double>& stats);

// sacrebleu.corpus_chrf(hyps, refs transposed, word_order=wordOrder): refs[i] holds the
// references of hyps[i].
double corpusChrf(const std::vector<std::string>& hyps,
                  const std::vector<std::vector<std::string>>& refs, int wordOrder = 0);
// sacrebleu.sentence_chrf(hyp, refs, word_order=wordOrder).
double sentenceChrf(const std::string& hyp, const std::vector<std::string>& refs,
                    int wordOrder = 0);

// The "chrf" metric (wordOrder 0) or "chrf++" (wordOrder 2); other orders are named "chrf+N".
std::unique_ptr<Metric> makeChrfMetric(int wordOrder);

}  // namespace tb::eval
