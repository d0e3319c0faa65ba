// jinja2's parser (parser.py) over our tokens: the template's statements and expressions as a
// syntax tree, with filters and tests resolved and unsupported constructs refused up front.
#pragma once

#include "tokenizer/jinja_ast.h"

#include <string>

namespace tb::jinja::detail {

struct Program {
    Body body;
    bool hasGeneration = false;
};

// Throws tb::Error "<name>: line L, column C: <what>" for a syntax error or an unsupported
// construct.
Program parseTemplate(const std::string& source, const Options& options, const std::string& name);

}  // namespace tb::jinja::detail
