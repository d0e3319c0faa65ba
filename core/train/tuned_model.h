// The fine-tuned model of a run (base + method + newest checkpoint) behind the plain Model facade,
// for generation side by side with the base model and for checks against exported copies.
#pragma once

#include "model/model.h"

#include <memory>
#include <string>

namespace tb {

// Loads the run's base model, applies its method and copies in the newest complete checkpoint's
// trainable tensors. LoRA stays unmerged. options.dtype must be fp32 (the weights that trained). A
// run trained on a quantised base loads it quantised as it trained (options.quant is not used);
// quantizedBase false: on its original base instead, as its PEFT adapter applies.
std::unique_ptr<Model> loadTunedModel(const std::string& runDir,
                                      const LoadOptions& options = {"fp32", "cpu"},
                                      bool quantizedBase = true);

}  // namespace tb
