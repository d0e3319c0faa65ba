// Float64 sums of squares, chunk by chunk.
#include "dist/grad_norm.h"

#include <algorithm>

namespace tb {

torch::Tensor squaresF64(const torch::Tensor& t)
{
    constexpr int64_t kChunk = int64_t(1) << 22;  // 32 MiB of float64 at a time
    torch::NoGradGuard noGrad;
    const torch::Tensor flat = t.detach().reshape(-1);
    torch::Tensor total = torch::zeros({}, flat.options().dtype(torch::kFloat64));
    for (int64_t i = 0; i < flat.numel(); i += kChunk) {
        const torch::Tensor c =
            flat.narrow(0, i, std::min(kChunk, flat.numel() - i)).to(torch::kFloat64);
        total += torch::dot(c, c);
    }
    return total;
}

}  // namespace tb
