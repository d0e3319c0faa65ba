// RMSNorm, the rotary embedding and SwiGLU's product on the CPU as single-pass autograd functions.
// LibTorch builds each from five to eight operators, and their backward from twice as many (the
// rotary embedding's concatenation comes back as zero-filled slices): a dozen passes over a layer's
// activations where one forward and one backward loop do (docs/benchmarks.md, the training
// profile). They save what LibTorch's operators save (the estimator's figures hold) and compute in
// fp32 (the rotary embedding of a bf16 input against fp32 tables, as under autocast, too). They
// run with grad mode on or off, so a frozen reference model (DPO's) computes the very numbers of
// the policy it is compared with; a decoding step's few rows keep decode_ops.h, and both compute
// each row with its rmsNormRow and ropeRow. Internal to core.
#pragma once

#include <torch/torch.h>

namespace tb {

// x [..., dim] fp32 against w [dim] fp32: x * rsqrt(mean(x^2) + eps) * w.
bool rmsNormTakesTrainOp(const torch::Tensor& x, const torch::Tensor& w);
torch::Tensor trainRmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps);

// x [batch, heads, seq, head_dim] (any strides with a contiguous last dimension; the attention
// passes a transposed view), fp32 or bf16; cos and sin [seq, head_dim] or [batch, 1, seq,
// head_dim], contiguous, x's dtype or fp32, needing no gradient. Returns
// x * cos + rotate_half(x) * sin in the promoted dtype, laid out as x.
bool ropeTakesTrainOp(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
torch::Tensor trainRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// SwiGLU's product silu(gate) * up of gate and up [..., intermediate], contiguous, the same shape,
// bf16 (as autocast makes them), more than kSwigluFewRows rows (model/swiglu_kernel.h): one pass
// forward and one backward, keeping gate and up (not silu's output), computed in fp32 and rounded
// once. fp32 keeps LibTorch's operators, whose numbers the fp32 oracles compare with.
bool swigluTakesTrainOp(const torch::Tensor& gate, const torch::Tensor& up);
torch::Tensor trainSwiglu(const torch::Tensor& gate, const torch::Tensor& up);
// The same of gate and up side by side in one tensor gu [..., 2 x intermediate] (each row's gate,
// then its up: the stacked product of model/stacked_linears.h), bf16, contiguous; its gradient
// comes back as one tensor of gu's shape, which the stacked product's backward takes as it lies.
bool swigluPackedTakesTrainOp(const torch::Tensor& gu);
torch::Tensor trainSwigluPacked(const torch::Tensor& gu);

}  // namespace tb
