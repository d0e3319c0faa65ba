// The quantised linear layer's autograd function: dequantise, multiply, free; in backward the same
// for the input gradient.
#include "quant/quant_linear.h"

#include <ATen/autocast_mode.h>

#include <optional>

namespace tb {

namespace {

// Rebuilt from saved_data in backward (it holds IValues: tensors and numbers).
void saveWeight(torch::autograd::AutogradContext* ctx, const QuantizedWeight& q)
{
    ctx->saved_data["kind"] = static_cast<int64_t>(q.kind);
    ctx->saved_data["double"] = q.doubleQuant;
    ctx->saved_data["rows"] = q.rows;
    ctx->saved_data["cols"] = q.cols;
    ctx->saved_data["data"] = q.data;
    ctx->saved_data["absmax"] = q.absmax;
    ctx->saved_data["absmax2"] = q.absmax2;
    ctx->saved_data["code2"] = q.code2;
    ctx->saved_data["offset"] = static_cast<double>(q.offset);
}

QuantizedWeight savedWeight(torch::autograd::AutogradContext* ctx)
{
    QuantizedWeight q;
    auto& d = ctx->saved_data;
    q.kind = static_cast<QuantKind>(d["kind"].toInt());
    q.doubleQuant = d["double"].toBool();
    q.rows = d["rows"].toInt();
    q.cols = d["cols"].toInt();
    q.data = d["data"].toTensor();
    q.absmax = d["absmax"].toTensor();
    q.absmax2 = d["absmax2"].toTensor();
    q.code2 = d["code2"].toTensor();
    q.offset = static_cast<float>(d["offset"].toDouble());
    return q;
}

struct QuantizedLinearFunction : public torch::autograd::Function<QuantizedLinearFunction> {
    // bias: optional, as an undefined tensor cannot be an autograd input.
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                 const std::optional<torch::Tensor>& maybeBias,
                                 const std::shared_ptr<const QuantizedWeight>& weight)
    {
        const torch::Tensor bias = maybeBias.value_or(torch::Tensor());
        const at::DeviceType type = x.device().type();
        const torch::Dtype dtype = at::autocast::is_autocast_enabled(type)
                                       ? at::autocast::get_autocast_dtype(type)
                                       : x.scalar_type();
        const torch::Tensor flat = x.reshape({-1, weight->cols}).to(dtype);
        torch::Tensor y;
        {
            // The dequantised weight lives only inside this scope. Autocast is off here: the
            // operands are already in the compute dtype.
            const bool autocast = at::autocast::is_autocast_enabled(type);
            at::autocast::set_autocast_enabled(type, false);
            const torch::Tensor w = dequantizeWeight(*weight, dtype);  // [rows, cols]
            y = bias.defined() ? torch::addmm(bias.to(dtype), flat, w.t()) : flat.mm(w.t());
            at::autocast::set_autocast_enabled(type, autocast);
        }
        saveWeight(ctx, *weight);
        ctx->saved_data["x_shape"] = x.sizes().vec();
        ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
        ctx->saved_data["bias_grad"] = bias.defined() && bias.requires_grad();
        if (bias.defined())
            ctx->saved_data["bias_dtype"] = static_cast<int64_t>(bias.scalar_type());
        auto shape = x.sizes().vec();
        shape.back() = weight->rows;
        return y.view(shape);
    }

    // dL/dx = dL/dy W, with W dequantised again into dL/dy's dtype; no gradient for W.
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads)
    {
        const QuantizedWeight q = savedWeight(ctx);
        const torch::Tensor g = grads[0].reshape({-1, q.rows});
        torch::Tensor gradX;
        {
            const torch::Tensor w = dequantizeWeight(q, g.scalar_type());
            gradX = g.mm(w);
        }
        const auto shape = ctx->saved_data["x_shape"].toIntVector();
        gradX = gradX.view(shape).to(static_cast<torch::Dtype>(ctx->saved_data["x_dtype"].toInt()));
        torch::Tensor gradBias;
        if (ctx->saved_data["bias_grad"].toBool())
            gradBias =
                g.sum(0).to(static_cast<torch::Dtype>(ctx->saved_data["bias_dtype"].toInt()));
        return {gradX, gradBias, torch::Tensor()};
    }
};

}  // namespace

torch::Tensor quantizedLinear(const torch::Tensor& x,
                              const std::shared_ptr<const QuantizedWeight>& weight,
                              const torch::Tensor& bias)
{
    return QuantizedLinearFunction::apply(
        x, bias.defined() ? std::optional<torch::Tensor>(bias) : std::nullopt, weight);
}

}  // namespace tb
