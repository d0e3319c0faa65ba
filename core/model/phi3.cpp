// Phi-3 (model_type phi3: Phi-3-mini and -medium, Phi-3.5-mini, Phi-4-mini): the Llama layout with
// q, k, v as one linear layer (qkv_proj) and gate, up as one (gate_up_proj, gate first), a sliding
// window on every layer where sliding_window is set, rotary embeddings over the leading
// partial_rotary_factor of each head, and LongRoPE: per-pair frequency factors, the short set while
// a forward pass's positions stay within original_max_position_embeddings and the long set beyond,
// with cos and sin scaled by the attention factor.
#include "model/registry.h"
#include "model/rotary_tables.h"
#include "model/train_ops.h"

namespace tb {
namespace {

class Phi3AttentionImpl : public torch::nn::Module {
public:
    explicit Phi3AttentionImpl(const ModelConfig& c)
        : numHeads(c.numHeads), numKvHeads(c.numKvHeads), headDim(c.headDim),
          rotaryDim(c.rotatedDim())
    {
        qkv_proj = register_module(
            "qkv_proj",
            Linear(c.hiddenSize, (c.numHeads + 2 * c.numKvHeads) * c.headDim, c.qkvBias));
        o_proj = register_module("o_proj", Linear(c.numHeads * c.headDim, c.hiddenSize, c.oBias));
    }

    // x [batch, seq, heads, dim] -> [batch, heads, seq, dim] with the rotary embedding over the
    // leading rotaryDim of each head (the rest passes unchanged), laid out as [batch, seq, heads,
    // dim]: the attention keeps it, and its output then feeds o_proj without a copy.
    torch::Tensor rotate(const torch::Tensor& x, const BlockContext& ctx) const
    {
        if (rotaryDim == headDim)
            return applyRope(x.transpose(1, 2), ctx.cos, ctx.sin);
        const torch::Tensor rotated =
            applyRope(x.narrow(-1, 0, rotaryDim).transpose(1, 2), ctx.cos, ctx.sin);
        return torch::cat({rotated.transpose(1, 2), x.narrow(-1, rotaryDim, headDim - rotaryDim)},
                          -1)
            .transpose(1, 2);
    }

    torch::Tensor forward(const torch::Tensor& x, const BlockContext& ctx, KVCache* cache,
                          size_t layer, int64_t past)
    {
        const int64_t b = x.size(0), s = x.size(1);
        const int64_t qw = numHeads * headDim, kvw = numKvHeads * headDim;
        const torch::Tensor qkv = qkv_proj->forward(x);
        const auto q = rotate(qkv.narrow(-1, 0, qw).view({b, s, numHeads, headDim}), ctx);
        const auto k = rotate(qkv.narrow(-1, qw, kvw).view({b, s, numKvHeads, headDim}), ctx);
        // Its own tensor: the attention keeps v, which as a slice would keep all of q, k, v.
        auto v = qkv.narrow(-1, qw + kvw, kvw)
                     .contiguous()
                     .view({b, s, numKvHeads, headDim})
                     .transpose(1, 2);
        auto out = cachedAttention(q, k, v, cache, layer, past, ctx.mask, ctx.window);
        out = out.transpose(1, 2).reshape({b, s, qw});
        return o_proj->forward(out);
    }

