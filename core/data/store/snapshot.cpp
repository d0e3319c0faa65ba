// Snapshots: select, freeze (lines stored in the store itself), hash, list, read back and export.
#include "data/store/snapshot.h"

#include "data/store/pairs_store.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/sha256.h"

#include <filesystem>
#include <map>

namespace tb {

using nlohmann::json;

namespace {

SnapshotInfo readInfo(const sql::Statement& st)
{
    SnapshotInfo s;
    s.id = st.text(0);
    s.version = int(st.int64(1));
    s.split = st.text(2);
    s.sha256 = st.text(3);
    s.records = st.int64(4);
    s.manifest = json::parse(st.text(5));
    s.createdAt = st.text(6);
    return s;
}

const char* const kInfoColumns = "id, version, split, sha256, records, manifest, created_at";

}  // namespace

SnapshotInfo createSnapshot(DataStore& store, const SnapshotOptions& options)
{
    if (options.split != "train" && options.split != "validation" && options.split != "general")
        fail(store.path(), ": snapshot split \"", options.split,
             "\" is not train, validation or general");
    auto& db = store.database();
    sql::Transaction tx(db);

    RecordQuery q;
    q.split = options.split;
    if (options.acceptedOnly)
        q.status = ReviewStatus::Accepted;
    if (!options.includeSynthetic)
        q.synthetic = false;
    std::vector<SnapshotRecord> picked;
    std::map<std::string, int64_t> byKind, byStatus;
    int64_t synthetic = 0, uncounted = 0;
    store.forEach(q, [&](const StoredRecord& r) {
        if (r.status == ReviewStatus::Rejected || r.status == ReviewStatus::NeedsAdjudication)
            return true;
        if (options.excludeFlagged && !r.flags.empty())
            return true;
        if (options.minTokens || options.maxTokens) {
            if (r.tokenCount < 0) {
                ++uncounted;
                return true;
            }
            if ((options.minTokens && r.tokenCount < *options.minTokens) ||
                (options.maxTokens && r.tokenCount > *options.maxTokens))
                return true;
        }
        picked.push_back(SnapshotRecord{r.id, r.kind, r.fields});
        ++byKind[r.kind];
        ++byStatus[reviewStatusName(r.status)];
        synthetic += r.synthetic ? 1 : 0;
        return true;
    });
    if (uncounted > 0)
        fail(store.path(), ": ", uncounted,
             " records have no token count for the length filter; run `tunebench data "
             "stats --model DIR` first");
    // Preference pairs of the split that training reads (data/store/pairs_store.h).
    const std::vector<std::string> pairLines =
        trainingPairLines(store, options.split, options.excludeFlagged);
    if (picked.empty() && pairLines.empty())
        fail(store.path(), ": no ", options.acceptedOnly ? "accepted " : "", "records in split \"",
             options.split, "\" pass the snapshot's filters",
             options.acceptedOnly ? " (review records first, or include pending ones)" : "");

    int version = 1;
    {
        sql::Statement st(db, "SELECT coalesce(max(version), 0) FROM snapshots WHERE split = ?");
        st.bind(1, options.split);
        st.step();
        version = int(st.int64(0)) + 1;
    }
    const std::string id = options.split + "-v" + std::to_string(version);
    std::string content;
    std::vector<std::string> lines;
    lines.reserve(picked.size());
    for (const SnapshotRecord& r : picked) {
        json line = r.fields;
        line["record_id"] = r.recordId;
        lines.push_back(line.dump());
        content += lines.back();
        content += '\n';
    }
    SnapshotInfo info;
    info.id = id;
    info.version = version;
    info.split = options.split;
    info.sha256 = sha256Hex(content);
    info.records = int64_t(picked.size());
    info.createdAt = DataStore::now();
    json filters = {{"status", options.acceptedOnly ? "accepted" : "accepted+pending"},
                    {"include_synthetic", options.includeSynthetic},
                    {"exclude_flagged", options.excludeFlagged}};
    if (options.minTokens)
        filters["min_tokens"] = *options.minTokens;
    if (options.maxTokens)
        filters["max_tokens"] = *options.maxTokens;
    info.manifest = {
        {"id", id},
        {"version", version},
        {"split", options.split},
        {"sha256", info.sha256},
        {"records", info.records},
        {"created_at", info.createdAt},
        {"created_by", options.who},
        {"store", store.path()},
        {"tokenizer", store.tokenizerId()},
        {"counts", {{"by_kind", byKind}, {"by_status", byStatus}, {"synthetic", synthetic}}},
        {"filters", filters},
        {"template", options.templateInfo}};
    if (!pairLines.empty()) {
        std::string pairContent;
        for (const std::string& line : pairLines)
            pairContent += line + '\n';
        info.manifest["pairs"] = {{"count", int64_t(pairLines.size())},
                                  {"sha256", sha256Hex(pairContent)}};
    }
    sql::Statement st(
        db, "INSERT INTO snapshots (id, version, split, sha256, records, manifest, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)");
    st.bind(1, id)
        .bind(2, int64_t(version))
        .bind(3, options.split)
        .bind(4, info.sha256)
        .bind(5, info.records)
        .bind(6, info.manifest.dump())
        .bind(7, info.createdAt);
    st.run();
    sql::Statement insert(
        db, "INSERT INTO snapshot_records (snapshot_id, position, record_id, kind, line) "
            "VALUES (?, ?, ?, ?, ?)");
    for (size_t i = 0; i < picked.size(); ++i) {
        insert.bind(1, id)
            .bind(2, int64_t(i))
            .bind(3, picked[i].recordId)
            .bind(4, picked[i].kind)
            .bind(5, lines[i]);
        insert.run();
    }
    freezeSnapshotPairs(db, id, pairLines);
    sql::Statement op(
        db,
        "INSERT INTO operations (kind, who, at, params, summary) VALUES ('snapshot', ?, ?, ?, ?)");
    op.bind(1, options.who)
        .bind(2, info.createdAt)
        .bind(3, filters.dump())
        .bind(4, json{{"id", id},
                      {"sha256", info.sha256},
                      {"records", info.records},
                      {"pairs", int64_t(pairLines.size())}}
                     .dump());
    op.run();
    tx.commit();
    return info;
}

std::vector<SnapshotInfo> listSnapshots(const DataStore& store)
{
    sql::Statement st(store.database(), std::string("SELECT ") + kInfoColumns +
                                            " FROM snapshots ORDER BY created_at, id");
    std::vector<SnapshotInfo> out;
    while (st.step())
        out.push_back(readInfo(st));
    return out;
}

SnapshotInfo findSnapshot(const DataStore& store, const std::string& id)
{
    sql::Statement st(store.database(),
                      std::string("SELECT ") + kInfoColumns + " FROM snapshots WHERE id = ?");
    st.bind(1, id);
    if (st.step())
        return readInfo(st);
    std::string known;
    for (const auto& s : listSnapshots(store))
        known += (known.empty() ? "" : ", ") + s.id;
    fail(store.path(), ": no snapshot \"", id, "\" (",
         known.empty() ? std::string("the store has none") : "known: " + known, ")");
}

namespace {

// The frozen JSONL of a snapshot, its hash checked; *info (when given) gets the snapshot's entry.
std::string contentOf(const DataStore& store, const std::string& id,
                      std::vector<SnapshotRecord>* records, SnapshotInfo* infoOut = nullptr)
{
    const SnapshotInfo info = findSnapshot(store, id);
    if (infoOut)
        *infoOut = info;
    sql::Statement st(store.database(), "SELECT record_id, kind, line FROM snapshot_records WHERE "
                                        "snapshot_id = ? ORDER BY position");
    st.bind(1, id);
    std::string content;
    while (st.step()) {
        const std::string line = st.text(2);
        content += line;
        content += '\n';
        if (records) {
            json fields = json::parse(line);
            fields.erase("record_id");
            records->push_back(SnapshotRecord{st.int64(0), st.text(1), std::move(fields)});
        }
    }
    const std::string hash = sha256Hex(content);
    if (hash != info.sha256)
        fail(store.path(), ": snapshot ", id, " does not match its SHA-256 (",
             info.sha256.substr(0, 12), "... recorded, ", hash.substr(0, 12),
             "... found): the store was modified outside Tunebench");
    return content;
}

}  // namespace

std::vector<SnapshotRecord> snapshotRecords(const DataStore& store, const std::string& id,
                                            SnapshotInfo* info)
{
    std::vector<SnapshotRecord> records;
    contentOf(store, id, &records, info);
    return records;
}

std::string snapshotJsonl(const DataStore& store, const std::string& id)
{
    return contentOf(store, id, nullptr);
}

std::string exportSnapshot(const DataStore& store, const std::string& id, const std::string& dir)
{
    SnapshotInfo info;
    const std::string content = contentOf(store, id, nullptr, &info);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        fail(dir, ": cannot create the export folder: ", ec.message());
    const std::string path = joinPath(dir, id + ".jsonl");
    writeFileAtomic(path, content);
    writeFileAtomic(joinPath(dir, id + ".manifest.json"), info.manifest.dump(2) + "\n");
    return path;
}

}  // namespace tb
