// config.json -> ModelConfig for llama, mistral, qwen2, qwen3, gemma3_text, smollm3, phi3 and gpt2,
// with strict checks.
#include "model/config.h"

#include "model/layer_list.h"

#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace tb {
namespace {

// Upper bounds of config.json's sizes, each far above any published model's (vocabularies reach
// about 262,000, hidden sizes 16,384, layers 126, contexts 10 million).
constexpr int64_t kMaxVocab = int64_t(1) << 24;
constexpr int64_t kMaxHidden = int64_t(1) << 18;
constexpr int64_t kMaxInner = int64_t(1) << 20;
constexpr int64_t kMaxLayers = int64_t(1) << 12;
constexpr int64_t kMaxHeads = int64_t(1) << 12;
constexpr int64_t kMaxHeadDim = int64_t(1) << 12;
constexpr int64_t kMaxPositions = int64_t(1) << 27;

using nlohmann::json;

struct Reader {
    const json& j;
    const std::string& path;

    bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }

    int64_t integer(const char* key) const
    {
        if (!has(key))
            fail(path, ": missing required key '", key, "'");
        if (!j[key].is_number_integer())
            fail(path, ": key '", key, "' must be an integer, found ", j[key].dump());
        return j[key].get<int64_t>();
    }
    // A size: positive, and at most `max` (bounds far above any real model's, so that the sizes
    // multiplied stay inside 64 bits and a hostile file is refused before anything is allocated).
    int64_t positive(const char* key, int64_t max) const
    {
        int64_t v = integer(key);
        if (v <= 0)
            fail(path, ": key '", key, "' must be positive, found ", v);
        if (v > max)
            fail(path, ": key '", key, "' is ", v, ", more than the ", max,
                 " any model has (a damaged config?)");
        return v;
    }
    int64_t positiveOr(const char* key, int64_t fallback, int64_t max) const
    {
        return has(key) ? positive(key, max) : fallback;
    }
    // A positive finite number (an epsilon, a rotary base, a scaling factor).
    double positiveNumber(const char* key, double fallback) const
    {
        const double v = number(key, fallback);
        if (!(v > 0) || !std::isfinite(v))
            fail(path, ": key '", key, "' must be a positive number, found ", v);
        return v;
    }
    double number(const char* key, double fallback) const
    {
        if (!has(key))
            return fallback;
        if (!j[key].is_number())
            fail(path, ": key '", key, "' must be a number, found ", j[key].dump());
        return j[key].get<double>();
    }
    bool boolean(const char* key, bool fallback) const
    {
        if (!has(key))
            return fallback;
        if (!j[key].is_boolean())
            fail(path, ": key '", key, "' must be true or false, found ", j[key].dump());
        return j[key].get<bool>();
    }
    std::string string(const char* key, const std::string& fallback) const
    {
        if (!has(key))
            return fallback;
        if (!j[key].is_string())
            fail(path, ": key '", key, "' must be a string, found ", j[key].dump());
        return j[key].get<std::string>();
    }
    std::vector<int64_t> ids(const char* key) const
    {
        std::vector<int64_t> out;
        if (!has(key))
            return out;
        if (j[key].is_number_integer())
            out.push_back(j[key].get<int64_t>());
        else if (j[key].is_array())
            for (const auto& v : j[key]) {
                if (!v.is_number_integer())
                    fail(path, ": key '", key, "' must hold integer token ids");
                out.push_back(v.get<int64_t>());
            }
        else
            fail(path, ": key '", key, "' must be a token id or a list of them");
        return out;
    }
};

// `layer_types`: per layer, whether it is "sliding_attention" (else "full_attention").
std::vector<bool> slidingLayerTypes(const Reader& r, int64_t numLayers)
{
    const json& types = r.j.at("layer_types");
    if (!types.is_array() || static_cast<int64_t>(types.size()) != numLayers)
        fail(r.path, ": key 'layer_types' must list one type per layer (", numLayers, "), found ",
             types.dump().substr(0, 200));
    std::vector<bool> slides(types.size(), false);
    for (size_t i = 0; i < types.size(); ++i) {
        const json& t = types[i];
        if (t == "sliding_attention")
            slides[i] = true;
        else if (t != "full_attention")
            fail(r.path, ": key 'layer_types' entry ", i, " is ", t.dump().substr(0, 100),
                 "; Tunebench reads \"full_attention\" and \"sliding_attention\"");
    }
    return slides;
}

