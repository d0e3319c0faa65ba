// The fine-tuning loop, top to bottom: set up (model, method, data, optimizer, run folder), then per step
// accumulate micro-batch gradients, clip, guard against divergence, update, log, evaluate and checkpoint.
#include "train/trainer.h"

#include "train/chunked_loss.h"

#include "data/record.h"
#include "data/snapshot.h"
#include "data/store.h"
#include "model/registry.h"
#include "memory/estimator.h"
#include "memory/measure.h"
#include "model/safetensors.h"
#include "peft/peft.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>
#include <unistd.h>

namespace tb {
namespace {

using Clock = std::chrono::steady_clock;

// Autocast for a run's precision: bf16 or fp16 compute over fp32 weights; off for fp32.
AutocastGuard precisionAutocast(const torch::Device& device, const std::string& precision)
{
    return AutocastGuard(device.type(), precision == "bf16" || precision == "fp16",
                         precision == "fp16" ? at::kHalf : at::kBFloat16);
}

int64_t statusField(const char* key)
{
    std::ifstream in("/proc/self/status");
    std::string line;
    const size_t n = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, n, key) == 0)
            return std::stoll(line.substr(n + 1)) * 1024;  // kB
    return 0;
}

TokenizeOptions tokenizeOptions(const TrainConfig& c, const std::string& modelDir)
{
    TokenizeOptions o;
    o.lossOnResponsesOnly = c.data.lossOnResponsesOnly;
    o.maxLength = c.data.maxLength;
    if (c.data.chatTemplate == "auto") {
        auto family = detectChatTemplateForModel(modelDir);
        if (!family)
            fail(c.sourcePath, ": key 'data.chat_template' is auto but the model at ", modelDir,
                 " has no recognised chat template: set it to chatml, llama3, inst, alpaca or plain");
        o.family = *family;
    } else {
        auto family = parseChatTemplateName(c.data.chatTemplate);
        if (!family)
            fail(c.sourcePath, ": key 'data.chat_template' is '", c.data.chatTemplate,
                 "' (allowed: auto, chatml, llama3, inst, alpaca, plain)");
        o.family = *family;
    }
    return o;
}

SequenceSet tokenizeAll(const std::vector<Example>& examples, const Tokenizer& tok, const TokenizeOptions& o,
                        bool packing)
{
    std::vector<TokenizedExample> tokenized;
    tokenized.reserve(examples.size());
    for (const auto& e : examples)
        tokenized.push_back(tokenizeExample(tok, e, o));
    return buildSequences(tokenized, o.maxLength, packing);
}

} // namespace

int64_t residentBytes()
{
    return statusField("VmRSS:");
}

PreparedModel prepareModel(const TrainConfig& config)
{
    PreparedModel m;
    ModelConfig modelConfig = loadModelConfig(config.model);
    if (config.device == "auto")
        m.device = torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    else
        m.device = torch::Device(config.device);
    if (m.device.is_cuda() && !torch::cuda::is_available())
        fail(config.sourcePath, ": key 'device' is ", config.device, " but no CUDA device is available");
    if (config.precision == "fp16" && !m.device.is_cuda())
        fail(config.sourcePath, ": key 'precision' fp16 needs a CUDA device (use bf16 or fp32 on the CPU)");
    m.module = createCausalLM(modelConfig);
    m.module->loadWeights(Checkpoint::open(config.model), torch::kFloat32, m.device);
    m.tokenizer = loadTokenizer(config.model);
    applyMethod(*m.module, config, m.tokenizer.get(), config.seed);
    m.module->setGradientCheckpointing(config.gradientCheckpointing);
    return m;
}

