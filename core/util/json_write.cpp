// Compact JSON writing equal to nlohmann::json::dump() (see json_write.h).
#include "util/json_write.h"

#include "util/utf8.h"

#include <charconv>
#include <cstdint>

namespace tb {
namespace {

using json = nlohmann::json;

// Whether byte c must be escaped inside a JSON string: '"', '\\' and the C0 controls.
constexpr bool needsEscape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\';
}

void appendString(std::string& out, const std::string& s)
{
    if (invalidUtf8At(s) >= 0) {
        // dump() rejects it with its own message (the byte and its index); let it say so.
        out += json(s).dump();
        return;
    }
    out.push_back('"');
    const char* run = s.data();
    const char* const end = run + s.size();
    for (const char* p = run; p < end; ++p) {
        const auto c = static_cast<unsigned char>(*p);
        if (!needsEscape(c))
            continue;
        out.append(run, static_cast<size_t>(p - run));
        run = p + 1;
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default: {
            static const char* digits = "0123456789abcdef";
            const char code[6] = {'\\', 'u', '0', '0', digits[c >> 4], digits[c & 0xF]};
            out.append(code, 6);
        }
        }
    }
    out.append(run, static_cast<size_t>(end - run));
    out.push_back('"');
}

template <typename Integer> void appendInteger(std::string& out, Integer v)
{
    char buffer[24];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
    out.append(buffer, result.ptr);
}

}  // namespace

void appendJson(std::string& out, const json& value)
{
    switch (value.type()) {
    case json::value_t::object: {
        const auto& object = value.get_ref<const json::object_t&>();
        out.push_back('{');
        bool first = true;
        for (const auto& [key, member] : object) {
            if (!first)
                out.push_back(',');
            first = false;
            appendString(out, key);
            out.push_back(':');
            appendJson(out, member);
        }
        out.push_back('}');
        return;
    }
    case json::value_t::array: {
        const auto& array = value.get_ref<const json::array_t&>();
        out.push_back('[');
        for (size_t i = 0; i < array.size(); ++i) {
            if (i > 0)
                out.push_back(',');
            appendJson(out, array[i]);
        }
        out.push_back(']');
        return;
    }
    case json::value_t::string:
        appendString(out, value.get_ref<const std::string&>());
        return;
    case json::value_t::boolean:
        out += value.get<bool>() ? "true" : "false";
        return;
    case json::value_t::null:
        out += "null";
        return;
    case json::value_t::number_integer:
        appendInteger(out, value.get<int64_t>());
        return;
    case json::value_t::number_unsigned:
        appendInteger(out, value.get<uint64_t>());
        return;
    default:
        // Floating-point numbers (nlohmann's shortest round-trip form), binary and discarded
        // values: rare in records, written by dump() itself.
        out += value.dump();
        return;
    }
}

std::string toJson(const json& value)
{
    std::string out;
    appendJson(out, value);
    return out;
}

}  // namespace tb
