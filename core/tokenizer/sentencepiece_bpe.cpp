// sentencepiece BPE encoding as libsentencepiece 0.1.97 does it (normalizer.cc, bpe_model.cc,
// sentencepiece_processor.cc), for identity-normalized models, with a per-thread word memory.
#include "tokenizer/sentencepiece_bpe.h"

#include "tokenizer/proto_wire.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

namespace tb {

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, sentencepiece's space
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the valid UTF-8 character at s[0] (s non-empty), or 0 when it is malformed:
// sentencepiece's DecodeUTF8 (shortest form, no surrogates, at most U+10FFFF).
size_t validCharLength(const unsigned char* s, size_t n)
{
    const unsigned c = s[0];
    auto trail = [&](size_t i) { return (s[i] & 0xC0) == 0x80; };
    if (c < 0x80)
        return 1;
    if (n >= 2 && (c & 0xE0) == 0xC0) {
        const unsigned cp = ((c & 0x1F) << 6) | (s[1] & 0x3F);
        return trail(1) && cp >= 0x80 ? 2 : 0;
    }
    if (n >= 3 && (c & 0xF0) == 0xE0) {
        const unsigned cp = ((c & 0x0F) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3F);
        return trail(1) && trail(2) && cp >= 0x800 && (cp < 0xD800 || cp >= 0xE000) ? 3 : 0;
    }
    if (n >= 4 && (c & 0xF8) == 0xF0) {
        const unsigned cp =
            ((c & 0x07) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3F);
        return trail(1) && trail(2) && trail(3) && cp >= 0x10000 && cp <= 0x10FFFF ? 4 : 0;
    }
    return 0;
}

// The length of the character at s[0] by its lead byte alone, at most n (sentencepiece's
// OneCharLen, used on normalized text, which is valid UTF-8).
size_t charLength(const char* s, size_t n)
{
    static constexpr unsigned char kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return std::min<size_t>(n, kLen[static_cast<unsigned char>(*s) >> 4]);
}

bool startsWithSpace(std::string_view s, size_t at)
{
    return s.size() - at >= 3 && std::memcmp(s.data() + at, kSpace.data(), 3) == 0;
}

// The options read from the ModelProto that decide how text is encoded.
struct ModelOptions {
    int modelType = 1;  // trainer_spec.model_type: UNIGRAM = 1, BPE = 2
    bool byteFallback = false, whitespaceAsSuffix = false;
    bool hasCharsmap = false, addDummyPrefix = true, removeExtraWhitespaces = true,
         escapeWhitespaces = true;
};

bool readOptions(std::string_view proto, ModelOptions& o)
{
    bool ok = true;
    const bool parsed = protowire::forEachField(proto, [&](const protowire::Field& f) {
        if (f.wire != 2)
            return;
        if (f.number == 2)  // trainer_spec
            ok = ok && protowire::forEachField(f.bytes, [&](const protowire::Field& g) {
                     if (g.number == 3 && g.wire == 0)
                         o.modelType = static_cast<int>(g.value);
                     else if (g.number == 35 && g.wire == 0)
                         o.byteFallback = g.value != 0;
                     else if (g.number == 24 && g.wire == 0)
                         o.whitespaceAsSuffix = g.value != 0;
                 });
        else if (f.number == 3)  // normalizer_spec
            ok = ok && protowire::forEachField(f.bytes, [&](const protowire::Field& g) {
                     if (g.number == 2 && g.wire == 2)
                         o.hasCharsmap = !g.bytes.empty();
                     else if (g.number == 3 && g.wire == 0)
                         o.addDummyPrefix = g.value != 0;
                     else if (g.number == 4 && g.wire == 0)
                         o.removeExtraWhitespaces = g.value != 0;
                     else if (g.number == 5 && g.wire == 0)
                         o.escapeWhitespaces = g.value != 0;
                 });
    });
    return parsed && ok;
}

// Whether `piece` has a "▁" right after another character (a piece that would span the boundary
// before a word's first "▁").
bool spansWordStart(std::string_view piece)
{
    bool prevOther = false;
    for (size_t i = 0; i < piece.size();) {
        if (startsWithSpace(piece, i)) {
            if (prevOther)
                return true;
            i += 3;
            continue;
        }
        prevOther = true;
        i += charLength(piece.data() + i, piece.size() - i);
    }
    return false;
}

std::atomic<uint64_t> g_serial{0};

// FNV-1a over 8-byte words: piece lookups hash short strings by the million.
size_t hashBytes(std::string_view s) noexcept
{
    uint64_t h = 0xcbf29ce484222325ull ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        uint64_t w;
        std::memcpy(&w, s.data() + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    h = (h ^ tail) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h ^ (h >> 32));
}

// A thread's memory of word ids for one encoder at a time: words (keys) to spans of `ids`.
struct WordMemo {
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const noexcept { return hashBytes(s); }
    };
    static constexpr size_t kMaxWords = 1 << 17;
    static constexpr size_t kMaxWordBytes = 64;
    uint64_t owner = 0;
    std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, Hash, std::equal_to<>> words;
    std::vector<int32_t> ids;
    void reset(uint64_t serial)
    {
        owner = serial;
        words.clear();
        ids.clear();
    }
};

}  // namespace

