// Snapshots: select, freeze (lines stored in the store itself), hash, list, read back and export.
#include "data/store/snapshot.h"

#include "data/record.h"
#include "data/store/pairs_store.h"
#include "data/store/snapshot_line.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/sha256.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <string_view>

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

SnapshotInfo
createSnapshot(DataStore& store, const SnapshotOptions& options,
               const std::function<bool(const std::string& phase, double fraction)>& progress)
{
    if (options.split != "train" && options.split != "validation" && options.split != "general")
        fail(store.path(), ": snapshot split \"", options.split,
             "\" is not train, validation or general");
    auto& db = store.database();
    sql::Transaction tx(db);

    int version = 1;
    {
        sql::Statement st(db, "SELECT coalesce(max(version), 0) FROM snapshots WHERE split = ?");
        st.bind(1, options.split);
        st.step();
        version = int(st.int64(0)) + 1;
    }
    const std::string id = options.split + "-v" + std::to_string(version);
    // The entry first (snapshot_records refer to it); its hash, count and manifest are filled in
    // once the records are written.
    sql::Statement entry(
        db, "INSERT INTO snapshots (id, version, split, sha256, records, manifest, created_at) "
            "VALUES (?, ?, ?, '', 0, '{}', '')");
    entry.bind(1, id).bind(2, int64_t(version)).bind(3, options.split);
    entry.run();

    // The records that pass, in id order, frozen and hashed as they are read: nothing but the
    // current line is held. Live records of the split that are accepted (or pending too) and,
    // unless asked, not synthetic: the set DataStore::forEach gives for the same query.
    std::string select =
        std::string("SELECT r.id, r.kind, r.fields, t.status, r.synthetic, t.token_count, ") +
        (options.excludeFlagged ? "EXISTS (SELECT 1 FROM scan_flags f WHERE f.record_id = r.id)"
                                : "0") +
        " FROM records r JOIN record_state t ON t.id = r.id WHERE t.removed = 0 AND t.split = ? "
        "AND t.status " +
        (options.acceptedOnly ? "= 'accepted'" : "IN ('accepted', 'pending')") +
        (options.includeSynthetic ? "" : " AND r.synthetic = 0") + " ORDER BY t.id";
    sql::Statement read(db, select);
    read.bind(1, options.split);
    sql::Statement insert(
        db, "INSERT INTO snapshot_records (snapshot_id, position, record_id, kind, line) "
            "VALUES (?, ?, ?, ?, ?)");
    // Progress by record id: rows come in id order, and ids spread over [first, last] as records
    // were imported (cheaper than counting the rows first).
    int64_t idFirst = 0, idLast = 0;
    if (progress) {
        sql::Statement range(db, "SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM "
                                 "record_state");
        range.step();
        idFirst = range.int64(0);
        idLast = range.int64(1);
    }
    const auto report = [&](const char* phase, double fraction) {
        if (progress && !progress(phase, std::clamp(fraction, 0.0, 1.0)))
            fail(store.path(), ": snapshot cancelled; nothing was stored");
    };
    report("records", 0.0);
    std::map<std::string, int64_t> byKind, byStatus;
    int64_t picked = 0, synthetic = 0, uncounted = 0, rows = 0;
    Sha256 hash;
    std::string line;
    while (read.step()) {
        if (progress && ++rows % 2048 == 0)
            report("records", idLast > idFirst
                                  ? double(read.int64(0) - idFirst) / double(idLast - idFirst)
                                  : 0.0);
        if (options.excludeFlagged && read.int64(6) != 0)
            continue;
        if (options.minTokens || options.maxTokens) {
            const int64_t tokens = read.int64(5);
            if (tokens < 0) {
                ++uncounted;
                continue;
            }
            if ((options.minTokens && tokens < *options.minTokens) ||
                (options.maxTokens && tokens > *options.maxTokens))
                continue;
        }
        if (uncounted > 0)
            continue;  // the snapshot fails below; only the count is wanted
        const int64_t recordId = read.int64(0);
        const std::string kind = read.text(1);
        // A record edited into a shape training cannot read is not frozen into a snapshot.
        if (const auto problem = validateRecord(kind, json::parse(read.text(2))))
            fail(store.path(), ": record ", recordId, " (", kind,
                 ") cannot be trained on: ", *problem,
                 "; fix it (data edit) or remove it before the snapshot");
        line = snapshotLine(read.text(2), recordId);
        insert.bind(1, id).bind(2, picked).bind(3, recordId).bind(4, kind).bind(5, line);
        insert.run();
        line += '\n';
        hash.update(line);
        ++picked;
        ++byKind[kind];
        ++byStatus[read.text(3)];
        synthetic += read.int64(4) != 0 ? 1 : 0;
    }
    if (uncounted > 0)
        fail(store.path(), ": ", uncounted,
             " records have no token count for the length filter; run `tunebench data "
             "stats --model DIR` first");
    // Preference pairs of the split that training reads (data/store/pairs_store.h).
    report("pairs", 0.0);
    const std::vector<std::string> pairLines =
        trainingPairLines(store, options.split, options.excludeFlagged);
    report("pairs", 1.0);
    if (picked == 0 && pairLines.empty())
        fail(store.path(), ": no ", options.acceptedOnly ? "accepted " : "", "records in split \"",
             options.split, "\" pass the snapshot's filters",
             options.acceptedOnly ? " (review records first, or include pending ones)" : "");

    SnapshotInfo info;
    info.id = id;
    info.version = version;
    info.split = options.split;
    info.sha256 = hash.hex();
    info.records = picked;
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
    sql::Statement st(db,
                      "UPDATE snapshots SET sha256 = ?, records = ?, manifest = ?, created_at = ? "
                      "WHERE id = ?");
    st.bind(1, info.sha256)
        .bind(2, info.records)
        .bind(3, info.manifest.dump())
        .bind(4, info.createdAt)
        .bind(5, id);
    st.run();
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

// Visits the frozen lines of a snapshot in order (without their newline), then checks the
// content's hash: a tampered store throws after the last line. *infoOut (when given) gets the
// snapshot's entry.
void forEachLine(const DataStore& store, const std::string& id,
                 const std::function<void(const sql::Statement& row, std::string_view line)>& visit,
                 SnapshotInfo* infoOut = nullptr)
{
    const SnapshotInfo info = findSnapshot(store, id);
    if (infoOut)
        *infoOut = info;
    sql::Statement st(store.database(), "SELECT record_id, kind, line FROM snapshot_records WHERE "
                                        "snapshot_id = ? ORDER BY position");
    st.bind(1, id);
    Sha256 hash;
    std::string line;
    while (st.step()) {
        line = st.text(2);
        visit(st, line);
        line += '\n';
        hash.update(line);
    }
    const std::string found = hash.hex();
    if (found != info.sha256)
        fail(store.path(), ": snapshot ", id, " does not match its SHA-256 (",
             info.sha256.substr(0, 12), "... recorded, ", found.substr(0, 12),
             "... found): the store was modified outside Tunebench");
}

}  // namespace

