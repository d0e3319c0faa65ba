// Length statistics: nearest-rank percentiles, mean, round-edged histograms and over-limit counts.
#include "data/curate/stats.h"

#include "util/error.h"

#include <algorithm>

namespace tb {

namespace {

// Value at nearest rank ceil(percent * n / 100) of sorted values (n > 0).
int64_t nearestRank(const std::vector<int64_t>& sorted, int percent)
{
    const auto n = static_cast<int64_t>(sorted.size());
    const int64_t rank = std::max<int64_t>(1, (percent * n + 99) / 100);
    return sorted[static_cast<size_t>(rank - 1)];
}

// floor(a / b) for b > 0, also for negative a.
int64_t floorDiv(int64_t a, int64_t b)
{
    const int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

// The round width after `width` in 1, 2, 5, 10, 20, 50, ...
int64_t nextRoundWidth(int64_t width)
{
    int64_t decade = 1;
    while (width >= 10 * decade)
        decade *= 10;
    const int64_t lead = width / decade;
    if (lead < 2)
        return 2 * decade;
    if (lead < 5)
        return 5 * decade;
    return 10 * decade;
}

}  // namespace

LengthStats lengthStats(std::vector<int64_t> values)
{
    LengthStats stats;
    if (values.empty())
        return stats;
    std::sort(values.begin(), values.end());
    stats.count = static_cast<int64_t>(values.size());
    stats.min = values.front();
    stats.max = values.back();
    stats.median = nearestRank(values, 50);
    stats.p95 = nearestRank(values, 95);
    long double sum = 0;
    for (const int64_t v : values)
        sum += v;
    stats.mean = static_cast<double>(sum / values.size());
    return stats;
}

Histogram histogram(const std::vector<int64_t>& values, int bins)
{
    if (bins < 1)
        fail("histogram needs at least 1 bin, got ", bins);
    Histogram h;
    if (values.empty())
        return h;
    const auto [lowIt, highIt] = std::minmax_element(values.begin(), values.end());
    const int64_t low = *lowIt, high = *highIt;
    int64_t width = 1, first = low, count = 1;
    if (high > low) {
        // Smallest round width with (high - first) / width <= bins, the top value closing the last
        // bin.
        for (;; width = nextRoundWidth(width)) {
            first = floorDiv(low, width) * width;
            count = std::max<int64_t>(1, (high - first + width - 1) / width);
            if (count <= bins)
                break;
        }
    }
    h.edges.resize(static_cast<size_t>(count) + 1);
    for (int64_t i = 0; i <= count; ++i)
        h.edges[static_cast<size_t>(i)] = first + i * width;
    h.counts.assign(static_cast<size_t>(count), 0);
    for (const int64_t v : values) {
        const int64_t bin = std::min(count - 1, (v - first) / width);
        ++h.counts[static_cast<size_t>(bin)];
    }
    return h;
}

int64_t countOver(const std::vector<int64_t>& values, int64_t maxLength)
{
    return std::count_if(values.begin(), values.end(), [&](int64_t v) { return v > maxLength; });
}

}  // namespace tb
