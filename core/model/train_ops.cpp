// RMSNorm and the rotary embedding for training, forward and backward in one loop each (see
// train_ops.h). Rows are split over the intra-op threads with at::parallel_for (this file is
// compiled with OpenMP where LibTorch's runtime is found). The forward rounds as LibTorch's
// operators do in fp32; the backward adds its terms in fp32 and rounds once.
#include "model/train_ops.h"

#include "model/decode_ops.h"
#include "model/swiglu_kernel.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace tb {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows per task: about 32 Ki elements, so small tensors stay on one thread.
int64_t grainRows(int64_t dim)
{
    return std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(dim, 1));
}

bool onCpu(std::initializer_list<const torch::Tensor*> tensors)
{
    for (const torch::Tensor* t : tensors)
        if (!t->defined() || !t->device().is_cpu())
            return false;
    return true;
}

// ---- RMSNorm ------------------------------------------------------------------------------------

// x: [rows, dim] fp32, contiguous. inverse: [rows] 1 / rms; normed: x * inverse (or null).
void rmsNormForward(const float* x, const float* w, float* y, float* inverse, float* normed,
                    int64_t rows, int64_t dim, float eps)
{
    at::parallel_for(0, rows, grainRows(dim), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            inverse[r] = rmsNormRow<float>(x + r * dim, w, y + r * dim,
                                           normed ? normed + r * dim : nullptr, dim, eps);
    });
}

// dx = inv * g - inv^3 * x * sum(g * x) / dim, g = dy * w (per row).
void rmsNormInputGrad(const float* dy, const float* x, const float* w, const float* inverse,
                      float* dx, int64_t rows, int64_t dim)
{
    at::parallel_for(0, rows, grainRows(dim), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* dyr = dy + r * dim;
            const float* xr = x + r * dim;
            double dot = 0;
            for (int64_t i = 0; i < dim; ++i)
                dot += static_cast<double>(dyr[i] * w[i]) * static_cast<double>(xr[i]);
            const float inv = inverse[r];
            const float k = static_cast<float>(dot / static_cast<double>(dim)) * inv * inv * inv;
            float* dxr = dx + r * dim;
            for (int64_t i = 0; i < dim; ++i)
                dxr[i] = inv * (dyr[i] * w[i]) - k * xr[i];
        }
    });
}

// dw = sum over rows of dy * normed: each thread sums its rows, then the threads' sums are added.
torch::Tensor rmsNormWeightGrad(const torch::Tensor& dy, const torch::Tensor& normed, int64_t rows,
                                int64_t dim)
{
    const int threads = at::get_num_threads();
    std::vector<float> partial(static_cast<size_t>(threads) * static_cast<size_t>(dim), 0.0f);
    const float* dyp = dy.data_ptr<float>();
    const float* np = normed.data_ptr<float>();
    at::parallel_for(0, rows, grainRows(dim), [&](int64_t begin, int64_t end) {
        float* acc = partial.data() + static_cast<size_t>(at::get_thread_num()) * dim;
        for (int64_t r = begin; r < end; ++r)
            for (int64_t i = 0; i < dim; ++i)
                acc[i] += dyp[r * dim + i] * np[r * dim + i];
    });
    torch::Tensor dw = torch::zeros({dim}, dy.options());
    float* d = dw.data_ptr<float>();
    for (int t = 0; t < threads; ++t)
        for (int64_t i = 0; i < dim; ++i)
            d[i] += partial[static_cast<size_t>(t) * dim + i];
    return dw;
}

struct RmsNormFn : public torch::autograd::Function<RmsNormFn> {
    // x: [..., dim], w: [dim]; both fp32.
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                                 const torch::Tensor& w, double eps)
    {
        const int64_t dim = w.size(0), rows = x.numel() / dim;
        const torch::Tensor xc = x.contiguous(), wc = w.contiguous();
        torch::Tensor y = torch::empty_like(xc, torch::MemoryFormat::Contiguous);
        torch::Tensor inverse = torch::empty({rows}, xc.options());
        const bool weightGrad = w.requires_grad();
        torch::Tensor normed =
            weightGrad ? torch::empty_like(xc, torch::MemoryFormat::Contiguous) : torch::Tensor();
        rmsNormForward(xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(),
                       inverse.data_ptr<float>(), weightGrad ? normed.data_ptr<float>() : nullptr,
                       rows, dim, static_cast<float>(eps));
        // What LibTorch's operators keep: the input and 1/rms for the input's gradient, the
        // normalised input for the weight's.
        const bool inputGrad = x.requires_grad();
        ctx->save_for_backward(
            {inputGrad ? xc : torch::Tensor(), wc, inputGrad ? inverse : torch::Tensor(), normed});
        return y;
    }

    static variable_list backward(AutogradContext* ctx, variable_list gradOut)
    {
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor &x = saved[0], &w = saved[1], &inverse = saved[2], &normed = saved[3];
        const torch::Tensor dy = gradOut[0].to(torch::kFloat32).contiguous();
        const int64_t dim = w.size(0), rows = dy.numel() / dim;
        torch::Tensor dx, dw;
        if (ctx->needs_input_grad(0) && x.defined()) {
            dx = torch::empty_like(dy, torch::MemoryFormat::Contiguous);
            rmsNormInputGrad(dy.data_ptr<float>(), x.data_ptr<float>(), w.data_ptr<float>(),
                             inverse.data_ptr<float>(), dx.data_ptr<float>(), rows, dim);
        }
        if (ctx->needs_input_grad(1) && normed.defined())
            dw = rmsNormWeightGrad(dy, normed, rows, dim);
        return {dx, dw, torch::Tensor()};
    }
};