// The window on the layers `layer_types` marks, else on `slides`; sliding_attention layers with
// no window (0) are refused, saying `why`.
void setSlidingLayers(const Reader& r, ModelConfig& c, int64_t window, std::vector<bool> slides,
                      const char* why)
{
    if (r.has("layer_types")) {
        slides = slidingLayerTypes(r, c.numLayers);
        if (window == 0 && std::count(slides.begin(), slides.end(), true) > 0)
            fail(r.path, ": key 'layer_types' has sliding_attention layers, but ", why);
    }
    const auto sliding = std::count(slides.begin(), slides.end(), true);
    if (window == 0 || sliding == 0)
        return;
    c.slidingWindow = window;
    if (sliding < c.numLayers)
        c.slidingLayers = std::move(slides);
}

// Qwen2/3 as transformers reads them: sliding_window (default 4,096) only with use_sliding_window;
// the layers that slide are those `layer_types` names "sliding_attention", or without that key
// those from max_window_layers (default 28) on.
void readQwenWindow(const Reader& r, ModelConfig& c)
{
    const bool use = r.boolean("use_sliding_window", false);
    const int64_t window = use ? r.positiveOr("sliding_window", 4096, kMaxPositions) : 0;
    std::vector<bool> slides(static_cast<size_t>(c.numLayers), false);
    if (!r.has("layer_types")) {
        const int64_t first = r.has("max_window_layers") ? r.integer("max_window_layers") : 28;
        for (int64_t i = std::max<int64_t>(first, 0); i < c.numLayers; ++i)
            slides[static_cast<size_t>(i)] = true;
    }
    setSlidingLayers(r, c, window, std::move(slides),
                     "use_sliding_window is not true, so there is no sliding_window for them "
                     "(transformers refuses this config too)");
}

// SmolLM3 as transformers' SmolLM3Config reads it: `no_rope_layers` (per layer, 1 = rotary, 0 =
// none), by default every `no_rope_layer_interval`-th (4) layer without; a sliding window only with
// use_sliding_window, on the layers `layer_types` marks, by default the layers without rotary.
void readSmolLM3Layers(const Reader& r, ModelConfig& c)
{
    std::vector<bool> nope(static_cast<size_t>(c.numLayers), false);
    if (r.has("no_rope_layers")) {
        const json& flags = r.j.at("no_rope_layers");
        if (!flags.is_array() || static_cast<int64_t>(flags.size()) != c.numLayers)
            fail(r.path, ": key 'no_rope_layers' must list one flag per layer (", c.numLayers,
                 "), found ", flags.dump().substr(0, 200));
        for (size_t i = 0; i < flags.size(); ++i) {
            if (!flags[i].is_number_integer() || (flags[i] != 0 && flags[i] != 1))
                fail(r.path, ": key 'no_rope_layers' entry ", i, " is ",
                     flags[i].dump().substr(0, 100),
                     "; it must be 1 (the layer uses rotary embeddings) or 0 (it does not)");
            nope[i] = flags[i] == 0;
        }
    } else {
        const int64_t interval = r.positiveOr("no_rope_layer_interval", 4, kMaxLayers);
        for (int64_t i = 0; i < c.numLayers; ++i)
            nope[static_cast<size_t>(i)] = (i + 1) % interval == 0;
    }
    if (std::count(nope.begin(), nope.end(), true) > 0)
        c.noRopeLayers = nope;
    const bool use = r.boolean("use_sliding_window", false);
    const int64_t window =
        use && r.has("sliding_window") ? r.positiveOr("sliding_window", 0, kMaxPositions) : 0;
    std::vector<bool> slides(static_cast<size_t>(c.numLayers), false);
    for (size_t i = 0; i < slides.size(); ++i)
        slides[i] = window > 0 && nope[i];
    setSlidingLayers(r, c, window, std::move(slides),
                     "use_sliding_window is not true or sliding_window is null, so they have no "
                     "window");
}

