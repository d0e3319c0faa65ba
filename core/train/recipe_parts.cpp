// What the recipes share: run folders, micro-batches, step records and checkpoints.
#include "train/recipe_parts.h"

#include "memory/measure.h"
#include "util/error.h"
#include "util/file_util.h"

namespace tb {

std::unique_ptr<RunStore> openRunStore(const TrainConfig& config, const std::string& resumeDir)
{
    const bool resuming = !resumeDir.empty();
    const std::string runDir = resuming ? resumeDir : joinPath(config.outputDir, config.name);
    if (!resuming && fileExists(joinPath(runDir, "run.json")))
        fail(runDir,
             ": a run with this name exists (resume it with --resume, or choose another name)");
    return std::make_unique<RunStore>(RunStore::create(runDir));
}

std::optional<CheckpointLoad> resumeCheckpoint(const RunStore& store, bool writes,
                                               std::string* restart)
{
    std::string skipped;
    std::optional<CheckpointLoad> checkpoint = store.loadLatestCheckpoint(&skipped);
    // A step-N folder appears whole (renamed into place once written): one that does not load
    // was damaged afterwards, and starting again would overwrite the run's metrics and it.
    if (!checkpoint && !skipped.empty())
        fail(store.dir(), ": no checkpoint can be resumed and nothing was changed: ", skipped,
             ". Restore the files, or remove checkpoints/ to train the run again from step 0");
    if (!checkpoint) {
        *restart = store.dir() + ": no complete checkpoint yet (the run stopped before its first): "
                                 "starting it again from step 0 with its run.json";
        if (writes)
            store.truncateMetrics(0);
    }
    return checkpoint;
}

std::vector<int64_t>
nextMicroBatch(TrainerPosition& position, std::vector<int64_t>& order, int batchSize,
               const std::function<std::vector<int64_t>(int64_t)>& orderOfEpoch)
{
    int64_t& cursor = position.cursor;
    if (cursor >= static_cast<int64_t>(order.size())) {
        ++position.epoch;
        cursor = 0;
        order = orderOfEpoch(position.epoch);
    }
    const int64_t end = std::min<int64_t>(static_cast<int64_t>(order.size()), cursor + batchSize);
    std::vector<int64_t> indices(order.begin() + cursor, order.begin() + end);
    cursor = end;
    return indices;
}

StepMetrics stepRecord(const TrainerPosition& position, int64_t totalSteps, size_t epochLength,
                       double loss, double lr, double gradNorm, int64_t tokens, double seconds,
                       const std::string& device, const StepPhases& phases)
{
    StepMetrics m;
    m.step = position.step;
    m.totalSteps = totalSteps;
    m.epoch = static_cast<double>(position.epoch) +
              static_cast<double>(position.cursor) /
                  static_cast<double>(std::max<size_t>(1, epochLength));
    m.tokensSeen = position.tokensSeen;
    m.loss = loss;
    m.lr = lr;
    m.gradNorm = gradNorm;
    m.tokensPerSecond = seconds > 0 ? static_cast<double>(tokens) / seconds : 0;
    // tensor memory (tracked CPU allocations or CUDA allocated)
    const MemorySnapshot now = memorySnapshot(device);
    m.memoryCurrent = now.current;
    m.memoryPeak = phases.peak;
    m.memoryReserved = now.source == "cuda" ? now.reserved : 0;
    m.memoryAfterLoad = phases.afterLoad;
    m.memoryAfterForward = phases.afterForward;
    m.memoryAfterBackward = phases.afterBackward;
    m.memoryAfterOptimizer = phases.afterOptimizer;
    m.memoryResident = residentBytes();
    return m;
}

CheckpointData checkpointOf(TrainerPosition& position, const Optimizer& optimizer,
                            const DivergenceGuard& guard, const nlohmann::json& lossScale)
{
    CheckpointData data;
    data.step = position.step;
    std::vector<TensorBlob> trainable;
    for (const auto& [name, p] : optimizer.params())
        trainable.push_back(tensorToBlob(name, p));
    data.tensorFiles.emplace_back("trainable", std::move(trainable));
    data.tensorFiles.emplace_back("optimizer", optimizer.stateBlobs());
    data.tensorFiles.emplace_back("rng", std::vector<TensorBlob>{cpuGeneratorState()});
    position.optimizerSteps = optimizer.steps();
    position.recentLosses.assign(guard.recentLosses().begin(), guard.recentLosses().end());
    position.lossScale = lossScale;
    data.state = toJson(position);
    return data;
}

TrainerPosition restoreCheckpoint(const CheckpointLoad& checkpoint, Optimizer& optimizer,
                                  DivergenceGuard& guard)
{
    torch::NoGradGuard noGrad;
    TrainerPosition position = trainerPositionFromJson(checkpoint.data.state, checkpoint.dir);
    loadTrainableTensors(optimizer.params(), tensorFile(checkpoint, "trainable"), checkpoint.dir);
    optimizer.loadState(tensorFile(checkpoint, "optimizer"), position.optimizerSteps);
    const auto& rng = tensorFile(checkpoint, "rng");
    if (!rng.empty())
        restoreCpuGenerator(rng[0]);
    guard.restore(position.recentLosses);
    return position;
}

}  // namespace tb
