// Snapshots: the accepted records of a split frozen into a versioned, content-hashed set that
// training runs read and record (id and SHA-256 in run.json), exportable as JSONL with a manifest.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tb {

class DataStore;

struct SnapshotOptions {
    std::string split = "train";  // train | validation | general
    bool acceptedOnly = true;     // false: pending records too (never rejected or removed ones)
    bool includeSynthetic = true;
    bool excludeFlagged = false;       // leave out records the leak/PII scan flagged
    std::optional<int64_t> minTokens;  // filters on the stored token counts (data stats)
    std::optional<int64_t> maxTokens;
    nlohmann::json templateInfo = nlohmann::json::object();  // chat template, loss mask, max length
    std::string who = "tunebench";
};

struct SnapshotInfo {
    std::string id;  // "<split>-v<N>"
    int version = 0;
    std::string split;
    std::string sha256;  // of the JSONL content (the exported file's bytes)
    int64_t records = 0;
    nlohmann::json manifest;  // counts, filters, template, store, tokenizer
    std::string createdAt;
};

struct SnapshotRecord {
    int64_t recordId = 0;
    std::string kind;
    nlohmann::json fields;
};

// Freezes the records that pass the options, in id order, as one transaction. Throws when none
// pass. progress(phase, fraction in [0, 1]) hears "records" (by record id, every 2,048 records
// read) and "pairs"; returning false cancels: tb::Error "...: snapshot cancelled", nothing stored
// (the version number stays free).
SnapshotInfo
createSnapshot(DataStore& store, const SnapshotOptions& options,
               const std::function<bool(const std::string& phase, double fraction)>& progress = {});
std::vector<SnapshotInfo> listSnapshots(const DataStore& store);
SnapshotInfo findSnapshot(const DataStore& store,
                          const std::string& id);  // throws naming the known ids
// The frozen records; verifies the content hash against the manifest (a tampered store is an
// error). *info, when given, gets the snapshot's entry.
std::vector<SnapshotRecord> snapshotRecords(const DataStore& store, const std::string& id,
                                            SnapshotInfo* info = nullptr);
// The JSONL bytes: one object per line, the record's fields plus "record_id".
std::string snapshotJsonl(const DataStore& store, const std::string& id);
// Writes DIR/<id>.jsonl and DIR/<id>.manifest.json atomically; returns the JSONL path.
std::string exportSnapshot(const DataStore& store, const std::string& id, const std::string& dir);

}  // namespace tb