PreparedData prepareData(const TrainConfig& c, const Tokenizer& tokenizer)
{
    PreparedData d;
    const TokenizeOptions options = tokenizeOptions(c, c.model);
    auto format = parseExampleFormat(c.data.format);
    if (!format)
        fail(c.sourcePath, ": key 'data.format' is '", c.data.format,
             "' (allowed: auto, alpaca, messages, prompt_completion, text)");
    auto report = [&d](const ExampleFile& f) {
        d.rejectedRows += static_cast<int64_t>(f.rejected.size());
        for (size_t i = 0; i < f.rejected.size() && i < 20; ++i)
            d.warnings.push_back("skipped " + f.rejected[i].location + ": " + f.rejected[i].reason);
        if (f.rejected.size() > 20)
            d.warnings.push_back(std::to_string(f.rejected.size() - 20) + " more rows skipped");
    };
    // Examples come from snapshots of a dataset store (recorded by id and hash) or from JSONL files.
    std::unique_ptr<DataStore> store;
    std::string hashInput;
    auto fromSnapshot = [&](const std::string& role, const std::string& id) {
        SnapshotInfo info;
        const std::vector<SnapshotRecord> records = snapshotRecords(*store, id, &info);
        std::vector<Example> examples;
        for (const SnapshotRecord& r : records) {
            examples.push_back(recordToExample(r.kind, r.fields));
            examples.back().source = store->path() + "#" + id + ":record " + std::to_string(r.recordId);
        }
        d.snapshots[role] = {{"id", info.id}, {"sha256", info.sha256}, {"records", info.records}};
        hashInput += info.sha256;
        return examples;
    };
    std::vector<Example> trainExamples;
    if (!c.data.store.empty()) {
        store = DataStore::open(c.data.store, false);
        trainExamples = fromSnapshot("train", c.data.snapshot);
    } else {
        ExampleFile train = readExampleFile(c.data.trainFile, *format);
        report(train);
        hashInput = sha256File(c.data.trainFile);
        trainExamples = std::move(train.examples);
    }
    std::vector<Example> valExamples;
    if (store && !c.data.valSnapshot.empty()) {
        valExamples = fromSnapshot("validation", c.data.valSnapshot);
    } else if (!c.data.valFile.empty()) {
        ExampleFile val = readExampleFile(c.data.valFile, *format);
        report(val);
        valExamples = std::move(val.examples);
        hashInput += sha256File(c.data.valFile);
    } else if (c.data.valRatio > 0) {
        // A seeded split: the same seed always holds out the same examples.
        auto order = epochOrder(static_cast<int64_t>(trainExamples.size()), c.seed ^ 0x5eed, 0);
        const auto nVal = static_cast<size_t>(std::llround(c.data.valRatio * static_cast<double>(trainExamples.size())));
        std::vector<Example> kept;
        for (size_t i = 0; i < order.size(); ++i)
            (i < nVal ? valExamples : kept).push_back(trainExamples[static_cast<size_t>(order[i])]);
        trainExamples = std::move(kept);
    }
    const std::string dataName = store ? c.data.store + " snapshot " + c.data.snapshot : c.data.trainFile;
    if (trainExamples.empty())
        fail(dataName, ": no training examples left after the validation split");
    d.train = tokenizeAll(trainExamples, tokenizer, options, c.data.packing);
    d.val = tokenizeAll(valExamples, tokenizer, options, false);
    if (store && !c.data.generalSnapshot.empty()) {
        d.general = tokenizeAll(fromSnapshot("general", c.data.generalSnapshot), tokenizer, options, false);
    } else if (!c.data.generalFile.empty()) {
        ExampleFile general = readExampleFile(c.data.generalFile, ExampleFormat::Auto);
        report(general);
        d.general = tokenizeAll(general.examples, tokenizer, options, false);
        hashInput += sha256File(c.data.generalFile);
    }
    if (d.train.sequences.empty())
        fail(dataName, ": no sequences after tokenization");
    if (d.train.truncated > 0)
        d.warnings.push_back(std::to_string(d.train.truncated) + " of " + std::to_string(d.train.examples) +
                             " training examples were cut at max_length " + std::to_string(c.data.maxLength));
    d.hash = sha256Hex(hashInput);
    return d;
}

