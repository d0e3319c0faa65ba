// SQuAD v1.1 exact match and token F1 over Python-compatible normalisation.
#include "eval/squad.h"

#include "eval/mean_metric.h"
#include "eval/unicode_text.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string_view>

namespace tb::eval {

namespace {

// Python's string.punctuation.
bool isAsciiPunctuation(char32_t c)
{
    return c < 0x80 && std::u32string_view(U"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~").find(c) !=
                           std::u32string_view::npos;
}

// re.sub(r'\b(a|an|the)\b', ' ', text): each article standing as a whole word becomes a space.
std::u32string replaceArticles(std::u32string_view text)
{
    static constexpr std::u32string_view kArticles[] = {U"a", U"an", U"the"};
    std::u32string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        size_t matched = 0;
        if (i == 0 || !isPythonWordChar(text[i - 1])) {
            for (std::u32string_view article : kArticles) {
                const size_t end = i + article.size();
                if (text.substr(i, article.size()) == article &&
                    (end == text.size() || !isPythonWordChar(text[end]))) {
                    matched = article.size();
                    break;
                }
            }
        }
        if (matched > 0) {
            out.push_back(U' ');
            i += matched;
        } else {
            out.push_back(text[i++]);
        }
    }
    return out;
}

// The normalised answer's tokens: split() of normalize_answer's result.
std::vector<std::u32string> normalizedTokens(std::string_view text)
{
    std::u32string lowered = pythonLower(decodeUtf8(text));
    std::erase_if(lowered, isAsciiPunctuation);
    return splitPythonWhitespace(replaceArticles(lowered));
}

std::u32string joinTokens(const std::vector<std::u32string>& tokens)
{
    std::u32string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (i)
            out.push_back(U' ');
        out += tokens[i];
    }
    return out;
}

// metric_max_over_ground_truths.
double maxOverReferences(const MetricInput& input,
                         const std::function<double(std::string_view, std::string_view)>& f)
{
    double best = 0;
    for (size_t r = 0; r < input.references.size(); ++r)
        best = r == 0 ? f(input.prediction, input.references[r])
                      : std::max(best, f(input.prediction, input.references[r]));
    return best;
}

class ExactMatchMetric : public MeanMetric {
public:
    ExactMatchMetric() : MeanMetric("exact_match") {}

protected:
    double value(const MetricInput& input) const override
    {
        return maxOverReferences(input, squadExactMatch);
    }
};

class TokenF1Metric : public MeanMetric {
public:
    TokenF1Metric() : MeanMetric("f1") {}

protected:
    double value(const MetricInput& input) const override
    {
        return maxOverReferences(input, squadTokenF1);
    }
};

}  // namespace

std::string normalizeSquadAnswer(std::string_view text)
{
    return encodeUtf8(joinTokens(normalizedTokens(text)));
}

double squadExactMatch(std::string_view prediction, std::string_view reference)
{
    return normalizedTokens(prediction) == normalizedTokens(reference) ? 1.0 : 0.0;
}

double squadTokenF1(std::string_view prediction, std::string_view reference)
{
    const auto predicted = normalizedTokens(prediction);
    const auto expected = normalizedTokens(reference);
    std::map<std::u32string, int64_t> counts;
    for (const auto& t : expected)
        ++counts[t];
    int64_t same = 0;
    for (const auto& t : predicted) {
        auto it = counts.find(t);
        if (it != counts.end() && it->second > 0) {
            --it->second;
            ++same;
        }
    }
    if (same == 0)
        return 0.0;
    const double precision = 1.0 * double(same) / double(predicted.size());
    const double recall = 1.0 * double(same) / double(expected.size());
    return (2 * precision * recall) / (precision + recall);
}

std::unique_ptr<Metric> makeExactMatchMetric()
{
    return std::make_unique<ExactMatchMetric>();
}

std::unique_ptr<Metric> makeTokenF1Metric()
{
    return std::make_unique<TokenF1Metric>();
}

}  // namespace tb::eval
