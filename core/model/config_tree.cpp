// Checkpoint tensor names and shapes from a config: GPT-2's Conv1D blocks and the llama family's
// Linear blocks, each tensor as transformers names it.
#include "model/config_tree.h"

#include <string>

namespace tb {

int64_t ConfigTensor::numel() const
{
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    return n;
}

namespace {

// GPT-2: wte, wpe, blocks of ln_1, attn (c_attn, c_proj), ln_2, mlp (c_fc, c_proj), ln_f. Conv1D
// stores its weight [in, out].
void gpt2Tensors(const ModelConfig& c, std::vector<ConfigTensor>& out)
{
    const int64_t h = c.hiddenSize, inner = c.intermediateSize;
    out.push_back({"transformer.wte.weight", {c.vocabSize, h}});
    out.push_back({"transformer.wpe.weight", {c.maxPositions, h}});
    for (int64_t i = 0; i < c.numLayers; ++i) {
        const std::string b = "transformer.h." + std::to_string(i) + ".";
        out.push_back({b + "ln_1.weight", {h}});
        out.push_back({b + "ln_1.bias", {h}});
        out.push_back({b + "attn.c_attn.weight", {h, 3 * h}});
        out.push_back({b + "attn.c_attn.bias", {3 * h}});
        out.push_back({b + "attn.c_proj.weight", {h, h}});
        out.push_back({b + "attn.c_proj.bias", {h}});
        out.push_back({b + "ln_2.weight", {h}});
        out.push_back({b + "ln_2.bias", {h}});
        out.push_back({b + "mlp.c_fc.weight", {h, inner}});
        out.push_back({b + "mlp.c_fc.bias", {inner}});
        out.push_back({b + "mlp.c_proj.weight", {inner, h}});
        out.push_back({b + "mlp.c_proj.bias", {h}});
    }
    out.push_back({"transformer.ln_f.weight", {h}});
    out.push_back({"transformer.ln_f.bias", {h}});
    if (!c.tieWordEmbeddings)
        out.push_back({"lm_head.weight", {c.vocabSize, h}});
}

// A Linear layer: weight [out, in] and, with a bias, bias [out].
void linear(std::vector<ConfigTensor>& out, const std::string& name, int64_t in, int64_t outDim,
            bool bias)
{
    out.push_back({name + ".weight", {outDim, in}});
    if (bias)
        out.push_back({name + ".bias", {outDim}});
}

// Llama, Mistral, Qwen2, Qwen3, Gemma 3: embed_tokens, blocks of self_attn (q, k, v, o; Qwen3's
// and Gemma 3's q_norm and k_norm over one head), mlp (gate, up, down) and two RMSNorms (Gemma 3:
// four), the final norm, the head.
void llamaTensors(const ModelConfig& c, std::vector<ConfigTensor>& out)
{
    const int64_t h = c.hiddenSize, inner = c.intermediateSize;
    const int64_t q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
    out.push_back({"model.embed_tokens.weight", {c.vocabSize, h}});
    for (int64_t i = 0; i < c.numLayers; ++i) {
        const std::string b = "model.layers." + std::to_string(i) + ".";
        if (c.fusedProjections()) {  // Phi-3
            linear(out, b + "self_attn.qkv_proj", h, q + 2 * kv, c.qkvBias);
        } else {
            linear(out, b + "self_attn.q_proj", h, q, c.qkvBias);
            linear(out, b + "self_attn.k_proj", h, kv, c.qkvBias);
            linear(out, b + "self_attn.v_proj", h, kv, c.qkvBias);
        }
        linear(out, b + "self_attn.o_proj", q, h, c.oBias);
        if (c.qkNorm) {
            out.push_back({b + "self_attn.q_norm.weight", {c.headDim}});
            out.push_back({b + "self_attn.k_norm.weight", {c.headDim}});
        }
        if (c.fusedProjections()) {
            linear(out, b + "mlp.gate_up_proj", h, 2 * inner, c.mlpBias);
        } else {
            linear(out, b + "mlp.gate_proj", h, inner, c.mlpBias);
            linear(out, b + "mlp.up_proj", h, inner, c.mlpBias);
        }
        linear(out, b + "mlp.down_proj", inner, h, c.mlpBias);
        out.push_back({b + "input_layernorm.weight", {h}});
        out.push_back({b + "post_attention_layernorm.weight", {h}});
        if (c.architecture == Architecture::Gemma3) {
            out.push_back({b + "pre_feedforward_layernorm.weight", {h}});
            out.push_back({b + "post_feedforward_layernorm.weight", {h}});
        }
    }
    out.push_back({"model.norm.weight", {h}});
    if (!c.tieWordEmbeddings)
        out.push_back({"lm_head.weight", {c.vocabSize, h}});
}

}  // namespace

std::vector<ConfigTensor> configTensors(const ModelConfig& config)
{
    std::vector<ConfigTensor> out;
    if (config.architecture == Architecture::Gpt2)
        gpt2Tensors(config, out);
    else
        llamaTensors(config, out);
    return out;
}

}  // namespace tb
