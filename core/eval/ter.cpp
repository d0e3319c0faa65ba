// sacrebleu's TER: Tercom's greedy shifts over a beam edit distance, the fewest edits over
// several references, and the corpus rate over the mean reference lengths.
#include "eval/ter.h"

#include "eval/unicode_text.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

namespace tb::eval {
namespace {

constexpr int kMaxShiftSize = 10;
constexpr int kMaxShiftDistance = 50;
constexpr int kBeamWidth = 25;
constexpr int kMaxShiftCandidates = 1000;
constexpr int64_t kInfinity = 10000000000000000;  // int(1e16)

// Edit operations of a trace, rewriting the hypothesis into the reference.
constexpr char kNop = ' ', kSub = 's', kIns = 'i', kDel = 'd', kUndefined = 'x';

using Words = std::vector<int>;  // words as ids; only equality matters

struct Cell {
    int64_t cost = kInfinity;
    char op = kUndefined;
};

// lib_ter.BeamEditDistance: the Levenshtein distance from a hypothesis to the reference within a
// beam around the diagonal, with the trace of operations. Rows of the previous hypothesis are
// reused for a shared prefix (sacrebleu caches them in a trie; either way a row depends only on
// the words before it). A row keeps only its beam's cells (the rest are infinite), so memory grows
// with the hypothesis times the beam, not times the reference: 100,000 words against 100,000 hold
// 80 MB, not 160 GB.
class BeamEditDistance {
public:
    explicit BeamEditDistance(const Words& ref) : m_ref(ref) {}

    std::pair<int64_t, std::string> operator()(const Words& hyp)
    {
        const size_t n = hyp.size(), m = m_ref.size();
        size_t start = 0;
        if (m_rows.size() == n + 1)
            while (start < n && m_last[start] == hyp[start])
                ++start;
        m_rows.resize(n + 1);
        m_rows[0].lo = 0;
        m_rows[0].cells.resize(m + 1);
        for (size_t j = 0; j <= m; ++j)
            m_rows[0].cells[j] = {static_cast<int64_t>(j), kIns};
        const double ratio = n > 0 ? static_cast<double>(m) / static_cast<double>(n) : 1.0;
        const int64_t beam = kBeamWidth < ratio / 2
                                 ? static_cast<int64_t>(std::ceil(ratio / 2 + kBeamWidth))
                                 : kBeamWidth;
        for (size_t i = start + 1; i <= n; ++i)
            computeRow(hyp, i, ratio, beam);
        m_last = hyp;
        return {m_rows[n].at(m).cost, trace(n, m)};
    }

private:
    // The cells [lo, lo + cells.size()) of a row; every other cell is infinite and undefined.
    struct Row {
        size_t lo = 0;
        std::vector<Cell> cells;
        Cell at(size_t j) const
        {
            return j >= lo && j - lo < cells.size() ? cells[j - lo] : Cell{};
        }
    };

    void computeRow(const Words& hyp, size_t i, double ratio, int64_t beam)
    {
        const size_t m = m_ref.size();
        const auto diagonal = static_cast<int64_t>(std::floor(static_cast<double>(i) * ratio));
        const auto lo = static_cast<size_t>(
            std::clamp<int64_t>(diagonal - beam, 0, static_cast<int64_t>(m) + 1));
        size_t hi = static_cast<size_t>(std::clamp<int64_t>(diagonal + beam, 0, int64_t(m) + 1));
        if (i == hyp.size())
            hi = m + 1;
        const Row& prev = m_rows[i - 1];
        Row& row = m_rows[i];
        row.lo = lo;
        row.cells.assign(hi > lo ? hi - lo : 0, Cell{});
        for (size_t j = lo; j < hi; ++j) {
            Cell& cell = row.cells[j - lo];
            if (j == 0) {
                cell = {prev.at(0).cost + 1, kDel};
                continue;
            }
            const bool same = hyp[i - 1] == m_ref[j - 1];
            // Tercom prefers a match or substitution, then insertion, then deletion; the trace is
            // flipped later, hence deletion before insertion here.
            const Cell left = j > lo ? row.cells[j - 1 - lo] : Cell{};
            const Cell options[3] = {{prev.at(j - 1).cost + (same ? 0 : 1), same ? kNop : kSub},
                                     {prev.at(j).cost + 1, kDel},
                                     {left.cost + 1, kIns}};
            for (const Cell& option : options)
                if (cell.cost > option.cost)
                    cell = option;
        }
    }

    std::string trace(size_t i, size_t j) const
    {
        std::string out;
        while (i > 0 || j > 0) {
            const char op = m_rows[i].at(j).op;
            out.push_back(op);
            if (op == kSub || op == kNop) {
                --i;
                --j;
            } else if (op == kIns) {
                --j;
            } else if (op == kDel) {
                --i;
            } else {
                fail("TER: the edit distance trace reached an uncomputed cell (", i, ", ", j, ")");
            }
        }
        std::reverse(out.begin(), out.end());
        return out;
    }

