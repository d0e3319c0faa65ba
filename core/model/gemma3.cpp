// Gemma 3 text models (model_type gemma3_text: Gemma 3 270M, 1B): the Llama layout with an RMSNorm
// that scales by (1 + weight) in fp32, four norms per block (before and after attention and the
// MLP), q/k norms, GELU-tanh gating, token embeddings scaled by sqrt(hidden), and sliding layers
// with a rotary base of their own.
#include "model/registry.h"
#include "model/rotary_tables.h"
#include "model/stacked_linears.h"

#include <cmath>

namespace tb {
namespace {

// Gemma's RMSNorm: x / rms(x) * (1 + weight), all in fp32, cast back to x's dtype at the end
// (Llama casts before scaling). The weight is stored as the offset from 1 (zeros at start).
class GemmaRMSNormImpl : public torch::nn::Module {
public:
    GemmaRMSNormImpl(int64_t dim, double epsilon) : eps(epsilon)
    {
        weight = register_parameter("weight", torch::zeros({dim}));
    }
    torch::Tensor forward(const torch::Tensor& x)
    {
        auto xf = x.to(torch::kFloat32);
        xf = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
        return (xf * (1.0 + weight.to(torch::kFloat32))).to(x.scalar_type());
    }
    torch::Tensor weight;
    double eps;
};
TORCH_MODULE(GemmaRMSNorm);

class Gemma3AttentionImpl : public torch::nn::Module {
public:
    explicit Gemma3AttentionImpl(const ModelConfig& c)
        : numHeads(c.numHeads), numKvHeads(c.numKvHeads), headDim(c.headDim)
    {
        q_proj = register_module("q_proj", Linear(c.hiddenSize, c.numHeads * c.headDim, c.qkvBias));
        k_proj =
            register_module("k_proj", Linear(c.hiddenSize, c.numKvHeads * c.headDim, c.qkvBias));
        v_proj =
            register_module("v_proj", Linear(c.hiddenSize, c.numKvHeads * c.headDim, c.qkvBias));
        o_proj = register_module("o_proj", Linear(c.numHeads * c.headDim, c.hiddenSize, c.oBias));
        q_norm = register_module("q_norm", GemmaRMSNorm(c.headDim, c.normEps));
        k_norm = register_module("k_norm", GemmaRMSNorm(c.headDim, c.normEps));
        // Attention scales scores by 1/sqrt(head_dim); query_pre_attn_scalar may ask for another
        // scale, which goes into q.
        const double plain = 1.0 / std::sqrt(static_cast<double>(c.headDim));
        if (c.attentionScale > 0 && std::abs(c.attentionScale - plain) > 1e-12 * plain)
            queryFactor = c.attentionScale / plain;
    }

    // x: [batch, seq, hidden]; ctx: this layer's rotary tables (a sliding layer's own) and mask
    torch::Tensor forward(const torch::Tensor& x, const BlockContext& ctx, KVCache* cache,
                          size_t layer, int64_t past)
    {
        const int64_t b = x.size(0), s = x.size(1);
        torch::Tensor q, k, v;
        if (!cache && linearsStack(x, projections())) {  // one product (model/stacked_linears.h)
            const std::vector<torch::Tensor> qkv = stackedLinears(x, projections());
            q = qkv[0];
            k = qkv[1];
            v = qkv[2].contiguous();  // its own tensor: the attention keeps v
        } else {
            q = q_proj->forward(x);
            k = k_proj->forward(x);
            v = v_proj->forward(x);
        }
        q = q_norm->forward(q.view({b, s, numHeads, headDim}));
        k = k_norm->forward(k.view({b, s, numKvHeads, headDim}));
        v = v.view({b, s, numKvHeads, headDim}).transpose(1, 2);
        q = applyRope(q.transpose(1, 2), ctx.cos, ctx.sin);
        k = applyRope(k.transpose(1, 2), ctx.cos, ctx.sin);
        if (queryFactor != 1.0)
            q = q * queryFactor;
        auto out = cachedAttention(q, k, v, cache, layer, past, ctx.mask,
                                   ctx.window);  // [b, heads, s, hd]
        out = out.transpose(1, 2).reshape({b, s, numHeads * headDim});
        return o_proj->forward(out);
    }

    std::vector<LinearImpl*> projections() { return {q_proj.get(), k_proj.get(), v_proj.get()}; }