// ---- Rotary embedding ---------------------------------------------------------------------------

// Element pointers of row r of a [batch, heads, seq, dim] tensor with a contiguous last dimension.
struct RowWalk {
    int64_t heads, seq, s0, s1, s2;
    explicit RowWalk(const torch::Tensor& t)
        : heads(t.size(1)), seq(t.size(2)), s0(t.stride(0)), s1(t.stride(1)), s2(t.stride(2))
    {
    }
    int64_t offset(int64_t r) const
    {
        const int64_t b = r / (heads * seq), h = (r / seq) % heads, s = r % seq;
        return b * s0 + h * s1 + s * s2;
    }
    int64_t table(int64_t r, bool perRow) const  // row of the [seq, dim] / [batch, 1, seq, dim]
    {
        const int64_t s = r % seq;
        return perRow ? (r / (heads * seq)) * seq + s : s;
    }
};

// TX: x's element type; TC: the tables'; TO: the output's (TX when both agree, else float). Each
// product and the sum rounded to TO, as LibTorch's mul, mul and add.
template <typename TX, typename TC, typename TO>
void ropeForward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                 torch::Tensor& out)
{
    const int64_t dim = x.size(3);
    const int64_t rows = x.size(0) * x.size(1) * x.size(2);
    const bool perRow = cos.dim() == 4;
    const RowWalk in(x), to(out);
    const TX* xp = x.data_ptr<TX>();
    const TC* cp = cos.data_ptr<TC>();
    const TC* sp = sin.data_ptr<TC>();
    TO* op = out.data_ptr<TO>();
    at::parallel_for(0, rows, grainRows(dim), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const int64_t table = in.table(r, perRow) * dim;
            ropeRow<TX, TC, TO>(xp + in.offset(r), cp + table, sp + table, op + to.offset(r), dim);
        }
    });
}

// dx[i] = dy[i] cos[i] + dy[i + half] sin[i + half] (first half), dy[i] cos[i] - dy[i - half]
// sin[i - half] (second half), in fp32, rounded once to TX.
template <typename TX, typename TC, typename TO>
void ropeBackward(const torch::Tensor& dy, const torch::Tensor& cos, const torch::Tensor& sin,
                  torch::Tensor& dx)
{
    const int64_t dim = dy.size(3), half = dim / 2;
    const int64_t rows = dy.size(0) * dy.size(1) * dy.size(2);
    const bool perRow = cos.dim() == 4;
    const RowWalk in(dy), to(dx);
    const TO* gp = dy.data_ptr<TO>();
    const TC* cp = cos.data_ptr<TC>();
    const TC* sp = sin.data_ptr<TC>();
    TX* op = dx.data_ptr<TX>();
    at::parallel_for(0, rows, grainRows(dim), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const TO* g = gp + in.offset(r);
            const int64_t table = in.table(r, perRow) * dim;
            const TC* c = cp + table;
            const TC* s = sp + table;
            TX* o = op + to.offset(r);
            for (int64_t i = 0; i < half; ++i)
                o[i] = static_cast<TX>(static_cast<float>(g[i]) * static_cast<float>(c[i]) +
                                       static_cast<float>(g[i + half]) *
                                           static_cast<float>(s[i + half]));
            for (int64_t i = half; i < dim; ++i)
                o[i] = static_cast<TX>(static_cast<float>(g[i]) * static_cast<float>(c[i]) -
                                       static_cast<float>(g[i - half]) *
                                           static_cast<float>(s[i - half]));
        }
    });
}

