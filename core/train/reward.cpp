// The reward head: its padding id, initialisation and the pooled scores of a batch.
#include "train/reward.h"

#include "util/error.h"
#include "util/file_util.h"

#include <nlohmann/json.hpp>

namespace tb {

int32_t rewardPadId(const std::string& modelDir, const Tokenizer& tokenizer)
{
    const std::string path = joinPath(modelDir, "config.json");
    if (fileExists(path)) {
        const auto config = nlohmann::json::parse(readFile(path), nullptr, false);
        if (config.is_object() && config.contains("pad_token_id") &&
            config["pad_token_id"].is_number_integer())
            return config["pad_token_id"].get<int32_t>();
    }
    if (auto unk = tokenizer.pieceToId("<unk>"))
        return *unk;
    return tokenizer.eosId().value_or(0);
}

nlohmann::json rewardRunRecord(int32_t padId)
{
    return {{"pad_token_id", padId}};
}

int32_t runRewardPadId(const nlohmann::json& runInfo, const std::string& modelDir,
                       const Tokenizer& tokenizer)
{
    const auto it = runInfo.find("reward");
    if (it != runInfo.end() && it->is_object() && it->contains("pad_token_id"))
        return it->at("pad_token_id").get<int32_t>();
    return rewardPadId(modelDir, tokenizer);
}

torch::Tensor newRewardHead(int64_t hidden, uint64_t seed, const torch::Device& device)
{
    auto generator = at::detail::createCPUGenerator(seed);
    auto head =
        at::normal(0.0, 0.02, {1, hidden}, generator, torch::TensorOptions(torch::kFloat32));
    return head.to(device).set_requires_grad(true);
}

torch::Tensor rewardScores(CausalLM& model, const torch::Tensor& head, const torch::Tensor& ids,
                           int32_t padId)
{
    const auto hidden = model.forwardHidden(ids);  // [rows, width, hidden]
    // The last position holding a real token: the largest index whose id is not padId.
    const auto width = ids.size(1);
    const auto positions = torch::arange(width, ids.options()).unsqueeze(0);  // [1, width]
    auto last = (positions * ids.ne(padId).to(torch::kInt64)).argmax(1);      // [rows]
    const auto none = ids.ne(padId).sum(1).eq(0);
    last = torch::where(none, torch::full_like(last, width - 1), last);
    const auto pooled = hidden.gather(1, last.view({-1, 1, 1}).expand({-1, 1, hidden.size(2)}))
                            .squeeze(1);  // [rows, hidden]
    return torch::mv(pooled.to(torch::kFloat32), head.squeeze(0).to(torch::kFloat32));
}

}  // namespace tb
