// The architecture registry: one factory per architecture file; a new architecture is one more
// line.
#pragma once

#include "model/causal_lm.h"
#include "model/safetensors.h"

#include <memory>

namespace tb {

std::shared_ptr<CausalLM>
makeLlama(const ModelConfig& config);  // llama.cpp: llama, mistral, qwen2, qwen3, smollm3
std::shared_ptr<CausalLM> makeGemma3(const ModelConfig& config);  // gemma3.cpp: gemma3_text
std::shared_ptr<CausalLM> makePhi3(const ModelConfig& config);    // phi3.cpp: phi3
std::shared_ptr<CausalLM> makeGpt2(const ModelConfig& config);    // gpt2.cpp

// The module for config.architecture (weights allocated, not loaded).
std::shared_ptr<CausalLM> createCausalLM(const ModelConfig& config);
// The same for weights to be loaded from `checkpoint`, checked first against its header: a
// config.json that describes more than twice the parameters the checkpoint holds values (a
// hidden_size or a layer count that is not the weights') is named before anything is allocated,
// not found tensor by tensor after allocating what the config describes (terabytes, for a hostile
// one).
std::shared_ptr<CausalLM> createCausalLM(const ModelConfig& config, const Checkpoint& checkpoint);

}  // namespace tb
