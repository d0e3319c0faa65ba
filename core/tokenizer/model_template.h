// ChatTemplate: a chat template as training and serving apply it, either the model's own Jinja
// template (tokenizer_config.json) or one of the built-in families, with the special tokens it
// renders with, the assistant spans that carry loss and the tokens that end a turn.
#pragma once

#include "tokenizer/chat_template.h"
#include "tokenizer/jinja.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// Which assistant turns of a conversation train: every one, or only the last.
enum class TrainOn { All, Last };
const char* trainOnName(TrainOn trainOn);  // "all", "last"
std::optional<TrainOn> parseTrainOn(const std::string& name);

// The model's own template as a folder holds it: tokenizer_config.json's chat_template (a string,
// or a list of {"name", "template"} whose "default" entry is used), chat_template.jinja or
// chat_template.json; plus the special tokens transformers passes to it.
struct ModelTemplateSource {
    std::string text;    // Jinja source
    std::string origin;  // "DIR/tokenizer_config.json: chat_template"
    // bos_token, eos_token, unk_token, pad_token, ... as strings (an AddedToken object's content).
    jinja::Value specialTokens = jinja::Value::object();
    // Every special token string the folder declares (added_tokens_decoder entries marked special,
    // and the ones above): the candidates for a turn's end.
    std::vector<std::string> specialStrings;
};

// Reads a model folder's template; nullopt when it has none. Throws tb::Error naming the file when
// a config is not valid JSON.
std::optional<ModelTemplateSource> readModelTemplate(const std::string& modelDir);

class ChatTemplate {
public:
    // The model's own template, parsed now (a template that does not parse is an error naming the
    // folder, the file and the position, at config load rather than at step 500); nullopt when the
    // folder has none.
    static std::optional<ChatTemplate> fromModel(const std::string& modelDir);
    static ChatTemplate fromSource(const ModelTemplateSource& source);
    // A built-in family. bos/eos as renderChat takes them (tokenizeExample passes "" and adds the
    // ids itself).
    static ChatTemplate fromFamily(ChatTemplateFamily family, std::string bos = "",
                                   std::string eos = "");

    bool isModel() const { return static_cast<bool>(m_jinja); }
    std::optional<ChatTemplateFamily> family() const { return m_family; }
    std::string name() const;           // "model" or the family's name
    const std::string& origin() const;  // where a model template came from; the family's name
    // Jinja source: the model's own, or for a family an equivalent template (what a GGUF export
    // writes as tokenizer.chat_template).
    std::string jinjaSource() const;

    // The conversation as text. messages: a JSON array of {"role", "content", ...}; tools: an array
    // or null; extra: more template variables (e.g. enable_thinking).
    std::string render(const jinja::Value& messages, bool addGenerationPrompt,
                       const jinja::Value& tools = nullptr,
                       const jinja::Value& extra = jinja::Value::object()) const;

    // The conversation's text in pieces whose concatenation is render(messages, false); trainable
    // pieces are the assistant turns' content and their end-of-turn token (all turns or the last).
    // A model template's spans come from its {% generation %} blocks where it has them, otherwise
    // from rendering conversation prefixes; where they cannot be determined, tb::Error says why.
    std::vector<ChatSegment> segments(const jinja::Value& messages, TrainOn trainOn,
                                      const jinja::Value& tools = nullptr) const;

    // The strings that end an assistant turn (a model template: the special token it writes after
    // an assistant's content; ChatML <|im_end|>, Llama-3 <|eot_id|>; otherwise empty: the
    // tokenizer's EOS). Generation stops at them.
    const std::vector<std::string>& endOfTurnTokens() const { return m_endOfTurn; }

private:
    jinja::Span assistantSpan(const jinja::Value& messages, size_t i, const jinja::Value& tools,
                              const std::string& text) const;

    std::shared_ptr<const jinja::Template> m_jinja;
    std::optional<ChatTemplateFamily> m_family;
    ModelTemplateSource m_source;
    std::string m_bos, m_eos;
    std::vector<std::string> m_endOfTurn;
};

// A template by the name data.chat_template and the CLI use: a family's name, or "model" (also
// "auto"): the model folder's own. nullopt for an unknown name. "model" for a folder without a
// template: the plain family when plainFallback (statistics), else tb::Error saying to choose one.
std::optional<ChatTemplate> chatTemplateByName(const std::string& name, const std::string& modelDir,
                                               bool plainFallback = false);

class Tokenizer;

// The ids generation starts from for a conversation: rendered with the generation prompt and
// encoded as training encodes it (a model template writes its own BOS; a family gets the
// tokenizer's).
std::vector<int32_t> chatPromptIds(const ChatTemplate& chat, const Tokenizer& tokenizer,
                                   const jinja::Value& messages);
// The ids that end an assistant turn: the tokenizer's EOS and the template's end-of-turn tokens
// that are single tokens of this vocabulary.
std::vector<int32_t> chatStopIds(const ChatTemplate& chat, const Tokenizer& tokenizer);

// Messages as template values.
jinja::Value messagesValue(const std::vector<ChatMessage>& messages);

// The Jinja text equivalent to a family (renders what renderChatText renders with the tokenizer's
// bos_token/eos_token), for exports that carry a template.
std::string familyJinja(ChatTemplateFamily family);

}  // namespace tb