    int64_t numHeads, numKvHeads, headDim, rotaryDim;
    Linear qkv_proj{nullptr}, o_proj{nullptr};
};
TORCH_MODULE(Phi3Attention);

class Phi3MlpImpl : public torch::nn::Module {
public:
    explicit Phi3MlpImpl(const ModelConfig& c) : inner(c.intermediateSize)
    {
        gate_up_proj = register_module("gate_up_proj", Linear(c.hiddenSize, 2 * inner, c.mlpBias));
        down_proj = register_module("down_proj", Linear(inner, c.hiddenSize, c.mlpBias));
    }
    torch::Tensor forward(const torch::Tensor& x)
    {
        const torch::Tensor gu = gate_up_proj->forward(x);  // each row's gate, then its up
        if (swigluPackedTakesTrainOp(gu))
            return down_proj->forward(trainSwigluPacked(gu));
        const torch::Tensor gate = gu.narrow(-1, 0, inner).contiguous();
        const torch::Tensor up = gu.narrow(-1, inner, inner).contiguous();
        return down_proj->forward(swigluTakesTrainOp(gate, up) ? trainSwiglu(gate, up)
                                                               : torch::silu(gate) * up);
    }
    int64_t inner;
    Linear gate_up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(Phi3Mlp);

class Phi3Block final : public BlockBase {
public:
    explicit Phi3Block(const ModelConfig& c)
    {
        self_attn = register_module("self_attn", Phi3Attention(c));
        mlp = register_module("mlp", Phi3Mlp(c));
        input_layernorm = register_module("input_layernorm", RMSNorm(c.hiddenSize, c.normEps));
        post_attention_layernorm =
            register_module("post_attention_layernorm", RMSNorm(c.hiddenSize, c.normEps));
    }
    torch::Tensor forward(const torch::Tensor& x, const BlockContext& ctx, KVCache* cache,
                          size_t layer, int64_t past) override
    {
        auto attn = self_attn->forward(input_layernorm->forward(x), ctx, cache, layer, past);
        auto h = x + afterAttention(attn);
        return h + afterMlp(mlp->forward(post_attention_layernorm->forward(h)));
    }
    Phi3Attention self_attn{nullptr};
    Phi3Mlp mlp{nullptr};
    RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};

class Phi3BodyImpl : public torch::nn::Module {
public:
    explicit Phi3BodyImpl(const ModelConfig& c)
    {
        embed_tokens = register_module("embed_tokens", makeEmbedding(c.vocabSize, c.hiddenSize));
        layers = register_module("layers", torch::nn::ModuleList());
        for (int64_t i = 0; i < c.numLayers; ++i) {
            blocks.push_back(std::make_shared<Phi3Block>(c));
            layers->push_back(blocks.back());
        }
        norm = register_module("norm", RMSNorm(c.hiddenSize, c.normEps));
    }
    torch::nn::Embedding embed_tokens{nullptr};
    torch::nn::ModuleList layers{nullptr};
    std::vector<std::shared_ptr<Phi3Block>> blocks;
    RMSNorm norm{nullptr};
};
TORCH_MODULE(Phi3Body);

// LongRoPE's inverse frequencies for one factor set, as transformers computes them:
// 1 / (factor_i * theta^(2i / rotary_dim)) in fp32.
torch::Tensor longRopeInvFreq(const ModelConfig& c, const std::vector<double>& factors)
{
    const int64_t dim = c.rotatedDim();
    const auto exponents =
        torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(dim);
    const auto powers = torch::pow(torch::tensor(c.ropeTheta, torch::kFloat32), exponents);
    const auto ext = torch::tensor(factors, torch::kFloat64).to(torch::kFloat32);
    return 1.0 / (ext * powers);
}

class Phi3ForCausalLM final : public CausalLM {
public:
    explicit Phi3ForCausalLM(const ModelConfig& c) : CausalLM(c)
    {
        model = register_module("model", Phi3Body(c));
        if (!c.tieWordEmbeddings)
            lm_head = register_module("lm_head", Linear(c.hiddenSize, c.vocabSize, false));
        const RopeScaling& s = c.ropeScaling;
        if (s.type == "longrope") {
            m_invFreq = longRopeInvFreq(c, s.shortFactor);
            m_invFreqLong = longRopeInvFreq(c, s.longFactor);
        } else {
            m_invFreq = ropeInvFreq(c);
        }
        m_blocks.assign(model->blocks.begin(), model->blocks.end());
    }

    torch::Tensor tokenEmbeddingWeight() override { return model->embed_tokens->weight; }

protected:
    torch::Tensor embedTokens(const torch::Tensor& ids) override
    {
        return model->embed_tokens->forward(ids);
    }

    // LongRoPE takes the long factors when the pass reaches past the original context (the
    // largest position + 1, as transformers decides per forward pass), and scales cos and sin in
    // fp32 before they take like's dtype.
    BlockContext blockContext(int64_t past, int64_t length, const torch::Tensor& like,
                              const torch::Tensor& positions) override
    {
        const RopeScaling& s = m_config.ropeScaling;
        if (s.type != "longrope") {
            if (m_invFreq.device() != like.device())
                m_invFreq = m_invFreq.to(like.device());
            return rotaryTables(m_invFreq, past, length, like, positions);
        }
        const int64_t reach =
            positions.defined() ? positions.max().item<int64_t>() + 1 : past + length;
        torch::Tensor& invFreq = reach > s.originalMaxPositions ? m_invFreqLong : m_invFreq;
        if (invFreq.device() != like.device())
            invFreq = invFreq.to(like.device());
        BlockContext ctx =
            rotaryTables(invFreq, past, length,
                         torch::empty({0}, like.options().dtype(torch::kFloat32)), positions);
        ctx.cos = (ctx.cos * s.attentionFactor).to(like.scalar_type());
        ctx.sin = (ctx.sin * s.attentionFactor).to(like.scalar_type());
        return ctx;
    }

    torch::Tensor finalNorm(const torch::Tensor& hidden) override
    {
        return model->norm->forward(hidden);
    }
    std::shared_ptr<LinearImpl> headLayer() override { return lm_head ? lm_head.ptr() : nullptr; }

public:
    Phi3Body model{nullptr};
    Linear lm_head{nullptr};

private:
    // [rotary_dim / 2] fp32, kept out of the parameters so dtype casts never touch them; LongRoPE:
    // the short factors' and the long factors'.
    torch::Tensor m_invFreq, m_invFreqLong;
};

}  // namespace

std::shared_ptr<CausalLM> makePhi3(const ModelConfig& config)
{
    return std::make_shared<Phi3ForCausalLM>(config);
}

}  // namespace tb
