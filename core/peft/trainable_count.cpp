// Exact trainable-parameter arithmetic per method (LoRA: r x (in + out) per targeted layer, ...).
#include "peft/trainable_count.h"

#include "peft/defaults.h"
#include "peft/trainable_tokens.h"
#include "util/error.h"
#include "util/join.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace tb {
std::vector<LinearShape> blockLinearShapes(const ModelConfig& c)
{
    const int64_t h = c.hiddenSize;
    if (c.architecture == Architecture::Gpt2)
        return {{"c_attn", h, 3 * h, true},
                {"c_proj", h, h, true},
                {"c_fc", h, c.intermediateSize, true},
                {"mlp.c_proj", c.intermediateSize, h, true}};
    const int64_t q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
    if (c.fusedProjections())  // Phi-3
        return {{"qkv_proj", h, q + 2 * kv, c.qkvBias},
                {"o_proj", q, h, c.oBias},
                {"gate_up_proj", h, 2 * c.intermediateSize, c.mlpBias},
                {"down_proj", c.intermediateSize, h, c.mlpBias}};
    return {{"q_proj", h, q, c.qkvBias},
            {"k_proj", h, kv, c.qkvBias},
            {"v_proj", h, kv, c.qkvBias},
            {"o_proj", q, h, c.oBias},
            {"gate_proj", h, c.intermediateSize, c.mlpBias},
            {"up_proj", h, c.intermediateSize, c.mlpBias},
            {"down_proj", c.intermediateSize, h, c.mlpBias}};
}

namespace {

// Parameters of one whole block.
int64_t blockParameters(const ModelConfig& c)
{
    int64_t n = 0;
    for (const auto& l : blockLinearShapes(c))
        n += l.in * l.out + (l.bias ? l.out : 0);
    if (c.architecture == Architecture::Gpt2)
        return n + 4 * c.hiddenSize;  // ln_1, ln_2 (weight and bias)
    const int64_t norms = c.architecture == Architecture::Gemma3 ? 4 : 2;  // Gemma: sandwich
    return n + norms * c.hiddenSize + (c.qkNorm ? 2 * c.headDim : 0);
}

bool endsWith(const std::string& s, const std::string& suffix)
{
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The block index in "model.layers.N." (llama family) or "transformer.h.N." (gpt2); -1 outside
// blocks.
int64_t blockIndex(const std::string& name)
{
    for (const char* marker : {"layers.", "h."}) {
        const size_t at = name.find(marker);
        if (at == std::string::npos || (at > 0 && name[at - 1] != '.'))
            continue;
        size_t i = at + std::char_traits<char>::length(marker), end = i;
        while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])))
            ++end;
        if (end > i && end < name.size() && name[end] == '.')
            return std::stoll(name.substr(i, end - i));
    }
    return -1;
}

}  // namespace

std::string tensorTrainingRole(const ModelConfig& c, const MethodOptions& run,
                               const std::string& name)
{
    const bool norm =
        name.find("norm") != std::string::npos || name.find("ln_") != std::string::npos;
    const bool embedding = name.find("embed_tokens") != std::string::npos ||
                           name.find("wte") != std::string::npos ||
                           name.find("wpe") != std::string::npos;
    const bool head = name.find("lm_head") != std::string::npos;
    const int64_t block = blockIndex(name);
    switch (run.method) {
    case Method::Full:
        return "trains";
    case Method::Partial: {
        if (block >= 0 && block >= c.numLayers - run.partial.trainableBlocks)
            return "trains";
        for (const auto& m : run.partial.modules)
            if ((m == "embeddings" && embedding) ||
                (m == "lm_head" && (head || (c.tieWordEmbeddings && embedding))) ||
                (m == "norms" && norm))
                return "trains";
        return "frozen";
    }
    case Method::Lora: {
        if (!endsWith(name, ".weight"))
            return "frozen";
        const std::string module = name.substr(0, name.size() - 7);
        for (const auto& t : resolvedLoraTargets(c, run.lora))
            if (module == t || endsWith(module, "." + t))
                return "LoRA";
        return "frozen";
    }
    case Method::Adapter:
    case Method::Prompt:
        return "frozen";
    }
    return "frozen";
}

