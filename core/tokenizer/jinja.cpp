// tb::jinja::Template: parses once, renders on demand (each render with its own interpreter, so
// one template can render on several threads at once), and turns raise_exception into
// RaisedError.
#include "tokenizer/jinja.h"

#include "tokenizer/jinja_eval.h"

namespace tb::jinja {

RaisedError::RaisedError(const std::string& templateName, std::string message)
    : Error(templateName + ": " + message), m_message(std::move(message))
{
}

struct Template::Impl {
    std::string name;
    Options options;
    detail::Program program;
};

Template::Template(const std::string& source, std::string name, Options options)
    : m_impl(std::make_unique<Impl>())
{
    m_impl->name = std::move(name);
    m_impl->options = std::move(options);
    m_impl->program = detail::parseTemplate(source, m_impl->options, m_impl->name);
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

Rendered Template::render(const Value& context) const
{
    detail::Evaluator evaluator(m_impl->program, m_impl->options, m_impl->name);
    try {
        return evaluator.render(context);
    } catch (const detail::Raised& raised) {
        throw RaisedError(m_impl->name, raised.message);
    }
}

bool Template::hasGenerationBlocks() const
{
    return m_impl->program.hasGeneration;
}

const std::string& Template::name() const
{
    return m_impl->name;
}

Value chatTemplateContext(const Value& messages, const Value& tools, bool addGenerationPrompt,
                          const Value& extra)
{
    Value plain = Value::array();
    for (const Value& message : messages) {
        if (!message.is_object()) {
            plain.push_back(message);
            continue;
        }
        Value kept = Value::object();
        for (const auto& [key, value] : message.items())
            if (!value.is_null())
                kept[key] = value;
        const Value* reasoning = nullptr;
        for (const char* key : {"reasoning_content", "thinking", "reasoning"})
            if (kept.contains(key)) {
                reasoning = &kept[key];
                break;
            }
        if (reasoning) {  // {"thinking": r, **message, "reasoning_content": r}, as Python orders it
            Value aliased = Value::object();
            aliased["thinking"] = *reasoning;
            for (const auto& [key, value] : kept.items())
                aliased[key] = value;
            aliased["reasoning_content"] = *reasoning;
            kept = std::move(aliased);
        }
        plain.push_back(std::move(kept));
    }
    Value context = Value::object();
    for (const auto& [key, value] : extra.items())
        context[key] = value;
    context["messages"] = std::move(plain);
    context["tools"] = tools;
    context["documents"] = nullptr;
    context["add_generation_prompt"] = addGenerationPrompt;
    return context;
}

}  // namespace tb::jinja
