// Label normalisation, accuracy, the classification report and the entity-matching pair F1.
#include "eval/classification.h"

#include "eval/mean_metric.h"
#include "eval/unicode_text.h"

#include "util/error.h"

#include <algorithm>
#include <map>
#include <set>

namespace tb::eval {

namespace {

bool isQuote(char32_t c)
{
    return std::u32string_view(U"\"'`\u201C\u201D\u2018\u2019\u00AB\u00BB").find(c) !=
           std::u32string_view::npos;
}

bool isTrailingPunctuation(char32_t c)
{
    return std::u32string_view(U".,;:!?\u2026").find(c) != std::u32string_view::npos;
}

std::u32string collapseWhitespace(std::u32string_view text)
{
    std::u32string out;
    for (const auto& word : splitPythonWhitespace(text)) {
        if (!out.empty())
            out.push_back(U' ');
        out += word;
    }
    return out;
}

// 0/0 is 0 (zero_division=0).
double ratio(double numerator, double denominator)
{
    return denominator > 0 ? numerator / denominator : 0.0;
}

class AccuracyMetric : public MeanMetric {
public:
    AccuracyMetric() : MeanMetric("accuracy") {}

protected:
    double value(const MetricInput& input) const override
    {
        const std::string predicted = normalizeLabel(input.prediction);
        for (const auto& reference : input.references)
            if (normalizeLabel(reference) == predicted)
                return 1.0;
        return 0.0;
    }
};

class MatchF1Metric : public Metric {
public:
    std::string name() const override { return "match_f1"; }
    std::vector<double> stats(const MetricInput& input) const override
    {
        if (input.references.empty())
            fail("match_f1: an example has no reference");
        const int expected = matchLabelClass(input.references[0]);
        if (expected < 0)
            fail("match_f1: reference \"", input.references[0],
                 "\" is neither a match (yes, match) nor a non-match (no, non-match, no match)");
        const int predicted = matchLabelClass(input.prediction);
        if (expected == 1)
            return predicted == 1 ? std::vector<double>{1, 0, 0} : std::vector<double>{0, 0, 1};
        return predicted == 0 ? std::vector<double>{0, 0, 0} : std::vector<double>{0, 1, 0};
    }
    double score(const std::vector<double>& summed) const override
    {
        if (summed.size() != 3)
            fail("match_f1: expected 3 statistics, got ", summed.size());
        return ratio(2 * summed[0], 2 * summed[0] + summed[1] + summed[2]);
    }
};

}  // namespace

std::string normalizeLabel(std::string_view label)
{
    std::u32string text = collapseWhitespace(pythonLower(decodeUtf8(label)));
    for (bool changed = true; changed;) {
        const size_t before = text.size();
        size_t begin = 0, end = text.size();
        while (begin < end && isQuote(text[begin]))
            ++begin;
        while (end > begin && (isQuote(text[end - 1]) || isTrailingPunctuation(text[end - 1])))
            --end;
        text = collapseWhitespace(std::u32string_view(text).substr(begin, end - begin));
        changed = text.size() != before;
    }
    return encodeUtf8(text);
}

ClassificationReport classificationReport(const std::vector<std::string>& predictions,
                                          const std::vector<std::string>& references)
{
    if (predictions.size() != references.size())
        fail("classification report: ", predictions.size(), " predictions but ", references.size(),
             " references");
    std::vector<std::string> predicted, expected;
    std::set<std::string> labelSet;
    for (size_t i = 0; i < predictions.size(); ++i) {
        predicted.push_back(normalizeLabel(predictions[i]));
        expected.push_back(normalizeLabel(references[i]));
        labelSet.insert(predicted.back());
        labelSet.insert(expected.back());
    }
    ClassificationReport report;
    report.labels.assign(labelSet.begin(), labelSet.end());
    report.examples = static_cast<int64_t>(predictions.size());
    std::map<std::string, size_t> index;
    for (size_t k = 0; k < report.labels.size(); ++k)
        index[report.labels[k]] = k;
    const size_t n = report.labels.size();
    report.confusion.assign(n, std::vector<int64_t>(n, 0));
    for (size_t i = 0; i < predicted.size(); ++i)
        ++report.confusion[index[expected[i]]][index[predicted[i]]];

    int64_t correct = 0, fpTotal = 0, fnTotal = 0;
    for (size_t k = 0; k < n; ++k) {
        int64_t tp = report.confusion[k][k], fp = 0, fn = 0;
        for (size_t j = 0; j < n; ++j) {
            if (j == k)
                continue;
            fp += report.confusion[j][k];
            fn += report.confusion[k][j];
        }
        ClassMetrics c;
        c.label = report.labels[k];
        c.precision = ratio(double(tp), double(tp + fp));
        c.recall = ratio(double(tp), double(tp + fn));
        c.f1 = ratio(2.0 * double(tp), double(2 * tp + fp + fn));
        c.support = tp + fn;
        report.macroPrecision += c.precision;
        report.macroRecall += c.recall;
        report.macroF1 += c.f1;
        report.classes.push_back(std::move(c));
        correct += tp;
        fpTotal += fp;
        fnTotal += fn;
    }
    if (n > 0) {
        report.macroPrecision /= double(n);
        report.macroRecall /= double(n);
        report.macroF1 /= double(n);
    }
    report.accuracy = ratio(double(correct), double(report.examples));
    report.microF1 = ratio(2.0 * double(correct), double(2 * correct + fpTotal + fnTotal));
    return report;
}

int matchLabelClass(std::string_view label)
{
    const std::string normalized = normalizeLabel(label);
    if (normalized == "yes" || normalized == "match")
        return 1;
    if (normalized == "no" || normalized == "non-match" || normalized == "no match")
        return 0;
    return -1;
}

std::unique_ptr<Metric> makeAccuracyMetric()
{
    return std::make_unique<AccuracyMetric>();
}

std::unique_ptr<Metric> makeMatchF1Metric()
{
    return std::make_unique<MatchF1Metric>();
}

}  // namespace tb::eval
