// Bootstrap confidence intervals of corpus scores from per-example sufficient statistics: one
// system's score, and the paired difference of two systems scored on the same examples
// (Koehn, "Statistical Significance Tests for Machine Translation Evaluation", 2004).
#pragma once

#include "eval/metric.h"
#include "util/interval.h"

#include <cstdint>
#include <vector>

namespace tb::eval {

struct CorpusScore {
    double score = 0;  // metric.score of all examples' summed statistics
    Interval ci;       // percentile bootstrap interval
};

// The q-quantile (0 <= q <= 1) of ascending `sorted` by linear interpolation between order
// statistics, as numpy.quantile's default method ("linear"), including its interpolation formula.
// Throws tb::Error when `sorted` is empty or q is outside [0, 1].
double quantileSorted(const std::vector<double>& sorted, double q);

// Score and percentile interval: `resamples` times, N example indices are drawn with replacement
// (N = exampleStats.size(); std::mt19937_64 seeded with `seed`, each index the high 64 bits of
// draw * N, so the same on every platform), the drawn examples' statistics summed and scored; the
// interval is the (1-confidence)/2 and (1+confidence)/2 quantiles of those scores. Throws
// tb::Error for no examples, statistics of unequal lengths, resamples < 1 or confidence outside
// (0, 1).
CorpusScore bootstrapScore(const Metric& metric,
                           const std::vector<std::vector<double>>& exampleStats,
                           int resamples = 1000, uint64_t seed = 0, double confidence = 0.95);

struct PairedDelta {
    double a = 0, b = 0;        // the two systems' corpus scores (b: the tuned model)
    double delta = 0;           // b - a
    Interval ci;                // percentile interval of the resampled deltas
    bool excludesZero = false;  // the interval lies strictly above or strictly below 0
};

// Paired bootstrap: each resample draws one set of indices (as bootstrapScore does) and scores
// both systems on it, so that the interval reflects the difference on the same examples. Throws
// tb::Error when the systems have different numbers of examples, none, or as bootstrapScore.
PairedDelta pairedBootstrap(const Metric& metric, const std::vector<std::vector<double>>& statsA,
                            const std::vector<std::vector<double>>& statsB, int resamples = 1000,
                            uint64_t seed = 0, double confidence = 0.95);

}  // namespace tb::eval