// LongRoPE (Phi-3's rope_type "longrope", formerly "su"; Phi3Config reads "yarn" as it too): the
// short and long factor lists (one per rotated pair), the original context (beside the other keys
// or in the scaling object, default 4,096), and the attention factor, by default sqrt(1 +
// ln(factor) / ln(original)) with factor = max_position_embeddings / original, as transformers
// computes it.
void readLongRope(const Reader& r, const Reader& s, ModelConfig& c)
{
    RopeScaling& rs = c.ropeScaling;
    rs.type = "longrope";
    const size_t pairs = static_cast<size_t>(c.rotatedDim() / 2);
    for (const auto& [key, list] :
         {std::pair{"short_factor", &rs.shortFactor}, std::pair{"long_factor", &rs.longFactor}}) {
        if (!s.has(key))
            fail(r.path, ": rope_scaling type 'longrope' needs '", key, "'");
        const json& v = s.j[key];
        if (!v.is_array() || v.size() != pairs)
            fail(r.path, ": rope_scaling '", key, "' must list ", pairs,
                 " numbers (one per rotated pair of a head's ", c.rotatedDim(),
                 " rotated dimensions), found ", v.dump().substr(0, 200));
        for (size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_number() || !(v[i].get<double>() > 0) ||
                !std::isfinite(v[i].get<double>()))
                fail(r.path, ": rope_scaling '", key, "' entry ", i,
                     " must be a positive number, found ", v[i].dump().substr(0, 100));
            list->push_back(v[i].get<double>());
        }
    }
    // transformers takes the key beside the others over the scaling object's.
    const char* original = "original_max_position_embeddings";
    rs.originalMaxPositions = r.has(original) ? r.positive(original, kMaxPositions)
                                              : s.positiveOr(original, 4096, kMaxPositions);
    rs.factor = s.positiveNumber("factor", static_cast<double>(c.maxPositions) /
                                               static_cast<double>(rs.originalMaxPositions));
    const double scale =
        rs.factor <= 1.0
            ? 1.0
            : std::sqrt(1.0 + std::log(rs.factor) / std::log(double(rs.originalMaxPositions)));
    rs.attentionFactor = s.positiveNumber("attention_factor", scale);
}

void readRope(const Reader& r, ModelConfig& c, double defaultTheta)
{
    c.ropeTheta = r.positiveNumber("rope_theta", defaultTheta);
    // transformers 4.x writes rope_scaling; 5.x folds theta and scaling into rope_parameters.
    const json* scaling = nullptr;
    if (r.has("rope_scaling"))
        scaling = &r.j["rope_scaling"];
    else if (r.has("rope_parameters"))
        scaling = &r.j["rope_parameters"];
    if (!scaling)
        return;
    if (!scaling->is_object())
        fail(r.path, ": rope_scaling must be an object");
    Reader s{*scaling, r.path};
    if (s.has("rope_theta"))
        c.ropeTheta = s.positiveNumber("rope_theta", c.ropeTheta);
    std::string type = s.string("rope_type", s.string("type", "default"));
    if (type == "default" || type.empty())
        return;
    const bool phi3 = c.architecture == Architecture::Phi3;
    if (phi3 && (type == "longrope" || type == "su" || type == "yarn"))
        return readLongRope(r, s, c);
    if (phi3)
        fail(r.path, ": rope_scaling type '", type,
             "' is not supported for phi3 (supported: default, longrope)");
    c.ropeScaling.type = type;
    c.ropeScaling.factor = s.positiveNumber("factor", 1.0);
    if (type == "linear")
        return;
    if (type == "llama3") {
        c.ropeScaling.lowFreqFactor = s.positiveNumber("low_freq_factor", 1.0);
        c.ropeScaling.highFreqFactor = s.positiveNumber("high_freq_factor", 4.0);
        c.ropeScaling.originalMaxPositions =
            s.positiveOr("original_max_position_embeddings", 8192, kMaxPositions);
        if (c.ropeScaling.highFreqFactor <= c.ropeScaling.lowFreqFactor)
            fail(r.path, ": rope_scaling high_freq_factor must exceed low_freq_factor");
        return;
    }
    fail(r.path, ": rope_scaling type '", type, "' is not supported (supported: linear, llama3)");
}

