// Opening another model: the run config's options that depend on the architecture, reset to the
// new model's defaults, each change named so the Model page can say exactly what changed.
#pragma once

#include "model/config.h"
#include "tokenizer/chat_template.h"
#include "train/train_config.h"

#include <QString>

#include <optional>
#include <vector>

namespace tb {

// One option that opening a model reset: its name as the pages label it, its value before and
// after.
struct ConfigReset {
    QString option;
    QString before, after;

    bool operator==(const ConfigReset&) const = default;
};

// Resets in `config` every option that depends on the architecture to `model`'s defaults: the LoRA
// targets (PEFT's, peft/defaults.h), partial training's blocks and extra modules, the adapter
// placement and bottleneck size, the chat template (the model's own when it has one,
// `ownTemplate`; else `fallback`, the family the studio uses by default) and a max length
// beyond the model's context. Returns what changed, in that order; an option already at its new
// value is not listed.
std::vector<ConfigReset> resetForModel(TrainConfig& config, const ModelConfig& model,
                                       bool ownTemplate,
                                       std::optional<ChatTemplateFamily> fallback);

// "Llama", "Mistral", "Qwen2", "Qwen3", "GPT-2".
QString architectureTitle(Architecture arch);

// "Opened gpt2 (GPT-2): LoRA targets q_proj, v_proj → c_attn; chat template alpaca → model's
// own", or "...: nothing to reset" when every option already fits.
QString modelSwitchNote(const QString& modelName, const ModelConfig& model,
                        const std::vector<ConfigReset>& resets);

}  // namespace tb
