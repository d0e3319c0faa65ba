// BLEU (Papineni et al., 2002, "BLEU: a method for automatic evaluation of machine translation") as
// sacrebleu 2.6.0 computes it (Post, 2018, "A Call for Clarity in Reporting BLEU Scores"), in its
// 0-100 units and with its defaults: mixed case, the 13a tokenizer, n-grams up to 4, exponential
// smoothing.
//
// Definition. Hypothesis and references are right-stripped and tokenized by 13a (mteval-v13a.pl):
// "<skipped>" and "-\n" dropped, newlines to spaces, &quot; &amp; &lt; &gt; unescaped, then spaces
// around the ASCII symbols  !"#$%&()*+/:;<=>?@[\]^_`{|}~, around a period or comma not preceded by
// a digit or not followed by one, and after a hyphen preceded by a digit; the tokens are what lies
// between Unicode whitespace. With several references, an n-gram's clipping count is its largest
// count in any one of them and the reference length is the one closest to the hypothesis length
// (the shorter on a tie). A segment's sufficient statistics are
//   [hyp_len, ref_len, match_1..match_4, total_1..total_4],
// and BLEU = BP * exp(mean over n of log p_n) with p_n = 100 * match_n / total_n and
// BP = exp(1 - ref_len / hyp_len) when hyp_len < ref_len (0 for an empty hypothesis), 1 otherwise.
// No match of any order gives 0. An order without matches gets p_n = 100 / (2^k * total_n), k
// counting such orders so far ('exp', NIST's smoothing); an order with total_n = 0 ends the
// orders: the corpus score then takes log 0 as -9999999999 (so 0), while sentence BLEU (effective
// order) averages over the orders before it only.
#pragma once

#include "eval/metric.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace tb::eval {

constexpr int kBleuMaxOrder = 4;

// BLEU and the parts it is made of, from summed statistics.
struct BleuScore {
    double score = 0;                                // 0-100
    std::array<double, kBleuMaxOrder> precisions{};  // p_1..p_4 after smoothing, 0-100
    double brevityPenalty = 1;
    double hypLength = 0;
    double refLength = 0;
};

// sacrebleu's 13a tokenization of one segment (after its right strip), as UTF-8 tokens.
std::vector<std::string> tokenize13a(const std::string& text);

// The segment's statistics (see above; 2 + 2 * kBleuMaxOrder values). Throws tb::Error when refs
// is empty.
std::vector<double> bleuStats(const std::string& hyp, const std::vector<std::string>& refs);
// BLEU from summed statistics; effectiveOrder as sacrebleu's sentence_bleu uses it.
BleuScore bleuFromStats(const std::vector<double>& stats, bool effectiveOrder);

// sacrebleu.corpus_bleu(hyps, refs transposed) with its defaults: refs[i] holds the references of
// hyps[i] (any number, at least one).
BleuScore corpusBleuScore(const std::vector<std::string>& hyps,
                          const std::vector<std::vector<std::string>>& refs);
double corpusBleu(const std::vector<std::string>& hyps,
                  const std::vector<std::vector<std::string>>& refs);
// sacrebleu.sentence_bleu(hyp, refs): effective order on.
double sentenceBleu(const std::string& hyp, const std::vector<std::string>& refs);

// The "bleu" metric: corpus BLEU from summed statistics; exampleScore is sentence BLEU.
std::unique_ptr<Metric> makeBleuMetric();

}  // namespace tb::eval
