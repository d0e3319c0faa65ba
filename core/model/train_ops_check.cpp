// Training's fused RMSNorm and rotary embedding against LibTorch's operators (see
// train_ops_check.h): the reference is the layers' composite written out here, differentiated by
// LibTorch's autograd.
#include "model/train_ops_check.h"

#include "model/causal_lm.h"
#include "model/rope_check_tables.h"
#include "model/stacked_linears.h"
#include "model/swiglu_kernel.h"
#include "model/train_ops.h"

namespace tb {
namespace {

double maxAbs(const torch::Tensor& t)
{
    return t.to(torch::kFloat64).abs().max().item<double>();
}

double maxDiff(const torch::Tensor& a, const torch::Tensor& b)
{
    return maxAbs(a.to(torch::kFloat64) - b.to(torch::kFloat64));
}

torch::Tensor referenceRmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps)
{
    auto xf = x.to(torch::kFloat32);
    auto variance = xf.pow(2).mean(-1, /*keepdim=*/true);
    xf = xf * torch::rsqrt(variance + eps);
    return w * xf.to(x.scalar_type());
}

torch::Tensor referenceRope(const torch::Tensor& x, const torch::Tensor& cos,
                            const torch::Tensor& sin)
{
    const int64_t half = x.size(-1) / 2;
    auto rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
    return x * cos + rotated * sin;
}

}  // namespace

TrainOpsCheck checkTrainRmsNorm(int64_t rows, int64_t dim, bool inputTrains, bool weightTrains,
                                uint64_t seed)
{
    torch::manual_seed(seed);
    RMSNorm norm(dim, 1e-5);
    {
        torch::NoGradGuard noGrad;
        norm->weight.normal_(1.0, 0.5);
    }
    norm->weight.set_requires_grad(weightTrains);
    const torch::Tensor x0 = 3.0 * torch::randn({rows, dim});
    const torch::Tensor upstream = torch::randn({rows, dim});

    TrainOpsCheck check;
    torch::Tensor frozen;
    {
        torch::NoGradGuard noGrad;
        check.tookItWithoutGrad = rmsNormTakesTrainOp(x0, norm->weight);
        frozen = norm->forward(x0);
    }
    const torch::Tensor x = x0.clone().set_requires_grad(inputTrains);
    check.tookTrainOp = rmsNormTakesTrainOp(x, norm->weight);
    const torch::Tensor y = norm->forward(x);
    const torch::Tensor w = norm->weight.detach().clone().set_requires_grad(weightTrains);
    const torch::Tensor xr = x0.clone().set_requires_grad(inputTrains);
    const torch::Tensor yr = referenceRmsNorm(xr, w, 1e-5);
    check.outputDiff = maxDiff(y, yr);
    check.outputMax = maxAbs(yr);
    check.noGradDiff = maxDiff(frozen, y);
    check.sameStrides = y.strides() == yr.strides();
    if (inputTrains || weightTrains) {
        (y * upstream).sum().backward();
        (yr * upstream).sum().backward();
    }
    if (inputTrains) {
        check.inputGradDiff = maxDiff(x.grad(), xr.grad());
        check.inputGradMax = maxAbs(xr.grad());
    }
    if (weightTrains) {
        check.weightGradDiff = maxDiff(norm->weight.grad(), w.grad());
        check.weightGradMax = maxAbs(w.grad());
    }
    return check;
}

TrainOpsCheck checkTrainRope(int64_t batch, int64_t heads, int64_t seq, int64_t dim, bool perRow,
                             bool bf16, bool fp32Tables, uint64_t seed)
{
    torch::manual_seed(seed);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
    const torch::Tensor base = torch::randn({batch, seq, heads, dim}).to(dtype);
    const auto [cos, sin] =
        checkRopeTables(batch, seq, dim, perRow, fp32Tables ? torch::kFloat32 : dtype);

    TrainOpsCheck check;
    torch::Tensor frozen;
    {
        torch::NoGradGuard noGrad;
        check.tookItWithoutGrad = ropeTakesTrainOp(base.transpose(1, 2), cos, sin);
        frozen = applyRope(base.transpose(1, 2), cos, sin);
    }
    const torch::Tensor leaf = base.clone().set_requires_grad(true);
    const torch::Tensor x = leaf.transpose(1, 2);  // [batch, heads, seq, dim], as the attention
    check.tookTrainOp = ropeTakesTrainOp(x, cos, sin);
    const torch::Tensor y = applyRope(x, cos, sin);
    const torch::Tensor leafRef = base.clone().set_requires_grad(true);
    const torch::Tensor yr = referenceRope(leafRef.transpose(1, 2), cos, sin);
    check.outputDiff = maxDiff(y, yr);
    check.outputMax = maxAbs(yr);
    check.noGradDiff = maxDiff(frozen, y);
    check.sameStrides = y.strides() == yr.strides() && y.scalar_type() == yr.scalar_type();
    const torch::Tensor upstream = torch::randn(y.sizes()).to(y.scalar_type());
    (y.to(torch::kFloat32) * upstream.to(torch::kFloat32)).sum().backward();
    (yr.to(torch::kFloat32) * upstream.to(torch::kFloat32)).sum().backward();
    check.inputGradDiff = maxDiff(leaf.grad(), leafRef.grad());
    check.inputGradMax = maxAbs(leafRef.grad());
    check.sameStrides = check.sameStrides && leaf.grad().strides() == leafRef.grad().strides();
    return check;
}

