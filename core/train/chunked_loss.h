// Chunked cross-entropy for the LM head: the loss over tokens x vocab without ever holding the
// full fp32 logits, computed chunk by chunk over the tokens and recomputed in backward; and the
// fused head loss of training, whose forward forms the gradients at once.
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

// The same sum of cross-entropies (the arguments as chunkedCrossEntropy's) for training: where an
// input needs a gradient, forward forms the gradients of the sum right away from each chunk's
// logits (softmax - onehot, times the head weight and the hidden states) and backward only scales
// them by grad_output. So the head's three matrix products run once, as in an unfused head, and
// neither the [tokens, vocab] logits nor their gradient are kept, zero-filled or read again (the
// unfused loss writes and reads them four times more). Under autocast the products run in its
// dtype with the softmax in fp32, as autocast's own head and cross_entropy do. Held from forward
// to backward: the gradients (one [tokens, hidden] in the hidden states' dtype, one [vocab,
// hidden] fp32 when the weight trains). Without gradients it is chunkedCrossEntropy's forward.
// scale multiplies the sum (and its gradients: 1 / the loss tokens gives a mean without another
// pass over the gradients). chunkTokens 0: as many tokens as keep a chunk's logits and their fp32
// log-softmax near 256 MiB.
torch::Tensor fusedHeadCrossEntropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                    const torch::Tensor& labels, double scale = 1.0,
                                    int64_t chunkTokens = 0, const HeadRows& rows = {});

}  // namespace tb
