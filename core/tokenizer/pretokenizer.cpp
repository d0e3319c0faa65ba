// Text handling ahead of byte-level BPE: UTF-8, the GPT-2 byte table, normalization and splits.
//
// The file's regexes are Oniguruma patterns; PCRE2 runs them with UTF + UCP, where \s, \p{L} and
// \p{N} mean what they mean to Oniguruma (Unicode White_Space, letters, numbers).
#include "tokenizer/pretokenizer.h"

#include "util/error.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>

namespace tb {
namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// ---------------------------------------------------------------------------------------------
// UTF-8

// Length (1-4) of the well-formed UTF-8 sequence at s[i], or 0 when ill-formed; then `bad` is the
// length of its maximal subpart, which becomes one U+FFFD (the Unicode recommendation that
// from_utf8_lossy follows).
size_t utf8SequenceLength(std::string_view s, size_t i, size_t& bad)
{
    const auto c = static_cast<unsigned char>(s[i]);
    bad = 1;
    if (c < 0x80)
        return 1;
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    for (size_t k = 1; k < need; ++k) {
        const auto b = i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
        if (i + k >= s.size() || b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
            bad = k;
            return 0;
        }
    }
    return need;
}

bool isValidUtf8(std::string_view s)
{
    size_t bad = 0;
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8SequenceLength(s, i, bad);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

void appendUtf8(std::string& out, char32_t cp)
{
    utf8proc_uint8_t buffer[4];
    const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buffer);
    out.append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

// ---------------------------------------------------------------------------------------------
// GPT-2's byte <-> printable character table: bytes that are printable map to themselves, the
// others to U+0100 and up, so every byte string is a string of visible characters.

struct ByteLevelTable {
    std::array<std::string, 256> byteToUtf8;  // UTF-8 of the character standing for each byte
    std::array<int16_t, 324> charToByte;      // code point -> byte, -1 when not in the table

    ByteLevelTable()
    {
        charToByte.fill(-1);
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            const char32_t cp = printable ? char32_t(b) : char32_t(256 + extra++);
            appendUtf8(byteToUtf8[b], cp);
            charToByte[cp] = static_cast<int16_t>(b);
        }
    }
};

const ByteLevelTable& byteLevel()
{
    static const ByteLevelTable table;
    return table;
}

// PCRE2's message for an error code.
std::string pcre2Message(int code)
{
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(code, buffer, sizeof(buffer));
    return reinterpret_cast<const char*>(buffer);
}

}  // namespace

std::string toValidUtf8(std::string_view s)
{
    if (isValidUtf8(s))
        return std::string(s);
    std::string out;
    out.reserve(s.size() + 8);
    size_t bad = 0;
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8SequenceLength(s, i, bad);
        if (n) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            out.append(kReplacementChar);
            i += bad;
        }
    }
    return out;
}

// Code point at s[i] of valid UTF-8; len receives its byte length.
char32_t decodeUtf8(std::string_view s, size_t i, size_t& len)
{
    const auto c = static_cast<unsigned char>(s[i]);
    len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len && i + k < s.size(); ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    return cp;
}

// Unicode White_Space, what Rust's \s and char::is_whitespace mean.
bool isWhiteSpace(char32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

// Rust regex's \w: letters, marks, decimal and letter numbers, connector punctuation.
bool isWordChar(char32_t c)
{
    const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
    return (category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_NL) ||
           category == UTF8PROC_CATEGORY_PC;
}

// Start of the code point that ends at s[end - 1].
size_t previousCharStart(std::string_view s, size_t end)
{
    size_t i = end - 1;
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80)
        --i;
    return i;
}

const std::string& byteLevelChar(unsigned char b)
{
    return byteLevel().byteToUtf8[b];
}

std::string byteLevelEncode(std::string_view bytes)
{
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes)
        out += byteLevel().byteToUtf8[b];
    return out;
}

// The ByteLevel decoder: a token whose characters all come from the table gives its bytes; any
// other token (an added token such as "你好") gives its own UTF-8.
void byteLevelDecode(const std::string& token, std::string& bytes)
{
    const size_t mark = bytes.size();
    size_t len = 0;
    for (size_t i = 0; i < token.size(); i += len) {
        const char32_t cp = decodeUtf8(token, i, len);
        const int b = cp < byteLevel().charToByte.size() ? byteLevel().charToByte[cp] : -1;
        if (b < 0) {
            bytes.resize(mark);
            bytes += token;
            return;
        }
        bytes += static_cast<char>(b);
    }
}

// ---------------------------------------------------------------------------------------------
// Normalization (utf8proc)

std::string normalizeUnicode(const std::string& text, NormalForm form)
{
    int options = UTF8PROC_STABLE;
    switch (form) {
    case NormalForm::NFC:
        options |= UTF8PROC_COMPOSE;
        break;
    case NormalForm::NFD:
        options |= UTF8PROC_DECOMPOSE;
        break;
    case NormalForm::NFKC:
        options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
        break;
    case NormalForm::NFKD:
        options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
        break;
    }
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                     static_cast<utf8proc_ssize_t>(text.size()), &out, utf8proc_option_t(options));
    if (n < 0)
        fail("Unicode normalization failed: ", utf8proc_errmsg(n));
    std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
    return result;
}

