// Jinja templates as Hugging Face chat templates use them (transformers' sandboxed jinja2
// environment): parse once, render with JSON values, report errors by template and position.
#pragma once

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tb::jinja {

// Template values are JSON values that keep their keys in insertion order, as Python dicts do
// (tool schemas and tojson output depend on it).
using Value = nlohmann::ordered_json;

struct Options {
    // transformers compiles chat templates with trim_blocks and lstrip_blocks on.
    bool trimBlocks = true;
    bool lstripBlocks = true;
    // strftime_now(format): the local time now when empty; tests pin it.
    std::function<std::string(const std::string& format)> strftimeNow;
};

// A half-open byte range [begin, end) of rendered text.
struct Span {
    size_t begin = 0;
    size_t end = 0;
};

struct Rendered {
    std::string text;
    // What each {% generation %}...{% endgeneration %} block wrote, in order (the assistant spans
    // transformers' return_assistant_tokens_mask reports).
    std::vector<Span> generation;
};

// raise_exception(message) in a template: what() is "<template name>: <message>", message() the
// template's own words.
class RaisedError : public Error {
public:
    RaisedError(const std::string& templateName, std::string message);
    const std::string& message() const { return m_message; }

private:
    std::string m_message;
};

class Template {
public:
    // Parses source. `name` says which template this is (e.g. "models/qwen/tokenizer_config.json:
    // chat_template") and starts every error message. A syntax error or a construct this
    // interpreter does not support throws tb::Error "<name>: line L, column C: <what>".
    Template(const std::string& source, std::string name, Options options = {});
    ~Template();
    Template(Template&&) noexcept;
    Template& operator=(Template&&) noexcept;

    // Renders with `context`, a JSON object of the template's global variables. An error while
    // rendering (calling a missing method, a type error) throws tb::Error naming the template and
    // the line and column of the expression; raise_exception throws RaisedError.
    Rendered render(const Value& context) const;

    bool hasGenerationBlocks() const;
    const std::string& name() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// The variables transformers' apply_chat_template gives a chat template, from an OpenAI-style
// conversation: messages (a JSON array) with their null-valued keys dropped and a message's
// reasoning (reasoning_content, thinking or reasoning) copied under "thinking" and
// "reasoning_content"; tools (null when none); documents (null); add_generation_prompt; then the
// keys of `extra`: the tokenizer's named special tokens (bos_token, eos_token, unk_token,
// pad_token, those it sets) and the caller's template kwargs (e.g. enable_thinking), kwargs last
// so they win.
Value chatTemplateContext(const Value& messages, const Value& tools, bool addGenerationPrompt,
                          const Value& extra = Value::object());

}  // namespace tb::jinja
