// Batching and packing: tokenized examples (data/example.h) truncated or packed into fixed-length
// sequences, padded batches, evaluation batches and the seeded epoch order. Torch-free: the
// training loop turns TokenBatch into tensors.
#pragma once

#include "data/example.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// Fixed-length sequences ready for a batch. labels[i] is the id to predict at position i (already
// shifted: labels[i] = ids[i + 1] where that token carries loss), or -100 where no loss is taken.
struct Sequence {
    std::vector<int32_t> ids;
    std::vector<int32_t> labels;
    int32_t length = 0;  // real tokens before padding
};

struct SequenceSet {
    std::vector<Sequence> sequences;
    int64_t examples = 0;
    int64_t truncated = 0;   // examples cut at maxLength
    int64_t tokens = 0;      // real tokens
    int64_t lossTokens = 0;  // tokens that carry loss
};

// packing=false: one example per sequence, padded with padId to the longest in its batch later
// (here: to its own length; TokenBatch pads). packing=true: examples concatenated (each keeps its
// own BOS/EOS) and cut into sequences of exactly maxLength tokens; loss never crosses from one
// example into the next.
SequenceSet buildSequences(const std::vector<TokenizedExample>& examples, int maxLength,
                           bool packing);

// A batch of equal-length rows, row-major [rows, width]; padding uses padId with label -100.
struct TokenBatch {
    int64_t rows = 0, width = 0;
    std::vector<int64_t> ids;
    std::vector<int64_t> labels;
    int64_t lossTokens = 0;
};
TokenBatch makeBatch(const SequenceSet& set, const std::vector<int64_t>& indices, int32_t padId);

// The batches an evaluation reads: consecutive runs of up to batchSize sequences in order, padded
// with padId, those without loss-carrying tokens skipped. With maxLossTokens >= 0, no sequence is
// added once that many loss-carrying tokens are planned (a bounded sample); -1 reads the whole set.
void forEachEvalBatch(const SequenceSet& set, int64_t batchSize, int32_t padId,
                      int64_t maxLossTokens, const std::function<void(const TokenBatch&)>& f);

// Seeded order of sequence indices for one epoch: the same seed and epoch always give the same
// order, independent of platform (uses its own PRNG, not std::shuffle).
std::vector<int64_t> epochOrder(int64_t count, uint64_t seed, int64_t epoch);

}  // namespace tb
