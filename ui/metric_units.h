// How the studio shows a metric's score: sacrebleu's BLEU, chrF and TER are 0-100, the mean answer
// length counts tokens, every other metric is 0-1 (eval/metric.h); plots and tables pick their
// axis and decimals from this.
#pragma once

#include <QString>

#include <string>

namespace tb {

enum class MetricScale { Unit, Percent, Tokens };

inline MetricScale metricScale(const std::string& name)
{
    if (name == "bleu" || name == "chrf" || name == "chrf++" || name == "ter")
        return MetricScale::Percent;
    if (name == "length")
        return MetricScale::Tokens;
    return MetricScale::Unit;
}

// Two decimals for 0-100 metrics and lengths, four for 0-1 ones (as the scorecard's Markdown).
inline int metricDecimals(const std::string& name)
{
    return metricScale(name) == MetricScale::Unit ? 4 : 2;
}

inline QString formatScore(const std::string& metric, double value)
{
    return QString::number(value, 'f', metricDecimals(metric));
}

}  // namespace tb
