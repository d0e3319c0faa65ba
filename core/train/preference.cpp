// Training on preference pairs, top to bottom: set up (model, method, reference, pairs, optimizer,
// run folder), then per step score each micro-batch's pairs, take the objective's loss, clip,
// guard, update, log; evaluate on the validation pairs and checkpoint like the SFT recipe.
#include "train/preference.h"

#include "memory/measure.h"
#include "model/registry.h"
#include "model/safetensors.h"
#include "peft/peft.h"
#include "train/losses.h"
#include "train/memory_report.h"
#include "train/recipe_parts.h"
#include "train/reward.h"
#include "train/schedule.h"
#include "util/error.h"
#include "util/file_util.h"

#include <chrono>
#include <cmath>
#include <functional>

namespace tb {
namespace {

using Clock = std::chrono::steady_clock;

torch::Tensor toTensor(const std::vector<int64_t>& values, int64_t rows, int64_t width,
                       const torch::Device& device)
{
    return torch::tensor(values, torch::kInt64).view({rows, width}).to(device);
}

// Means of several micro-batches' statistics, weighted by their pairs.
void accumulate(PreferenceStats& total, const PreferenceStats& part)
{
    const auto n = static_cast<double>(total.pairs), m = static_cast<double>(part.pairs);
    if (n + m <= 0)
        return;
    auto mix = [&](double a, double b) { return (a * n + b * m) / (n + m); };
    total.rewardsChosen = mix(total.rewardsChosen, part.rewardsChosen);
    total.rewardsRejected = mix(total.rewardsRejected, part.rewardsRejected);
    total.rewardsMargins = mix(total.rewardsMargins, part.rewardsMargins);
    total.rewardsAccuracies = mix(total.rewardsAccuracies, part.rewardsAccuracies);
    total.logpsChosen = mix(total.logpsChosen, part.logpsChosen);
    total.logpsRejected = mix(total.logpsRejected, part.logpsRejected);
    total.logpsAccuracies = mix(total.logpsAccuracies, part.logpsAccuracies);
    if (part.nllLoss)
        total.nllLoss = mix(total.nllLoss.value_or(0), *part.nllLoss);
    if (part.logOddsRatio)
        total.logOddsRatio = mix(total.logOddsRatio.value_or(0), *part.logOddsRatio);
    total.pairs += part.pairs;
}

const char* kReferenceFile = "reference_logps.json";

// Batches of up to `batch` consecutive indices covering 0..n-1 in order (evaluation passes).
void forEachRange(int64_t n, int batchSize,
                  const std::function<void(const std::vector<int64_t>&)>& f)
{
    const int64_t batch = std::max(1, batchSize);
    for (int64_t start = 0; start < n; start += batch) {
        std::vector<int64_t> indices;
        for (int64_t i = start; i < std::min(n, start + batch); ++i)
            indices.push_back(i);
        f(indices);
    }
}

}  // namespace

PreferenceRecipe::PreferenceRecipe(const TrainConfig& config, std::string resumeDir,
                                   JobControl& control, JobEvents* events)
    : m_config(config), m_resumeDir(std::move(resumeDir)), m_control(control), m_events(events),
      m_guard(config.spikeFactor, config.spikeWindow)
{
}

TrainSummary PreferenceRecipe::run()
{
    setUp();
    int64_t& step = m_position.step;
    while (step < m_totalSteps) {
        if (!m_control.waitWhilePaused())
            break;
        if (!this->step()) {
            m_control.pause();  // the guard fired: wait for the user
            continue;
        }
        const bool more = step < m_totalSteps;
        if (m_config.evalEvery > 0 && step % m_config.evalEvery == 0 && more)
            evaluate(step);
        if (m_config.saveEvery > 0 && step % m_config.saveEvery == 0 && more)
            save();
    }
    TrainSummary& s = m_summary;
    s.stopped = step < m_totalSteps;
    if (!s.stopped)
        evaluate(step);
    if (step > 0)
        save();
    s.steps = step;
    s.initialLoss = m_position.initialLoss.value_or(0.0);
    s.finalLoss = m_position.lastLoss;
    s.valLoss = m_lastValLoss;
    s.valLossStep = m_lastValStep;
    s.initialValLoss = m_position.initialValLoss;
    s.valAccuracy = m_lastValAccuracy;
    s.tokensPerSecond =
        m_trainSeconds > 0 ? static_cast<double>(m_trainTokens) / m_trainSeconds : 0;
    m_optimizer.reset();
    m_reference.reset();
    m_model.module.reset();
    return s;
}

void PreferenceRecipe::setUp()
{
    bool resuming = !m_resumeDir.empty();
    if (m_config.precision == Precision::Fp16)
        fail(m_config.sourcePath, ": key 'precision': objective '",
             objectiveName(m_config.objective), "' trains in fp32 or bf16");
    m_store = openRunStore(m_config, m_resumeDir);
    if (resuming)
        useRecordedTrainableTokens(m_config, m_store->readRunInfo());
    installCpuMemoryTracking();
    m_model = prepareModel(m_config);
    if (m_model.precision.fellBack)
        warn(m_model.precision.path);
    m_device = m_model.device.str();
    const bool reward = m_config.objective == Objective::Reward;
    m_padId = reward ? rewardPadId(m_config.model, *m_model.tokenizer)
                     : m_model.tokenizer->eosId().value_or(0);
    if (reward)
        m_head = newRewardHead(m_model.module->config().hiddenSize, m_config.seed ^ 0x5c0e,
                               m_model.device);
    setUpReference();
    m_memoryAfterLoad = memoryNow();
    m_data = preparePairs(m_config, *m_model.tokenizer);
    const int64_t vocab = m_model.module->config().vocabSize;
    checkTokenIds({m_padId}, vocab, *m_model.tokenizer, m_config, "the pad token");
    for (const PairSet* set : {&m_data.train, &m_data.val})
        for (const PairSequence& p : set->pairs)
            for (const auto* ids : {&p.prompt, &p.chosen, &p.rejected})
                checkTokenIds(*ids, vocab, *m_model.tokenizer, m_config, "the pair of " + p.source);
    for (const auto& w : m_data.warnings)
        warn(w);
    if (!m_config.data.generalFile.empty() || !m_config.data.generalSnapshot.empty())
        warn(cat("data.general_file / general_snapshot are not read by objective '",
                 objectiveName(m_config.objective), "' (the general holdout is an SFT measure)"));
    const auto pairs = static_cast<int64_t>(m_data.train.pairs.size());
    m_totalSteps = plannedSteps(m_config, pairs);

    auto params = trainable();
    if (params.empty())
        fail(m_config.sourcePath, ": the method leaves no parameter to train");
    std::vector<bool> decay;
    for (const auto& [name, p] : params)
        decay.push_back(!noWeightDecay(name));
    m_optimizer = std::make_unique<Optimizer>(params, decay, m_config.optim);
    m_order = orderOfEpoch(0);

    m_summary.runDir = m_store->dir();
    m_summary.trainableParameters = countTrainable(*m_model.module) + (reward ? m_head.numel() : 0);
    m_summary.totalParameters += m_model.module->parameterCount();
    if (reward)
        m_summary.totalParameters += m_head.numel();
    // A run killed before its first checkpoint starts again from step 0 with its run.json.
    std::optional<CheckpointLoad> checkpoint;
    if (resuming) {
        std::string restart;
        checkpoint = resumeCheckpoint(*m_store, true, &restart);
        resuming = checkpoint.has_value();
        if (!resuming)
            warn(restart);
    }
    if (checkpoint) {
        restore(*checkpoint);
    } else if (m_resumeDir.empty()) {  // a new run; a restarted one keeps the run.json it wrote
        nlohmann::json info =
            runInfo(m_config, m_data.data, m_totalSteps, m_summary.trainableParameters);
        info["trainable_tokens"] = trainableTokensRecord(*m_model.module, *m_model.tokenizer);
        if (reward)
            info["reward"] = rewardRunRecord(m_padId);
        m_store->writeRunInfo(info);
    }
    if (m_config.preference.reference == ReferenceKind::Precomputed &&
        needsReference(m_config.objective))
        precomputeReference();
    if (m_events)
        m_events->onStarted(RunPlan{m_store->dir(), m_totalSteps, m_position.step,
                                    plannedSchedule(m_config.optim, m_totalSteps), pairs,
                                    static_cast<int64_t>(m_data.val.pairs.size()),
                                    m_summary.trainableParameters, m_summary.totalParameters,
                                    m_device, std::nullopt, m_model.precision.path});
    if (resuming)
        return;
    if (!m_data.val.pairs.empty()) {
        const EvalMetrics e = evaluate(0);
        m_position.initialValLoss = e.valLoss;
        if (e.preference)
            m_summary.initialValAccuracy = e.preference->rewardsAccuracies;
    }
}

// DPO and IPO compare the policy with a reference: the policy with its method switched off
// (LoRA, adapters, prompt: no copy of the weights), a frozen copy of the base, or stored sums.
void PreferenceRecipe::setUpReference()
{
    if (!needsReference(m_config.objective))
        return;
    switch (m_config.preference.reference) {
    case ReferenceKind::Precomputed:
        return;  // after the data is read
    case ReferenceKind::Auto:
        if (methodCanSwitchOff(m_config.method))
            return;  // the policy with its method switched off (referenceLogps)
        [[fallthrough]];
    case ReferenceKind::Copy: {
        const Checkpoint checkpoint = Checkpoint::open(m_config.model);
        m_reference = createCausalLM(loadModelConfig(m_config.model), checkpoint);
        m_reference->setQuantization(m_config.quant);  // the base as the policy holds it
        m_reference->loadWeights(checkpoint, torch::kFloat32, m_model.device);
        for (auto& p : m_reference->parameters())
            p.set_requires_grad(false);
        m_reference->eval();
        return;
    }
    }
}

std::vector<std::pair<std::string, torch::Tensor>> PreferenceRecipe::trainable()
{
    auto params = trainableParameters(*m_model.module);
    if (m_head.defined())
        params.emplace_back(kRewardHeadName, m_head);
    return params;
}

void PreferenceRecipe::restore(const CheckpointLoad& checkpoint)
{
    for (const auto& w : checkpoint.warnings)
        warn(w);
    m_position = restoreCheckpoint(checkpoint, *m_optimizer, m_guard);
    m_order = orderOfEpoch(m_position.epoch);
    m_store->truncateMetrics(m_position.step);
    m_summary.resumedFrom = checkpoint.dir;
    warn("resumed from " + checkpoint.dir + " (step " + std::to_string(m_position.step) + ")");
}

AnswerLogps PreferenceRecipe::referenceLogps(const torch::Tensor& ids, const torch::Tensor& labels)
{
    torch::NoGradGuard noGrad;
    auto autocast = precisionAutocast(m_model.device, m_model.precision.precision);
    if (m_reference)
        return answerLogps(m_reference->forward(ids, nullptr), labels);
    CausalLM& model = *m_model.module;
    model.setMethodEnabled(false);
    AnswerLogps out;
    try {
        out = answerLogps(model.forward(ids, nullptr), labels);
    } catch (...) {
        model.setMethodEnabled(true);
        throw;
    }
    model.setMethodEnabled(true);
    return out;
}

PreferenceRecipe::Scored
PreferenceRecipe::scorePairs(const PairSet& set, const std::vector<int64_t>& indices, bool training)
{
    const PairBatch b = makePairBatch(set, indices, m_padId);
    const int64_t rows = 2 * b.pairs;
    const auto ids = toTensor(b.ids, rows, b.width, m_model.device);
    CausalLM& model = *m_model.module;
    Scored out;
    out.tokens = b.tokens;
    out.width = b.width;
    if (m_config.objective == Objective::Reward) {
        torch::Tensor scores;
        {
            auto autocast = precisionAutocast(m_model.device, m_model.precision.precision);
            scores = rewardScores(model, m_head, ids, m_padId);
        }
        const auto margins =
            torch::tensor(b.margins, torch::kFloat64).to(torch::kFloat32).to(m_model.device);
        out.loss = rewardLoss(scores.slice(0, 0, b.pairs), scores.slice(0, b.pairs), margins);
        return out;
    }
    const auto labels = toTensor(b.labels, rows, b.width, m_model.device);
    // The reference first: its no-grad pass's temporaries are gone before the policy's forward
    // stores its activations for backward.
    PairLossInput in;
    if (needsReference(m_config.objective)) {
        const Stored* stored = &set == &m_data.train ? (m_storedTrain ? &*m_storedTrain : nullptr)
                                                     : (m_storedVal ? &*m_storedVal : nullptr);
        if (stored) {
            const auto index = torch::tensor(indices, torch::kInt64);
            in.refChosen = stored->chosen.index_select(0, index).to(m_model.device);
            in.refRejected = stored->rejected.index_select(0, index).to(m_model.device);
        } else {
            const AnswerLogps ref = referenceLogps(ids, labels);
            in.refChosen = ref.sum.slice(0, 0, b.pairs);
            in.refRejected = ref.sum.slice(0, b.pairs);
        }
    }
    AnswerLogps policy;
    torch::Tensor chosenNll;
    {
        auto autocast = precisionAutocast(m_model.device, m_model.precision.precision);
        const auto logits = model.forward(ids, nullptr);  // [rows, width, vocab]
        policy = answerLogps(logits, labels);
        if (m_config.objective == Objective::Orpo) {
            // TRL's ORPO: the mean token cross-entropy over the chosen rows' prompt and answer.
            const auto full = toTensor(b.fullLabels, rows, b.width, m_model.device);
            chosenNll = tokenLoss(logits.slice(0, 0, b.pairs), full.slice(0, 0, b.pairs),
                                  full.slice(0, 0, b.pairs).ne(-100).sum().item<double>());
        }
    }
    if (training && m_memoryAfterForward == 0)
        m_memoryAfterForward = memoryNow();
    in.chosen = policy.sum.slice(0, 0, b.pairs);
    in.rejected = policy.sum.slice(0, b.pairs);
    in.chosenCount = policy.count.slice(0, 0, b.pairs);
    in.rejectedCount = policy.count.slice(0, b.pairs);
    in.chosenNll = chosenNll;
    out.loss = preferenceLoss(m_config.objective, m_config.preference, in);
    return out;
}

// One pass of the reference over every pair before the first step; the sums are stored in the
// run folder so a resumed run reads them back instead of recomputing.
void PreferenceRecipe::precomputeReference()
{
    const std::string path = joinPath(m_store->dir(), kReferenceFile);
    auto toStored = [](const nlohmann::json& j) {
        return Stored{torch::tensor(j.at("chosen").get<std::vector<double>>(), torch::kFloat64)
                          .to(torch::kFloat32),
                      torch::tensor(j.at("rejected").get<std::vector<double>>(), torch::kFloat64)
                          .to(torch::kFloat32)};
    };
    if (fileExists(path)) {
        const auto j = nlohmann::json::parse(readFile(path), nullptr, false);
        if (j.is_object() && j.contains("train") &&
            j["train"]["chosen"].size() == m_data.train.pairs.size()) {
            m_storedTrain = toStored(j["train"]);
            m_storedVal = toStored(j["val"]);
            return;
        }
        warn(path + ": does not match the run's pairs; computing the reference again");
    }
    // The policy at its start is the reference: a fresh method adds nothing, full and partial
    // fine-tuning have not updated yet (a resumed run always has the file).
    const bool wasTraining = m_model.module->is_training();
    m_model.module->eval();
    nlohmann::json out;
    for (const auto* set : {&m_data.train, &m_data.val}) {
        std::vector<double> chosen, rejected;
        forEachRange(static_cast<int64_t>(set->pairs.size()), m_config.batchSize,
                     [&](const std::vector<int64_t>& indices) {
                         const PairBatch b = makePairBatch(*set, indices, m_padId);
                         const auto ids = toTensor(b.ids, 2 * b.pairs, b.width, m_model.device);
                         const auto labels =
                             toTensor(b.labels, 2 * b.pairs, b.width, m_model.device);
                         const auto sums = referenceLogps(ids, labels)
                                               .sum.to(torch::kCPU)
                                               .to(torch::kFloat64)
                                               .contiguous();
                         const double* v = sums.data_ptr<double>();
                         chosen.insert(chosen.end(), v, v + b.pairs);
                         rejected.insert(rejected.end(), v + b.pairs, v + 2 * b.pairs);
                     });
        out[set == &m_data.train ? "train" : "val"] = {{"chosen", chosen}, {"rejected", rejected}};
    }
    m_model.module->train(wasTraining);
    writeFileAtomic(path, out.dump());
    m_storedTrain = toStored(out["train"]);
    m_storedVal = toStored(out["val"]);
}

bool PreferenceRecipe::step()
{
    m_model.module->train();
    const auto t0 = Clock::now();
    resetMemoryPeak(m_device);
    m_memoryAfterForward = 0;  // set by the first micro-batch's forward
    std::vector<std::vector<int64_t>> micro;
    int64_t pairs = 0;
    for (int i = 0; i < m_config.gradAccum; ++i) {
        micro.push_back(nextMicroBatch());
        pairs += static_cast<int64_t>(micro.back().size());
        if (epochEnded(m_position, m_order))
            break;
    }
    double lossValue = 0;
    int64_t tokens = 0, width = 0;
    PreferenceStats stats;
    for (size_t i = 0; i < micro.size(); ++i) {
        Scored s = scorePairs(m_data.train, micro[i], true);
        // Each micro-batch's mean over its pairs, weighted so the step's gradient is the mean over
        // all the step's pairs.
        const double share = static_cast<double>(micro[i].size()) / static_cast<double>(pairs);
        lossValue += s.loss.loss.item<double>() * share;
        tokens += s.tokens;
        width = std::max(width, s.width);
        accumulate(stats, s.loss.stats);
        (s.loss.loss * share).backward();
        if (i == 0)
            m_memoryAfterBackward = memoryNow();
    }
    m_gradientBytes = 0;
    for (const auto& [name, p] : m_optimizer->params())
        if (p.grad().defined())
            m_gradientBytes += static_cast<int64_t>(p.grad().nbytes());
    const double gradNorm = m_optimizer->clipGradNorm(m_config.optim.clipNorm);
    const int64_t stepNumber = m_position.step + 1;
    if (auto diagnosis = m_guard.check(stepNumber, lossValue, gradNorm)) {
        m_optimizer->zeroGrad();
        m_store->appendMetrics(toJson(*diagnosis));
        if (m_events)
            m_events->onDiverged(*diagnosis);
        return false;
    }
    const double lr = learningRateAt(m_config.optim, m_position.step, m_totalSteps);
    m_optimizer->step(lr);
    m_memoryAfterOptimizer = memoryNow();
    m_optimizer->zeroGrad();
    m_memoryPeak = memorySnapshot(m_device).peak;
    if (m_optimizer->steps() == 1)
        reportMemory(width);
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
    emitStep(lossValue, stats, lr, gradNorm, tokens, seconds);
    return true;
}

void PreferenceRecipe::emitStep(double loss, const PreferenceStats& stats, double lr,
                                double gradNorm, int64_t tokens, double seconds)
{
    StepMetrics m = stepRecord(m_position, m_totalSteps, m_order.size(), loss, lr, gradNorm, tokens,
                               seconds, m_device,
                               {m_memoryAfterLoad, m_memoryAfterForward, m_memoryAfterBackward,
                                m_memoryAfterOptimizer, m_memoryPeak});
    m.preference = stats;
    m_summary.peakMemoryBytes = std::max(m_summary.peakMemoryBytes, m.memoryPeak);
    m_store->appendMetrics(toJson(m));
    if (m_events)
        m_events->onStep(m);
}

// The objective's mean loss per pair and its statistics over every validation pair.
EvalMetrics PreferenceRecipe::evaluate(int64_t step)
{
    EvalMetrics e;
    e.step = step;
    resetMemoryPeak(m_device);
    const auto n = static_cast<int64_t>(m_data.val.pairs.size());
    if (n > 0) {
        torch::NoGradGuard noGrad;
        const bool wasTraining = m_model.module->is_training();
        m_model.module->eval();
        PreferenceStats stats;
        double sum = 0;
        forEachRange(n, m_config.batchSize, [&](const std::vector<int64_t>& indices) {
            const Scored s = scorePairs(m_data.val, indices, false);
            sum += s.loss.loss.item<double>() * static_cast<double>(indices.size());
            accumulate(stats, s.loss.stats);
        });
        m_model.module->train(wasTraining);
        e.valLoss = sum / static_cast<double>(n);
        e.preference = stats;
        m_lastValLoss = e.valLoss;
        m_lastValStep = e.step;
        m_lastValAccuracy = stats.rewardsAccuracies;
    }
    e.memoryPeak = memorySnapshot(m_device).peak;
    m_store->appendMetrics(toJson(e));
    if (m_events)
        m_events->onEval(e);
    return e;
}

void PreferenceRecipe::save()
{
    const CheckpointData data = checkpointOf(m_position, *m_optimizer, m_guard, nullptr);
    const std::string dir = m_store->saveCheckpoint(data, m_config.keepCheckpoints);
    if (m_events)
        m_events->onCheckpoint(m_position.step, dir);
}

void PreferenceRecipe::reportMemory(int64_t seq)
{
    const StepMemory measured{m_memoryAfterLoad, m_memoryAfterForward, m_memoryPeak,
                              m_gradientBytes, m_optimizer->stateBytes()};
    MemoryReport r;
    // Estimated for the precision the run took: bf16 on a CPU without bf16 instructions ran fp32.
    TrainConfig ran = m_config;
    ran.precision = m_model.precision.precision;
    try {
        r = compareWithEstimate(*m_model.module, ran, measured, m_position.step + 1, seq,
                                m_model.device.is_cuda(), m_reference.get());
    } catch (const std::exception& error) {
        warn(std::string("memory estimate unavailable: ") + error.what());
        return;
    }
    m_store->appendMetrics(toJson(r));
    if (m_events)
        m_events->onMemoryReport(r);
}

std::vector<int64_t> PreferenceRecipe::nextMicroBatch()
{
    return tb::nextMicroBatch(m_position, m_order, m_config.batchSize,
                              [this](int64_t epoch) { return orderOfEpoch(epoch); });
}

std::vector<int64_t> PreferenceRecipe::orderOfEpoch(int64_t epoch) const
{
    return epochOrder(static_cast<int64_t>(m_data.train.pairs.size()), m_config.seed, epoch);
}

int64_t PreferenceRecipe::memoryNow() const
{
    return memorySnapshot(m_device).current;
}

void PreferenceRecipe::warn(const std::string& message)
{
    if (m_events)
        m_events->onWarning(message);
}

}  // namespace tb
