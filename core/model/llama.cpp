// The Llama family: llama (2/3/3.x, TinyLlama, SmolLM2), mistral, qwen2 (q/k/v biases), qwen3 (q/k
// norms), smollm3 (layers without rotary embeddings).
#include "model/decode_block.h"
#include "model/registry.h"
#include "model/rotary_tables.h"
#include "model/stacked_linears.h"
#include "model/train_ops.h"

#include "util/error.h"

namespace tb {
namespace {

class LlamaAttentionImpl : public torch::nn::Module {
public:
    LlamaAttentionImpl(const ModelConfig& c, bool rotates_)
        : numHeads(c.numHeads), numKvHeads(c.numKvHeads), headDim(c.headDim), rotates(rotates_)
    {
        q_proj = register_module("q_proj", Linear(c.hiddenSize, c.numHeads * c.headDim, c.qkvBias));
        k_proj =
            register_module("k_proj", Linear(c.hiddenSize, c.numKvHeads * c.headDim, c.qkvBias));
        v_proj =
            register_module("v_proj", Linear(c.hiddenSize, c.numKvHeads * c.headDim, c.qkvBias));
        o_proj = register_module("o_proj", Linear(c.numHeads * c.headDim, c.hiddenSize, c.oBias));
        if (c.qkNorm) {
            q_norm = register_module("q_norm", RMSNorm(c.headDim, c.normEps));
            k_norm = register_module("k_norm", RMSNorm(c.headDim, c.normEps));
        }
    }

    // x: [batch, seq, hidden]; ctx: rotary tables and, for packed rows, the attention mask
    torch::Tensor forward(const torch::Tensor& x, const BlockContext& ctx, KVCache* cache,
                          size_t layer, int64_t past)
    {
        const int64_t b = x.size(0), s = x.size(1);
        torch::Tensor q, k, v;
        if (!cache && linearsStack(x, projections())) {  // one product (model/stacked_linears.h)
            const std::vector<torch::Tensor> qkv = stackedLinears(x, projections());
            q = qkv[0];
            k = qkv[1];
            // Its own tensor: the attention keeps v, which as a slice would keep all of q, k, v.
            v = qkv[2].contiguous();
        } else {
            q = q_proj->forward(x);
            k = k_proj->forward(x);
            v = v_proj->forward(x);
        }
        q = q.view({b, s, numHeads, headDim});
        k = k.view({b, s, numKvHeads, headDim});
        v = v.view({b, s, numKvHeads, headDim});
        if (q_norm) {
            q = q_norm->forward(q);
            k = k_norm->forward(k);
        }
        q = q.transpose(1, 2);
        k = k.transpose(1, 2);
        if (rotates) {
            q = applyRope(q, ctx.cos, ctx.sin);
            k = applyRope(k, ctx.cos, ctx.sin);
        }
        v = v.transpose(1, 2);
        auto out = cachedAttention(q, k, v, cache, layer, past, ctx.mask,
                                   ctx.window);  // [b, heads, s, hd]
        out = out.transpose(1, 2).reshape({b, s, numHeads * headDim});
        return o_proj->forward(out);
    }

    std::vector<LinearImpl*> projections() { return {q_proj.get(), k_proj.get(), v_proj.get()}; }

