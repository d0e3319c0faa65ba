// Metric: one evaluation metric as per-example sufficient statistics plus the corpus score computed
// from their sum, so that corpus scores, bootstrap resamples and paired comparisons share one code
// path. makeMetric builds a metric from its name (see metricNames()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tb::eval {

// One scored example: the model's answer and what it is compared with.
struct MetricInput {
    std::string prediction;
    std::vector<std::string> references;  // at least one for reference-based metrics
    std::string source;                   // the source text (terminology adherence); may be empty
    bool stopped = false;                 // the answer ended with a stop token within its budget
    int64_t answerTokens = 0;             // generated tokens
};

// Options some metrics read.
struct MetricOptions {
    // Terminology adherence: source term -> required target term (loaded by loadGlossary).
    std::vector<std::pair<std::string, std::string>> glossary;
    bool rougeStemmer = false;  // ROUGE with rouge-score's Porter stemmer
};

class Metric {
public:
    virtual ~Metric() = default;
    virtual std::string name() const = 0;
    // Sufficient statistics of one example; always the same length for a metric. Corpus statistics
    // are the element-wise sum over examples.
    virtual std::vector<double> stats(const MetricInput& input) const = 0;
    // The corpus score from summed statistics, in the reference implementation's units (0-100 for
    // sacrebleu's BLEU, chrF and TER; 0-1 for the others).
    virtual double score(const std::vector<double>& summed) const = 0;
    // The score of one example for predictions.jsonl (sentence BLEU with effective order for BLEU;
    // by default the corpus score of that example alone).
    virtual double exampleScore(const MetricInput& input) const { return score(stats(input)); }
    // Whether a higher score is better (false for TER and mean length).
    virtual bool higherIsBetter() const { return true; }
    // Whether a difference is better or worse at all (false for mean length: a description).
    virtual bool directional() const { return true; }
    // Whether the metric needs references (false for stop rate and mean length).
    virtual bool needsReferences() const { return true; }
};

// A metric's units: sacrebleu's BLEU, chrF and TER are 0-100, the mean answer length counts
// tokens, every other metric is 0-1.
enum class MetricScale { Unit, Percent, Tokens };
MetricScale metricScale(const std::string& name);
// Decimals to show: two for 0-100 metrics and lengths, four for 0-1 ones.
int metricDecimals(const std::string& name);

// The names makeMetric knows, in display order.
const std::vector<std::string>& metricNames();
// Throws tb::Error naming the metric and listing the known ones when the name is unknown.
std::unique_ptr<Metric> makeMetric(const std::string& name, const MetricOptions& options = {});

}  // namespace tb::eval
