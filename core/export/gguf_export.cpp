// GGUF exports: a merged Llama/Mistral/Qwen2/Qwen3/Gemma 3/SmolLM3/Phi-3/GPT-2 run (or its base
// model) with its vocabulary, and a LoRA run's factors as a llama.cpp LoRA adapter; llama.cpp's
// tensor names, q/k row order, rope factors and Gemma's norm offset.
#include "export/gguf.h"

#include "export/export.h"
#include "export/gguf_quant.h"
#include "export/gguf_vocab.h"
#include "model/causal_lm.h"
#include "model/config.h"
#include "peft/peft.h"
#include "tokenizer/tokenizer.h"
#include "train/train_config.h"
#include "util/error.h"

#include <cmath>
#include <map>
#include <regex>

namespace tb {

namespace {

// Our parameter name -> llama.cpp's tensor name, or "" when it has none. Gemma 3's four norms a
// block: the one before the MLP is llama's ffn_norm, the two after attention and MLP are its own.
std::string ggufTensorName(const ModelConfig& c, const std::string& name)
{
    static const std::map<std::string, std::string> kGemma3Block = {
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
        {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"}};
    static const std::map<std::string, std::string> kTop = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"lm_head.weight", "output.weight"},
        {"transformer.wte.weight", "token_embd.weight"},  // gpt2
        {"transformer.wpe.weight", "position_embd.weight"},
        {"transformer.ln_f.weight", "output_norm.weight"},
        {"transformer.ln_f.bias", "output_norm.bias"}};
    static const std::map<std::string, std::string> kBlock = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"},  // qwen2
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},  // qwen3
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
        {"self_attn.qkv_proj.weight", "attn_qkv.weight"},  // phi3: q, k, v in one
        {"mlp.gate_up_proj.weight", "ffn_up.weight"},      // phi3: gate, then up
        {"ln_1.weight", "attn_norm.weight"},               // gpt2
        {"ln_1.bias", "attn_norm.bias"},
        {"attn.c_attn.weight", "attn_qkv.weight"},
        {"attn.c_attn.bias", "attn_qkv.bias"},
        {"attn.c_proj.weight", "attn_output.weight"},
        {"attn.c_proj.bias", "attn_output.bias"},
        {"ln_2.weight", "ffn_norm.weight"},
        {"ln_2.bias", "ffn_norm.bias"},
        {"mlp.c_fc.weight", "ffn_up.weight"},
        {"mlp.c_fc.bias", "ffn_up.bias"},
        {"mlp.c_proj.weight", "ffn_down.weight"},
        {"mlp.c_proj.bias", "ffn_down.bias"}};
    if (auto it = kTop.find(name); it != kTop.end())
        return it->second;
    static const std::regex kLayer(R"((?:model\.layers|transformer\.h)\.(\d+)\.(.+))");
    std::smatch m;
    if (std::regex_match(name, m, kLayer)) {
        if (c.architecture == Architecture::Gemma3)
            if (auto it = kGemma3Block.find(m[2].str()); it != kGemma3Block.end())
                return "blk." + m[1].str() + "." + it->second;
        if (auto it = kBlock.find(m[2].str()); it != kBlock.end())
            return "blk." + m[1].str() + "." + it->second;
    }
    return {};
}

// HF's rotate-half layout of q/k rows -> GGML's interleaved pairs, per head (the inverse of what
// transformers' GGUF loader undoes): rows [heads, 2, head_dim/2] -> [heads, head_dim/2, 2].
// w: [heads * head_dim, in]
torch::Tensor interleaveRopeRows(const torch::Tensor& w, int64_t heads)
{
    const int64_t rows = w.size(0);
    return w.reshape({heads, 2, rows / heads / 2, w.size(1)})
        .transpose(1, 2)
        .reshape({rows, w.size(1)})
        .contiguous();
}

