// A run's training objective (what the loss optimises: supervised next-token loss, a preference
// loss over pairs, or a reward model's ranking loss) and the options of the preference objectives.
// Orthogonal to the method (full, partial, LoRA, adapter, prompt). Torch-free.
#pragma once

#include "data/pairs.h"
#include "peft/method.h"

#include <optional>

namespace tb {

// sft: next-token cross-entropy on examples. dpo, ipo: pairs against a reference model. simpo,
// orpo: pairs, reference-free. reward: a scalar head trained on pairs (Bradley-Terry).
// Formulas and sources: docs/preference.md.
enum class Objective { Sft, Dpo, Ipo, Simpo, Orpo, Reward };
const char* objectiveName(Objective objective);  // "sft", "dpo", "ipo", "simpo", "orpo", "reward"
std::optional<Objective> parseObjective(const std::string& name);
inline bool trainsOnPairs(Objective o)
{
    return o != Objective::Sft;
}
inline bool needsReference(Objective o)
{
    return o == Objective::Dpo || o == Objective::Ipo;
}

// Where DPO's and IPO's reference log-probabilities come from. auto: for LoRA, adapters and
// prompt tuning the policy itself with its trainable parts switched off (no second copy of the
// weights); for full and partial fine-tuning a frozen copy of the base. copy: always the frozen
// copy. precomputed: one pass before the first step stores every pair's reference
// log-probabilities in the run folder (reference_logps.json); no reference model in memory.
enum class ReferenceKind { Auto, Copy, Precomputed };
const char* referenceKindName(ReferenceKind kind);  // "auto", "copy", "precomputed"
std::optional<ReferenceKind> parseReferenceKind(const std::string& name);

// Methods that only add modules to the frozen base (LoRA, adapters, prompt tuning): switched off,
// the policy is the base model, which is what reference auto uses for them.
inline bool methodCanSwitchOff(Method m)
{
    return m == Method::Lora || m == Method::Adapter || m == Method::Prompt;
}

// run.json's "preference" object.
struct PreferenceOptions {
    double beta = 0.1;            // dpo, ipo (tau), simpo, orpo (lambda): > 0
    double labelSmoothing = 0.0;  // dpo, simpo: the share of pairs assumed flipped, [0, 0.5)
    double gamma = 0.5;           // simpo: the target reward margin
    // dpo, ipo, simpo: weight of an SFT term added to the loss, the chosen answers' mean token
    // negative log-likelihood (TRL's loss_type ["sigmoid", "sft"]; RPO, Pang et al. 2024); it
    // keeps the chosen answers likely while the margin grows. 0 = off.
    double sftWeight = 0.0;
    ReferenceKind reference = ReferenceKind::Auto;
    PairLayout layout = PairLayout::Auto;  // how the pair files' rows are laid out

    bool operator==(const PreferenceOptions&) const = default;
};

}  // namespace tb
