// Token-budgeted document chunking: the text is cut into sentence units (encoded once each), packed
// greedily into chunks, refined into words or hard pieces only where a cut needs them, and every
// final chunk is re-encoded so its count is exact.
#include "data/ingest/chunker.h"

#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/utf8.h"

#include <deque>

namespace tb {
namespace {

// How good a place to cut the end of a unit is; higher is better.
enum class Boundary : uint8_t { Hard, Word, Sentence, Paragraph, End };
// How finely a unit is cut already: a sentence can become words, a word hard pieces.
enum class Level : uint8_t { Sentence, Word, Piece };

struct Unit {
    size_t begin = 0, end = 0;  // bytes; [begin, end) includes the whitespace after the unit
    int32_t tokens = 0;  // encode of the unit alone (sums of these approximate a chunk's count)
    Boundary after = Boundary::Hard;
    Level level = Level::Sentence;
};

bool isSpace(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

class Chunker {
public:
    Chunker(const Tokenizer& tokenizer, std::string_view text, const ChunkOptions& options)
        : m_tok(tokenizer), m_text(text), m_opt(options),
          m_capBytes(std::max<size_t>(1024, static_cast<size_t>(options.maxTokens) * 4)),
          m_pieceTokens(std::max(6, options.maxTokens / 8))
    {
        while (m_cursor < m_text.size() && isSpace(m_text[m_cursor]))
            ++m_cursor;
    }

    std::vector<TextChunk> run();

private:
    int32_t count(size_t begin, size_t end) const
    {
        return static_cast<int32_t>(
            m_tok.encode(std::string(m_text.substr(begin, end - begin)), false).size());
    }
    // A unit's tokens as it adds to a chunk: its text without the trailing whitespace (a space
    // before the next unit merges into that unit's first token, as the dummy prefix does when it is
    // encoded alone), plus one per line break.
    int32_t unitTokens(size_t begin, size_t end) const
    {
        int32_t breaks = 0;
        while (end > begin && isSpace(m_text[end - 1]))
            breaks += m_text[--end] == '\n';
        return count(begin, end) + breaks;
    }
    bool nextSentence(Unit& unit);
    bool endsSentence(size_t begin, size_t wsBegin) const;
    std::vector<Unit> splitWords(const Unit& unit) const;
    std::vector<Unit> splitPieces(const Unit& unit) const;
    size_t refine(size_t index);
    // Index of the last unit of the next chunk among window[firstNew..limit], or -1 when
    // window[limit + 1] should be refined first.
    int chooseEnd(int limit, bool takeAll) const;
    size_t chooseNextStart(size_t& last);

    const Tokenizer& m_tok;
    std::string_view m_text;
    ChunkOptions m_opt;
    size_t m_capBytes;      // a sentence longer than this is cut at whitespace (bounds refine cost)
    int32_t m_pieceTokens;  // tokens per hard piece of an over-long word
    size_t m_cursor = 0;    // where the next sentence starts
    std::deque<Unit> m_window;  // units from the current chunk's start on
    size_t m_firstNew = 0;      // window units before this one repeat the previous chunk (overlap)
};

// Whether the text before the whitespace at wsBegin ends a sentence: . ! ? possibly followed by
// closing quotes or brackets (ASCII, or ” ’ » in UTF-8).
bool Chunker::endsSentence(size_t begin, size_t wsBegin) const
{
    size_t i = wsBegin;
    while (i > begin) {
        const char c = m_text[i - 1];
        if (c == '"' || c == '\'' || c == ')' || c == ']') {
            --i;
        } else if (i - begin >= 3 && m_text.substr(i - 3, 3) == "\xE2\x80\x9D") {  // ”
            i -= 3;
        } else if (i - begin >= 3 && m_text.substr(i - 3, 3) == "\xE2\x80\x99") {  // ’
            i -= 3;
        } else if (i - begin >= 2 && m_text.substr(i - 2, 2) == "\xC2\xBB") {  // »
            i -= 2;
        } else {
            return c == '.' || c == '!' || c == '?';
        }
    }
    return false;
}

bool Chunker::nextSentence(Unit& unit)
{
    const size_t n = m_text.size();
    const size_t p = m_cursor;
    if (p >= n)
        return false;
    size_t lastWordEnd = 0;  // end of the last whitespace run inside this unit (0: none yet)
    size_t i = p;
    auto emit = [&](size_t end, Boundary after) {
        unit = Unit{p, end, unitTokens(p, end), after, Level::Sentence};
        m_cursor = end;
        return true;
    };
    while (i < n) {
        if (!isSpace(m_text[i])) {
            ++i;
            if (i - p >= m_capBytes && i < n && !isSpace(m_text[i])) {
                if (lastWordEnd > p)
                    return emit(lastWordEnd, Boundary::Word);
                size_t cut = utf8Floor(m_text, i);
                if (cut <= p)
                    cut = i;
                return emit(cut, Boundary::Hard);
            }
            continue;
        }
        size_t j = i;
        int newlines = 0;
        while (j < n && isSpace(m_text[j]))
            newlines += m_text[j++] == '\n';
        if (j == n)
            return emit(n, Boundary::End);
        if (newlines >= 2)
            return emit(j, Boundary::Paragraph);
        if (endsSentence(p, i))
            return emit(j, Boundary::Sentence);
        lastWordEnd = j;
        i = j;
    }
    return emit(n, Boundary::End);
}

std::vector<Unit> Chunker::splitWords(const Unit& unit) const
{
    std::vector<Unit> words;
    size_t i = unit.begin;
    while (i < unit.end) {
        size_t j = i;
        while (j < unit.end && !isSpace(m_text[j]))
            ++j;
        while (j < unit.end && isSpace(m_text[j]))
            ++j;
        words.push_back(Unit{i, j, 0, j == unit.end ? unit.after : Boundary::Word, Level::Word});
        i = j;
    }
    if (words.size() > 1)
        for (Unit& w : words)
            w.tokens = unitTokens(w.begin, w.end);
    return words;
}

std::vector<Unit> Chunker::splitPieces(const Unit& unit) const
{
    std::vector<Unit> pieces;
    size_t s = unit.begin;
    while (s < unit.end) {
        size_t lo = s + 1;  // at least one character
        while (lo < unit.end && !isUtf8Lead(m_text[lo]))
            ++lo;
        size_t hi = unit.end;
        if (count(s, hi) > m_pieceTokens) {
            // Largest character boundary e in [lo, hi) with count(s, e) <= m_pieceTokens.
            while (hi - lo > 1) {
                size_t mid = utf8Floor(m_text, lo + (hi - lo) / 2);
                if (mid <= lo)
                    break;
                if (count(s, mid) <= m_pieceTokens)
                    lo = mid;
                else
                    hi = mid;
            }
            hi = lo;
        }
        pieces.push_back(Unit{s, hi, unitTokens(s, hi),
                              hi == unit.end ? unit.after : Boundary::Hard, Level::Piece});
        s = hi;
    }
    return pieces;
}

size_t Chunker::refine(size_t index)
{
    Unit unit = m_window[index];
    std::vector<Unit> parts;
    if (unit.level == Level::Sentence)
        parts = splitWords(unit);
    if (unit.level != Level::Piece && parts.size() < 2)
        parts = splitPieces(unit);
    if (parts.size() < 2) {
        m_window[index].level = Level::Piece;  // nothing finer: do not try again
        return 0;
    }
    m_window.erase(m_window.begin() + static_cast<std::ptrdiff_t>(index));
    m_window.insert(m_window.begin() + static_cast<std::ptrdiff_t>(index), parts.begin(),
                    parts.end());
    return parts.size();
}

int Chunker::chooseEnd(int limit, bool takeAll) const
{
    if (takeAll)
        return limit;
    std::vector<int64_t> prefix(static_cast<size_t>(limit) + 1);
    int64_t sum = 0;
    for (int i = 0; i <= limit; ++i)
        prefix[i] = sum += m_window[i].tokens;
    const int64_t minFill = m_opt.maxTokens / 2;
    const int first = static_cast<int>(m_firstNew);
    for (Boundary b : {Boundary::Paragraph, Boundary::Sentence, Boundary::Word, Boundary::Hard})
        for (int j = limit; j >= first; --j)
            if (m_window[j].after >= b && prefix[j] >= minFill)
                return j;
    // No cut leaves the chunk half full: cut the unit that did not fit more finely, if it can be.
    const size_t next = static_cast<size_t>(limit) + 1;
    if (next < m_window.size() && m_window[next].level != Level::Piece)
        return -1;
    for (Boundary b : {Boundary::Paragraph, Boundary::Sentence, Boundary::Word})
        for (int j = limit; j >= first; --j)
            if (m_window[j].after >= b)
                return j;
    return limit;
}

// After a chunk made of window[0..last]: the index of the unit the next chunk starts at (>= 1, so
// chunks always advance), about overlapTokens before the chunk's end. May refine the chunk's tail
// into words (updating `last`).
size_t Chunker::chooseNextStart(size_t& last)
{
    const int64_t want = m_opt.overlapTokens;
    if (want <= 0)
        return last + 1;
    while (true) {
        // Smallest start whose suffix fits the overlap.
        size_t start = last + 1;
        int64_t sum = 0;
        while (start > 1 && sum + m_window[start - 1].tokens <= want)
            sum += m_window[--start].tokens;
        if (sum * 2 < want && start >= 1 && m_window[start - 1].level == Level::Sentence) {
            const size_t added = refine(start - 1);
            if (added > 0) {
                last += added - 1;
                continue;
            }
        }
        // Prefer a sentence start when it keeps at least half of the wanted overlap.
        int64_t suffix = sum;
        for (size_t s = start; s <= last; ++s) {
            if (suffix * 2 < want)
                break;
            if (m_window[s - 1].after >= Boundary::Sentence)
                return s;
            suffix -= m_window[s].tokens;
        }
        return start;
    }
}

std::vector<TextChunk> Chunker::run()
{
    std::vector<TextChunk> chunks;
    const int64_t maxTokens = m_opt.maxTokens;
    bool exhausted = false;
    int64_t prevEnd = -1;
    while (true) {
        int64_t sum = 0;
        for (const Unit& u : m_window)
            sum += u.tokens;
        while (!exhausted && sum <= maxTokens) {
            Unit u;
            if (!nextSentence(u)) {
                exhausted = true;
                break;
            }
            sum += u.tokens;
            m_window.push_back(u);
        }
        if (m_firstNew >= m_window.size())
            break;  // nothing left that the last chunk did not hold
        // The most units that fit by their summed counts.
        int k = -1;
        int64_t fit = 0;
        while (k + 1 < static_cast<int>(m_window.size()) &&
               fit + m_window[k + 1].tokens <= maxTokens)
            fit += m_window[++k].tokens;
        if (k < static_cast<int>(m_firstNew)) {  // nothing new fits next to the overlap
            if (m_firstNew > 0) {
                m_window.erase(m_window.begin(),
                               m_window.begin() + static_cast<std::ptrdiff_t>(m_firstNew));
                m_firstNew = 0;
            } else if (refine(0) == 0) {
                fail("chunkText: internal: a piece of ", m_window[0].tokens,
                     " tokens exceeds maxTokens ", maxTokens);
            }
            continue;
        }
        const int lastIndex = static_cast<int>(m_window.size()) - 1;
        bool restart = false;
        int limit = k;
        TextChunk chunk;
        int j = 0;
        while (true) {
            j = chooseEnd(limit, exhausted && limit == lastIndex);
            if (j < 0) {
                refine(static_cast<size_t>(limit) + 1);
                restart = true;
                break;
            }
            const size_t begin = m_window[0].begin;
            size_t end = m_window[j].end;
            while (end > begin && isSpace(m_text[end - 1]))
                --end;
            chunk.byteBegin = static_cast<int64_t>(begin);
            chunk.byteEnd = static_cast<int64_t>(end);
            chunk.tokens = count(begin, end);
            if (chunk.tokens <= maxTokens)
                break;
            // The joined text encodes to more than the units' sum: end earlier or cut finer.
            if (j > static_cast<int>(m_firstNew)) {
                limit = j - 1;
                continue;
            }
            if (refine(static_cast<size_t>(j)) == 0) {
                if (m_firstNew == 0)
                    fail("chunkText: internal: a piece of ", chunk.tokens,
                         " tokens exceeds maxTokens ", maxTokens);
                m_window.erase(m_window.begin(),
                               m_window.begin() + static_cast<std::ptrdiff_t>(m_firstNew));
                m_firstNew = 0;
            }
            restart = true;
            break;
        }
        if (restart)
            continue;
        chunk.text = std::string(m_text.substr(chunk.byteBegin, chunk.byteEnd - chunk.byteBegin));
        if (prevEnd > chunk.byteBegin)
            chunk.overlapTokens = count(chunk.byteBegin, prevEnd);
        prevEnd = chunk.byteEnd;
        chunks.push_back(std::move(chunk));
        if (exhausted && j == static_cast<int>(m_window.size()) - 1)
            break;
        size_t last = static_cast<size_t>(j);
        const size_t next = chooseNextStart(last);
        m_window.erase(m_window.begin(), m_window.begin() + static_cast<std::ptrdiff_t>(next));
        m_firstNew = last + 1 - next;
    }
    return chunks;
}

}  // namespace

void validateChunkOptions(const ChunkOptions& options)
{
    if (options.maxTokens < 8 || options.maxTokens > (1 << 20))
        fail("chunk options: maxTokens is ", options.maxTokens, "; expected 8 to ", 1 << 20);
    if (options.overlapTokens < 0 || options.overlapTokens * 2 >= options.maxTokens)
        fail("chunk options: overlapTokens is ", options.overlapTokens, "; expected 0 to ",
             (options.maxTokens - 1) / 2, " (less than half of maxTokens ", options.maxTokens, ")");
}

std::vector<TextChunk> chunkText(const Tokenizer& tokenizer, std::string_view text,
                                 const ChunkOptions& options)
{
    validateChunkOptions(options);
    return Chunker(tokenizer, text, options).run();
}

}  // namespace tb
