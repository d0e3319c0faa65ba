// Torch-free check of decoding's fused RMSNorm, rotary embedding and attention
// (model/decode_ops.h) against the LibTorch operators they stand in for: what test_decode_ops
// calls.
#pragma once

#include <cstdint>

namespace tb {

struct DecodeOpsCheck {
    double maxAbsDiff = 0;           // fused against the layer's LibTorch path, on the same values
    double maxAbsOutput = 0;         // max |y| of the LibTorch path
    bool tookFused = false;          // the layer took the fused path for these (no gradient needed)
    bool fusedWithGradient = false;  // ... and with an input that needs a gradient (must be false)
};

// RMSNorm (RMSNormImpl, eps 1e-5) of x [rows, dim] ~ N(0, 3) with a weight ~ N(1, 0.5), fp32 or
// bf16.
DecodeOpsCheck checkFusedRmsNorm(int64_t rows, int64_t dim, bool bf16, uint64_t seed);

// applyRope of x [batch, heads, seq, dim], a transposed view of [batch, seq, heads, dim] as the
// attention passes it, with tables of real rotary angles (positions 5.. and base 10000) shared by
// the rows ([seq, dim]) or per row ([batch, 1, seq, dim], each row at its own offset).
DecodeOpsCheck checkFusedRope(int64_t batch, int64_t heads, int64_t seq, int64_t dim, bool perRow,
                              bool bf16, uint64_t seed);

// cachedAttention of seq new positions of q [batch, heads, seq, dim] (a transposed view, as the
// attention passes it) over a KV cache of `keys` positions (the new ones included) with spare
// capacity, kvHeads dividing heads, against scaled_dot_product_attention on the same values with
// every kv head repeated for its group and the mask spelt out: causal, or (padded) the rows of a
// left-padded batch (row b's first 3b positions padding, as generateBatch's key padding mask).
// q ~ N(0, 4), k and v ~ N(0, 1), fp32 or bf16; the reference in the same dtype.
DecodeOpsCheck checkDecodeAttention(int64_t batch, int64_t heads, int64_t kvHeads, int64_t seq,
                                    int64_t keys, int64_t dim, bool padded, bool bf16,
                                    uint64_t seed);

struct DecodeBlockCheck {
    double maxAbsDiff = 0;     // logits of the one-pass step against the module path, every step
    double maxAbsLogit = 0;    // max |logit| of the module path
    int64_t onePassSteps = 0;  // block steps the one pass took (0: the module path ran)
    bool sameTokens = false;   // the greedy tokens of both runs equal
};

// A random Llama-family model (2 layers, hidden 256, head_dim 32, MLP 512, vocabulary 512: q/k/v
// split over the threads) decoding `steps` greedy tokens after a prompt of 5, with the one-pass
// step (model/decode_block.h) and through the modules. kvHeads < heads: grouped-query attention;
// bias: q/k/v biases (qwen2); lora: 0 none, 1 an active LoRA branch on q and v (the module path
// must run), 2 the same merged (the one pass runs); fp32 or bf16.
DecodeBlockCheck checkDecodeBlock(int64_t heads, int64_t kvHeads, bool bias, int lora, bool bf16,
                                  int steps, uint64_t seed);

}  // namespace tb
