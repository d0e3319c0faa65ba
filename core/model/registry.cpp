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
        return makeLlama(config);
    case Architecture::Gpt2:
        return makeGpt2(config);
    }
    fail(config.sourcePath, ": no implementation for architecture '", config.modelType, "'");
}

}  // namespace tb
