// PEFT's default LoRA target modules, one line per architecture.
#include "peft/defaults.h"

namespace tb {

std::vector<std::string> defaultLoraTargets(Architecture arch)
{
    switch (arch) {
    case Architecture::Llama:
    case Architecture::Mistral:
    case Architecture::Qwen2:
    case Architecture::Qwen3:
    case Architecture::Gemma3:
    // PEFT's table has no smollm3 (it asks for target_modules); its Llama layout takes Llama's.
    case Architecture::SmolLM3:
        return {"q_proj", "v_proj"};
    case Architecture::Gpt2:
        return {"c_attn"};
    }
    return {"q_proj", "v_proj"};
}

}  // namespace tb
