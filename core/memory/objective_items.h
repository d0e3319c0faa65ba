// What a preference objective or a reward model adds to the memory estimate: two sequences per
// pair, the reference model, the log-probability buffers and the reward head. Internal to memory/.
#pragma once

#include "memory/estimator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

// The objective as the estimator sees it, checked and with the reference resolved.
struct ObjectiveShape {
    std::string objective = "sft";
    std::string reference = "none";  // none | off | copy | precomputed ("auto" resolved)
    bool pairs = false;              // every objective but sft trains on pairs
    bool reward = false;             // a scalar head instead of the LM head's logits
    bool logprobs = false;           // dpo, ipo, simpo, orpo: sequence log-probabilities
    int64_t pairsPerMicroBatch = 0;  // options.batch when pairs, else 0
    int64_t rows = 1;                // sequences per micro-batch: 2 x batch for pairs
};

// Throws tb::Error naming the option for an unknown objective or reference, a reference given to
// an objective without one, and reference "off" under full or partial fine-tuning (nothing to
// switch off). "auto" (and "none" for dpo and ipo) resolves as the trainer does: off for LoRA,
// adapters and prompt tuning, copy for full and partial fine-tuning.
ObjectiveShape objectiveShape(const MethodOptions& method, const EstimateOptions& options);

// Byte widths the objective's items need (the estimator's precision convention).
struct ObjectiveWidths {
    int64_t weight = 4, grad = 4, state = 4, compute = 4, residual = 4;
    int64_t statesPerParameter = 2;
    bool autocast = false;
};

// The items and the reference pass, for one micro-batch of shape.rows sequences of seq tokens.
struct ObjectiveBytes {
    int64_t reference = 0;         // device bytes of the reference model (copy: the base again)
    int64_t referenceForward = 0;  // the no-grad reference pass's largest temporaries
    std::string referenceForwardWhat;
    int64_t logprobs = 0;
    int64_t headParameters = 0;
    int64_t head = 0;  // the reward head's weight, gradient and optimizer states
    int64_t headWeight = 0, headGradient = 0, headStates = 0;
    std::vector<MemoryItem> items;  // reference, logprobs, head: those that apply, in that order
};

ObjectiveBytes objectiveBytes(const ModelConfig& model, const ObjectiveShape& shape,
                              const EstimateOptions& options, const ObjectiveWidths& widths,
                              int64_t parametersBase);

// The reward model's replacement for the logits item: the scalar head keeps its input, one hidden
// state per sequence, and the scores; no [tokens, vocab] logits exist.
MemoryItem rewardScoresItem(const ModelConfig& model, const ObjectiveShape& shape,
                            const ObjectiveWidths& widths);

// "4 (2 x 2 pairs: chosen and rejected)" for pairs, "2" otherwise: the formulas' batch.
std::string rowsWords(const ObjectiveShape& shape);

}  // namespace tb
