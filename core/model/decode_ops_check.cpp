// The fused decoding operators against the layers' LibTorch paths (see decode_ops_check.h): the
// same layer called on an input that needs a gradient, which takes LibTorch's operators.
#include "model/decode_ops_check.h"

#include "model/causal_lm.h"
#include "model/decode_ops.h"

namespace tb {
namespace {

double maxAbs(const torch::Tensor& t)
{
    return t.to(torch::kFloat64).abs().max().item<double>();
}

}  // namespace

DecodeOpsCheck checkFusedRmsNorm(int64_t rows, int64_t dim, bool bf16, uint64_t seed)
{
    torch::manual_seed(seed);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
    RMSNorm norm(dim, 1e-5);
    {
        torch::NoGradGuard noGrad;
        norm->weight.normal_(1.0, 0.5);
    }
    norm->to(dtype);
    norm->weight.set_requires_grad(false);
    const torch::Tensor x = (3.0 * torch::randn({rows, dim})).to(dtype);

    DecodeOpsCheck check;
    torch::Tensor fused;
    {
        torch::InferenceMode inference;
        check.tookFused = rmsNormTakesFused(x, norm->weight);
        fused = norm->forward(x);
    }
    const torch::Tensor xg = x.clone().set_requires_grad(true);
    check.fusedWithGradient = rmsNormTakesFused(xg, norm->weight);
    const torch::Tensor reference = norm->forward(xg).detach();
    check.maxAbsDiff = maxAbs(fused.to(torch::kFloat64) - reference.to(torch::kFloat64));
    check.maxAbsOutput = maxAbs(reference);
    return check;
}

DecodeOpsCheck checkFusedRope(int64_t batch, int64_t heads, int64_t seq, int64_t dim, bool perRow,
                              bool bf16, uint64_t seed)
{
    torch::manual_seed(seed);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
    const torch::Tensor x = torch::randn({batch, seq, heads, dim}).to(dtype).transpose(1, 2);
    const torch::Tensor invFreq =
        1.0 / torch::pow(10000.0, torch::arange(0, dim, 2, torch::kFloat64) / double(dim));
    // Positions 5.. (per row: row b from 5 + 3b), the angles duplicated over both halves.
    torch::Tensor positions = torch::arange(seq, torch::kFloat64) + 5.0;
    if (perRow)
        positions =
            positions.unsqueeze(0) + 3.0 * torch::arange(batch, torch::kFloat64).unsqueeze(1);
    torch::Tensor angles = positions.unsqueeze(-1) * invFreq;
    angles = torch::cat({angles, angles}, -1);
    if (perRow)
        angles = angles.unsqueeze(1);  // [batch, 1, seq, dim]
    const torch::Tensor cos = angles.cos().to(dtype), sin = angles.sin().to(dtype);

    DecodeOpsCheck check;
    torch::Tensor fused;
    {
        torch::InferenceMode inference;
        check.tookFused = ropeTakesFused(x, cos, sin);
        fused = applyRope(x, cos, sin);
    }
    const torch::Tensor xg = x.detach().clone().set_requires_grad(true);
    check.fusedWithGradient = ropeTakesFused(xg, cos, sin);
    const torch::Tensor reference = applyRope(xg, cos, sin).detach();
    check.maxAbsDiff = maxAbs(fused.to(torch::kFloat64) - reference.to(torch::kFloat64));
    check.maxAbsOutput = maxAbs(reference);
    return check;
}

}  // namespace tb
