// Token cross-entropy of a causal LM, through the full logits or the chunked head, and batches as
// the tensors it reads.
#include "train/losses.h"

#include <ATen/autocast_mode.h>

namespace tb {

BatchTensors toTensors(const TokenBatch& b, const torch::Device& device)
{
    auto tensor = [&](const std::vector<int64_t>& values) {
        return torch::tensor(values, torch::kInt64).view({b.rows, b.width}).to(device);
    };
    BatchTensors t{tensor(b.ids), tensor(b.labels), std::nullopt};
    if (!b.segments.empty())
        t.packed = PackedRows{tensor(b.positions), tensor(b.segments)};
    return t;
}

torch::Tensor tokenLoss(const torch::Tensor& logits, const torch::Tensor& labels, double normaliser)
{
    auto flat = logits.reshape({-1, logits.size(-1)}).to(torch::kFloat32);
    auto loss = torch::nn::functional::cross_entropy(
        flat, labels.reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100).reduction(torch::kSum));
    return loss / normaliser;
}

torch::Tensor batchLoss(CausalLM& model, const torch::Tensor& ids, const torch::Tensor& labels,
                        double normaliser, const TrainConfig& config, const PackedRows* packed)
{
    const bool chunked = config.loss == LossKind::Chunked;
    const bool fused = !chunked && torch::GradMode::is_enabled() && model.headIsPlain();
    if (!chunked && !fused)
        return tokenLoss(model.forward(ids, nullptr, packed), labels, normaliser);
    // The head is applied inside the loss, chunk by chunk: [tokens, vocab] logits never exist at
    // once (chunked: recomputed in backward for the least memory; fused: training's gradients
    // formed in forward, for speed).
    auto hidden = model.forwardHidden(ids, packed);  // [batch, seq, hidden]
    HeadRows rows;  // trainable token rows of the head, added per chunk
    if (model.trainableTokenIds().defined() && model.methodEnabled())
        rows = {model.trainableTokenIds(), model.headTokenDelta()};
    const auto flat = hidden.reshape({-1, hidden.size(-1)});
    if (fused) {
        // Under autocast the head's products run in its dtype: a tied head's copy in it, if held.
        const at::DeviceType type = flat.device().type();
        const torch::Tensor weight =
            at::autocast::is_autocast_enabled(type)
                ? model.headWeightIn(at::autocast::get_autocast_dtype(type))
                : model.headWeight();
        return fusedHeadCrossEntropy(flat, weight, labels.reshape({-1}), 1.0 / normaliser, 0, rows);
    }
    return chunkedCrossEntropy(flat, model.headWeight(), labels.reshape({-1}),
                               config.lossChunkTokens, rows) /
           normaliser;
}

}  // namespace tb
