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
// refuses the config (the recipe then reports a warning instead). Pair objectives: seq is the
// width of the micro-batch's sequences (chosen and rejected padded alike). Items: weights (the
// policy's parameters; a reward head named score.weight among them is moved to `head`),
// gradients and optimizer_states (every tensor the optimizer holds, so the reward head's too),
// reference (a copy's parameters, when measured), head (reward), activations (tensors alive after
// the forward pass beyond those after loading: activations, logits and log-probability buffers)
// and total (the step's peak). docs/memory.md, "Preference objectives and reward models".
// reference: DPO's and IPO's frozen reference copy when the trainer holds one (its parameters are
// compared, exactly, with the reference item; it is not among the policy's weights, but it is in
// afterLoad and the peak when loaded before the first step); null: no reference item.
MemoryReport compareWithEstimate(CausalLM& model, const TrainConfig& config,
                                 const StepMemory& measured, int64_t step, int64_t seq, bool cuda,
                                 CausalLM* reference = nullptr, int worldSize = 1);

}  // namespace tb
