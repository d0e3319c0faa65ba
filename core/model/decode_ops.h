// Decoding's small operators, each in one pass over a few rows: RMSNorm, the rotary embedding and
// the attention of a few queries over the KV cache.
// A decoding step runs some twenty LibTorch operators per layer on a handful of values each, and
// their dispatch, not their arithmetic, is what they cost (docs/benchmarks.md, the few-rows
// kernels' profile). On the CPU without autograd, for fp32 or bf16 tensors of one dtype and up to
// kDecodeRowsMax rows (positions; a q/k norm's rows are its heads), these take one loop instead of
// seven or eight operators, with LibTorch's roundings: the rotary embedding bit for bit, RMSNorm
// but for the order of its sum of squares. Internal to core (LibTorch types).
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <initializer_list>

namespace tb {

// The conditions every decoding fast path shares (these operators and linearForward's few-rows
// kernels): none of the tensors needs a gradient now (grad mode off, or none requires one;
// undefined ones are skipped), and a dtype of fp32 or bf16.
bool needsNoGradient(std::initializer_list<const torch::Tensor*> tensors);
bool fewRowsDtype(torch::ScalarType t);

// The most rows (positions of all sequences) the fused RMSNorm and rotary embedding take: a
// decoding step of up to 64 sequences; longer runs take train_ops.h's threaded loops (fp32, and
// the rotary embedding of a bf16 input) or LibTorch's operators.
constexpr int64_t kDecodeRowsMax = 64;

// One row of RMSNorm as every fused path computes it (these and train_ops.h's): the squares
// rounded to fp32 (as pow(2)) and summed in float64, 1/rms in fp32, then w * round_T(x / rms).
// T: float, or c10::BFloat16, whose every operator rounds its float result to bf16. Returns
// 1/rms; normed, when not null, receives round_T(x / rms).
template <typename T>
inline float rmsNormRow(const T* x, const T* w, T* y, T* normed, int64_t dim, float eps)
{
    double squares = 0;
    for (int64_t i = 0; i < dim; ++i) {
        const float v = static_cast<float>(x[i]);
        squares += static_cast<double>(v * v);
    }
    const float inverse =
        1.0f / std::sqrt(static_cast<float>(squares / static_cast<double>(dim)) + eps);
    for (int64_t i = 0; i < dim; ++i) {
        const T n = static_cast<T>(static_cast<float>(x[i]) * inverse);
        y[i] = w[i] * n;
        if (normed)
            normed[i] = n;
    }
    return inverse;
}

// One row of the rotary embedding, o = x * c + rotate_half(x) * s, each product and the sum
// rounded to TO as LibTorch's mul, mul and add (TO: x's type when the tables share it, else
// float).
template <typename TX, typename TC, typename TO>
inline void ropeRow(const TX* x, const TC* c, const TC* s, TO* o, int64_t dim)
{
    const int64_t half = dim / 2;
    for (int64_t i = 0; i < dim; ++i) {
        const TO rotated = i < half ? static_cast<TO>(-x[i + half]) : static_cast<TO>(x[i - half]);
        const TO a = static_cast<TO>(x[i]) * static_cast<TO>(c[i]);
        const TO b = rotated * static_cast<TO>(s[i]);
        o[i] = a + b;
    }
}

// The layout every fused rotary embedding takes (the decoding step's and train_ops.h's): on the
// CPU, x [batch, heads, seq, head_dim] with an even head_dim and a contiguous last dimension;
// cos and sin defined, of one dtype, contiguous, [seq, head_dim] or [batch, 1, seq, head_dim].
bool ropeLayoutFits(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// x [..., dim] against w [dim]: x * rsqrt(mean(x^2) + eps) * w, statistics in fp32, the product
// with w after rounding to x's dtype (as RMSNormImpl, and transformers, compute it).
bool rmsNormTakesFused(const torch::Tensor& x, const torch::Tensor& w);
torch::Tensor fusedRmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps);

// x [batch, heads, seq, head_dim] (any strides with a contiguous last dimension), cos and sin
// [seq, head_dim] or [batch, 1, seq, head_dim]: x * cos + rotate_half(x) * sin, contiguous.
bool ropeTakesFused(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
torch::Tensor fusedRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// The most query positions per sequence decodeAttention takes (a decoding step has one).
constexpr int64_t kDecodeQueriesMax = 16;

// A decoding step's attention over the KV cache (cachedAttention), in place of
// scaled_dot_product_attention, whose CPU kernel makes one small matrix product per sequence, head
// and block of keys for a single query: q [batch, heads, seq, head_dim] against k and v [batch,
// kv_heads, keys, head_dim] (any strides with a contiguous last dimension; query head h reads kv
// head h / (heads / kv_heads)), mask bool and broadcastable to [batch, heads, seq, keys], or
// undefined: causal, the queries being the last seq of the keys' positions. Scale 1 /
// sqrt(head_dim), softmax in fp32 (model/attention_kernel.h), the (sequence, kv head) pairs split
// over the intra-op threads. Returns [batch, heads, seq, head_dim] as a transposed view of a
// contiguous [batch, seq, heads, head_dim], so that merging the heads afterwards copies nothing.
bool attentionTakesDecode(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          const torch::Tensor& mask);
torch::Tensor decodeAttention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, const torch::Tensor& mask);

struct AttentionArgs;
// The same on raw pointers (model/attention_kernel.h) for `batch` sequences: what decodeAttention
// and the one-pass decoding step (model/decode_block.h) both call.
void attendAll(const AttentionArgs& a, int64_t batch);

}  // namespace tb
