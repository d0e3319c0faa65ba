// What single-prompt and batched generation share: checking a request, picking the next token from
// a row of logits, and one sequence's stop rules and text. Internal to core: includes LibTorch.
#pragma once

#include "model/model.h"

#include <torch/torch.h>

#include <string>
#include <unordered_set>
#include <vector>

namespace tb {

// Throws tb::Error when a prompt is empty, holds an id outside [0, vocab), the budget is negative
// or stop strings come without a tokenizer. `what` names the caller ("generate").
void checkGenerateRequest(const std::vector<int32_t>& prompt, const GenerateOptions& options,
                          const Tokenizer* tokenizer, int64_t vocab, const char* what);

// The ids that end a sequence as EOS does: the model's eos_token_id list, the tokenizer's EOS and
// options.stopTokenIds.
std::unordered_set<int64_t> stopTokenSet(const ModelConfig& config, const GenerateOptions& options,
                                         const Tokenizer* tokenizer);

// Next token from one row of logits [vocab] (fp32, CPU; changed in place by the repetition
// penalty). history: the prompt and the tokens generated so far.
int64_t pickToken(torch::Tensor logits, const GenerateOptions& options,
                  const std::vector<int64_t>& history, at::Generator& gen);

// What accepting one picked token did to a sequence.
struct TokenOutcome {
    bool eos = false;         // an end token: the sequence ends, the token is not kept
    bool stopString = false;  // the text now holds a stop string (cut before it)
    std::string piece;        // text completed by this token (empty while a character is partial)
};

// One sequence being generated: its history, its own generator (seeded with options.seed) and the
// result so far. Both generate() and generateBatch() drive one per prompt.
class GenerationRow {
public:
    GenerationRow(const std::vector<int32_t>& prompt, const GenerateOptions& options,
                  const Tokenizer* tokenizer, const std::unordered_set<int64_t>& stopIds);

    // Picks from logits [vocab] (fp32, CPU; a copy is changed, not the caller's tensor).
    int64_t pick(const torch::Tensor& logits);
    // Takes a picked token: an end token (when options.stopAtEos) is reported and dropped, any
    // other is appended to the tokens and, with a tokenizer, to the text (cut at a stop string).
    TokenOutcome accept(int64_t token);

    const std::vector<int64_t>& history() const { return m_history; }
    GenerateResult result;  // stopReason starts as "max_tokens"

private:
    const GenerateOptions& m_options;
    const Tokenizer* m_tokenizer;
    const std::unordered_set<int64_t>& m_stopIds;
    std::vector<int64_t> m_history;
    at::Generator m_gen;
    std::string m_emitted;  // text already reported as pieces
};

}  // namespace tb
