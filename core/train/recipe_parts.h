// The pieces every recipe's loop shares, so each recipe reads top to bottom without repeating
// them: the run folder of a new or resumed run, the next micro-batch of the epoch order, a step's
// metrics record, the checkpoint of a step and its restore. Internal to core (LibTorch types).
#pragma once

#include "train/checkpoint.h"
#include "train/divergence_guard.h"
#include "train/metrics.h"
#include "train/optimizer.h"
#include "train/position.h"
#include "train/run_store.h"
#include "train/train_config.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// resumeDir empty: output_dir/name, refused when a run with that name exists; else the run folder
// being continued.
std::unique_ptr<RunStore> openRunStore(const TrainConfig& config, const std::string& resumeDir);

// The newest complete checkpoint of a run being resumed. nullopt when it stopped before its first:
// it then starts again from step 0 with its run.json, *restart says so, and when `writes` (the
// process that owns metrics.jsonl) its logged lines are dropped.
std::optional<CheckpointLoad> resumeCheckpoint(const RunStore& store, bool writes,
                                               std::string* restart);

// The indices of the next micro-batch (up to batchSize) of `order`; at the end of an epoch the
// position moves to the next one and `orderOfEpoch` gives its order.
std::vector<int64_t>
nextMicroBatch(TrainerPosition& position, std::vector<int64_t>& order, int batchSize,
               const std::function<std::vector<int64_t>(int64_t)>& orderOfEpoch);

// Whether the micro-batch just taken was the epoch's last: the optimizer step ends there, with
// fewer than grad_accum micro-batches, so `epochs: N` reads every sequence exactly N times (a
// step that ran on into the next epoch read up to grad_accum - 1 micro-batches too many per epoch).
inline bool epochEnded(const TrainerPosition& position, const std::vector<int64_t>& order)
{
    return position.cursor >= static_cast<int64_t>(order.size());
}

// Tensor memory after each phase of a step (bytes), as StepMetrics names them.
struct StepPhases {
    int64_t afterLoad = 0, afterForward = 0, afterBackward = 0, afterOptimizer = 0, peak = 0;
};
// The step record after an update: position, loss, learning rate, gradient norm, tokens per second
// and memory now (the device's snapshot, the phases, the process's resident bytes).
StepMetrics stepRecord(const TrainerPosition& position, int64_t totalSteps, size_t epochLength,
                       double loss, double lr, double gradNorm, int64_t tokens, double seconds,
                       const std::string& device, const StepPhases& phases);

// A checkpoint of the optimizer's parameters and states, the CPU generator and the position (the
// guard's window and the loss scale, JSON null when none, go into it first).
CheckpointData checkpointOf(TrainerPosition& position, const Optimizer& optimizer,
                            const DivergenceGuard& guard, const nlohmann::json& lossScale);
// Loads a checkpoint back into the optimizer's parameters and states, the generator and the
// guard; returns its position.
TrainerPosition restoreCheckpoint(const CheckpointLoad& checkpoint, Optimizer& optimizer,
                                  DivergenceGuard& guard);

}  // namespace tb
