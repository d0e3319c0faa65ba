// Metrics of the answers themselves, without references: how often they end on their own (stop
// rate) and how long they are.
#pragma once

#include "eval/metric.h"

#include <memory>

namespace tb::eval {

// "stop_rate": the share of answers that ended with a stop token within their budget
// (MetricInput::stopped), 0-1. Statistics {stopped, 1}.
std::unique_ptr<Metric> makeStopRateMetric();

// "length": the mean number of generated tokens (MetricInput::answerTokens); lower is better.
// Statistics {tokens, 1}.
std::unique_ptr<Metric> makeLengthMetric();

}  // namespace tb::eval
