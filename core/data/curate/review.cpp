// Agreement and disagreement log over the store's annotator labels.
#include "data/curate/review.h"

#include "data/store/store.h"
#include "util/error.h"
#include "util/file_util.h"

#include <nlohmann/json.hpp>

#include <map>

namespace tb {

AgreementReport reviewAgreement(const DataStore& store)
{
    std::vector<Label> labels;
    std::map<int64_t, std::vector<std::pair<std::string, std::string>>> byRecord;
    for (const AnnotatorLabel& l : store.labels()) {
        if (l.decision.empty())
            continue;
        labels.push_back(Label{l.recordId, l.annotator, l.decision});
        byRecord[l.recordId].emplace_back(l.annotator, l.decision);
    }
    AgreementReport report;
    report.pairs = pairwiseAgreement(labels);
    for (int64_t id : disagreements(labels)) {
        DisagreementEntry e;
        e.recordId = id;
        e.decisions = byRecord[id];
        e.status = reviewStatusName(store.record(id).status);
        report.disagreements.push_back(std::move(e));
    }
    RecordQuery queue;
    queue.status = ReviewStatus::NeedsAdjudication;
    report.adjudicationQueue = store.count(queue);
    return report;
}

namespace {

std::string csvField(const std::string& value)
{
    if (value.find_first_of(",\"\r\n") == std::string::npos)
        return value;
    std::string out = "\"";
    for (char c : value)
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

}  // namespace

void exportDisagreements(const DataStore& store, const std::string& path, const std::string& format)
{
    if (format != "csv" && format != "jsonl")
        fail("data review export: format \"", format, "\" is not csv or jsonl");
    const AgreementReport report = reviewAgreement(store);
    std::string out;
    if (format == "csv") {
        out = "record_id,annotator,decision,status\n";
        for (const auto& e : report.disagreements)
            for (const auto& [annotator, decision] : e.decisions)
                out += std::to_string(e.recordId) + "," + csvField(annotator) + "," + decision +
                       "," + e.status + "\n";
    } else {
        for (const auto& e : report.disagreements) {
            nlohmann::json decisions = nlohmann::json::object();
            for (const auto& [annotator, decision] : e.decisions)
                decisions[annotator] = decision;
            const StoredRecord r = store.record(e.recordId);
            out += nlohmann::json{{"record_id", e.recordId},
                                  {"status", e.status},
                                  {"decisions", decisions},
                                  {"kind", r.kind},
                                  {"fields", r.fields}}
                       .dump() +
                   "\n";
        }
    }
    writeFileAtomic(path, out);
}

}  // namespace tb
