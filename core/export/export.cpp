// Writes PEFT adapter folders (LoRA with PEFT's key names; prompt tuning) and merged Hugging Face
// model folders.
#include "export/export.h"

#include "export/gguf.h"
#include "export/model_folder.h"
#include "model/safetensors.h"
#include "peft/peft.h"
#include "peft/trainable_count.h"
#include "peft/trainable_tokens.h"
#include "train/checkpoint.h"
#include "train/losses.h"
#include "train/optimizer.h"
#include "train/reward.h"
#include "train/setup.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/staged_folder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

namespace tb {
namespace {

using nlohmann::json;

void writeJson(const std::string& path, const json& j, ExportReport& report)
{
    writeFileAtomic(path, j.dump(2) + "\n");
    report.files.push_back(path);
}

// The module path of the token embedding ("model.embed_tokens", "transformer.wte").
std::string embeddingModule(CausalLM& model)
{
    const torch::Tensor w = model.tokenEmbeddingWeight();
    for (const auto& item : model.named_parameters())
        if (item.value().is_same(w))
            return item.key().substr(0, item.key().rfind('.'));
    fail("export: the model's token embedding has no parameter name");
}

// A LoRA run's trainable tokens as PEFT's trainable_token_indices: the rows' values (base row +
// delta), as PEFT's TrainableTokensLayer stores them, under "<module>.token_adapter.
// trainable_tokens_delta". Tied: the list form (PEFT ties the head's rows to the embedding's);
// untied: the dict form with lm_head, since the list form would train the embedding's rows only.
void exportPeftTrainableTokens(CausalLM& model, json& config, std::vector<TensorBlob>& tensors)
{
    const torch::Tensor ids = model.trainableTokenIds();
    if (!ids.defined())
        return;
    const torch::Tensor cpuIds = ids.cpu();
    const std::vector<int64_t> list(cpuIds.data_ptr<int64_t>(),
                                    cpuIds.data_ptr<int64_t>() + cpuIds.numel());
    auto rows = [&](const torch::Tensor& weight, const torch::Tensor& delta) {
        return (weight.detach().index_select(0, ids).to(torch::kFloat32) + delta.detach()).cpu();
    };
    const std::string embedding = embeddingModule(model);
    tensors.push_back(
        tensorToBlob("base_model.model." + embedding + ".token_adapter.trainable_tokens_delta",
                     rows(model.tokenEmbeddingWeight(), model.tokenDelta())));
    if (model.config().tieWordEmbeddings) {
        config["trainable_token_indices"] = list;
        return;
    }
    tensors.push_back(
        tensorToBlob("base_model.model.lm_head.token_adapter.trainable_tokens_delta",
                     rows(model.named_parameters()["lm_head.weight"], model.headTokenDelta())));
    config["trainable_token_indices"] = {{embedding.substr(embedding.rfind('.') + 1), list},
                                         {"lm_head", list}};
}

void exportPeft(CausalLM& model, const TrainConfig& run, const ExportOptions& o,
                ExportReport& report)
{
    const auto& c = model.config();
    json config;
    std::vector<TensorBlob> tensors;
    if (run.method == Method::Lora) {
        for (auto& [name, layer] : model.linearLayers()) {
            if (!layer->hasLora())
                continue;
            // PEFT saves "base_model.model.<module>.lora_A.weight" (the adapter name is dropped on
            // save).
            tensors.push_back(
                tensorToBlob("base_model.model." + name + ".lora_A.weight", layer->lora_A->weight));
            tensors.push_back(
                tensorToBlob("base_model.model." + name + ".lora_B.weight", layer->lora_B->weight));
        }
        config = {{"peft_type", "LORA"},
                  {"task_type", "CAUSAL_LM"},
                  {"base_model_name_or_path", run.model},
                  {"r", run.lora.rank},
                  {"lora_alpha", run.lora.alpha},
                  {"lora_dropout", run.lora.dropout},
                  {"target_modules", resolvedLoraTargets(c, run.lora)},
                  {"bias", "none"},
                  {"fan_in_fan_out", c.architecture == Architecture::Gpt2},
                  {"use_rslora", run.lora.rslora},
                  {"use_dora", false},
                  {"init_lora_weights", true},
                  {"inference_mode", true},
                  {"modules_to_save", nullptr}};
        exportPeftTrainableTokens(model, config, tensors);
    } else if (run.method == Method::Prompt) {
        if (model.trainableTokenIds().defined())
            fail("export: this prompt-tuning run trained token rows (trainable_tokens), which "
                 "PEFT's prompt tuning cannot carry (only its LoRA has trainable_token_indices); "
                 "train with trainable_tokens=[] for a PEFT prompt adapter");
        tensors.push_back(tensorToBlob("prompt_embeddings", model.promptEmbeddings()));
        config = {{"peft_type", "PROMPT_TUNING"},
                  {"task_type", "CAUSAL_LM"},
                  {"base_model_name_or_path", run.model},
                  {"num_virtual_tokens", run.prompt.numTokens},
                  {"token_dim", c.hiddenSize},
                  {"num_transformer_submodules", 1},
                  {"num_attention_heads", c.numHeads},
                  {"num_layers", c.numLayers},
                  {"prompt_tuning_init", run.prompt.initText.empty() ? "RANDOM" : "TEXT"},
                  {"prompt_tuning_init_text",
                   run.prompt.initText.empty() ? json(nullptr) : json(run.prompt.initText)},
                  {"tokenizer_name_or_path",
                   run.prompt.initText.empty() ? json(nullptr) : json(run.model)},
                  {"inference_mode", true}};
    } else {
        fail("export: a ", methodName(run.method),
             " run has no PEFT format (PEFT export covers lora and prompt "
             "runs); use --format merged",
             run.method == Method::Adapter
                 ? " is not possible either: bottleneck "
                   "adapters are not linear and cannot be folded into the base weights"
                 : "");
    }
    writeSafetensors(joinPath(o.outDir, "adapter_model.safetensors"), tensors, {{"format", "pt"}});
    report.files.push_back(joinPath(o.outDir, "adapter_model.safetensors"));
    writeJson(joinPath(o.outDir, "adapter_config.json"), config, report);
    report.tensors = static_cast<int64_t>(tensors.size());
}

// Folds LoRA into the base weights and measures how far the merged weights moved from the base
// checkpoint's (report.maxAbsChange); refuses methods a plain model cannot hold, and an unchanged
// model unless forced.
void mergeAndMeasure(CausalLM& model, const TrainConfig& run, const ExportOptions& o,
                     ExportReport& report)
{
    if (run.method == Method::Adapter || run.method == Method::Prompt)
        fail("export: a ", methodName(run.method), " run cannot be merged into a plain model (",
             run.method == Method::Adapter ? "bottleneck adapters add non-linear layers"
                                           : "a soft prompt is an input, not a weight",
             "); use --format peft",
             run.method == Method::Prompt ? "" : " or keep the run's checkpoint");
    mergeLora(model);
    model.mergeTrainableTokens();  // tied: one row set, in the embedding the head shares
    Checkpoint base = Checkpoint::open(run.model);
    for (const auto& item : model.named_parameters()) {
        const std::string& name = item.key();
        if (isAdapterTensor(name))
            continue;
        const auto* entry = base.find(name);
        if (!entry && name.rfind("transformer.", 0) == 0)
            entry = base.find(name.substr(12));
        if (entry) {
            auto view = tensorView(*entry->file, *entry->info);
            const double change =
                (item.value().detach().cpu().to(torch::kFloat32) - view.to(torch::kFloat32))
                    .abs()
                    .max()
                    .item<double>();
            report.maxAbsChange = std::max(report.maxAbsChange, change);
        }
    }
    if (report.maxAbsChange == 0.0 && !o.force)
        fail("export: the merged weights equal the base model's (nothing was learned); pass "
             "--force to export anyway");
}

// Mean loss per loss-carrying token of `set`'s first sequences, up to kQuantLossTokens of those
// tokens.
constexpr int64_t kQuantLossTokens = 8192;
double sampleLoss(CausalLM& model, const SequenceSet& set, int32_t pad, int64_t batch,
                  int64_t* tokensOut)
{
    torch::NoGradGuard noGrad;
    double sum = 0;
    int64_t tokens = 0;
    forEachEvalBatch(set, batch, pad, kQuantLossTokens, [&](const TokenBatch& b) {
        const BatchTensors t = toTensors(b, torch::kCPU);  // packed when the run packed
        sum +=
            tokenLoss(model.forward(t.ids, nullptr, t.packedRows()), t.labels, 1.0).item<double>();
        tokens += b.lossTokens;
    });
    *tokensOut = tokens;
    return tokens > 0 ? sum / static_cast<double>(tokens) : 0.0;
}

// What Q8_0 costs: the loss on the run's validation sequences before and after the quantisation
// round trip (the model is changed in place; call it last).
void measureQuantisationLoss(CausalLM& model, const TrainConfig& run, const Tokenizer& tokenizer,
                             ExportReport& report)
{
    PreparedData data;
    try {
        data = prepareData(run, tokenizer);
    } catch (const Error& e) {
        report.warnings.push_back(std::string("the quantisation's cost was not measured: ") +
                                  e.what());
        return;
    }
    const SequenceSet& set = data.val.sequences.empty() ? data.train : data.val;
    const int32_t pad = tokenizer.eosId().value_or(0);
    int64_t tokens = 0;
    report.lossFp32 = sampleLoss(model, set, pad, run.batchSize, &tokens);
    roundTripGgufQ8_0(model);
    report.lossQuantized = sampleLoss(model, set, pad, run.batchSize, &tokens);
    report.lossTokens = tokens;
}

// A quantised base, merged: the adapter on the quantised base (what training saw) against the
// dequantised, merged weights, on the validation sequences; leaves the model dequantised and
// merged (mergeAndMeasure then finds it so).
void mergeQuantizedBase(CausalLM& model, const std::string& runDir, const TrainConfig& run,
                        const Tokenizer& tokenizer, ExportReport& report)
{
    report.notes.push_back(
        cat("the run trained on a ", quantKindName(run.quant.kind),
            "-quantised base; the merged weights are the base dequantised into fp32 plus the "
            "adapter, so they carry the quantisation error (measured below)"));
    torch::NoGradGuard noGrad;
    PreparedData data;
    try {
        data = prepareData(run, tokenizer);
    } catch (const Error& e) {
        report.warnings.push_back(std::string("the merge's quantisation error was not measured: ") +
                                  e.what());
        model.dequantizeLinears(torch::kFloat32);
        return;
    }
    const SequenceSet& set = data.val.sequences.empty() ? data.train : data.val;
    const int32_t pad = tokenizer.eosId().value_or(0);
    torch::Tensor before;
    forEachEvalBatch(set, run.batchSize, pad, run.batchSize * 4096, [&](const TokenBatch& b) {
        if (!before.defined())
            before = model.forward(toTensors(b, torch::kCPU).ids, nullptr).to(torch::kFloat32);
    });
    int64_t tokens = 0;
    report.lossAdapterQuantized = sampleLoss(model, set, pad, run.batchSize, &tokens);
    model.dequantizeLinears(torch::kFloat32);
    mergeLora(model);
    report.lossMerged = sampleLoss(model, set, pad, run.batchSize, &report.quantLossTokens);
    {
        LoadedRun original = loadRun(runDir, "cpu", "export", /*quantizedBase=*/false);
        report.lossAdapterOriginal =
            sampleLoss(*original.model.module, set, pad, run.batchSize, &tokens);
    }
    forEachEvalBatch(set, run.batchSize, pad, run.batchSize * 4096, [&](const TokenBatch& b) {
        if (before.defined() && report.logitsMaxDiff == 0) {
            const auto after = model.forward(toTensors(b, torch::kCPU).ids, nullptr);
            report.logitsMaxDiff = (after.to(torch::kFloat32) - before).abs().max().item<double>();
        }
    });
}

// A reward model's head and padding id: the merged folder becomes transformers'
// *ForSequenceClassification (no LM head, score.weight, num_labels 1, pad_token_id for pooling).
struct RewardExport {
    torch::Tensor head;  // [1, hidden]
    int32_t padId = 0;
};

void rewardConfig(json& config, const RewardExport& reward)
{
    std::string arch = config.contains("architectures") && config["architectures"].is_array() &&
                               !config["architectures"].empty()
                           ? config["architectures"][0].get<std::string>()
                           : std::string();
    for (const char* suffix : {"ForCausalLM", "LMHeadModel"})
        if (const size_t at = arch.rfind(suffix); at != std::string::npos)
            arch = arch.substr(0, at);
    // Gemma 3's text-only class has a name of its own (Gemma3ForSequenceClassification is the
    // image-and-text model's).
    if (config.value("model_type", std::string()) == "gemma3_text")
        arch = "Gemma3Text";
    config["architectures"] = {arch + "ForSequenceClassification"};
    config["num_labels"] = 1;
    config["id2label"] = {{"0", "LABEL_0"}};
    config["label2id"] = {{"LABEL_0", 0}};
    config["pad_token_id"] = reward.padId;
}

void exportMerged(CausalLM& model, const TrainConfig& run, const ExportOptions& o,
                  ExportReport& report, const RewardExport* reward = nullptr)
{
    mergeAndMeasure(model, run, o, report);
    std::vector<TensorBlob> tensors;
    int64_t total = 0;
    for (const auto& item : model.named_parameters()) {
        const std::string& name = item.key();
        if (isAdapterTensor(name) || (reward && name == "lm_head.weight"))
            continue;
        tensors.push_back(tensorToBlob(name, item.value()));
        total += static_cast<int64_t>(tensors.back().bytes.size());
    }
    if (reward) {
        tensors.push_back(tensorToBlob(kRewardHeadName, reward->head));
        total += static_cast<int64_t>(tensors.back().bytes.size());
    }
    report.tensors = static_cast<int64_t>(
        tensors.size());  // the LoRA factors and token deltas folded in are not written

    // Shards of at most maxShardBytes, with an index, as transformers writes them.
    std::vector<std::vector<TensorBlob>> shards(1);
    int64_t current = 0;
    for (auto& t : tensors) {
        const auto size = static_cast<int64_t>(t.bytes.size());
        if (current > 0 && current + size > o.maxShardBytes) {
            shards.emplace_back();
            current = 0;
        }
        shards.back().push_back(std::move(t));
        current += size;
    }
    if (shards.size() == 1) {
        writeSafetensors(joinPath(o.outDir, "model.safetensors"), shards[0], {{"format", "pt"}});
        report.files.push_back(joinPath(o.outDir, "model.safetensors"));
    } else {
        json weightMap = json::object();
        for (size_t i = 0; i < shards.size(); ++i) {
            char name[64];
            std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1,
                          shards.size());
            for (const auto& t : shards[i])
                weightMap[t.name] = name;
            writeSafetensors(joinPath(o.outDir, name), shards[i], {{"format", "pt"}});
            report.files.push_back(joinPath(o.outDir, name));
        }
        writeJson(joinPath(o.outDir, "model.safetensors.index.json"),
                  {{"metadata", {{"total_size", total}}}, {"weight_map", weightMap}}, report);
    }
    // config.json states the dtype written (fp32); tokenizer and generation files are copied as
    // they are.
    json config = json::parse(readFile(joinPath(run.model, "config.json")));
    config["torch_dtype"] = "float32";
    if (config.contains("dtype"))
        config["dtype"] = "float32";
    if (reward)
        rewardConfig(config, *reward);
    writeJson(joinPath(o.outDir, "config.json"), config, report);
    for (const std::string& f : tokenizerFileNames()) {
        const std::string from = joinPath(run.model, f);
        if (fileExists(from)) {
            writeFileAtomic(joinPath(o.outDir, f), readFile(from));
            report.files.push_back(joinPath(o.outDir, f));
        }
    }
}

}  // namespace