std::string tensorBytes(const torch::Tensor& t, GgufTensorType type)
{
    if (type == GgufTensorType::Q8_0) {
        const torch::Tensor f = t.detach().to(torch::kCPU).to(torch::kFloat32).contiguous();
        return quantizeQ8_0(f.data_ptr<float>(), f.numel());
    }
    const auto dtype = type == GgufTensorType::F32   ? torch::kFloat32
                       : type == GgufTensorType::F16 ? torch::kFloat16
                                                     : torch::kBFloat16;
    const torch::Tensor c = t.detach().to(torch::kCPU).to(dtype).contiguous();
    return std::string(static_cast<const char*>(c.data_ptr()),
                       static_cast<size_t>(c.numel()) * c.element_size());
}

// --dtype -> the type of 2-D weights and general.file_type (llama_ftype: ALL_F32 = 0, MOSTLY_F16 =
// 1, MOSTLY_BF16 = 32).
std::pair<GgufTensorType, uint32_t> ggufWeightType(const std::string& dtype)
{
    if (dtype == "f32")
        return {GgufTensorType::F32, 0};
    if (dtype == "f16")
        return {GgufTensorType::F16, 1};
    if (dtype == "bf16")
        return {GgufTensorType::BF16, 32};
    if (dtype == "q8_0")
        return {GgufTensorType::Q8_0, 7};  // LLAMA_FTYPE_MOSTLY_Q8_0
    fail("export: unknown GGUF dtype '", dtype, "' (allowed: f32, f16, bf16, q8_0)");
}

// llama.cpp's architecture name: Mistral is written as llama (as llama.cpp's converter does).
std::string ggufArchitecture(const ModelConfig& c)
{
    switch (c.architecture) {
    case Architecture::Qwen2:
        return "qwen2";
    case Architecture::Qwen3:
        return "qwen3";
    case Architecture::Gpt2:
        return "gpt2";
    case Architecture::Gemma3:
        return "gemma3";
    case Architecture::SmolLM3:
        return "smollm3";
    case Architecture::Phi3:
        return "phi3";
    case Architecture::Llama:
    case Architecture::Mistral:
        break;
    }
    return "llama";
}

// The GGUF tensor a rotary-ordered q/k weight goes to: its head count (q: attention heads, k: KV
// heads), else 0. qwen2 and qwen3 keep HF's rotate-half order (llama.cpp runs them with the NeoX
// rotary), and so do gemma3 and phi3.
int64_t ropeHeads(const ModelConfig& c, const std::string& gguf)
{
    if (c.architecture == Architecture::Qwen2 || c.architecture == Architecture::Qwen3 ||
        c.architecture == Architecture::Gemma3 || c.architecture == Architecture::Phi3)
        return 0;
    return gguf.ends_with(".attn_q.weight")   ? c.numHeads
           : gguf.ends_with(".attn_k.weight") ? c.numKvHeads
                                              : 0;
}

// Llama 3's rope scaling as llama.cpp takes it: a "rope_freqs" tensor of per-frequency divisors
// [head_dim / 2], computed as llama.cpp's converter does (float32 base frequencies, the rest in
// double).
std::vector<float> llama3RopeFactors(const ModelConfig& c)
{
    const RopeScaling& s = c.ropeScaling;
    const double lowWavelen = s.originalMaxPositions / s.lowFreqFactor;
    const double highWavelen = s.originalMaxPositions / s.highFreqFactor;
    std::vector<float> factors;
    for (int64_t i = 0; i < c.headDim; i += 2) {
        const float freq = 1.0f / std::pow(static_cast<float>(c.ropeTheta),
                                           static_cast<float>(i) / static_cast<float>(c.headDim));
        const double wavelen = 2.0 * M_PI / static_cast<double>(freq);
        double factor = 1.0;
        if (wavelen > lowWavelen) {
            factor = s.factor;
        } else if (wavelen >= highWavelen) {
            const double smooth = (s.originalMaxPositions / wavelen - s.lowFreqFactor) /
                                  (s.highFreqFactor - s.lowFreqFactor);
            factor = 1.0 / ((1.0 - smooth) / s.factor + smooth);
        }
        factors.push_back(static_cast<float>(factor));
    }
    return factors;
}

// GPT-2's Conv1D weights are stored [in, out]; llama.cpp takes nn.Linear's [out, in], as its
// converter transposes them.
bool isConv1dWeight(const std::string& name)
{
    return name.ends_with(".c_attn.weight") || name.ends_with(".c_proj.weight") ||
           name.ends_with(".c_fc.weight");
}

