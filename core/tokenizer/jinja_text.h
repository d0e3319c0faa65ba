// Text as Python's str sees it, for the Jinja interpreter: code points of UTF-8 strings, Python's
// whitespace and case rules, and the repr of floats and strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tb::jinja::detail {

// The code point at byte offset i of s and its length in bytes; a byte that does not start a
// valid sequence counts as one code point of its own (U+FFFD), so nothing ever reads past s.
char32_t decodeUtf8(std::string_view s, size_t i, size_t* length);
void appendUtf8(std::string& out, char32_t c);
// Number of code points (Python's len).
size_t codePointCount(std::string_view s);
// Byte offsets of every code point of s, plus s.size() at the end.
std::vector<size_t> codePointOffsets(std::string_view s);
bool isAscii(std::string_view s);

// str.isspace() of one code point (also what Python's re \s matches).
bool isPySpace(char32_t c);
// Python str.strip/lstrip/rstrip: whitespace when chars is null, else any code point of *chars.
std::string pyStrip(std::string_view s, const std::string* chars, bool left, bool right);

std::string pyLower(std::string_view s);
std::string pyUpper(std::string_view s);
std::string pySwapcase(std::string_view s);
// str.title(): a cased character after an uncased one is title-cased, the others lowered.
std::string pyTitle(std::string_view s);
// str.capitalize(): the first character title-cased, the rest lowered.
std::string pyCapitalize(std::string_view s);
bool pyIsLower(std::string_view s);
bool pyIsUpper(std::string_view s);
// str.isalpha/isdigit/isalnum/isnumeric/isdecimal/isspace over the whole string (false if empty).
bool pyIsClass(std::string_view s, char which);
bool isCased(char32_t c);
bool isAlnumCp(char32_t c);  // \w in Python's re: letters, digits, underscore

// str.splitlines() (\n \r \r\n \v \f \x1c-\x1e \x85 U+2028 U+2029); keepends keeps them.
std::vector<std::string> pySplitLines(std::string_view s, bool keepends);

// repr(float): the shortest text that reads back to x, as Python writes it ("1.0", "1e+16").
std::string pyFloatRepr(double x);
// repr(str): quoted, with non-printable characters escaped.
std::string pyStrRepr(std::string_view s);
// markupsafe.escape: & < > ' " as HTML entities.
std::string htmlEscape(std::string_view s);

}  // namespace tb::jinja::detail
