// jinja2's recursive-descent parser (parser.py) for the statements and expressions chat templates
// use, with its precedence, its tuple and test-argument rules, and limits on nesting.
#include "tokenizer/jinja_parser_impl.h"

#include "tokenizer/jinja_builtins.h"

namespace tb::jinja::detail {

namespace {

void scanMacroNames(const Body& body, MacroDef& def);

void scanExpr(const Expr* e, MacroDef& def)
{
    if (!e)
        return;
    if (e->kind == ExprKind::Name) {
        def.usesCaller = def.usesCaller || e->name == "caller";
        def.usesVarargs = def.usesVarargs || e->name == "varargs";
        def.usesKwargs = def.usesKwargs || e->name == "kwargs";
    }
    for (const auto& kid : e->kids)
        scanExpr(kid.get(), def);
    for (const auto& arg : e->args)
        scanExpr(arg.value.get(), def);
}

// jinja2 lets a macro take caller, *varargs or **kwargs when its body names them.
void scanMacroNames(const Body& body, MacroDef& def)
{
    for (const Stmt& s : body) {
        scanExpr(s.expr.get(), def);
        scanExpr(s.cond.get(), def);
        for (const auto& t : s.tests)
            scanExpr(t.get(), def);
        for (const auto& v : s.withValues)
            scanExpr(v.get(), def);
        for (const Body& b : s.bodies)
            scanMacroNames(b, def);
        scanMacroNames(s.body, def);
        scanMacroNames(s.orelse, def);
        if (s.macro) {
            for (const auto& d : s.macro->defaults)
                scanExpr(d.get(), def);
            scanMacroNames(s.macro->body, def);
        }
    }
}

}  // namespace

void Parser::parseStatement(Body& body)
{
    const Token& t = cur();
    if (t.type != Tok::Name)
        error(t.pos, "tag name expected");
    const std::string tag = t.text;
    const Pos pos = t.pos;
    if (tag == "for") {
        body.push_back(parseFor());
    } else if (tag == "if") {
        body.push_back(parseIf());
    } else if (tag == "set") {
        body.push_back(parseSet());
    } else if (tag == "macro") {
        body.push_back(parseMacro());
    } else if (tag == "call") {
        body.push_back(parseCallBlock());
    } else if (tag == "filter") {
        body.push_back(parseFilterBlock());
    } else if (tag == "with") {
        body.push_back(parseWith());
    } else if (tag == "print") {
        next();
        Stmt s;
        s.kind = StmtKind::Print;
        s.pos = pos;
        auto tuple = node(ExprKind::Tuple, pos);
        while (cur().type != Tok::BlockEnd) {
            if (!tuple->kids.empty())
                expectOp(",");
            adopt(*tuple, parseExpression());
        }
        s.expr = tuple->kids.size() == 1 ? std::move(tuple->kids[0]) : std::move(tuple);
        body.push_back(std::move(s));
    } else if (tag == "break" || tag == "continue") {
        next();
        if (m_loops == 0)
            error(pos, tb::cat("'", tag, "' outside loop"));
        Stmt s;
        s.kind = tag == "break" ? StmtKind::Break : StmtKind::Continue;
        s.pos = pos;
        body.push_back(std::move(s));
    } else if (tag == "generation") {
        next();
        m_hasGeneration = true;
        Stmt s;
        s.kind = StmtKind::Generation;
        s.pos = pos;
        const int loops = std::exchange(m_loops, 0);  // the body is a caller function in jinja2
        s.body = parseStatements({"endgeneration"}, true);
        m_loops = loops;
        body.push_back(std::move(s));
    } else if (tag == "extends" || tag == "include" || tag == "import" || tag == "from" ||
               tag == "block" || tag == "autoescape") {
        error(pos, tb::cat("unsupported tag '", tag, "'"));
    } else {
        error(pos, tb::cat("unknown tag '", tag, "'"));
    }
}

Stmt Parser::parseFor()
{
    Stmt s;
    s.kind = StmtKind::For;
    s.pos = next().pos;
    s.target = parseAssignTarget(false, "in", false);
    if (!skipName("in"))
        error(cur().pos, tb::cat("expected 'in', got '", describe(cur()), "'"));
    s.expr = parseTuple(false, false, "recursive", false);
    if (skipName("if"))
        s.cond = parseExpression();
    if (isName("recursive"))
        error(cur().pos, "unsupported: recursive for loops");
    ++m_loops;
    s.body = parseStatements({"endfor", "else"}, false);
    --m_loops;
    if (next().text == "else")
        s.orelse = parseStatements({"endfor"}, true);
    return s;
}

Stmt Parser::parseIf()
{
    Stmt s;
    s.kind = StmtKind::If;
    s.pos = next().pos;
    while (true) {
        s.tests.push_back(parseTuple(false, false, nullptr, false));
        s.bodies.push_back(parseStatements({"elif", "else", "endif"}, false));
        const Token& t = next();
        if (t.text == "elif")
            continue;
        if (t.text == "else")
            s.bodies.push_back(parseStatements({"endif"}, true));
        break;
    }
    return s;
}

Stmt Parser::parseSet()
{
    Stmt s;
    s.pos = next().pos;
    s.target = parseAssignTarget(false, nullptr, true);
    if (skipOp("=")) {
        s.kind = StmtKind::Set;
        s.expr = parseTuple(false, true, nullptr, false);
        return s;
    }
    s.kind = StmtKind::SetBlock;
    s.expr = parseFilter(nullptr, false);
    const int loops = std::exchange(m_loops, 0);
    s.body = parseStatements({"endset"}, true);
    m_loops = loops;
    return s;
}

void Parser::parseSignature(MacroDef& def)
{
    expectOp("(");
    while (!isOp(")")) {
        if (!def.params.empty())
            expectOp(",");
        const Token& name = expectName();
        def.params.push_back(name.text);
        if (skipOp("="))
            def.defaults.push_back(parseExpression());
        else if (std::any_of(def.defaults.begin(), def.defaults.end(),
                             [](const ExprPtr& d) { return d != nullptr; }))
            error(name.pos, "non-default argument follows default argument");
        else
            def.defaults.push_back(nullptr);
    }
    expectOp(")");
}

Stmt Parser::parseMacro()
{
    Stmt s;
    s.kind = StmtKind::Macro;
    s.pos = next().pos;
    s.macro = std::make_shared<MacroDef>();
    s.macro->pos = s.pos;
    s.macro->name = expectName().text;
    parseSignature(*s.macro);
    const int loops = std::exchange(m_loops, 0);
    s.macro->body = parseStatements({"endmacro"}, true);
    m_loops = loops;
    scanMacroNames(s.macro->body, *s.macro);
    for (const auto& d : s.macro->defaults)
        scanExpr(d.get(), *s.macro);
    return s;
}

Stmt Parser::parseCallBlock()
{
    Stmt s;
    s.kind = StmtKind::CallBlock;
    s.pos = next().pos;
    s.macro = std::make_shared<MacroDef>();
    s.macro->name = "caller";
    s.macro->pos = s.pos;
    if (isOp("("))
        parseSignature(*s.macro);
    s.expr = parseExpression();
    if (s.expr->kind != ExprKind::Call)
        error(s.pos, "expected call");
    const int loops = std::exchange(m_loops, 0);
    s.macro->body = parseStatements({"endcall"}, true);
    m_loops = loops;
    scanMacroNames(s.macro->body, *s.macro);
    return s;
}

Stmt Parser::parseFilterBlock()
{
    Stmt s;
    s.kind = StmtKind::FilterBlock;
    s.pos = next().pos;
    s.expr = parseFilter(nullptr, true);
    const int loops = std::exchange(m_loops, 0);
    s.body = parseStatements({"endfilter"}, true);
    m_loops = loops;
    return s;
}

Stmt Parser::parseWith()
{
    Stmt s;
    s.kind = StmtKind::With;
    s.pos = next().pos;
    while (cur().type != Tok::BlockEnd) {
        if (!s.withTargets.empty())
            expectOp(",");
        s.withTargets.push_back(parseAssignTarget(false, nullptr, false));
        expectOp("=");
        s.withValues.push_back(parseExpression());
    }
    s.body = parseStatements({"endwith"}, true);
    return s;
}

Target Parser::toTarget(const Expr& e, bool withNamespace)
{
    Target t;
    t.pos = e.pos;
    if (e.kind == ExprKind::Name) {
        t.name = e.name;
        return t;
    }
    if (e.kind == ExprKind::NsRef && withNamespace) {
        t.kind = Target::Kind::NsAttr;
        t.name = e.value.str();
        t.attr = e.name;
        return t;
    }
    if (e.kind == ExprKind::Tuple) {
        t.kind = Target::Kind::Tuple;
        for (const auto& kid : e.kids)
            t.items.push_back(toTarget(*kid, withNamespace));
        return t;
    }
    error(e.pos, "can't assign to this expression");
}

Target Parser::parseAssignTarget(bool nameOnly, const char* extraEnd, bool withNamespace)
{
    if (nameOnly) {
        Target t;
        t.pos = cur().pos;
        t.name = expectName().text;
        return t;
    }
    ExprPtr e = parseTuple(true, true, extraEnd, false, withNamespace);
    return toTarget(*e, withNamespace);
}

Program parseTemplate(const std::string& source, const Options& options, const std::string& name)
{
    return Parser(tokenize(source, options, name), name).run();
}

}  // namespace tb::jinja::detail
