// The kernel checks of quant_check.h: a seeded random weight quantised on CUDA, dequantised by the
// kernel (dequant_cuda.h) and by the LibTorch path, compared in units in the last place.
#include "quant/quant_check.h"

#include "quant/dequant_cuda.h"
#include "quant/quantize.h"
#include "util/error.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace tb {

namespace {

torch::Dtype checkDtype(const std::string& name)
{
    if (name == "fp32")
        return torch::kFloat32;
    if (name == "bf16")
        return torch::kBFloat16;
    if (name == "fp16")
        return torch::kFloat16;
    fail("kernel check: unknown dtype '", name, "' (use fp32, bf16 or fp16)");
}

// The quantised random weight of the check, on cuda:0.
QuantizedWeight randomQuantized(const QuantOptions& options, int64_t rows, int64_t cols,
                                uint64_t seed)
{
    if (!torch::cuda::is_available())
        fail("kernel check: no CUDA device");
    if (!options.enabled())
        fail("kernel check: quant none has nothing to dequantise");
    if (rows <= 0 || cols <= 0)
        fail("kernel check: rows and cols must be positive (", rows, " x ", cols, ")");
    auto generator = at::detail::createCPUGenerator(seed);
    torch::Tensor w = torch::randn({rows, cols}, generator, torch::kFloat32);
    // Rows of different magnitudes, so the outputs span several exponents.
    const torch::Tensor scale =
        torch::pow(2.0, torch::remainder(torch::arange(rows, torch::kFloat32), 5) - 2);
    w = (w * scale.unsqueeze(1)).to(torch::Device(torch::kCUDA, 0));
    return quantizeWeight(w, options);
}

// The monotonic integer line of a float's bit pattern (sign-magnitude to two's complement):
// neighbouring values differ by one, +0 and -0 coincide.
torch::Tensor orderedBits(const torch::Tensor& t)
{
    const bool wide = t.scalar_type() == torch::kFloat32;
    const torch::Tensor bits =
        t.contiguous().view(wide ? torch::kInt32 : torch::kInt16).to(torch::kInt64);
    const int64_t magnitude = wide ? 0x7fffffffLL : 0x7fffLL;
    return torch::where(bits < 0, -torch::bitwise_and(bits, magnitude), bits);
}

int64_t maxUlp(const torch::Tensor& a, const torch::Tensor& b)
{
    if (a.numel() == 0)
        return 0;
    return (orderedBits(a.cpu()) - orderedBits(b.cpu())).abs().max().item<int64_t>();
}

double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b)
{
    if (a.numel() == 0)
        return 0;
    return (a.cpu().to(torch::kFloat64) - b.cpu().to(torch::kFloat64)).abs().max().item<double>();
}

double medianSeconds(std::vector<double> s)
{
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
}

}  // namespace

bool quantKernelsBuilt()
{
    return dequantKernelsBuilt();
}

bool quantCudaAvailable()
{
    return torch::cuda::is_available();
}

KernelCheck checkDequantKernel(const QuantOptions& options, int64_t rows, int64_t cols,
                               const std::string& dtype, uint64_t seed)
{
    const torch::Dtype type = checkDtype(dtype);
    const QuantizedWeight q = randomQuantized(options, rows, cols, seed);
    KernelCheck result;
    result.elements = q.numel();
    torch::Tensor kernel;
    if (!dequantizeWeightCuda(q, type, kernel))
        return result;
    result.kernelRan = true;
    const torch::Tensor reference = dequantizeWeightTorch(q, type);
    if (kernel.sizes() != reference.sizes() || kernel.scalar_type() != reference.scalar_type())
        fail("kernel check: the kernel's output is ", kernel.scalar_type(), " ", kernel.sizes(),
             ", the LibTorch path's ", reference.scalar_type(), " ", reference.sizes());
    result.maxAbsDiff = maxAbsDiff(kernel, reference);
    result.maxUlp = maxUlp(kernel, reference);
    result.cpuMaxUlp = maxUlp(kernel, dequantizeWeight(toDevice(q, torch::kCPU), type));
    torch::Tensor absmax;
    if (dequantizeAbsmaxCuda(q, absmax))
        result.absmaxMaxUlp = maxUlp(absmax, dequantizeAbsmax(q));
    return result;
}

KernelTiming timeDequantKernel(const QuantOptions& options, int64_t rows, int64_t cols,
                               const std::string& dtype, int repeats)
{
    const torch::Dtype type = checkDtype(dtype);
    const QuantizedWeight q = randomQuantized(options, rows, cols, 0);
    KernelTiming timing;
    torch::Tensor out;
    timing.kernelRan = dequantizeWeightCuda(q, type, out);  // also the warm-up
    timing.bytesMoved = q.bytes() + q.numel() * static_cast<int64_t>(torch::elementSize(type));
    constexpr int kLoop = 20;
    auto time = [&](auto&& dequantise) {
        std::vector<double> seconds;
        dequantise();
        for (int r = 0; r < std::max(1, repeats); ++r) {
            torch::cuda::synchronize();
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < kLoop; ++i)
                dequantise();
            torch::cuda::synchronize();
            seconds.push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                kLoop);
        }
        return medianSeconds(std::move(seconds));
    };
    if (timing.kernelRan)
        timing.kernelSeconds = time([&] { dequantizeWeightCuda(q, type, out); });
    timing.torchSeconds = time([&] { out = dequantizeWeightTorch(q, type); });
    return timing;
}

}  // namespace tb