    int64_t numHeads, numKvHeads, headDim;
    double queryFactor = 1.0;
    Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
    GemmaRMSNorm q_norm{nullptr}, k_norm{nullptr};
};
TORCH_MODULE(Gemma3Attention);

class Gemma3MlpImpl : public torch::nn::Module {
public:
    explicit Gemma3MlpImpl(const ModelConfig& c)
    {
        gate_proj = register_module("gate_proj", Linear(c.hiddenSize, c.intermediateSize, false));
        up_proj = register_module("up_proj", Linear(c.hiddenSize, c.intermediateSize, false));
        down_proj = register_module("down_proj", Linear(c.intermediateSize, c.hiddenSize, false));
    }
    torch::Tensor forward(const torch::Tensor& x)
    {
        torch::Tensor gate, up;
        if (linearsStack(x, inputs())) {  // gate and up as one product (model/stacked_linears.h)
            const std::vector<torch::Tensor> gu = stackedLinears(x, inputs());
            gate = gu[0];
            up = gu[1];
        } else {
            gate = gate_proj->forward(x);
            up = up_proj->forward(x);
        }
        return down_proj->forward(torch::gelu(gate, "tanh") * up);
    }
    std::vector<LinearImpl*> inputs() { return {gate_proj.get(), up_proj.get()}; }
    Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(Gemma3Mlp);

class Gemma3Block final : public BlockBase {
public:
    explicit Gemma3Block(const ModelConfig& c)
    {
        self_attn = register_module("self_attn", Gemma3Attention(c));
        mlp = register_module("mlp", Gemma3Mlp(c));
        const auto norm = [&c] { return GemmaRMSNorm(c.hiddenSize, c.normEps); };
        input_layernorm = register_module("input_layernorm", norm());
        post_attention_layernorm = register_module("post_attention_layernorm", norm());
        pre_feedforward_layernorm = register_module("pre_feedforward_layernorm", norm());
        post_feedforward_layernorm = register_module("post_feedforward_layernorm", norm());
    }
    torch::Tensor forward(const torch::Tensor& x, const BlockContext& ctx, KVCache* cache,
                          size_t layer, int64_t past) override
    {
        auto attn = self_attn->forward(input_layernorm->forward(x), ctx, cache, layer, past);
        auto h = x + afterAttention(post_attention_layernorm->forward(attn));
        auto m = mlp->forward(pre_feedforward_layernorm->forward(h));
        return h + afterMlp(post_feedforward_layernorm->forward(m));
    }
    std::vector<std::vector<LinearImpl*>> stackedGroups() override
    {
        return {self_attn->projections(), mlp->inputs()};
    }
    Gemma3Attention self_attn{nullptr};
    Gemma3Mlp mlp{nullptr};
    GemmaRMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr},
        pre_feedforward_layernorm{nullptr}, post_feedforward_layernorm{nullptr};
};

class Gemma3BodyImpl : public torch::nn::Module {
public:
    explicit Gemma3BodyImpl(const ModelConfig& c)
    {
        embed_tokens = register_module("embed_tokens", makeEmbedding(c.vocabSize, c.hiddenSize));
        layers = register_module("layers", torch::nn::ModuleList());
        for (int64_t i = 0; i < c.numLayers; ++i) {
            blocks.push_back(std::make_shared<Gemma3Block>(c));
            layers->push_back(blocks.back());
        }
        norm = register_module("norm", GemmaRMSNorm(c.hiddenSize, c.normEps));
    }
    torch::nn::Embedding embed_tokens{nullptr};
    torch::nn::ModuleList layers{nullptr};
    std::vector<std::shared_ptr<Gemma3Block>> blocks;
    GemmaRMSNorm norm{nullptr};
};
TORCH_MODULE(Gemma3Body);

class Gemma3ForCausalLM final : public CausalLM {
public:
    explicit Gemma3ForCausalLM(const ModelConfig& c) : CausalLM(c)
    {
        model = register_module("model", Gemma3Body(c));
        if (!c.tieWordEmbeddings)
            lm_head = register_module("lm_head", Linear(c.hiddenSize, c.vocabSize, false));
        m_invFreq = ropeInvFreq(c);
        m_invFreqSliding =
            ropeInvFreq(c, c.ropeThetaSliding > 0 ? c.ropeThetaSliding : c.ropeTheta);
        m_blocks.assign(model->blocks.begin(), model->blocks.end());
    }

    torch::Tensor tokenEmbeddingWeight() override { return model->embed_tokens->weight; }

protected:
    // Unscaled: CausalLM applies ModelConfig::embeddingScale after the trainable token rows.
    torch::Tensor embedTokens(const torch::Tensor& ids) override
    {
        return model->embed_tokens->forward(ids);
    }

    BlockContext blockContext(int64_t past, int64_t length, const torch::Tensor& like,
                              const torch::Tensor& positions) override
    {
        if (m_invFreq.device() != like.device())
            m_invFreq = m_invFreq.to(like.device());
        return rotaryTables(m_invFreq, past, length, like, positions);
    }

    void slidingLayerTables(BlockContext& ctx, int64_t past, int64_t length,
                            const torch::Tensor& like, const torch::Tensor& positions) override
    {
        if (m_invFreqSliding.device() != like.device())
            m_invFreqSliding = m_invFreqSliding.to(like.device());
        const BlockContext local = rotaryTables(m_invFreqSliding, past, length, like, positions);
        ctx.cos = local.cos;
        ctx.sin = local.sin;
    }

    torch::Tensor finalNorm(const torch::Tensor& hidden) override
    {
        return model->norm->forward(hidden);
    }
    std::shared_ptr<LinearImpl> headLayer() override { return lm_head ? lm_head.ptr() : nullptr; }

public:
    Gemma3Body model{nullptr};
    Linear lm_head{nullptr};

private:
    // [head_dim / 2] fp32, kept out of the parameters so dtype casts never touch them: the full
    // layers' (rope_theta, scaled) and the sliding layers' (rope_local_base_freq).
    torch::Tensor m_invFreq, m_invFreqSliding;
};

}  // namespace

std::shared_ptr<CausalLM> makeGemma3(const ModelConfig& config)
{
    return std::make_shared<Gemma3ForCausalLM>(config);
}

}  // namespace tb
