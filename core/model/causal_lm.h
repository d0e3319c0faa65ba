// CausalLM: the LibTorch module every architecture implements, plus the pieces they share (linear
// layers with optional LoRA, norms, bottleneck adapters, rotary embeddings, cached attention, block
// checkpointing, soft prompts). Internal to core: includes LibTorch.
#pragma once

#include "model/attention_width.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "quant/quantize.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace tb {

// Sets LibTorch's autocast state (thread-local) for one device type during the guard's lifetime and
// restores the previous state afterwards.
class AutocastGuard {
public:
    AutocastGuard(at::DeviceType type, bool enabled, at::ScalarType dtype);
    ~AutocastGuard();
    AutocastGuard(const AutocastGuard&) = delete;
    AutocastGuard& operator=(const AutocastGuard&) = delete;

private:
    at::DeviceType m_type;
    bool m_enabled;
    bool m_prevEnabled;
    at::ScalarType m_prevDtype;
};

// A view (no copy) of one tensor's mapped bytes in a safetensors file; F32, F16 and BF16 only.
torch::Tensor tensorView(const SafetensorsFile& file, const TensorInfo& info);

// Per-layer key/value cache. k[l], v[l]: [batch, kv_heads, capacity, head_dim]; `length` positions
// used.
struct KVCache {
    std::vector<torch::Tensor> k;
    std::vector<torch::Tensor> v;
    int64_t length = 0;
    // Rows of different lengths decoded together (left padding): [batch, length] bool, true where
    // a cached position holds a real token of its row; undefined when every position does.
    torch::Tensor valid;
    void clear()
    {
        k.clear();
        v.clear();
        valid = torch::Tensor();
        length = 0;
    }
    // Keeps the rows `rows` ([n] int64, on the cache's device) in that order, and drops leading
    // positions that are padding in every row kept (a batch whose finished rows leave it).
    void keepRows(const torch::Tensor& rows);
};

// y = x W^T + b, as torch's linear. Up to kFewRowsMax rows of x on the CPU without autograd (a
// decoding step), fp32 or bf16, take the few-rows kernels with W's rows split over the intra-op
// threads (linearTakesFewRows), since such a product is bound by reading W.
torch::Tensor linearForward(const torch::Tensor& x, const torch::Tensor& w,
                            const torch::Tensor& b = {});
