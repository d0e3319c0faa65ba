// Byte-level BPE tokenizer read from a Hugging Face tokenizer.json (GPT-2, Llama-3, Qwen2
// families).
//
// Pipeline, as Hugging Face `tokenizers` runs it for encode(text, add_special_tokens):
//   added tokens (normalized=false) matched on the raw text -> normalizer (NFC...) on the rest ->
//   added tokens (normalized=true) matched -> pre-tokenizers (Split regex, ByteLevel) -> BPE per
//   pre-token -> post-processor (TemplateProcessing BOS...). Decoding is ByteLevel with U+FFFD for
//   invalid UTF-8, like Rust's String::from_utf8_lossy.
// The file's regexes are Oniguruma patterns; PCRE2 runs them with UTF + UCP, where \s, \p{L} and
// \p{N} mean what they mean to Oniguruma (Unicode White_Space, letters, numbers). Text that is not
// valid UTF-8 has its invalid sequences replaced by U+FFFD before encoding (Python strings cannot
// hold them either).
#include "tokenizer/tokenizer.h"

#include "util/error.h"
#include "util/file_util.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <nlohmann/json.hpp>
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <queue>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace tb {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD"; // U+FFFD

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
    unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
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

void appendUtf8(std::string& out, char32_t cp)
{
    utf8proc_uint8_t buffer[4];
    const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buffer);
    out.append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
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

// ---------------------------------------------------------------------------------------------
// GPT-2's byte <-> printable character table: bytes that are printable map to themselves, the
// others to U+0100 and up, so every byte string is a string of visible characters.

struct ByteLevelTable {
    std::array<std::string, 256> byteToUtf8; // UTF-8 of the character standing for each byte
    std::array<int16_t, 324> charToByte;     // code point -> byte, -1 when not in the table

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
// Regex (PCRE2)

std::string pcre2Message(int code)
{
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(code, buffer, sizeof(buffer));
    return reinterpret_cast<const char*>(buffer);
}

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
                options |= PCRE2_NO_JIT; // the interpreter keeps its backtracking on the heap
                continue;
            }
            if (rc < 0)
                fail("tokenizer regex failed on a ", text.size(), "-byte piece (", pcre2Message(rc),
                     ")");
            const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
            if (ovector[1] == ovector[0]) { // empty match: step over one character
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

// ---------------------------------------------------------------------------------------------
// Pieces of the pipeline

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// One pre-tokenizer step that splits pieces (Split, Digits, and the regex of ByteLevel).
struct SplitStep {
    std::shared_ptr<const Regex> regex;
    SplitBehavior behavior = SplitBehavior::Isolated;
    bool invert = false;
    bool addPrefixSpace = false; // ByteLevel's add_prefix_space
};

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
    std::vector<Span> spans; // covers the piece
    size_t prev = 0;
    for (auto [b, e] : step.regex->findAll(piece)) {
        if (prev != b)
            spans.push_back({prev, b, step.invert});
        spans.push_back({b, e, !step.invert});
        prev = e;
    }
    if (prev != piece.size())
        spans.push_back({prev, piece.size(), step.invert});

    std::vector<Span> kept; // isMatch here means "remove"
    bool previousMatch = false;
    switch (step.behavior) {
    case SplitBehavior::Removed:
        kept = spans;
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

struct AddedToken {
    int32_t id = 0;
    std::string content;
    bool special = false;
    bool singleWord = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
    std::string decodeForm; // content, normalized when `normalized`
};

// Byte trie over added-token contents, matched leftmost-longest like tokenizers' Aho-Corasick.
class TokenTrie {
public:
    TokenTrie() : m_nodes(1) {}
    bool empty() const { return m_nodes.size() == 1; }

    void insert(const std::string& key, size_t token)
    {
        if (key.empty())
            return;
        size_t node = 0;
        for (unsigned char c : key) {
            auto it = m_nodes[node].next.find(c);
            if (it == m_nodes[node].next.end()) {
                m_nodes.emplace_back();
                it = m_nodes[node].next.emplace(c, m_nodes.size() - 1).first;
            }
            node = it->second;
        }
        m_nodes[node].token = static_cast<int64_t>(token);
    }

    // Longest key starting at text[at]: (token, length), or token -1.
    std::pair<int64_t, size_t> longestAt(std::string_view text, size_t at) const
    {
        std::pair<int64_t, size_t> best{-1, 0};
        size_t node = 0;
        for (size_t i = at; i < text.size(); ++i) {
            auto it = m_nodes[node].next.find(static_cast<unsigned char>(text[i]));
            if (it == m_nodes[node].next.end())
                break;
            node = it->second;
            if (m_nodes[node].token >= 0)
                best = {m_nodes[node].token, i + 1 - at};
        }
        return best;
    }

private:
    struct Node {
        std::unordered_map<unsigned char, size_t> next;
        int64_t token = -1;
    };
    std::vector<Node> m_nodes;
};

// A stretch of text between added tokens (token < 0), or an added token.
struct Segment {
    std::string_view text;
    int64_t token = -1; // index into m_added
};

enum class NormalForm { NFC, NFD, NFKC, NFKD };

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

const Json* member(const Json& j, const char* key)
{
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
}

bool flag(const Json& j, const char* key, bool fallback)
{
    const Json* v = member(j, key);
    return v && v->is_boolean() ? v->get<bool>() : fallback;
}

std::string typeOf(const Json& j)
{
    const Json* t = member(j, "type");
    return t && t->is_string() ? t->get<std::string>() : "";
}

// ---------------------------------------------------------------------------------------------

class BpeTokenizer final : public Tokenizer {
public:
    explicit BpeTokenizer(const std::string& path) : m_path(path)
    {
        Json root;
        try {
            root = Json::parse(readFile(path));
        } catch (const Json::exception& e) {
            fail(path, ": not valid JSON (", e.what(), ")");
        }
        try {
            if (!root.is_object())
                fail(path, ": not a tokenizer.json (the top level is not an object)");
            loadModel(root);
            loadAddedTokens(root);
            loadNormalizer(root);
            loadPreTokenizer(root);
            loadPostProcessor(root);
            checkDecoder(root);
            loadSpecialIds();
        } catch (const Json::exception& e) {
            fail(path, ": unexpected structure (", e.what(), ")");
        }
    }

    std::vector<int32_t> encode(const std::string& input, bool addSpecial) const override
    {
        const std::string text = toValidUtf8(input);
        std::vector<int32_t> ids;
        if (addSpecial)
            ids = m_templatePrefix;
        for (const Segment& raw : splitAdded(text, m_trieRaw)) {
            if (raw.token >= 0) {
                ids.push_back(m_added[raw.token].id);
                continue;
            }
            std::string normalized(raw.text);
            for (NormalForm form : m_normalizers)
                normalized = normalizeUnicode(normalized, form);
            for (const Segment& seg : splitAdded(normalized, m_trieNormalized)) {
                if (seg.token >= 0)
                    ids.push_back(m_added[seg.token].id);
                else
                    encodeOrdinary(seg.text, ids);
            }
        }
        if (addSpecial)
            ids.insert(ids.end(), m_templateSuffix.begin(), m_templateSuffix.end());
        return ids;
    }

    std::string decode(const std::vector<int32_t>& ids, bool skipSpecial) const override
    {
        std::string bytes;
        for (int32_t id : ids) {
            if (id < 0 || id >= vocabSize())
                fail("token id ", id, " is outside the vocabulary (", vocabSize(), ") of ", m_path);
            const std::string* token = tokenOf(id, true);
            if (!token || (skipSpecial && m_specialContents.count(*token)))
                continue;
            byteLevelDecode(*token, bytes);
        }
        return toValidUtf8(bytes);
    }

    int32_t vocabSize() const override { return static_cast<int32_t>(m_idToToken.size()); }

    std::string idToPiece(int32_t id) const override
    {
        const std::string* token = id >= 0 && id < vocabSize() ? tokenOf(id) : nullptr;
        if (!token)
            fail("token id ", id, " is not in the vocabulary of ", m_path);
        return *token;
    }

    std::optional<int32_t> pieceToId(const std::string& piece) const override
    {
        if (auto it = m_addedByContent.find(piece); it != m_addedByContent.end())
            return m_added[it->second].id;
        if (auto it = m_vocab.find(piece); it != m_vocab.end())
            return it->second;
        return std::nullopt;
    }

    bool isSpecial(int32_t id) const override
    {
        auto it = m_addedById.find(id);
        return it != m_addedById.end() && m_added[it->second].special;
    }

    std::string kind() const override { return "bpe"; }

private:
    struct Merge {
        int32_t rank;
        int32_t id;
    };

    static uint64_t pairKey(int32_t a, int32_t b)
    {
        return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
    }

    const Merge* findMerge(int32_t a, int32_t b) const
    {
        auto it = m_merges.find(pairKey(a, b));
        return it == m_merges.end() ? nullptr : &it->second;
    }

    // forDecoding: normalized added tokens in their normalized form, as tokenizers >= 0.23 decodes
    // them (so an NFC tokenizer's added "cafe\u0301" decodes through ByteLevel as "caf\uFFFD").
    const std::string* tokenOf(int32_t id, bool forDecoding = false) const
    {
        if (auto it = m_addedById.find(id); it != m_addedById.end())
            return forDecoding ? &m_added[it->second].decodeForm : &m_added[it->second].content;
        return m_hasToken[id] ? &m_idToToken[id] : nullptr;
    }

    void loadModel(const Json& root)
    {
        const Json* model = member(root, "model");
        if (!model || !model->is_object())
            fail(m_path, ": key 'model' missing");
        const std::string type = typeOf(*model);
        if (!type.empty() && type != "BPE")
            fail(m_path, ": model.type is '", type, "'; only byte-level BPE tokenizer.json ",
                 "files are supported (not WordPiece, Unigram or WordLevel)");
        const Json* vocab = member(*model, "vocab");
        if (!vocab || !vocab->is_object())
            fail(m_path, ": key 'model.vocab' missing or not an object");
        const Json* merges = member(*model, "merges");
        if (!merges || !merges->is_array())
            fail(m_path, ": key 'model.merges' missing or not an array");
        for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
            const Json* v = member(*model, key);
            if (v && v->is_string() && !v->get<std::string>().empty())
                fail(m_path, ": model.", key, " '", v->get<std::string>(),
                     "' is not supported by byte-level BPE");
        }
        m_ignoreMerges = flag(*model, "ignore_merges", false);
        m_fuseUnk = flag(*model, "fuse_unk", false);

        m_vocab.reserve(vocab->size());
        int32_t maxId = -1;
        for (auto it = vocab->begin(); it != vocab->end(); ++it) {
            if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
                it.value().get<int64_t>() > INT32_MAX)
                fail(m_path, ": model.vocab['", it.key(),
                     "'] is not a valid id: ", it.value().dump());
            const auto id = it.value().get<int32_t>();
            m_vocab.emplace(it.key(), id);
            maxId = std::max(maxId, id);
        }
        m_idToToken.resize(static_cast<size_t>(maxId + 1));
        m_hasToken.assign(m_idToToken.size(), false);
        for (const auto& [token, id] : m_vocab) {
            m_idToToken[id] = token;
            m_hasToken[id] = true;
        }
        for (int b = 0; b < 256; ++b) {
            auto it = m_vocab.find(byteLevel().byteToUtf8[b]);
            m_byteIds[b] = it == m_vocab.end() ? -1 : it->second;
        }
        if (const Json* unk = member(*model, "unk_token"); unk && unk->is_string()) {
            auto it = m_vocab.find(unk->get<std::string>());
            if (it == m_vocab.end())
                fail(m_path, ": model.unk_token '", unk->get<std::string>(),
                     "' is not in model.vocab");
            m_unkId = it->second;
        }

        m_merges.reserve(merges->size());
        std::string joined;
        for (size_t rank = 0; rank < merges->size(); ++rank) {
            const Json& entry = (*merges)[rank];
            std::string a, b;
            if (entry.is_string()) { // "a b"
                const std::string& s = entry.get_ref<const std::string&>();
                const size_t space = s.find(' ');
                if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
                    fail(m_path, ": model.merges[", rank, "] '", s,
                         "' is not two tokens separated by a space");
                a = s.substr(0, space);
                b = s.substr(space + 1);
            } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() &&
                       entry[1].is_string()) { // ["a", "b"]
                a = entry[0].get<std::string>();
                b = entry[1].get<std::string>();
            } else {
                fail(m_path, ": model.merges[", rank,
                     "] is neither \"a b\" nor [\"a\", \"b\"]: ", entry.dump());
            }
            joined = a + b;
            auto ia = m_vocab.find(a), ib = m_vocab.find(b), ij = m_vocab.find(joined);
            for (auto [it, token] : {std::pair{ia, &a}, std::pair{ib, &b}, std::pair{ij, &joined}})
                if (it == m_vocab.end())
                    fail(m_path, ": model.merges[", rank, "] refers to token '", *token,
                         "' which is not in model.vocab");
            // A repeated pair keeps its last rank, as tokenizers' HashMap collect does.
            m_merges[pairKey(ia->second, ib->second)] = {static_cast<int32_t>(rank), ij->second};
        }
    }

    void loadAddedTokens(const Json& root)
    {
        const Json* list = member(root, "added_tokens");
        if (!list)
            return;
        if (!list->is_array())
            fail(m_path, ": key 'added_tokens' is not an array");
        for (size_t i = 0; i < list->size(); ++i) {
            const Json& t = (*list)[i];
            const Json* id = member(t, "id");
            const Json* content = member(t, "content");
            if (!id || !id->is_number_integer() || id->get<int64_t>() < 0 || !content ||
                !content->is_string())
                fail(m_path, ": added_tokens[", i,
                     "] needs an integer 'id' and a string 'content'");
            AddedToken token;
            token.id = id->get<int32_t>();
            token.content = toValidUtf8(content->get<std::string>());
            token.special = flag(t, "special", false);
            token.singleWord = flag(t, "single_word", false);
            token.lstrip = flag(t, "lstrip", false);
            token.rstrip = flag(t, "rstrip", false);
            token.normalized = flag(t, "normalized", !token.special);
            if (static_cast<size_t>(token.id) >= m_idToToken.size()) {
                m_idToToken.resize(static_cast<size_t>(token.id) + 1);
                m_hasToken.resize(m_idToToken.size(), false);
            }
            m_addedById[token.id] = m_added.size();
            m_addedByContent[token.content] = m_added.size();
            if (token.special)
                m_specialContents.insert(token.content);
            m_added.push_back(std::move(token));
        }
    }

    void loadNormalizer(const Json& root)
    {
        const Json* n = member(root, "normalizer");
        if (n)
            addNormalizer(*n);
        // Normalized added tokens are matched in their normalized form.
        for (size_t i = 0; i < m_added.size(); ++i) {
            std::string key = m_added[i].content;
            if (m_added[i].normalized)
                for (NormalForm form : m_normalizers)
                    key = normalizeUnicode(key, form);
            m_added[i].decodeForm = key;
            (m_added[i].normalized ? m_trieNormalized : m_trieRaw).insert(key, i);
        }
    }

    void addNormalizer(const Json& n)
    {
        const std::string type = typeOf(n);
        if (type == "Sequence") {
            const Json* list = member(n, "normalizers");
            if (list && list->is_array())
                for (const Json& child : *list)
                    addNormalizer(child);
        } else if (type == "NFC") {
            m_normalizers.push_back(NormalForm::NFC);
        } else if (type == "NFD") {
            m_normalizers.push_back(NormalForm::NFD);
        } else if (type == "NFKC") {
            m_normalizers.push_back(NormalForm::NFKC);
        } else if (type == "NFKD") {
            m_normalizers.push_back(NormalForm::NFKD);
        } else {
            fail(m_path, ": normalizer '", type.empty() ? n.dump() : type,
                 "' is not supported (byte-level BPE supports none, NFC, NFD, NFKC, NFKD)");
        }
    }

    void loadPreTokenizer(const Json& root)
    {
        const Json* p = member(root, "pre_tokenizer");
        if (!p)
            fail(m_path, ": pre_tokenizer is null; only byte-level BPE (a ByteLevel ",
                 "pre-tokenizer) is supported");
        addPreTokenizer(*p);
        if (!m_hasByteLevel)
            fail(m_path, ": pre_tokenizer has no ByteLevel step; only byte-level BPE is supported");
    }

    void addPreTokenizer(const Json& p)
    {
        const std::string type = typeOf(p);
        if (m_hasByteLevel)
            fail(m_path, ": pre_tokenizer '", type, "' after ByteLevel is not supported");
        if (type == "Sequence") {
            const Json* list = member(p, "pretokenizers");
            if (!list || !list->is_array())
                fail(m_path, ": pre_tokenizer Sequence without a 'pretokenizers' array");
            for (const Json& child : *list)
                addPreTokenizer(child);
        } else if (type == "ByteLevel") {
            m_hasByteLevel = true;
            SplitStep step;
            step.addPrefixSpace = flag(p, "add_prefix_space", true);
            if (flag(p, "use_regex", true))
                step.regex = std::make_shared<Regex>(kGpt2Pattern, false, m_path);
            m_steps.push_back(std::move(step));
        } else if (type == "Split") {
            SplitStep step;
            const Json* pattern = member(p, "pattern");
            const Json* regex = pattern ? member(*pattern, "Regex") : nullptr;
            const Json* literal = pattern ? member(*pattern, "String") : nullptr;
            if (regex && regex->is_string())
                step.regex = std::make_shared<Regex>(regex->get<std::string>(), false, m_path);
            else if (literal && literal->is_string())
                step.regex = std::make_shared<Regex>(literal->get<std::string>(), true, m_path);
            else
                fail(m_path,
                     ": pre_tokenizer Split needs pattern {\"Regex\": ...} or {\"String\": ...}");
            const Json* behavior = member(p, "behavior");
            const std::string name =
                behavior && behavior->is_string() ? behavior->get<std::string>() : "";
            static const std::unordered_map<std::string, SplitBehavior> behaviors = {
                {"Removed", SplitBehavior::Removed},
                {"Isolated", SplitBehavior::Isolated},
                {"MergedWithPrevious", SplitBehavior::MergedWithPrevious},
                {"MergedWithNext", SplitBehavior::MergedWithNext},
                {"Contiguous", SplitBehavior::Contiguous}};
            auto it = behaviors.find(name);
            if (it == behaviors.end())
                fail(m_path, ": pre_tokenizer Split behavior '", name, "' is not known");
            step.behavior = it->second;
            step.invert = flag(p, "invert", false);
            m_steps.push_back(std::move(step));
        } else if (type == "Digits") {
            SplitStep step; // Rust's char::is_numeric: Nd, Nl, No
            step.regex = std::make_shared<Regex>(
                flag(p, "individual_digits", false) ? "\\p{N}" : "\\p{N}+", false, m_path);
            m_steps.push_back(std::move(step));
        } else {
            fail(m_path, ": pre_tokenizer type '", type.empty() ? p.dump() : type,
                 "' is not supported: only byte-level BPE is (ByteLevel, optionally after Split ",
                 "or Digits), not Metaspace/SentencePiece-style tokenizers");
        }
    }

    // Special ids a post-processor puts around the sequence ("single" template only).
    void addPostProcessor(const Json& p)
    {
        const std::string type = typeOf(p);
        std::vector<int32_t> prefix, suffix;
        if (type == "Sequence") {
            const Json* list = member(p, "processors");
            if (list && list->is_array())
                for (const Json& child : *list)
                    addPostProcessor(child);
            return;
        } else if (type == "ByteLevel") {
            return; // offsets only
        } else if (type == "TemplateProcessing") {
            const Json* single = member(p, "single");
            const Json* specials = member(p, "special_tokens");
            if (!single || !single->is_array())
                fail(m_path, ": post_processor TemplateProcessing without a 'single' template");
            bool seenSequence = false;
            for (const Json& item : *single) {
                if (member(item, "Sequence")) {
                    seenSequence = true;
                    continue;
                }
                const Json* special = member(item, "SpecialToken");
                const Json* name = special ? member(*special, "id") : nullptr;
                if (!name || !name->is_string())
                    fail(m_path, ": post_processor template item ", item.dump(),
                         " is not understood");
                const Json* entry =
                    specials ? member(*specials, name->get<std::string>().c_str()) : nullptr;
                const Json* ids = entry ? member(*entry, "ids") : nullptr;
                if (!ids || !ids->is_array())
                    fail(m_path, ": post_processor.special_tokens has no ids for '",
                         name->get<std::string>(), "'");
                for (const Json& id : *ids)
                    (seenSequence ? suffix : prefix).push_back(id.get<int32_t>());
            }
        } else if (type == "RobertaProcessing" || type == "BertProcessing") {
            const Json* cls = member(p, "cls");
            const Json* sep = member(p, "sep");
            if (!cls || !sep || !cls->is_array() || !sep->is_array() || cls->size() != 2 ||
                sep->size() != 2)
                fail(m_path, ": post_processor ", type, " needs 'cls' and 'sep' as [token, id]");
            prefix.push_back((*cls)[1].get<int32_t>());
            suffix.push_back((*sep)[1].get<int32_t>());
        } else {
            fail(m_path, ": post_processor type '", type, "' is not supported");
        }
        // A later processor wraps what the earlier ones produced.
        m_templatePrefix.insert(m_templatePrefix.begin(), prefix.begin(), prefix.end());
        m_templateSuffix.insert(m_templateSuffix.end(), suffix.begin(), suffix.end());
    }

    void loadPostProcessor(const Json& root)
    {
        if (const Json* p = member(root, "post_processor"))
            addPostProcessor(*p);
        for (int32_t id : m_templatePrefix)
            if (id < 0 || id >= vocabSize())
                fail(m_path, ": post_processor adds id ", id, " outside the vocabulary");
        for (int32_t id : m_templateSuffix)
            if (id < 0 || id >= vocabSize())
                fail(m_path, ": post_processor adds id ", id, " outside the vocabulary");
    }

    void checkDecoder(const Json& root)
    {
        const Json* d = member(root, "decoder");
        if (d && typeOf(*d) != "ByteLevel")
            fail(m_path, ": decoder type '", typeOf(*d),
                 "' is not supported (byte-level BPE decodes with ByteLevel)");
    }

    // BOS/EOS: tokenizer_config.json next to the file decides; without it, the post-processor's
    // first special token, then well-known names.
    void loadSpecialIds()
    {
        bool bosSet = false, eosSet = false;
        const std::filesystem::path configPath =
            std::filesystem::path(m_path).parent_path() / "tokenizer_config.json";
        if (fileExists(configPath.string())) {
            Json config;
            try {
                config = Json::parse(readFile(configPath.string()));
            } catch (const Json::exception& e) {
                fail(configPath.string(), ": not valid JSON (", e.what(), ")");
            }
            auto read = [&](const char* key, std::optional<int32_t>& out) {
                auto it = config.find(key);
                if (it == config.end())
                    return false;
                const Json* content = it->is_object() ? member(*it, "content") : &*it;
                if (content && content->is_string()) {
                    out = pieceToId(content->get<std::string>());
                    if (!out)
                        fail(configPath.string(), ": ", key, " '", content->get<std::string>(),
                             "' is not a token of ", m_path);
                }
                return true;
            };
            bosSet = read("bos_token", m_bosId);
            eosSet = read("eos_token", m_eosId);
        }
        auto firstKnown = [&](std::initializer_list<const char*> names) -> std::optional<int32_t> {
            for (const char* name : names)
                if (auto id = pieceToId(name))
                    return id;
            return std::nullopt;
        };
        if (!bosSet)
            m_bosId = !m_templatePrefix.empty()
                          ? std::optional<int32_t>(m_templatePrefix.front())
                          : firstKnown({"<|begin_of_text|>", "<s>", "<|endoftext|>"});
        if (!eosSet)
            m_eosId = firstKnown(
                {"<|end_of_text|>", "<|endoftext|>", "<|im_end|>", "</s>", "<|eot_id|>"});
    }

    // Text split around added tokens, HF's AddedVocabulary::find_matches.
    std::vector<Segment> splitAdded(std::string_view text, const TokenTrie& trie) const
    {
        std::vector<Segment> out;
        if (trie.empty()) {
            if (!text.empty())
                out.push_back({text});
            return out;
        }
        size_t done = 0; // text before this is in out
        size_t at = 0;
        while (at < text.size()) {
            const auto [token, length] = trie.longestAt(text, at);
            if (token < 0) {
                ++at;
                continue;
            }
            const AddedToken& added = m_added[token];
            size_t start = at, stop = at + length;
            at = stop;
            if (start < done)
                continue; // inside whitespace an rstrip token already took
            if (added.singleWord) {
                size_t len = 0;
                const bool wordBefore =
                    start > 0 && isWordChar(decodeUtf8(text, previousCharStart(text, start), len));
                const bool wordAfter =
                    stop < text.size() && isWordChar(decodeUtf8(text, stop, len));
                if (wordBefore || wordAfter)
                    continue;
            }
            if (added.lstrip) {
                size_t len = 0;
                while (start > done &&
                       isWhiteSpace(decodeUtf8(text, previousCharStart(text, start), len)))
                    start = previousCharStart(text, start);
            }
            if (added.rstrip) {
                size_t len = 0;
                while (stop < text.size() && isWhiteSpace(decodeUtf8(text, stop, len)))
                    stop += len;
                at = stop;
            }
            if (done < start)
                out.push_back({text.substr(done, start - done)});
            out.push_back({text.substr(start, stop - start), token});
            done = stop;
        }
        if (done < text.size())
            out.push_back({text.substr(done)});
        return out;
    }

    // Text without added tokens -> pre-tokens -> BPE ids.
    void encodeOrdinary(std::string_view text, std::vector<int32_t>& ids) const
    {
        std::vector<std::string> pieces{std::string(text)}, next;
        for (const SplitStep& step : m_steps) {
            next.clear();
            for (const std::string& piece : pieces)
                splitPiece(step, piece, next);
            pieces.swap(next);
        }
        for (const std::string& piece : pieces)
            encodeWord(piece, ids);
    }

    // BPE of one pre-token (raw bytes; the vocabulary holds their ByteLevel characters).
    void encodeWord(const std::string& word, std::vector<int32_t>& ids) const
    {
        if (m_ignoreMerges) { // Llama-3: a pre-token that is itself a token is not merged
            if (auto it = m_vocab.find(byteLevelEncode(word)); it != m_vocab.end()) {
                ids.push_back(it->second);
                return;
            }
        }
        constexpr size_t kCacheableLength = 256; // bytes
        if (word.size() < kCacheableLength) {
            std::lock_guard lock(m_cacheMutex);
            if (auto it = m_cache.find(word); it != m_cache.end()) {
                ids.insert(ids.end(), it->second.begin(), it->second.end());
                return;
            }
        }
        const std::vector<int32_t> merged = mergeWord(word);
        ids.insert(ids.end(), merged.begin(), merged.end());
        if (word.size() < kCacheableLength) {
            std::lock_guard lock(m_cacheMutex);
            if (m_cache.size() >= 65536)
                m_cache.clear();
            m_cache.emplace(word, merged);
        }
    }

    // Rank-ordered merging over a linked list of symbols with a priority queue (lowest rank first,
    // then leftmost), as tokenizers' Word::merge_all does.
    std::vector<int32_t> mergeWord(const std::string& word) const
    {
        struct Symbol {
            int32_t id;
            int32_t prev, next;
            bool alive;
        };
        std::vector<Symbol> symbols;
        symbols.reserve(word.size());
        bool pendingUnk = false;
        auto pushSymbol = [&](int32_t id) {
            const auto n = static_cast<int32_t>(symbols.size());
            symbols.push_back({id, n - 1, -1, true});
            if (n > 0)
                symbols[n - 1].next = n;
        };
        for (unsigned char b : word) {
            const int32_t id = m_byteIds[b];
            if (id >= 0) {
                pendingUnk = false;
                pushSymbol(id);
            } else if (m_unkId) { // a byte the vocabulary lacks; without unk_token it is dropped
                if (!(pendingUnk && m_fuseUnk))
                    pushSymbol(*m_unkId);
                pendingUnk = true;
            }
        }
        struct Candidate {
            int32_t rank, pos, id;
            bool operator<(const Candidate& o) const // priority_queue pops the largest
            {
                return rank != o.rank ? rank > o.rank : pos > o.pos;
            }
        };
        std::priority_queue<Candidate> queue;
        for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i)
            if (const Merge* m = findMerge(symbols[i].id, symbols[i + 1].id))
                queue.push({m->rank, i, m->id});
        while (!queue.empty()) {
            const Candidate top = queue.top();
            queue.pop();
            Symbol& left = symbols[top.pos];
            if (!left.alive || left.next < 0)
                continue;
            Symbol& right = symbols[left.next];
            const Merge* m = findMerge(left.id, right.id);
            if (!m || m->id != top.id)
                continue; // stale: one side has merged since
            left.id = top.id;
            right.alive = false;
            left.next = right.next;
            if (left.next >= 0)
                symbols[left.next].prev = top.pos;
            if (left.prev >= 0)
                if (const Merge* p = findMerge(symbols[left.prev].id, left.id))
                    queue.push({p->rank, left.prev, p->id});
            if (left.next >= 0)
                if (const Merge* n = findMerge(left.id, symbols[left.next].id))
                    queue.push({n->rank, top.pos, n->id});
        }
        std::vector<int32_t> out;
        for (const Symbol& s : symbols)
            if (s.alive)
                out.push_back(s.id);
        return out;
    }

    std::string m_path;
    std::unordered_map<std::string, int32_t> m_vocab;
    std::vector<std::string> m_idToToken; // model vocabulary by id (added tokens: m_added)
    std::vector<bool> m_hasToken;
    std::unordered_map<uint64_t, Merge> m_merges; // (left id, right id) -> rank, merged id
    std::array<int32_t, 256> m_byteIds{}; // id of each byte's ByteLevel character, -1 if none
    std::optional<int32_t> m_unkId;
    bool m_fuseUnk = false;
    bool m_ignoreMerges = false;

    std::vector<AddedToken> m_added;
    std::unordered_map<int32_t, size_t> m_addedById;
    std::unordered_map<std::string, size_t> m_addedByContent;
    std::unordered_set<std::string> m_specialContents;
    TokenTrie m_trieRaw;        // added tokens with normalized=false
    TokenTrie m_trieNormalized; // added tokens with normalized=true, in normalized form

    std::vector<NormalForm> m_normalizers;
    std::vector<SplitStep> m_steps;
    bool m_hasByteLevel = false;
    std::vector<int32_t> m_templatePrefix, m_templateSuffix;

    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<std::string, std::vector<int32_t>> m_cache; // pre-token -> ids
};

} // namespace

std::unique_ptr<Tokenizer> loadBpeTokenizer(const std::string& tokenizerJson)
{
    if (!fileExists(tokenizerJson))
        fail(tokenizerJson, ": not found");
    return std::make_unique<BpeTokenizer>(tokenizerJson);
}

} // namespace tb
