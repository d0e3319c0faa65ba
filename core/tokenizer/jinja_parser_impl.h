// The parser's class, shared by its two halves: statements (jinja_parser.cpp) and expressions
// (jinja_parser_expr.cpp).
#pragma once

#include "tokenizer/jinja_parser.h"

#include <algorithm>
#include <initializer_list>
#include <utility>

namespace tb::jinja::detail {

inline constexpr int kMaxNesting = 200;    // statements in statements, parentheses in parentheses
inline constexpr int kMaxExprDepth = 400;  // height of one expression's tree

class Parser {
public:
    Parser(std::vector<Token> tokens, const std::string& name)
        : m_tokens(std::move(tokens)), m_name(name)
    {
    }

    Program run()
    {
        Program program;
        program.body = subparse({});
        program.hasGeneration = m_hasGeneration;
        return program;
    }

private:
    std::vector<Token> m_tokens;
    const std::string& m_name;
    size_t m_i = 0;
    int m_nesting = 0;
    int m_loops = 0;  // enclosing for loops, for break/continue
    bool m_hasGeneration = false;

    struct Nest {
        Parser& p;
        explicit Nest(Parser& parser) : p(parser)
        {
            if (++p.m_nesting > kMaxNesting)
                p.error(p.cur().pos, tb::cat("nested more than ", kMaxNesting, " levels deep"));
        }
        ~Nest() { --p.m_nesting; }
    };

    const Token& cur() const { return m_tokens[m_i]; }
    const Token& peek() const { return m_tokens[std::min(m_i + 1, m_tokens.size() - 1)]; }
    const Token& next()
    {
        const Token& t = m_tokens[m_i];
        if (m_i + 1 < m_tokens.size())
            ++m_i;
        return t;
    }

    [[noreturn]] void error(Pos pos, const std::string& what) const { failAt(m_name, pos, what); }

    static std::string describe(const Token& t)
    {
        switch (t.type) {
        case Tok::Data:
            return "template data";
        case Tok::VarBegin:
            return "begin of print statement";
        case Tok::VarEnd:
            return "end of print statement";
        case Tok::BlockBegin:
            return "begin of statement block";
        case Tok::BlockEnd:
            return "end of statement block";
        case Tok::Name:
        case Tok::Op:
            return t.text;
        case Tok::String:
            return "string";
        case Tok::Int:
            return "integer";
        case Tok::Float:
            return "float";
        case Tok::Eof:
            return "end of template";
        }
        return "token";
    }

    bool isOp(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
    bool isName(const char* name) const { return cur().type == Tok::Name && cur().text == name; }
    bool skipOp(const char* op)
    {
        if (!isOp(op))
            return false;
        next();
        return true;
    }
    bool skipName(const char* name)
    {
        if (!isName(name))
            return false;
        next();
        return true;
    }

    void expectOp(const char* op)
    {
        if (!skipOp(op))
            error(cur().pos, tb::cat("expected '", op, "', got '", describe(cur()), "'"));
    }

    void expect(Tok type, const char* what)
    {
        if (cur().type != type)
            error(cur().pos, tb::cat("expected ", what, ", got '", describe(cur()), "'"));
        next();
    }

    const Token& expectName()
    {
        if (cur().type != Tok::Name)
            error(cur().pos, tb::cat("expected a name, got '", describe(cur()), "'"));
        return next();
    }

    ExprPtr node(ExprKind kind, Pos pos)
    {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->pos = pos;
        return e;
    }

    // Adds a child, keeping the tree's height bounded (evaluation and destruction recurse on it).
    void adopt(Expr& parent, ExprPtr kid)
    {
        if (kid) {
            parent.depth = std::max(parent.depth, kid->depth + 1);
            if (parent.depth > kMaxExprDepth)
                error(parent.pos,
                      tb::cat("expression nested more than ", kMaxExprDepth, " levels deep"));
        }
        parent.kids.push_back(std::move(kid));
    }

    void adoptArg(Expr& parent, Arg arg)
    {
        parent.depth = std::max(parent.depth, arg.value->depth + 1);
        if (parent.depth > kMaxExprDepth)
            error(parent.pos, "expression nested too deeply");
        parent.args.push_back(std::move(arg));
    }

    // ---- statements ----

    Body subparse(std::initializer_list<const char*> endNames)
    {
        Nest nest(*this);
        Body body;
        while (cur().type != Tok::Eof) {
            const Token& t = cur();
            if (t.type == Tok::Data) {
                Stmt s;
                s.kind = StmtKind::Text;
                s.pos = t.pos;
                s.text = t.text;
                body.push_back(std::move(s));
                next();
            } else if (t.type == Tok::VarBegin) {
                next();
                Stmt s;
                s.kind = StmtKind::Print;
                s.pos = cur().pos;
                s.expr = parseTuple(false, true, {}, false);
                expect(Tok::VarEnd, "'}}'");
                body.push_back(std::move(s));
            } else {
                next();  // BlockBegin
                for (const char* end : endNames)
                    if (isName(end))
                        return body;
                parseStatement(body);
                expect(Tok::BlockEnd, "'%}'");
            }
        }
        if (endNames.size() != 0) {
            std::string wanted;
            for (const char* end : endNames)
                wanted += std::string(wanted.empty() ? "'" : " or '") + end + "'";
            error(cur().pos, "unexpected end of template, expected " + wanted);
        }
        return body;
    }

    // The body of a block statement up to one of endNames (left as the current token).
    Body parseStatements(std::initializer_list<const char*> endNames, bool dropNeedle)
    {
        skipOp(":");
        expect(Tok::BlockEnd, "'%}'");
        Body body = subparse(endNames);
        if (dropNeedle)
            next();
        return body;
    }

    void parseStatement(Body& body);
    Stmt parseFor();
    Stmt parseIf();
    Stmt parseSet();
    Stmt parseMacro();
    Stmt parseCallBlock();
    Stmt parseFilterBlock();
    Stmt parseWith();
    void parseSignature(MacroDef& def);
    Target parseAssignTarget(bool nameOnly, const char* extraEnd, bool withNamespace);
    Target toTarget(const Expr& e, bool withNamespace);

    // ---- expressions ----
    ExprPtr parseExpression(bool withCondexpr = true);
    ExprPtr parseCondexpr();
    ExprPtr parseOr();
    ExprPtr parseAnd();
    ExprPtr parseNot();
    ExprPtr parseCompare();
    ExprPtr parseMath1();
    ExprPtr parseConcat();
    ExprPtr parseMath2();
    ExprPtr parsePow();
    ExprPtr parseUnary(bool withFilter);
    ExprPtr parsePrimary(bool withNamespace = false);
    ExprPtr parseTuple(bool simplified, bool withCondexpr, const char* extraEnd,
                       bool explicitParens, bool withNamespace = false);
    ExprPtr parseList();
    ExprPtr parseDict();
    ExprPtr parsePostfix(ExprPtr node);
    ExprPtr parseFilterExpr(ExprPtr node);
    ExprPtr parseSubscript(ExprPtr node);
    ExprPtr parseSubscribed();
    void parseCallArgs(Expr& call);
    ExprPtr parseCall(ExprPtr node);
    ExprPtr parseFilter(ExprPtr node, bool startInline);
    ExprPtr parseTest(ExprPtr node);
    bool isTupleEnd(const char* extraEnd) const;
    std::string dottedName();
};

}  // namespace tb::jinja::detail
