// Chunked cross-entropy for the LM head: the loss over tokens x vocab without ever holding the
// full fp32 logits, computed chunk by chunk over the tokens and recomputed in backward.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace tb {

// Label value that contributes no loss (and no gradient), as in Hugging Face and torch's default.
inline constexpr int64_t kIgnoreIndex = -100;

// hidden: [tokens, hidden] and weight: [vocab, hidden] (the LM head), any float dtypes, both taken
// to fp32 for the matmul; labels: [tokens] int64 in [0, vocab) or kIgnoreIndex.
// Returns the SUM of the cross-entropies of the labelled tokens, an fp32 scalar (0 when every label
// is ignored): cross_entropy(hidden.float() @ weight.float()^T, labels, sum) up to fp32 rounding.
// Gradients flow to hidden and weight when they require grad (a frozen weight costs no gradient
// work) and come back in the inputs' dtypes. Only labelled tokens are computed at all.
// Peak extra memory (bytes): one logits chunk, 4 * chunkTokens * vocab (logsumexp and softmax are
// formed in place in it), an fp32 copy of a non-fp32 weight, and in backward a [vocab, hidden] fp32
// accumulator when the weight needs a gradient. Saved for backward: the inputs plus, per labelled
// token, its index (int64) and logsumexp (fp32).
// rows: the logits are those of weight + scatter(rows.delta) (its [n, k] columns added per chunk);
// the delta's gradient is a [k, hidden] fp32 accumulator.
// Throws tb::Error on mismatched shapes or devices, non-int64 labels, labels out of range or
// chunkTokens < 1.
// Trainable token rows of the head (CausalLM::headTokenDelta): delta [k, hidden] added to rows ids
// [k] (distinct int64) of the weight, without a copy of it; undefined: none.
struct HeadRows {
    torch::Tensor ids;
    torch::Tensor delta;
};

torch::Tensor chunkedCrossEntropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                  const torch::Tensor& labels, int64_t chunkTokens = 1024,
                                  const HeadRows& rows = {});

}  // namespace tb
