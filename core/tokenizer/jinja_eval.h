// The interpreter: runs a parsed template against a context with jinja2's scoping (a fresh scope
// per loop iteration, macro call, call block, block set, filter block and with; none for if),
// macros as closures, loop controls and generation spans, within limits on depth and work.
#pragma once

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_parser.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tb::jinja::detail {

inline constexpr int kMaxDepth = 1500;  // nested evaluations (expressions, statements, calls)
inline constexpr int kMaxCalls = 200;   // nested macro calls

struct Scope {
    std::shared_ptr<Scope> parent;
    std::vector<std::pair<std::string, Val>> vars;

    Val* find(const std::string& name);
    void set(const std::string& name, Val value);
};

// A macro or a call block's caller: its definition and the scope it was defined in.
struct MacroObj : Object {
    MacroObj(const MacroDef* d, std::shared_ptr<Scope> s)
        : Object(ObjKind::Macro), def(d), closure(std::move(s))
    {
    }
    void repr(std::string& out, int depth) const override;
    const MacroDef* def;
    std::shared_ptr<Scope> closure;
};

class Evaluator {
public:
    Evaluator(const Program& program, const Options& options, const std::string& name);
    ~Evaluator();
    Evaluator(const Evaluator&) = delete;
    Evaluator& operator=(const Evaluator&) = delete;

    Rendered render(const Value& context);

private:
    enum class Flow { Normal, Break, Continue };

    const Program& m_program;
    const std::string& m_name;
    Ctx m_ctx;
    Val m_context;
    std::string m_main;
    std::string* m_out = &m_main;
    std::shared_ptr<Scope> m_scope;
    std::vector<Span> m_spans;
    const Val* m_blockInput = nullptr;  // the text a filter block or block set filters
    int m_depth = 0;                    // nested eval/exec calls
    int m_calls = 0;                    // nested macro calls
    // Scopes captured by macros and namespaces made while rendering: cleared at the end, since
    // a scope can hold a macro that holds the scope.
    std::vector<std::shared_ptr<Scope>> m_closures;
    std::vector<std::shared_ptr<Namespace>> m_namespaces;

    struct Deeper {
        Evaluator& e;
        explicit Deeper(Evaluator& ev);
        ~Deeper() { --e.m_depth; }
    };

    [[noreturn]] void failHere(Pos pos, const std::string& message) const;
    void write(std::string_view text);

    // statements (jinja_eval.cpp)
    Flow exec(const Body& body);
    Flow execStmt(const Stmt& s);
    Flow execFor(const Stmt& s);
    Flow execIf(const Stmt& s);
    Flow execWith(const Stmt& s);
    Flow runIn(const Body& body, std::shared_ptr<Scope> scope);
    void execGeneration(const Stmt& s);
    void execCallBlock(const Stmt& s);
    Val filterBlock(const Stmt& s);
    std::string capture(const Body& body, std::shared_ptr<Scope> scope);
    void assign(const Target& target, const Val& value);
    void bind(Scope& scope, const Target& target, const Val& value);
    std::shared_ptr<Scope> childScope() const;
    Val makeMacro(const MacroDef* def);

    // expressions (jinja_eval_expr.cpp)
    Val eval(const Expr& e);
    Val evalImpl(const Expr& e);
    Val lookup(const std::string& name) const;
    Args evalArgs(const std::vector<Arg>& args);
    Val evalCall(const Expr& e, const Val* caller);
    Val evalFilter(const Expr& e);
    Val evalTest(const Expr& e);
    Val evalCompare(const Expr& e);
    Val evalConcat(const Expr& e);
    Val evalItem(const Expr& e);
    Val evalLiteral(const Expr& e);
    Val evalCond(const Expr& e);
    Val callValue(const Val& callee, Args& args, const Val* caller);
    Val callMacro(const MacroObj& macro, const Args& args);
};

}  // namespace tb::jinja::detail
