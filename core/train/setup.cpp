// Setting up a run: its device, its base model with the method applied, and its tokenized data.
#include "train/setup.h"

#include "data/ingest/example_file.h"
#include "data/record.h"
#include "data/store/snapshot.h"
#include "data/store/store.h"
#include "model/devices.h"
#include "model/model_impl.h"
#include "model/registry.h"
#include "model/safetensors.h"
#include "peft/peft.h"
#include "train/checkpoint.h"
#include "train/stop_rate.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/sha256.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace tb {
namespace {

TokenizeOptions tokenizeOptions(const TrainConfig& c)
{
    TokenizeOptions o;
    o.lossOnResponsesOnly = c.data.lossOnResponsesOnly;
    o.maxLength = c.data.maxLength;
    o.trainOn = c.data.trainOn;
    o.setTemplate(runChatTemplate(c));
    return o;
}

SequenceSet tokenizeAll(const std::vector<Example>& examples, const Tokenizer& tok,
                        const TokenizeOptions& o, bool packing = false, uint64_t seed = 0)
{
    std::vector<TokenizedExample> tokenized;
    tokenized.reserve(examples.size());
    for (const auto& e : examples)
        tokenized.push_back(tokenizeExample(tok, e, o));
    return buildSequences(tokenized, o.maxLength, packing, seed);
}

}  // namespace

torch::Device runDevice(const TrainConfig& config)
{
    try {
        return parseTorchDevice(config.device);  // the one rule for cpu | cuda | cuda:N | auto
    } catch (const Error& e) {
        fail(config.sourcePath, ": key 'device': ", e.what());
    }
}

// Autocast for a run's precision: bf16 or fp16 compute over fp32 weights; off for fp32.
AutocastGuard precisionAutocast(const torch::Device& device, Precision precision)
{
    return AutocastGuard(device.type(), precision != Precision::Fp32,
                         precision == Precision::Fp16 ? at::kHalf : at::kBFloat16);
}

PreparedModel prepareModel(const TrainConfig& config)
{
    PreparedModel m;
    ModelConfig modelConfig = loadModelConfig(config.model);
    // Learned positions (GPT-2) end at n_positions: a longer sequence cannot be embedded.
    const int64_t positions =
        config.data.maxLength + (config.method == Method::Prompt ? config.prompt.numTokens : 0);
    if (modelConfig.architecture == Architecture::Gpt2 && positions > modelConfig.maxPositions)
        fail(config.sourcePath, ": key 'data.max_length' is ", config.data.maxLength,
             config.method == Method::Prompt
                 ? cat(" (", positions, " positions with prompt.num_tokens)")
                 : std::string(),
             ", but ", config.model, " has ", modelConfig.maxPositions,
             " learned positions (n_positions)");
    m.device = runDevice(config);
    if (config.precision == Precision::Fp16 && !m.device.is_cuda())
        fail(config.sourcePath,
             ": key 'precision' fp16 needs a CUDA device (use bf16 or fp32 on the CPU)");
    const Checkpoint checkpoint = Checkpoint::open(config.model);
    m.module = createCausalLM(modelConfig, checkpoint);
    if (config.quant.head && modelConfig.tieWordEmbeddings)
        fail(config.sourcePath, ": key 'quant_head' needs an untied head, but ", config.model,
             " ties its head to the token embedding (embeddings are never quantised)");
    // The frozen base weights quantised tensor by tensor as they load (QLoRA), before the method
    // adds what trains on top of them.
    m.module->setQuantization(config.quant);
    m.module->loadWeights(checkpoint, torch::kFloat32, m.device);
    m.tokenizer = loadTokenizer(config.model);
    applyMethod(*m.module, config, m.tokenizer.get(), config.seed);
    m.module->setGradientCheckpointing(config.gradientCheckpointing);
    // Supervised runs with the full loss apply the head in the fused loss (train/losses.cpp).
    m.precision =
        chooseMixedPrecision(*m.module, m.device, config.precision,
                             config.objective == Objective::Sft && config.loss == LossKind::Full);
    return m;
}

