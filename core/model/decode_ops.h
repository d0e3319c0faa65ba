// Decoding's small operators, each in one pass over a few rows: RMSNorm and the rotary embedding.
// A decoding step runs some twenty LibTorch operators per layer on a handful of values each, and
// their dispatch, not their arithmetic, is what they cost (docs/benchmarks.md, the few-rows
// kernels' profile). On the CPU without autograd, for fp32 or bf16 tensors of one dtype and up to
// kFewRowsMax rows (positions; a q/k norm's rows are its heads), these take one loop instead of
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

// x [..., dim] against w [dim]: x * rsqrt(mean(x^2) + eps) * w, statistics in fp32, the product
// with w after rounding to x's dtype (as RMSNormImpl, and transformers, compute it).
bool rmsNormTakesFused(const torch::Tensor& x, const torch::Tensor& w);
torch::Tensor fusedRmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps);

// x [batch, heads, seq, head_dim] (any strides with a contiguous last dimension), cos and sin
// [seq, head_dim] or [batch, 1, seq, head_dim]: x * cos + rotate_half(x) * sin, contiguous.
bool ropeTakesFused(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
torch::Tensor fusedRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

}  // namespace tb
