// sacrebleu's BLEU: the 13a tokenizer, clipped n-gram statistics over several references, and
// corpus and sentence scores with exponential smoothing.
#include "eval/bleu.h"

#include "eval/unicode_text.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

namespace tb::eval {
namespace {

constexpr size_t kStatCount = 2 + 2 * kBleuMaxOrder;

// The ASCII symbols 13a's first rule pads with spaces: the class [{-~[-` -&(-+:-@/].
bool is13aSymbol(char32_t c)
{
    return (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2B) || c == 0x2F ||
           (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

bool isDigit(char32_t c)
{
    return c >= U'0' && c <= U'9';
}

bool isPeriodOrComma(char32_t c)
{
    return c == U'.' || c == U',';
}

// str.replace: every non-overlapping occurrence, left to right.
void replaceAll(std::u32string& s, std::u32string_view from, std::u32string_view to)
{
    size_t at = s.find(from);
    if (at == std::u32string::npos)
        return;
    std::u32string out;
    size_t i = 0;
    for (; at != std::u32string::npos; at = s.find(from, i)) {
        out.append(s, i, at - i);
        out.append(to);
        i = at + from.size();
    }
    out.append(s, i, std::u32string::npos);
    s = std::move(out);
}

// re.sub of a two-character pattern: the leftmost match, then the search goes on after it.
template <typename First, typename Second, typename Emit>
std::u32string substitutePairs(const std::u32string& s, First first, Second second, Emit emit)
{
    std::u32string out;
    out.reserve(s.size() + s.size() / 4);
    size_t i = 0;
    while (i < s.size()) {
        if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
            emit(out, s[i], s[i + 1]);
            i += 2;
        } else {
            out.push_back(s[i++]);
        }
    }
    return out;
}

std::vector<std::u32string> tokens13a(std::u32string_view text)
{
    std::u32string line(pythonRstrip(text));
    replaceAll(line, U"<skipped>", U"");
    replaceAll(line, U"-\n", U"");
    replaceAll(line, U"\n", U" ");
    if (line.find(U'&') != std::u32string::npos) {
        replaceAll(line, U"&quot;", U"\"");
        replaceAll(line, U"&amp;", U"&");
        replaceAll(line, U"&lt;", U"<");
        replaceAll(line, U"&gt;", U">");
    }
    std::u32string padded = U" ";
    for (const char32_t c : line) {
        if (is13aSymbol(c)) {
            padded += U' ';
            padded += c;
            padded += U' ';
        } else {
            padded += c;
        }
    }
    padded += U' ';
    const auto notDigit = [](char32_t c) { return !isDigit(c); };
    padded = substitutePairs(padded, notDigit, isPeriodOrComma,
                             [](std::u32string& out, char32_t a, char32_t b) {
                                 out.append({a, U' ', b, U' '});
                             });
    padded = substitutePairs(padded, isPeriodOrComma, notDigit,
                             [](std::u32string& out, char32_t a, char32_t b) {
                                 out.append({U' ', a, U' ', b});
                             });
    padded = substitutePairs(
        padded, isDigit, [](char32_t c) { return c == U'-'; },
        [](std::u32string& out, char32_t a, char32_t b) {
            out.append({a, U' ', b, U' '});
        });
    return splitPythonWhitespace(padded);
}

// Tokens as small integers, so that an n-gram is a u32string of n of them.
class Vocabulary {
public:
    std::u32string ids(const std::string& text)
    {
        std::u32string out;
        for (const std::u32string& token : tokens13a(decodeUtf8(text)))
            out.push_back(
                m_ids.try_emplace(token, static_cast<char32_t>(m_ids.size() + 1)).first->second);
        return out;
    }

private:
    std::unordered_map<std::u32string, char32_t> m_ids;
};

using NgramCounts = std::unordered_map<std::u32string, int>;

NgramCounts countNgrams(const std::u32string& ids)
{
    NgramCounts counts;
    for (size_t n = 1; n <= kBleuMaxOrder; ++n)
        for (size_t i = 0; i + n <= ids.size(); ++i)
            ++counts[ids.substr(i, n)];
    return counts;
}

// The reference length closest to the hypothesis length; the shorter one on a tie.
size_t closestRefLength(size_t hypLength, const std::vector<size_t>& refLengths)
{
    size_t best = refLengths.front();
    for (const size_t length : refLengths) {
        const auto diff = [&](size_t l) { return l > hypLength ? l - hypLength : hypLength - l; };
        if (diff(length) < diff(best) || (diff(length) == diff(best) && length < best))
            best = length;
    }
    return best;
}

// utils.my_log: log with log 0 floored.
double flooredLog(double x)
{
    return x == 0.0 ? -9999999999.0 : std::log(x);
}

class BleuMetric final : public Metric {
public:
    std::string name() const override { return "bleu"; }
    std::vector<double> stats(const MetricInput& input) const override
    {
        return bleuStats(input.prediction, input.references);
    }
    double score(const std::vector<double>& summed) const override
    {
        return bleuFromStats(summed, false).score;
    }
    double exampleScore(const MetricInput& input) const override
    {
        return sentenceBleu(input.prediction, input.references);
    }
};

}  // namespace

std::vector<std::string> tokenize13a(const std::string& text)
{
    std::vector<std::string> out;
    for (const std::u32string& token : tokens13a(decodeUtf8(text)))
        out.push_back(encodeUtf8(token));
    return out;
}

std::vector<double> bleuStats(const std::string& hyp, const std::vector<std::string>& refs)
{
    if (refs.empty())
        fail("BLEU needs at least one reference for the hypothesis \"", hyp.substr(0, 60), "\"");
    Vocabulary vocabulary;
    NgramCounts refCounts;  // each n-gram's largest count in one reference
    std::vector<size_t> refLengths;
    for (const std::string& ref : refs) {
        const std::u32string ids = vocabulary.ids(ref);
        refLengths.push_back(ids.size());
        for (const auto& [ngram, count] : countNgrams(ids)) {
            int& best = refCounts[ngram];
            best = std::max(best, count);
        }
    }
    const std::u32string hypIds = vocabulary.ids(hyp);
    std::vector<double> stats(kStatCount, 0.0);
    stats[0] = static_cast<double>(hypIds.size());
    stats[1] = static_cast<double>(closestRefLength(hypIds.size(), refLengths));
    for (const auto& [ngram, count] : countNgrams(hypIds)) {
        const size_t order = ngram.size() - 1;
        stats[2 + kBleuMaxOrder + order] += count;
        if (const auto it = refCounts.find(ngram); it != refCounts.end())
            stats[2 + order] += std::min(count, it->second);
    }
    return stats;
}

BleuScore bleuFromStats(const std::vector<double>& stats, bool effectiveOrder)
{
    if (stats.size() != kStatCount)
        fail("BLEU statistics have ", kStatCount, " values, not ", stats.size());
    BleuScore out;
    out.hypLength = stats[0];
    out.refLength = stats[1];
    if (out.hypLength < out.refLength)
        out.brevityPenalty = out.hypLength > 0 ? std::exp(1 - out.refLength / out.hypLength) : 0.0;
    const double* correct = stats.data() + 2;
    const double* total = stats.data() + 2 + kBleuMaxOrder;
    if (std::all_of(correct, correct + kBleuMaxOrder, [](double c) { return c == 0; }))
        return out;  // sacrebleu's early stop: no match of any order
    double smooth = 1.0;
    int order = kBleuMaxOrder;
    for (int n = 0; n < kBleuMaxOrder && total[n] != 0; ++n) {
        if (effectiveOrder)
            order = n + 1;
        if (correct[n] == 0) {
            smooth *= 2;
            out.precisions[n] = 100. / (smooth * total[n]);
        } else {
            out.precisions[n] = 100. * correct[n] / total[n];
        }
    }
    double logSum = 0;
    for (int n = 0; n < order; ++n)
        logSum += flooredLog(out.precisions[n]);
    out.score = out.brevityPenalty * std::exp(logSum / order);
    return out;
}

BleuScore corpusBleuScore(const std::vector<std::string>& hyps,
                          const std::vector<std::vector<std::string>>& refs)
{
    if (hyps.size() != refs.size())
        fail("corpus BLEU: ", hyps.size(), " hypotheses but references for ", refs.size());
    std::vector<double> summed(kStatCount, 0.0);
    for (size_t i = 0; i < hyps.size(); ++i) {
        const std::vector<double> one = bleuStats(hyps[i], refs[i]);
        for (size_t k = 0; k < kStatCount; ++k)
            summed[k] += one[k];
    }
    return bleuFromStats(summed, false);
}

double corpusBleu(const std::vector<std::string>& hyps,
                  const std::vector<std::vector<std::string>>& refs)
{
    return corpusBleuScore(hyps, refs).score;
}

double sentenceBleu(const std::string& hyp, const std::vector<std::string>& refs)
{
    return bleuFromStats(bleuStats(hyp, refs), true).score;
}

std::unique_ptr<Metric> makeBleuMetric()
{
    return std::make_unique<BleuMetric>();
}

}  // namespace tb::eval