// Phi-3's partial_rotary_factor (beside the other keys or in rope_parameters, default 1): the
// leading int(factor x head_dim) dimensions of each head rotate (Phi-4-mini: 0.75).
void readPartialRotary(const Reader& r, ModelConfig& c)
{
    const char* key = "partial_rotary_factor";
    double factor = r.number(key, 1.0);
    if (r.has("rope_parameters") && r.j["rope_parameters"].is_object())
        factor = Reader{r.j["rope_parameters"], r.path}.number(key, factor);
    if (!(factor > 0 && factor <= 1))
        fail(r.path, ": key '", key, "' must be in (0, 1], found ", factor);
    const auto dim = static_cast<int64_t>(static_cast<double>(c.headDim) * factor);
    if (dim < 2 || dim % 2 != 0)
        fail(r.path, ": key '", key, "' ", factor, " rotates ", dim, " of head_dim ", c.headDim,
             " dimensions; rotary embeddings need an even number");
    if (dim < c.headDim)
        c.rotaryDim = dim;
}

// Gemma 3's rotary bases: the full-attention layers' (rope_theta, default 1,000,000, with an
// optional linear rope_scaling) and the sliding layers' (rope_local_base_freq, default 10,000),
// or transformers 5's rope_parameters with one entry per layer type.
void readGemma3Rope(const Reader& r, ModelConfig& c)
{
    const auto scaled = [&r, &c](const Reader& s, const char* what) {
        const std::string type = s.string("rope_type", s.string("type", "default"));
        if (type == "default" || type.empty())
            return;
        if (type != "linear")
            fail(r.path, ": ", what, " rope type '", type,
                 "' is not supported for gemma3_text (supported: default, linear)");
        c.ropeScaling.type = type;
        c.ropeScaling.factor = s.positiveNumber("factor", 1.0);
    };
    c.ropeTheta = r.positiveNumber("rope_theta", 1000000.0);
    c.ropeThetaSliding = r.positiveNumber("rope_local_base_freq", 10000.0);
    if (r.has("rope_parameters")) {
        const json& p = r.j["rope_parameters"];
        if (!p.is_object() || !p.contains("full_attention"))
            fail(r.path, ": rope_parameters must hold a \"full_attention\" entry for gemma3_text");
        for (const char* type : {"full_attention", "sliding_attention"}) {
            if (!p.contains(type) || p[type].is_null())
                continue;
            if (!p[type].is_object())
                fail(r.path, ": rope_parameters.", type, " must be an object");
            const Reader s{p[type], r.path};
            const bool full = std::string(type) == "full_attention";
            double& theta = full ? c.ropeTheta : c.ropeThetaSliding;
            theta = s.positiveNumber("rope_theta", theta);
            if (full)
                scaled(s, "rope_parameters.full_attention");
            else if (s.string("rope_type", "default") != "default")
                fail(r.path, ": rope_parameters.sliding_attention rope type '",
                     s.string("rope_type", ""), "' is not supported (supported: default)");
        }
    } else if (r.has("rope_scaling")) {
        if (!r.j["rope_scaling"].is_object())
            fail(r.path, ": rope_scaling must be an object");
        scaled(Reader{r.j["rope_scaling"], r.path}, "rope_scaling");
    }
}

// Gemma 3 (text): sandwich norms, GELU-tanh, q/k norms, scaled embeddings, a sliding window on the
// layers `layer_types` marks (by default five of every six), each kind with its own rotary base.
void readGemma3(const Reader& r, ModelConfig& c)
{
    c.qkNorm = true;
    c.qkvBias = c.oBias = r.boolean("attention_bias", false);
    c.embeddingScale = std::sqrt(static_cast<double>(c.hiddenSize));
    c.attentionScale = 1.0 / std::sqrt(r.positiveNumber("query_pre_attn_scalar", 256.0));
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"})
        if (r.has(key))
            fail(r.path, ": key '", key, "' is ", r.j[key].dump(),
                 ": soft-capped logits (Gemma 2's) are not supported; Gemma 3 sets it to null");
    if (r.boolean("use_bidirectional_attention", false))
        fail(r.path, ": key 'use_bidirectional_attention' true (an embedding model) is not "
                     "supported: Tunebench trains causal language models");
    readGemma3Rope(r, c);
    std::vector<bool> slides(static_cast<size_t>(c.numLayers), false);
    if (r.has("layer_types")) {
        slides = slidingLayerTypes(r, c.numLayers);
    } else {
        const int64_t pattern = r.positiveOr("sliding_window_pattern", 6, kMaxLayers);
        for (int64_t i = 0; i < c.numLayers; ++i)
            slides[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
    }
    const auto sliding = std::count(slides.begin(), slides.end(), true);
    const int64_t window =
        r.j.contains("sliding_window") ? r.positiveOr("sliding_window", 0, kMaxPositions) : 4096;
    if (sliding == 0)
        return;
    if (window == 0)
        fail(r.path, ": key 'sliding_window' is null, but ", sliding,
             " layers are sliding_attention layers");
    c.slidingWindow = window;
    if (sliding < c.numLayers)
        c.slidingLayers = std::move(slides);
}

}  // namespace

