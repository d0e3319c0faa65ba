// Getting data into the store: importing a file (one transaction, rejected rows reported with their
// line) and chunking long text records already in the store by the model's tokens.
#pragma once

#include "data/ingest/import.h"

#include <cstdint>
#include <functional>
#include <string>

namespace tb {

class DataStore;

struct StoreImportReport {
    ImportSummary summary;
    int64_t sourceId = 0;
    int64_t operationId = 0;
};

// Imports `path` into the store: a source entry (path, format, SHA-256) and its records in one
// transaction, so a failed or cancelled import leaves the store as it was. split: train |
// validation | general.
StoreImportReport importIntoStore(DataStore& store, const std::string& path,
                                  const ImportOptions& options, const std::string& split,
                                  const std::string& who,
                                  const std::function<bool(int64_t, int64_t)>& progress = {});

struct ChunkReport {
    int64_t records = 0;      // text records over the limit that were chunked
    int64_t chunks = 0;       // new chunk records
    int64_t operationId = 0;  // the operation that removed the originals (undo restores them)
};
// Replaces each live "text" record longer than options.maxTokens by its chunks (new records that
// keep the original's source, line and offset, with chunk index and overlap). With apply=false only
// counts. `progress` (phase "chunk", fraction) hears a cancel (false) as it tokenizes, and once
// more before anything is written: then tb::Error "data chunk: cancelled" and the store as it was.
ChunkReport chunkStoreRecords(
    DataStore& store, const Tokenizer& tokenizer, const ChunkOptions& options, bool apply,
    const std::string& who,
    const std::function<bool(const std::string& phase, double fraction)>& progress = {});

}  // namespace tb
