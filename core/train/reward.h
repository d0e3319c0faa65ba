// Reward models: a scalar head on a causal LM's last non-padding token, laid out as transformers'
// *ForSequenceClassification (score.weight [1, hidden], no bias, num_labels 1), its padding id and
// the scores of a batch of rows. The preference recipe trains it with the Bradley-Terry loss
// (train/preference_losses.h); export writes it as a Hugging Face folder. Internal to core.
#pragma once

#include "model/causal_lm.h"
#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <string>

namespace tb {

inline constexpr const char* kRewardHeadName = "score.weight";

// The id a reward model pads with and that transformers' pooling skips (it scores the last token
// that is not this id): config.json's pad_token_id when set, else the tokenizer's "<unk>", else
// its EOS.
int32_t rewardPadId(const std::string& modelDir, const Tokenizer& tokenizer);
// run.json's record of it ({"reward": {"pad_token_id"}}), written when a reward run starts.
nlohmann::json rewardRunRecord(int32_t padId);
// The id a reward run pads with: its run.json record, else rewardPadId of its model.
int32_t runRewardPadId(const nlohmann::json& runInfo, const std::string& modelDir,
                       const Tokenizer& tokenizer);

// The head [1, hidden] fp32 on `device`, N(0, 0.02) from `seed` as transformers initialises it.
torch::Tensor newRewardHead(int64_t hidden, uint64_t seed, const torch::Device& device);

// Scores [rows] of ids [rows, width]: the head on the final-normed hidden state of each row's last
// token that is not padId (transformers' rule; a row of padding only scores its last position).
torch::Tensor rewardScores(CausalLM& model, const torch::Tensor& head, const torch::Tensor& ids,
                           int32_t padId);

}  // namespace tb
