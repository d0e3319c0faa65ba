// Stratified seeded train/validation split and seeded rehearsal sampling.
#include "data/curate/split.h"

#include "data/curate/hash.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tb {

std::vector<int> splitAssign(int64_t records, const std::vector<std::string>& labels,
                             double validationFraction, uint64_t seed)
{
    if (!(validationFraction >= 0.0 && validationFraction <= 1.0))
        fail("validation fraction must be in [0, 1], got ", validationFraction);
    if (records < 0)
        fail("record count must not be negative, got ", records);
    if (!labels.empty() && static_cast<int64_t>(labels.size()) != records)
        fail("split has ", records, " records but ", labels.size(), " labels");

    // Records of each label, in record order; std::map gives a fixed label order.
    std::map<std::string, std::vector<int64_t>> groups;
    if (labels.empty()) {
        auto& all = groups[""];
        all.resize(static_cast<size_t>(records));
        for (int64_t i = 0; i < records; ++i)
            all[static_cast<size_t>(i)] = i;
    } else {
        for (int64_t i = 0; i < records; ++i)
            groups[labels[static_cast<size_t>(i)]].push_back(i);
    }

    // Validation counts: floors, then the largest remainders get one more until the overall count
    // is round(records * fraction); ties go to the label that sorts first.
    struct Share {
        std::vector<int64_t>* members;
        const std::string* label;
        int64_t count;
        double remainder;
    };
    std::vector<Share> shares;
    int64_t assigned = 0;
    for (auto& [label, members] : groups) {
        const double exact = static_cast<double>(members.size()) * validationFraction;
        const auto count = static_cast<int64_t>(std::floor(exact));
        shares.push_back({&members, &label, count, exact - static_cast<double>(count)});
        assigned += count;
    }
    const auto target =
        static_cast<int64_t>(std::llround(static_cast<double>(records) * validationFraction));
    std::vector<size_t> order(shares.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return shares[a].remainder > shares[b].remainder; });
    for (size_t k = 0; k < order.size() && assigned < target; ++k) {
        Share& s = shares[order[k]];
        if (s.remainder > 0) {
            ++s.count;
            ++assigned;
        }
    }

    std::vector<int> side(static_cast<size_t>(records), 0);
    const bool bothSides = validationFraction > 0.0 && validationFraction < 1.0;
    for (Share& s : shares) {
        auto& members = *s.members;
        const auto n = static_cast<int64_t>(members.size());
        if (bothSides && n >= 2)
            s.count = std::clamp<int64_t>(s.count, 1, n - 1);
        // Partial Fisher-Yates: the first `count` places get a uniform random subset.
        SplitMix64 rng(mix64(seed) ^ hashBytes(*s.label, 0x5851f42d4c957f2dULL));
        for (int64_t i = 0; i < s.count; ++i) {
            const auto j = i + static_cast<int64_t>(rng.below(static_cast<uint64_t>(n - i)));
            std::swap(members[static_cast<size_t>(i)], members[static_cast<size_t>(j)]);
            side[static_cast<size_t>(members[static_cast<size_t>(i)])] = 1;
        }
    }
    return side;
}

std::vector<int> splitAssign(const std::vector<std::string>& labels, double validationFraction,
                             uint64_t seed)
{
    return splitAssign(static_cast<int64_t>(labels.size()), labels, validationFraction, seed);
}

std::vector<int64_t> rehearsalPick(int64_t generalCount, int64_t taskCount, double ratio,
                                   uint64_t seed)
{
    if (!(ratio >= 0.0 && ratio < 1.0))
        fail("rehearsal ratio must be in [0, 1), got ", ratio);
    if (generalCount < 0 || taskCount < 0)
        fail("rehearsal counts must not be negative, got ", generalCount, " general and ",
             taskCount, " task records");
    const double wanted = std::round(static_cast<double>(taskCount) * ratio / (1.0 - ratio));
    const int64_t k = static_cast<int64_t>(std::min(wanted, static_cast<double>(generalCount)));
    // Selection sampling (Knuth's Algorithm S): record i is taken with probability
    // (still needed) / (still left), drawn as an exact integer comparison.
    std::vector<int64_t> picked;
    picked.reserve(static_cast<size_t>(k));
    SplitMix64 rng(mix64(seed ^ 0x2545f4914f6cdd1dULL));
    for (int64_t i = 0; i < generalCount && static_cast<int64_t>(picked.size()) < k; ++i) {
        const auto left = static_cast<uint64_t>(generalCount - i);
        const auto needed = static_cast<uint64_t>(k - static_cast<int64_t>(picked.size()));
        if (rng.below(left) < needed)
            picked.push_back(i);
    }
    return picked;
}

}  // namespace tb