// How a parameter goes into the file, for the export and for the Q8_0 round trip alike: transposed
// to llama.cpp's layout (GPT-2's Conv1D weights; q/k rows are reordered only when written, which
// moves whole rows), and its type under `weightType`: 1-D tensors F32, 2-D ones in weightType when
// their rows are whole blocks of it, else F16 (`fellBack`), as llama.cpp's converter does.
struct GgufPlacement {
    bool transposed = false;
    GgufTensorType type = GgufTensorType::F32;
    bool fellBack = false;
};

GgufPlacement ggufPlacement(const ModelConfig& c, const std::string& name, const torch::Tensor& p,
                            GgufTensorType weightType)
{
    GgufPlacement out;
    if (p.dim() != 2)
        return out;
    out.transposed = c.architecture == Architecture::Gpt2 && isConv1dWeight(name);
    const int64_t rowLength = out.transposed ? p.size(0) : p.size(1);
    out.type = weightType;
    if (rowLength % ggufTypeLayout(weightType).blockSize != 0) {
        out.type = GgufTensorType::F16;
        out.fellBack = true;
    }
    return out;
}

// What llama.cpp's gemma3 graph computes, checked against the model: no biases, linear rope
// scaling at most (on the full layers, as ours), scores scaled by head_dim^-1/2 (hidden / heads for
// its 62-layer 27B), token embeddings by sqrt(hidden) in f32. (An odd head_dim never parses.)
void checkGemma3Gguf(const ModelConfig& c)
{
    if (c.qkvBias || c.oBias || c.mlpBias)
        fail("export: llama.cpp's gemma3 has no biases; ", c.sourcePath,
             " sets attention_bias or mlp_bias");
    if (!c.ropeScaling.type.empty() && c.ropeScaling.type != "linear")
        fail("export: GGUF gemma3 models take linear rope scaling only; ", c.sourcePath, " uses '",
             c.ropeScaling.type, "'");
    const double scalar = c.numLayers == 62 ? static_cast<double>(c.hiddenSize / c.numHeads)
                                            : static_cast<double>(c.headDim);
    const double scale = c.attentionScale > 0 ? c.attentionScale : 1.0 / std::sqrt(c.headDim);
    if (std::abs(scale * std::sqrt(scalar) - 1.0) > 1e-6)
        fail("export: llama.cpp scales a gemma3 model's attention scores by ", scalar,
             "^-1/2 (query_pre_attn_scalar is not in the file); ", c.sourcePath,
             " has query_pre_attn_scalar ", 1.0 / (scale * scale));
    if (std::abs(c.embeddingScale - std::sqrt(static_cast<double>(c.hiddenSize))) > 1e-9)
        fail("export: llama.cpp scales a gemma3 model's embeddings by sqrt(hidden_size); ",
             c.sourcePath, " scales them by ", c.embeddingScale);
}

}  // namespace

