// checkJsonDepth: one pass over the bytes, strings skipped with their escapes.
#include "util/json_depth.h"

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <set>
#include <vector>

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

std::string repeatedJsonKey(std::string_view text)
{
    if (jsonTooDeep(text))
        return {};
    struct Frame {
        bool object = false;
        std::string key;  // the last key read in this object
        std::set<std::string> keys;
    };
    std::vector<Frame> frames;
    std::string repeated;
    using Event = nlohmann::json::parse_event_t;
    const auto pathTo = [&frames](const std::string& key) {
        std::string path;
        for (size_t i = 0; i + 1 < frames.size(); ++i)
            if (frames[i].object)
                path += frames[i].key + ".";
        return path + key;
    };
    (void)nlohmann::json::parse(
        text,
        [&](int, Event event, nlohmann::json& parsed) {
            switch (event) {
            case Event::object_start:
                frames.push_back({true, {}, {}});
                break;
            case Event::array_start:
                frames.push_back({false, {}, {}});
                break;
            case Event::object_end:
            case Event::array_end:
                if (!frames.empty())
                    frames.pop_back();
                break;
            case Event::key:
                if (!frames.empty()) {
                    Frame& f = frames.back();
                    f.key = parsed.get<std::string>();
                    if (!f.keys.insert(f.key).second && repeated.empty())
                        repeated = pathTo(f.key);
                }
                break;
            case Event::value:
                break;
            }
            return true;
        },
        /*allow_exceptions=*/false);
    return repeated;
}

}  // namespace tb