    int64_t numHeads, numKvHeads, headDim;
    bool rotates;  // false: a NoPE layer (SmolLM3's), positions only through the causal mask
    Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
    RMSNorm q_norm{nullptr}, k_norm{nullptr};
};
TORCH_MODULE(LlamaAttention);

class LlamaMlpImpl : public torch::nn::Module {
public:
    explicit LlamaMlpImpl(const ModelConfig& c)
    {
        gate_proj =
            register_module("gate_proj", Linear(c.hiddenSize, c.intermediateSize, c.mlpBias));
        up_proj = register_module("up_proj", Linear(c.hiddenSize, c.intermediateSize, c.mlpBias));
        down_proj =
            register_module("down_proj", Linear(c.intermediateSize, c.hiddenSize, c.mlpBias));
    }
    torch::Tensor forward(const torch::Tensor& x)
    {
        if (linearsStack(x, inputs())) {  // gate and up as one product (model/stacked_linears.h)
            if (!gate_proj->loraActive() && !up_proj->loraActive()) {
                const torch::Tensor gu = stackedProduct(x, inputs());
                if (swigluPackedTakesTrainOp(gu))
                    return down_proj->forward(trainSwigluPacked(gu));
            }
            const std::vector<torch::Tensor> gu = stackedLinears(x, inputs());
            const torch::Tensor gate = gu[0].contiguous(), up = gu[1].contiguous();
            return down_proj->forward(swigluTakesTrainOp(gate, up) ? trainSwiglu(gate, up)
                                                                   : torch::silu(gate) * up);
        }
        const torch::Tensor gate = gate_proj->forward(x), up = up_proj->forward(x);
        // More rows than a decoding step's: one pass each way (model/train_ops.h).
        return down_proj->forward(swigluTakesTrainOp(gate, up) ? trainSwiglu(gate, up)
                                                               : torch::silu(gate) * up);
    }
    std::vector<LinearImpl*> inputs() { return {gate_proj.get(), up_proj.get()}; }
    Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(LlamaMlp);

class LlamaBlock final : public BlockBase {
public:
    LlamaBlock(const ModelConfig& c, size_t layer)
    {
        self_attn = register_module("self_attn", LlamaAttention(c, c.layerRotates(layer)));
        mlp = register_module("mlp", LlamaMlp(c));
        input_layernorm = register_module("input_layernorm", RMSNorm(c.hiddenSize, c.normEps));
        post_attention_layernorm =
            register_module("post_attention_layernorm", RMSNorm(c.hiddenSize, c.normEps));
    }
    torch::Tensor forward(const torch::Tensor& x, const BlockContext& ctx, KVCache* cache,
                          size_t layer, int64_t past) override
    {
        if (cache) {  // a single sequence's decoding step in one pass (model/decode_block.h)
            const auto& a = *self_attn;
            const DecodeBlockParts parts{*input_layernorm,
                                         *post_attention_layernorm,
                                         *a.q_proj,
                                         *a.k_proj,
                                         *a.v_proj,
                                         *a.o_proj,
                                         *mlp->gate_proj,
                                         *mlp->up_proj,
                                         *mlp->down_proj,
                                         a.numHeads,
                                         a.numKvHeads,
                                         a.headDim,
                                         a.rotates && !a.q_norm &&
                                             ((!adapter_attn && !adapter_mlp) || adaptersOff)};
            if (decodeBlockTakes(parts, x, ctx, cache, layer))
                return decodeBlockStep(parts, x, ctx, *cache, layer, past);
        }
        auto attn = self_attn->forward(input_layernorm->forward(x), ctx, cache, layer, past);
        auto h = x + afterAttention(attn);
        return h + afterMlp(mlp->forward(post_attention_layernorm->forward(h)));
    }
    std::vector<std::vector<LinearImpl*>> stackedGroups() override
    {
        return {self_attn->projections(), mlp->inputs()};
    }
    LlamaAttention self_attn{nullptr};
    LlamaMlp mlp{nullptr};
    RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};

class LlamaBodyImpl : public torch::nn::Module {
public:
    explicit LlamaBodyImpl(const ModelConfig& c)
    {
        embed_tokens = register_module("embed_tokens", makeEmbedding(c.vocabSize, c.hiddenSize));
        layers = register_module("layers", torch::nn::ModuleList());
        for (int64_t i = 0; i < c.numLayers; ++i) {
            blocks.push_back(std::make_shared<LlamaBlock>(c, static_cast<size_t>(i)));
            layers->push_back(blocks.back());
        }
        norm = register_module("norm", RMSNorm(c.hiddenSize, c.normEps));
    }
    torch::nn::Embedding embed_tokens{nullptr};
    torch::nn::ModuleList layers{nullptr};
    std::vector<std::shared_ptr<LlamaBlock>> blocks;
    RMSNorm norm{nullptr};
};
TORCH_MODULE(LlamaBody);

class LlamaForCausalLM final : public CausalLM {
public:
    explicit LlamaForCausalLM(const ModelConfig& c) : CausalLM(c)
    {
        model = register_module("model", LlamaBody(c));
        if (!c.tieWordEmbeddings)
            lm_head = register_module("lm_head", Linear(c.hiddenSize, c.vocabSize, false));
        m_invFreq = ropeInvFreq(c);
        m_blocks.assign(model->blocks.begin(), model->blocks.end());
    }

    torch::Tensor tokenEmbeddingWeight() override { return model->embed_tokens->weight; }

protected:
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

    torch::Tensor finalNorm(const torch::Tensor& hidden) override
    {
        return model->norm->forward(hidden);
    }
    std::shared_ptr<LinearImpl> headLayer() override { return lm_head ? lm_head.ptr() : nullptr; }

public:
    LlamaBody model{nullptr};
    Linear lm_head{nullptr};

private:
    torch::Tensor
        m_invFreq;  // [head_dim / 2] fp32: kept out of the parameters so dtype casts never touch it
};

}  // namespace

std::shared_ptr<CausalLM> makeLlama(const ModelConfig& config)
{
    return std::make_shared<LlamaForCausalLM>(config);
}

}  // namespace tb
