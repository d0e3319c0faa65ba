// ChatTemplate: the model's own Jinja template or a built-in family behind one interface, and the
// assistant spans that carry loss (generation blocks, else conversation prefixes).
#include "tokenizer/model_template.h"

#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"

#include <algorithm>
#include <cctype>

namespace tb {
namespace {

using jinja::Value;

Value parseJson(const std::string& path)
{
    const std::string text = readFile(path);
    checkJsonDepth(text, path);
    try {
        return Value::parse(text);
    } catch (const Value::exception& e) {
        fail(path, ": not valid JSON (", e.what(), ")");
    }
}

// A special token as tokenizer_config.json writes it: a string or an AddedToken object.
std::optional<std::string> tokenString(const Value& value)
{
    if (value.is_string())
        return value.get<std::string>();
    if (value.is_object() && value.contains("content") && value["content"].is_string())
        return value["content"].get<std::string>();
    return std::nullopt;
}

void addSpecialTokens(ModelTemplateSource& s, const Value& config)
{
    if (!config.is_object())
        return;
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token", "sep_token",
                            "cls_token", "mask_token"})
        if (config.contains(key))
            if (auto token = tokenString(config[key])) {
                s.specialTokens[key] = *token;
                s.specialStrings.push_back(*token);
            }
    if (config.contains("additional_special_tokens") &&
        config["additional_special_tokens"].is_array())
        for (const Value& t : config["additional_special_tokens"])
            if (auto token = tokenString(t))
                s.specialStrings.push_back(*token);
    if (config.contains("added_tokens_decoder") && config["added_tokens_decoder"].is_object())
        for (const auto& [id, t] : config["added_tokens_decoder"].items())
            if (t.is_object() && t.value("special", false))
                if (auto token = tokenString(t))
                    s.specialStrings.push_back(*token);
}

// The end of an assistant turn inside `text` from `from`: the end of the earliest special token
// string there, or npos.
size_t endOfTurnAfter(const std::string& text, size_t from,
                      const std::vector<std::string>& specials, std::string* which)
{
    size_t best = std::string::npos;
    for (const std::string& s : specials) {
        if (s.empty())
            continue;
        const size_t at = text.find(s, from);
        if (at != std::string::npos &&
            (best == std::string::npos || at < best || (at == best && s.size() > which->size()))) {
            best = at;
            *which = s;
        }
    }
    return best == std::string::npos ? best : best + which->size();
}

std::string trimmed(const std::string& s)
{
    const auto notSpace = [](unsigned char c) { return !std::isspace(c); };
    auto b = std::find_if(s.begin(), s.end(), notSpace);
    auto e = std::find_if(s.rbegin(), s.rend(), notSpace).base();
    return b < e ? std::string(b, e) : std::string();
}

// Messages as a family renders them: role and string content (other content renders empty).
std::vector<ChatMessage> plainMessages(const Value& messages)
{
    std::vector<ChatMessage> list;
    for (const Value& m : messages)
        list.push_back({m.value("role", ""), m.contains("content") && m["content"].is_string()
                                                 ? m["content"].get<std::string>()
                                                 : std::string()});
    return list;
}

std::vector<ChatSegment> cut(const std::string& text, const std::vector<jinja::Span>& spans)
{
    std::vector<ChatSegment> out;
    size_t at = 0;
    for (const jinja::Span& s : spans) {
        if (s.begin > at)
            out.push_back({text.substr(at, s.begin - at), false});
        if (s.end > s.begin)
            out.push_back({text.substr(s.begin, s.end - s.begin), true});
        at = std::max(at, s.end);
    }
    if (at < text.size())
        out.push_back({text.substr(at), false});
    return out;
}

}  // namespace

const char* trainOnName(TrainOn trainOn)
{
    return trainOn == TrainOn::Last ? "last" : "all";
}

std::optional<TrainOn> parseTrainOn(const std::string& name)
{
    if (name == "all")
        return TrainOn::All;
    if (name == "last")
        return TrainOn::Last;
    return std::nullopt;
}

