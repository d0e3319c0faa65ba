// Applying a fine-tuning method to a loaded model: freezing, LoRA, bottleneck adapters, soft
// prompts. Internal to core (LibTorch types).
#pragma once

#include "model/causal_lm.h"
#include "peft/method.h"

#include <string>
#include <vector>

namespace tb {

class Tokenizer;

// Freezes what the method does not train and adds its modules (LoRA, adapters, prompt) and the
// trainable token rows the options resolve to for this model (peft/trainable_tokens.h). New
// parameters are created on the model's device in fp32 and initialised from `seed`. Throws
// tb::Error naming the config key when an option does not fit the model.
void applyMethod(CausalLM& model, const MethodOptions& run, const Tokenizer* tokenizer,
                 uint64_t seed);

// Parameters that train (requires_grad), with their names, in a stable order.
std::vector<std::pair<std::string, torch::Tensor>> trainableParameters(CausalLM& model);
int64_t countTrainable(CausalLM& model);

// LoRA layers folded into (merge) or taken out of (unmerge) their base weights.
void mergeLora(CausalLM& model);
void unmergeLora(CausalLM& model);

// Whether a parameter belongs to a method rather than to a plain model of the architecture: LoRA
// factors and trainable-token deltas (merged exports fold them in and write none).
bool isAdapterTensor(const std::string& name);

// Whether a parameter is exempt from weight decay (biases, norms, embeddings of soft prompts).
bool noWeightDecay(const std::string& name);

}  // namespace tb