    const Words& m_ref;
    std::vector<Row> m_rows;
    Words m_last;
};

// lib_ter.trace_to_alignment of the flipped trace: each reference position's hypothesis
// position, and which positions of each side are errors.
struct Alignment {
    std::vector<int> refToHyp;
    std::vector<int> refErrors;
    std::vector<int> hypErrors;
};

Alignment alignmentOf(const std::string& hypToRefTrace)
{
    Alignment a;
    int hyp = -1;
    for (const char op : hypToRefTrace) {
        // flipped: an insertion into the reference is a hypothesis word, a deletion a reference
        // word
        const bool hypWord = op == kNop || op == kSub || op == kIns;
        const bool refWord = op == kNop || op == kSub || op == kDel;
        const int error = op == kNop ? 0 : 1;
        if (hypWord) {
            ++hyp;
            a.hypErrors.push_back(error);
        }
        if (refWord) {
            a.refToHyp.push_back(hyp);
            a.refErrors.push_back(error);
        }
    }
    return a;
}

// Python's words[a:b] appended to out (a and b non-negative, clipped to the size).
void appendSlice(const Words& words, size_t a, size_t b, Words& out)
{
    a = std::min(a, words.size());
    b = std::min(b, words.size());
    if (a < b)
        out.insert(out.end(), words.begin() + long(a), words.begin() + long(b));
}

// lib_ter._perform_shift: the run words[start, start + length) moved before target.
Words performShift(const Words& w, size_t start, size_t length, size_t target)
{
    Words out;
    out.reserve(w.size());
    const size_t end = start + length, npos = w.size();
    if (target < start) {
        appendSlice(w, 0, target, out);
        appendSlice(w, start, end, out);
        appendSlice(w, target, start, out);
        appendSlice(w, end, npos, out);
    } else if (target > end) {
        appendSlice(w, 0, start, out);
        appendSlice(w, end, target, out);
        appendSlice(w, start, end, out);
        appendSlice(w, target, npos, out);
    } else {  // as sacrebleu does it: the run goes after the `length` words that follow it
        appendSlice(w, 0, start, out);
        appendSlice(w, end, length + target, out);
        appendSlice(w, start, end, out);
        appendSlice(w, length + target, npos, out);
    }
    return out;
}

int errorsIn(const std::vector<int>& errors, size_t begin, size_t length)
{
    int sum = 0;
    for (size_t k = begin; k < begin + length && k < errors.size(); ++k)
        sum += errors[k];
    return sum;
}

// A shift candidate ranked as Tercom ranks them: the largest gain, then the longest run, then the
// earliest start, then the earliest target.
struct Candidate {
    int64_t gain = 0;
    size_t length = 0;
    size_t start = 0;
    size_t target = 0;
    Words words;

