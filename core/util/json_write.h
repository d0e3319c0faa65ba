// Compact JSON text of a value, byte for byte what nlohmann's dump() writes (object keys in the
// object's order, no spaces, non-ASCII characters as UTF-8, control characters escaped), written
// faster: strings are copied in runs between the characters that need escaping instead of being
// decoded one character at a time. The store writes every imported record's fields with it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace tb {

// Appends value's JSON text to out. A string that is not valid UTF-8 throws nlohmann's own
// type_error (316), as dump() does; out then holds a partial text.
void appendJson(std::string& out, const nlohmann::json& value);

std::string toJson(const nlohmann::json& value);

}  // namespace tb
