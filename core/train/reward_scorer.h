// Scoring answers with a trained reward model (a run with objective "reward"): the base model,
// the run's method and scalar head from its newest checkpoint, and the run's chat template, behind
// a torch-free facade the CLI (`tunebench reward score`) and the studio's best-of-N use.
#pragma once

#include "tokenizer/chat_template.h"

#include <memory>
#include <string>
#include <vector>

namespace tb {

// Whether runDir holds a reward-model run (run.json's config.objective is "reward").
bool isRewardRun(const std::string& runDir);

class RewardScorer {
public:
    // Throws tb::Error naming the folder when it is not a reward run or has no checkpoint.
    explicit RewardScorer(const std::string& runDir, const std::string& device = "auto");
    ~RewardScorer();
    RewardScorer(const RewardScorer&) = delete;
    RewardScorer& operator=(const RewardScorer&) = delete;

    // The reward of each answer to the conversation `prompt` (the turns before the answer, ending
    // with a user turn), the scalar head on the last token of prompt + answer rendered with the
    // run's template; higher is preferred. Plain text (no template) when prompt is one message
    // with role "text".
    std::vector<double> score(const std::vector<ChatMessage>& prompt,
                              const std::vector<std::string>& answers) const;
    const std::string& runDir() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

}  // namespace tb
