// A training example (conversation turns or plain text), the row formats it comes from, and its
// tokenization with a chat template into ids and a per-token loss mask. Torch-free.
#pragma once

#include "tokenizer/chat_template.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb {

class Tokenizer;

enum class ExampleFormat { Auto, Alpaca, Messages, PromptCompletion, Text };
const char* exampleFormatName(
    ExampleFormat format);  // "auto", "alpaca", "messages", "prompt_completion", "text"
std::optional<ExampleFormat> parseExampleFormat(const std::string& name);

// One training example as conversation turns (Text: a single assistant turn with no template).
struct Example {
    std::vector<ChatMessage> messages;
    bool plainText = false;  // continued pretraining: the text as is, every token carries loss
    std::string source;      // "file.jsonl:12"
};

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
    bool addEos = true;  // end assistant turns (and plain texts) with the tokenizer's EOS id
};

// Renders with the template and tokenizes each segment, so masks align with ids exactly. BOS is
// added when the tokenizer adds it; EOS ids are appended as ids (never as text, which sentencepiece
// would split).
TokenizedExample tokenizeExample(const Tokenizer& tokenizer, const Example& example,
                                 const TokenizeOptions& options);

}  // namespace tb
