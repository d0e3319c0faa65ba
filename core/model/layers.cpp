// Layers shared by the architectures: linear (with the LoRA branch), RMSNorm, LayerNorm, bottleneck
// adapter.
#include "model/causal_lm.h"

#include "quant/quant_linear.h"
#include "util/error.h"

#include <ATen/autocast_mode.h>

#include <cmath>

namespace tb {

namespace {

// Decoding feeds one token at a time: y = W x is a matrix-vector product bound by reading W, and
// MKL's sgemv keeps it to one core. Splitting W's rows over the intra-op threads reads it with
// every core. Only for one fp32 row on the CPU without autograd, and matrices of at least 1 MiB,
// where the split pays for its synchronisation. (This file is compiled with OpenMP where LibTorch's
// own runtime is found, which is what makes at::parallel_for parallel here: its OpenMP code is
// inline in the header.)
// Batched decoding feeds a few rows (a token of each of 2 to 8 sequences). For those, MKL's x W^T
// copies all of W into its packed layout at every call, which costs more than the product when W
// comes from memory, as a decoding step's weights do (the 32,000 x 384 head, 4 rows, one core:
// 5.6 ms against 2.4 ms for W x^T, which reads W as it lies). So a few rows take W x^T for
// matrices of 512 KiB and more, split over the threads as one row is: 4 rows of the 25M Llama
// decode 1.7 times as fast on one core (every matrix of it is 576 KiB or more). From 16 rows on
// MKL's packing pays for itself; below 512 KiB the split's overhead outweighs the gain.
constexpr int64_t kFewRowsMax = 8;

bool rowParallelCase(const torch::Tensor& x, const torch::Tensor& w)
{
    if (!x.device().is_cpu() || x.scalar_type() != torch::kFloat32 ||
        w.scalar_type() != torch::kFloat32 || x.dim() == 0 || x.size(-1) != w.size(1) ||
        (torch::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad())))
        return false;
    const int64_t rows = x.numel() / w.size(1);
    if (rows == 1)
        return w.numel() >= (int64_t(1) << 18) && at::get_num_threads() > 1;
    return rows >= 2 && rows <= kFewRowsMax && w.numel() >= (int64_t(1) << 17);
}

// y = x W^T (+ b) for one row x (W x, one single-threaded sgemv per part) or a few rows (W x^T, one
// single-threaded sgemm per part), W's rows split over the threads.
torch::Tensor rowParallelLinear(const torch::Tensor& x, const torch::Tensor& w,
                                const torch::Tensor& b)
{
    // Detached, and the mode set again inside: the worker threads do not inherit this thread's grad
    // or inference mode.
    const int64_t n = x.numel() / w.size(1);
    const torch::Tensor v = x.detach().reshape({n, w.size(1)}).contiguous();
    const torch::Tensor wc = w.detach().contiguous();
    const torch::Tensor bias = b.defined() ? b.detach() : b;
    // [out] for one row, else y^T [out, n]
    torch::Tensor y =
        n == 1 ? torch::empty({w.size(0)}, x.options()) : torch::empty({w.size(0), n}, x.options());
    const int64_t rows = w.size(0);
    const int64_t grain = (rows + at::get_num_threads() - 1) / at::get_num_threads();
    const bool inference = c10::InferenceMode::is_enabled();
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
        c10::InferenceMode mode(inference);  // this thread's mode, as the caller's
        torch::NoGradGuard noGrad;
        auto part = y.narrow(0, begin, end - begin);
        auto wPart = wc.narrow(0, begin, end - begin);
        if (n == 1)
            at::mv_out(part, wPart, v.view({w.size(1)}));
        else
            at::mm_out(part, wPart, v.t());
        if (bias.defined())
            part.add_(n == 1 ? bias.narrow(0, begin, end - begin)
                             : bias.narrow(0, begin, end - begin).unsqueeze(1));
    });
    auto shape = x.sizes().vec();
    shape.back() = w.size(0);
    return n == 1 ? y.view(shape) : y.t().contiguous().view(shape);
}

}  // namespace

torch::Tensor linearForward(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b)
{
    return rowParallelCase(x, w) ? rowParallelLinear(x, w, b)
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
    if (lora_A && !m_merged && !loraOff) {
        auto in = m_dropout > 0 ? torch::dropout(x, m_dropout, is_training()) : x;
        y = y + lora_B->forward(lora_A->forward(in)) * m_scaling;
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
    // dtype.
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
