// Stacked products of layers that read the same input (see stacked_linears.h).
#include "model/stacked_linears.h"

#include "model/decode_ops.h"
#include "model/swiglu_kernel.h"

#include <ATen/autocast_mode.h>

namespace tb {

// The estimator (memory/estimator.cpp) counts the stacked products from kSwigluFewRows.
static_assert(kSwigluFewRows == kDecodeRowsMax, "stacked products start where SwiGLU's op does");

namespace {

bool plainWeight(const LinearImpl& l, const LinearImpl& first)
{
    const torch::Tensor& w = l.weight;
    return !l.quantized() && !l.transposed && w.defined() && w.dim() == 2 && w.numel() > 0 &&
           l.inFeatures == first.inFeatures && w.device() == first.weight.device() &&
           (w.scalar_type() == torch::kFloat32 || w.scalar_type() == torch::kBFloat16) &&
           l.bias.defined() == first.bias.defined();
}

}  // namespace

bool linearsStack(const torch::Tensor& x, const std::vector<LinearImpl*>& layers)
{
    if (layers.size() < 2 || !x.defined() || !x.device().is_cpu() || x.dim() < 1 ||
        !at::autocast::is_autocast_enabled(at::kCPU) ||
        at::autocast::get_autocast_dtype(at::kCPU) != at::kBFloat16 ||
        (x.scalar_type() != torch::kFloat32 && x.scalar_type() != torch::kBFloat16))
        return false;
    const LinearImpl& first = *layers.front();
    if (x.size(-1) != first.inFeatures || x.numel() / first.inFeatures <= kDecodeRowsMax)
        return false;
    for (const LinearImpl* l : layers)
        if (!plainWeight(*l, first) || !l->weight.device().is_cpu())
            return false;
    return true;
}

torch::Tensor stackedWeightView(const std::vector<LinearImpl*>& layers)
{
    if (layers.empty())
        return {};
    const torch::Tensor& w0 = layers.front()->weight;
    int64_t rows = 0;
    for (const LinearImpl* l : layers) {
        const torch::Tensor& w = l->weight;
        if (!w.defined() || w.dim() != 2 || !w.is_contiguous() ||
            w.scalar_type() != w0.scalar_type() || w.size(1) != w0.size(1) ||
            !w.storage().is_alias_of(w0.storage()) ||
            w.storage_offset() != w0.storage_offset() + rows * w0.size(1))
            return {};
        rows += w.size(0);
    }
    return w0.as_strided({rows, w0.size(1)}, {w0.size(1), 1}, w0.storage_offset());
}

torch::Tensor stackedProduct(const torch::Tensor& x, const std::vector<LinearImpl*>& layers,
                             torch::Tensor* x16)
{
    const auto bf16 = [](const torch::Tensor& t) {
        return t.scalar_type() == torch::kBFloat16 ? t : t.to(torch::kBFloat16);
    };
    // Frozen bf16 weights held together are read as they lie (they need no gradient, so the view
    // records nothing); else each is cast, as autocast would, and the casts stacked.
    torch::Tensor w = stackedWeightView(layers);
    bool needsGrad = false;
    for (const LinearImpl* l : layers)
        needsGrad = needsGrad || l->weight.requires_grad();
    if (!w.defined() || w.scalar_type() != torch::kBFloat16 || needsGrad) {
        std::vector<torch::Tensor> parts;
        for (const LinearImpl* l : layers)
            parts.push_back(bf16(l->weight));
        w = torch::cat(parts, 0);
    }
    torch::Tensor b;
    if (layers.front()->bias.defined()) {
        std::vector<torch::Tensor> parts;
        for (const LinearImpl* l : layers)
            parts.push_back(bf16(l->bias));
        b = torch::cat(parts, 0);
    }
    const torch::Tensor in = bf16(x);
    if (x16)
        *x16 = in;
    return at::linear(in, w, b);
}

std::vector<torch::Tensor> stackedLinears(const torch::Tensor& x,
                                          const std::vector<LinearImpl*>& layers)
{
    torch::Tensor x16;
    const torch::Tensor y = stackedProduct(x, layers, &x16);
    std::vector<int64_t> widths;
    for (const LinearImpl* l : layers)
        widths.push_back(l->outFeatures);
    // split's backward concatenates the slices' gradients (undefined ones as zeros) in one pass.
    std::vector<torch::Tensor> outs = y.split_with_sizes(widths, -1);
    for (size_t j = 0; j < layers.size(); ++j)
        outs[j] = layers[j]->withLora(outs[j], x16);
    return outs;
}

int64_t holdStacked(const std::vector<LinearImpl*>& layers, torch::Dtype dtype)
{
    if (layers.size() < 2)
        return 0;
    const LinearImpl& first = *layers.front();
    int64_t rows = 0;
    for (const LinearImpl* l : layers) {
        if (!plainWeight(*l, first) || l->weight.requires_grad() ||
            l->weight.scalar_type() != torch::kFloat32 || l->weight.size(1) != first.inFeatures)
            return 0;
        rows += l->weight.size(0);
    }
    torch::NoGradGuard noGrad;
    torch::Tensor buffer =
        torch::empty({rows, first.inFeatures}, first.weight.options().dtype(dtype));
    int64_t bytes = 0, at = 0;
    for (LinearImpl* l : layers) {
        const int64_t n = l->weight.size(0);
        bytes += static_cast<int64_t>(l->weight.nbytes());
        torch::Tensor part = buffer.narrow(0, at, n);
        part.copy_(l->weight);
        l->weight.set_data(part);
        at += n;
    }
    return bytes;
}

}  // namespace tb
