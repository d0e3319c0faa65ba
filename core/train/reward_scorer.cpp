// A reward run loaded for scoring: the base model, the run's method and head from the newest
// checkpoint, its chat template and padding id.
#include "train/reward_scorer.h"

#include "train/checkpoint.h"
#include "train/pair_batching.h"
#include "train/reward.h"
#include "train/setup.h"
#include "util/error.h"
#include "util/file_util.h"

namespace tb {

bool isRewardRun(const std::string& runDir)
{
    const std::string path = joinPath(runDir, "run.json");
    if (!fileExists(path))
        return false;
    const auto info = nlohmann::json::parse(readFile(path), nullptr, false);
    return info.is_object() && info.contains("config") && info["config"].is_object() &&
           info["config"].value("objective", "sft") == "reward";
}

struct RewardScorer::Impl {
    std::string runDir;
    PreparedModel model;
    torch::Tensor head;
    int32_t padId = 0;
    std::optional<ChatTemplate> chat;
    int maxLength = 256;
};

RewardScorer::RewardScorer(const std::string& runDir, const std::string& device)
    : m(std::make_unique<Impl>())
{
    if (!isRewardRun(runDir))
        fail(runDir, ": not a reward-model run (run.json's objective is not \"reward\")");
    LoadedRun run = loadRun(runDir, device, "score with");
    m->runDir = runDir;
    m->model = std::move(run.model);
    m->head = torch::zeros({1, m->model.module->config().hiddenSize},
                           torch::TensorOptions(torch::kFloat32).device(m->model.device));
    loadTrainableTensors({{kRewardHeadName, m->head}}, tensorFile(run.checkpoint, "trainable"),
                         run.checkpoint.dir);
    for (auto& p : m->model.module->parameters())
        p.set_requires_grad(false);
    m->padId = runRewardPadId(run.info, run.config.model, *m->model.tokenizer);
    m->chat = runChatTemplate(run.config);
    m->maxLength = run.config.data.maxLength;
}

RewardScorer::~RewardScorer() = default;

const std::string& RewardScorer::runDir() const
{
    return m->runDir;
}

std::vector<double> RewardScorer::score(const std::vector<ChatMessage>& prompt,
                                        const std::vector<std::string>& answers) const
{
    if (answers.empty())
        return {};
    const bool plain = prompt.size() == 1 && prompt[0].role == "text";
    std::vector<std::vector<int32_t>> rows;
    size_t width = 0;
    for (const std::string& answer : answers) {
        std::vector<int32_t> ids =
            plain ? plainAnswerRowIds(prompt[0].content, answer, *m->model.tokenizer)
                  : answerRowIds(prompt, {{"assistant", answer}}, *m->model.tokenizer, *m->chat);
        if (ids.size() > static_cast<size_t>(m->maxLength))
            ids.resize(static_cast<size_t>(m->maxLength));
        width = std::max(width, ids.size());
        rows.push_back(std::move(ids));
    }
    std::vector<int64_t> flat(rows.size() * width, m->padId);
    for (size_t r = 0; r < rows.size(); ++r)
        std::copy(rows[r].begin(), rows[r].end(),
                  flat.begin() + static_cast<std::ptrdiff_t>(r * width));
    torch::NoGradGuard noGrad;
    const auto ids = torch::tensor(flat, torch::kInt64)
                         .view({static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)})
                         .to(m->model.device);
    const auto scores =
        rewardScores(*m->model.module, m->head, ids, m->padId).to(torch::kCPU).to(torch::kFloat64);
    return {scores.data_ptr<double>(), scores.data_ptr<double>() + scores.numel()};
}

}  // namespace tb