// ---------------------------------------------------------------------------------------------
// Regex (PCRE2) and the pre-tokenizer splits

class Regex {
public:
    Regex(const std::string& pattern, bool literal, const std::string& where)
    {
        int error = 0;
        PCRE2_SIZE offset = 0;
        const uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
        m_code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                               options, &error, &offset, nullptr);
        if (!m_code)
            fail(where, ": regex /", pattern, "/ does not compile at offset ", offset, " (",
                 pcre2Message(error), ")");
        // Without JIT support this fails and pcre2_match interprets instead.
        pcre2_jit_compile(m_code, PCRE2_JIT_COMPLETE);
    }
    ~Regex() { pcre2_code_free(m_code); }
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Byte ranges [begin, end) of the non-empty matches in text (valid UTF-8), left to right.
    std::vector<std::pair<size_t, size_t>> findAll(std::string_view text) const
    {
        std::vector<std::pair<size_t, size_t>> out;
        std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
            pcre2_match_data_create_from_pattern(m_code, nullptr), &pcre2_match_data_free);
        const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
        uint32_t options = PCRE2_NO_UTF_CHECK;
        size_t at = 0;
        while (at < text.size()) {
            const int rc =
                pcre2_match(m_code, subject, text.size(), at, options, data.get(), nullptr);
            if (rc == PCRE2_ERROR_NOMATCH)
                break;
            if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !(options & PCRE2_NO_JIT)) {
                options |= PCRE2_NO_JIT;  // the interpreter keeps its backtracking on the heap
                continue;
            }
            if (rc < 0)
                fail("tokenizer regex failed on a ", text.size(), "-byte piece (", pcre2Message(rc),
                     ")");
            const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
            if (ovector[1] == ovector[0]) {  // empty match: step over one character
                at = ovector[0] + 1;
                while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80)
                    ++at;
                continue;
            }
            out.emplace_back(ovector[0], ovector[1]);
            at = ovector[1];
        }
        return out;
    }

private:
    pcre2_code* m_code = nullptr;
};

const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::shared_ptr<const Regex> compileRegex(const std::string& pattern, bool literal,
                                          const std::string& where)
{
    return std::make_shared<Regex>(pattern, literal, where);
}

// The pieces of text after one split, HF's NormalizedString::split with empty pieces dropped.
void splitPiece(const SplitStep& step, std::string_view piece, std::vector<std::string>& out)
{
    std::string prefixed;
    if (step.addPrefixSpace && (piece.empty() || piece[0] != ' ')) {
        prefixed.reserve(piece.size() + 1);
        prefixed += ' ';
        prefixed += piece;
        piece = prefixed;
    }
    if (piece.empty())
        return;
    if (!step.regex) {
        out.emplace_back(piece);
        return;
    }
    struct Span {
        size_t begin, end;
        bool isMatch;
    };
    std::vector<Span> spans;  // covers the piece
    size_t prev = 0;
    for (auto [b, e] : step.regex->findAll(piece)) {
        if (prev != b)
            spans.push_back({prev, b, step.invert});
        spans.push_back({b, e, !step.invert});
        prev = e;
    }
    if (prev != piece.size())
        spans.push_back({prev, piece.size(), step.invert});

    std::vector<Span> kept;  // isMatch here means "remove"
    bool previousMatch = false;
    switch (step.behavior) {
    case SplitBehavior::Removed:
        kept.swap(spans);  // spans is not used again
        break;
    case SplitBehavior::Isolated:
        for (const Span& s : spans)
            kept.push_back({s.begin, s.end, false});
        break;
    case SplitBehavior::Contiguous:
        for (const Span& s : spans) {
            if (s.isMatch == previousMatch && !kept.empty())
                kept.back().end = s.end;
            else
                kept.push_back({s.begin, s.end, false});
            previousMatch = s.isMatch;
        }
        break;
    case SplitBehavior::MergedWithPrevious:
        for (const Span& s : spans) {
            if (s.isMatch && !previousMatch && !kept.empty())
                kept.back().end = s.end;
            else
                kept.push_back({s.begin, s.end, false});
            previousMatch = s.isMatch;
        }
        break;
    case SplitBehavior::MergedWithNext:
        for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
            if (it->isMatch && !previousMatch && !kept.empty())
                kept.back().begin = it->begin;
            else
                kept.push_back({it->begin, it->end, false});
            previousMatch = it->isMatch;
        }
        std::reverse(kept.begin(), kept.end());
        break;
    }
    for (const Span& s : kept)
        if (!s.isMatch && s.end > s.begin)
            out.emplace_back(piece.substr(s.begin, s.end - s.begin));
}

}  // namespace tb
