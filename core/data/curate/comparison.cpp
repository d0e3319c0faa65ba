// Win rates with Wilson intervals, annotator agreement and per-prompt majorities of a comparison
// set.
#include "data/curate/comparison.h"

#include "data/store/store.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tb {

Interval wilsonInterval(double successes, double n, double z)
{
    const double p = successes / n;
    const double z2 = z * z;
    const double denominator = 1.0 + z2 / n;
    const double center = (p + z2 / (2.0 * n)) / denominator;
    const double half = z * std::sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denominator;
    return Interval{std::max(0.0, center - half), std::min(1.0, center + half)};
}

namespace {

std::string majorityOf(const std::vector<std::pair<std::string, std::string>>& outcomes)
{
    std::map<std::string, int> votes;
    for (const auto& [annotator, outcome] : outcomes)
        ++votes[outcome];
    std::string best;
    int most = 0;
    bool shared = false;
    for (const auto& [outcome, count] : votes) {
        if (count > most) {
            best = outcome;
            most = count;
            shared = false;
        } else if (count == most) {
            shared = true;
        }
    }
    return shared ? std::string() : best;
}

}  // namespace

ComparisonSummary summarizeComparison(const std::vector<ComparisonItem>& items,
                                      const std::vector<ComparisonVerdict>& verdicts)
{
    ComparisonSummary out;
    std::map<int64_t, size_t> itemIndex;
    for (const ComparisonItem& item : items) {
        itemIndex[item.id] = out.prompts.size();
        out.prompts.push_back(
            PromptVerdicts{item.id, item.prompt, item.sourceX, item.sourceY, {}, {}});
    }
    // Source pairs keyed unordered, oriented by their first item.
    std::map<std::pair<std::string, std::string>, size_t> pairIndex;
    std::vector<WinRate> pairs;
    for (const ComparisonItem& item : items) {
        const auto key = std::minmax(item.sourceX, item.sourceY);
        if (pairIndex.emplace(std::pair(key.first, key.second), pairs.size()).second)
            pairs.push_back(WinRate{item.sourceX, item.sourceY, 0, 0, 0, 0, 0, {}});
    }
    std::vector<Label> labels;
    for (const ComparisonVerdict& v : verdicts) {
        const auto it = itemIndex.find(v.itemId);
        if (it == itemIndex.end())
            continue;  // a verdict on an item outside `items`
        const ComparisonItem& item = items[it->second];
        out.prompts[it->second].outcomes.emplace_back(v.annotator, v.winner);
        const bool tie = v.winner == "tie";
        const std::string& winnerSource = v.winner == "x" ? item.sourceX : item.sourceY;
        // Categories: "won:<source>" or "tie" (a source may be labelled "tie").
        labels.push_back(
            Label{v.itemId, v.annotator, tie ? std::string("tie") : "won:" + winnerSource});
        const auto key = std::minmax(item.sourceX, item.sourceY);
        WinRate& w = pairs[pairIndex.at(std::pair(key.first, key.second))];
        ++w.verdicts;
        if (tie)
            ++w.ties;
        else if (winnerSource == w.sourceY)
            ++w.winsY;
        else
            ++w.winsX;
    }
    for (WinRate& w : pairs) {
        if (w.verdicts == 0)
            continue;
        const double n = double(w.verdicts);
        const double successes = double(w.winsY) + 0.5 * double(w.ties);
        w.rate = successes / n;
        w.interval = wilsonInterval(successes, n);
        out.winRates.push_back(w);
    }
    for (PromptVerdicts& p : out.prompts) {
        std::sort(p.outcomes.begin(), p.outcomes.end());
        p.majority = majorityOf(p.outcomes);
    }
    out.agreement = pairwiseAgreement(labels);
    return out;
}

ComparisonSummary summarizeComparison(const DataStore& store, const std::string& set)
{
    return summarizeComparison(comparisonItems(store, set), comparisonVerdicts(store, set));
}

}  // namespace tb