// A tensor of x's sizes laid out as x when x is dense (the attention's transposed view), else
// dense with x's dimensions in x's memory order: q or k sliced from a fused q/k/v product (Phi-3's)
// comes out laid out as the separate projection's would, [batch, seq, heads, dim], which the
// attention keeps and whose output the next layer reads without a copy.
torch::Tensor emptyLike(const torch::Tensor& x, torch::ScalarType dtype)
{
    if (x.is_non_overlapping_and_dense())
        return torch::empty_strided(x.sizes(), x.strides(), x.options().dtype(dtype));
    std::vector<int64_t> order(static_cast<size_t>(x.dim()));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&x](int64_t a, int64_t b) { return x.stride(a) > x.stride(b); });
    std::vector<int64_t> sizes, back(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        sizes.push_back(x.size(order[i]));
        back[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
    }
    return torch::empty(sizes, x.options().dtype(dtype)).permute(back);
}

template <typename F> void dispatchRope(torch::ScalarType x, torch::ScalarType table, F&& f)
{
    using BF = c10::BFloat16;
    if (x == torch::kFloat32)
        f(float{}, float{}, float{});
    else if (table == torch::kBFloat16)
        f(BF{}, BF{}, BF{});
    else
        f(BF{}, float{}, float{});
}

struct RopeFn : public torch::autograd::Function<RopeFn> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                                 const torch::Tensor& cos, const torch::Tensor& sin)
    {
        const torch::ScalarType outType =
            cos.scalar_type() == x.scalar_type() ? x.scalar_type() : torch::kFloat32;
        torch::Tensor out = emptyLike(x, outType);
        dispatchRope(x.scalar_type(), cos.scalar_type(), [&](auto tx, auto tc, auto to) {
            ropeForward<decltype(tx), decltype(tc), decltype(to)>(x, cos, sin, out);
        });
        ctx->save_for_backward({cos, sin});
        ctx->saved_data["dtype"] = static_cast<int64_t>(x.scalar_type());
        ctx->saved_data["strides"] = x.strides().vec();
        ctx->saved_data["dense"] = x.is_non_overlapping_and_dense();
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list gradOut)
    {
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor &cos = saved[0], &sin = saved[1];
        const auto xType = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
        const torch::ScalarType outType = cos.scalar_type() == xType ? xType : torch::kFloat32;
        torch::Tensor dy = gradOut[0].to(outType);
        if (dy.stride(3) != 1)
            dy = dy.contiguous();
        const auto strides = ctx->saved_data["strides"].toIntVector();
        torch::Tensor dx =
            ctx->saved_data["dense"].toBool()
                ? torch::empty_strided(dy.sizes(), strides, dy.options().dtype(xType))
                : torch::empty(dy.sizes(), dy.options().dtype(xType));
        dispatchRope(xType, cos.scalar_type(), [&](auto tx, auto tc, auto to) {
            ropeBackward<decltype(tx), decltype(tc), decltype(to)>(dy, cos, sin, dx);
        });
        return {dx, torch::Tensor(), torch::Tensor()};
    }
};

// ---- SwiGLU -------------------------------------------------------------------------------------

static_assert(kSwigluFewRows == kDecodeRowsMax, "a decoding step's rows keep LibTorch's SwiGLU");

// Element ranges of about 32 Ki over the intra-op threads.
template <typename F> void overElements(int64_t n, F&& f)
{
    at::parallel_for(0, n, int64_t(1) << 15, [&](int64_t begin, int64_t end) { f(begin, end); });
}

// bf16 elements as raw 16-bit patterns; null for an undefined tensor.
uint16_t* bf16Elements(const torch::Tensor& t, int64_t offset)
{
    return t.defined() ? reinterpret_cast<uint16_t*>(t.data_ptr()) + offset : nullptr;
}

// bf16 only (swigluTakesTrainOp).
struct SwigluFn : public torch::autograd::Function<SwigluFn> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& gate,
                                 const torch::Tensor& up)
    {
        torch::Tensor out = torch::empty_like(gate, torch::MemoryFormat::Contiguous);
        overElements(gate.numel(), [&](int64_t b, int64_t e) {
            swigluForward(bf16Elements(gate, b), bf16Elements(up, b), bf16Elements(out, b), e - b);
        });
        ctx->save_for_backward({gate, up});
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list gradOut)
    {
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor &gate = saved[0], &up = saved[1];
        const torch::Tensor dy = gradOut[0].to(gate.scalar_type()).contiguous();
        torch::Tensor dg = ctx->needs_input_grad(0) ? torch::empty_like(gate) : torch::Tensor();
        torch::Tensor du = ctx->needs_input_grad(1) ? torch::empty_like(up) : torch::Tensor();
        overElements(gate.numel(), [&](int64_t b, int64_t e) {
            swigluBackward(bf16Elements(dy, b), bf16Elements(gate, b), bf16Elements(up, b),
                           bf16Elements(dg, b), bf16Elements(du, b), e - b);
        });
        return {dg, du};
    }
};

}  // namespace

