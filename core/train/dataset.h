// Training data: JSONL examples (alpaca, chat messages, prompt/completion, plain text) rendered with a chat
// template, tokenized with loss masks, truncated or packed into fixed-length sequences, shuffled by seed.
// Torch-free: the training loop turns TokenBatch into tensors.
#pragma once

#include "tokenizer/chat_template.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tb {

class Tokenizer;

enum class ExampleFormat { Auto, Alpaca, Messages, PromptCompletion, Text };
const char* exampleFormatName(ExampleFormat format);  // "auto", "alpaca", "messages", "prompt_completion", "text"
std::optional<ExampleFormat> parseExampleFormat(const std::string& name);

// One training example as conversation turns (Text: a single assistant turn with no template).
struct Example {
    std::vector<ChatMessage> messages;
    bool plainText = false;  // continued pretraining: the text as is, every token carries loss
    std::string source;      // "file.jsonl:12"
};

struct RejectedRow {
    std::string location;    // "file.jsonl:12"
    std::string reason;
};

struct ExampleFile {
    std::vector<Example> examples;
    std::vector<RejectedRow> rejected;  // bad rows are reported and skipped, never fatal
    ExampleFormat format = ExampleFormat::Auto;  // detected
};

// Reads a dataset file through the importer (data/import.h: JSONL, a .json array, CSV/TSV; formats,
// detection and limits in docs/data.md) and renders each valid row as an Example. Auto detects the format
// from the first row with known keys. Bad rows go to `rejected` with file:line and the reason; whole-file
// problems (unreadable, empty, a JSON array in a .jsonl file, no valid row at all) throw tb::Error naming
// the file.
ExampleFile readExampleFile(const std::string& path, ExampleFormat format = ExampleFormat::Auto);

// A tokenized example: ids and, per token, whether it carries loss.
struct TokenizedExample {
    std::vector<int32_t> ids;
    std::vector<uint8_t> lossMask;  // 1 = predicted token carries loss
    bool truncated = false;
};

struct TokenizeOptions {
    ChatTemplateFamily family = ChatTemplateFamily::Plain;
    bool lossOnResponsesOnly = true;  // false: every token carries loss
    int maxLength = 256;              // tokens; longer examples are truncated (and counted)
    bool addEos = true;               // end assistant turns (and plain texts) with the tokenizer's EOS id
};

// Renders with the template and tokenizes each segment, so masks align with ids exactly. BOS is added when
// the tokenizer adds it; EOS ids are appended as ids (never as text, which sentencepiece would split).
TokenizedExample tokenizeExample(const Tokenizer& tokenizer, const Example& example, const TokenizeOptions& options);

// Fixed-length sequences ready for a batch. labels[i] is the id to predict at position i (already shifted:
// labels[i] = ids[i + 1] where that token carries loss), or -100 where no loss is taken.
struct Sequence {
    std::vector<int32_t> ids;
    std::vector<int32_t> labels;
    int32_t length = 0;  // real tokens before padding
};

struct SequenceSet {
    std::vector<Sequence> sequences;
    int64_t examples = 0;
    int64_t truncated = 0;         // examples cut at maxLength
    int64_t tokens = 0;            // real tokens
    int64_t lossTokens = 0;        // tokens that carry loss
};

// packing=false: one example per sequence, padded with padId to the longest in its batch later (here: to
// its own length; TokenBatch pads). packing=true: examples concatenated (each keeps its own BOS/EOS) and cut
// into sequences of exactly maxLength tokens; loss never crosses from one example into the next.
SequenceSet buildSequences(const std::vector<TokenizedExample>& examples, int maxLength, bool packing);

// A batch of equal-length rows, row-major [rows, width]; padding uses padId with label -100.
struct TokenBatch {
    int64_t rows = 0, width = 0;
    std::vector<int64_t> ids;
    std::vector<int64_t> labels;
    int64_t lossTokens = 0;
};
TokenBatch makeBatch(const SequenceSet& set, const std::vector<int64_t>& indices, int32_t padId);

// The batches an evaluation reads: consecutive runs of up to batchSize sequences in order, padded with
// padId, those without loss-carrying tokens skipped. With maxLossTokens >= 0, no sequence is added once
// that many loss-carrying tokens are planned (a bounded sample); -1 reads the whole set.
void forEachEvalBatch(const SequenceSet& set, int64_t batchSize, int32_t padId, int64_t maxLossTokens,
                      const std::function<void(const TokenBatch&)>& f);

// Seeded order of sequence indices for one epoch: the same seed and epoch always give the same order,
// independent of platform (uses its own PRNG, not std::shuffle).
std::vector<int64_t> epochOrder(int64_t count, uint64_t seed, int64_t epoch);

} // namespace tb
