// A snapshot's JSONL line for one record: its stored fields plus "record_id", as nlohmann::json
// writes it (sorted keys, compact). Spliced into the stored text without parsing it when that text
// is already in that form (what the store writes), so it is byte-identical either way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tb {

// The line (no newline) for a record whose `fields` column is fieldsJson.
std::string snapshotLine(std::string_view fieldsJson, int64_t recordId);

}  // namespace tb
