// Chat template rendering (ChatML, Llama-3, Llama-2/Mistral [INST], Alpaca, plain) and detection of
// the family from a model's tokenizer_config.json.
//
// Conventions shared by every family:
// - bosToken, when not empty, is written once at the very start (Inst: at the start of every
//   [INST] turn, as Llama-2's template does). Pass "" when the tokenizer adds BOS itself.
// - Contents are written verbatim (no trimming).
// - A trainable segment is an assistant message's content plus its end token (ChatML <|im_end|>,
//   Llama-3 <|eot_id|>, otherwise eosToken); the role headers and separators around it are not.
// - Alpaca: a system message becomes the preamble paragraph; without one there is no preamble (the
//   classic "Below is an instruction..." text is not added: datasets that want it pass it as
//   system).
#include "tokenizer/chat_template.h"

#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

namespace tb {
namespace {

// Appends to the last segment when it has the same trainability, so output stays compact.
void append(std::vector<ChatSegment>& out, const std::string& text, bool trainable)
{
    if (text.empty())
        return;
    if (!out.empty() && out.back().trainable == trainable)
        out.back().text += text;
    else
        out.push_back({text, trainable});
}

void renderChatML(std::vector<ChatSegment>& out, const std::vector<ChatMessage>& messages,
                  bool addGenerationPrompt)
{
    for (const ChatMessage& m : messages) {
        append(out, "<|im_start|>" + m.role + "\n", false);
        if (m.role == "assistant") {
            append(out, m.content + "<|im_end|>", true);
            append(out, "\n", false);
        } else {
            append(out, m.content + "<|im_end|>\n", false);
        }
    }
    if (addGenerationPrompt)
        append(out, "<|im_start|>assistant\n", false);
}

void renderLlama3(std::vector<ChatSegment>& out, const std::vector<ChatMessage>& messages,
                  bool addGenerationPrompt)
{
    for (const ChatMessage& m : messages) {
        append(out, "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n", false);
        append(out, m.content + "<|eot_id|>", m.role == "assistant");
    }
    if (addGenerationPrompt)
        append(out, "<|start_header_id|>assistant<|end_header_id|>\n\n", false);
}

// Llama-2 chat: "<s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant</s>" per turn.
// A system message is folded into the next user turn; the generation prompt is the open [INST]
// block itself, so addGenerationPrompt adds nothing.
void renderInst(std::vector<ChatSegment>& out, const std::vector<ChatMessage>& messages,
                const std::string& bos, const std::string& eos)
{
    std::string system;
    for (const ChatMessage& m : messages) {
        if (m.role == "system") {
            system += system.empty() ? m.content : "\n" + m.content;
        } else if (m.role == "assistant") {
            append(out, " ", false);
            append(out, m.content + eos, true);
        } else {
            std::string turn = bos + "[INST] ";
            if (!system.empty())
                turn += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
            system.clear();
            append(out, turn + m.content + " [/INST]", false);
        }
    }
    if (!system.empty())  // a trailing system message with no user turn after it
        append(out, bos + "[INST] <<SYS>>\n" + system + "\n<</SYS>>\n\n [/INST]", false);
}

// Alpaca: blocks separated by a blank line: [system] "### Instruction:\n..." "### Response:\n...".
void renderAlpaca(std::vector<ChatSegment>& out, const std::vector<ChatMessage>& messages,
                  bool addGenerationPrompt, const std::string& eos)
{
    bool first = true;
    auto separate = [&] {
        if (!first)
            append(out, "\n\n", false);
        first = false;
    };
    for (const ChatMessage& m : messages) {
        separate();
        if (m.role == "system") {
            append(out, m.content, false);
        } else if (m.role == "assistant") {
            append(out, "### Response:\n", false);
            append(out, m.content + eos, true);
        } else {
            append(out, "### Instruction:\n" + m.content, false);
        }
    }
    if (addGenerationPrompt) {
        separate();
        append(out, "### Response:\n", false);
    }
}

// Plain: contents joined with "\n"; assistant contents end with eosToken. The generation prompt is
// the "\n" the next message would start with.
void renderPlain(std::vector<ChatSegment>& out, const std::vector<ChatMessage>& messages,
                 bool addGenerationPrompt, const std::string& eos)
{
    for (size_t i = 0; i < messages.size(); ++i) {
        if (i > 0)
            append(out, "\n", false);
        const bool assistant = messages[i].role == "assistant";
        append(out, messages[i].content + (assistant ? eos : ""), assistant);
    }
    if (addGenerationPrompt && !messages.empty())
        append(out, "\n", false);
}

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

}  // namespace

const char* chatTemplateName(ChatTemplateFamily family)
{
    switch (family) {
    case ChatTemplateFamily::ChatML:
        return "chatml";
    case ChatTemplateFamily::Llama3:
        return "llama3";
    case ChatTemplateFamily::Inst:
        return "inst";
    case ChatTemplateFamily::Alpaca:
        return "alpaca";
    case ChatTemplateFamily::Plain:
        return "plain";
    }
    return "plain";
}

std::optional<ChatTemplateFamily> parseChatTemplateName(const std::string& name)
{
    const std::string n = lower(name);
    if (n == "chatml")
        return ChatTemplateFamily::ChatML;
    if (n == "llama3" || n == "llama-3")
        return ChatTemplateFamily::Llama3;
    if (n == "inst" || n == "llama2" || n == "llama-2" || n == "mistral")
        return ChatTemplateFamily::Inst;
    if (n == "alpaca")
        return ChatTemplateFamily::Alpaca;
    if (n == "plain")
        return ChatTemplateFamily::Plain;
    return std::nullopt;
}

std::vector<ChatSegment> renderChat(ChatTemplateFamily family,
                                    const std::vector<ChatMessage>& messages,
                                    bool addGenerationPrompt, const std::string& bosToken,
                                    const std::string& eosToken)
{
    std::vector<ChatSegment> out;
    if (family != ChatTemplateFamily::Inst)
        append(out, bosToken, false);
    switch (family) {
    case ChatTemplateFamily::ChatML:
        renderChatML(out, messages, addGenerationPrompt);
        break;
    case ChatTemplateFamily::Llama3:
        renderLlama3(out, messages, addGenerationPrompt);
        break;
    case ChatTemplateFamily::Inst:
        renderInst(out, messages, bosToken, eosToken);
        break;
    case ChatTemplateFamily::Alpaca:
        renderAlpaca(out, messages, addGenerationPrompt, eosToken);
        break;
    case ChatTemplateFamily::Plain:
        renderPlain(out, messages, addGenerationPrompt, eosToken);
        break;
    }
    return out;
}

std::string renderChatText(ChatTemplateFamily family, const std::vector<ChatMessage>& messages,
                           bool addGenerationPrompt, const std::string& bosToken,
                           const std::string& eosToken)
{
    std::string text;
    for (const ChatSegment& s :
         renderChat(family, messages, addGenerationPrompt, bosToken, eosToken))
        text += s.text;
    return text;
}

std::optional<ChatTemplateFamily> detectChatTemplate(const std::string& jinjaTemplate)
{
    if (jinjaTemplate.find("<|im_start|>") != std::string::npos)
        return ChatTemplateFamily::ChatML;
    if (jinjaTemplate.find("<|start_header_id|>") != std::string::npos)
        return ChatTemplateFamily::Llama3;
    if (jinjaTemplate.find("[INST]") != std::string::npos)
        return ChatTemplateFamily::Inst;
    if (jinjaTemplate.find("### Instruction") != std::string::npos)
        return ChatTemplateFamily::Alpaca;
    return std::nullopt;
}

std::optional<std::string> readChatTemplateText(const std::string& modelDir, std::string* origin)
{
    using nlohmann::json;
    auto parse = [](const std::string& path) {
        const std::string text = readFile(path);
        checkJsonDepth(text, path);
        try {
            return json::parse(text);
        } catch (const json::exception& e) {
            fail(path, ": not valid JSON (", e.what(), ")");
        }
    };
    // chat_template: a string, or a list of {"name", "template"} where "default" is the one used.
    // A key that is there but is neither is named (not reported as no template).
    auto templateOf = [](const json& config,
                         const std::string& path) -> std::optional<std::string> {
        if (!config.is_object())
            fail(path, ": expected a JSON object, found ", config.type_name());
        if (!config.contains("chat_template") || config["chat_template"].is_null())
            return std::nullopt;
        const json& value = config["chat_template"];
        if (value.is_string())
            return value.get<std::string>();
        if (!value.is_array())
            fail(path,
                 ": key 'chat_template' must be a string or a list of {name, template}, found ",
                 value.type_name());
        for (const json& entry : value)
            if (entry.is_object() && entry.value("name", json()) == "default" &&
                entry.contains("template") && entry["template"].is_string())
                return entry["template"].get<std::string>();
        fail(path,
             ": key 'chat_template' is a list without a {\"name\": \"default\", \"template\": "
             "TEXT} entry");
    };
    auto found = [origin](std::string text, std::string from) {
        if (origin)
            *origin = std::move(from);
        return std::optional<std::string>(std::move(text));
    };
    const std::string configPath = joinPath(modelDir, "tokenizer_config.json");
    if (fileExists(configPath))
        if (auto text = templateOf(parse(configPath), configPath))
            return found(*text, configPath + ": chat_template");
    // Newer transformers save the template beside the config instead.
    const std::string jinjaPath = joinPath(modelDir, "chat_template.jinja");
    if (fileExists(jinjaPath))
        return found(readFile(jinjaPath), jinjaPath);
    const std::string jsonPath = joinPath(modelDir, "chat_template.json");
    if (fileExists(jsonPath))
        if (auto text = templateOf(parse(jsonPath), jsonPath))
            return found(*text, jsonPath + ": chat_template");
    return std::nullopt;
}

std::optional<ChatTemplateFamily> detectChatTemplateForModel(const std::string& modelDir)
{
    const auto text = readChatTemplateText(modelDir);
    if (!text)
        return std::nullopt;
    return detectChatTemplate(*text);
}

std::optional<ChatTemplateFamily> chatTemplateOrPlain(const std::string& name,
                                                      const std::string& modelDir)
{
    if (name == "auto" || name == "model")
        return detectChatTemplateForModel(modelDir).value_or(ChatTemplateFamily::Plain);
    return parseChatTemplateName(name);
}

}  // namespace tb
