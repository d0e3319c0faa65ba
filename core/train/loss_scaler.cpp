// DynamicLossScaler: backoff on overflow, growth after a run of finite steps, a floor that ends the
// run.
#include "train/loss_scaler.h"

#include <algorithm>

namespace tb {

DynamicLossScaler::DynamicLossScaler(LossScalerOptions options)
    : m_options(options), m_scale(options.initScale)
{
}

DynamicLossScaler::Outcome DynamicLossScaler::update(bool gradientsFinite)
{
    if (!gradientsFinite) {
        m_goodSteps = 0;
        ++m_skipped;
        if (m_scale <= m_options.minScale)
            return Outcome::Exhausted;
        m_scale = std::max(m_options.minScale, m_scale * m_options.backoffFactor);
        return Outcome::Skipped;
    }
    if (++m_goodSteps >= m_options.growthInterval) {
        m_goodSteps = 0;
        m_scale *= m_options.growthFactor;
    }
    return Outcome::Applied;
}

nlohmann::json DynamicLossScaler::state() const
{
    return {{"scale", m_scale}, {"good_steps", m_goodSteps}, {"skipped", m_skipped}};
}

void DynamicLossScaler::restore(const nlohmann::json& state)
{
    if (state.is_number()) {
        m_scale = state.get<double>();
        return;
    }
    m_scale = state.value("scale", m_options.initScale);
    m_goodSteps = state.value("good_steps", int64_t{0});
    m_skipped = state.value("skipped", int64_t{0});
}

}  // namespace tb
