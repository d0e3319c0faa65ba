// Model::Impl: what the facade holds (the LibTorch module, device, dtype). Internal to core.
#pragma once

#include "model/causal_lm.h"
#include "model/model.h"

#include <memory>

namespace tb {

struct Model::Impl {
    std::shared_ptr<CausalLM> module;
    torch::Device device{torch::kCPU};
    torch::Dtype dtype = torch::kFloat32;
};

torch::Dtype
parseTorchDtype(const std::string& name);  // fp32 | bf16 | fp16 (also float32, bfloat16, float16)
torch::Device parseTorchDevice(const std::string& name);  // cpu | cuda | cuda:N | auto

// Whether a decoding step after `cached` positions leaves LongRoPE's original context (Phi-3's
// rope_type longrope): its rotary tables then change for every position, so the cache is built
// again (transformers' generate() drops its cache there).
inline bool longRopeSwitches(const ModelConfig& c, int64_t cached)
{
    return c.ropeScaling.type == "longrope" && cached == c.ropeScaling.originalMaxPositions;
}

}  // namespace tb
