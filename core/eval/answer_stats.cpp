// The stop-rate and mean-length metrics, means over examples that need no reference.
#include "eval/answer_stats.h"

#include "eval/mean_metric.h"

namespace tb::eval {

namespace {

class StopRateMetric : public MeanMetric {
public:
    StopRateMetric() : MeanMetric("stop_rate") {}
    bool needsReferences() const override { return false; }

protected:
    double value(const MetricInput& input) const override { return input.stopped ? 1.0 : 0.0; }
};

class LengthMetric : public MeanMetric {
public:
    LengthMetric() : MeanMetric("length") {}
    bool needsReferences() const override { return false; }
    bool higherIsBetter() const override { return false; }
    bool directional() const override { return false; }

protected:
    double value(const MetricInput& input) const override
    {
        return static_cast<double>(input.answerTokens);
    }
};

}  // namespace

std::unique_ptr<Metric> makeStopRateMetric()
{
    return std::make_unique<StopRateMetric>();
}

std::unique_ptr<Metric> makeLengthMetric()
{
    return std::make_unique<LengthMetric>();
}

}  // namespace tb::eval
