// A single sequence's decoding step through one Llama-family block in one pass over raw pointers.
// Through the modules, one token's pass through a block runs some fifty LibTorch operators (norms,
// seven products each with its casts and views, rotary embeddings, cache writes, attention, SiLU,
// products, residual adds) and seven parallel regions; on a model whose step reads its weights in
// a few milliseconds, their dispatch and the cores' waits between them are a fifth of the time.
// This step does the same arithmetic with the same kernels (model/few_rows_kernel.h,
// model/attention_kernel.h, the rows of model/decode_ops.h) in five parallel regions: q, k and v
// together; the attention; o; gate and up together with SiLU and the product; down. Activations
// are rounded to the model dtype where the operators would round them, so bf16 matches the module
// path operator by operator. Internal to core (LibTorch types).
#pragma once

#include "model/causal_lm.h"

namespace tb {

// The parts of a Llama block (llama, mistral, qwen2's q/k/v biases) the step reads.
struct DecodeBlockParts {
    const RMSNormImpl& inputNorm;
    const RMSNormImpl& postNorm;
    const LinearImpl& q;
    const LinearImpl& k;
    const LinearImpl& v;
    const LinearImpl& o;
    const LinearImpl& gate;
    const LinearImpl& up;
    const LinearImpl& down;
    int64_t heads, kvHeads, headDim;
    bool plain;  // rotary, no q/k norms, no adapter active: the block adds only the above
};

// On by default; off, every step goes through the modules (tests compare the two, benchmarks
// time them). Process-wide.
void setOnePassDecoding(bool on);
bool onePassDecoding();
// Block steps the one pass has taken in this process (tests check which path ran).
int64_t onePassDecodingSteps();

// Whether this call is a step the one pass takes: x [1, 1, hidden] fp32 or bf16 on the CPU,
// contiguous, no gradient recorded, no autocast; a cache without padding, rotary tables
// [1, head_dim] of x's dtype and no mask; the layer's cache, if any yet, [1, kv_heads, capacity,
// head_dim] contiguous of x's dtype; every layer plain (no quantised weight, no active LoRA
// branch, weights [out, in] and biases of x's dtype).
bool decodeBlockTakes(const DecodeBlockParts& p, const torch::Tensor& x, const BlockContext& ctx,
                      const KVCache* cache, size_t layer);

// The block's output [1, 1, hidden] for x at position past, its key and value appended to the
// cache of `layer` (cache->length is the caller's, as for the module path). Only where
// decodeBlockTakes.
torch::Tensor decodeBlockStep(const DecodeBlockParts& p, const torch::Tensor& x,
                              const BlockContext& ctx, KVCache& cache, size_t layer, int64_t past);

}  // namespace tb