torch::Tensor tokenLoss(const torch::Tensor& logits, const torch::Tensor& labels, double normaliser)
{
    auto flat = logits.reshape({-1, logits.size(-1)}).to(torch::kFloat32);
    auto loss = torch::nn::functional::cross_entropy(
        flat, labels.reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100).reduction(torch::kSum));
    return loss / normaliser;
}

const std::vector<TensorBlob>& tensorFile(const CheckpointLoad& checkpoint, const std::string& name)
{
    for (const auto& [n, blobs] : checkpoint.data.tensorFiles)
        if (n == name)
            return blobs;
    fail(checkpoint.dir, ": tensor file '", name, "' is missing");
}

void loadTrainableTensors(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                          const std::vector<TensorBlob>& blobs, const std::string& where)
{
    torch::NoGradGuard noGrad;
    std::map<std::string, const TensorBlob*> byName;
    for (const auto& b : blobs)
        byName[b.name] = &b;
    for (const auto& [name, p] : params) {
        auto it = byName.find(name);
        if (it == byName.end())
            fail(where, ": trainable tensor '", name, "' is missing");
        auto t = blobToTensor(*it->second);
        if (t.sizes() != p.sizes())
            fail(where, ": trainable tensor '", name, "' has a different shape than the model's");
        p.copy_(t.to(p.device(), p.scalar_type()));
    }
}

torch::Tensor Trainer::batchLoss(const torch::Tensor& ids, const torch::Tensor& labels, double normaliser)
{
    auto& model = *m_model.module;
    if (m_config.loss != "chunked")
        return tokenLoss(model.forward(ids, nullptr), labels, normaliser);
    // The head is applied chunk by chunk inside the loss: [tokens, vocab] logits never exist at once.
    auto hidden = model.forwardHidden(ids);
    return chunkedCrossEntropy(hidden.reshape({-1, hidden.size(-1)}), model.headWeight(), labels.reshape({-1}),
                               m_config.lossChunkTokens) / normaliser;
}

void Trainer::reportMemory(int64_t width)
{
    TrainConfig method = m_config;
    EstimateOptions o = estimateOptionsFor(m_config, width);  // width: the first micro-batch's padded length
    o.cudaOverhead = m_model.device.is_cuda();
    o.advise = false;
    MemoryEstimate e;
    try {
        e = estimateMemory(m_model.module->config(), method, o);
    } catch (const std::exception& error) {
        if (m_events)
            m_events->onWarning(std::string("memory estimate unavailable: ") + error.what());
        return;
    }
    int64_t weights = 0;
    for (const auto& p : m_model.module->parameters())
        weights += static_cast<int64_t>(p.nbytes());
    MemoryReport r;
    r.items = {{"weights", e.weights, weights, true},
               {"gradients", e.gradients, m_gradientBytes, true},
               {"optimizer_states", e.optimizerStates, m_optimizer->stateBytes(), true},
               {"activations", e.activations + e.logits, m_memForward - m_memLoad, false},
               {"total", e.total, m_memStepPeak, false}};
    nlohmann::json line = {{"type", "memory"}, {"step", m_step + 1}, {"seq", width}};
    for (const auto& item : r.items)
        line[item.key] = {{"estimated", item.estimated}, {"measured", item.measured}};
    m_store->appendMetrics(line);
    if (m_events)
        m_events->onMemoryReport(r);
}

int64_t Trainer::memoryNow() const
{
    return memorySnapshot(m_deviceName).current;
}

Trainer::Trainer(TrainingJob& job) : m_job(job), m_config(job.m_config), m_events(job.m_events) {}

