// Pair curation over the store: agreement on choices, disputes, dedup and the leak/PII scan.
#include "data/curate/pair_curate.h"

#include "data/curate/dedup.h"
#include "data/curate/scan.h"
#include "data/store/pairs_store.h"
#include "data/store/store.h"
#include "util/error.h"

#include <set>

namespace tb {

using nlohmann::json;

std::vector<PairAgreement> pairChoiceAgreement(const DataStore& store)
{
    std::vector<Label> labels;
    for (const PairChoice& c : pairChoices(store))
        if (c.verdict != "skip")
            labels.push_back(Label{c.pairId, c.annotator, c.verdict});
    return pairwiseAgreement(labels);
}

std::vector<int64_t> disputedPairs(const DataStore& store)
{
    std::vector<int64_t> out;
    for (const StoredPair& p : storedPairs(store))
        if (p.verdict == "disputed")
            out.push_back(p.id);
    return out;
}

DedupReport dedupPairs(DataStore& store, std::optional<double> nearThreshold, bool apply,
                       const std::string& who)
{
    if (nearThreshold && (*nearThreshold <= 0 || *nearThreshold > 1))
        fail("data pairs dedup: --near ", *nearThreshold, " is outside (0, 1]");
    std::vector<int64_t> ids;
    std::vector<std::string> texts;
    for (const StoredPair& p : storedPairs(store)) {
        ids.push_back(p.id);
        texts.push_back(pairText(p.pair));
    }
    DedupOptions options;
    options.nearThreshold = nearThreshold;
    const DedupResult result = findDuplicates(texts, options);
    DedupReport report;
    report.records = result.records;
    report.exactDuplicates = result.exactDuplicates;
    report.nearDuplicates = result.nearDuplicates;
    report.clusters = int64_t(result.clusters.size());
    for (const auto& cluster : result.clusters) {
        std::vector<int64_t> members;
        for (int64_t i : cluster)
            members.push_back(ids[size_t(i)]);
        report.clusterIds.push_back(std::move(members));
    }
    if (apply && !result.duplicates.empty()) {
        std::vector<DataStore::Change> changes;
        for (const DuplicateOf& d : result.duplicates)
            changes.push_back({0, cat("pair.", ids[size_t(d.index)], ".removed"), true});
        report.removed = int64_t(changes.size());
        report.operationId = store.applyOperation(
            "dedup-pairs", who, json{{"near", nearThreshold ? json(*nearThreshold) : json()}},
            json{{"exact_duplicates", report.exactDuplicates},
                 {"near_duplicates", report.nearDuplicates},
                 {"clusters", report.clusters},
                 {"removed", report.removed}},
            changes);
    }
    return report;
}

PairScanReport scanPairs(DataStore& store, const std::string& who)
{
    PairScanReport report;
    for (const StoredPair& p : storedPairs(store)) {
        ++report.pairs;
        const std::vector<ScanMatch> matches = scanText(pairText(p.pair));
        for (const ScanMatch& m : matches) {
            report.flags.emplace_back(p.id, m.kind);
            ++report.byKind[m.kind];
        }
        report.flagged += matches.empty() ? 0 : 1;
    }
    replacePairFlags(store, report.flags);
    store.applyOperation(
        "scan-pairs", who, json::object(),
        json{{"pairs", report.pairs}, {"flagged", report.flagged}, {"by_kind", report.byKind}}, {});
    return report;
}

}  // namespace tb
