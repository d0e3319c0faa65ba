// Statistics of a blind comparison set: per source pair the win rate of Y over X with a 95% Wilson
// score interval, per annotator pair Cohen's kappa over the items both judged (agreement.h's
// arithmetic), and per prompt each annotator's outcome and the majority.
#pragma once

#include "data/curate/agreement.h"
#include "data/store/comparisons.h"
#include "util/interval.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tb {

class DataStore;

constexpr double kZ95 = 1.959963984540054;  // the standard normal's 97.5% quantile

// Wilson score interval for a proportion successes / n (successes may be fractional: ties count
// as half a win): (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n). n must be > 0.
Interval wilsonInterval(double successes, double n, double z = kZ95);

// One source pair of a set. Items added with the sources the other way round count here with
// their outcomes swapped; X and Y follow the pair's first item in presentation order.
struct WinRate {
    std::string sourceX, sourceY;
    int64_t verdicts = 0;  // n: every annotator's verdict on every item counts once
    int64_t winsX = 0, winsY = 0, ties = 0;
    double rate = 0;  // Y's win share (winsY + ties / 2) / n
    // 95% Wilson score interval on `rate` with n = verdicts. Verdicts of several annotators on one
    // prompt are not independent, so with several annotators the interval is narrower than the
    // prompts alone support.
    Interval interval;
};

struct PromptVerdicts {
    int64_t itemId = 0;
    std::string prompt;
    std::string sourceX, sourceY;  // the item's own
    // (annotator, outcome) sorted by annotator; outcome "x", "y" or "tie" (the item's sources).
    std::vector<std::pair<std::string, std::string>> outcomes;
    std::string majority;  // the outcome with more votes than each other one; "" when none has
};

struct ComparisonSummary {
    std::vector<WinRate>
        winRates;  // source pairs with at least one verdict, in order of first item
    // Per annotator pair, over the items both judged, categories: the winning source's label or
    // "tie" (X wins / Y wins / tie).
    std::vector<PairAgreement> agreement;
    std::vector<PromptVerdicts> prompts;  // every item, in presentation order
};

// items in presentation order (comparisonItems), verdicts on them (comparisonVerdicts).
ComparisonSummary summarizeComparison(const std::vector<ComparisonItem>& items,
                                      const std::vector<ComparisonVerdict>& verdicts);
ComparisonSummary summarizeComparison(const DataStore& store, const std::string& set);

}  // namespace tb
