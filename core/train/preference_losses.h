// The losses of the preference objectives over a batch of pairs (train/pair_batching.h): the
// answers' log-probabilities under the policy (and the reference), then DPO (sigmoid, with label
// smoothing), IPO, SimPO, ORPO and the reward model's Bradley-Terry loss, each with the statistics
// TRL logs. Formulas and sources: docs/preference.md. Internal to core (LibTorch types).
#pragma once

#include "train/metrics.h"
#include "train/objective.h"

#include <torch/torch.h>

namespace tb {

// Per row of a pair batch: the summed log-probability of its answer tokens and their count.
// logits [rows, width, vocab]; labels [rows, width] (-100 where no answer token is predicted).
struct AnswerLogps {
    torch::Tensor sum;    // [rows] fp32
    torch::Tensor count;  // [rows] fp32 (>= 1)
    torch::Tensor mean() const { return sum / count; }
};
AnswerLogps answerLogps(const torch::Tensor& logits, const torch::Tensor& labels);

// The loss of one micro-batch of pairs: `loss` is the mean over its pairs (a scalar with grad);
// stats are its statistics (means over the pairs). chosen/rejected: the policy's summed answer
// log-probabilities [pairs]; counts: their token counts; ref*: the reference's sums (DPO, IPO;
// undefined otherwise); chosenNll: ORPO's SFT term (the mean token cross-entropy of the chosen
// answers).
struct PairLossInput {
    torch::Tensor chosen, rejected;
    torch::Tensor chosenCount, rejectedCount;
    torch::Tensor refChosen, refRejected;
    torch::Tensor chosenNll;
};
struct PairLoss {
    torch::Tensor loss;
    PreferenceStats stats;
};
PairLoss preferenceLoss(Objective objective, const PreferenceOptions& options,
                        const PairLossInput& in);

// A reward model's Bradley-Terry loss: -log sigmoid(r_chosen - r_rejected - margin), mean over
// pairs. chosen/rejected: [pairs] scores; margin: [pairs] (zeros when the pairs have none).
PairLoss rewardLoss(const torch::Tensor& chosen, const torch::Tensor& rejected,
                    const torch::Tensor& margin);

}  // namespace tb
