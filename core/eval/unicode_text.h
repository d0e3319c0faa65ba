// Unicode text operations with the semantics of Python 3's str methods and `re`, which the metrics'
// reference implementations (SQuAD's script, rouge-score, sacrebleu) are written in: lower(),
// casefold(), split() whitespace and \w word characters, over code points decoded from UTF-8.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tb::eval {

// Code points of UTF-8 text; each ill-formed sequence (its maximal subpart) becomes one U+FFFD,
// as Python's bytes.decode(errors="replace") reads it.
std::u32string decodeUtf8(std::string_view text);
std::string encodeUtf8(std::u32string_view text);

// Python's str.lower(): the full lowercase mapping (U+0130 becomes "i" + U+0307) with the
// final-sigma rule (capital sigma after a cased letter and not before one becomes U+03C2).
std::u32string pythonLower(std::u32string_view text);
// Python's str.casefold(): full Unicode case folding ("Straße" and "STRASSE" fold alike).
std::u32string pythonCasefold(std::u32string_view text);

// str.isspace(): Unicode White_Space plus the separators U+001C..U+001F.
bool isPythonSpace(char32_t c);
// A character `re`'s \w matches in a str pattern: letters, numbers (str.isalnum()) and '_'.
bool isPythonWordChar(char32_t c);

// str.split() without arguments: the runs of non-whitespace characters.
std::vector<std::u32string> splitPythonWhitespace(std::u32string_view text);
// str.rstrip() without arguments.
std::u32string_view pythonRstrip(std::u32string_view text);

// The Final_Sigma context's two character classes (Unicode's Case_Ignorable and Cased), built from
// utf8proc's categories and case mappings plus the Word_Break and Other_Lowercase/Uppercase
// characters Unicode adds. With pythonLower they agree with Python 3.11 (Unicode 14) on every code
// point assigned there; utf8proc's newer Unicode only differs on code points Python leaves
// unassigned.
bool isCaseIgnorable(char32_t c);
bool isCased(char32_t c);

}  // namespace tb::eval