bool linearTakesFewRows(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

// A linear layer with Hugging Face naming (weight, bias) and an optional LoRA branch (lora_A,
// lora_B). transposed = false: W stored [out, in] as nn.Linear; true: [in, out] as GPT-2's Conv1D.
class LinearImpl : public torch::nn::Module {
public:
    LinearImpl(int64_t in, int64_t out, bool bias, bool transposed = false);
    // In x's dtype; a weight of another dtype outside autocast computes in the weight's.
    torch::Tensor forward(const torch::Tensor& x);

    // Adds a LoRA branch as PEFT initialises it: A [rank, in] Kaiming-uniform (a = sqrt(5)), B
    // [out, rank] zeros; output += scaling * B(A(dropout(x))), scaling = alpha / rank (rsLoRA:
    // alpha / sqrt(rank)).
    void addLora(int64_t rank, double alpha, double dropout, bool rslora);
    bool hasLora() const { return static_cast<bool>(lora_A); }
    // Whether forward adds the branch: present, not merged, not switched off.
    bool loraActive() const { return lora_A && !m_merged && !loraOff; }
    // base (this layer's x W^T + b, computed elsewhere: model/stacked_linears.h) plus the LoRA
    // branch of x where it is active, as forward adds it.
    torch::Tensor withLora(const torch::Tensor& base, const torch::Tensor& x);
    // Folds scaling * B A into the base weight (merge) or takes it out again (unmerge).
    void mergeLora();
    void unmergeLora();
    bool loraMerged() const { return m_merged; }
    double loraScaling() const { return m_scaling; }
    torch::Tensor loraDelta() const;  // scaling * B A in the base weight's layout

    // The base weight held quantised (QLoRA): `weight` then holds no elements (its dtype and device
    // stay those of the layer) and forward dequantises W just in time (quant/quant_linear.h).
    // Quantises the weight the layer holds now ([out, in] for either layout); frozen from then on.
    void quantize(const QuantOptions& options);
    // The same from a weight given in the layer's own layout (loading: the file's tensor, never the
    // layer's full-precision copy).
    void quantizeFrom(const torch::Tensor& w, const QuantOptions& options);
    // Back to a full weight in `dtype` (merged exports: the quantisation error stays in it).
    void dequantize(torch::Dtype dtype);
    bool quantized() const { return static_cast<bool>(m_quantized); }
    const QuantizedWeight* quantizedWeight() const { return m_quantized.get(); }
    int64_t weightNumel() const { return inFeatures * outFeatures; }
    // The weight as [stored layout], dequantised into dtype when quantised (a copy), else itself.
    torch::Tensor denseWeight(torch::Dtype dtype) const;
    bool quantOnLoad = false;   // loadWeights quantises this layer's weight
    QuantOptions quantOptions;  // with quantOnLoad

    int64_t inFeatures, outFeatures;
    bool transposed;
    torch::Tensor weight;
    torch::Tensor bias;  // undefined when the layer has none
    std::shared_ptr<LinearImpl> lora_A, lora_B;
    bool loraOff = false;  // the branch switched off (CausalLM::setMethodEnabled)

private:
    torch::Tensor forwardIn(const torch::Tensor& x);  // x in the weight's dtype, or autocast

    double m_scaling = 0.0;
    double m_dropout = 0.0;
    bool m_merged = false;
    std::shared_ptr<const QuantizedWeight> m_quantized;
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

// Bottleneck adapter: y + up(act(down(y))), up zero-initialised so the adapted model starts as the
// base.
class BottleneckAdapterImpl : public torch::nn::Module {
public:
    BottleneckAdapterImpl(int64_t hidden, int64_t size, std::string activation);
    torch::Tensor forward(const torch::Tensor& y);
    Linear down{nullptr}, up{nullptr};
    std::string activation;
};
TORCH_MODULE(BottleneckAdapter);

// Rows that each hold several whole examples (packed training): per token, its position within
// its own example (restarting at 0) and its segment, which tells the examples of a row apart;
// attention never crosses segments. Both [batch, seq] int64.
struct PackedRows {
    torch::Tensor positions;
    torch::Tensor segments;
};

// What every block of a forward pass shares: rotary tables (empty for learned positions) and, for
// packed rows and rows with padding, the attention mask.
struct BlockContext {
    torch::Tensor cos, sin;  // [seq, head_dim]; per-row positions: [batch, 1, seq, head_dim]
    // [batch, 1, seq, keys] bool, true = may attend (keys: the cached positions, then seq);
    // undefined: causal
    torch::Tensor mask;
    // A sliding window the keys reach past, for one query per row without a mask: it attends to
    // the `window` latest keys (elsewhere the mask holds the window's band); 0 = every key.
    int64_t window = 0;
};

// One transformer block. Architectures implement forward(); adapters are applied through the two
// hooks.
class BlockBase : public torch::nn::Module {
public:
    virtual torch::Tensor forward(const torch::Tensor& x, const BlockContext& ctx, KVCache* cache,
                                  size_t layer, int64_t past) = 0;
    BottleneckAdapter adapter_attn{nullptr};  // Houlsby: after the attention output
    BottleneckAdapter adapter_mlp{nullptr};   // Houlsby and Pfeiffer: after the MLP output
    bool adaptersOff = false;                 // both switched off (CausalLM::setMethodEnabled)
    // Groups of linear layers that read the same input and may run as one stacked product
    // (model/stacked_linears.h); castFrozenLinearWeights holds each group's frozen weights in one
    // buffer.
    virtual std::vector<std::vector<LinearImpl*>> stackedGroups() { return {}; }

protected:
    torch::Tensor afterAttention(const torch::Tensor& y)
    {
        return adapter_attn && !adaptersOff ? adapter_attn->forward(y) : y;
    }
    torch::Tensor afterMlp(const torch::Tensor& y)
    {
        return adapter_mlp && !adaptersOff ? adapter_mlp->forward(y) : y;
    }
};

class CausalLM : public torch::nn::Module {
public:
    explicit CausalLM(ModelConfig config) : m_config(std::move(config)) {}
    ~CausalLM() override = default;

    // ids: [batch, seq] int64. cache: appended to when given (positions continue from
    // cache->length). A soft prompt, when present, is prepended on the first pass; its positions
    // are not in the result. packed: rows of several examples (block-diagonal causal attention,
    // positions per example); not with a cache or a soft prompt. Returns logits [batch, seq, vocab]
    // in the model dtype.
    torch::Tensor forward(const torch::Tensor& ids, KVCache* cache,
                          const PackedRows* packed = nullptr);
    // The same, but the head runs on the last position only: logits [batch, vocab] (generation's
    // prefill needs no [seq, vocab] logits for the prompt). real (rows of different lengths, with a
    // cache): [batch, seq] bool, false at the left padding of ids; each row then gets its own
    // positions (counting its real tokens) and attends to its real tokens only, and the cache
    // keeps the padding (KVCache::valid) for the calls after it. A soft prompt goes before the
    // padding, so the padding sits between it and the row's tokens.
    torch::Tensor forwardLast(const torch::Tensor& ids, KVCache* cache,
                              const torch::Tensor& real = {});
    // The final-normed hidden states [batch, seq, hidden] that the head turns into logits (no
    // cache), for losses that apply the head themselves (chunked cross-entropy).
    torch::Tensor forwardHidden(const torch::Tensor& ids, const PackedRows* packed = nullptr);
    // The head's weight [vocab, hidden] (the token embeddings when tied), without the trainable
    // token rows (headTokenDelta, added by the caller). Throws when the head carries LoRA.
    torch::Tensor headWeight();
    // The same in dtype where the model holds it so: a tied head's 16-bit copy
    // (holdTiedHeadCopy), else headWeight() as it is.
    torch::Tensor headWeightIn(torch::ScalarType dtype);
    // Whether the logits are hidden x headWeight()^T (+ the token rows) alone: false when the head
    // carries an unmerged LoRA branch.
    bool headIsPlain();

    const ModelConfig& config() const { return m_config; }
    size_t numBlocks() const { return m_blocks.size(); }
    BlockBase& block(size_t i) { return *m_blocks.at(i); }
    // Every Linear layer with its full parameter-name prefix (e.g.
    // "model.layers.0.self_attn.q_proj").
    std::vector<std::pair<std::string, std::shared_ptr<LinearImpl>>> linearLayers();
    virtual torch::Tensor tokenEmbeddingWeight() = 0;  // [vocab, hidden]

    // Copies every parameter from the checkpoint (converted to dtype, moved to device). Throws
    // tb::Error naming the file and tensor when one is missing or its shape differs. Call before
    // adding LoRA, adapters or a soft prompt: those are not part of a base checkpoint.
    void loadWeights(const Checkpoint& checkpoint, torch::Dtype dtype, const torch::Device& device);
    // Fills parameters with N(0, 0.02) (norm weights 1, biases 0) for random models and benchmarks.
    void initRandom(uint64_t seed, torch::Dtype dtype, const torch::Device& device);

    // Marks the linear layers whose weights loadWeights (or initRandom) then holds quantised: every
    // block's linear layers, and the head when options.head and it is not tied. Norms and
    // embeddings never. Call before loading.
    void setQuantization(const QuantOptions& options);
    const QuantOptions& quantization() const { return m_quant; }
    // Every quantised layer back to a full weight in dtype (merged exports).
    void dequantizeLinears(torch::Dtype dtype);
    // The weight of every frozen (not trainable, not quantised) linear layer cast to dtype once,
    // so mixed-precision steps read it as it lies instead of casting it at every forward; biases,
    // norms, embeddings and what trains keep their dtype; a block's stacked groups
    // (BlockBase::stackedGroups) whose weights are all frozen go into one buffer together. Returns
    // the bytes the weights held before.
    int64_t castFrozenLinearWeights(torch::Dtype dtype);
    // A head tied to a frozen token embedding gets a dtype copy beside it (the embedding stays as
    // it is, for the lookup), which headWeightIn(dtype) returns while the embedding is unchanged:
    // for mixed-precision runs whose loss applies the head (the fused loss), so that it is not
    // cast at every step. Returns the copy's bytes (tiedHeadCopyBytes), 0 where none is held.
    int64_t holdTiedHeadCopy(torch::Dtype dtype);
    int64_t tiedHeadCopyBytes() const;
    // Parameters the model holds, a quantised weight counted by its elements.
    int64_t parameterCount();
    // Bytes the parameters hold, quantised weights at their packed size with their statistics,
    // and a tied head's 16-bit copy.
    int64_t weightBytes();

    // Soft prompt [num_tokens, hidden] (prompt tuning); undefined when absent.
    void setPromptEmbeddings(const torch::Tensor& prompt);
    torch::Tensor promptEmbeddings() const { return m_prompt; }
    // Recompute each block's activations in backward instead of storing them (training only).
    void setGradientCheckpointing(bool on) { m_checkpointing = on; }
    bool gradientCheckpointing() const { return m_checkpointing; }

    // Trainable token rows (PEFT's trainable tokens, model/token_rows.cpp): a delta [k, hidden]
    // added to rows `ids` (distinct, in [0, vocab)) of the token embedding and, with a tied head,
    // of the head; untiedHead gives an untied head a delta of its own. Parameters
    // "trainable_tokens_delta" and "lm_head_trainable_tokens_delta", fp32 zeros on the embedding's
    // device, so the model starts as the base. Set once, before training.
    void setTrainableTokens(const std::vector<int64_t>& ids, bool untiedHead);
    torch::Tensor trainableTokenIds() const { return m_tokenIds; }  // [k] int64; undefined: none
    torch::Tensor tokenDelta() const { return m_tokenDelta; }       // [k, hidden]
    torch::Tensor headTokenDelta() const;  // the head's rows: its own delta, else tokenDelta()
    // Adds the deltas into the weights' rows; forward then adds nothing more (a plain model for
    // merged exports). One-way.
    void mergeTrainableTokens();

    // Switches what a method added (LoRA branches, bottleneck adapters, the soft prompt, trainable
    // token rows) off and on again: off, the model computes exactly the base model, with no copy of
    // its weights (the reference model of DPO and IPO). Merged LoRA stays merged.
    void setMethodEnabled(bool on);
    bool methodEnabled() const { return !m_methodOff; }

protected:
    virtual torch::Tensor embedTokens(const torch::Tensor& ids) = 0;
    // Adds position information to the (prompt-extended) embeddings; past = cache length;
    // positions: [batch, seq] int64 for packed rows and rows with padding, else undefined (past,
    // past + 1, ...).
    virtual torch::Tensor addPositions(const torch::Tensor& h, int64_t /*past*/,
                                       const torch::Tensor& /*positions*/)
    {
        return h;
    }
    // The rotary tables of the blocks (cos, sin), for the same positions as addPositions.
    virtual BlockContext blockContext(int64_t /*past*/, int64_t /*length*/,
                                      const torch::Tensor& /*like*/,
                                      const torch::Tensor& /*positions*/)
    {
        return {};
    }
    // The sliding layers' rotary tables where they differ from blockContext's (Gemma 3's local
    // base): replaces ctx.cos and ctx.sin, the context those layers get. Default: the same.
    virtual void slidingLayerTables(BlockContext& /*ctx*/, int64_t /*past*/, int64_t /*length*/,
                                    const torch::Tensor& /*like*/,
                                    const torch::Tensor& /*positions*/)
    {
    }
    virtual torch::Tensor finalNorm(const torch::Tensor& h) = 0;
    // The LM head layer, or null when the head is tied to the token embeddings.
    virtual std::shared_ptr<LinearImpl> headLayer() = 0;
    // Checkpoint names tried for one of our parameter names (first found wins).
    virtual std::vector<std::string> checkpointNames(const std::string& name) const
    {
        return {name};
    }

    ModelConfig m_config;
    std::vector<std::shared_ptr<BlockBase>>
        m_blocks;  // registered by the architecture under its own names

private:
    // embedTokens plus the trainable token rows; the head's logits [..., vocab] of h with them
    // (decode: one row, the matrix-vector path).
    torch::Tensor embedWithTokenRows(const torch::Tensor& ids);
    torch::Tensor headLogits(const torch::Tensor& h, bool decode);
    // Hidden states [batch, seq, hidden], prompt positions removed.
    torch::Tensor runBlocks(const torch::Tensor& ids, KVCache* cache, const PackedRows* packed,
                            const torch::Tensor& real = {});
    torch::Tensor m_prompt;  // registered as parameter "prompt_embeddings" when set
    bool m_checkpointing = false;
    torch::Tensor m_tokenIds;        // [k] int64 on the device
    torch::Tensor m_tokenSlot;       // [vocab] int64: j for ids[j], k for every other token
    torch::Tensor m_tokenDelta;      // [k, hidden] parameter
    torch::Tensor m_headTokenDelta;  // [k, hidden] parameter of an untied head; else undefined
    bool m_methodOff = false;
    QuantOptions m_quant;  // setQuantization
    // A 16-bit copy of a frozen tied head (holdTiedHeadCopy), valid while the token
    // embedding it was made from holds the same storage at the same version.
    torch::Tensor m_tiedHead16;
    const void* m_tiedHeadSource = nullptr;
    uint32_t m_tiedHeadVersion = 0;
};

// An embedding table [num, dim] whose weight is allocated but not initialised (loading fills it).
torch::nn::Embedding makeEmbedding(int64_t num, int64_t dim);

// Rotary embedding tables. invFreq: [head_dim / 2] fp32, with llama3/linear scaling applied;
// theta > 0: that base instead, unscaled (Gemma 3's sliding layers).
torch::Tensor ropeInvFreq(const ModelConfig& config, double theta = 0.0);
// x: [batch, heads, seq, head_dim]; cos/sin: [seq, head_dim] (rotate-half convention).
torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// Makes room in the cache of `layer` ([batch, kvHeads, capacity, headDim] tensors of `options`)
// for seq positions after pastLength: grows geometrically, keeping what is cached.
void reserveCache(KVCache& cache, size_t layer, int64_t batch, int64_t kvHeads, int64_t headDim,
                  const torch::TensorOptions& options, int64_t pastLength, int64_t seq);

// Appends k/v ([batch, kv_heads, seq, head_dim]) to the cache of `layer` and runs causal
// scaled-dot-product attention for q ([batch, heads, seq, head_dim]) over all cached positions.
// pastLength is the cache length before this call. mask: [batch, 1, seq, pastLength + seq] bool
// over every key (the cached ones first), true where a query may attend, used instead of the
// causal rule (packed rows; rows with padding). Returns [batch, heads, seq, head_dim].
// window: BlockContext::window (one query, no mask): only the `window` latest keys.
torch::Tensor cachedAttention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, KVCache* cache, size_t layer,
                              int64_t pastLength, const torch::Tensor& mask = {},
                              int64_t window = 0);

// Whether cachedAttention runs this attention in fp32 although it is bf16 (as it lies, or under
// CPU autocast): training on the CPU (no cache, grad mode, an input needing a gradient) with fewer
// than kFlashAttentionBf16MinQueries queries (model/attention_width.h).
bool attentionWidensToFp32(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const KVCache* cache);

// Activation by name: relu, gelu (erf), gelu_new / gelu_pytorch_tanh (tanh approximation), silu,
// tanh.
torch::Tensor activate(const std::string& name, const torch::Tensor& x);

}  // namespace tb
