// Store-level data operations: import into the store (rejections kept, failures leave nothing),
// dedup, filters, scan, token statistics (against the trainer's own tokenization), split and
// rehearsal, chunking, each applied and undone; review agreement and its export; entity-matching
// pairs; synthetic generation.
#include "data/curate/curate.h"
#include "data/curate/entity_match.h"
#include "data/curate/review.h"
#include "data/curate/synthetic.h"
#include "data/ingest/example_file.h"
#include "data/ingest/ingest.h"
#include "data/record.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

#include <QtTest>

#include "test_util.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <set>

using nlohmann::json;
using tb::DataStore;
using tb::NewRecord;
using tb::ReviewStatus;

namespace {

using tbtest::contains;
using tbtest::errorOf;
using tbtest::tempPath;

const std::string kModel = TB_SOURCE_DIR "/datasets/models/stories260k";
const std::string kTiny = TB_SOURCE_DIR "/datasets/tiny";

void writeText(const std::string& path, const std::string& text)
{
    std::ofstream(path, std::ios::binary) << text;
}

NewRecord alpaca(const std::string& instruction, const std::string& output,
                 json extra = json::object())
{
    NewRecord r;
    r.kind = "alpaca";
    r.fields = {{"instruction", instruction}, {"input", ""}, {"output", output}};
    r.fields.update(extra);
    return r;
}

// Deterministic prose of `words` words from a small vocabulary.
std::string prose(std::mt19937& rng, int words)
{
    static const char* vocab[] = {"river",  "stone",   "quiet",  "bright", "garden", "window",
                                  "letter", "morning", "yellow", "forest", "little", "market",
                                  "winter", "silver",  "number", "travel", "cloud",  "paper",
                                  "simple", "orange",  "basket", "candle", "friend", "summer"};
    std::string out;
    for (int i = 0; i < words; ++i) {
        if (i)
            out += ' ';
        out += vocab[rng() % 24];
        if (i % 9 == 8)
            out += ".";
    }
    return out + ".";
}

}  // namespace

