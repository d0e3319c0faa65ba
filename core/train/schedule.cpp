// The learning-rate schedule (warmup, then constant, linear or cosine decay) and the planned step
// count.
#include "train/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tb {

// Warmup W = warmup_steps when > 0, else round(warmup_ratio x total).
int64_t warmupStepsFor(const OptimOptions& optim, int64_t totalSteps)
{
    if (optim.warmupSteps > 0)
        return optim.warmupSteps;
    return std::llround(optim.warmupRatio * static_cast<double>(std::max<int64_t>(totalSteps, 0)));
}

// For 0-based step s, peak lr, floor min_lr, W warmup steps and T total steps:
//   s < W:  lr x (s + 1) / W                        (linear warmup; the first step is lr / W)
//   else:   p = clamp((s - W) / max(1, T - W), 0, 1)
//           constant: lr
//           linear:   min_lr + (lr - min_lr) x (1 - p)
//           cosine:   min_lr + (lr - min_lr) x 0.5 x (1 + cos(pi x p))
// so the last step (s = T - 1) is one decay step above min_lr: p = (T - 1 - W) / (T - W).
double learningRateAt(const OptimOptions& optim, int64_t step, int64_t totalSteps)
{
    const int64_t s = std::max<int64_t>(step, 0);
    const int64_t warmup = warmupStepsFor(optim, totalSteps);
    if (s < warmup)
        return optim.lr * static_cast<double>(s + 1) / static_cast<double>(warmup);
    if (optim.schedule == ScheduleKind::Constant)
        return optim.lr;
    const double span = static_cast<double>(std::max<int64_t>(1, totalSteps - warmup));
    const double p = std::clamp(static_cast<double>(s - warmup) / span, 0.0, 1.0);
    if (optim.schedule == ScheduleKind::Linear)
        return optim.minLr + (optim.lr - optim.minLr) * (1.0 - p);
    return optim.minLr + (optim.lr - optim.minLr) * 0.5 * (1.0 + std::cos(std::numbers::pi * p));
}

std::vector<double> plannedSchedule(const OptimOptions& optim, int64_t totalSteps)
{
    std::vector<double> out;
    out.reserve(static_cast<size_t>(std::max<int64_t>(totalSteps, 0)));
    for (int64_t s = 0; s < totalSteps; ++s)
        out.push_back(learningRateAt(optim, s, totalSteps));
    return out;
}

int64_t plannedSteps(const TrainConfig& config, int64_t trainSequences)
{
    if (config.maxSteps > 0)
        return config.maxSteps;
    const int64_t perStep =
        std::max<int64_t>(1, int64_t(config.batchSize) * std::max(1, config.gradAccum));
    const int64_t perEpoch = (std::max<int64_t>(trainSequences, 0) + perStep - 1) / perStep;
    return std::max<int64_t>(1, int64_t(std::max(config.epochs, 1)) * perEpoch);
}

}  // namespace tb
