// Chat templates: the families Tunebench renders (ChatML, Llama-3, Llama-2/Mistral [INST], Alpaca,
// plain) and detection of the family from tokenizer_config.json's chat_template.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tb {

enum class ChatTemplateFamily { ChatML, Llama3, Inst, Alpaca, Plain };

const char*
chatTemplateName(ChatTemplateFamily family);  // "chatml", "llama3", "inst", "alpaca", "plain"
std::optional<ChatTemplateFamily> parseChatTemplateName(const std::string& name);

struct ChatMessage {
    std::string role;  // "system", "user", "assistant"
    std::string content;
};

// One rendered piece of a conversation; `trainable` marks assistant responses (the tokens that
// carry loss).
struct ChatSegment {
    std::string text;
    bool trainable = false;
};

// Renders messages in a family's format. addGenerationPrompt appends the assistant header.
// bosToken/eosToken are the model's special token strings (e.g. "<s>", "</s>"). bosToken, when not
// empty, starts the text (Inst: every [INST] turn); pass "" when the tokenizer adds BOS itself.
// eosToken ends assistant turns of Inst, Alpaca and plain (ChatML and Llama-3 use <|im_end|> and
// <|eot_id|>). Alpaca renders a system message as its preamble and adds none by default.
std::vector<ChatSegment> renderChat(ChatTemplateFamily family,
                                    const std::vector<ChatMessage>& messages,
                                    bool addGenerationPrompt, const std::string& bosToken = "",
                                    const std::string& eosToken = "");
std::string renderChatText(ChatTemplateFamily family, const std::vector<ChatMessage>& messages,
                           bool addGenerationPrompt, const std::string& bosToken = "",
                           const std::string& eosToken = "");

// Family of a Jinja chat_template string, when it matches one we know; nullopt otherwise.
std::optional<ChatTemplateFamily> detectChatTemplate(const std::string& jinjaTemplate);

// Reads tokenizer_config.json of a model folder. Returns the detected family; when the folder has
// a chat_template we do not recognise, or none at all, returns nullopt (the user must choose:
// there is no silent fallback).
std::optional<ChatTemplateFamily> detectChatTemplateForModel(const std::string& modelDir);

// A model folder's own chat template text: tokenizer_config.json's chat_template (a string, or
// the "default" entry of a list of {"name", "template"}), else chat_template.jinja, else
// chat_template.json; *origin says where it came from ("DIR/tokenizer_config.json: chat_template").
// nullopt when the folder has none; tb::Error naming a file that is not valid JSON.
std::optional<std::string> readChatTemplateText(const std::string& modelDir,
                                                std::string* origin = nullptr);

// A family by name, where "auto" (or "model") means the family of the model folder's own template
// and plain when it has none (data statistics and synthetic generation; training refuses a model
// without one instead). nullopt for an unknown name, which the caller reports in its own terms.
std::optional<ChatTemplateFamily> chatTemplateOrPlain(const std::string& name,
                                                      const std::string& modelDir);

}  // namespace tb
