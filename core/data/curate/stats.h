// Summary statistics of record lengths (characters or tokens): count, extremes, nearest-rank
// percentiles, mean, a histogram with round bin edges, and how many exceed a limit.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace tb {

struct LengthStats {
    int64_t count = 0, min = 0, median = 0, p95 = 0, max = 0;
    double mean = 0;
};

// Percentiles use the nearest-rank convention: the p-th percentile of n sorted values is the value
// at 1-based rank ceil(p * n / 100). So the median is the lower middle value for an even count
// (of {1, 2, 3, 4}: 2) and p95 of 20 values is the 19th. All fields are 0 for no values.
LengthStats lengthStats(std::vector<int64_t> values);

// counts[i] holds the values in [edges[i], edges[i+1]), the last bin also holding edges.back().
// The bin width is a round number (1, 2 or 5 times a power of ten, at least 1), the first edge a
// multiple of it, and the bin count the fewest that cover the values, at most `bins`.
// No values: both vectors empty. All values equal v: one bin [v, v + 1]. Throws when bins < 1.
struct Histogram {
    std::vector<int64_t> edges;  // counts.size() + 1 increasing edges
    std::vector<int64_t> counts;
};
Histogram histogram(const std::vector<int64_t>& values, int bins);

// How many values exceed maxLength (strictly greater).
int64_t countOver(const std::vector<int64_t>& values, int64_t maxLength);

// The same three summaries of values added one at a time, holding each distinct value once with
// its count: memory grows with the distinct lengths (a few thousand), not with the records.
class LengthTally {
public:
    void add(int64_t value, int64_t times = 1);
    int64_t count() const { return m_count; }
    LengthStats stats() const;
    Histogram histogram(int bins) const;
    int64_t countOver(int64_t maxLength) const;

private:
    std::map<int64_t, int64_t> m_counts;  // value -> how many times it was added
    int64_t m_count = 0;
    long double m_sum = 0;
};

}  // namespace tb
