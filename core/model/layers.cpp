// Layers shared by the architectures: linear (with the LoRA branch), RMSNorm, LayerNorm, bottleneck
// adapter.
#include "model/causal_lm.h"

#include "model/decode_ops.h"
#include "model/few_rows_linear.h"
#include "model/train_ops.h"
#include "quant/quant_linear.h"
#include "util/error.h"

#include <ATen/autocast_mode.h>

#include <algorithm>
#include <cmath>

namespace tb {

// Decoding feeds one token of each sequence at a time: y = x W^T for 1 to kFewRowsMax rows of x, a
// product bound by reading W (once per step, from memory for a model larger than the cache). MKL
// keeps a matrix-vector product to one core, and for a few rows copies all of W into its packed
// layout at every call, which costs more than the product; for a batch's 16 to 64 rows it splits
// x's rows over the threads, so each of them copies all of W. So these rows take our own kernels
// (model/few_rows_kernel.h), which read W as it lies, several rows of W against up to four rows of
// x at once, with W's rows split over the intra-op threads for matrices of 128 KiB and more, where
// the split pays for its synchronisation. Only on the CPU without autograd, for fp32 weights or
// bf16 weights with bf16 input (accumulated in fp32, as LibTorch's bf16 product does). (This file
// is compiled with OpenMP where LibTorch's own runtime is found, which is what makes
// at::parallel_for parallel here: its OpenMP code is inline in the header.)
bool linearTakesFewRows(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b)
{
    if (!x.device().is_cpu() || !w.device().is_cpu() || w.dim() != 2 || x.dim() == 0 ||
        x.size(-1) != w.size(1) || x.scalar_type() != w.scalar_type() ||
        !fewRowsDtype(w.scalar_type()) || (b.defined() && b.scalar_type() != w.scalar_type()) ||
        !needsNoGradient({&x, &w, &b}))
        return false;
    const int64_t rows = x.numel() / w.size(1);
    return rows >= 1 && rows <= kFewRowsMax && w.size(1) > 0;
}

void fewRowsProductOf(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                      int64_t begin, int64_t end, torch::Tensor& y, FewRowsIsa isa)
{
    const int64_t rows = x.size(0), in = x.size(1), ldy = y.size(1);
    if (w.scalar_type() == torch::kBFloat16) {
        fewRowsProductBf16(
            x.data_ptr<float>(), rows, in,
            reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>()),
            b.defined() ? reinterpret_cast<const uint16_t*>(b.data_ptr<at::BFloat16>()) : nullptr,
            begin, end, y.data_ptr<float>(), ldy, isa);
    } else {
        fewRowsProduct(x.data_ptr<float>(), rows, in, w.data_ptr<float>(),
                       b.defined() ? b.data_ptr<float>() : nullptr, begin, end, y.data_ptr<float>(),
                       ldy, isa);
    }
}

namespace {

torch::Tensor fewRowsLinear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b)
{
    const int64_t in = w.size(1);
    const int64_t outFeatures = w.size(0);
    const int64_t n = x.numel() / in;
    const bool bf16 = w.scalar_type() == torch::kBFloat16;
    // Detached: the kernels read only the data, on threads that know nothing of autograd.
    const torch::Tensor v = x.detach().reshape({n, in}).to(torch::kFloat32).contiguous();
    const torch::Tensor wc = w.detach().contiguous();
    const torch::Tensor bias = b.defined() ? b.detach().contiguous() : b;
    torch::Tensor y = torch::empty({n, outFeatures}, x.options().dtype(torch::kFloat32));
    splitFewRows(outFeatures, w.numel() * static_cast<int64_t>(w.element_size()),
                 [&](int64_t begin, int64_t end) { fewRowsProductOf(v, wc, bias, begin, end, y); });
    auto shape = x.sizes().vec();
    shape.back() = outFeatures;
    return (bf16 ? y.to(torch::kBFloat16) : y).view(shape);
}

}  // namespace

torch::Tensor linearForward(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b)
{
    return linearTakesFewRows(x, w, b) ? fewRowsLinear(x, w, b)
                                       : torch::nn::functional::linear(x, w, b);
}

