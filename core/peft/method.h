// The fine-tuning methods and their options (LoRA, bottleneck adapters, prompt tuning, partial), as
// a run config gives them: what peft/ applies to a model and memory/ plans for, without the rest of
// a run.
#pragma once

#include "quant/quant_format.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// Each closed choice is an enum with one name function (how run configs spell it) and one parse
// function (nullopt for a name it does not know; the caller reports it in its own terms).
enum class Method { Full, Partial, Lora, Adapter, Prompt };
const char* methodName(Method method);  // "full", "partial", "lora", "adapter", "prompt"
std::optional<Method> parseMethod(const std::string& name);

// Where bottleneck adapters sit: Houlsby after attention and MLP, Pfeiffer after the MLP only.
enum class AdapterKind { Houlsby, Pfeiffer };
const char* adapterKindName(AdapterKind kind);  // "houlsby", "pfeiffer"
std::optional<AdapterKind> parseAdapterKind(const std::string& name);

enum class AdapterActivation { Relu, Gelu, Silu, Tanh };
const char* adapterActivationName(AdapterActivation activation);  // "relu", "gelu", "silu", "tanh"
std::optional<AdapterActivation> parseAdapterActivation(const std::string& name);

struct LoraOptions {
    int rank = 8;
    double alpha = 16.0;
    double dropout = 0.0;
    std::vector<std::string> targets;  // empty: PEFT's default (peft/defaults.h)
    bool rslora = false;               // scaling alpha / sqrt(rank) instead of alpha / rank

    bool operator==(const LoraOptions&) const = default;
};

struct AdapterOptions {
    AdapterKind kind = AdapterKind::Houlsby;
    int size = 0;  // bottleneck width; 0 = hidden_size / reduction_factor
    int reductionFactor = 16;
    AdapterActivation activation = AdapterActivation::Relu;

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

// One entry of trainable_tokens: a token id, or a token as the vocabulary spells it ("</s>",
// "<|im_end|>").
struct TokenRef {
    int64_t id = -1;   // >= 0: this id
    std::string text;  // id < 0: the token whose piece this is

    bool operator==(const TokenRef&) const = default;
};

// trainable_tokens: rows of the token embedding, and of the head, that train beside a method that
// keeps both frozen (PEFT's trainable_token_indices); peft/trainable_tokens.h resolves them.
struct TrainableTokensOptions {
    bool automatic = true;         // "auto": the model's stop tokens (stopTokenIds)
    std::vector<TokenRef> tokens;  // the tokens when not automatic; empty: none

    bool operator==(const TrainableTokensOptions&) const = default;
};

// The method of a run and the options of each kind (only those of `method` apply; trainable tokens
// apply to every method that keeps the embedding and the head frozen).
struct MethodOptions {
    Method method = Method::Lora;
    LoraOptions lora;
    AdapterOptions adapter;
    PromptOptions prompt;
    PartialOptions partial;
    TrainableTokensOptions trainableTokens;
    // The frozen base weights held quantised (QLoRA): LoRA, adapters and prompt tuning only.
    QuantOptions quant = {};

    bool operator==(const MethodOptions&) const = default;
};

}  // namespace tb