std::optional<ModelTemplateSource> readModelTemplate(const std::string& modelDir)
{
    ModelTemplateSource s;
    auto text = readChatTemplateText(modelDir, &s.origin);
    if (!text)
        return std::nullopt;
    s.text = std::move(*text);
    // The special tokens the template renders with, and the candidates for a turn's end.
    const std::string configPath = joinPath(modelDir, "tokenizer_config.json");
    if (fileExists(configPath))
        addSpecialTokens(s, parseJson(configPath));
    // Folders whose tokenizer_config.json lists no added_tokens_decoder declare their special
    // tokens in tokenizer.json.
    const std::string tokenizerPath = joinPath(modelDir, "tokenizer.json");
    if (fileExists(tokenizerPath)) {
        const Value tokenizer = parseJson(tokenizerPath);
        if (tokenizer.is_object() && tokenizer.contains("added_tokens") &&
            tokenizer["added_tokens"].is_array())
            for (const Value& t : tokenizer["added_tokens"])
                if (t.is_object() && t.value("special", false))
                    if (auto token = tokenString(t))
                        s.specialStrings.push_back(*token);
    }
    std::sort(s.specialStrings.begin(), s.specialStrings.end());
    s.specialStrings.erase(std::unique(s.specialStrings.begin(), s.specialStrings.end()),
                           s.specialStrings.end());
    return s;
}

std::optional<ChatTemplate> ChatTemplate::fromModel(const std::string& modelDir)
{
    auto source = readModelTemplate(modelDir);
    if (!source)
        return std::nullopt;
    return fromSource(*source);
}

ChatTemplate ChatTemplate::fromSource(const ModelTemplateSource& source)
{
    ChatTemplate t;
    t.m_source = source;
    t.m_jinja = std::make_shared<const jinja::Template>(source.text, source.origin);
    // The turn's end: the special token written after an assistant's content in a probe.
    try {
        const Value probe = Value::array({Value{{"role", "user"}, {"content", "Hi"}},
                                          Value{{"role", "assistant"}, {"content", "Hello"}}});
        for (const ChatSegment& s : t.segments(probe, TrainOn::Last)) {
            if (!s.trainable)
                continue;
            for (const std::string& special : source.specialStrings)
                if (!special.empty() && s.text.size() >= special.size() &&
                    s.text.compare(s.text.size() - special.size(), special.size(), special) == 0)
                    t.m_endOfTurn.push_back(special);
        }
    } catch (const Error&) {
        // A template that refuses the probe still renders real conversations; stop at EOS only.
    }
    return t;
}

ChatTemplate ChatTemplate::fromFamily(ChatTemplateFamily family, std::string bos, std::string eos)
{
    ChatTemplate t;
    t.m_family = family;
    t.m_bos = std::move(bos);
    t.m_eos = std::move(eos);
    t.m_source.origin = chatTemplateName(family);
    if (family == ChatTemplateFamily::ChatML)
        t.m_endOfTurn = {"<|im_end|>"};
    if (family == ChatTemplateFamily::Llama3)
        t.m_endOfTurn = {"<|eot_id|>"};
    return t;
}

std::string ChatTemplate::name() const
{
    return m_family ? chatTemplateName(*m_family) : "model";
}

const std::string& ChatTemplate::origin() const
{
    return m_source.origin;
}

std::string ChatTemplate::jinjaSource() const
{
    return m_family ? familyJinja(*m_family) : m_source.text;
}

std::string ChatTemplate::render(const Value& messages, bool addGenerationPrompt,
                                 const Value& tools, const Value& extra) const
{
    if (m_family) {
        return renderChatText(*m_family, plainMessages(messages), addGenerationPrompt, m_bos,
                              m_eos);
    }
    Value vars = m_source.specialTokens;
    if (extra.is_object())
        for (const auto& [key, value] : extra.items())
            vars[key] = value;
    const Value context = jinja::chatTemplateContext(messages, tools, addGenerationPrompt, vars);
    return m_jinja->render(context).text;
}

