// The fine-tuned model of a run (base + method + newest checkpoint) behind the plain Model facade,
// for generation side by side with the base model and for checks against exported copies.
#pragma once

#include "model/model.h"

#include <memory>
#include <string>

namespace tb {

// Loads the run's base model, applies its method and copies in the newest complete checkpoint's
// trainable tensors. LoRA stays unmerged. options.dtype must be fp32 (the weights that trained).
std::unique_ptr<Model> loadTunedModel(const std::string& runDir,
                                      const LoadOptions& options = {"fp32", "cpu"});

}  // namespace tb
