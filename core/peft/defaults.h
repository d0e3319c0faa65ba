// What PEFT chooses per architecture when a run names no LoRA targets (peft's
// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING), for every architecture Tunebench loads.
#pragma once

#include "model/config.h"

#include <string>
#include <vector>

namespace tb {

// The LoRA target modules PEFT defaults to on this architecture: q_proj, v_proj (llama, mistral,
// qwen2, qwen3, gemma3_text) or c_attn (gpt2). tests/interop/peft_defaults.py reads peft's own
// table.
std::vector<std::string> defaultLoraTargets(Architecture arch);

}  // namespace tb
