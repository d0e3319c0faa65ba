// Token cross-entropy of a causal LM, through the full logits or the chunked head.
#include "train/losses.h"

namespace tb {

torch::Tensor tokenLoss(const torch::Tensor& logits, const torch::Tensor& labels, double normaliser)
{
    auto flat = logits.reshape({-1, logits.size(-1)}).to(torch::kFloat32);
    auto loss = torch::nn::functional::cross_entropy(
        flat, labels.reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100).reduction(torch::kSum));
    return loss / normaliser;
}

torch::Tensor batchLoss(CausalLM& model, const torch::Tensor& ids, const torch::Tensor& labels,
                        double normaliser, const TrainConfig& config)
{
    if (config.loss != LossKind::Chunked)
        return tokenLoss(model.forward(ids, nullptr), labels, normaliser);
    // The head is applied chunk by chunk inside the loss: [tokens, vocab] logits never exist at
    // once.
    auto hidden = model.forwardHidden(ids);  // [batch, seq, hidden]
    HeadRows rows;                           // trainable token rows of the head, added per chunk
    if (model.trainableTokenIds().defined())
        rows = {model.trainableTokenIds(), model.headTokenDelta()};
    return chunkedCrossEntropy(hidden.reshape({-1, hidden.size(-1)}), model.headWeight(),
                               labels.reshape({-1}), config.lossChunkTokens, rows) /
           normaliser;
}

}  // namespace tb