void Trainer::setUp()
{
    const bool resuming = !m_job.m_resumeDir.empty();
    const std::string runDir = resuming ? m_job.m_resumeDir : joinPath(m_config.outputDir, m_config.name);
    if (!resuming && fileExists(joinPath(runDir, "run.json")))
        fail(runDir, ": a run with this name exists (resume it with --resume, or choose another name)");
    m_store = std::make_unique<RunStore>(runDir);
    installCpuMemoryTracking();  // CPU tensor bytes; CUDA has its allocator's statistics
    m_model = prepareModel(m_config);
    m_deviceName = m_model.device.str();
    m_memLoad = memoryNow();
    m_data = prepareData(m_config, *m_model.tokenizer);
    for (const auto& w : m_data.warnings)
        if (m_events)
            m_events->onWarning(w);
    m_totalSteps = plannedSteps(m_config, static_cast<int64_t>(m_data.train.sequences.size()));

    auto params = trainableParameters(*m_model.module);
    if (params.empty())
        fail(m_config.sourcePath, ": the method leaves no parameter to train");
    std::vector<bool> decay;
    for (const auto& [name, p] : params)
        decay.push_back(!noWeightDecay(name));
    m_optimizer = std::make_unique<Optimizer>(params, decay, m_config.optim);
    m_order = epochOrder(static_cast<int64_t>(m_data.train.sequences.size()), m_config.seed, 0);

    if (resuming) {
        auto checkpoint = m_store->loadLatestCheckpoint();
        if (!checkpoint)
            fail(runDir, ": no complete checkpoint to resume from");
        restore(*checkpoint);
        return;
    }
    std::string weightsHash;
    for (const auto& f : std::filesystem::directory_iterator(m_config.model))
        if (f.path().extension() == ".safetensors")
            weightsHash += sha256File(f.path().string());
    nlohmann::json info = {
        {"config", toJson(m_config)},
        {"model", {{"path", m_config.model}, {"hash", sha256Hex(readFile(joinPath(m_config.model, "config.json")) + weightsHash)}}},
        {"data", {{"train_file", m_config.data.trainFile}, {"store", m_config.data.store},
                  {"snapshots", m_data.snapshots}, {"hash", m_data.hash},
                  {"train_sequences", m_data.train.sequences.size()}, {"val_sequences", m_data.val.sequences.size()},
                  {"truncated", m_data.train.truncated}, {"rejected_rows", m_data.rejectedRows}}},
        {"seed", m_config.seed},
        {"planned_steps", m_totalSteps},
        {"trainable_parameters", countTrainable(*m_model.module)},
        {"versions", {{"tunebench", "0.1.0"}, {"torch", TORCH_VERSION}}},
    };
    m_store->writeRunInfo(info);
    if (!m_data.general.sequences.empty())
        m_generalBase = meanLoss(m_data.general);  // before any update: the base model's loss
    if (!m_data.val.sequences.empty())
        m_initialValLoss = evaluate(0).valLoss;    // the starting point of the validation curve
}

void Trainer::restore(const CheckpointLoad& checkpoint)
{
    for (const auto& w : checkpoint.warnings)
        if (m_events)
            m_events->onWarning(w);
    const auto& data = checkpoint.data;
    torch::NoGradGuard noGrad;
    loadTrainableTensors(m_optimizer->params(), tensorFile(checkpoint, "trainable"), checkpoint.dir);
    const auto& s = data.state;
    m_optimizer->loadState(tensorFile(checkpoint, "optimizer"), s.at("optimizer_steps").get<int64_t>());
    const auto& rng = tensorFile(checkpoint, "rng");
    if (!rng.empty()) {
        auto state = torch::empty({static_cast<int64_t>(rng[0].bytes.size())}, torch::kUInt8);
        std::memcpy(state.data_ptr(), rng[0].bytes.data(), rng[0].bytes.size());
        auto generator = at::globalContext().defaultGenerator(torch::kCPU);  // a handle on the global one
        generator.set_state(state);
    }
    m_step = s.at("step").get<int64_t>();
    m_epoch = s.at("epoch").get<int64_t>();
    m_cursor = s.at("cursor").get<int64_t>();
    m_tokensSeen = s.at("tokens_seen").get<int64_t>();
    m_recentLosses = std::deque<double>(s.at("recent_losses").begin(), s.at("recent_losses").end());
    if (s.contains("initial_loss") && !s["initial_loss"].is_null())
        m_initialLoss = s["initial_loss"].get<double>();
    if (s.contains("general_base") && !s["general_base"].is_null())
        m_generalBase = s["general_base"].get<double>();
    if (s.contains("initial_val_loss") && !s["initial_val_loss"].is_null())
        m_initialValLoss = s["initial_val_loss"].get<double>();
    m_lastLoss = s.value("last_loss", 0.0);
    if (s.contains("loss_scale"))
        m_scaler.restore(s["loss_scale"]);
    m_order = epochOrder(static_cast<int64_t>(m_data.train.sequences.size()), m_config.seed, m_epoch);
    m_store->truncateMetrics(m_step);
    m_job.m_summary.resumedFrom = checkpoint.dir;
    if (m_events)
        m_events->onWarning("resumed from " + checkpoint.dir + " (step " + std::to_string(m_step) + ")");
}