struct SentencePieceBpe::Scratch {
    struct Symbol {
        uint32_t start, size;
        int32_t prev, next;
    };
    struct Pair {
        float score;
        int32_t left, right;
        uint32_t size;
    };
    std::vector<Symbol> symbols;
    std::vector<Pair> agenda;
    std::string normalized;
    std::vector<int32_t> word;
    WordMemo memo;
};

size_t SentencePieceBpe::Hash::operator()(std::string_view s) const noexcept
{
    return hashBytes(s);
}

std::unique_ptr<SentencePieceBpe>
SentencePieceBpe::create(const std::vector<SentencePieceEntry>& pieces, int32_t unkId,
                         std::string_view serializedProto, std::string* why)
{
    auto refuse = [&](const char* reason) {
        if (why)
            *why = reason;
        return std::unique_ptr<SentencePieceBpe>();
    };
    ModelOptions o;
    if (!readOptions(serializedProto, o))
        return refuse("the model proto does not parse");
    if (o.modelType != 2)
        return refuse("not a BPE model");
    if (o.hasCharsmap)
        return refuse("a normalization charsmap");
    if (o.removeExtraWhitespaces)
        return refuse("remove_extra_whitespaces");
    if (!o.escapeWhitespaces)
        return refuse("unescaped whitespace");
    if (o.whitespaceAsSuffix)
        return refuse("treat_whitespace_as_suffix");
    if (unkId < 0 || unkId >= static_cast<int32_t>(pieces.size()))
        return refuse("no <unk> piece");
    std::unique_ptr<SentencePieceBpe> bpe(new SentencePieceBpe);
    bpe->m_unkId = unkId;
    bpe->m_byteFallback = o.byteFallback;
    bpe->m_addDummyPrefix = o.addDummyPrefix;
    std::fill(std::begin(bpe->m_byteIds), std::end(bpe->m_byteIds), unkId);
    using Type = SentencePieceEntry::Type;
    std::vector<std::pair<size_t, size_t>> spans;  // of normal pieces in the arena
    std::vector<int32_t> spanIds;
    bpe->m_scores.resize(pieces.size());
    bool spanning = false;
    for (size_t id = 0; id < pieces.size(); ++id) {
        const SentencePieceEntry& e = pieces[id];
        bpe->m_scores[id] = e.score;
        if (e.type == Type::UserDefined || e.type == Type::Unused)
            return refuse("user-defined or unused pieces");
        if (e.type == Type::Byte) {
            unsigned value = 0;
            if (e.piece.size() == 6 && std::sscanf(e.piece.c_str(), "<0x%2X>", &value) == 1)
                bpe->m_byteIds[value & 0xFF] = static_cast<int32_t>(id);
        } else if (e.type == Type::Normal) {
            spans.emplace_back(bpe->m_arena.size(), e.piece.size());
            spanIds.push_back(static_cast<int32_t>(id));
            bpe->m_arena += e.piece;
            spanning = spanning || spansWordStart(e.piece);
        }
    }
    bpe->m_pieces.reserve(spans.size());
    for (size_t i = 0; i < spans.size(); ++i)
        bpe->m_pieces.emplace(
            std::string_view(bpe->m_arena).substr(spans[i].first, spans[i].second),
            spanIds[i]);  // the first of equal pieces wins, as in sentencepiece
    bpe->m_splitWords = !spanning;
    bpe->m_serial = ++g_serial;
    return bpe;
}

int32_t SentencePieceBpe::find(std::string_view piece) const
{
    const auto it = m_pieces.find(piece);
    return it == m_pieces.end() ? -1 : it->second;
}

void SentencePieceBpe::appendUnknown(std::string_view symbol, std::vector<int32_t>& out,
                                     size_t start) const
{
    if (m_byteFallback) {
        for (const char c : symbol)
            out.push_back(m_byteIds[static_cast<unsigned char>(c)]);
    } else if (out.size() == start || out.back() != m_unkId) {
        out.push_back(m_unkId);  // a run of unknown pieces is one <unk>
    }
}

