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

}  // namespace tb::jinja
