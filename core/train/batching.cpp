// Batching and packing: label-shifted (packed) sequences built from tokenized examples, padded
// batches, evaluation batches, and the seeded, platform-independent order of each epoch.
#include "train/batching.h"

#include "data/ingest/import.h"
#include "data/record.h"

#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>

namespace tb {
namespace {

using nlohmann::json;

constexpr int32_t kIgnore =
    -100;  // label of a position that takes no loss (PyTorch's ignore_index)

// Splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and the same sequence on every platform.
class SplitMix64 {
public:
    explicit SplitMix64(uint64_t seed) : m_state(seed) {}
    uint64_t next()
    {
        uint64_t z = (m_state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    // Uniform in [0, bound) without modulo bias (rejection of the short top range).
    uint64_t below(uint64_t bound)
    {
        const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
        uint64_t r = next();
        while (r >= limit)
            r = next();
        return r % bound;
    }

private:
    uint64_t m_state;
};

}  // namespace

SequenceSet buildSequences(const std::vector<TokenizedExample>& examples, int maxLength,
                           bool packing)
{
    if (maxLength <= 0)
        fail("buildSequences: maxLength must be positive, got ", maxLength);
    SequenceSet set;
    set.examples = static_cast<int64_t>(examples.size());

    // Labels of one example, shifted: position i predicts ids[i + 1]; its last position predicts
    // nothing (in a pack the next token belongs to another example).
    auto shiftedLabels = [](const TokenizedExample& ex, size_t n) {
        std::vector<int32_t> labels(n, kIgnore);
        for (size_t i = 0; i + 1 < n; ++i)
            if (ex.lossMask[i + 1])
                labels[i] = ex.ids[i + 1];
        return labels;
    };
    auto countLoss = [](const std::vector<int32_t>& labels) {
        return static_cast<int64_t>(
            std::count_if(labels.begin(), labels.end(), [](int32_t l) { return l != kIgnore; }));
    };

    if (!packing) {
        for (const TokenizedExample& ex : examples) {
            if (ex.ids.size() != ex.lossMask.size())
                fail("buildSequences: ids and lossMask differ in length (", ex.ids.size(), " vs ",
                     ex.lossMask.size(), ")");
            const size_t n = std::min(ex.ids.size(), static_cast<size_t>(maxLength));
            if (ex.truncated || n < ex.ids.size())
                ++set.truncated;
            if (n == 0)
                continue;
            Sequence seq;
            seq.ids.assign(ex.ids.begin(), ex.ids.begin() + n);
            seq.labels = shiftedLabels(ex, n);
            seq.length = static_cast<int32_t>(n);
            set.tokens += static_cast<int64_t>(n);
            set.lossTokens += countLoss(seq.labels);
            set.sequences.push_back(std::move(seq));
        }
        return set;
    }

    // Packing: one stream of ids and labels, cut into maxLength chunks. A chunk's last position
    // keeps its label (the next token of the same example, as llm.c's x/y windows do); only example
    // ends take none. The final, shorter chunk is kept: makeBatch pads it.
    std::vector<int32_t> ids, labels;
    for (const TokenizedExample& ex : examples) {
        if (ex.ids.size() != ex.lossMask.size())
            fail("buildSequences: ids and lossMask differ in length (", ex.ids.size(), " vs ",
                 ex.lossMask.size(), ")");
        if (ex.truncated)
            ++set.truncated;
        const std::vector<int32_t> exLabels = shiftedLabels(ex, ex.ids.size());
        ids.insert(ids.end(), ex.ids.begin(), ex.ids.end());
        labels.insert(labels.end(), exLabels.begin(), exLabels.end());
    }
    set.tokens = static_cast<int64_t>(ids.size());
    set.lossTokens = countLoss(labels);
    for (size_t start = 0; start < ids.size(); start += static_cast<size_t>(maxLength)) {
        const size_t end = std::min(ids.size(), start + static_cast<size_t>(maxLength));
        Sequence seq;
        seq.ids.assign(ids.begin() + start, ids.begin() + end);
        seq.labels.assign(labels.begin() + start, labels.begin() + end);
        seq.length = static_cast<int32_t>(end - start);
        set.sequences.push_back(std::move(seq));
    }
    return set;
}

TokenBatch makeBatch(const SequenceSet& set, const std::vector<int64_t>& indices, int32_t padId)
{
    TokenBatch batch;
    batch.rows = static_cast<int64_t>(indices.size());
    for (int64_t index : indices) {
        if (index < 0 || index >= static_cast<int64_t>(set.sequences.size()))
            fail("makeBatch: sequence index ", index, " out of range (", set.sequences.size(),
                 " sequences)");
        batch.width = std::max<int64_t>(batch.width, set.sequences[index].ids.size());
    }
    batch.ids.assign(batch.rows * batch.width, padId);
    batch.labels.assign(batch.rows * batch.width, kIgnore);
    for (int64_t r = 0; r < batch.rows; ++r) {
        const Sequence& seq = set.sequences[indices[r]];
        for (size_t i = 0; i < seq.ids.size(); ++i) {
            batch.ids[r * batch.width + i] = seq.ids[i];
            const int32_t label = i < seq.labels.size() ? seq.labels[i] : kIgnore;
            batch.labels[r * batch.width + i] = label;
            batch.lossTokens += label != kIgnore;
        }
    }
    return batch;
}

void forEachEvalBatch(const SequenceSet& set, int64_t batchSize, int32_t padId,
                      int64_t maxLossTokens, const std::function<void(const TokenBatch&)>& f)
{
    std::vector<int64_t> indices;
    auto flush = [&] {
        if (indices.empty())
            return;
        const TokenBatch b = makeBatch(set, indices, padId);
        indices.clear();
        if (b.lossTokens > 0)
            f(b);
    };
    int64_t planned = 0;
    for (size_t i = 0; i < set.sequences.size() && (maxLossTokens < 0 || planned < maxLossTokens);
         ++i) {
        indices.push_back(static_cast<int64_t>(i));
        if (maxLossTokens >= 0)
            for (int32_t label : set.sequences[i].labels)
                planned += label >= 0 ? 1 : 0;
        if (static_cast<int64_t>(indices.size()) == batchSize)
            flush();
    }
    flush();
}

std::vector<int64_t> epochOrder(int64_t count, uint64_t seed, int64_t epoch)
{
    std::vector<int64_t> order(static_cast<size_t>(std::max<int64_t>(count, 0)));
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<int64_t>(i);
    // Seed and epoch mixed through one splitmix step each, so neighbouring seeds or epochs give
    // unrelated streams.
    const uint64_t seedMixed = SplitMix64(seed).next();
    const uint64_t epochMixed =
        SplitMix64(static_cast<uint64_t>(epoch) + 0x5851F42D4C957F2DULL).next();
    SplitMix64 rng(seedMixed ^ epochMixed);
    for (size_t i = order.size(); i > 1; --i) {  // Fisher-Yates, from the back
        const size_t j = static_cast<size_t>(rng.below(i));
        std::swap(order[i - 1], order[j]);
    }
    return order;
}

}  // namespace tb
