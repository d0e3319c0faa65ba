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

#include <initializer_list>

namespace tb {

// The conditions every decoding fast path shares (these operators and linearForward's few-rows
// kernels): none of the tensors needs a gradient now (grad mode off, or none requires one;
// undefined ones are skipped), and a dtype of fp32 or bf16.
bool needsNoGradient(std::initializer_list<const torch::Tensor*> tensors);
bool fewRowsDtype(torch::ScalarType t);

// The most rows (positions of all sequences) the fused RMSNorm and rotary embedding take: a
// decoding step of up to 64 sequences; a prefill's longer runs stay with LibTorch's vectorised,
// threaded operators.
constexpr int64_t kDecodeRowsMax = 64;

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

}  // namespace tb