PrecisionChoice chooseMixedPrecision(CausalLM& model, const torch::Device& device,
                                     Precision requested, bool fusedHeadLoss)
{
    PrecisionChoice c;
    c.precision = requested;
    if (requested == Precision::Fp32) {
        c.path = "fp32";
        return c;
    }
    const std::string native = device.is_cuda() ? "CUDA" : cpuBf16Instructions();
    if (requested == Precision::Bf16 && native.empty()) {
        c.precision = Precision::Fp32;
        c.fellBack = true;
        c.path = "fp32: precision bf16 was asked for, but this CPU has no bf16 instructions "
                 "(AVX512_BF16 or AMX), where bf16 runs slower than fp32";
        return c;
    }
    const std::string half = precisionName(requested);
    const int64_t before = model.castFrozenLinearWeights(
        requested == Precision::Bf16 ? torch::kBFloat16 : torch::kHalf);
    const auto mib = [](int64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20); };
    c.path = half + " autocast" + (device.is_cuda() ? "" : " (" + native + ")") +
             ": matrix products in " + half + ", trainable weights fp32 masters";
    if (!device.is_cuda()) {
        // Whether it pays is the CPU's to say: AVX512_BF16 without AMX can multiply slower than
        // fp32's AVX-512 FMAs, and a run that asked for bf16 should know before it starts.
        char ratio[160];
        const double speedup = cpuHalfMatmulSpeedup(requested == Precision::Bf16);
        std::snprintf(ratio, sizeof ratio, ", %s products measured at %.2fx fp32's speed here%s",
                      half.c_str(), speedup,
                      speedup < 1.0 ? " (slower steps; the memory saving stays)" : "");
        c.path += ratio;
    }
    if (before > 0)
        c.path += ", frozen linear weights held in " + half + " (" + mib(before) + " MiB -> " +
                  mib(before / 2) + " MiB)";
    const int64_t tiedCopy =
        fusedHeadLoss
            ? model.holdTiedHeadCopy(requested == Precision::Bf16 ? torch::kBFloat16 : torch::kHalf)
            : 0;
    if (tiedCopy > 0)
        c.path += ", a " + half + " copy of the tied head (" + mib(tiedCopy) + " MiB)";
    return c;
}

RunExamples runExamples(const TrainConfig& c)
{
    RunExamples d;
    auto report = [&d](const ExampleFile& f) {
        d.rejectedRows += static_cast<int64_t>(f.rejected.size());
        for (size_t i = 0; i < f.rejected.size() && i < 20; ++i)
            d.warnings.push_back("skipped " + f.rejected[i].location + ": " + f.rejected[i].reason);
        if (f.rejected.size() > 20)
            d.warnings.push_back(std::to_string(f.rejected.size() - 20) + " more rows skipped");
    };
    // Examples come from snapshots of a dataset store (recorded by id and hash) or from JSONL
    // files.
    std::unique_ptr<DataStore> store;
    std::string hashInput;
    auto fromSnapshot = [&](const std::string& role, const std::string& id) {
        SnapshotInfo info;
        const std::vector<SnapshotRecord> records = snapshotRecords(*store, id, &info);
        std::vector<Example> examples;
        for (const SnapshotRecord& r : records) {
            const std::string source =
                store->path() + "#" + id + ":record " + std::to_string(r.recordId);
            examples.push_back(recordToExample(r.kind, r.fields, source));
            examples.back().source = source;
        }
        d.snapshots[role] = {{"id", info.id}, {"sha256", info.sha256}, {"records", info.records}};
        hashInput += info.sha256;
        return examples;
    };
    if (!c.data.store.empty()) {
        store = DataStore::open(c.data.store, false);
        d.train = fromSnapshot("train", c.data.snapshot);
    } else {
        ExampleFile train = readExampleFile(c.data.trainFile, c.data.format);
        report(train);
        hashInput = sha256File(c.data.trainFile);
        d.train = std::move(train.examples);
    }
    if (store && !c.data.valSnapshot.empty()) {
        d.val = fromSnapshot("validation", c.data.valSnapshot);
    } else if (!c.data.valFile.empty()) {
        ExampleFile val = readExampleFile(c.data.valFile, c.data.format);
        report(val);
        d.val = std::move(val.examples);
        hashInput += sha256File(c.data.valFile);
    } else if (c.data.valRatio > 0) {
        splitValidation(d.train, d.val, c.data.valRatio, c.seed);
    }
    d.dataName = store ? c.data.store + " snapshot " + c.data.snapshot : c.data.trainFile;
    if (d.train.empty())
        fail(d.dataName, ": no training examples left after the validation split");
    if (store && !c.data.generalSnapshot.empty()) {
        d.general = fromSnapshot("general", c.data.generalSnapshot);
    } else if (!c.data.generalFile.empty()) {
        ExampleFile general = readExampleFile(c.data.generalFile, ExampleFormat::Auto);
        report(general);
        d.general = std::move(general.examples);
        hashInput += sha256File(c.data.generalFile);
    }
    d.hash = sha256Hex(hashInput);
    return d;
}

