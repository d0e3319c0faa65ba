// How deep JSON text nests, checked before it is parsed: nlohmann's parser copes with any depth,
// but copying, printing and rendering a parsed value recurse once per level, so a hostile file of
// 100,000 nested brackets (200 KB) would overflow the stack long after the parse.
#pragma once

#include <string>
#include <string_view>

namespace tb {

// More levels than any configuration, tokenizer, record or message file has (they nest < 20).
inline constexpr int kMaxJsonDepth = 512;

// Whether arrays and objects (outside strings) nest deeper than kMaxJsonDepth.
bool jsonTooDeep(std::string_view text);
// Throws tb::Error "WHERE: JSON nested deeper than 512 levels" when arrays and objects (outside
// strings) nest deeper than kMaxJsonDepth; text that is not JSON is left to the parser to name.
void checkJsonDepth(std::string_view text, const std::string& where);

// The first key an object of the text gives twice, with the keys of the objects around it
// ("lora.rank"; "" at the top level gives "rank"), or empty when none does. JSON parsers keep one
// of the two silently (nlohmann the last): a hand-written config's earlier value would be lost
// without a word. Text that is not JSON: empty (the parser names what is wrong).
std::string repeatedJsonKey(std::string_view text);

}  // namespace tb