TrainOpsCheck checkTrainSwiglu(int64_t rows, int64_t dim, bool bf16, int isa, uint64_t seed)
{
    torch::manual_seed(seed);
    const auto type = bf16 ? torch::kBFloat16 : torch::kFloat32;
    const torch::Tensor g0 = (torch::randn({rows, dim}) * 3).to(type);
    const torch::Tensor u0 = (torch::randn({rows, dim}) * 3).to(type);
    const torch::Tensor dy = torch::randn({rows, dim}).to(type);
    auto run = [&](bool ours) {
        auto g = g0.clone().requires_grad_(true);
        auto u = u0.clone().requires_grad_(true);
        auto out = ours && swigluTakesTrainOp(g, u) ? trainSwiglu(g, u) : torch::silu(g) * u;
        out.backward(dy);
        return std::vector<torch::Tensor>{out.detach(), g.grad(), u.grad()};
    };
    TrainOpsCheck c;
    c.tookTrainOp = swigluTakesTrainOp(g0, u0);
    {
        torch::NoGradGuard noGrad;
        c.tookItWithoutGrad = swigluTakesTrainOp(g0, u0);
    }
    const auto ours = run(true), ref = run(false);
    c.outputDiff = maxDiff(ours[0], ref[0]);
    c.outputMax = maxAbs(ref[0]);
    c.inputGradDiff = maxDiff(ours[1], ref[1]);
    c.inputGradMax = maxAbs(ref[1]);
    c.weightGradDiff = maxDiff(ours[2], ref[2]);
    c.weightGradMax = maxAbs(ref[2]);
    c.sameStrides = ours[0].strides() == ref[0].strides();
    // The raw kernels of the set asked for, on the same values, against the best set's results.
    const auto set = static_cast<FewRowsIsa>(isa);
    const torch::Tensor out = torch::empty_like(g0), dg = torch::empty_like(g0),
                        du = torch::empty_like(g0);
    const int64_t n = g0.numel();
    if (bf16) {
        auto p = [](const torch::Tensor& t) { return reinterpret_cast<uint16_t*>(t.data_ptr()); };
        swigluForward(p(g0), p(u0), p(out), n, set);
        swigluBackward(p(dy), p(g0), p(u0), p(dg), p(du), n, set);
    } else {
        auto p = [](const torch::Tensor& t) { return t.data_ptr<float>(); };
        swigluForward(p(g0), p(u0), p(out), n, set);
        swigluBackward(p(dy), p(g0), p(u0), p(dg), p(du), n, set);
    }
    c.noGradDiff = std::max({maxDiff(out, ours[0]), maxDiff(dg, ours[1]), maxDiff(du, ours[2])});
    return c;
}

TrainOpsCheck checkTrainSwigluPacked(int64_t rows, int64_t dim, uint64_t seed)
{
    torch::manual_seed(seed);
    const torch::Tensor gu0 = (torch::randn({rows, 2 * dim}) * 3).to(torch::kBFloat16);
    const torch::Tensor dy = torch::randn({rows, dim}).to(torch::kBFloat16);
    // Output, gate's gradient, up's gradient.
    auto run = [&](int how) {
        auto gu = gu0.clone().requires_grad_(true);
        torch::Tensor out;
        if (how == 0) {
            out = trainSwigluPacked(gu);
        } else {
            const std::vector<torch::Tensor> halves = gu.split(dim, -1);
            out = how == 1 ? trainSwiglu(halves[0].contiguous(), halves[1].contiguous())
                           : torch::silu(halves[0]) * halves[1];
        }
        out.backward(dy);
        const std::vector<torch::Tensor> grads = gu.grad().split(dim, -1);
        return std::vector<torch::Tensor>{out.detach(), grads[0], grads[1]};
    };
    TrainOpsCheck c;
    c.tookTrainOp = swigluPackedTakesTrainOp(gu0);
    const auto ours = run(0), unpacked = run(1), ref = run(2);
    c.outputDiff = maxDiff(ours[0], ref[0]);
    c.outputMax = maxAbs(ref[0]);
    c.inputGradDiff = maxDiff(ours[1], ref[1]);
    c.inputGradMax = maxAbs(ref[1]);
    c.weightGradDiff = maxDiff(ours[2], ref[2]);
    c.weightGradMax = maxAbs(ref[2]);
    c.sameStrides = ours[0].is_contiguous() && ours[0].sizes() == ref[0].sizes();
    c.noGradDiff = std::max({maxDiff(ours[0], unpacked[0]), maxDiff(ours[1], unpacked[1]),
                             maxDiff(ours[2], unpacked[2])});
    return c;
}

