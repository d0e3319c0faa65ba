// The learning-rate schedule and the planned number of optimizer steps of a run: pure functions of
// the config, so the studio draws the planned curve before the first step and the trainer follows
// it.
#pragma once

#include "train/train_config.h"

#include <cstdint>
#include <vector>

namespace tb {

int64_t warmupStepsFor(const OptimOptions& optim, int64_t totalSteps);
double learningRateAt(const OptimOptions& optim, int64_t step,
                      int64_t totalSteps);  // step: 0-based
std::vector<double> plannedSchedule(const OptimOptions& optim, int64_t totalSteps);
// Optimizer steps a run will take: max_steps when set, else epochs x ceil(sequences / (batch x
// accum)).
int64_t plannedSteps(const TrainConfig& config, int64_t trainSequences);

}  // namespace tb
