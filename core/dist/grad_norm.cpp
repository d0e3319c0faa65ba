// Float64 sums of squares: on the CPU one pass over fp32 gradients in fixed blocks (the same sum
// on any number of threads), elsewhere chunk by chunk through LibTorch.
#include "dist/grad_norm.h"

#include <algorithm>
#include <vector>

namespace tb {
namespace {

// Σ x² of n floats in float64; eight running sums so the compiler keeps them in vector registers.
double blockSquares(const float* p, int64_t n)
{
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) {
            const double v = p[i + k];
            s[k] += v * v;  // exact: a float's square fits a double's mantissa
        }
    for (; i < n; ++i)
        s[0] += static_cast<double>(p[i]) * static_cast<double>(p[i]);
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// A gradient of fp32 on the CPU: blocks of 64 Ki elements summed on the intra-op threads, the
// blocks' sums added in order. (A float64 copy of a 26.5M-parameter model's gradients, the
// LibTorch way, took 8 % of its full fine-tuning step.)
double cpuSquares(const torch::Tensor& flat)
{
    constexpr int64_t kBlock = int64_t(1) << 16;
    const float* p = flat.data_ptr<float>();
    const int64_t n = flat.numel(), blocks = (n + kBlock - 1) / kBlock;
    std::vector<double> sums(static_cast<size_t>(blocks), 0.0);
    at::parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b)
            sums[static_cast<size_t>(b)] =
                blockSquares(p + b * kBlock, std::min(kBlock, n - b * kBlock));
    });
    double total = 0;
    for (const double s : sums)
        total += s;
    return total;
}

}  // namespace

torch::Tensor squaresF64(const torch::Tensor& t)
{
    constexpr int64_t kChunk = int64_t(1) << 22;  // 32 MiB of float64 at a time
    torch::NoGradGuard noGrad;
    const torch::Tensor flat = t.detach().reshape(-1);
    if (flat.device().is_cpu() && flat.scalar_type() == torch::kFloat32 && flat.is_contiguous())
        return torch::full({}, cpuSquares(flat), flat.options().dtype(torch::kFloat64));
    torch::Tensor total = torch::zeros({}, flat.options().dtype(torch::kFloat64));
    for (int64_t i = 0; i < flat.numel(); i += kChunk) {
        const torch::Tensor c =
            flat.narrow(0, i, std::min(kChunk, flat.numel() - i)).to(torch::kFloat64);
        total += torch::dot(c, c);
    }
    return total;
}

}  // namespace tb