void checkGgufExportable(const TrainConfig& run)
{
    if (run.method == Method::Adapter || run.method == Method::Prompt)
        fail("export: a ", methodName(run.method), " run cannot be written as GGUF (",
             run.method == Method::Adapter ? "bottleneck adapters add non-linear layers"
                                           : "a soft prompt is an input, not a weight",
             " that a merged model cannot hold); use --format peft");
    const ModelConfig c = loadModelConfig(run.model);
    if (c.architecture == Architecture::Gemma3) {
        checkGemma3Gguf(c);
        checkGgufTokenizer(run.model);
        return;
    }
    if (c.architecture == Architecture::Gpt2) {
        // llama.cpp's gpt2 graph: learned positions, LayerNorms with biases, biased fused qkv, tanh
        // GELU.
        if (c.hiddenAct != "gelu_new" && c.hiddenAct != "gelu_pytorch_tanh")
            fail("export: llama.cpp's gpt2 uses the tanh GELU (gelu_new); ", c.sourcePath,
                 " has activation_function '", c.hiddenAct, "'");
        checkGgufTokenizer(run.model);
        return;
    }
    if (c.architecture == Architecture::Phi3) {
        // llama.cpp's phi3: fused q/k/v and gate/up without biases, LongRoPE as two factor tensors
        // and an attention factor (chosen by the context size, not per pass: see docs/export.md).
        if (c.qkvBias || c.oBias || c.mlpBias)
            fail("export: llama.cpp's phi3 has no biases; ", c.sourcePath,
                 " sets attention_bias or mlp_bias");
        if (!c.ropeScaling.type.empty() && c.ropeScaling.type != "longrope")
            fail("export: llama.cpp's phi3 takes longrope scaling only; ", c.sourcePath, " uses '",
                 c.ropeScaling.type, "'");
        checkGgufTokenizer(run.model);
        return;
    }
    const bool qwen2 = c.architecture == Architecture::Qwen2;
    const bool qwen3 = c.architecture == Architecture::Qwen3;
    const bool smol = c.architecture == Architecture::SmolLM3;
    const bool llama =
        c.architecture == Architecture::Llama || c.architecture == Architecture::Mistral || smol;
    if (!llama && !qwen2 && !qwen3)
        fail(
            "export: GGUF export supports llama, mistral, qwen2, qwen3, gemma3_text, smollm3, phi3 "
            "and gpt2 models; ",
            c.sourcePath, " is ", c.modelType,
            " (use --format merged and llama.cpp's convert_hf_to_gguf.py)");
    if ((c.qkvBias && !qwen2) || c.oBias || c.mlpBias || (c.qkNorm && !qwen3))
        fail("export: GGUF export supports llama/mistral without biases, qwen2 with its q/k/v "
             "biases and "
             "qwen3 with its q/k norms; ",
             c.sourcePath, " sets attention_bias or mlp_bias");
    // llama.cpp's smollm3 graph leaves the rotary embedding out of every fourth layer, counted
    // from 1, and takes no rope factors.
    for (int64_t i = 0; smol && i < c.numLayers; ++i) {
        const bool rotates = c.layerRotates(static_cast<size_t>(i));
        if (rotates != ((i + 1) % 4 != 0))
            fail("export: llama.cpp's smollm3 leaves the rotary embedding out of every fourth "
                 "layer (3, 7, 11, ...); ",
                 c.sourcePath, " ", rotates ? "keeps it in" : "leaves it out of", " layer ", i,
                 " (no_rope_layers)");
    }
    if (!c.ropeScaling.type.empty() && !(llama && !smol && c.ropeScaling.type == "llama3"))
        fail("export: GGUF export writes llama3 rope scaling for llama models only; ", c.sourcePath,
             " uses '", c.ropeScaling.type, "'");
    if (c.hiddenAct != "silu")
        fail("export: GGUF llama models use silu; ", c.sourcePath, " has hidden_act '", c.hiddenAct,
             "'");
    if (c.headDim % 2 != 0)
        fail("export: head_dim ", c.headDim, " in ", c.sourcePath,
             " is odd; rotary rows come in pairs");
    if (qwen2 && c.headDim * c.numHeads != c.hiddenSize)  // transformers' qwen2 GGUF reader
        fail("export: GGUF qwen2 models need head_dim = hidden_size / heads; ", c.sourcePath,
             " has head_dim ", c.headDim);
    checkGgufTokenizer(run.model);
}

