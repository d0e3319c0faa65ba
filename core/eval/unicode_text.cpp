// Python 3 str semantics over code points: lower(), casefold(), isspace(), \w, split(), rstrip().
#include "eval/unicode_text.h"

#include "tokenizer/pretokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <iterator>

namespace tb::eval {

namespace {

constexpr char32_t kCapitalSigma = 0x03A3;

// Word_Break MidLetter, MidNumLet and Single_Quote: the case-ignorable characters outside the
// categories Mn, Me, Cf, Lm and Sk.
bool isWordBreakMid(char32_t c)
{
    static constexpr char32_t kMid[] = {0x27,   0x2E,   0x3A,   0xB7,   0x387,  0x55F,
                                        0x5F4,  0x2018, 0x2019, 0x2024, 0x2027, 0xFE13,
                                        0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
    return std::find(std::begin(kMid), std::end(kMid), c) != std::end(kMid);
}

// Other_Lowercase and Other_Uppercase characters outside Lu, Ll and Lt and not of category Lm
// (those are case-ignorable, which the Final_Sigma scan tests first).
bool isOtherCased(char32_t c)
{
    return c == 0xAA || c == 0xBA || c == 0x345 || (c >= 0x2170 && c <= 0x217F) ||
           (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
           (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

// Whether the capital sigma at text[i] is in the Final_Sigma context.
bool isFinalSigma(std::u32string_view text, size_t i)
{
    size_t j = i;
    while (j > 0 && isCaseIgnorable(text[j - 1]))
        --j;
    if (j == 0 || !isCased(text[j - 1]))
        return false;
    size_t k = i + 1;
    while (k < text.size() && isCaseIgnorable(text[k]))
        ++k;
    return k == text.size() || !isCased(text[k]);
}

}  // namespace

bool isCaseIgnorable(char32_t c)
{
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
        return true;
    default:
        return isWordBreakMid(c);
    }
}

bool isCased(char32_t c)
{
    const auto cp = static_cast<utf8proc_int32_t>(c);
    const auto category = utf8proc_category(cp);
    return category == UTF8PROC_CATEGORY_LU || category == UTF8PROC_CATEGORY_LL ||
           category == UTF8PROC_CATEGORY_LT || utf8proc_tolower(cp) != cp ||
           utf8proc_toupper(cp) != cp || isOtherCased(c);
}

std::u32string decodeUtf8(std::string_view text)
{
    const std::string valid = toValidUtf8(text);  // each maximal ill-formed subpart -> U+FFFD
    std::u32string out;
    out.reserve(valid.size());
    size_t len = 0;
    for (size_t i = 0; i < valid.size(); i += len)
        out.push_back(tb::decodeUtf8(valid, i, len));
    return out;
}

std::string encodeUtf8(std::u32string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (char32_t c : text) {
        utf8proc_uint8_t buffer[4];
        const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buffer);
        out.append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
    }
    return out;
}

std::u32string pythonLower(std::u32string_view text)
{
    std::u32string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        const char32_t c = text[i];
        if (c < 0x80) {
            out.push_back(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
        } else if (c == 0x0130) {  // SpecialCasing's one unconditional lowercase expansion
            out.push_back(U'i');
            out.push_back(0x0307);
        } else if (c == kCapitalSigma) {
            out.push_back(isFinalSigma(text, i) ? 0x03C2 : 0x03C3);
        } else {
            out.push_back(
                static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
        }
    }
    return out;
}

std::u32string pythonCasefold(std::u32string_view text)
{
    std::u32string out;
    out.reserve(text.size());
    for (char32_t c : text) {
        utf8proc_int32_t folded[8];
        int boundclass = 0;
        const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), folded,
                                                           8, UTF8PROC_CASEFOLD, &boundclass);
        if (n <= 0 || n > 8) {
            out.push_back(c);
            continue;
        }
        for (utf8proc_ssize_t k = 0; k < n; ++k)
            out.push_back(static_cast<char32_t>(folded[k]));
    }
    return out;
}

bool isPythonSpace(char32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

bool isPythonWordChar(char32_t c)
{
    if (c < 0x80)
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return true;
    default:
        return false;
    }
}

std::u32string_view pythonRstrip(std::u32string_view text)
{
    size_t end = text.size();
    while (end > 0 && isPythonSpace(text[end - 1]))
        --end;
    return text.substr(0, end);
}

std::vector<std::u32string> splitPythonWhitespace(std::u32string_view text)
{
    std::vector<std::u32string> out;
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && isPythonSpace(text[i]))
            ++i;
        const size_t start = i;
        while (i < text.size() && !isPythonSpace(text[i]))
            ++i;
        if (i > start)
            out.emplace_back(text.substr(start, i - start));
    }
    return out;
}

}  // namespace tb::eval
