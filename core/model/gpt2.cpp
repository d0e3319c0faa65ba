// GPT-2: learned positions, LayerNorm, gelu_new, Conv1D weights stored [in, out], tied head.
#include "model/registry.h"

#include "util/error.h"

namespace tb {
namespace {

// Hugging Face's Conv1D: y = x W + b with W stored [in, out], the transpose of nn.Linear.
Linear conv1d(int64_t in, int64_t out)
{
    return Linear(in, out, /*bias=*/true, /*transposed=*/true);
}

class Gpt2AttentionImpl : public torch::nn::Module {
public:
    explicit Gpt2AttentionImpl(const ModelConfig& c) : numHeads(c.numHeads), headDim(c.headDim)
    {
        c_attn = register_module("c_attn", conv1d(c.hiddenSize, 3 * c.hiddenSize));
        c_proj = register_module("c_proj", conv1d(c.hiddenSize, c.hiddenSize));
    }
    torch::Tensor forward(const torch::Tensor& x, KVCache* cache, size_t layer, int64_t past,
                          const torch::Tensor& mask)
    {
        const int64_t b = x.size(0), s = x.size(1), h = x.size(2);
        auto qkv = c_attn->forward(x).split(h, -1);  // 3 x [b, s, hidden]
        auto heads = [&](const torch::Tensor& t) {
            return t.view({b, s, numHeads, headDim}).transpose(1, 2);
        };
        auto out =
            cachedAttention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), cache, layer, past, mask);
        return c_proj->forward(out.transpose(1, 2).reshape({b, s, h}));
    }
    int64_t numHeads, headDim;
    Linear c_attn{nullptr}, c_proj{nullptr};
};
TORCH_MODULE(Gpt2Attention);

class Gpt2MlpImpl : public torch::nn::Module {
public:
    explicit Gpt2MlpImpl(const ModelConfig& c) : act(c.hiddenAct)
    {
        c_fc = register_module("c_fc", conv1d(c.hiddenSize, c.intermediateSize));
        c_proj = register_module("c_proj", conv1d(c.intermediateSize, c.hiddenSize));
    }
    torch::Tensor forward(const torch::Tensor& x)
    {
        return c_proj->forward(activate(act, c_fc->forward(x)));
    }
    std::string act;
    Linear c_fc{nullptr}, c_proj{nullptr};
};
TORCH_MODULE(Gpt2Mlp);

class Gpt2Block final : public BlockBase {
public:
    explicit Gpt2Block(const ModelConfig& c)
    {
        ln_1 = register_module("ln_1", LayerNorm(c.hiddenSize, c.normEps));
        attn = register_module("attn", Gpt2Attention(c));
        ln_2 = register_module("ln_2", LayerNorm(c.hiddenSize, c.normEps));
        mlp = register_module("mlp", Gpt2Mlp(c));
    }
    torch::Tensor forward(const torch::Tensor& x, const BlockContext& ctx, KVCache* cache,
                          size_t layer, int64_t past) override
    {
        auto h = x + afterAttention(attn->forward(ln_1->forward(x), cache, layer, past, ctx.mask));
        return h + afterMlp(mlp->forward(ln_2->forward(h)));
    }
    LayerNorm ln_1{nullptr}, ln_2{nullptr};
    Gpt2Attention attn{nullptr};
    Gpt2Mlp mlp{nullptr};
};

class Gpt2BodyImpl : public torch::nn::Module {
public:
    explicit Gpt2BodyImpl(const ModelConfig& c)
    {
        wte = register_module("wte", makeEmbedding(c.vocabSize, c.hiddenSize));
        wpe = register_module("wpe", makeEmbedding(c.maxPositions, c.hiddenSize));
        h = register_module("h", torch::nn::ModuleList());
        for (int64_t i = 0; i < c.numLayers; ++i) {
            blocks.push_back(std::make_shared<Gpt2Block>(c));
            h->push_back(blocks.back());
        }
        ln_f = register_module("ln_f", LayerNorm(c.hiddenSize, c.normEps));
    }
    torch::nn::Embedding wte{nullptr}, wpe{nullptr};
    torch::nn::ModuleList h{nullptr};
    std::vector<std::shared_ptr<Gpt2Block>> blocks;
    LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Gpt2Body);

class Gpt2LMHeadModel final : public CausalLM {
public:
    explicit Gpt2LMHeadModel(const ModelConfig& c) : CausalLM(c)
    {
        transformer = register_module("transformer", Gpt2Body(c));
        if (!c.tieWordEmbeddings)
            lm_head = register_module("lm_head", Linear(c.hiddenSize, c.vocabSize, false));
        m_blocks.assign(transformer->blocks.begin(), transformer->blocks.end());
    }

    torch::Tensor tokenEmbeddingWeight() override { return transformer->wte->weight; }

protected:
    torch::Tensor embedTokens(const torch::Tensor& ids) override
    {
        return transformer->wte->forward(ids);
    }

    torch::Tensor addPositions(const torch::Tensor& h, int64_t past,
                               const torch::Tensor& positions) override
    {
        const int64_t s = h.size(1);
        if (positions.defined()) {  // packed rows: each example counts from 0
            if (s > m_config.maxPositions) {
                const int64_t last = positions.max().item<int64_t>();
                if (last >= m_config.maxPositions)
                    fail("gpt2: an example of ", last + 1, " tokens exceeds n_positions (",
                         m_config.maxPositions, ")");
            }
            return h + transformer->wpe->forward(positions);  // [batch, seq, hidden]
        }
        if (past + s > m_config.maxPositions)
            fail("gpt2: sequence of ", past + s, " tokens exceeds n_positions (",
                 m_config.maxPositions, ")");
        auto steps = torch::arange(past, past + s,
                                   torch::TensorOptions().dtype(torch::kInt64).device(h.device()));
        return h + transformer->wpe->forward(steps);
    }

    torch::Tensor finalNorm(const torch::Tensor& hidden) override
    {
        return transformer->ln_f->forward(hidden);
    }
    std::shared_ptr<LinearImpl> headLayer() override { return lm_head ? lm_head.ptr() : nullptr; }

public:
    Gpt2Body transformer{nullptr};
    Linear lm_head{nullptr};

protected:
    // The original GPT-2 checkpoints store the body without the "transformer." prefix.
    std::vector<std::string> checkpointNames(const std::string& name) const override
    {
        const std::string prefix = "transformer.";
        if (name.rfind(prefix, 0) == 0)
            return {name, name.substr(prefix.size())};
        return {name};
    }
};

}  // namespace

std::shared_ptr<CausalLM> makeGpt2(const ModelConfig& config)
{
    return std::make_shared<Gpt2LMHeadModel>(config);
}

}  // namespace tb
