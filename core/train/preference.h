// PreferenceRecipe: training on preference pairs, the loop of a run read top to bottom, for DPO,
// IPO, SimPO, ORPO and reward models (objective != sft). Each step forwards a micro-batch of pairs
// as [chosen..., rejected...] rows, scores the answers (log-probabilities, or a reward model's
// head), takes the objective's loss (train/preference_losses.h) and updates; the reference of DPO
// and IPO is the policy with its method switched off, a frozen copy, or log-probabilities computed
// once before the first step. It composes the components of train/ like the SFT recipe and knows
// nothing of threads. Internal to core.
#pragma once

#include "train/checkpoint.h"
#include "train/control.h"
#include "train/divergence_guard.h"
#include "train/job.h"
#include "train/optimizer.h"
#include "train/pair_data.h"
#include "train/preference_losses.h"
#include "train/run_store.h"
#include "train/setup.h"

#include <memory>
#include <optional>
#include <string>

namespace tb {

class PreferenceRecipe {
public:
    PreferenceRecipe(const TrainConfig& config, std::string resumeDir, JobControl& control,
                     JobEvents* events);
    TrainSummary run();

private:
    void setUp();
    void setUpReference();
    void restore(const CheckpointLoad& checkpoint);
    bool step();
    // The loss of pairs `indices` of `set` (reference sums from `precomputed` when stored).
    struct Scored {
        PairLoss loss;
        int64_t tokens = 0, width = 0;
    };
    Scored scorePairs(const PairSet& set, const std::vector<int64_t>& indices, bool training);
    // [rows] summed answer log-probabilities (and counts) under the reference.
    AnswerLogps referenceLogps(const torch::Tensor& ids, const torch::Tensor& labels);
    void precomputeReference();  // reference: precomputed (reference_logps.json)
    EvalMetrics evaluate(int64_t step);
    void emitStep(double loss, const PreferenceStats& stats, double lr, double gradNorm,
                  int64_t tokens, double seconds);
    void save();
    void reportMemory(int64_t seq);
    std::vector<int64_t> nextMicroBatch();
    std::vector<int64_t> orderOfEpoch(int64_t epoch) const;  // the seeded order of the pairs
    int64_t memoryNow() const;
    void warn(const std::string& message);
    std::vector<std::pair<std::string, torch::Tensor>> trainable();

    TrainConfig m_config;
    std::string m_resumeDir;
    JobControl& m_control;
    JobEvents* m_events;
    std::unique_ptr<RunStore> m_store;
    PreparedModel m_model;
    PreparedPairs m_data;
    std::shared_ptr<CausalLM> m_reference;  // reference: copy
    // reference: precomputed. [pairs] summed log-probabilities of each split's answers.
    struct Stored {
        torch::Tensor chosen, rejected;
    };
    std::optional<Stored> m_storedTrain, m_storedVal;
    torch::Tensor m_head;  // reward: score.weight [1, hidden]
    int32_t m_padId = 0;
    std::unique_ptr<Optimizer> m_optimizer;
    DivergenceGuard m_guard;
    TrainerPosition m_position;
    std::vector<int64_t> m_order;
    int64_t m_totalSteps = 0;
    std::string m_device;
    int64_t m_memoryAfterLoad = 0, m_memoryAfterForward = 0, m_memoryAfterBackward = 0,
            m_memoryAfterOptimizer = 0, m_memoryPeak = 0, m_gradientBytes = 0;
    std::optional<double> m_lastValLoss;
    int64_t m_lastValStep = 0;
    std::optional<double> m_lastValAccuracy;
    TrainSummary m_summary;
    double m_trainSeconds = 0;
    int64_t m_trainTokens = 0;
};

}  // namespace tb
