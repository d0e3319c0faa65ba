// Interval: a closed range [lo, hi] of a statistic, such as a 95% confidence interval.
#pragma once

namespace tb {

struct Interval {
    double lo = 0, hi = 0;
};

}  // namespace tb
