// Dataset import: reads JSONL, JSON arrays, CSV/TSV and plain-text documents in bounded memory,
// detects the format, and hands each row over as a normalised record (see data/record.h) or a
// rejection with its line and reason. Pure and streaming: the dataset store decides what to keep.
#pragma once

#include "data/ingest/chunker.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tb {

class Tokenizer;

enum class ImportFormat { Auto, Alpaca, Chat, ShareGpt, PromptCompletion, Text, Csv, Documents };

// "auto", "alpaca", "chat", "sharegpt", "prompt-completion", "text", "csv", "documents"
const char* importFormatName(ImportFormat format);
std::optional<ImportFormat> parseImportFormat(const std::string& name);

// Bytes per JSONL line, CSV row or JSON array element; bytes per .txt/.md document.
inline constexpr int64_t kImportRowLimit = int64_t(16) << 20;
inline constexpr int64_t kImportDocumentLimit = int64_t(256) << 20;

struct ImportedRecord {
    std::string kind;          // "alpaca", "chat", "prompt-completion" or "text" (record.h)
    nlohmann::json fields;     // the record's fields plus the source row's extra keys, unchanged
    int64_t line = 0;          // 1-based line where the row starts; 0 for document chunks
    int64_t byteOffset = 0;    // bytes into the file where the row (or chunk) starts
    int32_t chunkIndex = -1;   // documents: 0-based chunk number; -1 otherwise
    int32_t chunkOverlap = 0;  // documents: tokens shared with the previous chunk
};

struct ImportRejection {
    int64_t line = 0;    // 1-based
    std::string reason;  // "missing field \"output\"", "not valid JSON: ...", ...
};

struct ImportOptions {
    ImportFormat format = ImportFormat::Auto;
    // CSV: field -> column header ({"completion": "answer"}); empty: headers named like fields
    std::map<std::string, std::string> columns;
    char delimiter = 0;                    // CSV: 0 means tab for .tsv, else comma
    const Tokenizer* tokenizer = nullptr;  // documents: counts chunk tokens (required)
    ChunkOptions chunk;                    // documents
};

struct ImportSummary {
    ImportFormat format = ImportFormat::Auto;  // the format used (detected when Auto)
    int64_t imported = 0;                      // records handed to onRecord
    std::vector<ImportRejection> rejected;     // in file order
};

// Imports `path`, calling onRecord for each record in file order. Bad rows are rejected (reported
// in the summary, never fatal); whole-file problems throw tb::Error naming the path: unreadable,
// empty, a JSON array in a .jsonl file, an unknown CSV column in `columns`, a document that is not
// UTF-8 or too big, and a file from which no record could be imported (the message is the first
// rejection: "<path>:LINE: REASON"). progress(bytesDone, bytesTotal) is called after each 1 MiB
// block; returning false throws "<path>: import cancelled". Formats, detection rules, messages and
// limits: docs/data.md, "Import".
ImportSummary
importFile(const std::string& path, const ImportOptions& options,
           const std::function<void(ImportedRecord&&)>& onRecord,
           const std::function<bool(int64_t bytesDone, int64_t bytesTotal)>& progress = {});

}  // namespace tb
