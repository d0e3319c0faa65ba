// The architecture registry: one factory per architecture file; a new architecture is one more
// line.
#pragma once

#include "model/causal_lm.h"

#include <memory>

namespace tb {

std::shared_ptr<CausalLM>
makeLlama(const ModelConfig& config);  // llama.cpp: llama, mistral, qwen2, qwen3
std::shared_ptr<CausalLM> makeGpt2(const ModelConfig& config);  // gpt2.cpp

// The module for config.architecture (weights allocated, not loaded).
std::shared_ptr<CausalLM> createCausalLM(const ModelConfig& config);

}  // namespace tb
