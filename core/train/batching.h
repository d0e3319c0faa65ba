// Batching and packing: tokenized examples (data/example.h) truncated, or packed whole into bins by
// best-fit decreasing; padded batches (packed ones with per-token positions and segments),
// evaluation batches, the seeded epoch order and its length-grouped variant. Torch-free: the
// training loop turns TokenBatch into tensors.
#pragma once

#include "data/example.h"
#include "train/metrics.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// Sequences ready for a batch. labels[i] is the id to predict at position i (already shifted:
// labels[i] = ids[i + 1] where that token carries loss), or -100 where no loss is taken; the last
// token of each example predicts nothing.
struct Sequence {
    std::vector<int32_t> ids;
    std::vector<int32_t> labels;
    int32_t length = 0;  // real tokens before padding
    // Packed sequences (bins) only, empty otherwise: where each of its examples starts in ids
    // (ascending, the first 0) and which examples they are (indices into buildSequences' input).
    std::vector<int32_t> starts;
    std::vector<int64_t> examples;
};

struct SequenceSet {
    std::vector<Sequence> sequences;
    int64_t examples = 0;
    int64_t truncated = 0;   // examples cut at maxLength
    int64_t tokens = 0;      // real tokens
    int64_t lossTokens = 0;  // tokens that carry loss
    bool packed = false;
    int64_t tokenSlots = 0;  // packed: bins x maxLength (efficiency = tokens / tokenSlots)
};

// Best-fit decreasing: the items (example lengths in tokens, each <= capacity) into bins of
// `capacity` tokens, each item whole in one bin. Longest first, equal lengths in a seeded order;
// each goes to the fullest bin it fits (the oldest such bin on a tie), or opens a new one. Items of
// length 0 go nowhere. Returns the item indices of each bin in the order they were placed: a pure
// function of lengths, capacity and seed (never of time or threads).
std::vector<std::vector<int64_t>> packBins(const std::vector<int32_t>& lengths, int32_t capacity,
                                           uint64_t seed);

// packing=false: one example per sequence, cut at maxLength, padded with padId to the longest in
// its batch later (makeBatch). packing=true: whole examples (each cut at maxLength first, and
// counted in truncated) packed into bins of maxLength tokens by packBins(seed); each keeps its own
// BOS/EOS, its labels and, in makeBatch, its own positions and attention segment.
SequenceSet buildSequences(const std::vector<TokenizedExample>& examples, int maxLength,
                           bool packing, uint64_t seed = 0);

// The bins, examples, tokens and slots of a packed set (nullopt when the set is not packed).
std::optional<PackingStats> packingStats(const SequenceSet& set);

// A batch of equal-length rows, row-major [rows, width]; padding uses padId with label -100.
struct TokenBatch {
    int64_t rows = 0, width = 0;
    std::vector<int64_t> ids;
    std::vector<int64_t> labels;
    // Packed batches only, empty otherwise (one example per row: plain causal attention): per
    // token, [rows, width] as ids, its position within its own example (from 0) and its segment
    // (0, 1, ... for the examples of its row in order; the padding after them one more).
    std::vector<int64_t> positions;
    std::vector<int64_t> segments;
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

// data.val_ratio: moves the seeded share `ratio` (rounded) of `train` into `val`, in that seeded
// order, keeping the rest in order of the permutation. The same seed always holds out the same
// items; examples and preference pairs split by this one rule.
template <typename T>
void splitValidation(std::vector<T>& train, std::vector<T>& val, double ratio, uint64_t seed)
{
    const auto order = epochOrder(static_cast<int64_t>(train.size()), seed ^ 0x5eed, 0);
    const auto nVal = static_cast<size_t>(std::llround(ratio * static_cast<double>(train.size())));
    std::vector<T> kept;
    for (size_t i = 0; i < order.size(); ++i)
        (i < nVal ? val : kept).push_back(std::move(train[static_cast<size_t>(order[i])]));
    train = std::move(kept);
}

// Mega-batches of a length-grouped order hold this many batches.
inline constexpr int64_t kLengthGroupBatches = 50;

// Seeded order whose consecutive runs of batchSize indices are batches of similar length
// (data.group_by_length): epochOrder's permutation cut into mega-batches of kLengthGroupBatches x
// batchSize sequences, each sorted longest first (ties kept in permutation order) and cut into
// batches; the full batches are shuffled, the one holding the longest sequence is moved first (a
// run that runs out of memory does so at its first step) and a short last batch stays last. Like
// epochOrder, a pure function of its arguments: every index exactly once.
std::vector<int64_t> lengthGroupedOrder(const std::vector<int32_t>& lengths, int64_t batchSize,
                                        uint64_t seed, int64_t epoch);

}  // namespace tb
