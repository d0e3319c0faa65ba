// Unicode text operations with the semantics of Python 3's str methods and `re`, which the metrics'
// reference implementations (SQuAD's script, rouge-score) are written in: lower(), casefold(),
// split() whitespace and \w word characters, over code points decoded from UTF-8.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tb::eval {

// Code points of UTF-8 text; each byte of an invalid sequence decodes to U+FFFD.
std::u32string decodeUtf8(std::string_view text);
std::string encodeUtf8(std::u32string_view text);

// Python's str.lower(): the full lowercase mapping (U+0130 becomes "i" + U+0307) with the
// final-sigma rule (capital sigma after a cased letter and not before one becomes U+03C2).
std::u32string pythonLower(std::u32string_view text);
// Python's str.casefold(): full Unicode case folding ("Straße" and "STRASSE" fold alike).
std::u32string pythonCasefold(std::u32string_view text);

// A character str.split() splits on (str.isspace(): Zs, and the bidi classes WS, B and S).
bool isPythonSpace(char32_t c);
// A character `re`'s \w matches in a str pattern: letters, numbers (str.isalnum()) and '_'.
bool isPythonWordChar(char32_t c);

// str.split() without arguments: the runs of non-whitespace characters.
std::vector<std::u32string> splitPythonWhitespace(std::u32string_view text);

}  // namespace tb::eval
