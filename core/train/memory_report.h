// The trainer's memory report: what the estimator (from config.json alone) predicted against what
// the first optimizer step measured, item by item. Internal to core (LibTorch types).
#pragma once

#include "model/causal_lm.h"
#include "train/metrics.h"
#include "train/train_config.h"

#include <cstdint>

namespace tb {

// Tensor memory (bytes) measured during the first optimizer step.
struct StepMemory {
    int64_t afterLoad = 0;      // the model loaded and the method applied
    int64_t afterForward = 0;   // after the first micro-batch's forward pass
    int64_t peak = 0;           // the step's peak
    int64_t gradientBytes = 0;  // the gradients alive before the update
    int64_t optimizerStateBytes = 0;
};

// step: the 1-based step measured; seq: its first micro-batch's width. Throws when the estimator
// refuses the config (the recipe then reports a warning instead).
MemoryReport compareWithEstimate(CausalLM& model, const TrainConfig& config,
                                 const StepMemory& measured, int64_t step, int64_t seq, bool cuda);

}  // namespace tb
