// The statement half of the interpreter: output, if, for (with its filter, else and loop
// controls), set (names, tuples, namespace attributes, blocks), macros and call blocks, filter
// blocks, with, and {% generation %} spans as transformers' AssistantTracker records them.
#include "tokenizer/jinja_eval.h"

#include "tokenizer/jinja_text.h"

namespace tb::jinja::detail {

Val* Scope::find(const std::string& name)
{
    for (auto& [key, value] : vars)
        if (key == name)
            return &value;
    return nullptr;
}

void Scope::set(const std::string& name, Val value)
{
    if (Val* v = find(name))
        *v = std::move(value);
    else
        vars.emplace_back(name, std::move(value));
}

void MacroObj::repr(std::string& out, int) const
{
    out += "<Macro '" + def->name + "'>";
}

Evaluator::Deeper::Deeper(Evaluator& ev) : e(ev)
{
    if (++e.m_depth > kMaxDepth) {
        --e.m_depth;
        failRender("template nested or recursing more than ", kMaxDepth, " levels deep");
    }
}

Evaluator::Evaluator(const Program& program, const Options& options, const std::string& name)
    : m_program(program), m_name(name), m_ctx{options}
{
}

Evaluator::~Evaluator()
{
    for (const auto& scope : m_closures)
        scope->vars.clear();
    for (const auto& ns : m_namespaces)
        ns->attrs.clear();
}

void Evaluator::failHere(Pos pos, const std::string& message) const
{
    failAt(m_name, pos, message);
}

void Evaluator::write(std::string_view text)
{
    if (m_out->size() + text.size() > kMaxStringBytes)
        failRender("the output would pass ", kMaxStringBytes >> 20, " MiB");
    m_out->append(text);
}

Rendered Evaluator::render(const Value& context)
{
    if (!context.is_object() && !context.is_null())
        tb::fail(m_name, ": the context must be a JSON object");
    try {
        m_context = context.is_null() ? Val::dict(std::make_shared<Dict>()) : fromJson(context);
    } catch (const Fail& f) {
        tb::fail(m_name, ": ", f.message);
    }
    m_scope = std::make_shared<Scope>();
    try {
        exec(m_program.body);
    } catch (const Fail& f) {  // a limit hit outside any expression
        tb::fail(m_name, ": ", f.message);
    }
    Rendered out;
    out.text = std::move(m_main);
    out.generation = std::move(m_spans);
    return out;
}

Evaluator::Flow Evaluator::exec(const Body& body)
{
    for (const Stmt& s : body) {
        const Flow flow = execStmt(s);
        if (flow != Flow::Normal)
            return flow;
    }
    return Flow::Normal;
}

std::shared_ptr<Scope> Evaluator::childScope() const
{
    auto scope = std::make_shared<Scope>();
    scope->parent = m_scope;
    return scope;
}

Evaluator::Flow Evaluator::runIn(const Body& body, std::shared_ptr<Scope> scope)
{
    auto saved = std::exchange(m_scope, std::move(scope));
    try {
        const Flow flow = exec(body);
        m_scope = std::move(saved);
        return flow;
    } catch (...) {
        m_scope = std::move(saved);
        throw;
    }
}

// Runs body in `scope` with its output captured.
std::string Evaluator::capture(const Body& body, std::shared_ptr<Scope> scope)
{
    std::string text;
    std::string* savedOut = std::exchange(m_out, &text);
    auto savedScope = std::exchange(m_scope, std::move(scope));
    try {
        exec(body);
    } catch (...) {
        m_out = savedOut;
        m_scope = std::move(savedScope);
        throw;
    }
    m_out = savedOut;
    m_scope = std::move(savedScope);
    return text;
}

Evaluator::Flow Evaluator::execStmt(const Stmt& s)
{
    Deeper deeper(*this);
    switch (s.kind) {
    case StmtKind::Text:
        write(s.text);
        return Flow::Normal;
    case StmtKind::Print: {
        const Val v = eval(*s.expr);
        try {
            write(toStr(v));
        } catch (const Fail& f) {
            failHere(s.expr->pos, f.message);
        }
        return Flow::Normal;
    }
    case StmtKind::If:
        return execIf(s);
    case StmtKind::For:
        return execFor(s);
    case StmtKind::Set:
        assign(s.target, eval(*s.expr));
        return Flow::Normal;
    case StmtKind::SetBlock:
        assign(s.target, filterBlock(s));
        return Flow::Normal;
    case StmtKind::FilterBlock: {
        const Val v = filterBlock(s);
        write(toStr(v));
        return Flow::Normal;
    }
    case StmtKind::Macro:
        m_scope->set(s.macro->name, makeMacro(s.macro.get()));
        return Flow::Normal;
    case StmtKind::CallBlock:
        execCallBlock(s);
        return Flow::Normal;
    case StmtKind::With:
        return execWith(s);
    case StmtKind::Break:
        return Flow::Break;
    case StmtKind::Continue:
        return Flow::Continue;
    case StmtKind::Generation:
        execGeneration(s);
        return Flow::Normal;
    }
    return Flow::Normal;
}

Evaluator::Flow Evaluator::execIf(const Stmt& s)
{
    for (size_t i = 0; i < s.tests.size(); ++i)
        if (truthy(eval(*s.tests[i])))
            return exec(s.bodies[i]);
    if (s.bodies.size() > s.tests.size())
        return exec(s.bodies.back());
    return Flow::Normal;
}

// A for loop: each iteration in its own scope; `else` runs when no iteration reached the end of
// the body (jinja2 clears its flag there, so break and continue leave it set).
Evaluator::Flow Evaluator::execFor(const Stmt& s)
{
    const Val iterable = eval(*s.expr);
    std::shared_ptr<const std::vector<Val>> items;
    try {
        items = iterate(iterable);
    } catch (const Fail& f) {
        failHere(s.expr->pos, f.message);
    }
    const auto outer = m_scope;
    if (s.cond) {
        auto kept = std::make_shared<std::vector<Val>>();
        for (const Val& item : *items) {
            m_ctx.tick();
            m_scope = childScope();
            bind(*m_scope, s.target, item);
            const bool keep = truthy(eval(*s.cond));
            m_scope = outer;
            if (keep)
                kept->push_back(item);
        }
        items = std::move(kept);
    }
    auto loop = std::make_shared<LoopObj>();
    loop->items = items;
    const Val loopVal = Val::object(loop);
    bool completed = false;
    try {
        for (size_t i = 0; i < items->size(); ++i) {
            m_ctx.tick();
            loop->index0 = i;
            m_scope = childScope();
            m_scope->set("loop", loopVal);
            bind(*m_scope, s.target, (*items)[i]);
            const Flow flow = exec(s.body);
            m_scope = outer;
            if (flow == Flow::Break)
                break;
            if (flow == Flow::Normal)
                completed = true;
        }
    } catch (...) {
        m_scope = outer;
        throw;
    }
    if (!completed && !s.orelse.empty())
        return runIn(s.orelse, childScope());
    return Flow::Normal;
}

void Evaluator::bind(Scope& scope, const Target& target, const Val& value)
{
    if (target.kind == Target::Kind::Name) {
        scope.set(target.name, value);
        return;
    }
    if (target.kind == Target::Kind::NsAttr) {
        assign(target, value);
        return;
    }
    std::shared_ptr<const std::vector<Val>> items;
    try {
        items = iterate(value);
    } catch (const Fail& f) {
        failHere(target.pos,
                 "cannot unpack non-iterable " + std::string(typeName(value)) + " object");
    }
    if (items->size() != target.items.size())
        failHere(target.pos,
                 tb::cat(items->size() > target.items.size() ? "too many" : "not enough",
                         " values to unpack (expected ", target.items.size(), ", got ",
                         items->size(), ")"));
    for (size_t i = 0; i < items->size(); ++i)
        bind(scope, target.items[i], (*items)[i]);
}

void Evaluator::assign(const Target& target, const Val& value)
{
    if (target.kind != Target::Kind::NsAttr) {
        bind(*m_scope, target, value);
        return;
    }
    const Val ns = lookup(target.name);
    if (!ns.isObject() || ns.object().kind != ObjKind::Namespace)
        failHere(target.pos, "cannot assign attribute on non-namespace object");
    if (!target.attr.empty() && target.attr[0] == '_')
        failHere(target.pos, "Chat templates cannot store underscore-prefixed attributes on a "
                             "namespace, but got " +
                                 pyStrRepr(target.attr) + ". Please rename the attribute.");
    static_cast<Namespace&>(ns.object()).attrs.set(target.attr, value);
}

Val Evaluator::makeMacro(const MacroDef* def)
{
    m_closures.push_back(m_scope);
    return Val::object(std::make_shared<MacroObj>(def, m_scope));
}

Val Evaluator::filterBlock(const Stmt& s)
{
    const Val text(capture(s.body, childScope()));
    if (!s.expr)
        return text;
    const Val* saved = std::exchange(m_blockInput, &text);
    try {
        Val v = eval(*s.expr);
        m_blockInput = saved;
        return v;
    } catch (...) {
        m_blockInput = saved;
        throw;
    }
}

// The values are evaluated in the enclosing scope, the body runs in a new one.
Evaluator::Flow Evaluator::execWith(const Stmt& s)
{
    auto scope = childScope();
    for (size_t i = 0; i < s.withTargets.size(); ++i)
        bind(*scope, s.withTargets[i], eval(*s.withValues[i]));
    return runIn(s.body, std::move(scope));
}

void Evaluator::execCallBlock(const Stmt& s)
{
    const Val caller = makeMacro(s.macro.get());
    const Val v = evalCall(*s.expr, &caller);
    write(toStr(v));
}

// The body renders like a call block's caller; the span starts where the top-level output has
// got to, which is what AssistantTracker measures (it only sees the chunks jinja2 has yielded).
void Evaluator::execGeneration(const Stmt& s)
{
    const size_t begin = m_main.size();
    const std::string text = capture(s.body, childScope());
    m_spans.push_back(Span{begin, begin + text.size()});
    write(text);
}

}  // namespace tb::jinja::detail
