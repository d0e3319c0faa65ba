// The fine-tuning methods and their options (LoRA, bottleneck adapters, prompt tuning, partial), as
// a run config gives them: what peft/ applies to a model and memory/ plans for, without the rest of
// a run.
#pragma once

#include <string>
#include <vector>

namespace tb {

enum class Method { Full, Partial, Lora, Adapter, Prompt };
const char* methodName(Method method);  // "full", "partial", "lora", "adapter", "prompt"

struct LoraOptions {
    int rank = 8;
    double alpha = 16.0;
    double dropout = 0.0;
    std::vector<std::string> targets;  // empty: q_proj,v_proj (c_attn for gpt2)
    bool rslora = false;               // scaling alpha / sqrt(rank) instead of alpha / rank

    bool operator==(const LoraOptions&) const = default;
};

struct AdapterOptions {
    std::string kind = "houlsby";  // houlsby (after attention and MLP) | pfeiffer (after MLP)
    int size = 0;                  // bottleneck width; 0 = hidden_size / reduction_factor
    int reductionFactor = 16;
    std::string activation = "relu";  // relu | gelu | silu | tanh

    bool operator==(const AdapterOptions&) const = default;
};

struct PromptOptions {
    int numTokens = 16;
    std::string initText;  // empty: random init; else embeddings of this text's tokens (repeated)

    bool operator==(const PromptOptions&) const = default;
};

struct PartialOptions {
    int trainableBlocks = 1;           // the last N transformer blocks train
    std::vector<std::string> modules;  // also train: "embeddings", "lm_head", "norms"

    bool operator==(const PartialOptions&) const = default;
};

// The method of a run and the options of each kind (only those of `method` apply).
struct MethodOptions {
    Method method = Method::Lora;
    LoraOptions lora;
    AdapterOptions adapter;
    PromptOptions prompt;
    PartialOptions partial;

    bool operator==(const MethodOptions&) const = default;
};

}  // namespace tb
