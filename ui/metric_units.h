// How the studio shows a metric's score: its units and decimals as core's eval/metric.h gives them
// (metricScale, metricDecimals), which plots and tables pick their axis and decimals from.
#pragma once

#include "eval/metric.h"

#include <QString>

#include <string>

namespace tb {

using eval::metricDecimals;
using eval::MetricScale;
using eval::metricScale;

inline QString formatScore(const std::string& metric, double value)
{
    return QString::number(value, 'f', metricDecimals(metric));
}

}  // namespace tb