// gu [rows, 2 i] bf16, contiguous: each row's gate then up (linearsStack's product of gate and
// up); out [rows, i]. Its gradient is one [rows, 2 i] tensor, the stacked product's own.
struct SwigluPackedFn : public torch::autograd::Function<SwigluPackedFn> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& gu)
    {
        const int64_t inner = gu.size(-1) / 2, rows = gu.numel() / gu.size(-1);
        std::vector<int64_t> shape = gu.sizes().vec();
        shape.back() = inner;
        torch::Tensor out = torch::empty(shape, gu.options());
        at::parallel_for(0, rows, grainRows(2 * inner), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r)
                swigluForward(bf16Elements(gu, 2 * inner * r),
                              bf16Elements(gu, 2 * inner * r + inner), bf16Elements(out, inner * r),
                              inner);
        });
        ctx->save_for_backward({gu});
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list gradOut)
    {
        const torch::Tensor gu = ctx->get_saved_variables()[0];
        const int64_t inner = gu.size(-1) / 2, rows = gu.numel() / gu.size(-1);
        const torch::Tensor dy = gradOut[0].to(gu.scalar_type()).contiguous();
        torch::Tensor dgu = torch::empty_like(gu);
        at::parallel_for(0, rows, grainRows(2 * inner), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                uint16_t* d = bf16Elements(dgu, 2 * inner * r);
                swigluBackward(bf16Elements(dy, inner * r), bf16Elements(gu, 2 * inner * r),
                               bf16Elements(gu, 2 * inner * r + inner), d, d + inner, inner);
            }
        });
        return {dgu};
    }
};

bool swigluTakesTrainOp(const torch::Tensor& gate, const torch::Tensor& up)
{
    const torch::ScalarType t = gate.scalar_type();
    // bf16 only: in fp32 the kernel's sigmoid (within 2 ulps) leaves training a few ulps from
    // LibTorch's silu, which fp32 comparisons with transformers and TRL notice (IPO's weights after
    // two steps: 9.2e-7 apart where 7.4e-7 is allowed); bf16 rounds those away.
    return onCpu({&gate, &up}) && gate.dim() >= 1 && gate.sizes() == up.sizes() &&
           up.scalar_type() == t && t == torch::kBFloat16 && gate.is_contiguous() &&
           up.is_contiguous() && gate.numel() > 0 && gate.numel() / gate.size(-1) > kSwigluFewRows;
}

torch::Tensor trainSwiglu(const torch::Tensor& gate, const torch::Tensor& up)
{
    return SwigluFn::apply(gate, up);
}

bool swigluPackedTakesTrainOp(const torch::Tensor& gu)
{
    return onCpu({&gu}) && gu.dim() >= 1 && gu.scalar_type() == torch::kBFloat16 &&
           gu.is_contiguous() && gu.size(-1) > 0 && gu.size(-1) % 2 == 0 &&
           gu.numel() / gu.size(-1) > kSwigluFewRows;
}

torch::Tensor trainSwigluPacked(const torch::Tensor& gu)
{
    return SwigluPackedFn::apply(gu);
}

bool rmsNormTakesTrainOp(const torch::Tensor& x, const torch::Tensor& w)
{
    return onCpu({&x, &w}) && x.dim() >= 1 && w.dim() == 1 && w.size(0) > 0 &&
           x.size(-1) == w.size(0) && x.scalar_type() == torch::kFloat32 &&
           w.scalar_type() == torch::kFloat32 && x.numel() > 0;
}

torch::Tensor trainRmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps)
{
    return RmsNormFn::apply(x, w, eps);
}

bool ropeTakesTrainOp(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    if (!ropeLayoutFits(x, cos, sin) || x.numel() == 0 || cos.requires_grad() ||
        sin.requires_grad())
        return false;
    const torch::ScalarType xt = x.scalar_type(), ct = cos.scalar_type();
    return (xt == torch::kFloat32 && ct == torch::kFloat32) ||
           (xt == torch::kBFloat16 && (ct == torch::kBFloat16 || ct == torch::kFloat32));
}

torch::Tensor trainRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    return RopeFn::apply(x, cos, sin);
}

}  // namespace tb
