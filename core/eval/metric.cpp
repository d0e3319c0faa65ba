// The metric registry: every metric Tunebench scores, by the name the CLI, run configs and the
// studio use.
#include "eval/metric.h"

#include "eval/answer_stats.h"
#include "eval/bleu.h"
#include "eval/chrf.h"
#include "eval/classification.h"
#include "eval/rouge.h"
#include "eval/squad.h"
#include "eval/ter.h"
#include "eval/terminology.h"
#include "util/error.h"

namespace tb::eval {

const std::vector<std::string>& metricNames()
{
    static const std::vector<std::string> names{
        "exact_match", "f1",     "bleu",     "chrf",     "chrf++",      "ter",       "rouge1",
        "rouge2",      "rougeL", "accuracy", "match_f1", "terminology", "stop_rate", "length"};
    return names;
}

MetricScale metricScale(const std::string& name)
{
    if (name == "bleu" || name == "chrf" || name == "chrf++" || name == "ter")
        return MetricScale::Percent;
    if (name == "length")
        return MetricScale::Tokens;
    return MetricScale::Unit;
}

int metricDecimals(const std::string& name)
{
    return metricScale(name) == MetricScale::Unit ? 4 : 2;
}

std::unique_ptr<Metric> makeMetric(const std::string& name, const MetricOptions& options)
{
    if (name == "exact_match")
        return makeExactMatchMetric();
    if (name == "f1")
        return makeTokenF1Metric();
    if (name == "bleu")
        return makeBleuMetric();
    if (name == "chrf")
        return makeChrfMetric(0);
    if (name == "chrf++")
        return makeChrfMetric(2);
    if (name == "ter")
        return makeTerMetric();
    if (name == "rouge1")
        return makeRougeMetric(1, options.rougeStemmer);
    if (name == "rouge2")
        return makeRougeMetric(2, options.rougeStemmer);
    if (name == "rougeL")
        return makeRougeMetric(kRougeL, options.rougeStemmer);
    if (name == "accuracy")
        return makeAccuracyMetric();
    if (name == "match_f1")
        return makeMatchF1Metric();
    if (name == "terminology") {
        if (options.glossary.empty())
            fail("metric 'terminology' needs a glossary of source -> target terms (--glossary "
                 "FILE)");
        return makeTerminologyMetric(options.glossary);
    }
    if (name == "stop_rate")
        return makeStopRateMetric();
    if (name == "length")
        return makeLengthMetric();
    std::string known;
    for (const auto& n : metricNames())
        known += (known.empty() ? "" : ", ") + n;
    fail("unknown metric '", name, "' (known: ", known, ")");
}

}  // namespace tb::eval