    bool beats(const Candidate& o) const
    {
        if (gain != o.gain)
            return gain > o.gain;
        if (length != o.length)
            return length > o.length;
        if (start != o.start)
            return start < o.start;
        return target < o.target;
    }
};

// The shifts worth trying for one matching run hyp[startH, +length) = ref[startR, +length).
void tryRun(const Words& hyp, const Alignment& align, size_t startH, size_t startR, size_t length,
            int64_t before, BeamEditDistance& distance, int& checked,
            std::optional<Candidate>& best)
{
    if (errorsIn(align.hypErrors, startH, length) == 0 ||
        errorsIn(align.refErrors, startR, length) == 0)
        return;  // the hypothesis run is right where it is, or the reference run is matched
    const int at = align.refToHyp[startR];
    if (int(startH) <= at && at < int(startH + length))
        return;  // would shift within itself
    long previous = -1;
    for (long offset = -1; offset < long(length); ++offset) {
        const long r = long(startR) + offset;
        if (r >= long(align.refToHyp.size()))
            break;
        const long target = r == -1 ? 0 : align.refToHyp[size_t(r)] + 1;
        if (target == previous)
            continue;
        previous = target;
        Candidate c{0, length, startH, size_t(target),
                    performShift(hyp, startH, length, size_t(target))};
        c.gain = before - distance(c.words).first;
        ++checked;
        if (!best || c.beats(*best))
            best = std::move(c);
    }
}

// lib_ter._shift: the best shift of one round, if any; `checked` counts candidates over rounds.
std::optional<Candidate> bestShift(const Words& hyp, const Words& ref, BeamEditDistance& distance,
                                   int& checked)
{
    const auto [before, trace] = distance(hyp);
    std::string flipped = trace;
    for (char& op : flipped)
        op = op == kIns ? kDel : op == kDel ? kIns : op;
    const Alignment align = alignmentOf(flipped);
    std::optional<Candidate> best;
    for (size_t startH = 0; startH < hyp.size(); ++startH) {
        for (size_t startR = 0; startR < ref.size(); ++startR) {
            if (std::abs(long(startR) - long(startH)) > kMaxShiftDistance)
                continue;
            for (size_t length = 0;
                 hyp[startH + length] == ref[startR + length] && length < size_t(kMaxShiftSize);) {
                ++length;
                tryRun(hyp, align, startH, startR, length, before, distance, checked, best);
                if (checked >= kMaxShiftCandidates)
                    return best;
                if (startH + length == hyp.size() || startR + length == ref.size())
                    break;
            }
        }
    }
    return best;
}

int64_t translationEditRate(const Words& hyp, const Words& ref)
{
    if (ref.empty())
        return static_cast<int64_t>(hyp.size());
    BeamEditDistance distance(ref);
    int64_t shifts = 0;
    int checked = 0;
    Words current = hyp;
    while (true) {
        std::optional<Candidate> best = bestShift(current, ref, distance, checked);
        if (checked >= kMaxShiftCandidates || !best || best->gain <= 0)
            break;
        ++shifts;
        current = std::move(best->words);
    }
    return shifts + distance(current).first;
}

// The words TER compares: right-stripped, lowercased, split at whitespace.
std::vector<std::u32string> terWords(const std::string& text)
{
    return splitPythonWhitespace(pythonLower(pythonRstrip(decodeUtf8(text))));
}

class WordIds {
public:
    Words ids(const std::vector<std::u32string>& words)
    {
        Words out;
        for (const std::u32string& w : words)
            out.push_back(m_ids.try_emplace(w, int(m_ids.size())).first->second);
        return out;
    }

private:
    std::unordered_map<std::u32string, int> m_ids;
};

class TerMetric final : public Metric {
public:
    std::string name() const override { return "ter"; }
    std::vector<double> stats(const MetricInput& input) const override
    {
        return terStats(input.prediction, input.references);
    }
    double score(const std::vector<double>& summed) const override { return terFromStats(summed); }
    bool higherIsBetter() const override { return false; }
};

}  // namespace

int64_t terEdits(const std::vector<std::string>& hypWords, const std::vector<std::string>& refWords)
{
    WordIds ids;
    std::vector<std::u32string> hyp, ref;
    for (const std::string& w : hypWords)
        hyp.push_back(decodeUtf8(w));
    for (const std::string& w : refWords)
        ref.push_back(decodeUtf8(w));
    const Words hypIds = ids.ids(hyp);
    return translationEditRate(hypIds, ids.ids(ref));
}

std::vector<double> terStats(const std::string& hyp, const std::vector<std::string>& refs)
{
    if (refs.empty())
        fail("TER needs at least one reference for the hypothesis \"", hyp.substr(0, 60), "\"");
    WordIds ids;
    const Words hypWords = ids.ids(terWords(hyp));
    int64_t bestEdits = kInfinity;
    int64_t refLengths = 0;
    for (const std::string& ref : refs) {
        const Words refWords = ids.ids(terWords(ref));
        refLengths += static_cast<int64_t>(refWords.size());
        bestEdits = std::min(bestEdits, translationEditRate(hypWords, refWords));
    }
    return {static_cast<double>(bestEdits),
            static_cast<double>(refLengths) / static_cast<double>(refs.size())};
}

double terFromStats(const std::vector<double>& stats)
{
    if (stats.size() != 2)
        fail("TER statistics have 2 values, not ", stats.size());
    const double edits = stats[0], refLength = stats[1];
    double rate = 0.0;  // neither edits nor reference words
    if (refLength > 0)
        rate = edits / refLength;
    else if (edits > 0)
        rate = 1.0;  // empty references, non-empty hypothesis
    return 100 * rate;
}

double corpusTer(const std::vector<std::string>& hyps,
                 const std::vector<std::vector<std::string>>& refs)
{
    if (hyps.size() != refs.size())
        fail("corpus TER: ", hyps.size(), " hypotheses but references for ", refs.size());
    std::vector<double> summed(2, 0.0);
    for (size_t i = 0; i < hyps.size(); ++i) {
        const std::vector<double> one = terStats(hyps[i], refs[i]);
        summed[0] += one[0];
        summed[1] += one[1];
    }
    return terFromStats(summed);
}

double sentenceTer(const std::string& hyp, const std::vector<std::string>& refs)
{
    return terFromStats(terStats(hyp, refs));
}

std::unique_ptr<Metric> makeTerMetric()
{
    return std::make_unique<TerMetric>();
}

}  // namespace tb::eval
