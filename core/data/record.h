// Normalised dataset records: the four kinds a dataset row can be, their validation, and the views
// of a record that training (Example), token statistics, leak scans and dedup use.
#pragma once

#include "data/example.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tb {

// Record kinds and their fields (extra keys of a source row, e.g. "label", "id", are kept as they
// are):
//   "alpaca"             {instruction, input (optional), output}
//   "chat"               {messages: [{role: system|user|assistant, content}, ...]}
//   "prompt-completion"  {prompt, completion}
//   "text"               {text}
inline constexpr const char* kRecordKinds[] = {"alpaca", "chat", "prompt-completion", "text"};
bool isRecordKind(const std::string& kind);

// Why a record cannot be trained on ("missing field \"output\"", "field \"input\" is a number,
// expected a string", "messages[2].role is \"bot\"; expected system, user or assistant", "empty
// conversation"), or nullopt when it is valid. The rules are those of readExampleFile
// (train/dataset.h): required text is a non-empty string, an optional field may be absent or null,
// a conversation needs an assistant turn.
std::optional<std::string> validateRecord(const std::string& kind, const nlohmann::json& fields);

// The training example of a valid record, rendered exactly as readExampleFile renders the same row
// (alpaca: user = instruction, plus "\n\n" + input when input is not empty; empty system messages
// are dropped; text: plainText). Throws tb::Error with validateRecord's reason when the record is
// invalid.
Example recordToExample(const std::string& kind, const nlohmann::json& fields);
// The same, a record that cannot be read failing with `where` (the store and the record's id)
// first.
Example recordToExample(const std::string& kind, const nlohmann::json& fields,
                        const std::string& where);

// (field, text) for every text field of a record, for per-field token statistics and leak scans:
// alpaca "instruction", "input" (only when present and not empty), "output"; chat "system", "user",
// "assistant" (each role's turns joined by "\n", in that order, roles without turns left out);
// "prompt", "completion"; "text". Fields that are missing or not strings are left out (validate
// first).
std::vector<std::pair<std::string, std::string>> recordFieldTexts(const std::string& kind,
                                                                  const nlohmann::json& fields);

// All of a record's text joined by "\n", for dedup: the field texts above in order, except that
// chat joins its turns in conversation order (two conversations with the same turns in another
// order differ).
std::string recordText(const std::string& kind, const nlohmann::json& fields);

}  // namespace tb
