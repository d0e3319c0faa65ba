// sacrebleu's chrF and chrF++: character and word n-gram statistics, the best of several
// references, and the F-score averaged over the effective orders.
#include "eval/chrf.h"

#include "eval/unicode_text.h"
#include "util/error.h"

#include <algorithm>
#include <unordered_map>

namespace tb::eval {
namespace {

using NgramCounts = std::unordered_map<std::u32string, int>;

// string.punctuation, which chrF++ splits off the ends of words.
bool isAsciiPunctuation(char32_t c)
{
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
}

// CHRF._remove_punctuation: a word of two or more characters loses its last character to a word
// of its own when that is punctuation, else its first when that is.
std::vector<std::u32string> chrfWords(std::u32string_view text)
{
    std::vector<std::u32string> out;
    for (std::u32string& w : splitPythonWhitespace(text)) {
        if (w.size() > 1 && isAsciiPunctuation(w.back())) {
            out.emplace_back(w.substr(0, w.size() - 1));
            out.emplace_back(1, w.back());
        } else if (w.size() > 1 && isAsciiPunctuation(w.front())) {
            out.emplace_back(1, w.front());
            out.emplace_back(w.substr(1));
        } else {
            out.push_back(std::move(w));
        }
    }
    return out;
}

// The n-gram counts of each order: characters 1..kChrfCharOrder, then words 1..wordOrder (a word
// n-gram is its words joined by spaces, which no word contains).
std::vector<NgramCounts> chrfNgrams(const std::string& text, int wordOrder)
{
    const std::u32string codePoints = decodeUtf8(text);
    std::u32string chars;
    for (const std::u32string& word : splitPythonWhitespace(codePoints))
        chars += word;
    std::vector<NgramCounts> out(static_cast<size_t>(kChrfCharOrder + wordOrder));
    for (size_t n = 1; n <= kChrfCharOrder; ++n)
        for (size_t i = 0; i + n <= chars.size(); ++i)
            ++out[n - 1][chars.substr(i, n)];
    if (wordOrder > 0) {
        const std::vector<std::u32string> words = chrfWords(codePoints);
        for (size_t n = 1; n <= static_cast<size_t>(wordOrder); ++n) {
            for (size_t i = 0; i + n <= words.size(); ++i) {
                std::u32string key = words[i];
                for (size_t k = 1; k < n; ++k)
                    key.append(U" ").append(words[i + k]);
                ++out[kChrfCharOrder + n - 1][key];
            }
        }
    }
    return out;
}

// [hypothesis n-grams, reference n-grams, matches] of one order; no hypothesis count where the
// reference has none.
void appendMatchStats(const NgramCounts& hyp, const NgramCounts& ref, std::vector<double>& out)
{
    double hypCount = 0, refCount = 0, matches = 0;
    for (const auto& [ngram, count] : hyp) {
        hypCount += count;
        if (const auto it = ref.find(ngram); it != ref.end())
            matches += std::min(count, it->second);
    }
    for (const auto& entry : ref)
        refCount += entry.second;
    out.push_back(ref.empty() ? 0.0 : hypCount);
    out.push_back(refCount);
    out.push_back(matches);
}

class ChrfMetric final : public Metric {
public:
    explicit ChrfMetric(int wordOrder) : m_wordOrder(wordOrder) {}
    std::string name() const override
    {
        if (m_wordOrder == 0)
            return "chrf";
        return m_wordOrder == 2 ? "chrf++" : "chrf+" + std::to_string(m_wordOrder);
    }
    std::vector<double> stats(const MetricInput& input) const override
    {
        return chrfStats(input.prediction, input.references, m_wordOrder);
    }
    double score(const std::vector<double>& summed) const override { return chrfFromStats(summed); }

private:
    int m_wordOrder;
};

}  // namespace

std::vector<double> chrfStats(const std::string& hyp, const std::vector<std::string>& refs,
                              int wordOrder)
{
    if (refs.empty())
        fail("chrF needs at least one reference for the hypothesis \"", hyp.substr(0, 60), "\"");
    if (wordOrder < 0)
        fail("chrF word order ", wordOrder, " is negative");
    const std::vector<NgramCounts> hypNgrams = chrfNgrams(hyp, wordOrder);
    std::vector<double> best;
    double bestScore = -1.0;
    for (const std::string& ref : refs) {
        const std::vector<NgramCounts> refNgrams = chrfNgrams(ref, wordOrder);
        std::vector<double> stats;
        stats.reserve(3 * hypNgrams.size());
        for (size_t k = 0; k < hypNgrams.size(); ++k)
            appendMatchStats(hypNgrams[k], refNgrams[k], stats);
        const double score = chrfFromStats(stats);
        if (score > bestScore) {
            bestScore = score;
            best = std::move(stats);
        }
    }
    return best;
}

double chrfFromStats(const std::vector<double>& stats)
{
    if (stats.empty() || stats.size() % 3 != 0)
        fail("chrF statistics come in triples, not ", stats.size(), " values");
    const double factor = kChrfBeta * kChrfBeta;
    double precision = 0, recall = 0;
    int orders = 0;  // those in which both sides have n-grams
    for (size_t i = 0; i < stats.size(); i += 3) {
        const double hyp = stats[i], ref = stats[i + 1], matches = stats[i + 2];
        if (hyp > 0 && ref > 0) {
            precision += matches / hyp;
            recall += matches / ref;
            ++orders;
        }
    }
    if (orders > 0) {
        precision /= orders;
        recall /= orders;
    }
    if (precision + recall == 0)
        return 0.0;
    double score = (1 + factor) * precision * recall;
    score /= factor * precision + recall;
    return 100 * score;
}

double corpusChrf(const std::vector<std::string>& hyps,
                  const std::vector<std::vector<std::string>>& refs, int wordOrder)
{
    if (hyps.size() != refs.size())
        fail("corpus chrF: ", hyps.size(), " hypotheses but references for ", refs.size());
    std::vector<double> summed(static_cast<size_t>(3 * (kChrfCharOrder + wordOrder)), 0.0);
    for (size_t i = 0; i < hyps.size(); ++i) {
        const std::vector<double> one = chrfStats(hyps[i], refs[i], wordOrder);
        for (size_t k = 0; k < summed.size(); ++k)
            summed[k] += one[k];
    }
    return chrfFromStats(summed);
}

double sentenceChrf(const std::string& hyp, const std::vector<std::string>& refs, int wordOrder)
{
    return chrfFromStats(chrfStats(hyp, refs, wordOrder));
}

std::unique_ptr<Metric> makeChrfMetric(int wordOrder)
{
    if (wordOrder < 0)
        fail("chrF word order ", wordOrder, " is negative");
    return std::make_unique<ChrfMetric>(wordOrder);
}

}  // namespace tb::eval
