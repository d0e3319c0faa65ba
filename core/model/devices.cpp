// cudaDeviceCount, the CPU's capabilities and its half-precision matmul speed through LibTorch.
#include "model/devices.h"

#include <ATen/cpu/Utils.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>

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

double cpuHalfMatmulSpeedup(bool bf16)
{
    torch::NoGradGuard noGrad;
    const auto rate = [](torch::Dtype dtype) {
        const auto a = torch::randn({512, 512}).to(dtype);
        const auto b = torch::randn({512, 512}).to(dtype);
        auto c = torch::mm(a, b);  // warm-up: the library picks and packs its kernel
        double best = 1e30;
        for (int rep = 0; rep < 5; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            c = torch::mm(a, b);
            best = std::min(
                best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return 1.0 / best;
    };
    return rate(bf16 ? torch::kBFloat16 : torch::kHalf) / rate(torch::kFloat);
}

}  // namespace tb
