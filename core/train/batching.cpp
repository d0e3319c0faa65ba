// Batching and packing: label-shifted sequences built from tokenized examples (one each, or whole
// examples in best-fit-decreasing bins), padded batches, evaluation batches, and the seeded,
// platform-independent order of each epoch (plain or length-grouped).
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
#include <set>
#include <tuple>

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

std::vector<std::vector<int64_t>> packBins(const std::vector<int32_t>& lengths, int32_t capacity,
                                           uint64_t seed)
{
    if (capacity <= 0)
        fail("packBins: capacity must be positive, got ", capacity);
    // Longest first; equal lengths in a seeded order (its own stream, unrelated to the epochs').
    const std::vector<int64_t> shuffled =
        epochOrder(static_cast<int64_t>(lengths.size()), seed ^ 0xB1A5ED0C0FFEEULL, 0);
    std::vector<int64_t> order;
    for (int64_t i : shuffled) {
        const int32_t n = lengths[static_cast<size_t>(i)];
        if (n > capacity)
            fail("packBins: item ", i, " has ", n, " tokens, over the capacity of ", capacity);
        if (n > 0)
            order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
    });
    std::vector<std::vector<int64_t>> bins;
    std::set<std::pair<int32_t, int64_t>> open;  // (free tokens, bin): the fullest fitting first
    for (int64_t item : order) {
        const int32_t n = lengths[static_cast<size_t>(item)];
        auto fit = open.lower_bound({n, 0});
        int64_t bin = static_cast<int64_t>(bins.size());
        int32_t left = capacity;
        if (fit != open.end()) {
            std::tie(left, bin) = *fit;
            open.erase(fit);
        } else {
            bins.emplace_back();
        }
        bins[static_cast<size_t>(bin)].push_back(item);
        if (left - n > 0)
            open.insert({left - n, bin});
    }
    return bins;
}

SequenceSet buildSequences(const std::vector<TokenizedExample>& examples, int maxLength,
                           bool packing, uint64_t seed)
{
    if (maxLength <= 0)
        fail("buildSequences: maxLength must be positive, got ", maxLength);
    SequenceSet set;
    set.examples = static_cast<int64_t>(examples.size());
    set.packed = packing;

    // Labels of one example cut at n tokens, shifted: position i predicts ids[i + 1]; its last
    // position predicts nothing (in a bin the next token belongs to another example).
    auto shiftedLabels = [](const TokenizedExample& ex, size_t n) {
        std::vector<int32_t> labels(n, kIgnore);
        for (size_t i = 0; i + 1 < n; ++i)
            if (ex.lossMask[i + 1])
                labels[i] = ex.ids[i + 1];
        return labels;
    };
    std::vector<int32_t> lengths;  // each example's tokens after the cut at maxLength
    for (const TokenizedExample& ex : examples) {
        if (ex.ids.size() != ex.lossMask.size())
            fail("buildSequences: ids and lossMask differ in length (", ex.ids.size(), " vs ",
                 ex.lossMask.size(), ")");
        const size_t n = std::min(ex.ids.size(), static_cast<size_t>(maxLength));
        if (ex.truncated || n < ex.ids.size())
            ++set.truncated;
        lengths.push_back(static_cast<int32_t>(n));
    }
    // Appends example e (cut) to seq.
    auto append = [&](Sequence& seq, int64_t e) {
        const TokenizedExample& ex = examples[static_cast<size_t>(e)];
        const auto n = static_cast<size_t>(lengths[static_cast<size_t>(e)]);
        const std::vector<int32_t> labels = shiftedLabels(ex, n);
        seq.ids.insert(seq.ids.end(), ex.ids.begin(), ex.ids.begin() + static_cast<long>(n));
        seq.labels.insert(seq.labels.end(), labels.begin(), labels.end());
        seq.length = static_cast<int32_t>(seq.ids.size());
    };

    if (!packing) {
        for (size_t e = 0; e < examples.size(); ++e) {
            if (lengths[e] == 0)
                continue;
            Sequence seq;
            append(seq, static_cast<int64_t>(e));
            set.sequences.push_back(std::move(seq));
        }
    } else {
        for (const std::vector<int64_t>& bin : packBins(lengths, maxLength, seed)) {
            Sequence seq;
            for (int64_t e : bin) {
                seq.starts.push_back(seq.length);
                seq.examples.push_back(e);
                append(seq, e);
            }
            set.sequences.push_back(std::move(seq));
        }
        set.tokenSlots = static_cast<int64_t>(set.sequences.size()) * maxLength;
    }
    for (const Sequence& seq : set.sequences) {
        set.tokens += seq.length;
        set.lossTokens += static_cast<int64_t>(std::count_if(
            seq.labels.begin(), seq.labels.end(), [](int32_t l) { return l != kIgnore; }));
    }
    return set;
}

