// Freezing, LoRA injection by target name, bottleneck adapters per block and soft prompt
// initialisation.
#include "peft/peft.h"

#include "model/embedding_scale.h"
#include "peft/trainable_count.h"
#include "peft/trainable_tokens.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

#include <algorithm>

namespace tb {
namespace {

bool endsWith(const std::string& s, const std::string& suffix)
{
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// PEFT's target match: the module name equals the target or ends with "." + target.
bool matchesTarget(const std::string& moduleName, const std::string& target)
{
    return moduleName == target || endsWith(moduleName, "." + target);
}

bool isNormName(const std::string& name)
{
    return name.find("norm") != std::string::npos || name.find("ln_") != std::string::npos;
}

void freezeAll(CausalLM& model)
{
    for (auto& p : model.parameters())
        p.set_requires_grad(false);
}

void trainPrefix(CausalLM& model, const std::string& prefix)
{
    for (auto& item : model.named_parameters())
        if (item.key().rfind(prefix, 0) == 0)
            item.value().set_requires_grad(true);
}

void applyPartial(CausalLM& model, const MethodOptions& run)
{
    const auto& c = model.config();
    const int64_t blocks = static_cast<int64_t>(model.numBlocks());
    if (run.partial.trainableBlocks > blocks)
        fail("key 'partial.trainable_blocks' is ", run.partial.trainableBlocks,
             " but the model has ", blocks, " blocks");
    const std::string layers =
        c.architecture == Architecture::Gpt2 ? "transformer.h." : "model.layers.";
    for (int64_t i = blocks - run.partial.trainableBlocks; i < blocks; ++i)
        trainPrefix(model, layers + std::to_string(i) + ".");
    for (const auto& m : run.partial.modules) {
        if (m == "embeddings" || (m == "lm_head" && c.tieWordEmbeddings)) {
            model.tokenEmbeddingWeight().set_requires_grad(true);
            if (c.architecture == Architecture::Gpt2)
                trainPrefix(model, "transformer.wpe.");
        } else if (m == "lm_head") {
            trainPrefix(model, "lm_head.");
        } else if (m == "norms") {
            for (auto& item : model.named_parameters())
                if (isNormName(item.key()))
                    item.value().set_requires_grad(true);
        } else {
            fail("key 'partial.modules' has '", m, "' (allowed: embeddings, lm_head, norms)");
        }
    }
}

void applyLora(CausalLM& model, const MethodOptions& run)
{
    const auto targets = resolvedLoraTargets(model.config(), run.lora);
    auto layers = model.linearLayers();
    for (const auto& target : targets) {
        int matched = 0;
        for (auto& [name, layer] : layers)
            if (matchesTarget(name, target)) {
                layer->addLora(run.lora.rank, run.lora.alpha, run.lora.dropout, run.lora.rslora);
                ++matched;
            }
        if (matched == 0) {
            std::string allowed;
            for (const auto& a : loraTargetNames(model.config()))
                allowed += (allowed.empty() ? "" : ", ") + a;
            fail("key 'lora.targets' has '", target, "', which matches no layer of this ",
                 model.config().modelType, " model (allowed: ", allowed, ")");
        }
    }
    for (auto& [name, layer] : model.linearLayers())
        if (layer->hasLora()) {
            layer->lora_A->weight.set_requires_grad(true);
            layer->lora_B->weight.set_requires_grad(true);
        }
}

void applyAdapters(CausalLM& model, const MethodOptions& run)
{
    const auto& a = run.adapter;
    const int64_t size = adapterSize(model.config(), a);
    const int64_t hidden = model.config().hiddenSize;
    const auto device = model.tokenEmbeddingWeight().device();
    auto make = [&] {
        BottleneckAdapter adapter(hidden, size, adapterActivationName(a.activation));
        adapter->to(device);
        return adapter;
    };
    for (size_t i = 0; i < model.numBlocks(); ++i) {
        auto& block = model.block(i);
        if (a.kind == AdapterKind::Houlsby)
            block.adapter_attn = block.register_module("adapter_attn", make());
        block.adapter_mlp = block.register_module("adapter_mlp", make());
    }
}

void applyPrompt(CausalLM& model, const MethodOptions& run, const Tokenizer* tokenizer)
{
    const int64_t n = run.prompt.numTokens;
    auto embeddings = model.tokenEmbeddingWeight();
    torch::Tensor prompt;
    if (run.prompt.initText.empty()) {
        // As PEFT's RANDOM init (a fresh nn.Embedding): N(0, 1).
        prompt = torch::randn({n, model.config().hiddenSize},
                              embeddings.options().dtype(torch::kFloat32));
    } else {
        if (!tokenizer)
            fail("key 'prompt.init_text' needs the model's tokenizer");
        auto ids = tokenizer->encode(run.prompt.initText, false);
        if (ids.empty())
            fail("key 'prompt.init_text' tokenizes to nothing");
        // As PEFT's TEXT init: the text's token ids repeated (or cut) to num_tokens.
        std::vector<int64_t> chosen;
        for (int64_t i = 0; i < n; ++i)
            chosen.push_back(ids[static_cast<size_t>(i) % ids.size()]);
        auto index = torch::tensor(chosen, torch::kInt64).to(embeddings.device());
        // PEFT takes them through the embedding module, which scales them (Gemma 3).
        prompt = scaledEmbeddings(embeddings.detach().index_select(0, index),
                                  model.config().embeddingScale)
                     .to(torch::kFloat32)
                     .clone();
    }
    model.setPromptEmbeddings(prompt.to(embeddings.device()));
    model.promptEmbeddings().set_requires_grad(true);
}

}  // namespace

void applyMethod(CausalLM& model, const MethodOptions& run, const Tokenizer* tokenizer,
                 uint64_t seed)
{
    torch::manual_seed(seed);
    if ((run.method == Method::Full || run.method == Method::Partial) &&
        model.quantization().enabled())
        fail("method '", methodName(run.method), "' trains base weights, but they are held ",
             quantKindName(model.quantization().kind),
             "-quantised; use lora, adapter or prompt on a quantised base");
    switch (run.method) {
    case Method::Full:
        for (auto& p : model.parameters())
            p.set_requires_grad(true);
        return;
    case Method::Partial:
        freezeAll(model);
        applyPartial(model, run);
        break;
    case Method::Lora:
        freezeAll(model);
        applyLora(model, run);
        break;
    case Method::Adapter:
        freezeAll(model);
        applyAdapters(model, run);  // new modules: trainable by default
        break;
    case Method::Prompt:
        freezeAll(model);
        applyPrompt(model, run, tokenizer);
        break;
    }
    // The rows of the stop tokens (or those the config names) train beside a frozen embedding and
    // head: trainable parameters, zero deltas.
    model.setTrainableTokens(trainableTokenIds(model.config(), run, tokenizer),
                             !model.config().tieWordEmbeddings);
}

std::vector<std::pair<std::string, torch::Tensor>> trainableParameters(CausalLM& model)
{
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (auto& item : model.named_parameters())
        if (item.value().requires_grad())
            out.emplace_back(item.key(), item.value());
    return out;
}

int64_t countTrainable(CausalLM& model)
{
    int64_t n = 0;
    for (auto& [name, p] : trainableParameters(model))
        n += p.numel();
    return n;
}

void mergeLora(CausalLM& model)
{
    for (auto& [name, layer] : model.linearLayers())
        layer->mergeLora();
}

void unmergeLora(CausalLM& model)
{
    for (auto& [name, layer] : model.linearLayers())
        layer->unmergeLora();
}

bool isAdapterTensor(const std::string& name)
{
    return name.find("lora_") != std::string::npos ||
           name.find("trainable_tokens_delta") != std::string::npos;
}

bool noWeightDecay(const std::string& name)
{
    return endsWith(name, ".bias") || isNormName(name) || name == "prompt_embeddings";
}

}  // namespace tb