namespace {

// What a folder export writes: a previous export of either kind may be replaced.
bool exportWrites(const std::string& name)
{
    const auto& tokenizerFiles = tokenizerFileNames();
    return name == "adapter_model.safetensors" || name == "adapter_config.json" ||
           name == "config.json" || name == "model.safetensors" ||
           name == "model.safetensors.index.json" ||
           (name.starts_with("model-") && name.ends_with(".safetensors")) ||
           std::find(tokenizerFiles.begin(), tokenizerFiles.end(), name) != tokenizerFiles.end();
}

void checkExportOptions(const ExportOptions& options)
{
    const std::string& format = options.format;
    if (format != "peft" && format != "merged" && format != "gguf" && format != "gguf-lora" &&
        format != "gguf-base")
        fail("export: unknown format '", format,
             "' (allowed: peft, merged, gguf, gguf-lora, gguf-base)");
    const bool gguf = format.starts_with("gguf");
    if (options.outDir.empty())
        fail(gguf ? "export: missing output file (--out FILE.gguf)"
                  : "export: missing output folder");
    if (gguf && !options.outDir.ends_with(".gguf"))
        fail("export: ", options.outDir,
             ": a GGUF export is one file; give a path ending in .gguf");
    if (gguf && options.dtype != "f32" && options.dtype != "f16" && options.dtype != "bf16" &&
        options.dtype != "q8_0")
        fail("export: unknown GGUF dtype '", options.dtype, "' (allowed: f32, f16, bf16, q8_0)");
}

// The model of `run` as it was before training (any method), as GGUF; with trainable token rows, a
// tied head is written as output.weight too, for the rows' pair of the gguf-lora adapter.
ExportReport exportBaseGguf(TrainConfig run, const ExportOptions& options, bool forAdapter)
{
    const bool headCopy = forAdapter && !trainableTokenIds(loadModelConfig(run.model), run).empty();
    run.method = Method::Full;
    run.device = "cpu";
    checkGgufExportable(run);
    PreparedModel prepared = prepareModel(run);
    prepared.module->eval();
    ExportReport report;
    report.outDir = options.outDir;
    report.format = options.format;
    report.checkpoint = run.model;
    torch::NoGradGuard noGrad;
    exportGgufModel(*prepared.module, run, options, report, headCopy);
    report.bytes = static_cast<int64_t>(std::filesystem::file_size(options.outDir));
    return report;
}

}  // namespace