std::optional<PackingStats> packingStats(const SequenceSet& set)
{
    if (!set.packed)
        return std::nullopt;
    PackingStats p;
    p.bins = static_cast<int64_t>(set.sequences.size());
    for (const Sequence& seq : set.sequences)
        p.examples += static_cast<int64_t>(seq.examples.size());
    p.tokens = set.tokens;
    p.tokenSlots = set.tokenSlots;
    return p;
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
    const bool packed = std::any_of(indices.begin(), indices.end(), [&](int64_t i) {
        return !set.sequences[static_cast<size_t>(i)].starts.empty();
    });
    if (packed) {
        batch.positions.assign(batch.rows * batch.width, 0);
        batch.segments.assign(batch.rows * batch.width, 0);
    }
    for (int64_t r = 0; r < batch.rows; ++r) {
        const Sequence& seq = set.sequences[indices[r]];
        for (size_t i = 0; i < seq.ids.size(); ++i) {
            batch.ids[r * batch.width + i] = seq.ids[i];
            const int32_t label = i < seq.labels.size() ? seq.labels[i] : kIgnore;
            batch.labels[r * batch.width + i] = label;
            batch.lossTokens += label != kIgnore;
        }
        if (!packed)
            continue;
        // Example k of the row is segment k; the padding is one segment more, so that every query
        // has at least itself to attend to.
        const std::vector<int32_t> starts =
            seq.starts.empty() ? std::vector<int32_t>{0} : seq.starts;
        int64_t* segments = batch.segments.data() + r * batch.width;
        int64_t* positions = batch.positions.data() + r * batch.width;
        for (size_t k = 0; k < starts.size(); ++k) {
            const int32_t end = k + 1 < starts.size() ? starts[k + 1] : seq.length;
            for (int32_t i = starts[k]; i < end; ++i) {
                segments[i] = static_cast<int64_t>(k);
                positions[i] = i - starts[k];
            }
        }
        for (int64_t i = seq.length; i < batch.width; ++i) {
            segments[i] = static_cast<int64_t>(starts.size());
            positions[i] = i - seq.length;
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

std::vector<int64_t> lengthGroupedOrder(const std::vector<int32_t>& lengths, int64_t batchSize,
                                        uint64_t seed, int64_t epoch)
{
    if (batchSize <= 0)
        fail("lengthGroupedOrder: batchSize must be positive, got ", batchSize);
    std::vector<int64_t> order = epochOrder(static_cast<int64_t>(lengths.size()), seed, epoch);
    const auto n = static_cast<int64_t>(order.size());
    const int64_t mega = kLengthGroupBatches * batchSize;
    auto longer = [&](int64_t a, int64_t b) {
        return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
    };
    for (int64_t begin = 0; begin < n; begin += mega)
        std::stable_sort(order.begin() + begin, order.begin() + std::min(n, begin + mega), longer);

    // Shuffle the full batches (their own stream); a short last batch stays last.
    const int64_t full = n / batchSize;
    std::vector<int64_t> batches = epochOrder(full, seed ^ 0x6E0B1E5EEDULL, epoch);
    if (full > 1) {
        // Each mega-batch's first batch holds its longest sequence: find the longest of them.
        int64_t longest = 0;
        for (int64_t b = 0; b < full; ++b)
            if (longer(order[static_cast<size_t>(batches[b] * batchSize)],
                       order[static_cast<size_t>(batches[longest] * batchSize)]))
                longest = b;
        std::swap(batches[0], batches[static_cast<size_t>(longest)]);
    }
    std::vector<int64_t> out;
    out.reserve(order.size());
    for (int64_t b : batches)
        out.insert(out.end(), order.begin() + b * batchSize, order.begin() + (b + 1) * batchSize);
    out.insert(out.end(), order.begin() + full * batchSize, order.end());
    return out;
}

}  // namespace tb
