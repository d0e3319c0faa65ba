// Preference pairs as token sequences and batches: each pair's prompt and its two answers
// tokenized as TRL does (the prompt rendered with the generation prompt, prompt + answer rendered
// whole, the answer starting where the two token lists diverge), the pairs that cannot be trained
// on reported with their reason, and batches of pairs as rows [chosen..., rejected...]. Torch-free.
#pragma once

#include "data/pairs.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct PairSequence {
    std::vector<int32_t> prompt;            // shared prefix
    std::vector<int32_t> chosen, rejected;  // each answer's tokens after it (truncated to fit)
    bool truncated = false;                 // prompt + an answer was cut at max_length
    std::optional<double> margin;           // reward models: the pair's margin
    std::string source;
};

struct PairSet {
    std::vector<PairSequence> pairs;
    std::vector<std::pair<std::string, std::string>> rejected;  // (source, reason), in input order
    int64_t truncated = 0;
    int64_t tokens = 0;  // real tokens of both rows of every pair
};

// The tokens of prompt + answer as a pair's row holds them: conversational (rendered whole with
// `chat`; EOS appended where the tokenizer's EOS ends a family's assistant turns) or plain text
// (BOS as the tokenizer adds it, EOS appended). A reward model scores exactly these.
std::vector<int32_t> answerRowIds(const std::vector<ChatMessage>& prompt,
                                  const std::vector<ChatMessage>& answer,
                                  const Tokenizer& tokenizer, const ChatTemplate& chat);
std::vector<int32_t> plainAnswerRowIds(const std::string& prompt, const std::string& answer,
                                       const Tokenizer& tokenizer);

// Tokenizes pairs with `chat` (conversational pairs) or as plain text (prompt + answer, BOS as the
// tokenizer adds it, EOS appended). Pairs are rejected, never trained on silently, when the prompt
// alone has maxLength tokens or more, when an answer has no token, when both answers have the
// same tokens, or when rendering fails; each answer row is cut at maxLength tokens (keeping the
// start, as TRL's keep_start).
PairSet tokenizePairs(const std::vector<PairExample>& pairs, const Tokenizer& tokenizer,
                      const ChatTemplate& chat, int maxLength);

// A batch of pairs as rows: rows 0..n-1 are the chosen sequences (prompt + chosen), rows n..2n-1
// the rejected ones, right-padded with padId to the longest. labels[r][t] is the token at t + 1
// where that token belongs to the answer, else -100 (the prompt and the padding carry none).
struct PairBatch {
    int64_t pairs = 0, width = 0;  // rows = 2 x pairs
    std::vector<int64_t> ids, labels;
    // Like labels but over every real token, the prompt's too (ORPO's SFT term, as TRL takes it).
    std::vector<int64_t> fullLabels;
    std::vector<int64_t> lengths;  // real tokens per row
    std::vector<double> margins;   // per pair (0 when the pair has none)
    int64_t tokens = 0;            // real tokens of all rows
};
PairBatch makePairBatch(const PairSet& set, const std::vector<int64_t>& indices, int32_t padId);

}  // namespace tb