nlohmann::json Trainer::positionState() const
{
    return {{"step", m_step},
            {"optimizer_steps", m_optimizer->steps()},
            {"epoch", m_epoch},
            {"cursor", m_cursor},
            {"tokens_seen", m_tokensSeen},
            {"recent_losses", m_recentLosses},
            {"initial_loss", m_initialLoss ? nlohmann::json(*m_initialLoss) : nlohmann::json()},
            {"general_base", m_generalBase ? nlohmann::json(*m_generalBase) : nlohmann::json()},
            {"initial_val_loss", m_initialValLoss ? nlohmann::json(*m_initialValLoss) : nlohmann::json()},
            {"last_loss", m_lastLoss},
            {"loss_scale", m_scaler.state()}};
}

void Trainer::save()
{
    CheckpointData data;
    data.step = m_step;
    std::vector<TensorBlob> trainable;
    for (const auto& [name, p] : m_optimizer->params())
        trainable.push_back(tensorToBlob(name, p));
    data.tensorFiles.emplace_back("trainable", std::move(trainable));
    data.tensorFiles.emplace_back("optimizer", m_optimizer->stateBlobs());
    auto rng = at::globalContext().defaultGenerator(torch::kCPU).get_state().contiguous();
    TensorBlob rngBlob{"cpu", DType::U8, {rng.numel()}, std::string(reinterpret_cast<const char*>(rng.data_ptr()), static_cast<size_t>(rng.numel()))};
    data.tensorFiles.emplace_back("rng", std::vector<TensorBlob>{rngBlob});
    data.state = positionState();
    const std::string dir = m_store->saveCheckpoint(data, m_config.keepCheckpoints);
    if (m_events)
        m_events->onCheckpoint(m_step, dir);
}

std::vector<int64_t> Trainer::nextMicroBatch()
{
    const auto n = static_cast<int64_t>(m_order.size());
    if (m_cursor >= n) {
        ++m_epoch;
        m_cursor = 0;
        m_order = epochOrder(n, m_config.seed, m_epoch);
    }
    const int64_t end = std::min<int64_t>(n, m_cursor + m_config.batchSize);
    std::vector<int64_t> idx(m_order.begin() + m_cursor, m_order.begin() + end);
    m_cursor = end;
    return idx;
}

double Trainer::meanLoss(const SequenceSet& set)
{
    torch::NoGradGuard noGrad;
    auto& model = *m_model.module;
    const bool wasTraining = model.is_training();
    model.eval();
    auto autocast = precisionAutocast(m_model.device, m_config.precision);
    const int32_t pad = m_model.tokenizer->eosId().value_or(0);
    double sum = 0;
    int64_t tokens = 0;
    forEachEvalBatch(set, m_config.batchSize, pad, -1, [&](const TokenBatch& b) {
        auto ids = torch::tensor(b.ids, torch::kInt64).view({b.rows, b.width}).to(m_model.device);
        auto labels = torch::tensor(b.labels, torch::kInt64).view({b.rows, b.width}).to(m_model.device);
        sum += batchLoss(ids, labels, 1.0).item<double>();
        tokens += b.lossTokens;
    });
    if (wasTraining)
        model.train();
    return tokens > 0 ? sum / static_cast<double>(tokens) : 0.0;
}

