// DynamicLossScaler: fp16 dynamic loss scaling as a pure state machine (no tensors), so its rules
// are testable on any machine. The trainer multiplies the loss by scale() before backward, divides
// the gradients by it, and reports whether they came out finite:
//  - finite: the update is applied; after `growthInterval` finite steps in a row the scale grows;
//  - overflow: the update is skipped and the scale backs off;
//  - overflow with the scale already at `minScale`: the gradients overflow fp16 even unscaled, so
//  the
//    run cannot go on in fp16 (the trainer stops with a diagnosis instead of skipping forever).
// The defaults are the usual ones (initial 2^16, x2 every 2000 good steps, x0.5 on overflow).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

namespace tb {

struct LossScalerOptions {
    double initScale = 65536.0;
    double growthFactor = 2.0;
    double backoffFactor = 0.5;
    int64_t growthInterval = 2000;
    double minScale = 1.0;
};

class DynamicLossScaler {
public:
    enum class Outcome { Applied, Skipped, Exhausted };

    explicit DynamicLossScaler(LossScalerOptions options = {});

    double scale() const { return m_scale; }
    int64_t goodSteps() const { return m_goodSteps; }
    int64_t skippedSteps() const { return m_skipped; }

    // After backward and unscaling: whether every gradient was finite. Updates the scale.
    Outcome update(bool gradientsFinite);

    // For checkpoints: {"scale", "good_steps", "skipped"}; restore accepts a bare number (older
    // runs).
    nlohmann::json state() const;
    void restore(const nlohmann::json& state);

private:
    LossScalerOptions m_options;
    double m_scale;
    int64_t m_goodSteps = 0;
    int64_t m_skipped = 0;
};

}  // namespace tb
