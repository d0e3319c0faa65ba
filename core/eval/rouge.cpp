// rouge-score's tokenizer, n-gram and LCS scores, and the best-reference mean metric over them.
#include "eval/rouge.h"

#include "eval/mean_metric.h"
#include "eval/porter_stemmer.h"
#include "eval/unicode_text.h"

#include "util/error.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <string_view>
#include <unordered_map>

namespace tb::eval {

namespace {

bool isTokenChar(char32_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// scoring.fmeasure.
double fmeasure(double precision, double recall)
{
    return precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0.0;
}

std::map<std::vector<std::string>, int64_t> ngramCounts(const std::vector<std::string>& tokens,
                                                        int n)
{
    std::map<std::vector<std::string>, int64_t> counts;
    const auto width = static_cast<size_t>(n);
    for (size_t i = 0; i + width <= tokens.size(); ++i)
        ++counts[std::vector<std::string>(tokens.begin() + static_cast<std::ptrdiff_t>(i),
                                          tokens.begin() + static_cast<std::ptrdiff_t>(i + width))];
    return counts;
}

// Length of the longest common subsequence, bit-parallel (Hyyrö 2004): one bit per token of `a`,
// all set at first; each token t of `b` updates V = (V + (V & M)) | (V & ~M), M the positions of t
// in `a`, as one addition with carry over 64-bit words. The LCS is the count of bits cleared.
// O(|a| |b| / 64) instead of the table's O(|a| |b|).
size_t lcsLength(const std::vector<std::string>& a, const std::vector<std::string>& b)
{
    if (a.empty() || b.empty())
        return 0;
    std::unordered_map<std::string_view, std::vector<size_t>> positions;  // token of a -> where
    for (size_t i = 0; i < a.size(); ++i)
        positions[a[i]].push_back(i);
    const size_t words = (a.size() + 63) / 64;
    // Bits past a's end stay set: (V & ~M) keeps them, and a carry into them runs out of the top.
    std::vector<uint64_t> v(words, ~uint64_t(0)), match(words, 0);
    for (const std::string& token : b) {
        const auto found = positions.find(token);
        if (found == positions.end())
            continue;  // M = 0 leaves V as it is
        for (const size_t p : found->second)
            match[p / 64] |= uint64_t(1) << (p % 64);
        bool carry = false;
        for (size_t w = 0; w < words; ++w) {
            const uint64_t u = v[w] & match[w];
            uint64_t sum = 0;
            const bool over = __builtin_add_overflow(v[w], u, &sum);
            const bool overCarry = __builtin_add_overflow(sum, uint64_t(carry), &sum);
            carry = over || overCarry;
            v[w] = sum | (v[w] & ~match[w]);
        }
        for (const size_t p : found->second)
            match[p / 64] = 0;
    }
    size_t set = 0;
    for (const uint64_t w : v)
        set += static_cast<size_t>(std::popcount(w));
    return words * 64 - set;
}

class RougeMetric : public MeanMetric {
public:
    RougeMetric(int n, bool stemmer)
        : MeanMetric(n == kRougeL ? "rougeL" : "rouge" + std::to_string(n)), m_n(n),
          m_stemmer(stemmer)
    {
    }

protected:
    // score_multi: the score of the first reference with the highest F.
    double value(const MetricInput& input) const override
    {
        const auto prediction = rougeTokenize(input.prediction, m_stemmer);
        double best = 0;
        for (size_t r = 0; r < input.references.size(); ++r) {
            const auto target = rougeTokenize(input.references[r], m_stemmer);
            const double f = m_n == kRougeL ? rougeL(target, prediction).fmeasure
                                            : rougeN(target, prediction, m_n).fmeasure;
            best = r == 0 ? f : std::max(best, f);
        }
        return best;
    }

private:
    int m_n;
    bool m_stemmer;
};

}  // namespace

std::vector<std::string> rougeTokenize(std::string_view text, bool stemmer)
{
    const std::u32string lowered = pythonLower(decodeUtf8(text));
    std::vector<std::string> tokens;
    size_t i = 0;
    while (i < lowered.size()) {
        while (i < lowered.size() && !isTokenChar(lowered[i]))
            ++i;
        std::string token;
        while (i < lowered.size() && isTokenChar(lowered[i]))
            token.push_back(static_cast<char>(lowered[i++]));
        if (token.empty())
            continue;
        if (stemmer && token.size() > 3)
            token = porterStem(token);
        if (!token.empty())
            tokens.push_back(std::move(token));
    }
    return tokens;
}

RougeScore rougeN(const std::vector<std::string>& target,
                  const std::vector<std::string>& prediction, int n)
{
    if (n < 1)
        fail("ROUGE-N needs a positive n, got ", n);
    const auto targetCounts = ngramCounts(target, n);
    const auto predictionCounts = ngramCounts(prediction, n);
    int64_t overlap = 0, targetTotal = 0, predictionTotal = 0;
    for (const auto& [ngram, count] : targetCounts) {
        targetTotal += count;
        const auto it = predictionCounts.find(ngram);
        if (it != predictionCounts.end())
            overlap += std::min(count, it->second);
    }
    for (const auto& entry : predictionCounts)
        predictionTotal += entry.second;
    RougeScore s;
    s.precision = double(overlap) / double(std::max<int64_t>(predictionTotal, 1));
    s.recall = double(overlap) / double(std::max<int64_t>(targetTotal, 1));
    s.fmeasure = fmeasure(s.precision, s.recall);
    return s;
}

RougeScore rougeL(const std::vector<std::string>& target,
                  const std::vector<std::string>& prediction)
{
    if (target.empty() || prediction.empty())
        return {};
    const auto lcs = double(lcsLength(target, prediction));
    RougeScore s;
    s.precision = lcs / double(prediction.size());
    s.recall = lcs / double(target.size());
    s.fmeasure = fmeasure(s.precision, s.recall);
    return s;
}

std::unique_ptr<Metric> makeRougeMetric(int n, bool stemmer)
{
    if (n != kRougeL && (n < 1 || n > 9))
        fail("ROUGE: unknown variant ", n, " (1-9 for ROUGE-N, kRougeL for ROUGE-L)");
    return std::make_unique<RougeMetric>(n, stemmer);
}

}  // namespace tb::eval
