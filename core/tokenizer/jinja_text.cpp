// Python's str rules over UTF-8 for the Jinja interpreter: code points, whitespace, case mapping
// (utf8proc's simple mappings plus the common full ones), splitlines, and float and str repr.
#include "tokenizer/jinja_text.h"

#include <utf8proc.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace tb::jinja::detail {

char32_t decodeUtf8(std::string_view s, size_t i, size_t* length)
{
    const auto b0 = static_cast<unsigned char>(s[i]);
    *length = 1;
    if (b0 < 0x80)
        return b0;
    int n = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
    if (n == 0 || b0 > 0xF4 || i + n > s.size())
        return 0xFFFD;
    char32_t c = b0 & (0x7F >> n);
    for (int k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80)
            return 0xFFFD;
        c = (c << 6) | (b & 0x3F);
    }
    const char32_t minimum = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    if (c < minimum || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0xFFFD;
    *length = static_cast<size_t>(n);
    return c;
}

void appendUtf8(std::string& out, char32_t c)
{
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
}

size_t codePointCount(std::string_view s)
{
    size_t n = 0;
    for (size_t i = 0, len = 0; i < s.size(); i += len, ++n)
        decodeUtf8(s, i, &len);
    return n;
}

std::vector<size_t> codePointOffsets(std::string_view s)
{
    std::vector<size_t> offsets;
    offsets.reserve(s.size() + 1);
    for (size_t i = 0, len = 0; i < s.size(); i += len) {
        offsets.push_back(i);
        decodeUtf8(s, i, &len);
    }
    offsets.push_back(s.size());
    return offsets;
}

bool isAscii(std::string_view s)
{
    for (char c : s)
        if (static_cast<unsigned char>(c) >= 0x80)
            return false;
    return true;
}

bool isPySpace(char32_t c)
{
    if (c < 0x80)
        return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

namespace {

bool inChars(char32_t c, const std::string& chars)
{
    for (size_t i = 0, len = 0; i < chars.size(); i += len)
        if (decodeUtf8(chars, i, &len) == c)
            return true;
    return false;
}

bool stripped(char32_t c, const std::string* chars)
{
    return chars ? inChars(c, *chars) : isPySpace(c);
}

utf8proc_category_t category(char32_t c)
{
    return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

// Full case mappings Python applies that utf8proc's one-to-one ones lack (the common ones).
const char* fullUpper(char32_t c)
{
    switch (c) {
    case 0xDF:
        return "SS";
    case 0xFB00:
        return "FF";
    case 0xFB01:
        return "FI";
    case 0xFB02:
        return "FL";
    default:
        return nullptr;
    }
}

const char* fullTitle(char32_t c)
{
    switch (c) {
    case 0xDF:
        return "Ss";
    case 0xFB00:
        return "Ff";
    case 0xFB01:
        return "Fi";
    case 0xFB02:
        return "Fl";
    default:
        return nullptr;
    }
}

void appendLower(std::string& out, char32_t c)
{
    if (c == 0x130) {  // İ lowers to i + combining dot above
        out += "i\xCC\x87";
        return;
    }
    appendUtf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

void appendUpper(std::string& out, char32_t c)
{
    if (const char* full = fullUpper(c)) {
        out += full;
        return;
    }
    appendUtf8(out, static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))));
}

void appendTitle(std::string& out, char32_t c)
{
    if (const char* full = fullTitle(c)) {
        out += full;
        return;
    }
    appendUtf8(out, static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))));
}

template <typename F> std::string mapChars(std::string_view s, F f)
{
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0, len = 0; i < s.size(); i += len) {
        const char32_t c = decodeUtf8(s, i, &len);
        if (c < 0x80 && len == 1)
            f(out, c);
        else if (c == 0xFFFD && len == 1)
            out += s[i];  // an invalid byte stays as it was
        else
            f(out, c);
    }
    return out;
}

bool isPrintable(char32_t c)
{
    if (c == ' ')
        return true;
    switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
        return false;
    default:
        return true;
    }
}

void appendHexEscape(std::string& out, char32_t c)
{
    char buf[16];
    if (c <= 0xFF)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
    else if (c <= 0xFFFF)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
    else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
    out += buf;
}

}  // namespace

std::string pyStrip(std::string_view s, const std::string* chars, bool left, bool right)
{
    size_t begin = 0;
    size_t end = s.size();
    if (left) {
        size_t len = 0;
        while (begin < end && stripped(decodeUtf8(s, begin, &len), chars))
            begin += len;
    }
    if (right) {
        while (end > begin) {
            size_t start = end - 1;
            while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
                --start;
            size_t len = 0;
            const char32_t c = decodeUtf8(s, start, &len);
            if (start + len != end || !stripped(c, chars))
                break;
            end = start;
        }
    }
    return std::string(s.substr(begin, end - begin));
}

bool isCased(char32_t c)
{
    const auto cat = category(c);
    return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
           cat == UTF8PROC_CATEGORY_LT;
}

bool isAlnumCp(char32_t c)
{
    if (c < 0x80)
        return std::isalnum(static_cast<int>(c)) || c == '_';
    const auto cat = category(c);
    return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
           cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
           cat == UTF8PROC_CATEGORY_NO || cat == UTF8PROC_CATEGORY_MN ||
           cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_PC;
}

std::string pyLower(std::string_view s)
{
    return mapChars(s, appendLower);
}

std::string pyUpper(std::string_view s)
{
    return mapChars(s, appendUpper);
}