LinearImpl::LinearImpl(int64_t in, int64_t out, bool hasBias, bool isTransposed)
    : inFeatures(in), outFeatures(out), transposed(isTransposed)
{
    weight = register_parameter("weight",
                                isTransposed ? torch::empty({in, out}) : torch::empty({out, in}));
    if (hasBias)
        bias = register_parameter("bias", torch::empty({out}));
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x)
{
    // A frozen weight kept in bf16 for mixed-precision training (CausalLM::castFrozenLinearWeights)
    // met outside autocast (a check in fp32): computed in the weight's dtype, returned in x's.
    if (!m_quantized && weight.scalar_type() != x.scalar_type() && x.is_floating_point() &&
        !at::autocast::is_autocast_enabled(x.device().type())) {
        auto y = forwardIn(x.to(weight.scalar_type()));
        return y.to(x.scalar_type());
    }
    return forwardIn(x);
}

torch::Tensor LinearImpl::forwardIn(const torch::Tensor& x)
{
    torch::Tensor y;
    if (m_quantized) {
        y = quantizedLinear(x, m_quantized, bias);
    } else if (transposed) {
        auto flat = x.reshape({-1, inFeatures});
        y = bias.defined() ? torch::addmm(bias.to(weight.scalar_type()), flat, weight)
                           : flat.mm(weight);
        auto shape = x.sizes().vec();
        shape.back() = outFeatures;
        y = y.view(shape);
    } else {
        y = linearForward(x, weight,
                          bias.defined() && bias.scalar_type() != weight.scalar_type() &&
                                  !at::autocast::is_autocast_enabled(x.device().type())
                              ? bias.to(weight.scalar_type())
                              : bias);
    }
    return withLora(y, x);
}

torch::Tensor LinearImpl::withLora(const torch::Tensor& base, const torch::Tensor& x)
{
    if (!loraActive())
        return base;
    torch::Tensor y = base;
    auto in = m_dropout > 0 ? torch::dropout(x, m_dropout, is_training()) : x;
    const torch::Tensor a = lora_A->forward(in);  // [..., rank]
    const bool oneType =
        at::autocast::is_autocast_enabled(y.device().type()) ||
        (y.scalar_type() == a.scalar_type() && a.scalar_type() == lora_B->weight.scalar_type());
    // Contiguous, or a stacked product's slice (model/stacked_linears.h): rows of out elements.
    if (oneType && y.dim() >= 1 && y.stride(-1) == 1 && !lora_B->bias.defined()) {
        // y + (a B^T) * scaling as one addmm: the scaling rides on the product, so neither the
        // forward nor the backward makes a pass over [tokens, out] for it.
        const int64_t rank = a.size(-1);
        y = torch::addmm(y.reshape({-1, outFeatures}), a.reshape({-1, rank}), lora_B->weight.t(),
                         1.0, m_scaling)
                .view(y.sizes());
    } else {
        y = y + lora_B->forward(a) * m_scaling;
    }
    return y;
}

void LinearImpl::addLora(int64_t rank, double alpha, double dropout, bool rslora)
{
    if (lora_A)
        fail("LoRA already added to this layer");
    if (rank < 1)
        fail("LoRA rank must be >= 1");
    auto options = weight.options();
    lora_A = register_module("lora_A", std::make_shared<LinearImpl>(inFeatures, rank, false));
    lora_B = register_module("lora_B", std::make_shared<LinearImpl>(rank, outFeatures, false));
    torch::NoGradGuard noGrad;
    // kaiming_uniform_(a = sqrt(5)) on [rank, in]: U(-1/sqrt(in), 1/sqrt(in)), as PEFT and
    // nn.Linear do.
    const double bound = 1.0 / std::sqrt(static_cast<double>(inFeatures));
    lora_A->weight.set_data(torch::empty({rank, inFeatures}, options).uniform_(-bound, bound));
    lora_B->weight.set_data(torch::zeros({outFeatures, rank}, options));
    m_scaling =
        rslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / static_cast<double>(rank);
    m_dropout = dropout;
    m_merged = false;
}

void LinearImpl::quantize(const QuantOptions& options)
{
    quantizeFrom(weight, options);
}