EvalMetrics Trainer::evaluate(int64_t step)
{
    EvalMetrics e;
    e.step = step;
    resetMemoryPeak(m_deviceName);
    if (!m_data.val.sequences.empty()) {
        e.valLoss = meanLoss(m_data.val);
        e.valPerplexity = std::exp(e.valLoss);
        m_lastValLoss = e.valLoss;
    }
    if (!m_data.general.sequences.empty()) {
        e.generalLoss = meanLoss(m_data.general);
        e.generalLossBase = m_generalBase;
    }
    e.memoryPeak = memorySnapshot(m_deviceName).peak;
    nlohmann::json line = {{"type", "eval"}, {"step", step}, {"val_loss", e.valLoss}, {"val_perplexity", e.valPerplexity},
                           {"memory_peak_bytes", e.memoryPeak}};
    if (e.generalLoss)
        line["general_loss"] = *e.generalLoss;
    if (e.generalLossBase)
        line["general_loss_base"] = *e.generalLossBase;
    m_store->appendMetrics(line);
    if (m_events)
        m_events->onEval(e);
    return e;
}

bool Trainer::step()
{
    auto& model = *m_model.module;
    model.train();
    const auto t0 = Clock::now();
    resetMemoryPeak(m_deviceName);
    const int32_t pad = m_model.tokenizer->eosId().value_or(0);

    std::vector<TokenBatch> micro;
    int64_t lossTokens = 0, tokens = 0;
    for (int i = 0; i < m_config.gradAccum; ++i) {
        const auto indices = nextMicroBatch();
        for (int64_t index : indices)
            tokens += m_data.train.sequences[static_cast<size_t>(index)].length;
        micro.push_back(makeBatch(m_data.train, indices, pad));
        lossTokens += micro.back().lossTokens;
    }
    const double normaliser = std::max<int64_t>(lossTokens, 1);
    const bool fp16 = m_config.precision == "fp16";
    double lossValue = 0;
    for (size_t i = 0; i < micro.size(); ++i) {
        const auto& b = micro[i];
        auto ids = torch::tensor(b.ids, torch::kInt64).view({b.rows, b.width}).to(m_model.device);
        auto labels = torch::tensor(b.labels, torch::kInt64).view({b.rows, b.width}).to(m_model.device);
        torch::Tensor loss;
        {
            auto autocast = precisionAutocast(m_model.device, m_config.precision);
            loss = batchLoss(ids, labels, normaliser);
        }
        if (i == 0)
            m_memForward = memoryNow();
        lossValue += loss.item<double>();
        if (i == 0 && m_config.optim.l2 > 0) {
            torch::Tensor penalty = torch::zeros({}, loss.options());
            for (const auto& [name, p] : m_optimizer->params())
                penalty = penalty + p.pow(2).sum();
            loss = loss + m_config.optim.l2 * penalty;
        }
        (fp16 ? loss * m_scaler.scale() : loss).backward();
        if (i == 0)
            m_memBackward = memoryNow();
    }
    if (fp16) {
        torch::NoGradGuard noGrad;
        for (const auto& [name, p] : m_optimizer->params())
            if (p.grad().defined())
                p.grad().div_(m_scaler.scale());
    }
    m_gradientBytes = 0;
    for (const auto& [name, p] : m_optimizer->params())
        if (p.grad().defined())
            m_gradientBytes += static_cast<int64_t>(p.grad().nbytes());
    const double gradNorm = m_optimizer->clipGradNorm(m_config.optim.clipNorm);

    // Divergence guard: never apply an update computed from a NaN/Inf loss or gradient, or a spike.
    std::optional<Diagnosis> diagnosis;
    if (fp16 && std::isfinite(lossValue)) {
        const double scale = m_scaler.scale();
        const auto outcome = m_scaler.update(std::isfinite(gradNorm));
        if (outcome == DynamicLossScaler::Outcome::Skipped) {
            m_optimizer->zeroGrad();  // fp16 overflow: skip this update and retry with a smaller scale
            if (m_events)
                m_events->onWarning("fp16 gradient overflow at step " + std::to_string(m_step + 1) + " (loss scale " +
                                    std::to_string(scale) + "): update skipped, loss scale now " +
                                    std::to_string(m_scaler.scale()));
            return true;
        }
        if (outcome == DynamicLossScaler::Outcome::Exhausted)
            diagnosis = Diagnosis{m_step + 1, "fp16 gradients overflow even at loss scale 1", gradNorm,
                                  "the gradients exceed fp16's range (65504) without any scaling",
                                  "use precision bf16 (same memory, fp32's range) or fp32, or lower optim.lr"};
    }
    if (!diagnosis && (!std::isfinite(lossValue) || !std::isfinite(gradNorm))) {
        diagnosis = Diagnosis{m_step + 1, !std::isfinite(lossValue) ? "loss is not finite" : "gradient norm is not finite",
                              !std::isfinite(lossValue) ? lossValue : gradNorm,
                              "the learning rate is too high for this model and data, or the data holds a "
                              "degenerate example",
                              "lower optim.lr (e.g. by 10x), keep optim.clip_norm at 1.0, check the examples "
                              "around this step, or use fp32"};
    } else if (!diagnosis && m_config.spikeFactor > 0 &&
               static_cast<int>(m_recentLosses.size()) >= m_config.spikeWindow) {
        const double mean = std::accumulate(m_recentLosses.begin(), m_recentLosses.end(), 0.0) /
                            static_cast<double>(m_recentLosses.size());
        if (lossValue > m_config.spikeFactor * mean) {
            diagnosis = Diagnosis{m_step + 1,
                                  "loss spiked to " + std::to_string(lossValue) + " (" +
                                      std::to_string(lossValue / mean) + "x the recent mean " + std::to_string(mean) + ")",
                                  lossValue, "an update overshot (learning rate too high) or an unusual batch",
                                  "lower optim.lr, add warmup (optim.warmup_ratio 0.05), or raise spike_factor "
                                  "if such batches are expected"};
        }
    }
    if (diagnosis) {
        m_optimizer->zeroGrad();
        m_store->appendMetrics({{"type", "diverged"}, {"step", diagnosis->step}, {"what", diagnosis->what},
                                {"value", std::isfinite(diagnosis->value) ? nlohmann::json(diagnosis->value) : nlohmann::json(nullptr)}});
        if (m_events)
            m_events->onDiverged(*diagnosis);
        return false;
    }

    const double lr = learningRateAt(m_config.optim, m_step, m_totalSteps);
    m_optimizer->step(lr);
    m_memOptimizer = memoryNow();  // weights, gradients and optimizer states all alive
    m_optimizer->zeroGrad();
    m_memStepPeak = memorySnapshot(m_deviceName).peak;
    if (m_optimizer->steps() == 1)
        reportMemory(micro.front().width);
    ++m_step;
    m_tokensSeen += tokens;
    if (!m_initialLoss)
        m_initialLoss = lossValue;
    m_lastLoss = lossValue;
    m_recentLosses.push_back(lossValue);
    while (static_cast<int>(m_recentLosses.size()) > std::max(1, m_config.spikeWindow))
        m_recentLosses.pop_front();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    m_trainSeconds += seconds;
    m_trainTokens += tokens;
    emitStep(lossValue, lr, gradNorm, tokens, seconds);
    return true;
}

