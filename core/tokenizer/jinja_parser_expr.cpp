// The expression half of the parser: jinja2's precedence from conditional expressions down to
// primaries, postfix subscripts and calls, filters and tests.
#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_parser_impl.h"

namespace tb::jinja::detail {

ExprPtr Parser::parseExpression(bool withCondexpr)
{
    return withCondexpr ? parseCondexpr() : parseOr();
}

ExprPtr Parser::parseCondexpr()
{
    ExprPtr expr1 = parseOr();
    while (isName("if")) {
        const Pos pos = next().pos;
        ExprPtr test = parseOr();
        ExprPtr orelse = skipName("else") ? parseCondexpr() : nullptr;
        auto cond = node(ExprKind::Cond, pos);
        adopt(*cond, std::move(test));
        adopt(*cond, std::move(expr1));
        adopt(*cond, std::move(orelse));
        expr1 = std::move(cond);
    }
    return expr1;
}

ExprPtr Parser::parseOr()
{
    ExprPtr left = parseAnd();
    while (isName("or")) {
        auto e = node(ExprKind::Or, next().pos);
        adopt(*e, std::move(left));
        adopt(*e, parseAnd());
        left = std::move(e);
    }
    return left;
}

ExprPtr Parser::parseAnd()
{
    ExprPtr left = parseNot();
    while (isName("and")) {
        auto e = node(ExprKind::And, next().pos);
        adopt(*e, std::move(left));
        adopt(*e, parseNot());
        left = std::move(e);
    }
    return left;
}

ExprPtr Parser::parseNot()
{
    if (!isName("not"))
        return parseCompare();
    Nest nest(*this);
    auto e = node(ExprKind::Not, next().pos);
    adopt(*e, parseNot());
    return e;
}

ExprPtr Parser::parseCompare()
{
    const Pos pos = cur().pos;
    ExprPtr first = parseMath1();
    ExprPtr cmp;
    while (true) {
        CmpOp op;
        if (isOp("=="))
            op = CmpOp::Eq;
        else if (isOp("!="))
            op = CmpOp::Ne;
        else if (isOp("<"))
            op = CmpOp::Lt;
        else if (isOp("<="))
            op = CmpOp::Le;
        else if (isOp(">"))
            op = CmpOp::Gt;
        else if (isOp(">="))
            op = CmpOp::Ge;
        else if (isName("in"))
            op = CmpOp::In;
        else if (isName("not") && peek().type == Tok::Name && peek().text == "in")
            op = CmpOp::NotIn;
        else
            break;
        next();
        if (op == CmpOp::NotIn)
            next();
        if (!cmp) {
            cmp = node(ExprKind::Compare, pos);
            adopt(*cmp, std::move(first));
        }
        cmp->cmp.push_back(op);
        adopt(*cmp, parseMath1());
    }
    return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::parseMath1()
{
    ExprPtr left = parseConcat();
    while (isOp("+") || isOp("-")) {
        auto e = node(ExprKind::Binary, cur().pos);
        e->op = next().text == "+" ? BinOp::Add : BinOp::Sub;
        adopt(*e, std::move(left));
        adopt(*e, parseConcat());
        left = std::move(e);
    }
    return left;
}

ExprPtr Parser::parseConcat()
{
    ExprPtr first = parseMath2();
    if (!isOp("~"))
        return first;
    auto e = node(ExprKind::Concat, cur().pos);
    adopt(*e, std::move(first));
    while (skipOp("~"))
        adopt(*e, parseMath2());
    return e;
}

ExprPtr Parser::parseMath2()
{
    ExprPtr left = parsePow();
    while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
        auto e = node(ExprKind::Binary, cur().pos);
        const std::string& op = next().text;
        e->op = op == "*"    ? BinOp::Mul
                : op == "/"  ? BinOp::Div
                : op == "//" ? BinOp::FloorDiv
                             : BinOp::Mod;
        adopt(*e, std::move(left));
        adopt(*e, parsePow());
        left = std::move(e);
    }
    return left;
}

ExprPtr Parser::parsePow()
{
    ExprPtr left = parseUnary(true);
    while (isOp("**")) {
        auto e = node(ExprKind::Binary, next().pos);
        e->op = BinOp::Pow;
        adopt(*e, std::move(left));
        adopt(*e, parseUnary(true));
        left = std::move(e);
    }
    return left;
}

// Unary minus binds tighter than ** and its operand takes no filters: -x|abs is (-x)|abs.
ExprPtr Parser::parseUnary(bool withFilter)
{
    Nest nest(*this);
    ExprPtr e;
    if (isOp("-") || isOp("+")) {
        const bool minus = cur().text == "-";
        e = node(minus ? ExprKind::Neg : ExprKind::Plus, next().pos);
        adopt(*e, parseUnary(false));
    } else {
        e = parsePrimary();
    }
    e = parsePostfix(std::move(e));
    if (withFilter)
        e = parseFilterExpr(std::move(e));
    return e;
}

ExprPtr Parser::parsePrimary(bool withNamespace)
{
    Nest nest(*this);
    const Token& t = cur();
    const Pos pos = t.pos;
    if (t.type == Tok::Name) {
        const std::string name = next().text;
        auto e = node(ExprKind::Const, pos);
        if (name == "true" || name == "True" || name == "false" || name == "False") {
            e->value = Val(name == "true" || name == "True");
        } else if (name == "none" || name == "None") {
            e->value = Val::none();
        } else if (withNamespace && isOp(".")) {
            next();
            e->kind = ExprKind::NsRef;
            e->value = Val(name);
            e->name = expectName().text;
        } else {
            e->kind = ExprKind::Name;
            e->name = name;
        }
        return e;
    }
    if (t.type == Tok::String) {
        std::string text;
        while (cur().type == Tok::String)
            text += next().text;
        auto e = node(ExprKind::Const, pos);
        e->value = Val(std::move(text));
        return e;
    }
    if (t.type == Tok::Int || t.type == Tok::Float) {
        auto e = node(ExprKind::Const, pos);
        e->value = t.type == Tok::Int ? Val(t.integer) : Val(t.number);
        next();
        return e;
    }
    if (isOp("(")) {
        next();
        ExprPtr e = parseTuple(false, true, nullptr, true);
        expectOp(")");
        return e;
    }
    if (isOp("["))
        return parseList();
    if (isOp("{"))
        return parseDict();
    error(pos, tb::cat("unexpected '", describe(t), "'"));
}

bool Parser::isTupleEnd(const char* extraEnd) const
{
    const Tok type = cur().type;
    if (type == Tok::VarEnd || type == Tok::BlockEnd || isOp(")"))
        return true;
    return extraEnd && isName(extraEnd);
}

ExprPtr Parser::parseTuple(bool simplified, bool withCondexpr, const char* extraEnd,
                           bool explicitParens, bool withNamespace)
{
    const Pos pos = cur().pos;
    auto tuple = node(ExprKind::Tuple, pos);
    bool isTuple = false;
    while (true) {
        if (!tuple->kids.empty())
            expectOp(",");
        if (isTupleEnd(extraEnd))
            break;
        adopt(*tuple, simplified ? parsePrimary(withNamespace) : parseExpression(withCondexpr));
        if (isOp(","))
            isTuple = true;
        else
            break;
    }
    if (!isTuple) {
        if (!tuple->kids.empty())
            return std::move(tuple->kids[0]);
        if (!explicitParens)
            error(cur().pos, tb::cat("expected an expression, got '", describe(cur()), "'"));
    }
    return tuple;
}

ExprPtr Parser::parseList()
{
    auto e = node(ExprKind::List, next().pos);
    while (!isOp("]")) {
        if (!e->kids.empty())
            expectOp(",");
        if (isOp("]"))
            break;
        adopt(*e, parseExpression());
    }
    expectOp("]");
    return e;
}

ExprPtr Parser::parseDict()
{
    auto e = node(ExprKind::Dict, next().pos);
    while (!isOp("}")) {
        if (!e->kids.empty())
            expectOp(",");
        if (isOp("}"))
            break;
        adopt(*e, parseExpression());
        expectOp(":");
        adopt(*e, parseExpression());
    }
    expectOp("}");
    return e;
}

ExprPtr Parser::parsePostfix(ExprPtr e)
{
    while (true) {
        if (isOp(".") || isOp("["))
            e = parseSubscript(std::move(e));
        else if (isOp("("))
            e = parseCall(std::move(e));
        else
            return e;
    }
}

ExprPtr Parser::parseFilterExpr(ExprPtr e)
{
    while (true) {
        if (isOp("|"))
            e = parseFilter(std::move(e), false);
        else if (isName("is"))
            e = parseTest(std::move(e));
        else if (isOp("("))
            e = parseCall(std::move(e));
        else
            return e;
    }
}

ExprPtr Parser::parseSubscript(ExprPtr obj)
{
    const Token& t = next();
    if (t.text == ".") {
        const Token& attr = cur();
        if (attr.type == Tok::Name) {
            auto e = node(ExprKind::Attr, attr.pos);
            e->name = next().text;
            adopt(*e, std::move(obj));
            return e;
        }
        if (attr.type != Tok::Int)
            error(attr.pos, "expected name or number");
        auto e = node(ExprKind::Item, attr.pos);
        auto key = node(ExprKind::Const, attr.pos);
        key->value = Val(next().integer);
        adopt(*e, std::move(obj));
        adopt(*e, std::move(key));
        return e;
    }
    auto e = node(ExprKind::Item, t.pos);
    auto tuple = node(ExprKind::Tuple, t.pos);
    while (!isOp("]")) {
        if (!tuple->kids.empty())
            expectOp(",");
        adopt(*tuple, parseSubscribed());
    }
    expectOp("]");
    adopt(*e, std::move(obj));
    if (tuple->kids.size() == 1)
        adopt(*e, std::move(tuple->kids[0]));
    else
        adopt(*e, std::move(tuple));
    return e;
}

ExprPtr Parser::parseSubscribed()
{
    const Pos pos = cur().pos;
    ExprPtr start;
    if (!isOp(":")) {
        start = parseExpression();
        if (!isOp(":"))
            return start;
    }
    next();  // the first colon
    auto slice = node(ExprKind::Slice, pos);
    adopt(*slice, std::move(start));
    ExprPtr stop;
    if (!isOp(":") && !isOp("]") && !isOp(","))
        stop = parseExpression();
    adopt(*slice, std::move(stop));
    ExprPtr step;
    if (skipOp(":") && !isOp("]") && !isOp(","))
        step = parseExpression();
    adopt(*slice, std::move(step));
    return slice;
}

void Parser::parseCallArgs(Expr& call)
{
    const Pos pos = cur().pos;
    expectOp("(");
    bool requireComma = false;
    bool dynArgs = false;
    bool dynKwargs = false;
    bool kwargs = false;
    auto ensure = [&](bool ok) {
        if (!ok)
            error(pos, "invalid syntax for function call expression");
    };
    while (!isOp(")")) {
        if (requireComma) {
            expectOp(",");
            if (isOp(")"))
                break;
        }
        Arg arg;
        if (isOp("*")) {
            ensure(!dynArgs && !dynKwargs);
            next();
            arg.name = "*";
            dynArgs = true;
        } else if (isOp("**")) {
            ensure(!dynKwargs);
            next();
            arg.name = "**";
            dynKwargs = true;
        } else if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
            ensure(!dynKwargs);
            arg.name = next().text;
            next();
            kwargs = true;
        } else {
            ensure(!dynArgs && !dynKwargs && !kwargs);
        }
        arg.value = parseExpression();
        adoptArg(call, std::move(arg));
        requireComma = true;
    }
    expectOp(")");
}