std::string pySwapcase(std::string_view s)
{
    return mapChars(s, [](std::string& out, char32_t c) {
        const auto cat = category(c);
        if (cat == UTF8PROC_CATEGORY_LU)
            appendLower(out, c);
        else if (cat == UTF8PROC_CATEGORY_LL)
            appendUpper(out, c);
        else
            appendUtf8(out, c);
    });
}

std::string pyTitle(std::string_view s)
{
    bool previousCased = false;
    return mapChars(s, [&](std::string& out, char32_t c) {
        if (previousCased)
            appendLower(out, c);
        else
            appendTitle(out, c);
        previousCased = isCased(c);
    });
}

std::string pyCapitalize(std::string_view s)
{
    bool first = true;
    return mapChars(s, [&](std::string& out, char32_t c) {
        if (first)
            appendTitle(out, c);
        else
            appendLower(out, c);
        first = false;
    });
}

bool pyIsLower(std::string_view s)
{
    bool cased = false;
    for (size_t i = 0, len = 0; i < s.size(); i += len) {
        const auto cat = category(decodeUtf8(s, i, &len));
        if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT)
            return false;
        cased = cased || cat == UTF8PROC_CATEGORY_LL;
    }
    return cased;
}

bool pyIsUpper(std::string_view s)
{
    bool cased = false;
    for (size_t i = 0, len = 0; i < s.size(); i += len) {
        const auto cat = category(decodeUtf8(s, i, &len));
        if (cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT)
            return false;
        cased = cased || cat == UTF8PROC_CATEGORY_LU;
    }
    return cased;
}

bool pyIsClass(std::string_view s, char which)
{
    if (s.empty())
        return false;
    for (size_t i = 0, len = 0; i < s.size(); i += len) {
        const char32_t c = decodeUtf8(s, i, &len);
        const auto cat = category(c);
        const bool letter = cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
        const bool decimal = cat == UTF8PROC_CATEGORY_ND;
        const bool numeric = decimal || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
        bool ok = false;
        switch (which) {
        case 'a':
            ok = letter;
            break;
        case 'd':
            ok = decimal || c == 0xB2 || c == 0xB3 || c == 0xB9;
            break;
        case 'n':
            ok = numeric;
            break;
        case 'D':
            ok = decimal;
            break;
        case 'w':
            ok = letter || numeric;
            break;
        case 's':
            ok = isPySpace(c);
            break;
        default:
            break;
        }
        if (!ok)
            return false;
    }
    return true;
}

std::vector<std::string> pySplitLines(std::string_view s, bool keepends)
{
    std::vector<std::string> lines;
    size_t start = 0;
    size_t i = 0;
    while (i < s.size()) {
        size_t len = 0;
        const char32_t c = decodeUtf8(s, i, &len);
        const bool boundary = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C ||
                              c == 0x1D || c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
        if (!boundary) {
            i += len;
            continue;
        }
        size_t end = i + len;
        if (c == '\r' && end < s.size() && s[end] == '\n')
            ++end;
        lines.emplace_back(s.substr(start, (keepends ? end : i) - start));
        start = i = end;
    }
    if (start < s.size())
        lines.emplace_back(s.substr(start));
    return lines;
}

std::string pyFloatRepr(double x)
{
    if (std::isnan(x))
        return "nan";
    if (std::isinf(x))
        return x < 0 ? "-inf" : "inf";
    char buf[64];
    const auto result = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
    const std::string sci(buf, result.ptr);
    // sci: [-]d[.ddd]e(+|-)xx
    const bool negative = sci[0] == '-';
    const size_t e = sci.find('e');
    std::string digits;
    for (size_t i = negative ? 1 : 0; i < e; ++i)
        if (sci[i] != '.')
            digits += sci[i];
    const int exponent = std::atoi(sci.c_str() + e + 1);
    const int decpt = exponent + 1;  // value = 0.digits * 10^decpt
    std::string out = negative ? "-" : "";
    const int n = static_cast<int>(digits.size());
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out += "0.";
            out.append(static_cast<size_t>(-decpt), '0');
            out += digits;
        } else if (decpt >= n) {
            out += digits;
            out.append(static_cast<size_t>(decpt - n), '0');
            out += ".0";
        } else {
            out.append(digits, 0, static_cast<size_t>(decpt));
            out += '.';
            out.append(digits, static_cast<size_t>(decpt), std::string::npos);
        }
        return out;
    }
    out += digits[0];
    if (n > 1) {
        out += '.';
        out.append(digits, 1, std::string::npos);
    }
    out += exponent < 0 ? "e-" : "e+";
    const int magnitude = std::abs(exponent);
    if (magnitude < 10)
        out += '0';
    out += std::to_string(magnitude);
    return out;
}

std::string pyStrRepr(std::string_view s)
{
    const bool single = s.find('\'') != std::string_view::npos;
    const bool dbl = s.find('"') != std::string_view::npos;
    const char quote = single && !dbl ? '"' : '\'';
    std::string out(1, quote);
    for (size_t i = 0, len = 0; i < s.size(); i += len) {
        const char32_t c = decodeUtf8(s, i, &len);
        if (c == static_cast<char32_t>(quote) || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c < 0x20 || c == 0x7F) {
            appendHexEscape(out, c);
        } else if (c < 0x7F) {
            out += static_cast<char>(c);
        } else if (c == 0xFFFD && len == 1) {
            appendHexEscape(out, static_cast<unsigned char>(s[i]));  // an invalid byte
        } else if (isPrintable(c)) {
            out.append(s.substr(i, len));
        } else {
            appendHexEscape(out, c);
        }
    }
    out += quote;
    return out;
}

std::string htmlEscape(std::string_view s)
{
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '\'':
            out += "&#39;";
            break;
        case '"':
            out += "&#34;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

}  // namespace tb::jinja::detail
