// ModelConfig: a Hugging Face config.json read into one plain struct, and exact parameter counts
// from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

enum class Architecture { Llama, Mistral, Qwen2, Qwen3, Gemma3, SmolLM3, Phi3, Gpt2 };

const char* architectureName(Architecture arch);  // config.json model_type spelling

struct RopeScaling {
    std::string type;  // "" (none), "linear", "llama3", "longrope" (Phi-3's)
    double factor = 1.0;
    double lowFreqFactor = 1.0;           // llama3
    double highFreqFactor = 4.0;          // llama3
    int64_t originalMaxPositions = 8192;  // llama3, longrope
    // longrope: the rotary frequencies are divided by shortFactor while a forward pass's positions
    // stay within originalMaxPositions, by longFactor beyond (one per rotated pair), and cos and
    // sin are multiplied by attentionFactor.
    std::vector<double> shortFactor, longFactor;
    double attentionFactor = 1.0;
};

struct ModelConfig {
    Architecture architecture = Architecture::Llama;
    std::string modelType;   // as written in config.json
    std::string sourcePath;  // config.json this came from

    int64_t vocabSize = 0;
    int64_t hiddenSize = 0;
    int64_t intermediateSize = 0;  // MLP inner size (GPT-2: n_inner or 4 * n_embd)
    int64_t numLayers = 0;
    int64_t numHeads = 0;
    int64_t numKvHeads = 0;
    int64_t headDim = 0;
    // The leading dimensions of each head that rotate (partial_rotary_factor x head_dim, Phi-4's
    // 0.75); 0 = all of them.
    int64_t rotaryDim = 0;
    int64_t maxPositions = 0;

    double normEps = 1e-5;  // rms_norm_eps or layer_norm_epsilon
    double ropeTheta = 10000.0;
    RopeScaling ropeScaling;  // Gemma 3: the full-attention layers' only
    // The sliding layers' rotary base where it differs from ropeTheta (Gemma 3's
    // rope_local_base_freq); 0 = ropeTheta.
    double ropeThetaSliding = 0.0;
    // Attention scores' scale; 0 = 1/sqrt(headDim) (Gemma 3: query_pre_attn_scalar^-1/2).
    double attentionScale = 0.0;
    // Token embeddings are multiplied by it, rounded to the model dtype (Gemma 3: sqrt(hidden)).
    double embeddingScale = 1.0;
    std::string hiddenAct = "silu";

    bool tieWordEmbeddings = false;
    bool qkvBias = false;  // qwen2, llama attention_bias
    bool oBias = false;    // llama attention_bias
    bool mlpBias = false;
    bool qkNorm = false;  // qwen3, gemma3
    // Sliding-window attention: in a layer that slides, a query attends to the `slidingWindow`
    // latest positions, itself included. Mistral's sliding_window slides every layer; Qwen2/3's
    // with use_sliding_window the layers `layer_types` marks (by default those from
    // max_window_layers on). 0 = none; slidingLayers empty = every layer.
    int64_t slidingWindow = 0;
    std::vector<bool> slidingLayers;
    // SmolLM3: the layers whose attention has no rotary embedding (NoPE; by default every fourth);
    // empty = every layer rotates.
    std::vector<bool> noRopeLayers;

    bool layerSlides(size_t layer) const
    {
        return slidingWindow > 0 &&
               (slidingLayers.empty() || (layer < slidingLayers.size() && slidingLayers[layer]));
    }
    bool layerRotates(size_t layer) const
    {
        return layer >= noRopeLayers.size() || !noRopeLayers[layer];
    }
    // Which layers slide, in words: "every layer" or "layers 1-2, 4" (numbered from 0).
    std::string slidingLayerText() const;
    int64_t rotatedDim() const { return rotaryDim > 0 ? rotaryDim : headDim; }
    // Whether q, k, v and gate, up are one fused linear layer each (Phi-3's qkv_proj,
    // gate_up_proj).
    bool fusedProjections() const { return architecture == Architecture::Phi3; }

    std::string torchDtype = "float32";
    std::vector<int64_t> bosTokenIds;
    std::vector<int64_t> eosTokenIds;
};

// Reads config.json from a model folder or a bare config.json path. Throws tb::Error naming the
// file and key when a required field is missing or inconsistent, or the architecture is not
// supported.
ModelConfig loadModelConfig(const std::string& path);
ModelConfig parseModelConfig(const std::string& jsonText, const std::string& sourcePath);

// Exact number of parameters the checkpoint holds (a tied head counted once).
int64_t parameterCount(const ModelConfig& config);

// The benchmarks' mid-size model: a Llama of 26.5M parameters (vocab 32000, hidden 384, 8 layers,
// tied), used with random weights by `tunebench bench generate|train` and bench/*.py.
ModelConfig randomLlama25mConfig();

}  // namespace tb
