// What a checkpoint holds besides the run store's files: the trainer's position (train/position.h),
// the trainable tensors, and the CPU generator's state. Internal to core (LibTorch types).
#pragma once

#include "train/optimizer.h"
#include "train/position.h"
#include "train/run_store.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tb {

// The tensors of one file of a checkpoint ("trainable", "optimizer", "rng"); throws when absent.
const std::vector<TensorBlob>& tensorFile(const CheckpointLoad& checkpoint,
                                          const std::string& name);
// Copies checkpointed trainable tensors into the parameters of the same names (shapes checked).
void loadTrainableTensors(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                          const std::vector<TensorBlob>& blobs, const std::string& where);

// The optimizer moments of a checkpoint, each whole ("<param>.exp_avg", "<param>.exp_avg_sq",
// "<param>.momentum", in the parameter's shape): its "optimizer" file, or assembled from the ranks'
// "optimizer-rank-K" shards (ZeRO), whatever the world size that wrote them. Throws naming a
// parameter whose pieces are missing or overlap.
std::vector<TensorBlob>
wholeOptimizerState(const CheckpointLoad& checkpoint,
                    const std::vector<std::pair<std::string, torch::Tensor>>& params);
// The pieces of whole moments for ZeRO segments "<param>@<start>" (flat ranges of parameters).
std::vector<TensorBlob>
segmentOptimizerState(const std::vector<TensorBlob>& whole,
                      const std::vector<std::pair<std::string, torch::Tensor>>& segments);
// The name of rank r's optimizer shard file in a checkpoint ("optimizer-rank-1").
std::string optimizerShardName(int rank);

// The default CPU generator's state as one U8 blob, and back.
TensorBlob cpuGeneratorState();
void restoreCpuGenerator(const TensorBlob& state);

}  // namespace tb