// Assistant message i of `text` (the whole conversation rendered): it starts where the
// conversation leaves the rendering of the messages before it with the generation prompt (that
// prompt's end; or, for a generation prompt that opens more than the rendered turns have, such as
// DeepSeek-R1's "<think>\n", the point where the two part, within the generation prompt and never
// inside a special token), and it
// ends with the first special token after its content, as long as the rendering of the messages up
// to it agrees with the whole that far (what follows, such as a final EOS, may differ).
jinja::Span ChatTemplate::assistantSpan(const Value& messages, size_t i, const Value& tools,
                                        const std::string& text) const
{
    const auto at = messages.begin() + static_cast<std::ptrdiff_t>(i);
    const std::string history = render(Value(messages.begin(), at), false, tools);
    const std::string prompt = render(Value(messages.begin(), at), true, tools);
    const std::string turn = render(Value(messages.begin(), at + 1), false, tools);
    auto common = [&text](const std::string& s) {
        size_t n = 0;
        while (n < s.size() && n < text.size() && s[n] == text[n])
            ++n;
        return n;
    };
    size_t begin = common(prompt);
    for (const std::string& special : m_source.specialStrings) {
        if (special.empty() || begin == 0)
            continue;
        const size_t start = text.rfind(special, begin - 1);
        if (start != std::string::npos && start < begin && start + special.size() > begin)
            begin = start;
    }
    const size_t agree = common(turn);
    auto rewritten = [&] {
        fail(m_source.origin, ": cannot tell which text of assistant message ", i + 1,
             " carries loss: the template renders a conversation's earlier turns differently "
             "once later turns follow (set data.train_on to last, or add {% generation %} "
             "blocks to the template)");
    };
    // The conversation must part from the prompt within the generation prompt, not in the
    // messages before it (the history as the prompt renders it, up to where it differs from the
    // history alone, e.g. by a final EOS).
    size_t historyInPrompt = 0;
    while (historyInPrompt < history.size() && historyInPrompt < prompt.size() &&
           history[historyInPrompt] == prompt[historyInPrompt])
        ++historyInPrompt;
    if (begin < historyInPrompt || agree < begin)
        rewritten();
    const Value& m = messages[i];
    const std::string content = m.contains("content") && m["content"].is_string()
                                    ? trimmed(m["content"].get<std::string>())
                                    : std::string();
    size_t from = begin;
    if (!content.empty())
        if (size_t found = text.find(content, begin); found != std::string::npos && found < agree)
            from = found + content.size();
    std::string which;
    const size_t end = endOfTurnAfter(text, from, m_source.specialStrings, &which);
    if (end != std::string::npos && end > agree)
        rewritten();
    if (end == std::string::npos)
        fail(m_source.origin, ": assistant message ", i + 1,
             " ends with no end-of-turn token the tokenizer declares special (the model could "
             "not learn to stop): add the end token to the template or choose a family in "
             "data.chat_template");
    return {begin, end};
}

std::vector<ChatSegment> ChatTemplate::segments(const Value& messages, TrainOn trainOn,
                                                const Value& tools) const
{
    if (m_family) {
        std::vector<ChatSegment> out =
            renderChat(*m_family, plainMessages(messages), false, m_bos, m_eos);
        if (trainOn == TrainOn::Last) {
            bool last = true;
            for (auto it = out.rbegin(); it != out.rend(); ++it)
                if (it->trainable) {
                    it->trainable = last;
                    last = false;
                }
        }
        return out;
    }

    const Value context =
        jinja::chatTemplateContext(messages, tools, false, m_source.specialTokens);
    const jinja::Rendered full = m_jinja->render(context);
    const std::string& text = full.text;

    if (m_jinja->hasGenerationBlocks()) {
        std::vector<jinja::Span> spans = full.generation;
        if (trainOn == TrainOn::Last && spans.size() > 1)
            spans.erase(spans.begin(), spans.end() - 1);
        return cut(text, spans);
    }

    // Prefix rendering (assistantSpan): each turn from what the conversation up to it renders.
    std::vector<size_t> assistants;
    for (size_t i = 0; i < messages.size(); ++i)
        if (messages[i].value("role", "") == "assistant")
            assistants.push_back(i);
    if (trainOn == TrainOn::Last && assistants.size() > 1)
        assistants.erase(assistants.begin(), assistants.end() - 1);
    std::vector<jinja::Span> spans;
    for (size_t i : assistants)
        spans.push_back(assistantSpan(messages, i, tools, text));
    return cut(text, spans);
}

