// TrainerPosition as state.json and back.
#include "train/position.h"

#include "util/error.h"
#include "util/json_util.h"

namespace tb {

using nlohmann::json;

json toJson(const TrainerPosition& p)
{
    return {{"step", p.step},
            {"optimizer_steps", p.optimizerSteps},
            {"epoch", p.epoch},
            {"cursor", p.cursor},
            {"tokens_seen", p.tokensSeen},
            {"recent_losses", p.recentLosses},
            {"initial_loss", jsonOrNull(p.initialLoss)},
            {"general_base", jsonOrNull(p.generalBase)},
            {"initial_val_loss", jsonOrNull(p.initialValLoss)},
            {"last_loss", p.lastLoss},
            {"loss_scale", p.lossScale}};
}

TrainerPosition trainerPositionFromJson(const json& s, const std::string& where)
{
    TrainerPosition p;
    try {
        p.step = s.at("step").get<int64_t>();
        p.optimizerSteps = s.at("optimizer_steps").get<int64_t>();
        p.epoch = s.at("epoch").get<int64_t>();
        p.cursor = s.at("cursor").get<int64_t>();
        p.tokensSeen = s.at("tokens_seen").get<int64_t>();
        p.recentLosses = s.at("recent_losses").get<std::vector<double>>();
    } catch (const json::exception& e) {
        fail(where, ": state.json: ", e.what());
    }
    p.initialLoss = optionalNumberAt(s, "initial_loss");
    p.generalBase = optionalNumberAt(s, "general_base");
    p.initialValLoss = optionalNumberAt(s, "initial_val_loss");
    p.lastLoss = s.value("last_loss", 0.0);
    if (s.contains("loss_scale"))
        p.lossScale = s["loss_scale"];
    return p;
}

}  // namespace tb