PreparedData prepareData(const TrainConfig& c, const Tokenizer& tokenizer)
{
    PreparedData d;
    const TokenizeOptions options = tokenizeOptions(c);
    RunExamples examples = runExamples(c);
    d.rejectedRows = examples.rejectedRows;
    d.warnings = examples.warnings;
    d.snapshots = examples.snapshots;
    d.hash = examples.hash;
    d.stopProbe = stopProbeExamples(examples.val.empty() ? examples.train : examples.val);
    // Packed bins depend on the data and the seed alone: a resumed run packs the same bins.
    d.train = tokenizeAll(examples.train, tokenizer, options, c.data.packing, c.seed);
    d.val = tokenizeAll(examples.val, tokenizer, options);
    d.general = tokenizeAll(examples.general, tokenizer, options);
    if (d.train.sequences.empty())
        fail(examples.dataName, ": no sequences after tokenization");
    // A sequence whose loss mask is empty (its response cut away at max_length) teaches nothing:
    // a run of only such would report a loss of 0 and change no weight.
    const auto learns = [](const Sequence& s) {
        return std::any_of(s.labels.begin(), s.labels.end(), [](int32_t l) { return l >= 0; });
    };
    const auto silent =
        static_cast<int64_t>(std::count_if(d.train.sequences.begin(), d.train.sequences.end(),
                                           [&](const Sequence& s) { return !learns(s); }));
    if (silent == static_cast<int64_t>(d.train.sequences.size()))
        fail(examples.dataName, ": no training sequence keeps a token to learn from at max_length ",
             c.data.maxLength,
             " (the responses are cut away, or the loss covers nothing); raise data.max_length or "
             "check data.train_on");
    if (silent > 0)
        d.warnings.push_back(std::to_string(silent) + " of " +
                             std::to_string(d.train.sequences.size()) +
                             " training sequences keep no token to learn from at max_length " +
                             std::to_string(c.data.maxLength) + ": they add nothing");
    if (d.train.truncated > 0)
        d.warnings.push_back(
            std::to_string(d.train.truncated) + " of " + std::to_string(d.train.examples) +
            " training examples were cut at max_length " + std::to_string(c.data.maxLength));
    d.heldOut = std::move(examples.val);
    return d;
}

void checkTokenIds(const std::vector<int32_t>& ids, int64_t vocab, const Tokenizer& tokenizer,
                   const TrainConfig& config, const std::string& where)
{
    const auto bad =
        std::find_if(ids.begin(), ids.end(), [vocab](int32_t id) { return id < 0 || id >= vocab; });
    if (bad == ids.end())
        return;
    const int32_t id = *bad;
    const std::string piece =
        id >= 0 && id < tokenizer.vocabSize() ? " ('" + tokenizer.idToPiece(id) + "')" : "";
    fail(config.sourcePath, ": ", where, " holds token id ", id, piece, " at position ",
         bad - ids.begin(), ", but ", joinPath(config.model, "config.json"), " has vocab_size ",
         vocab,
         ": the tokenizer has tokens the model's embedding lacks (a chat template's markers or a "
         "pad token added without resizing the embedding); use the model's own template or a "
         "model whose embedding holds them");
}

void checkTokenIds(const PreparedData& data, int64_t vocab, const Tokenizer& tokenizer,
                   const TrainConfig& config)
{
    const std::pair<const SequenceSet*, const char*> sets[] = {
        {&data.train, "training"}, {&data.val, "validation"}, {&data.general, "general"}};
    for (const auto& [set, role] : sets)
        for (size_t i = 0; i < set->sequences.size(); ++i)
            checkTokenIds(set->sequences[i].ids, vocab, tokenizer, config,
                          cat(role, " sequence ", i + 1, " of ", set->sequences.size()));
}

