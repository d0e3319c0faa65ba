// Trainable token rows of CausalLM (PEFT's trainable tokens): a [k, hidden] delta on k rows of the
// token embedding and of the head, applied in the lookup and after the head's matmul, never by
// copying the [vocab, hidden] weight.
#include "model/causal_lm.h"
#include "model/embedding_scale.h"

#include "util/error.h"

namespace tb {

void CausalLM::setTrainableTokens(const std::vector<int64_t>& ids, bool untiedHead)
{
    if (m_tokenIds.defined())
        fail("trainable tokens are already set on this model");
    if (ids.empty())
        return;
    const torch::Tensor embedding = tokenEmbeddingWeight();
    const int64_t vocab = embedding.size(0), k = static_cast<int64_t>(ids.size());
    const auto device = embedding.device();
    auto longs = torch::TensorOptions().dtype(torch::kInt64);
    m_tokenIds = torch::tensor(ids, longs).to(device);
    if (m_tokenIds.min().item<int64_t>() < 0 || m_tokenIds.max().item<int64_t>() >= vocab ||
        std::get<0>(torch::_unique(m_tokenIds)).numel() != k)
        fail("trainable token ids must be distinct and in [0, ", vocab, ")");
    // slot[id]: the delta row of a trained id, k (a zero row) for every other one.
    m_tokenSlot = torch::full({vocab}, k, longs.device(device));
    m_tokenSlot.index_put_({m_tokenIds}, torch::arange(k, longs.device(device)));
    auto zeros = [&] {
        return torch::zeros({k, embedding.size(1)},
                            torch::TensorOptions().dtype(torch::kFloat32).device(device));
    };
    m_tokenDelta = register_parameter("trainable_tokens_delta", zeros());
    if (untiedHead && headLayer())
        m_headTokenDelta = register_parameter("lm_head_trainable_tokens_delta", zeros());
}

torch::Tensor CausalLM::headTokenDelta() const
{
    return m_headTokenDelta.defined() ? m_headTokenDelta : m_tokenDelta;
}

torch::Tensor CausalLM::embedWithTokenRows(const torch::Tensor& ids)
{
    auto h = embedTokens(ids);  // [batch, seq, hidden]
    if (m_tokenIds.defined() && !m_methodOff) {
        // The delta with one zero row appended, looked up by slot: tokens outside the set add
        // zeros.
        auto padded = torch::cat({m_tokenDelta,
                                  torch::zeros({1, m_tokenDelta.size(1)}, m_tokenDelta.options())})
                          .to(h.scalar_type());
        h = h + torch::embedding(padded, m_tokenSlot.index({ids}));
    }
    // The rows scaled with the embeddings they are added to (Gemma 3), as PEFT scales them.
    return scaledEmbeddings(h, m_config.embeddingScale);
}

torch::Tensor CausalLM::headLogits(const torch::Tensor& h, bool decode)
{
    torch::Tensor logits;
    if (auto head = headLayer())
        logits = head->forward(h);
    else if (decode)
        logits = linearForward(h, tokenEmbeddingWeight());
    else
        logits = torch::nn::functional::linear(h, tokenEmbeddingWeight());
    if (!m_tokenIds.defined() || m_methodOff)
        return logits;
    // The rows' logits h D^T [..., k] added into their k columns in place: W stays as it is, and
    // autograd needs neither the logits (the matmul does not save its output) nor a copy of them.
    const auto delta = torch::nn::functional::linear(h, headTokenDelta().to(h.scalar_type()));
    return logits.index_add_(-1, m_tokenIds, delta.to(logits.scalar_type()));
}

void CausalLM::mergeTrainableTokens()
{
    if (!m_tokenIds.defined())
        return;
    torch::NoGradGuard noGrad;
    auto embedding = tokenEmbeddingWeight();
    embedding.index_add_(0, m_tokenIds, m_tokenDelta.to(embedding.scalar_type()));
    if (m_headTokenDelta.defined()) {
        auto head = headLayer()->weight;
        head.index_add_(0, m_tokenIds, m_headTokenDelta.to(head.scalar_type()));
    }
    m_tokenIds = torch::Tensor();
    m_tokenSlot = torch::Tensor();
}

}  // namespace tb