class TestDataOps : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void importKeepsValidRowsAndReportsBadOnes()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const std::string file = tempPath(dir, "mixed.jsonl");
        writeText(file,
                  "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n"
                  "{\"instruction\": \"No answer\"}\n"
                  "not json\n"
                  "{\"instruction\": \"Count\", \"input\": 3, \"output\": \"x\"}\n"
                  "{\"instruction\": \"Say bye\", \"output\": \"bye\", \"label\": \"greeting\"}\n");
        const tb::StoreImportReport r = tb::importIntoStore(*store, file, {}, "train", "ana");
        QCOMPARE(r.summary.imported, int64_t(2));
        QCOMPARE(r.summary.rejected.size(), size_t(3));
        QCOMPARE(r.summary.rejected[0].line, int64_t(2));
        QVERIFY2(contains(r.summary.rejected[0].reason, "output"),
                 r.summary.rejected[0].reason.c_str());
        QCOMPARE(r.summary.rejected[2].line, int64_t(4));
        const auto records = store->records();
        QCOMPARE(records.size(), size_t(2));
        QCOMPARE(records[1].sourceLine, int64_t(5));
        QCOMPARE(records[1].fields["label"], json("greeting"));
        QCOMPARE(records[1].sourcePath, file);
        const auto sources = store->sources();
        QCOMPARE(sources.size(), size_t(1));
        QCOMPARE(sources[0].format, std::string("alpaca"));
        QCOMPARE(sources[0].rejected, int64_t(3));
        QCOMPARE(sources[0].sha256.size(), size_t(64));

        // A file that fails as a whole leaves neither records nor a source behind.
        const std::string empty = tempPath(dir, "empty.jsonl");
        writeText(empty, "");
        QVERIFY(contains(errorOf([&] { tb::importIntoStore(*store, empty, {}, "train", "ana"); }),
                         "empty"));
        QCOMPARE(store->sources().size(), size_t(1));
        QCOMPARE(store->count(), int64_t(2));
        // Cancelling mid-way stores nothing either.
        const std::string tiny = kTiny + "/train.jsonl";
        QVERIFY(contains(errorOf([&] {
                             tb::importIntoStore(*store, tiny, {}, "train", "ana",
                                                 [](int64_t, int64_t) { return false; });
                         }),
                         "cancelled"));
        QCOMPARE(store->count(), int64_t(2));
    }

    void dedupAppliesAndUndoes()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        std::mt19937 rng(7);
        std::vector<NewRecord> rs;
        std::vector<std::string> bases;
        for (int i = 0; i < 40; ++i) {
            bases.push_back(prose(rng, 60));
            rs.push_back(alpaca(tbtest::numbered("Describe item ", i), bases.back()));
        }
        rs.push_back(alpaca("DESCRIBE  item 3", bases[3]));        // exact after normalisation
        rs.push_back(alpaca("Describe item 5", bases[5] + " x"));  // near: one extra word
        store->addRecords(rs, 0, "ana");
        tb::DedupReport dry = tb::dedupRecords(*store, 0.8, false, "ana");
        QCOMPARE(dry.records, int64_t(42));
        QCOMPARE(dry.exactDuplicates, int64_t(1));
        QCOMPARE(dry.nearDuplicates, int64_t(1));
        QCOMPARE(dry.clusters, int64_t(2));
        QCOMPARE(dry.removed, int64_t(0));
        QCOMPARE(store->count(), int64_t(42));

        tb::DedupReport applied = tb::dedupRecords(*store, 0.8, true, "ana");
        QCOMPARE(applied.removed, int64_t(2));
        QCOMPARE(store->count(), int64_t(40));
        // The kept record is the earlier one.
        QCOMPARE(applied.clusterIds[0].front() < applied.clusterIds[0].back(), true);
        store->undo(applied.operationId, "ana");
        QCOMPARE(store->count(), int64_t(42));

        // A cancel heard before the removal leaves every record; one that comes after the commit
        // is too late: the removal stands and is reported (with its operation for undo), not
        // called cancelled.
        double lastAsked = 0;
        const auto cancelFrom = [&lastAsked](double from) -> tb::CurateProgress {
            return [&lastAsked, from](const std::string&, double f) {
                lastAsked = f;
                return f < from;
            };
        };
        QVERIFY(
            contains(errorOf([&] { tb::dedupRecords(*store, 0.8, true, "ana", cancelFrom(0.95)); }),
                     "cancelled"));
        QCOMPARE(store->count(), int64_t(42));
        const tb::DedupReport late = tb::dedupRecords(*store, 0.8, true, "ana", cancelFrom(1.0));
        QCOMPARE(lastAsked, 1.0);
        QCOMPARE(late.removed, int64_t(2));
        QVERIFY(late.operationId > 0);
        QCOMPARE(store->count(), int64_t(40));
    }

    // Dedup holds record ids as 4-byte offsets while they fit; a store whose ids span more than
    // 2^32 gets them back exactly all the same.
    void dedupRecordIdsBeyondFourBytes()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        std::mt19937 rng(9);
        std::vector<NewRecord> rs;
        std::vector<std::string> bases;
        for (int i = 0; i < 30; ++i) {
            bases.push_back(prose(rng, 50));
            rs.push_back(alpaca(tbtest::numbered("Item ", i), bases.back()));
        }
        rs.push_back(alpaca("item 2", bases[2]));    // exact copy of record 3
        rs.push_back(alpaca("ITEM 20", bases[20]));  // exact copy of record 21
        store->addRecords(rs, 0, "ana");
        constexpr int64_t shift = int64_t(5) << 32;
        // A record's two rows (records, record_state) move together; foreign keys wait meanwhile.
        store->database().exec("PRAGMA foreign_keys = OFF");
        for (const char* table : {"records", "record_state"})
            store->database().exec(std::string("UPDATE ") + table + " SET id = id + " +
                                   std::to_string(shift) + " WHERE id > 10");
        store->database().exec("PRAGMA foreign_keys = ON");
        const tb::DedupReport r = tb::dedupRecords(*store, std::nullopt, false, "ana");
        QCOMPARE(r.exactDuplicates, int64_t(2));
        QCOMPARE(r.clusterIds,
                 (std::vector<std::vector<int64_t>>{{3, shift + 31}, {shift + 21, shift + 32}}));
    }

    void filtersByTokensEmptyAndRegex()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        store->addRecords({alpaca("short", "a"),
                           alpaca("a much longer instruction with many words in it",
                                  "and a long answer that goes on and on for a while"),
                           alpaca("contains SECRET word", "ok"), alpaca("blank answer", " ")},
                          0, "ana");
        QVERIFY(contains(errorOf([&] {
                             tb::FilterOptions o;
                             o.maxTokens = 10;
                             tb::filterRecords(*store, o, false, "ana");
                         }),
                         "data stats"));
        tb::tokenStats(*store, kModel, 64, "alpaca");
        tb::FilterOptions o;
        o.dropEmpty = true;
        QCOMPARE(tb::filterRecords(*store, o, false, "ana").matched, int64_t(1));
        o = {};
        o.regex = "(?i)secret";
        const tb::FilterReport r = tb::filterRecords(*store, o, true, "ana");
        QCOMPARE(r.matched, int64_t(1));
        QCOMPARE(store->count(), int64_t(3));
        // The long record has the most tokens: one below its count catches it alone.
        int64_t longest = 0, second = 0;
        for (const auto& rec : store->records()) {
            if (rec.tokenCount > longest) {
                second = longest;
                longest = rec.tokenCount;
            } else {
                second = std::max(second, rec.tokenCount);
            }
        }
        QVERIFY(longest > second);
        o = {};
        o.maxTokens = longest - 1;
        const tb::FilterReport longOnes = tb::filterRecords(*store, o, false, "ana");
        QCOMPARE(longOnes.byReason.at("too_long"), int64_t(1));
        o = {};
        o.regex = "([unclosed";
        QVERIFY(contains(errorOf([&] { tb::filterRecords(*store, o, false, "ana"); }), "regex"));
        store->undo(r.operationId, "ana");
        QCOMPARE(store->count(), int64_t(4));
        // A pattern PCRE2 cannot decide on a record (its match limit) stops the filter, naming the
        // record: read as "no match", --keep-matches would remove the records it does match.
        const int64_t hard =
            store->addRecords({alpaca(std::string(40, 'a') + "b", "answer")}, 0, "ana").at(0);
        o = {};
        o.regex = "(a+)+$";
        o.regexKeeps = true;
        const std::string e = errorOf([&] { tb::filterRecords(*store, o, true, "ana"); });
        QVERIFY2(contains(e, "record " + std::to_string(hard)) && contains(e, "match limit"),
                 e.c_str());
        QCOMPARE(store->count(), int64_t(5));
    }

    void scanFlagsRecordsWithMaskedMatches()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const auto ids =
            store->addRecords({alpaca("Contact me", "write to jane.doe@example.com"),
                               alpaca("Pay", "card 4111 1111 1111 1111 please"),
                               alpaca("Harmless", "version 2.3.1 released on 2024-05-01")},
                              0, "ana");
        const tb::ScanReport r = tb::scanRecords(*store, "ana");
        QCOMPARE(r.records, int64_t(3));
        QCOMPARE(r.flagged, int64_t(2));
        QCOMPARE(r.byKind.at("email"), int64_t(1));
        QCOMPARE(r.byKind.at("card_number"), int64_t(1));
        QCOMPARE(store->record(ids[1]).flags, std::vector<std::string>{"card_number"});
        QVERIFY(store->record(ids[2]).flags.empty());
        for (const auto& f : store->scanFlags()) {
            QVERIFY(!contains(f.masked, "4111 1111 1111 1111"));
            QVERIFY(!contains(f.masked, "jane.doe@"));
            QCOMPARE(f.field, std::string("output"));
        }
        tb::RecordQuery flagged;
        flagged.flaggedOnly = true;
        QCOMPARE(store->count(flagged), int64_t(2));
    }

    // The scan streams: every flag reaches the store though the report holds only the first
    // kFlagsHeld; a cancelled scan leaves the previous flags and operations exactly as they were.
    void scanStreamsFlagsAndCancelKeepsTheOldOnes()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const int64_t n = int64_t(tb::ScanReport::kFlagsHeld) + 500;
        std::vector<tb::NewRecord> rows;
        for (int64_t i = 0; i < n; ++i)
            rows.push_back(alpaca("Contact " + std::to_string(i),
                                  "mail u" + std::to_string(i) + "@example.com"));
        store->addRecords(rows, 0, "ana");
        const tb::ScanReport r = tb::scanRecords(*store, "ana");
        QCOMPARE(r.records, n);
        QCOMPARE(r.flagged, n);
        QCOMPARE(r.matches, n);
        QCOMPARE(r.flags.size(), tb::ScanReport::kFlagsHeld);
        QCOMPARE(r.flags.front().recordId, store->recordIds().front());
        const auto before = store->scanFlags();
        QCOMPARE(int64_t(before.size()), n);
        const size_t operations = store->operations().size();

        store->addRecords({alpaca("Call", "ring +44 20 7946 0958 today")}, 0, "ana");
        const auto cancel = [](const std::string&, double f) { return f < 0.5; };
        QVERIFY(contains(errorOf([&] { tb::scanRecords(*store, "ana", cancel); }), "cancelled"));
        const auto after = store->scanFlags();
        QCOMPARE(after.size(), before.size());
        for (size_t i = 0; i < after.size(); ++i) {
            QCOMPARE(after[i].recordId, before[i].recordId);
            QCOMPARE(after[i].masked, before[i].masked);
        }
        QCOMPARE(store->operations().size(), operations + 1);  // only the second import
        QCOMPARE(tb::scanRecords(*store, "ana").byKind.at("phone"), int64_t(1));
        QCOMPARE(int64_t(store->scanFlags().size()), n + 1);
    }

    // Token counts equal the trainer's tokenization of the same rendered examples, computed here
    // directly.
    void statsMatchTheTrainersTokenization()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        tb::importIntoStore(*store, kTiny + "/train.jsonl", {}, "train", "ana");
        const tb::TokenStatsReport r = tb::tokenStats(*store, kModel, 40, "alpaca", 10);
        QCOMPARE(r.records, int64_t(500));
        QCOMPARE(r.counted, int64_t(500));
        QCOMPARE(r.chatTemplate, std::string("alpaca"));

        const tb::ExampleFile file = tb::readExampleFile(kTiny + "/train.jsonl");
        const auto tokenizer = tb::loadTokenizer(kModel);
        tb::TokenizeOptions o;
        o.family = tb::ChatTemplateFamily::Alpaca;
        o.maxLength = 1 << 20;
        std::vector<int64_t> lengths;
        for (const auto& e : file.examples)
            lengths.push_back(int64_t(tb::tokenizeExample(*tokenizer, e, o).ids.size()));
        std::sort(lengths.begin(), lengths.end());
        QCOMPARE(r.tokens.min, lengths.front());
        QCOMPARE(r.tokens.max, lengths.back());
        QCOMPARE(r.tokens.median, lengths[(lengths.size() + 1) / 2 - 1]);  // nearest rank
        QCOMPARE(r.truncated, int64_t(std::count_if(lengths.begin(), lengths.end(),
                                                    [](int64_t n) { return n > 40; })));
        int64_t histogramTotal = 0;
        for (int64_t c : r.histograms.at("total").counts)
            histogramTotal += c;
        QCOMPARE(histogramTotal, int64_t(500));
        QVERIFY(r.perField.count("instruction") && r.perField.count("output"));
        QCOMPARE(r.perField.at("instruction").count, int64_t(500));

        // Counts are reused while tokenizer and template stay; an edit invalidates one record's
        // count.
        QCOMPARE(tb::tokenStats(*store, kModel, 40, "alpaca").counted, int64_t(0));
        QCOMPARE(tb::tokenStats(*store, kModel + "/../stories260k/", 40, "alpaca").counted,
                 int64_t(0));  // same files
        store->editField(1, "output", "changed", "ana");
        QCOMPARE(tb::tokenStats(*store, kModel, 40, "alpaca").counted, int64_t(1));
        QCOMPARE(tb::tokenStats(*store, kModel, 40, "plain").counted, int64_t(500));

        // With every count stored, a new max length only reads them: it runs while another
        // connection holds the write lock (before, it waited 10 s for it and failed).
        tb::sql::Database writer(store->path(), false);
        writer.exec("BEGIN IMMEDIATE");
        const tb::TokenStatsReport again = tb::tokenStats(*store, kModel, 30, "plain");
        QCOMPARE(again.counted, int64_t(0));
        QCOMPARE(again.records, int64_t(500));
        QCOMPARE(again.maxLength, int64_t(30));
        writer.exec("ROLLBACK");
    }

    // The streamed count: every live record once, in id order, over several batches (removed
    // records skipped) with its stored counts; a throw (a cancel) in a later batch leaves the store
    // as it was.
    void tokenCountsStreamInBatches()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        tb::importIntoStore(*store, kTiny + "/train.jsonl", {}, "train", "ana");
        store->applyOperation("filter", "ana", json::object(), json::object(),
                              {{3, "removed", true}});
        std::vector<int64_t> visited;
        auto countAll = [&](const std::vector<DataStore::CountedRecord>& rows) {
            std::vector<DataStore::TokenCount> out;
            for (const auto& r : rows) {
                visited.push_back(r.record.id);
                out.push_back({r.record.id, 2 * r.record.id, json{{"output", r.record.id % 5}}});
            }
            return out;
        };
        int batches = 0;
        QVERIFY(contains(errorOf([&] {
                             store->updateTokenCounts(
                                 "t1", 7, [&](const std::vector<DataStore::CountedRecord>& rows) {
                                     if (++batches == 3)
                                         tb::fail("data stats: cancelled");
                                     return countAll(rows);
                                 });
                         }),
                         "cancelled"));
        QCOMPARE(batches, 3);
        QCOMPARE(store->tokenizerId(), std::string());
        for (const auto& r : store->records())
            QCOMPARE(r.tokenCount, int64_t(-1));  // the first two batches' counts rolled back

        visited.clear();
        store->updateTokenCounts("t1", 7, countAll);
        QCOMPARE(visited.size(), size_t(499));
        QVERIFY(std::is_sorted(visited.begin(), visited.end()));
        QVERIFY(std::find(visited.begin(), visited.end(), int64_t(3)) == visited.end());
        QCOMPARE(store->tokenizerId(), std::string("t1"));
        for (const auto& r : store->records())
            QCOMPARE(r.tokenCount, 2 * r.id);
        // The stored counts come back with the records; a batch may store nothing.
        int64_t rows = 0;
        store->updateTokenCounts("t1", 64, [&](const std::vector<DataStore::CountedRecord>& batch) {
            for (const auto& r : batch) {
                ++rows;
                if (r.tokenCount != 2 * r.record.id ||
                    r.perField.value("output", -1) != r.record.id % 5)
                    tb::fail("record ", r.record.id, " came back with ", r.tokenCount, " ",
                             r.perField.dump());
            }
            return std::vector<DataStore::TokenCount>{};
        });
        QCOMPARE(rows, int64_t(499));
        QVERIFY(contains(errorOf([&] { store->updateTokenCounts("t1", 0, countAll); }), "batches"));
    }

    void splitIsSeededStratifiedAndUndoable()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        std::vector<NewRecord> rs;
        for (int i = 0; i < 100; ++i)
            rs.push_back(
                alpaca(tbtest::numbered("q", i), "a", {{"label", i < 80 ? "common" : "rare"}}));
        NewRecord general = alpaca("g", "general text");
        general.split = "general";
        rs.push_back(general);
        store->addRecords(rs, 0, "ana");
        const tb::SplitReport r = tb::splitRecords(*store, 0.1, 42, "label", "ana");
        QCOMPARE(r.train + r.validation, int64_t(100));  // the general record stays out
        QCOMPARE(r.byLabel.at("common").second, int64_t(8));
        QCOMPARE(r.byLabel.at("rare").second, int64_t(2));
        tb::RecordQuery val;
        val.split = "validation";
        const auto first = store->recordIds(val);
        store->undo(r.operationId, "ana");
        QCOMPARE(store->count(val), int64_t(0));
        tb::splitRecords(*store, 0.1, 42, "label", "ana");
        QCOMPARE(store->recordIds(val), first);  // same seed, same split
        // Unlabelled split of the same records.
        const auto before = store->recordIds(val);
        const tb::SplitReport plain = tb::splitRecords(*store, 0.25, 1, "", "ana");
        QCOMPARE(plain.validation, int64_t(25));
        // Its history (old values taken from the same transaction's read) holds exactly the
        // records that changed side, each with the side it had; the summary the counts.
        const std::set<int64_t> wasVal(before.begin(), before.end());
        const auto nowIds = store->recordIds(val);
        const std::set<int64_t> isVal(nowIds.begin(), nowIds.end());
        int64_t moved = 0;
        for (const tb::HistoryEntry& h : store->history()) {
            if (h.operationId != plain.operationId)
                continue;
            ++moved;
            QCOMPARE(h.field, std::string("split"));
            QCOMPARE(h.oldValue, json(wasVal.count(h.recordId) ? "validation" : "train"));
            QCOMPARE(h.newValue, json(isVal.count(h.recordId) ? "validation" : "train"));
            QVERIFY(wasVal.count(h.recordId) != isVal.count(h.recordId));
        }
        int64_t expectedMoved = 0;
        for (int64_t id = 1; id <= 100; ++id)
            expectedMoved += wasVal.count(id) != isVal.count(id);
        QCOMPARE(moved, expectedMoved);
        QVERIFY(moved > 0);
        for (const tb::OperationInfo& o : store->operations())
            if (o.id == plain.operationId)
                QCOMPARE(o.summary, (json{{"train", 75}, {"validation", 25}}));
        store->undo(plain.operationId, "ana");
        QCOMPARE(store->recordIds(val), before);
        tb::splitRecords(*store, 0.25, 1, "", "ana");

        const tb::RehearsalReport mix = tb::mixRehearsal(*store, 0.5, 3, "ana");
        QCOMPARE(mix.added, int64_t(1));  // only one general record exists
        tb::RecordQuery generalQ;
        generalQ.split = "general";
        QCOMPARE(store->count(generalQ), int64_t(0));
    }

    void chunkingLongTextRecordsIsReversible()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        std::mt19937 rng(3);
        NewRecord longText;
        longText.kind = "text";
        longText.fields = {{"text", prose(rng, 400) + "\n\n" + prose(rng, 400)}};
        NewRecord shortText;
        shortText.kind = "text";
        shortText.fields = {{"text", "A short one."}};
        const auto ids = store->addRecords({longText, shortText}, 0, "ana");
        const auto tokenizer = tb::loadTokenizer(kModel);
        tb::ChunkOptions o;
        o.maxTokens = 64;
        o.overlapTokens = 8;
        const tb::ChunkReport dry = tb::chunkStoreRecords(*store, *tokenizer, o, false, "ana");
        QCOMPARE(dry.records, int64_t(1));
        QVERIFY(dry.chunks > 4);
        QCOMPARE(store->count(), int64_t(2));
        // A cancel heard before the write leaves the store as it was.
        const auto cancelAt = [](double from) {
            return
                [from](const std::string& phase, double f) { return phase != "chunk" || f < from; };
        };
        QVERIFY(contains(errorOf([&] {
                             tb::chunkStoreRecords(*store, *tokenizer, o, true, "ana",
                                                   cancelAt(0.95));
                         }),
                         "data chunk: cancelled"));
        QCOMPARE(store->count(), int64_t(2));
        const tb::ChunkReport r =
            tb::chunkStoreRecords(*store, *tokenizer, o, true, "ana", cancelAt(2.0));
        QCOMPARE(store->count(), int64_t(1 + r.chunks));
        QCOMPARE(r.chunks, dry.chunks);  // the preview counts what applying writes
        int index = 0;
        for (const auto& rec : store->records()) {
            if (rec.id == ids[1])
                continue;
            QCOMPARE(rec.chunkIndex, index++);
            QCOMPARE(rec.fields["chunk_of"], json(ids[0]));
            QVERIFY(
                int64_t(tokenizer->encode(rec.fields["text"].get<std::string>(), false).size()) <=
                64);
            QVERIFY(contains(longText.fields["text"].get<std::string>(),
                             rec.fields["text"].get<std::string>()));
        }
        store->undo(r.operationId, "ana");
        QCOMPARE(store->recordIds(), ids);
    }

    // Cohen's kappa through the store on a hand-computed case: two annotators, 10 records,
    // both accept 4, both reject 3, ana accepts / ben rejects 2, ana rejects / ben accepts 1.
    // po = 7/10 = 0.7; ana accepts 6/10, ben accepts 5/10: pe = 0.6*0.5 + 0.4*0.5 = 0.5; kappa =
    // 0.2/0.5 = 0.4.
    void agreementAndDisagreementExport()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        std::vector<NewRecord> rs;
        for (int i = 0; i < 10; ++i)
            rs.push_back(alpaca(tbtest::numbered("q", i), "a, \"quoted\""));
        const auto ids = store->addRecords(rs, 0, "x");
        const char* ana[] = {"accept", "accept", "accept", "accept", "reject",
                             "reject", "reject", "accept", "accept", "reject"};
        const char* ben[] = {"accept", "accept", "accept", "accept", "reject",
                             "reject", "reject", "reject", "reject", "accept"};
        for (int i = 0; i < 10; ++i) {
            store->review(ids[size_t(i)], "ana", ana[i]);
            store->review(ids[size_t(i)], "ben", ben[i]);
        }
        const tb::AgreementReport r = tb::reviewAgreement(*store);
        QCOMPARE(r.pairs.size(), size_t(1));
        QCOMPARE(r.pairs[0].items, int64_t(10));
        QCOMPARE(r.pairs[0].agreed, int64_t(7));
        QVERIFY(std::abs(r.pairs[0].percent - 70.0) < 1e-9);
        QVERIFY(std::abs(r.pairs[0].kappa - 0.4) < 1e-9);
        QCOMPARE(r.disagreements.size(), size_t(3));
        QCOMPARE(r.adjudicationQueue, int64_t(3));

        const std::string csv = tempPath(dir, "log.csv");
        tb::exportDisagreements(*store, csv, "csv");
        QFile f(QString::fromStdString(csv));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = f.readAll().split('\n');
        QCOMPARE(lines[0], QByteArray("record_id,annotator,decision,status"));
        QCOMPARE(lines.size(),
                 qsizetype(1 + 6 + 1));  // header, 3 records x 2 decisions, trailing newline
        QCOMPARE(lines[1], QByteArray::number(qint64(ids[7])) + ",ana,accept,needs-adjudication");

        const std::string jsonl = tempPath(dir, "log.jsonl");
        tb::exportDisagreements(*store, jsonl, "jsonl");
        std::ifstream in(jsonl);
        std::string line;
        std::getline(in, line);
        const json first = json::parse(line);
        QCOMPARE(first["decisions"]["ana"], json("accept"));
        QCOMPARE(first["decisions"]["ben"], json("reject"));
        QCOMPARE(first["fields"]["output"], json("a, \"quoted\""));
        QVERIFY(contains(errorOf([&] { tb::exportDisagreements(*store, jsonl, "xml"); }),
                         "csv or jsonl"));
    }

    void entityPairsWithHardNegatives()
    {
        // Six entities, two spellings each; entity pairs 0/1 and 2/3 differ only in the city.
        const std::vector<std::pair<std::string, std::string>> spellings[] = {
            {{"Acme Corp", "Berlin"}, {"ACME Corporation", "Berlin"}},
            {{"Acme Corp", "Bern"}, {"Acme Corporation", "Bern"}},
            {{"Nordlicht Bakery", "Hamburg"}, {"Nordlicht Bakery GmbH", "Hamburg"}},
            {{"Nordlicht Bakery", "Bremen"}, {"Nordlicht Bakery Ltd", "Bremen"}},
            {{"Blue River Books", "Dublin"}, {"Blue River Bookshop", "Dublin"}},
            {{"Quarry Street Dental", "Leeds"}, {"Quarry St Dental", "Leeds"}}};
        std::vector<tb::EntityRecord> records;
        for (int e = 0; e < 6; ++e)
            for (const auto& [name, city] : spellings[e])
                records.push_back({tbtest::numbered("E", e), json{{"name", name}, {"city", city}}});
        tb::EntityPairOptions o;
        const auto pairs = tb::entityPairs(records, o);
        int positives = 0, negatives = 0;
        double hardSim = 0;
        int hard = 0;
        for (const auto& p : pairs) {
            QCOMPARE(p.same, records[p.a].entityId == records[p.b].entityId);
            QVERIFY(std::abs(p.similarity - tb::entitySimilarity(records[p.a], records[p.b])) <
                    1e-12);
            positives += p.same;
            negatives += !p.same;
            if (p.hardNegative) {
                ++hard;
                hardSim += p.similarity;
            }
        }
        QCOMPARE(positives, 6);
        QCOMPARE(negatives, 6);
        QVERIFY(hard >= 4);
        // The Acme Berlin positive's hard negative is an Acme in Bern, not a bakery.
        const auto acme = std::find_if(pairs.begin(), pairs.end(), [&](const tb::EntityPair& p) {
            return p.hardNegative && records[p.a].entityId == "E0";
        });
        QVERIFY(acme != pairs.end());
        QCOMPARE(records[acme->b].entityId, std::string("E1"));
        // Mean hard-negative similarity beats the mean over all other-entity pairs.
        double all = 0;
        int n = 0;
        for (size_t i = 0; i < records.size(); ++i)
            for (size_t j = i + 1; j < records.size(); ++j)
                if (records[i].entityId != records[j].entityId) {
                    all += tb::entitySimilarity(records[i], records[j]);
                    ++n;
                }
        QVERIFY(hardSim / hard > all / n);

        const NewRecord r = tb::entityPairRecord(records, *acme, o.question);
        QCOMPARE(r.kind, std::string("prompt-completion"));
        QCOMPARE(r.fields["completion"], json("No"));
        QCOMPARE(r.fields["label"], json("non-match"));
        const std::string prompt = r.fields["prompt"].get<std::string>();
        QVERIFY(contains(prompt, "Record A: city: Berlin; name: Acme Corp"));
        QVERIFY(contains(prompt, "Bern"));
        QVERIFY(contains(prompt, "Do these refer to the same entity? Answer Yes or No."));
        QVERIFY(!tb::validateRecord(r.kind, r.fields));
    }

    // Greedy synthetic outputs equal the model's own greedy continuation of the same rendered
    // prompt.
    void syntheticExamplesArePendingAndTraceable()
    {
        QTemporaryDir dir;
        auto store = DataStore::open(tempPath(dir, "s.tbstore"));
        const auto seeds =
            store->addRecords({alpaca("Tell me about Tom and the dog.", "seed answer"),
                               alpaca("Where did Lily play?", "seed answer")},
                              0, "ana");
        const auto model = tb::Model::load(kModel);
        const auto tokenizer = tb::loadTokenizer(kModel);
        tb::SynthOptions o;
        o.perSeed = 2;
        o.chatTemplate = "alpaca";
        o.generate.greedy = true;
        o.generate.maxNewTokens = 12;
        const tb::SynthReport r = tb::generateSynthetic(*store, *model, *tokenizer, seeds, o);
        QCOMPARE(r.seeds, int64_t(2));
        QCOMPARE(r.generated, int64_t(4));
        const std::string prompt = tb::renderChatText(
            tb::ChatTemplateFamily::Alpaca, {{"user", "Tell me about Tom and the dog."}}, true);
        const tb::GenerateResult expected =
            model->generate(tokenizer->encode(prompt, true), o.generate, tokenizer.get());
        for (int64_t id : r.ids) {
            const tb::StoredRecord rec = store->record(id);
            QVERIFY(rec.synthetic);
            QCOMPARE(rec.status, ReviewStatus::Pending);
            QCOMPARE(rec.kind, std::string("alpaca"));
            QVERIFY(rec.fields["seed_id"] == json(seeds[0]) ||
                    rec.fields["seed_id"] == json(seeds[1]));
            QVERIFY(rec.fields["output"] != json("seed answer"));
        }
        const std::string got = store->record(r.ids[0]).fields["output"].get<std::string>();
        QVERIFY2(!got.empty() && contains(expected.text, got),
                 (got + " | " + expected.text).c_str());

        // A template makes prompt-completion records; an unknown placeholder is named.
        o.promptTemplate = "Write another question like: {instruction}\n";
        o.perSeed = 1;
        const tb::SynthReport t = tb::generateSynthetic(*store, *model, *tokenizer, {seeds[0]}, o);
        const tb::StoredRecord rec = store->record(t.ids[0]);
        QCOMPARE(rec.kind, std::string("prompt-completion"));
        QCOMPARE(rec.fields["prompt"],
                 json("Write another question like: Tell me about Tom and the dog.\n"));
        o.promptTemplate = "{question}";
        const std::string e =
            errorOf([&] { tb::generateSynthetic(*store, *model, *tokenizer, {seeds[0]}, o); });
        QVERIFY2(contains(e, "{question}") && contains(e, "instruction"), e.c_str());
        QCOMPARE(store->count(), int64_t(2 + 4 + 1));
    }
};

QTEST_MAIN(TestDataOps)
#include "test_data_ops.moc"
