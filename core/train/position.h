// TrainerPosition: where a run stands after an optimizer step, as one struct with one to/from-JSON
// pair (a checkpoint's state.json). Torch-free.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// Where a run stands after an optimizer step: everything a resumed run needs to continue exactly.
struct TrainerPosition {
    int64_t step = 0;            // optimizer steps done (skipped fp16 steps not counted)
    int64_t optimizerSteps = 0;  // updates the optimizer applied (its bias correction)
    int64_t epoch = 0;
    int64_t cursor = 0;  // next sequence index within the epoch order
    int64_t tokensSeen = 0;
    std::vector<double> recentLosses;      // the divergence guard's window
    std::optional<double> initialLoss;     // loss of the first step
    std::optional<double> generalBase;     // base model's loss on the general holdout
    std::optional<double> initialValLoss;  // validation loss before any update
    double lastLoss = 0;
    nlohmann::json lossScale;  // DynamicLossScaler::state(); null when absent

    bool operator==(const TrainerPosition&) const = default;
};

// state.json: {"step", "optimizer_steps", "epoch", "cursor", "tokens_seen", "recent_losses",
// "initial_loss", "general_base", "initial_val_loss" (null when unset), "last_loss", "loss_scale"}.
nlohmann::json toJson(const TrainerPosition& position);
// Throws tb::Error naming the missing key; runs written before "loss_scale" or "last_loss" resume.
TrainerPosition trainerPositionFromJson(const nlohmann::json& state, const std::string& where);

}  // namespace tb
