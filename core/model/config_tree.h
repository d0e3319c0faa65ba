// The tensors a checkpoint of a config holds, named and shaped as Hugging Face saves them, computed
// from config.json alone (no weights, no LibTorch module): the Model page's module tree for a model
// that is only a config.
#pragma once

#include "model/config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct ConfigTensor {
    std::string name;            // "model.layers.0.self_attn.q_proj.weight"
    std::vector<int64_t> shape;  // as stored: Linear [out, in]; GPT-2's Conv1D [in, out]
    int64_t numel() const;
};

// The checkpoint's tensors in module order, as transformers' save_pretrained of the *ForCausalLM
// writes them: "model." (llama, mistral, qwen2, qwen3, gemma3_text) or "transformer." (gpt2)
// prefixes, and lm_head.weight only when the head is untied (a tied head is the embedding, stored
// once). Their element counts add up to parameterCount(config).
std::vector<ConfigTensor> configTensors(const ModelConfig& config);

}  // namespace tb