const char* architectureName(Architecture arch)
{
    switch (arch) {
    case Architecture::Llama:
        return "llama";
    case Architecture::Mistral:
        return "mistral";
    case Architecture::Qwen2:
        return "qwen2";
    case Architecture::Qwen3:
        return "qwen3";
    case Architecture::Gemma3:
        return "gemma3_text";
    case Architecture::SmolLM3:
        return "smollm3";
    case Architecture::Phi3:
        return "phi3";
    case Architecture::Gpt2:
        return "gpt2";
    }
    return "?";
}

ModelConfig parseModelConfig(const std::string& jsonText, const std::string& path)
{
    checkJsonDepth(jsonText, path);
    json j;
    try {
        j = json::parse(jsonText);
    } catch (const json::exception& e) {
        fail(path, ": not valid JSON (", e.what(), ")");
    }
    if (!j.is_object())
        fail(path, ": config must be a JSON object");
    Reader r{j, path};

    ModelConfig c;
    c.sourcePath = path;
    c.modelType = r.string("model_type", "");
    if (c.modelType.empty())
        fail(path, ": missing required key 'model_type'");
    if (c.modelType == "llama")
        c.architecture = Architecture::Llama;
    else if (c.modelType == "mistral")
        c.architecture = Architecture::Mistral;
    else if (c.modelType == "qwen2")
        c.architecture = Architecture::Qwen2;
    else if (c.modelType == "qwen3")
        c.architecture = Architecture::Qwen3;
    else if (c.modelType == "gemma3_text")
        c.architecture = Architecture::Gemma3;
    else if (c.modelType == "smollm3")
        c.architecture = Architecture::SmolLM3;
    else if (c.modelType == "phi3")
        c.architecture = Architecture::Phi3;
    else if (c.modelType == "gpt2")
        c.architecture = Architecture::Gpt2;
    else if (c.modelType == "gemma3")
        fail(path, ": model_type 'gemma3' is a Gemma 3 image-and-text checkpoint; Tunebench loads "
                   "the text-only ones (model_type 'gemma3_text': Gemma 3 270M and 1B)");
    else
        fail(path, ": unknown architecture model_type '", c.modelType,
             "' (supported: llama, mistral, qwen2, qwen3, gemma3_text, smollm3, phi3, gpt2)");

    c.torchDtype = r.string("torch_dtype", r.string("dtype", "float32"));
    c.bosTokenIds = r.ids("bos_token_id");
    c.eosTokenIds = r.ids("eos_token_id");
    c.vocabSize = r.positive("vocab_size", kMaxVocab);
    for (const auto& [key, ids] :
         {std::pair{"bos_token_id", &c.bosTokenIds}, std::pair{"eos_token_id", &c.eosTokenIds}})
        for (const int64_t id : *ids)
            if (id < 0 || id >= c.vocabSize)
                fail(path, ": key '", key, "' holds token id ", id, ", outside vocab_size ",
                     c.vocabSize);

    if (c.architecture == Architecture::Gpt2) {
        c.hiddenSize = r.positive("n_embd", kMaxHidden);
        c.numLayers = r.positive("n_layer", kMaxLayers);
        c.numHeads = r.positive("n_head", kMaxHeads);
        c.numKvHeads = c.numHeads;
        c.maxPositions = r.positive("n_positions", kMaxPositions);
        c.intermediateSize = r.positiveOr("n_inner", 4 * c.hiddenSize, kMaxInner);
        c.normEps = r.positiveNumber("layer_norm_epsilon", 1e-5);
        c.hiddenAct = r.string("activation_function", "gelu_new");
        if (c.hiddenAct != "gelu_new" && c.hiddenAct != "gelu" &&
            c.hiddenAct != "gelu_pytorch_tanh" && c.hiddenAct != "relu")
            fail(path, ": activation_function '", c.hiddenAct, "' is not supported");
        c.tieWordEmbeddings = r.boolean("tie_word_embeddings", true);
        if (c.hiddenSize % c.numHeads != 0)
            fail(path, ": n_embd (", c.hiddenSize, ") is not divisible by n_head (", c.numHeads,
                 ")");
        c.headDim = c.hiddenSize / c.numHeads;
        c.qkvBias = c.oBias = c.mlpBias = true;
        // Attention scores are scaled by 1/sqrt(head_dim), GPT-2's own; the variants would give
        // other logits without a word.
        if (!r.boolean("scale_attn_weights", true))
            fail(path, ": key 'scale_attn_weights' false (unscaled attention scores) is not "
                       "supported: attention is scaled by 1/sqrt(head_dim)");
        if (r.boolean("scale_attn_by_inverse_layer_idx", false))
            fail(path, ": key 'scale_attn_by_inverse_layer_idx' true (scores divided by the layer "
                       "number too) is not supported: attention is scaled by 1/sqrt(head_dim)");
        return c;
    }

    // Gemma 3's, SmolLM3's and Phi-3's own defaults where their config classes have them
    // (transformers' Gemma3TextConfig, SmolLM3Config, Phi3Config).
    const bool gemma = c.architecture == Architecture::Gemma3;
    const bool smol = c.architecture == Architecture::SmolLM3;
    const bool phi3 = c.architecture == Architecture::Phi3;
    c.hiddenSize = r.positive("hidden_size", kMaxHidden);
    c.intermediateSize = r.positive("intermediate_size", kMaxInner);
    c.numLayers = r.positive("num_hidden_layers", kMaxLayers);
    c.numHeads = r.positive("num_attention_heads", kMaxHeads);
    c.numKvHeads =
        r.positiveOr("num_key_value_heads",
                     gemma || smol ? std::min<int64_t>(4, c.numHeads) : c.numHeads, kMaxHeads);
    c.maxPositions = r.positiveOr("max_position_embeddings",
                                  gemma  ? 131072
                                  : smol ? 32768
                                  : phi3 ? 4096
                                         : 2048,
                                  kMaxPositions);
    c.normEps = r.positiveNumber("rms_norm_eps", phi3 ? 1e-5 : 1e-6);
    if (gemma) {
        c.hiddenAct = r.string("hidden_activation", "gelu_pytorch_tanh");
        if (c.hiddenAct != "gelu_pytorch_tanh")
            fail(path, ": hidden_activation '", c.hiddenAct,
                 "' is not supported (supported: gelu_pytorch_tanh)");
    } else {
        c.hiddenAct = r.string("hidden_act", "silu");
        if (c.hiddenAct != "silu")
            fail(path, ": hidden_act '", c.hiddenAct, "' is not supported (supported: silu)");
    }
    c.tieWordEmbeddings = r.boolean("tie_word_embeddings", gemma || smol);
    if (gemma) {
        c.headDim = r.positiveOr("head_dim", 256, kMaxHeadDim);
    } else if (r.has("head_dim")) {
        c.headDim = r.positive("head_dim", kMaxHeadDim);
    } else {
        if (c.hiddenSize % c.numHeads != 0)
            fail(path, ": hidden_size (", c.hiddenSize,
                 ") is not divisible by num_attention_heads (", c.numHeads,
                 ") and no head_dim is given");
        c.headDim = c.hiddenSize / c.numHeads;
    }
    if (c.headDim % 2 != 0)
        fail(path, ": head_dim (", c.headDim, ") must be even for rotary embeddings");
    if (c.numHeads % c.numKvHeads != 0)
        fail(path, ": num_attention_heads (", c.numHeads,
             ") is not a multiple of num_key_value_heads (", c.numKvHeads, ")");
    if (phi3)
        readPartialRotary(r, c);
    if (!gemma)
        readRope(r, c, smol ? 2000000.0 : 10000.0);

    switch (c.architecture) {
    case Architecture::Llama:
        c.qkvBias = c.oBias = r.boolean("attention_bias", false);
        c.mlpBias = r.boolean("mlp_bias", false);
        break;
    case Architecture::Mistral:
        // As transformers' MistralConfig: a missing key is its default of 4,096, null is none.
        c.slidingWindow = r.j.contains("sliding_window")
                              ? r.positiveOr("sliding_window", 0, kMaxPositions)
                              : std::min<int64_t>(4096, kMaxPositions);
        break;
    case Architecture::Qwen2:
    case Architecture::Qwen3:
        if (c.architecture == Architecture::Qwen2) {
            c.qkvBias = true;
        } else {
            c.qkvBias = c.oBias = r.boolean("attention_bias", false);
            c.qkNorm = true;
        }
        readQwenWindow(r, c);
        break;
    case Architecture::Gemma3:
        readGemma3(r, c);
        break;
    case Architecture::SmolLM3:
        c.qkvBias = c.oBias = r.boolean("attention_bias", false);
        c.mlpBias = r.boolean("mlp_bias", false);
        readSmolLM3Layers(r, c);
        break;
    case Architecture::Phi3:
        // As transformers' Phi3Config: no window by default; one given slides every layer.
        c.slidingWindow = r.positiveOr("sliding_window", 0, kMaxPositions);
        break;
    case Architecture::Gpt2:
        break;
    }
    return c;
}

