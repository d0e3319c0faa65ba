// The CUDA backend (linked or loaded), cudaDeviceCount, the CPU's capabilities and its
// half-precision matmul speed through LibTorch.
#include "model/devices.h"

#include <ATen/cpu/Utils.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace tb {

namespace {

std::string g_cudaBackend;  // cudaBackendStatus(), set once by loadCudaBackend

// The folder of the libtorch_cpu.so this process runs with ("" if it cannot tell).
std::string torchLibDir()
{
    void* handle = dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD);
    if (!handle)
        return {};
    link_map* map = nullptr;
    std::string dir;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
        dir = std::filesystem::path(map->l_name).parent_path().string();
    dlclose(handle);
    return dir;
}

std::string loadBackend()
{
    // libc10_cuda registers CUDA's device guard when it is loaded: linked, it already has.
    if (c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA))
        return "linked";
    const char* env = std::getenv("TB_CUDA");
    const std::string mode = env ? env : "";
    if (mode == "off")
        return "not loaded: TB_CUDA=off";
    const std::string dir = torchLibDir();
    std::string lib;
    for (const char* rel : {"libtorch_cuda.so", "torch/lib/libtorch_cuda.so"}) {
        const auto p = std::filesystem::path(dir) / rel;
        std::error_code ec;
        if (!dir.empty() && std::filesystem::exists(p, ec)) {
            lib = p.string();
            break;
        }
    }
    if (lib.empty())
        return "not installed (Debian: install tunebench-cuda)";
    if (mode != "on") {
        void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (!driver)
            return "not loaded: no NVIDIA driver (libcuda.so.1)";
        dlclose(driver);
    }
    // Global: LibTorch's own lazily opened CUDA libraries (linalg, NVRTC) resolve against it.
    if (!dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
        const char* why = dlerror();
        return lib + " did not load: " + (why ? why : "unknown error");
    }
    if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA))
        return lib + " loaded but registered no CUDA backend";
    return "loaded from " + lib;
}

}  // namespace

void loadCudaBackend()
{
    static std::once_flag once;
    std::call_once(once, [] {
        try {
            g_cudaBackend = loadBackend();
        } catch (const std::exception& e) {
            g_cudaBackend = std::string("not loaded: ") + e.what();
        }
    });
}

std::string cudaBackendStatus()
{
    loadCudaBackend();
    return g_cudaBackend;
}

std::string cudaUnavailableReason()
{
    const std::string status = cudaBackendStatus();
    if (status != "linked" && status.rfind("loaded from ", 0) != 0)
        return "LibTorch's CUDA backend is " + status;
    if (torch::cuda::is_available())
        return {};
    // The runtime's own word, from the libcudart.so LibTorch runs with.
    using CountFn = int (*)(int*);
    using StringFn = const char* (*)(int);
    auto count = reinterpret_cast<CountFn>(dlsym(RTLD_DEFAULT, "cudaGetDeviceCount"));
    auto text = reinterpret_cast<StringFn>(dlsym(RTLD_DEFAULT, "cudaGetErrorString"));
    int n = 0;
    const int err = count ? count(&n) : 0;
    if (err != 0 && text)
        return std::string("the CUDA runtime says: ") + text(err);
    return "the CUDA runtime sees no device";
}

int cudaDeviceCount()
{
    loadCudaBackend();
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
