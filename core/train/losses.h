// The losses of training, over a causal LM's outputs: mean token cross-entropy through the full
// logits, and the same through the chunked head (train/chunked_loss.h: logits never materialised),
// chosen by the run's `loss`. Internal to core (LibTorch types).
#pragma once

#include "model/causal_lm.h"
#include "train/chunked_loss.h"
#include "train/train_config.h"

namespace tb {

// Loss per loss-carrying token: logits [batch, seq, vocab], labels [batch, seq] (-100 = no loss),
// the summed cross-entropy divided by `normaliser` (the loss tokens of the whole optimizer step).
torch::Tensor tokenLoss(const torch::Tensor& logits, const torch::Tensor& labels,
                        double normaliser);

// The summed token loss of one batch over `normaliser`: ids and labels [batch, seq] int64, through
// the full logits (loss: full) or the chunked head (loss: chunked, loss_chunk_tokens per chunk).
torch::Tensor batchLoss(CausalLM& model, const torch::Tensor& ids, const torch::Tensor& labels,
                        double normaliser, const TrainConfig& config);

}  // namespace tb
