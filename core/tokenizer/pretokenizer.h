// Text handling ahead of byte-level BPE: UTF-8 helpers, GPT-2's byte <-> character table, Unicode
// normalization and the regex splits of the pre-tokenizers (internal to core).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tb {

// ---------------------------------------------------------------------------------------------
// UTF-8

// s with each invalid sequence replaced by U+FFFD, as Rust's String::from_utf8_lossy does.
std::string toValidUtf8(std::string_view s);

// Code point at s[i] of valid UTF-8; len receives its byte length.
char32_t decodeUtf8(std::string_view s, size_t i, size_t& len);

// Start of the code point that ends at s[end - 1].
size_t previousCharStart(std::string_view s, size_t end);

// Unicode White_Space, what Rust's \s and char::is_whitespace mean.
bool isWhiteSpace(char32_t c);

// Rust regex's \w: letters, marks, decimal and letter numbers, connector punctuation.
bool isWordChar(char32_t c);

// ---------------------------------------------------------------------------------------------
// GPT-2's byte <-> printable character table

// UTF-8 of the character standing for byte b.
const std::string& byteLevelChar(unsigned char b);

// Each byte replaced by its character.
std::string byteLevelEncode(std::string_view bytes);

// The ByteLevel decoder: appends to bytes the bytes of a token whose characters all come from the
// table, or else the token's own UTF-8 (an added token such as "你好").
void byteLevelDecode(const std::string& token, std::string& bytes);

// ---------------------------------------------------------------------------------------------
// Normalization (utf8proc)

enum class NormalForm { NFC, NFD, NFKC, NFKD };

std::string normalizeUnicode(const std::string& text, NormalForm form);

// ---------------------------------------------------------------------------------------------
// Pre-tokenizer splits

// A compiled Oniguruma-style pattern (PCRE2 with UTF + UCP), or a literal string.
class Regex;

// Fails, naming `where`, when the pattern does not compile.
std::shared_ptr<const Regex> compileRegex(const std::string& pattern, bool literal,
                                          const std::string& where);

// The regex of the ByteLevel pre-tokenizer (use_regex).
extern const char* const kGpt2Pattern;

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// One pre-tokenizer step that splits pieces (Split, Digits, and the regex of ByteLevel).
struct SplitStep {
    std::shared_ptr<const Regex> regex;
    SplitBehavior behavior = SplitBehavior::Isolated;
    bool invert = false;
    bool addPrefixSpace = false;  // ByteLevel's add_prefix_space
};

// The pieces of text after one split, HF's NormalizedString::split with empty pieces dropped.
void splitPiece(const SplitStep& step, std::string_view piece, std::vector<std::string>& out);

}  // namespace tb