std::string ModelConfig::slidingLayerText() const
{
    return slidingLayers.empty() ? "every layer" : layerListText(slidingLayers);
}

ModelConfig loadModelConfig(const std::string& path)
{
    if (!fileExists(path))
        fail(path, ": not found (expected a model folder or a config.json)");
    const std::string file = isDirectory(path) ? joinPath(path, "config.json") : path;
    if (!fileExists(file))
        fail(file, ": not found (a model folder needs config.json)");
    ModelConfig config = parseModelConfig(readFile(file), file);
    // As transformers' generate(): generation_config.json's eos_token_id wins over config.json's.
    const std::string genPath =
        joinPath(isDirectory(path) ? path : std::filesystem::path(path).parent_path().string(),
                 "generation_config.json");
    if (fileExists(genPath)) {
        const std::string genText = readFile(genPath);
        checkJsonDepth(genText, genPath);
        json gen;
        try {
            gen = json::parse(genText);
        } catch (const json::exception& e) {
            fail(genPath, ": not valid JSON (", e.what(), ")");
        }
        if (gen.is_object()) {
            Reader r{gen, genPath};
            auto eos = r.ids("eos_token_id");
            for (const int64_t id : eos)
                if (id < 0 || id >= config.vocabSize)
                    fail(genPath, ": key 'eos_token_id' holds token id ", id,
                         ", outside vocab_size ", config.vocabSize, " of ", file);
            if (!eos.empty())
                config.eosTokenIds = eos;
        }
    }
    return config;
}