ExprPtr Parser::parseCall(ExprPtr callee)
{
    auto e = node(ExprKind::Call, cur().pos);
    adopt(*e, std::move(callee));
    parseCallArgs(*e);
    return e;
}

std::string Parser::dottedName()
{
    std::string name = expectName().text;
    while (skipOp("."))
        name += "." + expectName().text;
    return name;
}

ExprPtr Parser::parseFilter(ExprPtr e, bool startInline)
{
    while (isOp("|") || startInline) {
        if (!startInline)
            next();
        startInline = false;
        const Pos pos = cur().pos;
        auto f = node(ExprKind::Filter, pos);
        f->name = dottedName();
        bool known = false;
        f->builtin = filterId(f->name, &known);
        if (f->builtin < 0)
            error(pos, known ? tb::cat("unsupported filter '", f->name, "'")
                             : tb::cat("no filter named '", f->name, "'"));
        if (e)
            adopt(*f, std::move(e));
        if (isOp("("))
            parseCallArgs(*f);
        e = std::move(f);
    }
    return e;
}

ExprPtr Parser::parseTest(ExprPtr subject)
{
    next();  // is
    const bool negated = skipName("not");
    const Pos pos = cur().pos;
    auto t = node(ExprKind::Test, pos);
    t->name = dottedName();
    bool known = false;
    t->builtin = testId(t->name, &known);
    if (t->builtin < 0)
        error(pos, known ? tb::cat("unsupported test '", t->name, "'")
                         : tb::cat("no test named '", t->name, "'"));
    adopt(*t, std::move(subject));
    const Tok type = cur().type;
    if (isOp("(")) {
        parseCallArgs(*t);
    } else if ((type == Tok::Name || type == Tok::String || type == Tok::Int ||
                type == Tok::Float || isOp("[") || isOp("{")) &&
               !isName("else") && !isName("or") && !isName("and")) {
        if (isName("is"))
            error(cur().pos, "you cannot chain multiple tests with is");
        Arg arg;
        arg.value = parsePostfix(parsePrimary());
        adoptArg(*t, std::move(arg));
    }
    if (!negated)
        return t;
    auto n = node(ExprKind::Not, pos);
    adopt(*n, std::move(t));
    return n;
}

}  // namespace tb::jinja::detail
