// Import into the store and chunking of stored text records.
#include "data/ingest/ingest.h"

#include "data/store/store.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/sha256.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tb {

using nlohmann::json;

namespace {

// Batches of parsed records from the parsing thread to the inserting one; the parser waits when
// kDepth batches are queued, so memory stays bounded whatever the file's size.
class BatchQueue {
public:
    static constexpr size_t kBatch = 256;
    static constexpr size_t kDepth = 16;

    // Moves the batch in (leaving it empty); false once the inserter has failed.
    bool push(std::vector<NewRecord>& batch)
    {
        std::unique_lock lock(m_mutex);
        m_changed.wait(lock, [&] { return m_batches.size() < kDepth || m_failed; });
        if (m_failed)
            return false;
        m_batches.push_back(std::move(batch));
        batch.clear();
        m_changed.notify_all();
        return true;
    }
    // The next batch; false when the queue is closed and drained, or failed.
    bool pop(std::vector<NewRecord>& batch)
    {
        std::unique_lock lock(m_mutex);
        m_changed.wait(lock, [&] { return !m_batches.empty() || m_closed || m_failed; });
        if (m_failed || m_batches.empty())
            return false;
        batch = std::move(m_batches.front());
        m_batches.pop_front();
        m_changed.notify_all();
        return true;
    }
    void close() { set(m_closed); }
    void fail() { set(m_failed); }

private:
    void set(bool& flag)
    {
        const std::lock_guard lock(m_mutex);
        flag = true;
        m_changed.notify_all();
    }
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::deque<std::vector<NewRecord>> m_batches;
    bool m_closed = false, m_failed = false;
};

// Thrown through importFile when the inserter has failed (its error is the one reported).
struct InserterStopped {};

}  // namespace

StoreImportReport importIntoStore(DataStore& store, const std::string& path,
                                  const ImportOptions& options, const std::string& split,
                                  const std::string& who,
                                  const std::function<bool(int64_t, int64_t)>& progress)
{
    if (split != "train" && split != "validation" && split != "general")
        fail("data import: --split \"", split, "\" is not train, validation or general");
    StoreImportReport report;
    // The file's SHA-256 on a second core while the rows are parsed and inserted; it goes into the
    // source row, with the counts, once both are done.
    auto stopHash = std::make_shared<std::atomic<bool>>(false);
    std::future<std::string> sha256 = std::async(
        std::launch::async, [path, stopHash] { return sha256File(path, stopHash.get()); });
    // Declared after the future, so destroyed first: an import that fails or is cancelled stops
    // the hash instead of waiting in the future's destructor for the rest of the file.
    struct StopHash {
        std::atomic<bool>& stop;
        ~StopHash() { stop = true; }
    } stopHashOnExit{*stopHash};
    // The source row, its records and its counts in one transaction: a kill at any instant leaves
    // the store without the import or with all of it.
    store.inTransaction([&] {
        report.sourceId = store.addSource(path, importFormatName(options.format), "");
        store.addRecordsStreaming(
            report.sourceId, who,
            [&](const auto& sink) {
                // Two stages on two cores: this thread reads, parses and checks the rows (and
                // reports progress, so it hears a cancel); a second one serialises and inserts
                // them, the store's connection used by one thread at a time. Either stage's error
                // stops both, and the whole import stays one transaction.
                BatchQueue queue;
                std::exception_ptr insertError;
                std::thread inserter([&] {
                    try {
                        std::vector<NewRecord> batch;
                        while (queue.pop(batch))
                            for (const NewRecord& n : batch)
                                sink(n);
                    } catch (...) {
                        insertError = std::current_exception();
                        queue.fail();
                    }
                });
                std::vector<NewRecord> batch;
                try {
                    report.summary = importFile(
                        path, options,
                        [&](ImportedRecord&& r) {
                            NewRecord& n = batch.emplace_back();
                            n.kind = std::move(r.kind);
                            n.fields = std::move(r.fields);
                            n.sourceLine = r.line;
                            n.sourceOffset = r.byteOffset;
                            n.chunkIndex = r.chunkIndex;
                            n.chunkOverlap = r.chunkOverlap;
                            n.split = split;
                            if (batch.size() == BatchQueue::kBatch && !queue.push(batch))
                                throw InserterStopped{};
                        },
                        progress);
                    if (!batch.empty())
                        queue.push(batch);
                    queue.close();
                } catch (const InserterStopped&) {
                    queue.close();
                } catch (...) {
                    queue.fail();
                    inserter.join();
                    throw;
                }
                inserter.join();
                if (insertError)
                    std::rethrow_exception(insertError);
            },
            "import", &report.operationId);
        store.setSource(report.sourceId, importFormatName(report.summary.format),
                        report.summary.imported, int64_t(report.summary.rejected.size()),
                        sha256.get());
    });
    return report;
}

ChunkReport
chunkStoreRecords(DataStore& store, const Tokenizer& tokenizer, const ChunkOptions& options,
                  bool apply, const std::string& who,
                  const std::function<bool(const std::string& phase, double fraction)>& progress)
{
    validateChunkOptions(options);
    const auto heard = [&](double fraction) {
        if (progress && !progress("chunk", fraction))
            fail("data chunk: cancelled");
    };
    heard(0);
    const double total = double(std::max<int64_t>(1, store.count(RecordQuery{})));
    int64_t seen = 0;
    ChunkReport report;
    // A preview only counts: the chunks (a copy of each long record's text) are kept only to be
    // applied, and of an original only its id.
    std::vector<int64_t> originals;
    std::vector<NewRecord> chunks;
    store.forEach(RecordQuery{}, [&](const StoredRecord& r) {
        if (++seen % 64 == 0)
            heard(0.9 * double(seen) / total);
        if (r.kind != "text" || !r.fields.contains("text") || !r.fields["text"].is_string())
            return true;
        const std::string text = r.fields["text"].get<std::string>();
        if (int64_t(tokenizer.encode(text, false).size()) <= options.maxTokens)
            return true;
        ++report.records;
        const std::vector<TextChunk> pieces = chunkText(tokenizer, text, options);
        report.chunks += int64_t(pieces.size());
        if (!apply)
            return true;
        for (const TextChunk& c : pieces) {
            NewRecord n;
            n.kind = "text";
            n.fields = r.fields;
            n.fields["text"] = c.text;
            n.fields["chunk_of"] = r.id;
            n.sourceLine = r.sourceLine;
            n.sourceOffset = r.sourceOffset + c.byteBegin;
            n.sourceId = r.sourceId;
            n.chunkOverlap = c.overlapTokens;
            n.split = r.split;
            n.synthetic = r.synthetic;
            chunks.push_back(std::move(n));
        }
        originals.push_back(r.id);
        return true;
    });
    heard(0.95);  // the last moment a cancel leaves the store as it was
    if (!apply || originals.empty())
        return report;
    // Chunk indices count within each original.
    int64_t previous = -1;
    int32_t index = 0;
    for (auto& c : chunks) {
        const int64_t of = c.fields["chunk_of"].get<int64_t>();
        index = of == previous ? index + 1 : 0;
        previous = of;
        c.chunkIndex = index;
    }
    std::vector<DataStore::Change> removals;
    for (const int64_t id : originals)
        removals.push_back({id, "removed", true});
    // One operation: the chunks come in and their originals leave together; undo reverses both.
    report.operationId = store.addRecordsWithChanges(
        chunks, who, "chunk",
        json{{"max_tokens", options.maxTokens}, {"overlap", options.overlapTokens}}, removals);
    return report;
}

}  // namespace tb