std::optional<ChatTemplate> chatTemplateByName(const std::string& name, const std::string& modelDir,
                                               bool plainFallback)
{
    if (name != "model" && name != "auto") {
        const auto family = parseChatTemplateName(name);
        if (!family)
            return std::nullopt;
        return ChatTemplate::fromFamily(*family);
    }
    if (auto own = ChatTemplate::fromModel(modelDir))
        return own;
    if (plainFallback)
        return ChatTemplate::fromFamily(ChatTemplateFamily::Plain);
    fail("the model at ", modelDir,
         " has no chat template (tokenizer_config.json has no chat_template): choose one of "
         "chatml, llama3, inst, alpaca, plain");
}

std::vector<int32_t> chatPromptIds(const ChatTemplate& chat, const Tokenizer& tokenizer,
                                   const Value& messages)
{
    return tokenizer.encode(chat.render(messages, true), !chat.isModel());
}

std::vector<int32_t> chatStopIds(const ChatTemplate& chat, const Tokenizer& tokenizer)
{
    std::vector<int32_t> ids;
    if (tokenizer.eosId())
        ids.push_back(*tokenizer.eosId());
    for (const std::string& token : chat.endOfTurnTokens())
        if (auto id = tokenizer.pieceToId(token))
            if (std::find(ids.begin(), ids.end(), *id) == ids.end())
                ids.push_back(*id);
    return ids;
}

Value messagesValue(const std::vector<ChatMessage>& messages)
{
    Value out = Value::array();
    for (const ChatMessage& m : messages)
        out.push_back(Value{{"role", m.role}, {"content", m.content}});
    return out;
}

std::string familyJinja(ChatTemplateFamily family)
{
    switch (family) {
    case ChatTemplateFamily::ChatML:
        return "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
               "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if "
               "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    case ChatTemplateFamily::Llama3:
        return "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
               "'<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}{% endfor %}{% "
               "if add_generation_prompt %}{{ "
               "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' "
               "}}{% endif %}";
    case ChatTemplateFamily::Inst:
        return "{% set ns = namespace(system='') %}{% for message in messages %}{% if "
               "message['role'] == 'system' %}{% set ns.system = ns.system + ('\\n' if "
               "ns.system else '') + message['content'] %}{% elif message['role'] == 'assistant' "
               "%}{{ ' ' + message['content'] + eos_token }}{% else %}{{ '[INST] ' }}{% if "
               "ns.system %}{{ '<<SYS>>\\n' + ns.system + '\\n<</SYS>>\\n\\n' }}{% set ns.system "
               "= '' %}{% endif %}{{ message['content'] + ' [/INST]' }}{% endif %}{% endfor %}{% "
               "if ns.system %}{{ '[INST] <<SYS>>\\n' + ns.system + '\\n<</SYS>>\\n\\n [/INST]' "
               "}}{% endif %}";
    case ChatTemplateFamily::Alpaca:
        return "{% for message in messages %}{% if not loop.first %}{{ '\\n\\n' }}{% endif %}{% "
               "if message['role'] == 'system' %}{{ message['content'] }}{% elif message['role'] "
               "== 'assistant' %}{{ '### Response:\\n' + message['content'] + eos_token }}{% "
               "else %}{{ '### Instruction:\\n' + message['content'] }}{% endif %}{% endfor %}{% "
               "if add_generation_prompt %}{% if messages %}{{ '\\n\\n' }}{% endif %}{{ '### "
               "Response:\\n' }}{% endif %}";
    case ChatTemplateFamily::Plain:
        return "{% for message in messages %}{% if not loop.first %}{{ '\\n' }}{% endif %}{{ "
               "message['content'] }}{% if message['role'] == 'assistant' %}{{ eos_token }}{% "
               "endif %}{% endfor %}{% if add_generation_prompt and messages %}{{ '\\n' }}{% "
               "endif %}";
    }
    return {};
}

}  // namespace tb
