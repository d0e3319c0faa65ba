// The attention of a decoding step's few queries over a sequence's cached keys and values, for one
// sequence and one kv head at a time: q.k over the keys its mask allows, softmax, times V, in fp32
// (bf16 tensors widened exactly, the output rounded once). Raw pointers, no LibTorch: compiled for
// AVX-512, AVX2 + FMA and portably, as the few-rows kernels; model/decode_ops.cpp splits the
// (sequence, kv head) pairs over the intra-op threads and calls this per pair.
#pragma once

#include "model/few_rows_kernel.h"

#include <cstdint>

namespace tb {

// Where a step's attention reads and writes: element pointers and strides in elements (the last
// dimension, head_dim, contiguous everywhere). Query head h reads kv head h / (heads / kvHeads),
// as transformers' repeat_kv maps them.
struct AttentionArgs {
    const void* q = nullptr;  // [batch, heads, seq, headDim]
    int64_t qBatch = 0, qHead = 0, qSeq = 0;
    const void* k = nullptr;  // [batch, kvHeads, keys, headDim]
    int64_t kBatch = 0, kHead = 0, kPos = 0;
    const void* v = nullptr;  // [batch, kvHeads, keys, headDim]
    int64_t vBatch = 0, vHead = 0, vPos = 0;
    void* out = nullptr;  // [batch, heads, seq, headDim]
    int64_t oBatch = 0, oHead = 0, oSeq = 0;
    // [batch, heads, seq, keys], true where query s may see key j (strides may be 0: broadcast);
    // null: causal, query s sees keys 0 .. keys - seq + s (the queries are the last positions).
    const bool* mask = nullptr;
    int64_t mBatch = 0, mHead = 0, mSeq = 0, mPos = 0;
    int64_t heads = 0, kvHeads = 0, seq = 0, keys = 0, headDim = 0;
    float scale = 1.0f;  // applied to q.k, as scaled_dot_product_attention's scale
    bool bf16 = false;   // q, k, v and out bf16 (raw 16-bit patterns); else fp32
};

// Floats of scratch attendKvHead needs: scores for every key, and one query and one output row.
int64_t attentionScratchFloats(const AttentionArgs& a);

// Sequence `row`, kv head `kvHead`: every query head it serves, every query position. A query that
// may see no key gets zeros.
void attendKvHead(const AttentionArgs& a, int64_t row, int64_t kvHead, float* scratch,
                  FewRowsIsa isa = fewRowsBestIsa());

}  // namespace tb