std::vector<SnapshotRecord> snapshotRecords(const DataStore& store, const std::string& id,
                                            SnapshotInfo* info)
{
    std::vector<SnapshotRecord> records;
    forEachLine(
        store, id,
        [&](const sql::Statement& row, std::string_view line) {
            json fields;
            try {
                fields = json::parse(line);
            } catch (const json::exception&) {
                fail(store.path(), ": snapshot ", id, ", record ", row.int64(0),
                     ": its frozen line is not JSON: the store was modified outside Tunebench");
            }
            fields.erase("record_id");
            records.push_back(SnapshotRecord{row.int64(0), row.text(1), std::move(fields)});
        },
        info);
    return records;
}

std::string snapshotJsonl(const DataStore& store, const std::string& id)
{
    std::string content;
    forEachLine(store, id, [&](const sql::Statement&, std::string_view line) {
        content += line;
        content += '\n';
    });
    return content;
}

std::string exportSnapshot(const DataStore& store, const std::string& id, const std::string& dir)
{
    findSnapshot(store, id);  // names the known ones before anything is created
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        fail(dir, ": cannot create the export folder: ", ec.message());
    const std::string path = joinPath(dir, id + ".jsonl");
    const std::string manifest = joinPath(dir, id + ".manifest.json");
    // Streamed to a temp file that replaces the export only once the hash has checked out.
    AtomicFileWriter out(path);
    SnapshotInfo info;
    forEachLine(
        store, id,
        [&](const sql::Statement&, std::string_view line) {
            out.write(line);
            out.write("\n");
        },
        &info);
    // The hash checked out: a previous export's manifest goes before the new JSONL takes its
    // place, so a kill between the two files leaves the JSONL without a manifest, never beside
    // one that describes other records (and a failed export leaves the previous one whole).
    if (fileExists(manifest)) {
        std::filesystem::remove(manifest, ec);
        if (ec)
            fail(manifest, ": cannot replace: ", ec.message());
        syncPath(dir, true);
    }
    out.commit();
    writeFileAtomic(manifest, info.manifest.dump(2) + "\n");
    return path;
}

}  // namespace tb
