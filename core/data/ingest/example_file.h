// A dataset file as training examples: read through the importer, each valid row rendered as an
// Example, each bad row reported with its location and reason.
#pragma once

#include "data/example.h"

#include <string>
#include <vector>

namespace tb {

struct RejectedRow {
    std::string location;  // "file.jsonl:12"
    std::string reason;
};

struct ExampleFile {
    std::vector<Example> examples;
    std::vector<RejectedRow> rejected;           // bad rows are reported and skipped, never fatal
    ExampleFormat format = ExampleFormat::Auto;  // detected
};

// Reads a dataset file through the importer (data/import.h: JSONL, a .json array, CSV/TSV; formats,
// detection and limits in docs/data.md) and renders each valid row as an Example. Auto detects the
// format from the first row with known keys. Bad rows go to `rejected` with file:line and the
// reason; whole-file problems (unreadable, empty, a JSON array in a .jsonl file, no valid row at
// all) throw tb::Error naming the file.
ExampleFile readExampleFile(const std::string& path, ExampleFormat format = ExampleFormat::Auto);

}  // namespace tb
