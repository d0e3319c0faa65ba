// SwiGLU's product, silu(gate) * up, and its gradients over contiguous elements in one pass each:
// where LibTorch's silu, mul and their backward take five passes over a block's [tokens,
// intermediate] activations (and keep silu's output for backward), this keeps gate and up and
// recomputes the sigmoid. fp32 lanes throughout (bf16 widened exactly, rounded once to
// nearest-even); the sigmoid from vec_math_body.h's expOf (within 2 ulps of e^x). Raw pointers, no
// LibTorch: compiled for AVX-512, AVX2 + FMA and portably, the set chosen as the few-rows kernels'.
#pragma once

#include "model/few_rows_kernel.h"

#include <cstdint>

namespace tb {

// Rows (positions) up to which the model's SwiGLU keeps LibTorch's silu and product: a decoding
// step's, whose one-pass block (model/decode_block.h) computes them as LibTorch does. More rows of
// bf16 take these kernels, training's and prefill's alike, with grad mode on or off
// (model/train_ops.h); fp32 keeps LibTorch's (the fp32 kernels serve tests and comparisons).
inline constexpr int64_t kSwigluFewRows = 64;

// out[i] = g[i] sigmoid(g[i]) u[i], i in [0, n). bf16: raw 16-bit patterns.
void swigluForward(const float* g, const float* u, float* out, int64_t n,
                   FewRowsIsa isa = fewRowsBestIsa());
void swigluForward(const uint16_t* g, const uint16_t* u, uint16_t* out, int64_t n,
                   FewRowsIsa isa = fewRowsBestIsa());

// dg[i] = dy u s (1 + g (1 - s)) and du[i] = dy g s with s = sigmoid(g[i]); dg or du null: not
// wanted.
void swigluBackward(const float* dy, const float* g, const float* u, float* dg, float* du,
                    int64_t n, FewRowsIsa isa = fewRowsBestIsa());
void swigluBackward(const uint16_t* dy, const uint16_t* g, const uint16_t* u, uint16_t* dg,
                    uint16_t* du, int64_t n, FewRowsIsa isa = fewRowsBestIsa());

}  // namespace tb
