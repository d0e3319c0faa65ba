// Length statistics: nearest-rank percentiles, mean, round-edged histograms and over-limit counts.
#include "data/curate/stats.h"

#include "util/error.h"

#include <algorithm>

namespace tb {

namespace {

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

LengthTally tally(const std::vector<int64_t>& values)
{
    LengthTally t;
    for (const int64_t v : values)
        t.add(v);
    return t;
}

}  // namespace

LengthStats lengthStats(std::vector<int64_t> values)
{
    return tally(values).stats();
}

Histogram histogram(const std::vector<int64_t>& values, int bins)
{
    return tally(values).histogram(bins);
}

int64_t countOver(const std::vector<int64_t>& values, int64_t maxLength)
{
    return std::count_if(values.begin(), values.end(), [&](int64_t v) { return v > maxLength; });
}

void LengthTally::add(int64_t value, int64_t times)
{
    m_counts[value] += times;
    m_count += times;
    m_sum += static_cast<long double>(value) * times;
}

LengthStats LengthTally::stats() const
{
    LengthStats stats;
    if (m_count == 0)
        return stats;
    stats.count = m_count;
    stats.min = m_counts.begin()->first;
    stats.max = m_counts.rbegin()->first;
    // Nearest rank: the value at 1-based rank ceil(p * n / 100) of the sorted values.
    auto rank = [&](int percent) {
        const int64_t r = std::max<int64_t>(1, (percent * m_count + 99) / 100);
        int64_t seen = 0;
        for (const auto& [value, times] : m_counts)
            if ((seen += times) >= r)
                return value;
        return stats.max;
    };
    stats.median = rank(50);
    stats.p95 = rank(95);
    stats.mean = static_cast<double>(m_sum / m_count);
    return stats;
}

Histogram LengthTally::histogram(int bins) const
{
    if (bins < 1)
        fail("histogram needs at least 1 bin, got ", bins);
    Histogram h;
    if (m_count == 0)
        return h;
    const int64_t low = m_counts.begin()->first, high = m_counts.rbegin()->first;
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
    for (const auto& [value, times] : m_counts) {
        const int64_t bin = std::min(count - 1, (value - first) / width);
        h.counts[static_cast<size_t>(bin)] += times;
    }
    return h;
}

int64_t LengthTally::countOver(int64_t maxLength) const
{
    int64_t over = 0;
    for (auto it = m_counts.upper_bound(maxLength); it != m_counts.end(); ++it)
        over += it->second;
    return over;
}

}  // namespace tb
