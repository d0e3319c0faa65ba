// CausalLM: the LibTorch module every architecture implements, plus the pieces they share
// (linear, norms, rotary embeddings, cached attention). Internal to core: includes LibTorch.
#pragma once

#include "model/config.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace tb {

class Checkpoint;

// Per-layer key/value cache. k[l], v[l]: [batch, kv_heads, capacity, head_dim]; `length` positions used.
struct KVCache {
    std::vector<torch::Tensor> k;
    std::vector<torch::Tensor> v;
    int64_t length = 0;
    void clear()
    {
        k.clear();
        v.clear();
        length = 0;
    }
};

// y = x W^T + b, with W stored [out, in] as in nn.Linear (Hugging Face naming: weight, bias).
class LinearImpl : public torch::nn::Module {
public:
    LinearImpl(int64_t in, int64_t out, bool bias);
    torch::Tensor forward(const torch::Tensor& x);
    torch::Tensor weight;
    torch::Tensor bias;  // undefined when the layer has none
};
TORCH_MODULE(Linear);

class RMSNormImpl : public torch::nn::Module {
public:
    RMSNormImpl(int64_t dim, double eps);
    torch::Tensor forward(const torch::Tensor& x);  // normalises in fp32, scales in the input dtype
    torch::Tensor weight;
    double eps;
};
TORCH_MODULE(RMSNorm);

class LayerNormImpl : public torch::nn::Module {
public:
    LayerNormImpl(int64_t dim, double eps);
    torch::Tensor forward(const torch::Tensor& x);
    torch::Tensor weight;
    torch::Tensor bias;
    double eps;
};
TORCH_MODULE(LayerNorm);

class CausalLM : public torch::nn::Module {
public:
    explicit CausalLM(ModelConfig config) : m_config(std::move(config)) {}
    ~CausalLM() override = default;

    // ids: [batch, seq] int64. cache: appended to when given (positions continue from cache->length).
    // Returns logits [batch, seq, vocab] in the model dtype.
    virtual torch::Tensor forward(const torch::Tensor& ids, KVCache* cache) = 0;

    const ModelConfig& config() const { return m_config; }

    // Copies every parameter from the checkpoint (converted to dtype, moved to device). Throws tb::Error
    // naming the file and tensor when one is missing or its shape differs.
    void loadWeights(const Checkpoint& checkpoint, torch::Dtype dtype, const torch::Device& device);
    // Fills parameters with N(0, 0.02) (norm weights 1, biases 0) for random models and benchmarks.
    void initRandom(uint64_t seed, torch::Dtype dtype, const torch::Device& device);

protected:
    // Checkpoint names tried for one of our parameter names (first found wins).
    virtual std::vector<std::string> checkpointNames(const std::string& name) const { return {name}; }
    ModelConfig m_config;
};

// An embedding table [num, dim] whose weight is allocated but not initialised (loading fills it).
torch::nn::Embedding makeEmbedding(int64_t num, int64_t dim);

// Rotary embedding tables. invFreq: [head_dim / 2] fp32, with llama3/linear scaling applied.
torch::Tensor ropeInvFreq(const ModelConfig& config);
// x: [batch, heads, seq, head_dim]; cos/sin: [seq, head_dim] (rotate-half convention).
torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// Appends k/v ([batch, kv_heads, seq, head_dim]) to the cache of `layer` and runs causal
// scaled-dot-product attention for q ([batch, heads, seq, head_dim]) over all cached positions.
// pastLength is the cache length before this call. Returns [batch, heads, seq, head_dim].
torch::Tensor cachedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              KVCache* cache, size_t layer, int64_t pastLength);

} // namespace tb
