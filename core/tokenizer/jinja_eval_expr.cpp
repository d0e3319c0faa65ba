// The expression half of the interpreter: names through the scope chain, the context and the
// globals; operators; subscripts; calls of macros, methods and globals; filters and tests. An
// error takes the position of the innermost expression it came from.
#include "tokenizer/jinja_eval.h"

#include <algorithm>

namespace tb::jinja::detail {

Val Evaluator::eval(const Expr& e)
{
    try {
        Deeper deeper(*this);
        return evalImpl(e);
    } catch (const Fail& f) {
        failHere(e.pos, f.message);
    }
}

Val Evaluator::evalImpl(const Expr& e)
{
    switch (e.kind) {
    case ExprKind::Const:
        return e.value;
    case ExprKind::Name:
        return lookup(e.name);
    case ExprKind::Attr:
        return getAttr(eval(*e.kids[0]), e.name);
    case ExprKind::Item:
        return evalItem(e);
    case ExprKind::Call:
        return evalCall(e, nullptr);
    case ExprKind::Filter:
        return evalFilter(e);
    case ExprKind::Test:
        return evalTest(e);
    case ExprKind::Not:
        return Val(!truthy(eval(*e.kids[0])));
    case ExprKind::Neg:
        return negate(eval(*e.kids[0]));
    case ExprKind::Plus:
        return plus(eval(*e.kids[0]));
    case ExprKind::Binary: {
        const Val a = eval(*e.kids[0]);
        return binaryOp(e.op, a, eval(*e.kids[1]));
    }
    case ExprKind::And: {
        Val a = eval(*e.kids[0]);
        return truthy(a) ? eval(*e.kids[1]) : a;
    }
    case ExprKind::Or: {
        Val a = eval(*e.kids[0]);
        return truthy(a) ? a : eval(*e.kids[1]);
    }
    case ExprKind::Concat:
        return evalConcat(e);
    case ExprKind::Compare:
        return evalCompare(e);
    case ExprKind::Cond:
        return evalCond(e);
    case ExprKind::List:
    case ExprKind::Tuple:
    case ExprKind::Dict:
        return evalLiteral(e);
    case ExprKind::Slice:
        failRender("unsupported: a slice inside a tuple subscript");
    case ExprKind::NsRef:
        failRender("unsupported: namespace reference outside {% set %}");
    }
    failRender("unsupported expression");
}

Val Evaluator::lookup(const std::string& name) const
{
    for (Scope* s = m_scope.get(); s; s = s->parent.get())
        if (const Val* v = s->find(name))
            return *v;
    if (const Val* v = m_context.dict().find(name))
        return *v;
    if (const Val* g = globalNamed(name))
        return *g;
    return Val::undefined("'" + name + "' is undefined");
}

Args Evaluator::evalArgs(const std::vector<Arg>& args)
{
    Args out;
    for (const Arg& arg : args) {
        if (arg.name.empty()) {
            out.pos.push_back(eval(*arg.value));
        } else if (arg.name == "*") {
            const Val v = eval(*arg.value);
            const auto iterated = iterate(v);
            for (const Val& item : *iterated)
                out.pos.push_back(item);
        } else if (arg.name == "**") {
            const Val v = eval(*arg.value);
            if (!v.isDict())
                failRender("argument after ** must be a mapping, not ", typeName(v));
            for (const auto& [key, value] : v.dict().items()) {
                if (!key.isString())
                    failRender("keywords must be strings");
                out.kw.emplace_back(key.str(), value);
            }
        } else {
            out.kw.emplace_back(arg.name, eval(*arg.value));
        }
    }
    return out;
}

Val Evaluator::evalCall(const Expr& e, const Val* caller)
{
    const Val callee = eval(*e.kids[0]);
    Args args = evalArgs(e.args);
    try {
        return callValue(callee, args, caller);
    } catch (const Fail& f) {
        failHere(e.pos, f.message);
    }
}

Val Evaluator::callValue(const Val& callee, Args& args, const Val* caller)
{
    if (caller)
        args.kw.emplace_back("caller", *caller);
    if (callee.isUndefined())
        callee.raiseUndefined();
    if (!callee.isObject())
        failRender("'", typeName(callee), "' object is not callable");
    Object& object = callee.object();
    switch (object.kind) {
    case ObjKind::Macro:
        return callMacro(static_cast<const MacroObj&>(object), args);
    case ObjKind::Method:
        return callMethod(m_ctx, static_cast<const MethodObj&>(object), args);
    case ObjKind::Function: {
        m_ctx.tick();
        Val v = callGlobal(m_ctx, static_cast<const FunctionObj&>(object).which, args);
        if (v.isObject() && v.object().kind == ObjKind::Namespace)
            m_namespaces.push_back(std::static_pointer_cast<Namespace>(v.objectPtr()));
        return v;
    }
    default:
        failRender("'", typeName(callee), "' object is not callable");
    }
}

// jinja2's Macro._invoke: positional then keyword arguments, defaults evaluated in the macro's
// own scope, the rest undefined; caller, varargs and kwargs only when the body names them.
Val Evaluator::callMacro(const MacroObj& macro, const Args& args)
{
    const MacroDef& def = *macro.def;
    if (m_calls >= kMaxCalls)
        failRender("macro calls nested more than ", kMaxCalls, " deep");
    m_ctx.tick();
    auto scope = std::make_shared<Scope>();
    scope->parent = macro.closure;
    const size_t n = def.params.size();
    if (args.pos.size() > n && !def.usesVarargs)
        failRender("macro '", def.name, "' takes not more than ", n, " argument(s)");
    std::vector<bool> given(n, false);
    for (size_t i = 0; i < std::min(n, args.pos.size()); ++i) {
        scope->set(def.params[i], args.pos[i]);
        given[i] = true;
    }
    auto extra = std::make_shared<Dict>();
    Val callerVal = Val::undefined("No caller defined");
    for (const auto& [key, value] : args.kw) {
        const auto it = std::find(def.params.begin(), def.params.end(), key);
        if (it != def.params.end()) {
            const auto i = static_cast<size_t>(it - def.params.begin());
            if (given[i])
                failRender("macro '", def.name, "' got multiple values for argument '", key, "'");
            scope->set(key, value);
            given[i] = true;
        } else if (key == "caller" && def.usesCaller) {
            callerVal = value;
        } else if (def.usesKwargs) {
            extra->set(key, value);
        } else {
            failRender("macro '", def.name, "' takes no keyword argument '", key, "'");
        }
    }
    if (def.usesVarargs) {
        std::vector<Val> rest;
        for (size_t i = n; i < args.pos.size(); ++i)
            rest.push_back(args.pos[i]);
        scope->set("varargs", Val::list(std::move(rest), Seq::Tuple));
    }
    if (def.usesKwargs)
        scope->set("kwargs", Val::dict(extra));
    if (def.usesCaller)
        scope->set("caller", callerVal);
    ++m_calls;
    struct Uncall {
        int& calls;
        ~Uncall() { --calls; }
    } uncall{m_calls};
    auto saved = std::exchange(m_scope, scope);
    try {
        for (size_t i = 0; i < n; ++i)
            if (!given[i])
                scope->set(def.params[i], def.defaults[i]
                                              ? eval(*def.defaults[i])
                                              : Val::undefined("parameter '" + def.params[i] +
                                                               "' was not provided"));
    } catch (...) {
        m_scope = std::move(saved);
        throw;
    }
    m_scope = std::move(saved);
    return Val(capture(def.body, scope));
}

Val Evaluator::evalFilter(const Expr& e)
{
    Val input;
    if (!e.kids.empty())
        input = eval(*e.kids[0]);
    else if (m_blockInput)
        input = *m_blockInput;
    const Args args = evalArgs(e.args);
    m_ctx.tick();
    return applyFilter(m_ctx, e.builtin, input, args);
}

Val Evaluator::evalTest(const Expr& e)
{
    const Val input = eval(*e.kids[0]);
    const Args args = evalArgs(e.args);
    return Val(applyTest(m_ctx, e.builtin, input, args));
}

Val Evaluator::evalCompare(const Expr& e)
{
    Val left = eval(*e.kids[0]);
    for (size_t i = 0; i < e.cmp.size(); ++i) {
        Val right = eval(*e.kids[i + 1]);
        if (!compareOp(e.cmp[i], left, right))
            return Val(false);
        left = std::move(right);
    }
    return Val(true);
}

Val Evaluator::evalConcat(const Expr& e)
{
    std::string out;
    for (const auto& kid : e.kids) {
        const Val v = eval(*kid);
        const std::string s = toStr(v);
        checkSize(out.size() + s.size());
        out += s;
    }
    return Val(std::move(out));
}

Val Evaluator::evalItem(const Expr& e)
{
    const Val obj = eval(*e.kids[0]);
    const Expr& key = *e.kids[1];
    if (key.kind != ExprKind::Slice)
        return getItem(obj, eval(key));
    Val bounds[3];
    for (int i = 0; i < 3; ++i)
        bounds[i] = key.kids[static_cast<size_t>(i)] ? eval(*key.kids[static_cast<size_t>(i)])
                                                     : Val::none();
    return sliceOf(obj, bounds[0], bounds[1], bounds[2]);
}

Val Evaluator::evalCond(const Expr& e)
{
    if (truthy(eval(*e.kids[0])))
        return eval(*e.kids[1]);
    if (e.kids[2])
        return eval(*e.kids[2]);
    return Val::undefined(tb::cat("the inline if-expression on line ", e.pos.line,
                                  " evaluated to false and no else section was defined."));
}

Val Evaluator::evalLiteral(const Expr& e)
{
    if (e.kind == ExprKind::Dict) {
        auto dict = std::make_shared<Dict>();
        for (size_t i = 0; i + 1 < e.kids.size(); i += 2) {
            Val key = eval(*e.kids[i]);
            dict->set(key, eval(*e.kids[i + 1]));
        }
        return Val::dict(std::move(dict));
    }
    std::vector<Val> items;
    items.reserve(e.kids.size());
    for (const auto& kid : e.kids)
        items.push_back(eval(*kid));
    return Val::list(std::move(items), e.kind == ExprKind::Tuple ? Seq::Tuple : Seq::List);
}

}  // namespace tb::jinja::detail