std::vector<std::string> loraTargetNames(const ModelConfig& config)
{
    std::vector<std::string> names;
    if (config.architecture == Architecture::Gpt2)
        names = {"c_attn", "c_proj", "c_fc"};
    else if (config.fusedProjections())
        names = {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"};
    else
        names = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    if (!config.tieWordEmbeddings)
        names.push_back("lm_head");
    return names;
}

std::vector<std::string> resolvedLoraTargets(const ModelConfig& model, const LoraOptions& lora)
{
    if (!lora.targets.empty())
        return lora.targets;
    return defaultLoraTargets(model.architecture);
}

int64_t adapterSize(const ModelConfig& model, const AdapterOptions& adapter)
{
    if (adapter.size > 0)
        return adapter.size;
    return std::max<int64_t>(1, model.hiddenSize / std::max(1, adapter.reductionFactor));
}

namespace {

// The method's own trainable parameters, without trainable tokens.
int64_t methodParameterCount(const ModelConfig& c, const MethodOptions& run)
{
    const int64_t h = c.hiddenSize;
    switch (run.method) {
    case Method::Full:
        return parameterCount(c);
    case Method::Partial: {
        if (run.partial.trainableBlocks > c.numLayers)
            fail("key 'partial.trainable_blocks' is ", run.partial.trainableBlocks,
                 " but the model has ", c.numLayers, " blocks");
        int64_t n = run.partial.trainableBlocks * blockParameters(c);
        const bool gpt2 = c.architecture == Architecture::Gpt2;
        const int64_t embeddings = c.vocabSize * h + (gpt2 ? c.maxPositions * h : 0);
        bool embeddingsCounted = false;
        for (const auto& m : run.partial.modules) {
            if (m == "embeddings" || (m == "lm_head" && c.tieWordEmbeddings)) {
                if (!embeddingsCounted)
                    n += embeddings;
                embeddingsCounted = true;
            } else if (m == "lm_head") {
                n += c.vocabSize * h;
            } else if (m == "norms") {
                // Every norm outside the trainable blocks (those are already counted): the final
                // norm plus the norms of the frozen blocks.
                const int64_t perNorm = gpt2 ? 2 * h : h;
                const int64_t frozen = c.numLayers - run.partial.trainableBlocks;
                const int64_t blockNorms = c.architecture == Architecture::Gemma3 ? 4 : 2;
                n += perNorm + frozen * blockNorms * perNorm +
                     (c.qkNorm ? frozen * 2 * c.headDim : 0);
            } else {
                fail("key 'partial.modules' has '", m, "' (allowed: embeddings, lm_head, norms)");
            }
        }
        return n;
    }
    case Method::Lora: {
        const auto targets = resolvedLoraTargets(c, run.lora);
        const auto layers = blockLinearShapes(c);
        int64_t perBlock = 0, n = 0;
        for (const auto& t : targets) {
            bool matched = false;
            for (const auto& l : layers) {
                // gpt2's c_proj names both attn.c_proj and mlp.c_proj, as PEFT's suffix match does.
                const std::string last = l.name.substr(
                    l.name.rfind('.') == std::string::npos ? 0 : l.name.rfind('.') + 1);
                if (last == t) {
                    perBlock += run.lora.rank * (l.in + l.out);
                    matched = true;
                }
            }
            if (t == "lm_head" && !c.tieWordEmbeddings) {
                n += run.lora.rank * (h + c.vocabSize);
                matched = true;
            }
            if (!matched) {
                fail("key 'lora.targets' has '", t, "', which matches no layer of this ",
                     c.modelType, " model (allowed: ", join(loraTargetNames(c)), ")");
            }
        }
        return n + perBlock * c.numLayers;
    }
    case Method::Adapter: {
        const int64_t m = adapterSize(c, run.adapter);
        const int64_t perAdapter = h * m + m + m * h + h;
        const int64_t perBlock = run.adapter.kind == AdapterKind::Pfeiffer ? 1 : 2;
        return perAdapter * perBlock * c.numLayers;
    }
    case Method::Prompt:
        return static_cast<int64_t>(run.prompt.numTokens) * h;
    }
    return 0;
}

}  // namespace

int64_t trainableParameterCount(const ModelConfig& c, const MethodOptions& run)
{
    const auto tokens = static_cast<int64_t>(trainableTokenIds(c, run).size());
    return methodParameterCount(c, run) + trainableTokenParameters(c, tokens);
}

}  // namespace tb
