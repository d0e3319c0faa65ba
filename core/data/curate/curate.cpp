// Curation operations over the store: read texts, run the pure algorithms (dedup, scan, stats,
// split), and write the outcome as one reversible operation.
#include "data/curate/curate.h"

#include "data/curate/dedup.h"
#include "data/curate/scan.h"
#include "data/curate/split.h"
#include "data/example.h"
#include "data/record.h"
#include "data/store/sqlite.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/regex.h"
#include "util/sha256.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <thread>

namespace tb {

using nlohmann::json;

namespace {

void checkProgress(const CurateProgress& progress, const std::string& phase, double fraction)
{
    if (progress && !progress(phase, fraction))
        fail("data ", phase, ": cancelled");
}

// The last report, after the work committed: too late to cancel, so the answer is not asked.
void reportDone(const CurateProgress& progress, const std::string& phase)
{
    if (progress)
        progress(phase, 1);
}

// Forwards to a tokenizer and remembers, for one record at a time, the ids of each text it encoded:
// the rendered training text and the per-field counts share texts (a response is both a segment and
// a field), so each is encoded once.
class RecordMemoTokenizer : public Tokenizer {
public:
    explicit RecordMemoTokenizer(const Tokenizer& inner) : m_inner(inner)
    {
        m_bosId = inner.bosId();
        m_eosId = inner.eosId();
    }
    void nextRecord() { m_memo.clear(); }
    std::vector<int32_t> encode(const std::string& text, bool addSpecial) const override
    {
        auto& slot = m_memo[std::make_pair(text, addSpecial)];
        if (!slot)
            slot = m_inner.encode(text, addSpecial);
        return *slot;
    }
    std::string decode(const std::vector<int32_t>& ids, bool skipSpecial) const override
    {
        return m_inner.decode(ids, skipSpecial);
    }
    int32_t vocabSize() const override { return m_inner.vocabSize(); }
    std::string idToPiece(int32_t id) const override { return m_inner.idToPiece(id); }
    std::optional<int32_t> pieceToId(const std::string& piece) const override
    {
        return m_inner.pieceToId(piece);
    }
    bool isSpecial(int32_t id) const override { return m_inner.isSpecial(id); }
    std::string kind() const override { return m_inner.kind(); }

private:
    const Tokenizer& m_inner;
    mutable std::map<std::pair<std::string, bool>, std::optional<std::vector<int32_t>>> m_memo;
};

// Record ids in increasing order (the store's forEach order), 4 bytes each as offsets from the
// first while they fit (a store of fewer than 2^32 ids: every store in practice), 8 otherwise.
class RecordIds {
public:
    void reserve(size_t n) { m_narrow.reserve(n); }
    void push(int64_t id)
    {
        if (m_narrow.empty() && m_wide.empty())
            m_first = id;
        const int64_t offset = id - m_first;
        if (m_wide.empty() && offset >= 0 && offset <= int64_t(UINT32_MAX)) {
            m_narrow.push_back(static_cast<uint32_t>(offset));
            return;
        }
        if (m_wide.empty()) {  // the first id that does not fit: widen what is held
            m_wide.reserve(m_narrow.capacity());
            for (const uint32_t o : m_narrow)
                m_wide.push_back(m_first + o);
            m_narrow = {};
        }
        m_wide.push_back(id);
    }
    int64_t operator[](size_t i) const
    {
        return m_wide.empty() ? m_first + m_narrow[i] : m_wide[i];
    }

private:
    int64_t m_first = 0;
    std::vector<uint32_t> m_narrow;
    std::vector<int64_t> m_wide;
};

}  // namespace

DedupReport dedupRecords(DataStore& store, std::optional<double> nearThreshold, bool apply,
                         const std::string& who, const CurateProgress& progress)
{
    if (nearThreshold && (*nearThreshold <= 0 || *nearThreshold > 1))
        fail("data dedup: --near ", *nearThreshold, " is outside (0, 1]");
    checkProgress(progress, "dedup", 0);
    // Streamed: one record's text at a time, and again by id for the few that an exact hash or
    // an LSH band matches (data/curate/dedup.h says what the search itself holds).
    const int64_t count = store.count();
    RecordIds ids;
    ids.reserve(size_t(count));
    DedupOptions options;
    options.nearThreshold = nearThreshold;
    const DedupResult result = findDuplicates(
        count,
        [&](const TextSink& sink) {
            store.forEachFields(RecordQuery{}, [&](const RecordFields& r) {
                ids.push(r.id);
                sink(recordText(r.kind, r.fields));
                return true;
            });
        },
        [&](int64_t i) {
            const RecordFields r = store.recordFields(ids[size_t(i)]);
            return recordText(r.kind, r.fields);
        },
        options, [&](double f) { return !progress || progress("dedup", 0.05 + 0.9 * f); });
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
    checkProgress(progress, "dedup", 0.95);  // the last moment a cancel leaves the store as it was
    if (apply && !result.duplicates.empty()) {
        std::vector<DataStore::Change> changes;
        for (const DuplicateOf& d : result.duplicates)
            changes.push_back({ids[size_t(d.index)], "removed", true});
        report.removed = int64_t(changes.size());
        report.operationId = store.applyOperation(
            "dedup", who, json{{"near", nearThreshold ? json(*nearThreshold) : json()}},
            json{{"exact_duplicates", report.exactDuplicates},
                 {"near_duplicates", report.nearDuplicates},
                 {"clusters", report.clusters},
                 {"removed", report.removed}},
            changes);
    }
    reportDone(progress, "dedup");
    return report;
}

FilterReport filterRecords(DataStore& store, const FilterOptions& options, bool apply,
                           const std::string& who)
{
    std::optional<Regex> regex;
    if (!options.regex.empty())
        regex.emplace(options.regex);
    FilterReport report;
    std::vector<DataStore::Change> changes;
    int64_t uncounted = 0;
    store.forEach(RecordQuery{}, [&](const StoredRecord& r) {
        ++report.records;
        std::string reason;
        if (options.dropEmpty && validateRecord(r.kind, r.fields))
            reason = "invalid";
        if (reason.empty() && options.dropEmpty) {
            for (const auto& [field, text] : recordFieldTexts(r.kind, r.fields)) {
                // alpaca's input is optional; every other text field must say something.
                if (field != "input" && field != "system" &&
                    text.find_first_not_of(" \t\r\n") == std::string::npos) {
                    reason = "empty";
                    break;
                }
            }
        }
        if (reason.empty() && (options.minTokens || options.maxTokens)) {
            if (r.tokenCount < 0)
                ++uncounted;
            else if (options.minTokens && r.tokenCount < *options.minTokens)
                reason = "too_short";
            else if (options.maxTokens && r.tokenCount > *options.maxTokens)
                reason = "too_long";
        }
        if (reason.empty() && regex) {
            // Undecided is never "no match": a filter would remove records that match.
            std::string why;
            const std::optional<bool> found = regex->search(recordText(r.kind, r.fields), &why);
            if (!found)
                fail("regex \"", options.regex, "\" on record ", r.id, ": ", why,
                     " (nothing changed; simplify the pattern, e.g. without nested repeats)");
            if (*found != options.regexKeeps)
                reason = "regex";
        }
        if (!reason.empty()) {
            ++report.byReason[reason];
            ++report.matched;
            changes.push_back({r.id, "removed", true});
        }
        return true;
    });
    if (uncounted > 0)
        fail(store.path(), ": ", uncounted,
             " records have no token count; run `tunebench data stats --model DIR` "
             "before filtering by length");
    if (apply && !changes.empty()) {
        json params = {{"drop_empty", options.dropEmpty},
                       {"regex", options.regex},
                       {"regex_keeps", options.regexKeeps}};
        if (options.minTokens)
            params["min_tokens"] = *options.minTokens;
        if (options.maxTokens)
            params["max_tokens"] = *options.maxTokens;
        report.operationId = store.applyOperation(
            "filter", who, params,
            json{{"removed", report.matched}, {"by_reason", report.byReason}}, changes);
    }
    return report;
}

ScanReport scanRecords(DataStore& store, const std::string& who, const CurateProgress& progress)
{
    ScanReport report;
    const int64_t total = std::max<int64_t>(1, store.count());
    store.replaceScanFlags(who, [&](const DataStore::ScanFlagSink& sink) {
        store.forEachFields(RecordQuery{}, [&](const RecordFields& r) {
            bool flagged = false;
            for (const auto& [field, text] : recordFieldTexts(r.kind, r.fields)) {
                for (const ScanMatch& m : scanText(text)) {
                    const ScanFlag flag{
                        r.id, m.kind, field, int64_t(m.offset), int64_t(m.length), m.masked};
                    sink(flag);
                    if (report.flags.size() < ScanReport::kFlagsHeld)
                        report.flags.push_back(flag);
                    ++report.byKind[m.kind];
                    ++report.matches;
                    flagged = true;
                }
            }
            report.flagged += flagged ? 1 : 0;
            if (++report.records % 1000 == 0)
                checkProgress(progress, "scan", double(report.records) / double(total));
            return true;
        });
        return json{
            {"records", report.records}, {"flagged", report.flagged}, {"by_kind", report.byKind}};
    });
    return report;
}

TokenStatsReport tokenStats(DataStore& store, const std::string& modelDir, int64_t maxLength,
                            const std::string& chatTemplate, int bins,
                            const CurateProgress& progress)
{
    if (maxLength <= 0)
        fail("data stats: --max-length ", maxLength, " must be positive");
    const auto tokenizer = loadTokenizer(modelDir);
    TokenizeOptions options;
    options.maxLength = 1 << 30;  // count everything; truncation is what the report measures
    TokenStatsReport report;
    const auto chat = chatTemplateByName(chatTemplate, modelDir, true);
    if (!chat)
        fail("data stats: chat template \"", chatTemplate,
             "\" (allowed: model, chatml, llama3, inst, alpaca, plain)");
    options.setTemplate(*chat);
    report.chatTemplate = options.templateName();
    report.maxLength = maxLength;
    // Counts depend on the tokenizer and the template: a different pair recounts everything.
    // Keyed by the tokenizer files' contents (not the path as typed), so another spelling of the
    // same folder, or a copy of the model, reuses the counts.
    std::string tokenizerFiles;
    for (const char* name : {"tokenizer.model", "tokenizer.json", "tokenizer_config.json"}) {
        const std::string file = joinPath(modelDir, name);
        if (fileExists(file))
            tokenizerFiles += std::string(name) + "=" + sha256File(file) + ";";
    }
    const std::string tokenizerId =
        sha256Hex(tokenizer->kind() + ":" + tokenizerFiles + ":" + report.chatTemplate +
                  (chat->isModel() ? ":" + chat->jinjaSource() : std::string()))
            .substr(0, 16);
    const bool reuse = store.tokenizerId() == tokenizerId;

    // Streamed: the live records a batch at a time, each batch's uncounted records tokenized on
    // parallel workers (tokenizers are thread-safe), their counts written, every count tallied;
    // one transaction, so a cancel leaves the store as it was. Memory: one batch and the tallies.
    checkProgress(progress, "stats", 0);
    const int64_t total = std::max<int64_t>(1, store.count(RecordQuery{}));
    const unsigned workers = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
    std::deque<RecordMemoTokenizer> memos;  // one per worker: a memo is not shared
    for (unsigned w = 0; w < workers; ++w)
        memos.emplace_back(*tokenizer);
    LengthTally totals;
    std::map<std::string, LengthTally> perField;
    int64_t seen = 0;
    store.updateTokenCounts(
        tokenizerId, 4096, [&](const std::vector<DataStore::CountedRecord>& rows) {
            std::vector<size_t> todo;
            for (size_t i = 0; i < rows.size(); ++i)
                if (!reuse || rows[i].tokenCount < 0)
                    todo.push_back(i);
            std::vector<DataStore::TokenCount> counts(todo.size());
            std::vector<std::string> errors(workers);
            auto work = [&](unsigned w) {
                try {
                    RecordMemoTokenizer& memo = memos[w];
                    for (size_t k = w; k < todo.size(); k += workers) {
                        const RecordFields& r = rows[todo[k]].record;
                        DataStore::TokenCount& c = counts[k];
                        memo.nextRecord();
                        c.recordId = r.id;
                        c.total =
                            int64_t(tokenizeExample(memo,
                                                    recordToExample(r.kind, r.fields,
                                                                    store.path() + ": record " +
                                                                        std::to_string(r.id)),
                                                    options)
                                        .ids.size());
                        c.perField = json::object();
                        for (const auto& [field, text] : recordFieldTexts(r.kind, r.fields))
                            c.perField[field] = int64_t(memo.encode(text, false).size());
                    }
                } catch (const std::exception& e) {
                    errors[w] = e.what();
                }
            };
            std::vector<std::thread> threads;
            for (unsigned w = 1; w < std::min<size_t>(workers, todo.size()); ++w)
                threads.emplace_back(work, w);
            work(0);
            for (auto& t : threads)
                t.join();
            for (const auto& e : errors)
                if (!e.empty())
                    fail(e.rfind("data stats", 0) == 0 ? "" : "data stats: ", e);
            for (size_t i = 0, k = 0; i < rows.size(); ++i) {
                const bool counted = k < todo.size() && todo[k] == i;
                const int64_t n = counted ? counts[k].total : rows[i].tokenCount;
                const json& fields = counted ? counts[k].perField : rows[i].perField;
                k += counted ? 1 : 0;
                totals.add(n);
                if (fields.is_object())
                    for (const auto& [field, v] : fields.items())
                        perField[field].add(v.get<int64_t>());
            }
            report.counted += int64_t(counts.size());
            seen += int64_t(rows.size());
            // Heard between batches: a cancel rolls the transaction back.
            checkProgress(progress, "stats", 0.95 * double(seen) / double(total));
            return counts;
        });
    report.records = totals.count();
    report.tokens = totals.stats();
    report.truncated = totals.countOver(maxLength);
    report.histograms["total"] = totals.histogram(bins);
    report.lengths = std::move(totals);
    for (const auto& [field, values] : perField) {
        report.perField[field] = values.stats();
        report.histograms[field] = values.histogram(bins);
    }
    reportDone(progress, "stats");
    return report;
}

SplitReport splitRecords(DataStore& store, double validationFraction, uint64_t seed,
                         const std::string& labelField, const std::string& who)
{
    if (!(validationFraction > 0 && validationFraction < 1))
        fail("data split: validation fraction ", validationFraction, " must be between 0 and 1");
    SplitReport report;
    const json params{
        {"validation_fraction", validationFraction}, {"seed", seed}, {"label_field", labelField}};
    // Read and written in one transaction, so each record's side as read is its current value
    // (Change::current: no second read per change).
    report.operationId = store.applyPrepared("split", who, params, [&](int64_t) {
        // The live train and validation records in id order (forEach's order). Without a label
        // they come from the split index alone, each side already in id order, merged here;
        // fields are read and parsed only for a label.
        std::vector<int64_t> ids;
        std::vector<bool> wasValidation;
        std::vector<std::string> labels;
        if (labelField.empty()) {
            std::vector<int64_t> bySide[2];
            for (int v = 0; v < 2; ++v) {
                sql::Statement st(
                    store.database(),
                    "SELECT id FROM record_state WHERE split = ? AND removed = 0 ORDER BY id");
                st.bind(1, v ? "validation" : "train");
                while (st.step())
                    bySide[v].push_back(st.int64(0));
            }
            ids.reserve(bySide[0].size() + bySide[1].size());
            for (size_t t = 0, v = 0; t < bySide[0].size() || v < bySide[1].size();) {
                const bool takeValidation =
                    t == bySide[0].size() || (v < bySide[1].size() && bySide[1][v] < bySide[0][t]);
                ids.push_back(takeValidation ? bySide[1][v++] : bySide[0][t++]);
                wasValidation.push_back(takeValidation);
            }
        } else {
            sql::Statement st(store.database(),
                              // != 'general' (not IN train, validation): read in id order
                              // from record_state, no sort of the fields.
                              "SELECT r.id, t.split, r.fields FROM records r JOIN record_state t "
                              "ON t.id = r.id WHERE t.removed = 0 AND t.split != 'general' ORDER "
                              "BY t.id");
            while (st.step()) {
                ids.push_back(st.int64(0));
                wasValidation.push_back(st.text(1) == "validation");
                const json fields = json::parse(st.text(2));
                const auto it = fields.find(labelField);
                labels.push_back(it == fields.end() ? std::string()
                                 : it->is_string()  ? it->get<std::string>()
                                                    : it->dump());
            }
        }
        if (ids.empty())
            fail(store.path(), ": no train or validation records to split");
        const std::vector<int> side =
            splitAssign(int64_t(ids.size()), labels, validationFraction, seed);
        DataStore::Prepared prepared;
        for (size_t i = 0; i < ids.size(); ++i) {
            const bool val = side[i] == 1;
            (val ? report.validation : report.train)++;
            if (!labelField.empty()) {
                auto& pair = report.byLabel[labels[i]];
                (val ? pair.second : pair.first)++;
            }
            // A record already on its side is no change (writeChange would skip it too).
            if (val != wasValidation[i])
                prepared.changes.push_back({ids[i], "split", val ? "validation" : "train",
                                            json(wasValidation[i] ? "validation" : "train")});
        }
        prepared.summary = json{{"train", report.train}, {"validation", report.validation}};
        return prepared;
    });
    return report;
}

RehearsalReport mixRehearsal(DataStore& store, double ratio, uint64_t seed, const std::string& who)
{
    if (!(ratio > 0 && ratio < 1))
        fail("data rehearsal: ratio ", ratio, " must be between 0 and 1");
    RecordQuery general;
    general.split = "general";
    const std::vector<int64_t> generalIds = store.recordIds(general);
    RecordQuery train;
    train.split = "train";
    RehearsalReport report;
    report.task = store.count(train);
    if (generalIds.empty())
        fail(store.path(), ": no records in the general split to mix in (import general text with "
                           "--split general)");
    const std::vector<int64_t> pick =
        rehearsalPick(int64_t(generalIds.size()), report.task, ratio, seed);
    std::vector<DataStore::Change> changes;
    for (int64_t i : pick)
        changes.push_back({generalIds[size_t(i)], "split", "train"});
    report.added = int64_t(changes.size());
    report.ratio = report.task + report.added > 0
                       ? double(report.added) / double(report.task + report.added)
                       : 0;
    report.operationId =
        store.applyOperation("rehearsal", who, json{{"ratio", ratio}, {"seed", seed}},
                             json{{"added", report.added}, {"task", report.task}}, changes);
    return report;
}

}  // namespace tb