void exportGgufModel(CausalLM& model, const TrainConfig& run, const ExportOptions& o,
                     ExportReport& report, bool headCopy)
{
    checkGgufExportable(run);
    const ModelConfig& c = model.config();
    const auto [weightType, fileType] = ggufWeightType(o.dtype);

    // Vocabulary: sentencepiece pieces or byte-level BPE tokens; embedding rows beyond the
    // tokenizer become unused [PAD<id>] tokens so that the token count equals the embedding rows.
    GgufVocab vocab = readGgufVocab(run.model, c);
    // tokenizer.chat_template: the template the run trained with (a family as its Jinja
    // equivalent), so llama.cpp serves the format the model learned.
    // A run from before model templates whose "auto" found none keeps the folder's own.
    try {
        vocab.chatTemplate = runChatTemplate(run).jinjaSource();
    } catch (const Error&) {
    }
    // llama.cpp names Mistral "llama" too; qwen2 (q/k/v biases) and qwen3 (q/k norms) have their
    // own architectures, with HF's rotary layout, so no q/k row permutation.
    const std::string arch = ggufArchitecture(c);
    auto u32 = [](int64_t v) { return GgufValue::u32(static_cast<uint32_t>(v)); };

    const bool gpt2 = c.architecture == Architecture::Gpt2;
    std::vector<GgufKeyValue> kv = {
        {"general.architecture", GgufValue::string(arch)},
        {"general.name", GgufValue::string(run.name)},
        {"general.alignment", GgufValue::u32(kGgufAlignment)},
        {"general.file_type", GgufValue::u32(fileType)},
        {"general.quantization_version", GgufValue::u32(2)},
        {arch + ".context_length", u32(c.maxPositions)},
        {arch + ".embedding_length", u32(c.hiddenSize)},
        {arch + ".block_count", u32(c.numLayers)},
        {arch + ".feed_forward_length", u32(c.intermediateSize)},
        {arch + ".attention.head_count", u32(c.numHeads)},
    };
    if (gpt2) {  // learned positions and LayerNorm
        kv.push_back({arch + ".attention.layer_norm_epsilon",
                      GgufValue::f32(static_cast<float>(c.normEps))});
    } else {
        kv.push_back({arch + ".rope.dimension_count", u32(c.rotatedDim())});
        kv.push_back({arch + ".rope.freq_base", GgufValue::f32(static_cast<float>(c.ropeTheta))});
        kv.push_back({arch + ".attention.head_count_kv", u32(c.numKvHeads)});
        kv.push_back({arch + ".attention.layer_norm_rms_epsilon",
                      GgufValue::f32(static_cast<float>(c.normEps))});
    }
    kv.push_back({arch + ".vocab_size", u32(c.vocabSize)});
    const bool gemma3 = c.architecture == Architecture::Gemma3;
    if (gemma3) {
        // Which layers slide, through what window and with which rotary base (llama.cpp would
        // otherwise take five of every six layers and a base of 10,000); linear rope scaling
        // applies to the full layers only, in llama.cpp as here.
        if (c.slidingWindow > 0) {
            std::vector<bool> slides;
            for (int64_t i = 0; i < c.numLayers; ++i)
                slides.push_back(c.layerSlides(static_cast<size_t>(i)));
            kv.push_back({arch + ".attention.sliding_window", u32(c.slidingWindow)});
            kv.push_back({arch + ".attention.sliding_window_pattern", GgufValue::booleans(slides)});
            kv.push_back({arch + ".rope.freq_base_swa",
                          GgufValue::f32(static_cast<float>(
                              c.ropeThetaSliding > 0 ? c.ropeThetaSliding : c.ropeTheta))});
        }
        if (c.ropeScaling.type == "linear") {
            kv.push_back({arch + ".rope.scaling.type", GgufValue::string("linear")});
            kv.push_back({arch + ".rope.scaling.factor",
                          GgufValue::f32(static_cast<float>(c.ropeScaling.factor))});
        }
    }
    const bool phi3 = c.architecture == Architecture::Phi3;
    if (phi3) {
        // What llama.cpp's converter writes; llama.cpp runs phi3 without the sliding window.
        kv.push_back({arch + ".attention.sliding_window", u32(c.slidingWindow)});
        if (c.ropeScaling.type == "longrope") {
            kv.push_back({arch + ".rope.scaling.original_context_length",
                          u32(c.ropeScaling.originalMaxPositions)});
            kv.push_back({arch + ".rope.scaling.attn_factor",
                          GgufValue::f32(static_cast<float>(c.ropeScaling.attentionFactor))});
        }
        if (c.ropeScaling.type == "longrope")
            report.warnings.push_back(
                "llama.cpp picks phi3's LongRoPE factors once, by its context size: the long ones "
                "when started with a context over " +
                std::to_string(c.ropeScaling.originalMaxPositions) +
                " tokens, else the short ones (Tunebench and transformers pick them per pass, by "
                "the positions it reaches)");
        if (c.slidingWindow > 0)
            report.warnings.push_back(
                "llama.cpp runs phi3 without its sliding window (" +
                std::to_string(c.slidingWindow) +
                " positions): beyond that many positions its outputs differ from Tunebench's");
    }
    if (!gpt2 && (gemma3 || c.headDim * c.numHeads !=
                                c.hiddenSize)) {  // llama.cpp assumes hidden / heads otherwise
        kv.push_back({arch + ".attention.key_length", u32(c.headDim)});
        kv.push_back({arch + ".attention.value_length", u32(c.headDim)});
    }
    kv.push_back({"tokenizer.ggml.model", GgufValue::string(vocab.model)});
    if (!vocab.pre.empty())
        kv.push_back({"tokenizer.ggml.pre", GgufValue::string(vocab.pre)});
    kv.push_back({"tokenizer.ggml.tokens", GgufValue::strings(vocab.tokens)});
    if (!vocab.scores.empty())
        kv.push_back({"tokenizer.ggml.scores", GgufValue::f32s(vocab.scores)});
    kv.push_back({"tokenizer.ggml.token_type", GgufValue::i32s(vocab.types)});
    if (vocab.model == "gpt2")
        kv.push_back({"tokenizer.ggml.merges", GgufValue::strings(vocab.merges)});
    if (vocab.bos >= 0)
        kv.push_back({"tokenizer.ggml.bos_token_id", u32(vocab.bos)});
    if (vocab.eos >= 0)
        kv.push_back({"tokenizer.ggml.eos_token_id", u32(vocab.eos)});
    if (vocab.unk >= 0)
        kv.push_back({"tokenizer.ggml.unknown_token_id", u32(vocab.unk)});
    if (vocab.pad >= 0)
        kv.push_back({"tokenizer.ggml.padding_token_id", u32(vocab.pad)});
    kv.push_back({"tokenizer.ggml.add_bos_token", GgufValue::boolean(vocab.addBos)});
    kv.push_back({"tokenizer.ggml.add_eos_token", GgufValue::boolean(vocab.addEos)});
    if (vocab.model == "llama")  // sentencepiece's add_dummy_prefix (false in Gemma's)
        kv.push_back({"tokenizer.ggml.add_space_prefix", GgufValue::boolean(vocab.addSpacePrefix)});
    if (!vocab.chatTemplate.empty())
        kv.push_back({"tokenizer.chat_template", GgufValue::string(vocab.chatTemplate)});

    // Tensors in the model's order (embedding, blocks, final norm, head); a tied head is not
    // written. Llama 3's rope scaling goes first, as the divisors llama.cpp applies to each
    // frequency.
    std::vector<GgufTensor> tensors;
    auto factorTensor = [&tensors](const char* name, const std::vector<float>& factors) {
        tensors.push_back(
            {name, GgufTensorType::F32, {static_cast<int64_t>(factors.size())}, [factors] {
                 return std::string(reinterpret_cast<const char*>(factors.data()),
                                    factors.size() * sizeof(float));
             }});
    };
    if (c.ropeScaling.type == "llama3")
        factorTensor("rope_freqs.weight", llama3RopeFactors(c));
    if (c.ropeScaling.type == "longrope") {  // Phi-3's, as llama.cpp's converter writes them
        const auto& s = c.ropeScaling;
        factorTensor("rope_factors_long.weight", {s.longFactor.begin(), s.longFactor.end()});
        factorTensor("rope_factors_short.weight", {s.shortFactor.begin(), s.shortFactor.end()});
    }
    for (const auto& item : model.named_parameters()) {
        const std::string& name = item.key();
        if (isAdapterTensor(name))  // merged into the weights before
            continue;
        const std::string gguf = ggufTensorName(c, name);
        if (gguf.empty())
            fail("export: tensor '", name,
                 "' has no GGUF name (GGUF export writes plain "
                 "llama/mistral/qwen2/qwen3/gemma3/smollm3/phi3/gpt2 "
                 "weights)");
        const GgufPlacement placement = ggufPlacement(c, name, item.value(), weightType);
        torch::Tensor value =
            placement.transposed ? item.value().detach().t().contiguous() : item.value().detach();
        // Gemma's RMSNorms scale by (1 + weight); llama.cpp's by the weight, so the file holds
        // 1 + weight (in f32, as norms are written), as llama.cpp's converter writes it.
        if (gemma3 && gguf.ends_with("norm.weight"))
            value = value.to(torch::kFloat32) + 1.0;
        GgufTensor t;
        t.name = gguf;
        t.type = placement.type;
        t.shape = value.sizes().vec();
        if (placement.fellBack)
            report.warnings.push_back(gguf + ": rows of " + std::to_string(t.shape.back()) +
                                      " weights are not whole " + ggufTensorTypeName(weightType) +
                                      " blocks; written F16");
        const int64_t heads = ropeHeads(c, gguf);
        t.data = [value, heads, type = t.type] {
            return tensorBytes(heads ? interleaveRopeRows(value, heads) : value, type);
        };
        tensors.push_back(std::move(t));
        if (headCopy && c.tieWordEmbeddings && gguf == "token_embd.weight") {
            tensors.push_back(tensors.back());
            tensors.back().name = "output.weight";
        }
    }
    writeGguf(o.outDir, kv, tensors);
    report.files.push_back(o.outDir);
    report.tensors = static_cast<int64_t>(tensors.size());
}

