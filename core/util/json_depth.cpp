// checkJsonDepth: one pass over the bytes, strings skipped with their escapes.
#include "util/json_depth.h"

#include "util/error.h"

namespace tb {

namespace {

// The byte where the nesting passes kMaxJsonDepth, or npos.
size_t tooDeepAt(std::string_view text)
{
    int depth = 0;
    bool inString = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i;  // the escaped character cannot end the string
            else if (c == '"')
                inString = false;
            continue;
        }
        switch (c) {
        case '"':
            inString = true;
            break;
        case '[':
        case '{':
            if (++depth > kMaxJsonDepth)
                return i;
            break;
        case ']':
        case '}':
            --depth;
            break;
        default:
            break;
        }
    }
    return std::string_view::npos;
}

}  // namespace

bool jsonTooDeep(std::string_view text)
{
    return tooDeepAt(text) != std::string_view::npos;
}

void checkJsonDepth(std::string_view text, const std::string& where)
{
    if (const size_t at = tooDeepAt(text); at != std::string_view::npos)
        fail(where, ": JSON nested deeper than ", kMaxJsonDepth, " levels (at byte ", at, ")");
}

}  // namespace tb