void SentencePieceBpe::encodeSegment(std::string_view text, std::vector<int32_t>& out,
                                     Scratch& s) const
{
    const size_t start = out.size();
    auto& symbols = s.symbols;
    auto& agenda = s.agenda;
    symbols.clear();
    agenda.clear();
    for (size_t at = 0; at < text.size();) {
        const auto n = static_cast<uint32_t>(charLength(text.data() + at, text.size() - at));
        const auto index = static_cast<int32_t>(symbols.size());
        symbols.push_back({static_cast<uint32_t>(at), n, index - 1, -1});
        at += n;
        if (at < text.size())
            symbols.back().next = index + 1;
    }
    // Higher score first, then the leftmost: sentencepiece's SymbolPairComparator.
    auto lower = [](const Scratch::Pair& a, const Scratch::Pair& b) {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    };
    auto maybeAdd = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0)
            return;
        const uint32_t size = symbols[left].size + symbols[right].size;
        const int32_t id = find(text.substr(symbols[left].start, size));
        if (id < 0)
            return;
        agenda.push_back({m_scores[static_cast<size_t>(id)], left, right, size});
        std::push_heap(agenda.begin(), agenda.end(), lower);
    };
    for (size_t i = 1; i < symbols.size(); ++i)
        maybeAdd(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    while (!agenda.empty()) {
        std::pop_heap(agenda.begin(), agenda.end(), lower);
        const Scratch::Pair top = agenda.back();
        agenda.pop_back();
        Scratch::Symbol& left = symbols[top.left];
        Scratch::Symbol& right = symbols[top.right];
        if (left.size == 0 || right.size == 0 || left.size + right.size != top.size)
            continue;  // no longer available
        left.size += right.size;
        left.next = right.next;
        if (right.next >= 0)
            symbols[right.next].prev = top.left;
        right.size = 0;
        maybeAdd(left.prev, top.left);
        maybeAdd(top.left, left.next);
    }
    for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
        const std::string_view piece = text.substr(symbols[i].start, symbols[i].size);
        const int32_t id = find(piece);
        if (id >= 0)
            out.push_back(id);
        else
            appendUnknown(piece, out, start);
    }
}

void SentencePieceBpe::encode(std::string_view text, std::vector<int32_t>& out) const
{
    if (text.empty())
        return;
    thread_local Scratch s;
    const size_t start = out.size();
    // Normalize: a dummy "▁" prefix, spaces as "▁", malformed UTF-8 bytes as U+FFFD each.
    std::string& norm = s.normalized;
    norm.clear();
    if (m_addDummyPrefix)
        norm += kSpace;
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    for (size_t at = 0; at < text.size();) {
        const unsigned char c = bytes[at];
        if (c == ' ') {
            norm += kSpace;
            ++at;
        } else if (c < 0x80) {
            norm += static_cast<char>(c);
            ++at;
        } else if (const size_t n = validCharLength(bytes + at, text.size() - at)) {
            norm.append(text.data() + at, n);
            at += n;
        } else {
            norm += kReplacement;
            ++at;
        }
    }
    const std::string_view all(norm);
    if (!m_splitWords) {
        encodeSegment(all, out, s);
        return;
    }
    WordMemo& memo = s.memo;
    if (memo.owner != m_serial || memo.words.size() >= WordMemo::kMaxWords)
        memo.reset(m_serial);
    // Words: a run of "▁"s and the other characters up to the next "▁".
    for (size_t begin = 0; begin < all.size();) {
        size_t end = begin;
        while (startsWithSpace(all, end))
            end += 3;
        while (end < all.size() && !startsWithSpace(all, end))
            end += charLength(all.data() + end, all.size() - end);
        const std::string_view word = all.substr(begin, end - begin);
        begin = end;
        std::vector<int32_t>& ids = s.word;
        ids.clear();
        const auto hit = memo.words.find(word);
        if (hit != memo.words.end()) {
            ids.assign(memo.ids.begin() + hit->second.first,
                       memo.ids.begin() + hit->second.first + hit->second.second);
        } else {
            encodeSegment(word, ids, s);
            if (word.size() <= WordMemo::kMaxWordBytes) {
                memo.words.emplace(std::string(word),
                                   std::make_pair(static_cast<uint32_t>(memo.ids.size()),
                                                  static_cast<uint32_t>(ids.size())));
                memo.ids.insert(memo.ids.end(), ids.begin(), ids.end());
            }
        }
        // A word that starts with <unk> after one that ended with it: one <unk> for the run.
        const bool joinUnknown = !m_byteFallback && !ids.empty() && ids.front() == m_unkId &&
                                 out.size() > start && out.back() == m_unkId;
        out.insert(out.end(), ids.begin() + (joinUnknown ? 1 : 0), ids.end());
    }
}

}  // namespace tb