namespace {

// One adapter tensor of shape `value` (PyTorch order), written in `type`.
GgufTensor adapterTensor(const std::string& name, const torch::Tensor& value, GgufTensorType type)
{
    GgufTensor t;
    t.name = name;
    t.type = type;
    t.shape = value.sizes().vec();
    t.data = [value, type] { return tensorBytes(value, type); };
    return t;
}

// The trainable token rows as rank-k pairs whose product, at llama.cpp's scale alpha / k, is
// exactly each delta in its row: the one-hot entries are k / alpha. Returns the largest change of a
// row.
double appendTokenRowPairs(CausalLM& model, double alpha, GgufTensorType type,
                           std::vector<GgufTensor>& tensors)
{
    const torch::Tensor ids = model.trainableTokenIds();
    if (!ids.defined())
        return 0;
    const int64_t k = ids.size(0), vocab = model.config().vocabSize;
    const torch::Tensor cpuIds = ids.cpu();
    torch::Tensor oneHot = torch::zeros({vocab, k});  // [vocab, k]: column j is row ids[j]
    oneHot.index_put_({cpuIds, torch::arange(k)},
                      torch::full({k}, static_cast<float>(static_cast<double>(k) / alpha)));
    const torch::Tensor delta = model.tokenDelta().detach().cpu().contiguous();
    const torch::Tensor head = model.headTokenDelta().detach().cpu().contiguous();
    // token_embd: llama.cpp looks up rows of lora_a by token and multiplies by lora_b.
    tensors.push_back(adapterTensor("token_embd.weight.lora_a", oneHot, type));
    tensors.push_back(adapterTensor("token_embd.weight.lora_b", delta.t().contiguous(), type));
    // output: the plain layout, lora_b lora_a = scatter of the head's deltas into their rows.
    tensors.push_back(adapterTensor("output.weight.lora_a", head, type));
    tensors.push_back(adapterTensor("output.weight.lora_b", oneHot, type));
    // As for a merged export: what the rows change in the fp32 weights they are added to.
    double change = 0;
    auto measure = [&](const torch::Tensor& w, const torch::Tensor& d) {
        const torch::Tensor rows = w.detach().index_select(0, ids).to(torch::kFloat32);
        change = std::max(change, ((rows + d.to(rows.device())) - rows).abs().max().item<double>());
    };
    measure(model.tokenEmbeddingWeight(), model.tokenDelta().detach());
    if (!model.config().tieWordEmbeddings)
        measure(model.named_parameters()["lm_head.weight"], model.headTokenDelta().detach());
    return change;
}

}  // namespace