nlohmann::json runInfo(const TrainConfig& config, const PreparedData& data, int64_t plannedSteps,
                       int64_t trainableParameters)
{
    const std::optional<PackingStats> packing = packingStats(data.train);
    return runInfo(config,
                   {{"train_file", config.data.trainFile},
                    {"store", config.data.store},
                    {"snapshots", data.snapshots},
                    {"hash", data.hash},
                    {"train_sequences", data.train.sequences.size()},
                    {"val_sequences", data.val.sequences.size()},
                    {"truncated", data.train.truncated},
                    {"rejected_rows", data.rejectedRows},
                    {"packing", packing ? toJson(*packing) : nlohmann::json(nullptr)}},
                   plannedSteps, trainableParameters);
}

std::string modelFolderHash(const std::string& folder)
{
    std::vector<std::string> files;
    for (const auto& f : std::filesystem::directory_iterator(folder))
        if (f.path().extension() == ".safetensors")
            files.push_back(f.path().string());
    std::sort(files.begin(), files.end());  // directory order is the file system's
    std::string weightsHash;
    for (const std::string& f : files)
        weightsHash += sha256File(f);
    return sha256Hex(readFile(joinPath(folder, "config.json")) + weightsHash);
}

nlohmann::json runInfo(const TrainConfig& config, const nlohmann::json& data, int64_t plannedSteps,
                       int64_t trainableParameters)
{
    const std::string modelHash = modelFolderHash(config.model);
    return {
        {"config", toJson(config)},
        {"model", {{"path", config.model}, {"hash", modelHash}}},
        {"data", data},
        {"seed", config.seed},
        {"planned_steps", plannedSteps},
        {"trainable_parameters", trainableParameters},
        {"versions", {{"tunebench", "0.1.0"}, {"torch", TORCH_VERSION}}},
    };
}

nlohmann::json trainableTokensRecord(CausalLM& model, const Tokenizer& tokenizer)
{
    nlohmann::json ids = nlohmann::json::array(), tokens = nlohmann::json::array();
    if (const torch::Tensor t = model.trainableTokenIds(); t.defined()) {
        const torch::Tensor host = t.cpu().contiguous();  // one copy: begin and end in it
        for (int64_t id : std::vector<int64_t>(host.data_ptr<int64_t>(),
                                               host.data_ptr<int64_t>() + host.numel())) {
            ids.push_back(id);
            tokens.push_back(id < tokenizer.vocabSize()
                                 ? tokenizer.idToPiece(static_cast<int32_t>(id))
                                 : std::string());
        }
    }
    return {{"ids", ids}, {"tokens", tokens}};
}

void useRecordedTrainableTokens(TrainConfig& config, const nlohmann::json& info)
{
    config.trainableTokens = {false, {}};
    const auto it = info.find("trainable_tokens");
    if (it == info.end() || !it->is_object() || !it->contains("ids"))
        return;
    for (const auto& id : it->at("ids"))
        config.trainableTokens.tokens.push_back({id.get<int64_t>(), ""});
}

LoadedRun loadRun(const std::string& runDir, const std::string& device, const char* purpose,
                  bool quantizedBase)
{
    RunStore store(runDir);
    LoadedRun r;
    r.info = store.readRunInfo();
    r.config = runConfig(r.info, runDir);
    r.config.device = device;
    if (!quantizedBase)
        r.config.quant = {};
    std::string skipped;
    auto checkpoint = store.loadLatestCheckpoint(&skipped);
    if (!checkpoint)
        fail(runDir, ": no complete checkpoint to ", purpose,
             skipped.empty() ? std::string() : ": " + skipped);
    r.checkpoint = std::move(*checkpoint);
    r.model = prepareModel(r.config);
    loadTrainableTensors(trainableParameters(*r.model.module),
                         tensorFile(r.checkpoint, "trainable"), r.checkpoint.dir);
    r.model.module->eval();
    return r;
}

TrainConfig runConfig(const nlohmann::json& info, const std::string& runDir)
{
    TrainConfig config = parseTrainConfig(info.at("config"), joinPath(runDir, "run.json"));
    useRecordedTrainableTokens(config, info);
    return config;
}

}  // namespace tb
