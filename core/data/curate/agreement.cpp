// Pairwise percent agreement and Cohen's kappa between annotators, and disagreement listing.
#include "data/curate/agreement.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace tb {

namespace {

// Per record, (annotator id, value id) with one entry per annotator (the last label given);
// annotator ids follow name order, value ids first appearance.
struct Interned {
    std::vector<std::string> annotators;  // sorted names
    std::map<int64_t, std::vector<std::pair<int, int>>> records;
    int values = 0;
};

Interned intern(const std::vector<Label>& labels)
{
    Interned out;
    std::map<std::string, int> annotatorIds;
    for (const Label& l : labels)
        annotatorIds.emplace(l.annotator, 0);
    for (auto& [name, id] : annotatorIds) {
        id = static_cast<int>(out.annotators.size());
        out.annotators.push_back(name);
    }
    std::unordered_map<std::string, int> valueIds;
    for (const Label& l : labels) {
        const int a = annotatorIds[l.annotator];
        const int v =
            valueIds.try_emplace(l.value, static_cast<int>(valueIds.size())).first->second;
        auto& entries = out.records[l.recordId];
        const auto it = std::find_if(entries.begin(), entries.end(),
                                     [&](const auto& e) { return e.first == a; });
        if (it != entries.end())
            it->second = v;
        else
            entries.emplace_back(a, v);
    }
    out.values = static_cast<int>(valueIds.size());
    for (auto& [id, entries] : out.records)
        std::sort(entries.begin(), entries.end());
    return out;
}

}  // namespace

std::vector<PairAgreement> pairwiseAgreement(const std::vector<Label>& labels)
{
    const Interned data = intern(labels);
    // Per annotator pair (a < b): shared items, agreements, each side's category counts.
    struct Counts {
        int64_t items = 0, agreed = 0;
        std::unordered_map<int, int64_t> byA, byB;
    };
    std::map<std::pair<int, int>, Counts> pairs;
    for (const auto& [record, entries] : data.records) {
        for (size_t x = 0; x < entries.size(); ++x) {
            for (size_t y = x + 1; y < entries.size(); ++y) {
                Counts& c = pairs[{entries[x].first, entries[y].first}];
                ++c.items;
                c.agreed += entries[x].second == entries[y].second;
                ++c.byA[entries[x].second];
                ++c.byB[entries[y].second];
            }
        }
    }
    std::vector<PairAgreement> out;
    out.reserve(pairs.size());
    for (const auto& [pair, c] : pairs) {
        PairAgreement p;
        p.annotatorA = data.annotators[static_cast<size_t>(pair.first)];
        p.annotatorB = data.annotators[static_cast<size_t>(pair.second)];
        p.items = c.items;
        p.agreed = c.agreed;
        const double n = static_cast<double>(c.items);
        const double po = static_cast<double>(c.agreed) / n;
        double pe = 0;
        for (const auto& [value, countA] : c.byA) {
            const auto it = c.byB.find(value);
            if (it != c.byB.end())
                pe += (static_cast<double>(countA) / n) * (static_cast<double>(it->second) / n);
        }
        p.percent = 100.0 * po;
        if (pe >= 1.0 - 1e-12)
            p.kappa = po >= 1.0 - 1e-12 ? 1.0 : 0.0;
        else
            p.kappa = (po - pe) / (1.0 - pe);
        out.push_back(std::move(p));
    }
    return out;
}

std::vector<int64_t> disagreements(const std::vector<Label>& labels)
{
    const Interned data = intern(labels);
    std::vector<int64_t> out;
    for (const auto& [record, entries] : data.records) {
        const bool differ = std::any_of(entries.begin(), entries.end(), [&](const auto& e) {
            return e.second != entries.front().second;
        });
        if (differ)
            out.push_back(record);
    }
    return out;
}

}  // namespace tb
