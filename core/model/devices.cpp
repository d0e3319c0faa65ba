// cudaDeviceCount and the CPU's capabilities through LibTorch.
#include "model/devices.h"

#include <ATen/cpu/Utils.h>
#include <torch/cuda.h>

namespace tb {

int cudaDeviceCount()
{
    return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

std::string cpuBf16Instructions()
{
    const auto caps = at::cpu::get_cpu_capabilities();
    auto has = [&](const char* key) {
        const auto it = caps.find(key);
        return it != caps.end() && it->second.isBool() && it->second.toBool();
    };
    if (has("amx_bf16"))
        return "AMX-BF16";
    if (has("avx512_bf16"))
        return "AVX512_BF16";
    return {};
}

}  // namespace tb
