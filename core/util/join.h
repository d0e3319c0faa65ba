// Joining names for messages and labels: join(names) == "a, b, c"; join(names, " | ", "\"").
#pragma once

#include <string>
#include <string_view>

namespace tb {

// items: any range of std::string, std::string_view or const char*; each wrapped in `quote`.
template <class Range>
std::string join(const Range& items, std::string_view separator = ", ", std::string_view quote = {})
{
    std::string out;
    bool first = true;
    for (const auto& item : items) {
        if (!first)
            out += separator;
        first = false;
        out += quote;
        out += item;
        out += quote;
    }
    return out;
}

}  // namespace tb
