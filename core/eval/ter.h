// TER, translation edit rate (Snover et al., 2006, "A Study of Translation Edit Rate with
// Targeted Human Annotation"), as sacrebleu 2.6.0 computes it after Tercom, in its 0-100 units
// and with its defaults: case-insensitive, no normalization, punctuation kept, no Asian support.
// Lower is better.
//
// Definition. Hypothesis and references are right-stripped, lowercased (Python's str.lower) and
// split at Unicode whitespace. The edits against one reference are the shifts plus the word-level
// Levenshtein distance (insertion, deletion, substitution, each 1) of the shifted hypothesis.
// Shifts are found greedily as Tercom does: each round tries moving every hypothesis word run
// (at most 10 words, starting within 50 words of its reference position) that matches a
// reference run to the positions the current alignment suggests, skipping runs already correct,
// and applies the one that lowers the distance most (ties: the longer run, then the earlier
// start, then the earlier target); rounds stop when none helps or after 1,000 candidates in all
// (the round that reaches them applies nothing). The distance is sacrebleu's beam variant: 25
// cells either side of the length-scaled diagonal, widened for very unequal lengths, the last
// row full. An empty reference costs one edit per hypothesis word. A segment's statistics are
// [fewest edits over its references, mean reference length], and
//   TER = 100 * edits / reference length,
// or 100 when the reference length is 0 and there are edits, 0 when there are neither.
#pragma once

#include "eval/metric.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tb::eval {

// The edits (shifts plus edit distance) from hypothesis to reference words, sacrebleu's
// lib_ter.translation_edit_rate.
int64_t terEdits(const std::vector<std::string>& hypWords,
                 const std::vector<std::string>& refWords);

// The segment's statistics [edits, mean reference length]. Throws tb::Error when refs is empty.
std::vector<double> terStats(const std::string& hyp, const std::vector<std::string>& refs);
// TER from summed statistics.
double terFromStats(const std::vector<double>& stats);

// sacrebleu.corpus_ter(hyps, refs transposed): refs[i] holds the references of hyps[i].
double corpusTer(const std::vector<std::string>& hyps,
                 const std::vector<std::vector<std::string>>& refs);
// sacrebleu.sentence_ter(hyp, refs).
double sentenceTer(const std::string& hyp, const std::vector<std::string>& refs);

// The "ter" metric (higherIsBetter false).
std::unique_ptr<Metric> makeTerMetric();

}  // namespace tb::eval
