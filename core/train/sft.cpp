// The supervised fine-tuning loop, top to bottom: set up (model, method, data, optimizer, run
// folder), then per step accumulate micro-batch gradients, clip, guard against divergence, update,
// log, evaluate and checkpoint; at the end evaluate, save and free the model.
#include "train/sft.h"

#include "dist/sampler.h"
#include "eval/evaluate.h"
#include "memory/measure.h"
#include "model/model_impl.h"
#include "peft/peft.h"
#include "train/losses.h"
#include "train/memory_report.h"
#include "train/recipe_parts.h"
#include "train/schedule.h"
#include "train/stop_rate.h"
#include "util/error.h"
#include "util/file_util.h"

#include <chrono>
#include <cmath>

namespace tb {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

SftRecipe::SftRecipe(const TrainConfig& config, std::string resumeDir, JobControl& control,
                     JobEvents* events)
    : m_config(config), m_resumeDir(std::move(resumeDir)), m_control(control), m_events(events),
      m_guard(config.spikeFactor, config.spikeWindow)
{
}

TrainSummary SftRecipe::run()
{
    setUp();
    int64_t& step = m_position.step;
    while (step < m_totalSteps) {
        // Several ranks decide together, every step: a rank that stopped alone would leave the
        // others waiting in a collective.
        if (m_group ? stopAgreed() : !m_control.waitWhilePaused())
            break;
        if (!this->step()) {
            // The guard fired: wait for the user; a launched run cannot wait, and every rank's
            // guard saw the same global loss, so every rank stops after this step.
            if (m_group)
                m_control.stop();
            else
                m_control.pause();
            continue;
        }
        const bool more = step < m_totalSteps;
        if (m_config.evalEvery > 0 && step % m_config.evalEvery == 0 && more)
            evaluate(step);
        const int64_t generateEvery = m_config.eval.generateEvery;
        if (generateEvery > 0 && step % generateEvery == 0 && more)
            generationEval(step);
        if (m_config.saveEvery > 0 && step % m_config.saveEvery == 0 && more)
            save();
    }
    TrainSummary& s = m_summary;
    s.stopped = step < m_totalSteps;
    if (!s.stopped) {
        evaluate(step);
        if (m_config.eval.generateEvery > 0)
            generationEval(step);
    }
    if (step > 0)
        save();  // the final state, or where the user stopped: resumable either way
    s.steps = step;
    s.initialLoss = m_position.initialLoss.value_or(0.0);
    s.finalLoss = m_position.lastLoss;
    s.valLoss = m_lastValLoss;
    s.valLossStep = m_lastValStep;
    s.initialValLoss = m_position.initialValLoss;
    s.tokensPerSecond =
        m_trainSeconds > 0 ? static_cast<double>(m_trainTokens) / m_trainSeconds : 0;
    if (!s.stopped)
        measureStops();
    // Free model and optimizer memory before reporting, so a stopped job leaves nothing behind.
    m_optimizer.reset();
    m_sync.reset();
    m_model.module.reset();
    return s;
}

void SftRecipe::setUp()
{
    bool resuming = !m_resumeDir.empty();
    connect();
    openStore();
    if (resuming) {  // the rows the run trains are those it recorded, in its global batch
        const nlohmann::json info = m_store->readRunInfo();
        useRecordedTrainableTokens(m_config, info);
        keepGlobalBatch(info);
    }
    installCpuMemoryTracking();  // CPU tensor bytes; CUDA has its allocator's statistics
    m_model = prepareModel(m_config);
    if (m_model.precision.fellBack)
        warn(m_model.precision.path);
    m_device = m_model.device.str();
    m_memoryAfterLoad = memoryNow();
    m_data = prepareData(m_config, *m_model.tokenizer);
    const int64_t vocab = m_model.module->config().vocabSize;
    checkTokenIds(m_data, vocab, *m_model.tokenizer, m_config);
    checkTokenIds({m_model.tokenizer->eosId().value_or(0)}, vocab, *m_model.tokenizer, m_config,
                  "the pad token (the tokenizer's end of sequence)");
    for (const auto& w : m_data.warnings)
        warn(w);
    // Held-out sequences whose answers max_length cuts away have no loss to average: their
    // "validation loss" read 0.0000 at every evaluation.
    if (!m_data.val.sequences.empty() && m_data.val.lossTokens == 0) {
        warn("the validation split keeps no answer token at data.max_length " +
             std::to_string(m_config.data.maxLength) +
             " (every held-out answer is cut away): no validation loss is reported");
        m_data.val.sequences.clear();
    }
    if (m_config.eval.generateEvery > 0) {
        m_evalCases = eval::sampleCases(eval::casesFromExamples(m_data.heldOut),
                                        m_config.eval.sample, m_config.seed);
        if (m_evalCases.empty())
            warn("eval.generate_every is set, but the validation split has no conversation "
                 "ending with an answer: no generation-based evaluation");
    }
    checkAgreement();
    const auto sequences = static_cast<int64_t>(m_data.train.sequences.size());
    if (m_group && sequences < worldSize())
        fail(m_config.sourcePath, ": ", worldSize(), " ranks but the training set has ", sequences,
             " sequence(s): a rank would never train (use at most ", sequences, " ranks)");
    if (int64_t(m_config.batchSize) * worldSize() > INT32_MAX)
        fail(m_config.sourcePath, ": ", worldSize(), " ranks x batch_size ", m_config.batchSize,
             " is more sequences a step than a run can count");
    if (m_group && int64_t(m_config.batchSize) * worldSize() > sequences)
        warn(std::to_string(worldSize()) + " ranks x batch_size " +
             std::to_string(m_config.batchSize) + " is more than the " + std::to_string(sequences) +
             " training sequences: every step reads the whole set");
    TrainConfig global = m_config;  // a step reads world x batch_size sequences per micro-batch
    global.batchSize *= worldSize();
    m_totalSteps = plannedSteps(global, sequences);
    if (m_orderBatch == 0)
        m_orderBatch = global.batchSize;
    setUpOptimizer();
    m_order = orderOfEpoch(0);

    m_summary.runDir = m_store->dir();
    m_summary.packing = packingStats(m_data.train);
    m_summary.trainableParameters = countTrainable(*m_model.module);
    m_summary.totalParameters += m_model.module->parameterCount();
    // A run killed before its first checkpoint starts again from step 0 with its run.json.
    std::optional<CheckpointLoad> checkpoint;
    if (resuming) {
        std::string restart;
        checkpoint = resumeCheckpoint(*m_store, writer(), &restart);
        resuming = checkpoint.has_value();
        if (!resuming)
            warn(restart);
    }
    if (checkpoint) {
        restore(*checkpoint);
    } else if (m_resumeDir.empty()) {  // a new run; a restarted one keeps the run.json it wrote
        nlohmann::json info =
            runInfo(m_config, m_data, m_totalSteps, m_summary.trainableParameters);
        info["trainable_tokens"] = trainableTokensRecord(*m_model.module, *m_model.tokenizer);
        info["precision_path"] = m_model.precision.path;
        if (m_group)
            info["dist"] = {{"world_size", m_group->size()},
                            {"backend", m_group->backendName()},
                            {"zero", m_config.dist.zero},
                            {"order_batch", m_orderBatch}};
        if (writer())
            m_store->writeRunInfo(info);
    }
    if (m_events)
        m_events->onStarted(RunPlan{m_store->dir(), m_totalSteps, m_position.step,
                                    plannedSchedule(m_config.optim, m_totalSteps), sequences,
                                    static_cast<int64_t>(m_data.val.sequences.size()),
                                    m_summary.trainableParameters, m_summary.totalParameters,
                                    m_device, m_summary.packing, m_model.precision.path});
    if (resuming)
        return;
    // Before any update: the base model's general loss and the start of the validation curve.
    if (!m_data.general.sequences.empty())
        m_position.generalBase = meanLoss(m_data.general);
    if (!m_data.val.sequences.empty())
        if (const std::optional<EvalMetrics> e = evaluate(0))
            m_position.initialValLoss = e->valLoss;
}

void SftRecipe::restore(const CheckpointLoad& checkpoint)
{
    for (const auto& w : checkpoint.warnings)
        warn(w);
    restoreOptimizer(checkpoint);
    if (!m_position.lossScale.is_null())
        m_scaler.restore(m_position.lossScale);
    m_order = orderOfEpoch(m_position.epoch);
    if (writer())
        m_store->truncateMetrics(m_position.step);
    m_summary.resumedFrom = checkpoint.dir;
    warn("resumed from " + checkpoint.dir + " (step " + std::to_string(m_position.step) + ")");
}

// grad_accum micro-batches, forward and backward each: their gradients add up, normalised by the
// loss tokens of the whole step, and come out unscaled (fp16).
SftRecipe::Accumulated SftRecipe::accumulateGradients()
{
    auto& model = *m_model.module;
    const int32_t pad = m_model.tokenizer->eosId().value_or(0);

    // With several ranks each micro-batch is this rank's share of a global one (dist/sampler.h).
    std::vector<std::optional<TokenBatch>> micro;
    int64_t lossTokens = 0, tokens = 0;
    for (int i = 0; i < m_config.gradAccum; ++i) {
        auto indices = nextMicroBatch();
        if (m_group)
            indices = rankShare(indices, m_group->rank(), m_group->size());
        for (int64_t index : indices)
            tokens += m_data.train.sequences[static_cast<size_t>(index)].length;
        micro.push_back(indices.empty() ? std::nullopt
                                        : std::optional(makeBatch(m_data.train, indices, pad)));
        lossTokens += micro.back() ? micro.back()->lossTokens : 0;
        if (epochEnded(m_position, m_order))
            break;
    }
    if (m_group) {  // the loss is normalised over the global step's loss tokens
        torch::Tensor counts = torch::tensor({lossTokens, tokens}, torch::kInt64);
        m_group->allreduceSum({counts}, "the step's token count");
        lossTokens = counts[0].item<int64_t>();
        tokens = counts[1].item<int64_t>();
    }
    const double normaliser = std::max<int64_t>(lossTokens, 1);
    const bool fp16 = m_config.precision == Precision::Fp16;
    Accumulated acc;
    acc.tokens = tokens;
    bool penalised = !writer();  // the L2 penalty joins the loss once, on rank 0
    for (size_t i = 0; i < micro.size(); ++i) {
        if (!micro[i])
            continue;  // this rank's share of the epoch's tail is empty: zero gradients
        if (acc.width == 0)
            acc.width = micro[i]->width;
        if (m_sync && i + 1 == micro.size())
            m_sync->arm();  // the last backward of the step reduces buckets as they complete
        const BatchTensors t = toTensors(*micro[i], m_model.device);
        torch::Tensor loss;
        {
            auto autocast = precisionAutocast(m_model.device, m_model.precision.precision);
            loss = batchLoss(model, t.ids, t.labels, normaliser, m_config, t.packedRows());
        }
        if (i == 0)
            m_memoryAfterForward = memoryNow();
        acc.loss += loss.item<double>();
        if (!penalised && m_config.optim.l2 > 0) {
            torch::Tensor penalty = torch::zeros({}, loss.options());
            for (const auto& [name, p] : trainableParameters(*m_model.module))
                penalty = penalty + p.pow(2).sum();
            loss = loss + m_config.optim.l2 * penalty;
        }
        penalised = true;
        (fp16 ? loss * m_scaler.scale() : loss).backward();
        if (i == 0)
            m_memoryAfterBackward = memoryNow();
    }
    if (m_sync) {
        m_sync->finish();
        torch::Tensor loss = torch::tensor({acc.loss}, torch::kFloat64);
        m_group->allreduceSum({loss}, "the step's loss");
        acc.loss = loss.item<double>();
    }
    std::vector<torch::Tensor> grads;
    if (m_sync) {
        grads = m_sync->gradients();
    } else {
        for (const auto& [name, p] : m_optimizer->params())
            if (p.grad().defined())
                grads.push_back(p.grad());
    }
    if (fp16) {
        torch::NoGradGuard noGrad;
        for (torch::Tensor& g : grads)
            g.div_(m_scaler.scale());
    }
    m_gradientBytes = 0;
    for (const torch::Tensor& g : grads)
        m_gradientBytes += static_cast<int64_t>(g.nbytes());
    return acc;
}

// One optimizer step: accumulate the micro-batches' gradients, clip, guard, update, report.
bool SftRecipe::step()
{
    m_model.module->train();
    const auto t0 = Clock::now();
    resetMemoryPeak(m_device);
    const bool fp16 = m_config.precision == Precision::Fp16;
    const Accumulated acc = accumulateGradients();
    const double lossValue = acc.loss;
    const int64_t tokens = acc.tokens;
    const double gradNorm = m_sync && m_sync->zero() >= 1
                                ? m_sync->clipGradNorm(m_config.optim.clipNorm)
                                : m_optimizer->clipGradNorm(m_config.optim.clipNorm);

    // Never apply an update computed from a NaN/Inf loss or gradient, or a spike.
    const int64_t stepNumber = m_position.step + 1;
    std::optional<Diagnosis> diagnosis;
    if (fp16 && std::isfinite(lossValue)) {
        const double scale = m_scaler.scale();
        const auto outcome = m_scaler.update(std::isfinite(gradNorm));
        if (outcome == DynamicLossScaler::Outcome::Skipped) {
            zeroGrad();  // fp16 overflow: skip this update, retry with a smaller scale
            warn("fp16 gradient overflow at step " + std::to_string(stepNumber) + " (loss scale " +
                 std::to_string(scale) + "): update skipped, loss scale now " +
                 std::to_string(m_scaler.scale()));
            return true;
        }
        if (outcome == DynamicLossScaler::Outcome::Exhausted)
            diagnosis = DivergenceGuard::fp16Exhausted(stepNumber, gradNorm);
    }
    if (!diagnosis)
        diagnosis = m_guard.check(stepNumber, lossValue, gradNorm);
    if (diagnosis) {
        zeroGrad();
        record(toJson(*diagnosis));
        if (m_events)
            m_events->onDiverged(*diagnosis);
        return false;
    }

    const double lr = learningRateAt(m_config.optim, m_position.step, m_totalSteps);
    m_optimizer->step(lr);
    if (m_sync && m_sync->zero() >= 1)
        m_sync->gatherParameters();        // every rank's updated shard to every rank
    m_memoryAfterOptimizer = memoryNow();  // weights, gradients and optimizer states all alive
    zeroGrad();
    m_memoryPeak = memorySnapshot(m_device).peak;
    if (m_optimizer->steps() == 1)
        reportMemory(acc.width);
    ++m_position.step;
    m_position.optimizerSteps = m_optimizer->steps();
    m_position.tokensSeen += tokens;
    if (!m_position.initialLoss)
        m_position.initialLoss = lossValue;
    m_position.lastLoss = lossValue;
    m_guard.record(lossValue);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    m_trainSeconds += seconds;
    m_trainTokens += tokens;
    emitStep(lossValue, lr, gradNorm, tokens, seconds);
    return true;
}

void SftRecipe::emitStep(double loss, double lr, double gradNorm, int64_t tokens, double seconds)
{
    const StepMetrics m = stepRecord(m_position, m_totalSteps, m_order.size(), loss, lr, gradNorm,
                                     tokens, seconds, m_device,
                                     {m_memoryAfterLoad, m_memoryAfterForward,
                                      m_memoryAfterBackward, m_memoryAfterOptimizer, m_memoryPeak});
    m_summary.peakMemoryBytes = std::max(m_summary.peakMemoryBytes, m.memoryPeak);
    record(toJson(m));  // every step; log_every only thins what the console prints
    if (!writer())      // each rank's own progress and memory, for per-rank plots
        m_store->appendRankMetrics(m_group->rank(), toJson(m));
    if (m_events)
        m_events->onStep(m);
}

std::optional<EvalMetrics> SftRecipe::evaluate(int64_t step)
{
    EvalMetrics e;
    e.step = step;
    if (m_data.val.sequences.empty() && m_data.general.sequences.empty())
        return std::nullopt;  // nothing held out (a loss of 0 would read as one)
    resetMemoryPeak(m_device);
    if (!m_data.val.sequences.empty()) {
        const std::optional<double> loss = meanLoss(m_data.val);
        if (!loss)
            return std::nullopt;
        e.valLoss = *loss;
        e.valPerplexity = std::exp(*loss);
        m_lastValLoss = e.valLoss;
        m_lastValStep = step;
    }
    if (!m_data.general.sequences.empty()) {
        e.generalLoss = meanLoss(m_data.general);
        if (!e.generalLoss)
            return std::nullopt;
        e.generalLossBase = m_position.generalBase;
    }
    e.memoryPeak = memorySnapshot(m_device).peak;
    record(toJson(e));
    if (m_events)
        m_events->onEval(e);
    return e;
}

// Mean loss per loss-carrying token over a whole set, in eval mode and the run's precision.
std::optional<double> SftRecipe::meanLoss(const SequenceSet& set)
{
    torch::NoGradGuard noGrad;
    auto& model = *m_model.module;
    const bool wasTraining = model.is_training();
    model.eval();
    auto autocast = precisionAutocast(m_model.device, m_model.precision.precision);
    const int32_t pad = m_model.tokenizer->eosId().value_or(0);
    double sum = 0;
    int64_t tokens = 0;
    struct Stopped {};
    try {
        forEachEvalBatch(set, m_config.batchSize, pad, -1, [&](const TokenBatch& b) {
            if (m_control.stopRequested())
                throw Stopped{};
            const BatchTensors t = toTensors(b, m_model.device);
            sum += batchLoss(model, t.ids, t.labels, 1.0, m_config, t.packedRows()).item<double>();
            tokens += b.lossTokens;
        });
    } catch (const Stopped&) {
        if (wasTraining)
            model.train();
        return std::nullopt;
    }
    if (wasTraining)
        model.train();
    return tokens > 0 ? sum / static_cast<double>(tokens) : 0.0;
}

std::unique_ptr<Model> SftRecipe::modelFacade() const
{
    auto impl = std::make_unique<Model::Impl>();
    impl->module = m_model.module;
    impl->device = m_model.device;
    return Model::fromImpl(std::move(impl));
}

void SftRecipe::generationEval(int64_t step)
{
    if (m_evalCases.empty())
        return;
    const bool training = m_model.module->is_training();
    m_model.module->eval();
    eval::EvalSettings settings;
    settings.metrics = m_config.eval.metrics;
    settings.generation.maxNewTokens = m_config.eval.maxNewTokens;
    settings.batch = std::max(1, m_config.batchSize);
    settings.resamples = 0;  // the plot needs the scores, not their intervals
    const std::unique_ptr<Model> model = modelFacade();
    eval::EvalResult r;
    try {
        r = eval::evaluateModel(*model, *m_model.tokenizer, runChatTemplate(m_config), m_evalCases,
                                settings);
    } catch (const Error& e) {
        // A held-out prompt the model cannot take (past GPT-2's learned positions):
        // the run goes on, and its final checkpoint is still saved.
        m_model.module->train(training);
        warn("generation evaluation at step " + std::to_string(step) + " was skipped: " + e.what());
        return;
    }
    m_model.module->train(training);
    GenerationEvalMetrics g;
    g.step = step;
    g.cases = static_cast<int64_t>(r.predictions.size());
    g.seconds = r.seconds;
    for (const std::string& name : r.metricOrder)
        g.metrics.emplace_back(name, r.metrics.at(name).score);
    record(toJson(g));
    if (m_events)
        m_events->onGenerationEval(g);
}

void SftRecipe::measureStops()
{
    if (m_data.stopProbe.empty())
        return;
    const bool training = m_model.module->is_training();
    m_model.module->eval();
    const std::unique_ptr<Model> model = modelFacade();
    StopRate r;
    try {
        r = measureStopRate(*model, *m_model.tokenizer, runChatTemplate(m_config),
                            m_data.stopProbe);
    } catch (const Error& e) {  // as generationEval: the run has finished and is saved
        m_model.module->train(training);
        warn(std::string("the stop rate was not measured: ") + e.what());
        return;
    }
    m_summary.stopPrompts = r.prompts;
    m_summary.stopStopped = r.stopped;
    m_model.module->train(training);
}

void SftRecipe::save()
{
    if (m_group) {
        saveSharded();
        return;
    }
    const CheckpointData data = checkpointOf(m_position, *m_optimizer, m_guard, m_scaler.state());
    const std::string dir = m_store->saveCheckpoint(data, m_config.keepCheckpoints);
    if (m_events)
        m_events->onCheckpoint(m_position.step, dir);
}

// Estimated (from config.json alone) vs measured memory after the first optimizer step.
void SftRecipe::reportMemory(int64_t seq)
{
    const StepMemory measured{m_memoryAfterLoad, m_memoryAfterForward, m_memoryPeak,
                              m_gradientBytes, m_optimizer->stateBytes()};
    MemoryReport r;
    // Estimated for the precision the run took: bf16 on a CPU without bf16 instructions ran fp32.
    TrainConfig ran = m_config;
    ran.precision = m_model.precision.precision;
    try {
        r = compareWithEstimate(*m_model.module, ran, measured, m_position.step + 1, seq,
                                m_model.device.is_cuda(), nullptr, worldSize());
    } catch (const std::exception& error) {
        warn(std::string("memory estimate unavailable: ") + error.what());
        return;
    }
    record(toJson(r));
    if (m_events)
        m_events->onMemoryReport(r);
}

std::vector<int64_t> SftRecipe::nextMicroBatch()
{
    return tb::nextMicroBatch(m_position, m_order, m_config.batchSize * worldSize(),
                              [this](int64_t epoch) { return orderOfEpoch(epoch); });
}

// The training sequences' order in one epoch: a pure function of the data, seed and epoch, so a
// resumed run reads the same batches.
std::vector<int64_t> SftRecipe::orderOfEpoch(int64_t epoch) const
{
    if (!m_config.data.groupByLength)
        return epochOrder(static_cast<int64_t>(m_data.train.sequences.size()), m_config.seed,
                          epoch);
    std::vector<int32_t> lengths;
    lengths.reserve(m_data.train.sequences.size());
    for (const Sequence& seq : m_data.train.sequences)
        lengths.push_back(seq.length);
    return lengthGroupedOrder(lengths, m_orderBatch, m_config.seed, epoch);
}

int64_t SftRecipe::memoryNow() const
{
    return memorySnapshot(m_device).current;
}

void SftRecipe::record(const nlohmann::json& line) const
{
    if (writer())
        m_store->appendMetrics(line);
}

void SftRecipe::zeroGrad()
{
    m_optimizer->zeroGrad();
    if (m_sync)
        m_sync->zeroGrad();
}

void SftRecipe::warn(const std::string& message)
{
    if (m_events)
        m_events->onWarning(message);
}

}  // namespace tb