ExportReport exportModelGguf(const std::string& modelDir, const ExportOptions& options)
{
    ExportOptions o = options;
    o.format = "gguf-base";
    checkExportOptions(o);
    TrainConfig run;
    run.model = modelDir;
    run.sourcePath = joinPath(modelDir, "config.json");
    run.name = std::filesystem::path(modelDir).lexically_normal().filename().string();
    if (run.name.empty())
        run.name =
            std::filesystem::path(modelDir).lexically_normal().parent_path().filename().string();
    return exportBaseGguf(run, o, false);
}

ExportReport exportRun(const std::string& runDir, const ExportOptions& options)
{
    checkExportOptions(options);
    const std::string& format = options.format;
    const bool gguf = format.starts_with("gguf");
    RunStore store(runDir);
    const json info = store.readRunInfo();
    TrainConfig run = runConfig(info, runDir);
    run.device = "cpu";
    if (format == "gguf-base")  // the file a gguf-lora adapter goes with
        return exportBaseGguf(run, options, true);
    if (format == "gguf-lora" && run.method != Method::Lora)
        fail("export: --format gguf-lora writes LoRA factors; this is a ", methodName(run.method),
             " run (use --format gguf for the merged model)");
    const bool reward = run.objective == Objective::Reward;
    if (reward && format != "merged")
        fail("export: a reward model exports as a transformers sequence-classification folder "
             "(--format merged); --format ",
             format, " writes language models");
    if (gguf)
        checkGgufExportable(run);  // before loading anything heavy
    LoadedRun loaded = loadRun(runDir, "cpu", "export");
    auto& model = *loaded.model.module;
    RewardExport head;
    if (reward) {  // the head the recipe kept beside the model, in the same checkpoint file
        head.head = torch::zeros({1, model.config().hiddenSize});
        head.padId = runRewardPadId(info, run.model, *loaded.model.tokenizer);
        loadTrainableTensors({{kRewardHeadName, head.head}},
                             tensorFile(loaded.checkpoint, "trainable"), loaded.checkpoint.dir);
    }

    // A GGUF export is a file, written atomically by its writer. A folder export is written whole
    // into a staging folder beside the chosen one and swapped in at the end, so a kill leaves the
    // previous export or the new one, never a mix (new weights with an old adapter_config.json,
    // an old model.safetensors beside new shards).
    std::optional<StagedFolder> staged;
    ExportOptions o = options;
    if (!gguf) {
        checkReplaceableFolder(options.outDir, exportWrites, "export");
        staged.emplace(options.outDir);
        o.outDir = staged->path();
    }
    ExportReport report;
    report.outDir = options.outDir;
    report.format = options.format;
    report.checkpoint = loaded.checkpoint.dir;
    torch::NoGradGuard noGrad;
    report.quant = run.quant.enabled() ? quantKindName(run.quant.kind) : "";
    if (run.quant.enabled() && options.format == "peft")
        report.notes.push_back(cat(
            "the adapter was trained on a ", quantKindName(run.quant.kind),
            "-quantised base and applies to the original (unquantised) base, as PEFT loads it; "
            "to reproduce training exactly, load that base quantised the same way (bitsandbytes ",
            run.quant.kind == QuantKind::Int8 ? "load_in_8bit"
                                              : "load_in_4bit, bnb_4bit_quant_type ",
            run.quant.kind == QuantKind::Int8 ? "" : quantKindName(run.quant.kind),
            run.quant.doubleQuant ? ", bnb_4bit_use_double_quant" : "", ")"));
    if (run.quant.enabled() && !reward && (options.format == "merged" || options.format == "gguf"))
        mergeQuantizedBase(model, runDir, run, *loaded.model.tokenizer, report);
    else if (run.quant.enabled())
        model.dequantizeLinears(torch::kFloat32);  // gguf-lora writes only the adapter
    if (options.format == "peft") {
        exportPeft(model, run, o, report);
    } else if (options.format == "merged") {
        // A reward model's head is new: the folder differs from the base even when the
        // body did not move.
        o.force = o.force || reward;
        exportMerged(model, run, o, report, reward ? &head : nullptr);
    } else if (options.format == "gguf-lora") {
        exportGgufLora(model, run, options, report);
        report.bytes = static_cast<int64_t>(std::filesystem::file_size(options.outDir));
    } else {
        mergeAndMeasure(model, run, options, report);
        exportGgufModel(model, run, options, report);
        report.bytes = static_cast<int64_t>(std::filesystem::file_size(options.outDir));
        if (options.dtype == "q8_0")
            measureQuantisationLoss(model, run, *loaded.model.tokenizer, report);
    }
    if (staged) {
        staged->commit();
        for (std::string& f : report.files)
            f = joinPath(options.outDir, std::filesystem::path(f).filename().string());
    }
    return report;
}

}  // namespace tb
