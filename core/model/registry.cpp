// Maps each supported architecture to the file that implements it.
#include "model/registry.h"

#include "util/error.h"

namespace tb {

std::shared_ptr<CausalLM> createCausalLM(const ModelConfig& config)
{
    switch (config.architecture) {
    case Architecture::Llama:
    case Architecture::Mistral:
    case Architecture::Qwen2:
    case Architecture::Qwen3:
    case Architecture::SmolLM3:
        return makeLlama(config);
    case Architecture::Gemma3:
        return makeGemma3(config);
    case Architecture::Phi3:
        return makePhi3(config);
    case Architecture::Gpt2:
        return makeGpt2(config);
    }
    fail(config.sourcePath, ": no implementation for architecture '", config.modelType, "'");
}

std::shared_ptr<CausalLM> createCausalLM(const ModelConfig& config, const Checkpoint& checkpoint)
{
    int64_t stored = 0;
    for (const std::string& name : checkpoint.names())
        stored += checkpoint.find(name)->info->numel();
    const int64_t described = parameterCount(config);
    // Within twice the values, loading names each missing or misshapen tensor, which says more;
    // checkpoints saved quantised hold fewer values, and loading names their format.
    if (described / 2 > stored && quantizedCheckpointFormat(checkpoint).empty())
        fail(config.sourcePath, " describes ", described, " parameters, but ",
             checkpoint.location(), " holds ", stored,
             " values: the config does not belong to these weights");
    return createCausalLM(config);
}

}  // namespace tb
