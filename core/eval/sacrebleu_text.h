// The pieces of Python's str that sacrebleu's metrics rest on, over code points: str.split() and
// str.rstrip() whitespace, str.lower() (full case mapping with Greek final sigma), and UTF-8 in and
// out. Shared by bleu, chrf and ter.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tb::eval {

// The code points of UTF-8 text; each ill-formed sequence (its maximal subpart) becomes one
// U+FFFD, as Python's bytes.decode(errors="replace") reads it.
std::u32string toCodePoints(std::string_view utf8);
std::string toUtf8(std::u32string_view text);

// Python's str.isspace(): Unicode White_Space plus the separators U+001C..U+001F.
bool isPythonSpace(char32_t c);

// str.split() without arguments: the runs between whitespace, none empty.
std::vector<std::u32string> pythonSplit(std::u32string_view text);
// str.rstrip() without arguments.
std::u32string_view pythonRstrip(std::u32string_view text);
// str.lower(): each character's full lowercase mapping (U+0130 becomes "i" + U+0307), and U+03A3
// as final sigma (U+03C2) after a cased letter that no cased letter follows, case-ignorable
// characters skipped both ways (Unicode's Final_Sigma condition, as CPython applies it).
std::u32string pythonLower(std::u32string_view text);

// The Final_Sigma context's two character classes (Unicode's Case_Ignorable and Cased), built from
// utf8proc's categories and case mappings plus the Word_Break and Other_Lowercase/Uppercase
// characters Unicode adds. With pythonLower they agree with Python 3.11 (Unicode 14) on every code
// point assigned there; utf8proc's newer Unicode only differs on code points Python leaves
// unassigned.
bool isCaseIgnorable(char32_t c);
bool isCased(char32_t c);

}  // namespace tb::eval