void Trainer::emitStep(double loss, double lr, double gradNorm, int64_t tokens, double seconds)
{
    StepMetrics m;
    m.step = m_step;
    m.totalSteps = m_totalSteps;
    m.epoch = static_cast<double>(m_epoch) + static_cast<double>(m_cursor) / static_cast<double>(std::max<size_t>(1, m_order.size()));
    m.tokensSeen = m_tokensSeen;
    m.loss = loss;
    m.lr = lr;
    m.gradNorm = gradNorm;
    m.tokensPerSecond = seconds > 0 ? static_cast<double>(tokens) / seconds : 0;
    const MemorySnapshot now = memorySnapshot(m_deviceName);
    m.memoryCurrent = now.current;
    m.memoryPeak = m_memStepPeak;
    m.memoryReserved = now.source == "cuda" ? now.reserved : 0;
    m.memoryAfterLoad = m_memLoad;
    m.memoryAfterForward = m_memForward;
    m.memoryAfterBackward = m_memBackward;
    m.memoryAfterOptimizer = m_memOptimizer;
    m.memoryResident = residentBytes();
    m_peakMemory = std::max(m_peakMemory, m.memoryPeak);
    // metrics.jsonl gets every step; log_every only thins what the console prints.
    m_store->appendMetrics({{"type", "step"}, {"step", m.step}, {"epoch", m.epoch}, {"tokens", m.tokensSeen},
                                {"loss", m.loss}, {"lr", m.lr}, {"grad_norm", m.gradNorm},
                                {"tokens_per_s", m.tokensPerSecond}, {"memory_bytes", m.memoryCurrent},
                                {"memory_peak_bytes", m.memoryPeak}, {"memory_reserved_bytes", m.memoryReserved},
                                {"memory_phases", {{"load", m.memoryAfterLoad}, {"forward", m.memoryAfterForward},
                                                   {"backward", m.memoryAfterBackward},
                                                   {"optimizer_step", m.memoryAfterOptimizer}}},
                                {"resident_bytes", m.memoryResident}});
    if (m_events)
        m_events->onStep(m);
}