int64_t parameterCount(const ModelConfig& c)
{
    const int64_t h = c.hiddenSize;
    const int64_t v = c.vocabSize;
    const int64_t inner = c.intermediateSize;
    if (c.architecture == Architecture::Gpt2) {
        const int64_t block = 2 * h                // ln_1
                              + h * 3 * h + 3 * h  // c_attn (Conv1D, bias)
                              + h * h + h          // attn.c_proj
                              + 2 * h              // ln_2
                              + h * inner + inner  // mlp.c_fc
                              + inner * h + h;     // mlp.c_proj
        return v * h + c.maxPositions * h + c.numLayers * block + 2 * h +
               (c.tieWordEmbeddings ? 0 : v * h);
    }
    const int64_t q = c.numHeads * c.headDim;
    const int64_t kv = c.numKvHeads * c.headDim;
    int64_t block = h * q + 2 * h * kv + q * h  // q, k, v, o projections
                    + 3 * h * inner             // gate, up, down
                    + 2 * h;                    // input and post-attention RMSNorm
    if (c.architecture == Architecture::Gemma3)
        block += 2 * h;  // pre- and post-feedforward RMSNorm
    if (c.qkvBias)
        block += q + 2 * kv;
    if (c.oBias)
        block += h;
    if (c.mlpBias)
        block += 2 * inner + h;
    if (c.qkNorm)
        block += 2 * c.headDim;
    return v * h + c.numLayers * block + h + (c.tieWordEmbeddings ? 0 : v * h);
}

ModelConfig randomLlama25mConfig()
{
    ModelConfig c;
    c.architecture = Architecture::Llama;
    c.modelType = "llama";
    c.sourcePath = "random-llama-25m";
    c.vocabSize = 32000;
    c.hiddenSize = 384;
    c.intermediateSize = 1024;
    c.numLayers = 8;
    c.numHeads = 6;
    c.numKvHeads = 6;
    c.headDim = 64;
    c.maxPositions = 2048;
    c.normEps = 1e-5;
    c.tieWordEmbeddings = true;
    return c;
}

}  // namespace tb
