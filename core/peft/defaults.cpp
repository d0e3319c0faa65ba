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
    // PEFT's table has no phi3 either; its fused q, k, v take the place of Llama's q and v.
    case Architecture::Phi3:
        return {"qkv_proj"};
    case Architecture::Gpt2:
        return {"c_attn"};
    }
    return {"q_proj", "v_proj"};
}

}  // namespace tb
