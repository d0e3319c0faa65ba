// The divergence guard's rules: non-finite loss or gradient norm, then a loss spike over the
// window.
#include "train/divergence_guard.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace tb {

DivergenceGuard::DivergenceGuard(double spikeFactor, int spikeWindow)
    : m_spikeFactor(spikeFactor), m_spikeWindow(spikeWindow)
{
}

std::optional<Diagnosis> DivergenceGuard::check(int64_t step, double loss, double gradNorm) const
{
    if (!std::isfinite(loss) || !std::isfinite(gradNorm))
        return Diagnosis{
            step, !std::isfinite(loss) ? "loss is not finite" : "gradient norm is not finite",
            !std::isfinite(loss) ? loss : gradNorm,
            "the learning rate is too high for this model and data, or the data holds a "
            "degenerate example",
            "lower optim.lr (e.g. by 10x), keep optim.clip_norm at 1.0, check the examples "
            "around this step, or use fp32"};
    if (m_spikeFactor <= 0 || static_cast<int>(m_recent.size()) < m_spikeWindow)
        return std::nullopt;
    const double mean = std::accumulate(m_recent.begin(), m_recent.end(), 0.0) /
                        static_cast<double>(m_recent.size());
    if (loss <= m_spikeFactor * mean)
        return std::nullopt;
    return Diagnosis{step,
                     "loss spiked to " + std::to_string(loss) + " (" + std::to_string(loss / mean) +
                         "x the recent mean " + std::to_string(mean) + ")",
                     loss, "an update overshot (learning rate too high) or an unusual batch",
                     "lower optim.lr, add warmup (optim.warmup_ratio 0.05), or raise spike_factor "
                     "if such batches are expected"};
}

Diagnosis DivergenceGuard::fp16Exhausted(int64_t step, double gradNorm)
{
    return Diagnosis{step, "fp16 gradients overflow even at loss scale 1", gradNorm,
                     "the gradients exceed fp16's range (65504) without any scaling",
                     "use precision bf16 (same memory, fp32's range) or fp32, or lower optim.lr"};
}

void DivergenceGuard::record(double loss)
{
    m_recent.push_back(loss);
    while (static_cast<int>(m_recent.size()) > std::max(1, m_spikeWindow))
        m_recent.pop_front();
}

void DivergenceGuard::restore(const std::vector<double>& recentLosses)
{
    m_recent.assign(recentLosses.begin(), recentLosses.end());
}

}  // namespace tb
