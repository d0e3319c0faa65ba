// Splits a Jinja template into tokens the way jinja2's lexer does: template data with
// whitespace control ({%- -%}, trim_blocks, lstrip_blocks) applied, and the tokens inside
// {{ }} and {% %} tags; comments and raw blocks are resolved here.
#pragma once

#include "tokenizer/jinja.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tb::jinja::detail {

// A place in the template: 1-based line and column (columns count characters).
struct Pos {
    int line = 1;
    int column = 1;
};

enum class Tok : uint8_t {
    Data,
    VarBegin,
    VarEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Int,
    Float,
    Op,
    Eof
};

struct Token {
    Tok type = Tok::Eof;
    Pos pos;
    std::string text;  // Data, Name, String (unescaped), Op
    int64_t integer = 0;
    double number = 0;
};

// Throws tb::Error "<name>: line L, column C: <what>" for text jinja2 cannot tokenize. The last
// token is always Eof.
std::vector<Token> tokenize(const std::string& source, const Options& options,
                            const std::string& name);

// "<name>: line L, column C: <what>"
[[noreturn]] void failAt(const std::string& name, Pos pos, const std::string& what);

}  // namespace tb::jinja::detail