void LinearImpl::quantizeFrom(const torch::Tensor& w, const QuantOptions& options)
{
    if (m_quantized)
        fail("this layer is quantised already");
    if (m_merged)
        fail("a layer with merged LoRA cannot be quantised");
    torch::NoGradGuard noGrad;
    // Quantised as nn.Linear's [out, in], as bitsandbytes' Linear4bit holds every layer (GPT-2's
    // Conv1D [in, out] weights transposed first, as transformers does).
    m_quantized = std::make_shared<const QuantizedWeight>(
        quantizeWeight(transposed ? w.t().contiguous() : w, options));
    weight.set_data(torch::empty({0}, weight.options()));
    weight.set_requires_grad(false);
}

void LinearImpl::dequantize(torch::Dtype dtype)
{
    if (!m_quantized)
        return;
    torch::NoGradGuard noGrad;
    weight.set_data(denseWeight(dtype));
    m_quantized.reset();
}

torch::Tensor LinearImpl::denseWeight(torch::Dtype dtype) const
{
    if (!m_quantized)
        return weight;
    const torch::Tensor w = dequantizeWeight(*m_quantized, dtype);  // [out, in]
    return transposed ? w.t().contiguous() : w;
}

torch::Tensor LinearImpl::loraDelta() const
{
    auto delta = torch::mm(lora_B->weight, lora_A->weight) * m_scaling;  // [out, in]
    return transposed ? delta.t() : delta;
}

void LinearImpl::mergeLora()
{
    if (!lora_A || m_merged)
        return;
    if (m_quantized)
        fail("LoRA cannot merge into a quantised weight: dequantise the layer first");
    torch::NoGradGuard noGrad;
    weight.add_(loraDelta().to(weight.scalar_type()));
    m_merged = true;
}

void LinearImpl::unmergeLora()
{
    if (!lora_A || !m_merged)
        return;
    torch::NoGradGuard noGrad;
    weight.sub_(loraDelta().to(weight.scalar_type()));
    m_merged = false;
}

RMSNormImpl::RMSNormImpl(int64_t dim, double epsilon) : eps(epsilon)
{
    weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x)
{
    // As transformers does: statistics in fp32, scale applied after casting back to the input
    // dtype. A decoding step's few rows in one loop (model/decode_ops.h).
    if (rmsNormTakesFused(x, weight))
        return fusedRmsNorm(x, weight, eps);
    if (rmsNormTakesTrainOp(x, weight))  // longer runs, training's too (model/train_ops.h)
        return trainRmsNorm(x, weight, eps);
    auto xf = x.to(torch::kFloat32);
    auto variance = xf.pow(2).mean(-1, /*keepdim=*/true);
    xf = xf * torch::rsqrt(variance + eps);
    return weight * xf.to(x.scalar_type());
}

LayerNormImpl::LayerNormImpl(int64_t dim, double epsilon) : eps(epsilon)
{
    weight = register_parameter("weight", torch::ones({dim}));
    bias = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x)
{
    return torch::layer_norm(x, {weight.size(0)}, weight, bias, eps);
}

BottleneckAdapterImpl::BottleneckAdapterImpl(int64_t hidden, int64_t size, std::string act)
    : activation(std::move(act))
{
    down = register_module("down", Linear(hidden, size, true));
    up = register_module("up", Linear(size, hidden, true));
    torch::NoGradGuard noGrad;
    const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
    down->weight.uniform_(-bound, bound);
    down->bias.zero_();
    up->weight.zero_();  // the adapter starts as the identity
    up->bias.zero_();
}

torch::Tensor BottleneckAdapterImpl::forward(const torch::Tensor& y)
{
    return y + up->forward(activate(activation, down->forward(y)));
}

torch::Tensor activate(const std::string& name, const torch::Tensor& x)
{
    if (name == "relu")
        return torch::relu(x);
    if (name == "gelu")
        return torch::gelu(x);
    if (name == "gelu_new" || name == "gelu_pytorch_tanh")
        return torch::gelu(x, "tanh");
    if (name == "silu")
        return torch::silu(x);
    if (name == "tanh")
        return torch::tanh(x);
    fail("unknown activation '", name, "' (relu, gelu, gelu_new, silu, tanh)");
}

torch::nn::Embedding makeEmbedding(int64_t num, int64_t dim)
{
    return torch::nn::Embedding(
        torch::nn::EmbeddingOptions(num, dim)._weight(torch::empty({num, dim})));
}

}  // namespace tb
