// A training example (conversation turns or plain text), the row formats it comes from, and its
// tokenization with a chat template into ids and a per-token loss mask. Torch-free.
#pragma once

#include "tokenizer/chat_template.h"
#include "tokenizer/model_template.h"

#include <cstdint>
#include <memory>
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
    // The model's own template; when set it renders instead of `family`.
    std::shared_ptr<const ChatTemplate> modelTemplate;
    TrainOn trainOn = TrainOn::All;  // which assistant turns carry loss

    void setTemplate(const ChatTemplate& chat)
    {
        if (chat.family()) {
            family = *chat.family();
            modelTemplate.reset();
        } else {
            modelTemplate = std::make_shared<const ChatTemplate>(chat);
        }
    }
    std::string templateName() const { return modelTemplate ? "model" : chatTemplateName(family); }
    bool lossOnResponsesOnly = true;  // false: every token carries loss
    int maxLength = 256;              // tokens; longer examples are truncated (and counted)
    bool addEos = true;  // end assistant turns (and plain texts) with the tokenizer's EOS id
};

// Renders with the template. A family: each segment is tokenized on its own, so masks align with
// ids exactly; BOS is added when the tokenizer adds it; EOS ids are appended as ids (never as text,
// which sentencepiece would split). A model template: the whole text is tokenized as transformers
// does (the template writes its own BOS and end tokens) and a token carries loss when it overlaps
// an assistant span. Errors name the example's source.
TokenizedExample tokenizeExample(const Tokenizer& tokenizer, const Example& example,
                                 const TokenizeOptions& options);
// The model-template path for messages as JSON (tool calls, tool results, tools), as `tunebench
// template render` takes them; options.modelTemplate must be set. Not truncated.
TokenizedExample tokenizeMessages(const Tokenizer& tokenizer, const jinja::Value& messages,
                                  const jinja::Value& tools, const TokenizeOptions& options);

}  // namespace tb
