// The losses of training, over a causal LM's outputs: mean token cross-entropy through the full
// logits, and the same through the chunked head (train/chunked_loss.h: logits never materialised),
// chosen by the run's `loss`. Internal to core (LibTorch types).
#pragma once

#include "model/causal_lm.h"
#include "train/batching.h"
#include "train/chunked_loss.h"
#include "train/train_config.h"

#include <optional>

namespace tb {

// A batch as tensors on a device: ids and labels [rows, width] int64 and, for a packed batch, its
// positions and segments (the same shape).
struct BatchTensors {
    torch::Tensor ids, labels;
    std::optional<PackedRows> packed;
    const PackedRows* packedRows() const { return packed ? &*packed : nullptr; }
};
BatchTensors toTensors(const TokenBatch& batch, const torch::Device& device);

// Loss per loss-carrying token: logits [batch, seq, vocab], labels [batch, seq] (-100 = no loss),
// the summed cross-entropy divided by `normaliser` (the loss tokens of the whole optimizer step).
torch::Tensor tokenLoss(const torch::Tensor& logits, const torch::Tensor& labels,
                        double normaliser);

// The summed token loss of one batch over `normaliser`: ids and labels [batch, seq] int64, through
// the full logits (loss: full) or the chunked head (loss: chunked, loss_chunk_tokens per chunk).
// packed: positions and segments of packed rows (block-diagonal attention), or null.
torch::Tensor batchLoss(CausalLM& model, const torch::Tensor& ids, const torch::Tensor& labels,
                        double normaliser, const TrainConfig& config,
                        const PackedRows* packed = nullptr);

}  // namespace tb
