// The syntax tree of a parsed Jinja template: expressions (jinja2.nodes' Expr classes) and the
// statements the interpreter runs.
#pragma once

#include "tokenizer/jinja_lexer.h"
#include "tokenizer/jinja_value.h"

#include <memory>
#include <string>
#include <vector>

namespace tb::jinja::detail {

enum class ExprKind : uint8_t {
    Const,
    Name,
    Attr,    // kids[0].name
    Item,    // kids[0][kids[1]]
    Slice,   // kids: start, stop, step (each may be null); only as Item's key
    Call,    // kids[0](args)
    Filter,  // kids[0]|name(args); no kids in a filter block or a block set
    Test,    // kids[0] is name(args)
    Not,
    Neg,
    Plus,
    Binary,  // kids[0] op kids[1]
    And,
    Or,
    Concat,   // kids joined with ~
    Compare,  // kids[0] cmp[0] kids[1] cmp[1] kids[2] ...
    Cond,     // kids: test, then, else (null: undefined)
    List,
    Tuple,
    Dict,  // kids: key, value, key, value ...
    NsRef  // name.attr as a {% set %} target
};

enum class BinOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
enum class CmpOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// A call argument: positional when name is empty, *args when "*", **kwargs when "**".
struct Arg {
    std::string name;
    ExprPtr value;
};

struct Expr {
    ExprKind kind = ExprKind::Const;
    Pos pos;
    int depth = 1;  // height of this subtree (bounded by the parser)
    Val value;
    std::string name;
    BinOp op = BinOp::Add;
    std::vector<CmpOp> cmp;
    std::vector<ExprPtr> kids;
    std::vector<Arg> args;
    int builtin = -1;  // Filter and Test: the builtin's id
};

// An assignment target: a name, a tuple of targets, or a namespace attribute (ns.x).
struct Target {
    enum class Kind : uint8_t { Name, Tuple, NsAttr } kind = Kind::Name;
    Pos pos;
    std::string name;
    std::string attr;
    std::vector<Target> items;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct MacroDef {
    std::string name;
    Pos pos;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // one per param; null where none
    Body body;
    bool usesCaller = false;
    bool usesVarargs = false;
    bool usesKwargs = false;
};

enum class StmtKind : uint8_t {
    Text,
    Print,
    If,
    For,
    Set,
    SetBlock,
    Macro,
    CallBlock,
    FilterBlock,
    With,
    Break,
    Continue,
    Generation
};

struct Stmt {
    StmtKind kind = StmtKind::Text;
    Pos pos;
    std::string text;            // Text
    ExprPtr expr;                // Print, For's iterable, Set's value, CallBlock's call,
                                 // SetBlock's and FilterBlock's filters (null: none)
    ExprPtr cond;                // For's `if`
    Target target;               // For, Set, SetBlock
    std::vector<ExprPtr> tests;  // If: tests[i] guards bodies[i]; one more body is the else
    std::vector<Body> bodies;
    Body body;                        // For, SetBlock, FilterBlock, With, Generation
    Body orelse;                      // For's else
    std::shared_ptr<MacroDef> macro;  // Macro; CallBlock's caller
    std::vector<Target> withTargets;
    std::vector<ExprPtr> withValues;
};

}  // namespace tb::jinja::detail
