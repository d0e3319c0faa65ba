// The few-rows kernels against at::linear (see few_rows_check.h).
#include "model/few_rows_check.h"

#include "model/causal_lm.h"
#include "model/few_rows_linear.h"
#include "util/error.h"

#include <cmath>
#include <string>

namespace tb {

FewRowsCheck checkFewRowsKernel(int64_t rows, int64_t in, int64_t out, bool bf16, bool bias,
                                FewRowsIsa isa, uint64_t seed)
{
    if (!fewRowsIsaSupported(isa))
        fail(std::string("this CPU cannot run the ") + fewRowsIsaName(isa) + " kernels");
    torch::NoGradGuard noGrad;
    torch::manual_seed(seed);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
    const torch::Tensor x = torch::randn({rows, in}).to(dtype);
    const torch::Tensor w = torch::randn({out, in}).to(dtype);
    const torch::Tensor b = bias ? torch::randn({out}).to(dtype) : torch::Tensor();

    const torch::Tensor x64 = x.to(torch::kFloat64), w64 = w.to(torch::kFloat64);
    const torch::Tensor b64 = bias ? b.to(torch::kFloat64) : torch::Tensor();
    const torch::Tensor reference = torch::nn::functional::linear(x64, w64, b64);
    torch::Tensor scale = torch::mm(x64.abs(), w64.abs().t());
    if (bias)
        scale = scale + b64.abs();

    const torch::Tensor xf = x.to(torch::kFloat32).contiguous();
    torch::Tensor y = torch::full({rows, out}, std::nan(""), torch::kFloat32);
    fewRowsProductOf(xf, w, b, 0, out, y, isa);

    FewRowsCheck check;
    // NaN (an output the kernel never wrote) compares as the largest difference.
    check.kernelMaxAbsDiff =
        torch::nan_to_num((y.to(torch::kFloat64) - reference).abs(), 1e300).max().item<double>();
    check.scale = scale.max().item<double>();
    check.maxAbsOutput = reference.abs().max().item<double>();
    const torch::Tensor viaLinear = linearForward(x, w, b);
    const torch::Tensor theirs = torch::nn::functional::linear(x, w, b);
    check.linearMaxAbsDiff =
        (viaLinear.to(torch::kFloat64) - theirs.to(torch::kFloat64)).abs().max().item<double>();
    check.tookKernel = linearTakesFewRows(x, w, b);
    return check;
}

}  // namespace tb
