// Trainable-parameter counts of every method from a model's config (no weights), equal to PEFT's
// counts.
#pragma once

#include "model/config.h"
#include "peft/method.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

// One linear layer of a block: its name (q_proj ... down_proj; gpt2: c_attn, c_proj, c_fc,
// mlp.c_proj), in and out features, and whether it has a bias.
struct LinearShape {
    std::string name;
    int64_t in, out;
    bool bias;
};
// The linear layers of one block, from the config alone.
std::vector<LinearShape> blockLinearShapes(const ModelConfig& config);

// Names of the linear layers of one block that LoRA can target, e.g. q_proj ... down_proj (gpt2:
// c_attn, c_proj, c_fc); "lm_head" is also accepted when the head is untied.
std::vector<std::string> loraTargetNames(const ModelConfig& config);
// The targets a config asks for: its list, or PEFT's default for the architecture when empty
// (defaultLoraTargets).
std::vector<std::string> resolvedLoraTargets(const ModelConfig& model, const LoraOptions& lora);
// Bottleneck width: adapter.size, or hidden_size / reduction_factor (at least 1).
int64_t adapterSize(const ModelConfig& model, const AdapterOptions& adapter);

// Trainable parameters of `method` with its options on this architecture, trainable tokens included
// (whose "auto" and token texts read the model folder's tokenizer and generation_config.json, no
// weights). Throws tb::Error naming the key when an option does not fit the model (a LoRA target
// that matches no layer, too many blocks, a trainable token outside the vocabulary).
int64_t trainableParameterCount(const ModelConfig& model, const MethodOptions& run);

// How one checkpoint tensor (Hugging Face name, e.g. "model.layers.1.self_attn.q_proj.weight")
// takes part in training under `run`, for display: "trains" (full; partial's blocks and modules),
// "LoRA" (frozen, with a trainable low-rank update: a targeted layer's weight) or "frozen".
// Adapters and soft prompts add new tensors and train none of the checkpoint's.
std::string tensorTrainingRole(const ModelConfig& model, const MethodOptions& run,
                               const std::string& name);

}  // namespace tb