bool Trainer::waitWhilePaused()
{
    while (m_job.m_pauseRequested.load() && !m_job.m_stopRequested.load()) {
        m_job.m_state = JobState::Paused;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (m_job.m_stopRequested.load())
        return false;
    m_job.m_state = JobState::Running;
    return true;
}

void Trainer::run()
{
    setUp();
    auto& s = m_job.m_summary;
    s.runDir = m_store->dir();
    s.trainableParameters = countTrainable(*m_model.module);
    s.totalParameters = 0;
    for (const auto& p : m_model.module->parameters())
        s.totalParameters += p.numel();
    while (m_step < m_totalSteps) {
        if (!waitWhilePaused())
            break;
        if (!step()) {
            m_job.m_pauseRequested = true;  // the guard fired: wait for the user
            continue;
        }
        if (m_config.evalEvery > 0 && m_step % m_config.evalEvery == 0 && m_step < m_totalSteps)
            evaluate(m_step);
        if (m_config.saveEvery > 0 && m_step % m_config.saveEvery == 0 && m_step < m_totalSteps)
            save();
    }
    s.stopped = m_step < m_totalSteps;
    if (!s.stopped)
        evaluate(m_step);
    if (m_step > 0)
        save();  // the final state, or where the user stopped: resumable either way
    s.steps = m_step;
    s.initialLoss = m_initialLoss.value_or(0.0);
    s.finalLoss = m_lastLoss;
    s.valLoss = m_lastValLoss;
    s.initialValLoss = m_initialValLoss;
    s.tokensPerSecond = m_trainSeconds > 0 ? static_cast<double>(m_trainTokens) / m_trainSeconds : 0;
    s.peakMemoryBytes = m_peakMemory;  // tensor memory (tracked CPU allocations or CUDA allocated)
    // Free model and optimizer memory before reporting, so a stopped job leaves nothing behind.
    m_optimizer.reset();
    m_model.module.reset();
}

} // namespace tb
