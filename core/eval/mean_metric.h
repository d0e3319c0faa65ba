// MeanMetric: the base of metrics whose corpus score is the mean of a per-example value
// (statistics {value, 1}), so that the corpus score, resamples and example scores agree.
#pragma once

#include "eval/metric.h"

#include "util/error.h"

#include <string>
#include <utility>
#include <vector>

namespace tb::eval {

class MeanMetric : public Metric {
public:
    explicit MeanMetric(std::string name) : m_name(std::move(name)) {}
    std::string name() const override { return m_name; }
    std::vector<double> stats(const MetricInput& input) const override
    {
        if (needsReferences() && input.references.empty())
            fail(m_name, ": an example has no reference");
        return {value(input), 1.0};
    }
    // The mean of the values; 0 for no examples.
    double score(const std::vector<double>& summed) const override
    {
        if (summed.size() != 2)
            fail(m_name, ": expected 2 statistics, got ", summed.size());
        return summed[1] > 0 ? summed[0] / summed[1] : 0.0;
    }

protected:
    // The example's value (references are present when needsReferences()).
    virtual double value(const MetricInput& input) const = 0;

private:
    std::string m_name;
};

}  // namespace tb::eval