StackedLinearsCheck checkStackedLinears(int64_t rows, int64_t in, bool weightsTrain, uint64_t seed)
{
    torch::manual_seed(seed);
    const int64_t outs[] = {3 * in / 2, in / 2, in / 2};
    std::vector<std::shared_ptr<LinearImpl>> layers;
    std::vector<LinearImpl*> group;
    for (int64_t out : outs) {
        auto l = std::make_shared<LinearImpl>(in, out, false);
        torch::NoGradGuard noGrad;
        l->weight.normal_(0, 0.1);
        l->weight.set_requires_grad(weightsTrain);
        layers.push_back(l);
        group.push_back(l.get());
    }
    for (size_t j : {size_t(0), size_t(2)}) {
        layers[j]->addLora(4, 8, 0, false);
        torch::NoGradGuard noGrad;
        layers[j]->lora_B->weight.normal_(0, 0.1);
    }
    StackedLinearsCheck c;
    if (!weightsTrain)
        c.heldBytes =
            holdStacked(group, torch::kBFloat16) == 4 * in * (outs[0] + outs[1] + outs[2]);
    c.together = stackedWeightView(group).defined();
    const torch::Tensor x0 = torch::randn({rows, in});
    std::vector<torch::Tensor> dys;
    for (int64_t out : outs)
        dys.push_back(torch::randn({rows, out}).to(torch::kBFloat16));
    // Outputs, then x's gradient, then every trainable parameter's gradient.
    auto run = [&](bool stacked) {
        for (auto& l : layers)
            l->zero_grad();
        const torch::Tensor x = x0.clone().requires_grad_(true);
        std::vector<torch::Tensor> ys;
        {
            AutocastGuard autocast(at::kCPU, true, at::kBFloat16);
            if (stacked) {
                c.stacked = linearsStack(x, group);
                ys = stackedLinears(x, group);
            } else {
                for (auto& l : layers)
                    ys.push_back(l->forward(x));
            }
        }
        torch::autograd::backward(ys, dys);
        std::vector<torch::Tensor> r;
        for (const auto& y : ys)
            r.push_back(y.detach());
        r.push_back(x.grad());
        for (auto& l : layers)
            for (const auto& p : l->parameters())
                if (p.requires_grad())
                    r.push_back(p.grad());
        return r;
    };
    const auto ours = run(true), ref = run(false);
    const size_t n = std::size(outs);
    c.tensors = static_cast<int>(ours.size());
    c.smallestMax = maxAbs(ref[0]);
    for (size_t j = 0; j < ours.size(); ++j) {
        const double m = maxAbs(ref[j]), rel = maxDiff(ours[j], ref[j]) / std::max(m, 1e-30);
        double& worst = j < n ? c.outputRel : j == n ? c.inputGradRel : c.weightGradRel;
        worst = std::max(worst, rel);
        c.smallestMax = std::min(c.smallestMax, m);
    }
    return c;
}

AttentionWidthCheck checkTrainAttentionWidth(int64_t batch, int64_t heads, int64_t seq, int64_t dim,
                                             uint64_t seed)
{
    torch::manual_seed(seed);
    const auto shape = std::vector<int64_t>{batch, heads, seq, dim};
    const auto values = [&] { return torch::randn(shape).to(torch::kBFloat16); };
    const torch::Tensor q0 = values(), k0 = values(), v0 = values(), g = values();
    // Each side's output and the gradients of q, k and v, as bf16.
    auto run = [&](auto&& attend) {
        auto q = q0.clone().requires_grad_(true);
        auto k = k0.clone().requires_grad_(true);
        auto v = v0.clone().requires_grad_(true);
        auto out = attend(q, k, v);
        out.backward(g.to(out.scalar_type()));
        return std::vector<torch::Tensor>{out.to(torch::kBFloat16), q.grad().to(torch::kBFloat16),
                                          k.grad().to(torch::kBFloat16),
                                          v.grad().to(torch::kBFloat16)};
    };
    AttentionWidthCheck c;
    const auto ours =
        run([&](const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
            AutocastGuard bf16(at::kCPU, true, at::kBFloat16);
            c.widened = attentionWidensToFp32(q, k, v, nullptr);
            return cachedAttention(q, k, v, nullptr, 0, 0);
        });
    const auto sdpa = [](const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
        return at::scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, /*is_causal=*/true);
    };
    const auto wide =
        run([&](const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
            return sdpa(q.to(torch::kFloat), k.to(torch::kFloat), v.to(torch::kFloat));
        });
    const auto narrow = run(sdpa);
    for (size_t i = 0; i < ours.size(); ++i) {
        c.fp32Diff = std::max(c.fp32Diff, maxDiff(ours[i], wide[i]));
        c.bf16Diff = std::max(c.bf16Diff, maxDiff(ours[i], narrow[i]));
        (i == 0 ? c.outputMax : c.gradMax) =
            std::max(i == 0 ? c.outputMax : c.gradMax, maxAbs(wide[i]));
    }
    return c;
}

}  // namespace tb
