// Percentile bootstrap over summed per-example statistics, single and paired.
#include "eval/bootstrap.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace tb::eval {

namespace {

// The length every example's statistics share; throws when they differ or there are none.
size_t statsWidth(const Metric& metric, const std::vector<std::vector<double>>& stats)
{
    if (stats.empty())
        fail(metric.name(), ": bootstrap of no examples");
    const size_t width = stats.front().size();
    for (size_t i = 1; i < stats.size(); ++i)
        if (stats[i].size() != width)
            fail(metric.name(), ": example ", i + 1, " has ", stats[i].size(),
                 " statistics, example 1 has ", width);
    return width;
}

void checkOptions(int resamples, double confidence)
{
    if (resamples < 1)
        fail("bootstrap: resamples must be at least 1, got ", resamples);
    if (!(confidence > 0 && confidence < 1))
        fail("bootstrap: confidence must lie in (0, 1), got ", confidence);
}

std::vector<double> sumAll(const std::vector<std::vector<double>>& stats, size_t width)
{
    std::vector<double> sum(width, 0.0);
    for (const auto& example : stats)
        for (size_t k = 0; k < width; ++k)
            sum[k] += example[k];
    return sum;
}

// Draws of indices in [0, n): the high 64 bits of a 64-bit draw times n (a fixed map from the
// generator's output, unlike std::uniform_int_distribution, whose algorithm each library picks).
class IndexSampler {
public:
    IndexSampler(uint64_t seed, size_t n) : m_rng(seed), m_n(n) {}
    size_t next()
    {
        const unsigned __int128 product =
            static_cast<unsigned __int128>(m_rng()) * static_cast<unsigned __int128>(m_n);
        return static_cast<size_t>(product >> 64);
    }

private:
    std::mt19937_64 m_rng;
    uint64_t m_n;
};

Interval percentileInterval(std::vector<double> values, double confidence)
{
    std::sort(values.begin(), values.end());
    const double tail = (1.0 - confidence) / 2.0;
    return {quantileSorted(values, tail), quantileSorted(values, 1.0 - tail)};
}

}  // namespace

double quantileSorted(const std::vector<double>& sorted, double q)
{
    if (sorted.empty())
        fail("quantile of no values");
    if (!(q >= 0 && q <= 1))
        fail("quantile: q must lie in [0, 1], got ", q);
    const double virtualIndex = double(sorted.size() - 1) * q;
    const double below = std::floor(virtualIndex);
    if (below >= double(sorted.size() - 1))
        return sorted.back();
    const auto i = static_cast<size_t>(below);
    const double a = sorted[i], b = sorted[i + 1];
    const double t = virtualIndex - below;
    // numpy's _lerp: from the nearer end, so that t = 1 gives b exactly.
    const double diff = b - a;
    return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

CorpusScore bootstrapScore(const Metric& metric,
                           const std::vector<std::vector<double>>& exampleStats, int resamples,
                           uint64_t seed, double confidence)
{
    checkOptions(resamples, confidence);
    const size_t width = statsWidth(metric, exampleStats);
    const size_t n = exampleStats.size();
    CorpusScore out;
    out.score = metric.score(sumAll(exampleStats, width));
    IndexSampler sampler(seed, n);
    std::vector<double> scores;
    scores.reserve(static_cast<size_t>(resamples));
    std::vector<double> sum(width);
    for (int r = 0; r < resamples; ++r) {
        std::fill(sum.begin(), sum.end(), 0.0);
        for (size_t draw = 0; draw < n; ++draw) {
            const auto& example = exampleStats[sampler.next()];
            for (size_t k = 0; k < width; ++k)
                sum[k] += example[k];
        }
        scores.push_back(metric.score(sum));
    }
    out.ci = percentileInterval(std::move(scores), confidence);
    return out;
}

PairedDelta pairedBootstrap(const Metric& metric, const std::vector<std::vector<double>>& statsA,
                            const std::vector<std::vector<double>>& statsB, int resamples,
                            uint64_t seed, double confidence)
{
    checkOptions(resamples, confidence);
    if (statsA.size() != statsB.size())
        fail(metric.name(), ": paired bootstrap of ", statsA.size(), " and ", statsB.size(),
             " examples; both systems must be scored on the same examples");
    const size_t widthA = statsWidth(metric, statsA);
    const size_t widthB = statsWidth(metric, statsB);
    if (widthA != widthB)
        fail(metric.name(), ": the systems have ", widthA, " and ", widthB, " statistics");
    const size_t n = statsA.size();
    PairedDelta out;
    out.a = metric.score(sumAll(statsA, widthA));
    out.b = metric.score(sumAll(statsB, widthB));
    out.delta = out.b - out.a;
    IndexSampler sampler(seed, n);
    std::vector<double> deltas;
    deltas.reserve(static_cast<size_t>(resamples));
    std::vector<double> sumA(widthA), sumB(widthB);
    for (int r = 0; r < resamples; ++r) {
        std::fill(sumA.begin(), sumA.end(), 0.0);
        std::fill(sumB.begin(), sumB.end(), 0.0);
        for (size_t draw = 0; draw < n; ++draw) {
            const size_t i = sampler.next();
            for (size_t k = 0; k < widthA; ++k) {
                sumA[k] += statsA[i][k];
                sumB[k] += statsB[i][k];
            }
        }
        deltas.push_back(metric.score(sumB) - metric.score(sumA));
    }
    out.ci = percentileInterval(std::move(deltas), confidence);
    out.excludesZero = out.ci.lo > 0 || out.ci.hi < 0;
    return out;
}

}  // namespace tb::eval