void exportGgufLora(CausalLM& model, const TrainConfig& run, const ExportOptions& o,
                    ExportReport& report)
{
    if (run.method != Method::Lora)
        fail("export: --format gguf-lora writes LoRA factors; this is a ", methodName(run.method),
             " run (use --format gguf for the merged model)");
    checkGgufExportable(run);
    const ModelConfig& c = model.config();
    const auto [weightType, fileType] = ggufWeightType(o.dtype);
    if (weightType == GgufTensorType::Q8_0)
        fail("export: a LoRA adapter is written f32, f16 or bf16 (its rank-wide rows are not whole "
             "Q8_0 blocks, "
             "and it is small); quantise the base model instead");
    const std::string arch = ggufArchitecture(c);

    std::vector<GgufTensor> tensors;
    double scaling = 0;
    int64_t rank = 0;
    bool learned = false;
    for (auto& [name, layer] : model.linearLayers()) {
        if (!layer->hasLora())
            continue;
        const std::string gguf = ggufTensorName(c, name + ".weight");
        if (gguf.empty() || (gguf == "output.weight" && c.tieWordEmbeddings))
            fail("export: LoRA on '", name,
                 "' has no llama.cpp tensor to adapt; use --format gguf for the merged "
                 "model");
        const torch::Tensor a = layer->lora_A->weight.detach();  // [rank, in]
        const torch::Tensor b = layer->lora_B->weight.detach();  // [out, rank]
        scaling = layer->loraScaling();
        rank = a.size(0);
        // As for a merged export: what the adapter changes in the fp32 weight it is added to.
        const torch::Tensor w = layer->weight.detach();
        const double change = ((w + layer->loraDelta()) - w).abs().max().item<double>();
        learned = learned || change > 0;
        report.maxAbsChange = std::max(report.maxAbsChange, change);
        const int64_t heads = ropeHeads(c, gguf);
        GgufTensor ta;
        ta.name = gguf + ".lora_a";
        ta.type = weightType;
        ta.shape = a.sizes().vec();
        ta.data = [a, type = weightType] { return tensorBytes(a, type); };
        tensors.push_back(std::move(ta));
        GgufTensor tb;
        tb.name = gguf + ".lora_b";
        tb.type = weightType;
        tb.shape = b.sizes().vec();
        tb.data = [b, heads, type = weightType] {
            return tensorBytes(heads ? interleaveRopeRows(b, heads) : b, type);
        };
        tensors.push_back(std::move(tb));
    }
    if (tensors.empty())
        fail("export: the run has no LoRA factors to write");
    const double alpha = scaling * static_cast<double>(rank);
    const double rowsChange = appendTokenRowPairs(model, alpha, weightType, tensors);
    learned = learned || rowsChange > 0;
    report.maxAbsChange = std::max(report.maxAbsChange, rowsChange);
    if (!learned && !o.force)
        fail("export: the adapter leaves every base weight as it is (nothing was learned); pass "
             "--force to export "
             "anyway");

    const std::vector<GgufKeyValue> kv = {
        {"general.architecture", GgufValue::string(arch)},
        {"general.type", GgufValue::string("adapter")},
        {"general.name", GgufValue::string(run.name)},
        {"general.alignment", GgufValue::u32(kGgufAlignment)},
        {"general.file_type", GgufValue::u32(fileType)},
        {"general.quantization_version", GgufValue::u32(2)},
        {"adapter.type", GgufValue::string("lora")},
        // llama.cpp scales each product by alpha / rank: alpha = scaling x rank keeps ours (rsLoRA
        // included).
        {"adapter.lora.alpha", GgufValue::f32(static_cast<float>(alpha))},
    };
    writeGguf(o.outDir, kv, tensors);
    report.files.push_back(o.outDir);
    report.tensors = static_cast<int64_t>(tensors.size());
}

int64_t roundTripGgufQ8_0(CausalLM& model)
{
    // The tensors a q8_0 export writes as Q8_0 (ggufPlacement, as exportGgufModel); rows are
    // quantised independently, so the q/k row order does not matter.
    torch::NoGradGuard noGrad;
    int64_t changed = 0;
    for (auto& item : model.named_parameters()) {
        const std::string& name = item.key();
        torch::Tensor& p = item.value();
        if (isAdapterTensor(name) || ggufTensorName(model.config(), name).empty())
            continue;
        const GgufPlacement placement =
            ggufPlacement(model.config(), name, p, GgufTensorType::Q8_0);
        if (placement.type != GgufTensorType::Q8_0)
            continue;
        torch::Tensor rows = (placement.transposed ? p.detach().t() : p.detach())
                                 .to(torch::kCPU, torch::kFloat32)
                                 .contiguous();
        roundTripQ8_0(rows.data_ptr<float>(), rows.numel());
        p.copy_(placement.transposed ? rows.t() : rows);
        ++changed;
    }
    return changed;
}

}  // namespace tb
