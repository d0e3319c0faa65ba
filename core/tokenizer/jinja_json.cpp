// Python's json.dumps byte for byte, as transformers' tojson filter calls it (ensure_ascii off by
// default, indent, separators, sort_keys): escapes, float repr, indentation, key conversion.
#include "tokenizer/jinja_builtins.h"

#include "tokenizer/jinja_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tb::jinja::detail {

namespace {

constexpr int kMaxJsonDepth = 200;

void appendUnicodeEscape(std::string& out, unsigned code)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u%04x", code & 0xFFFFu);
    out += buf;
}

void appendJsonString(std::string& out, const std::string& s, bool ensureAscii)
{
    out += '"';
    for (size_t i = 0, len = 0; i < s.size(); i += len) {
        const char32_t c = decodeUtf8(s, i, &len);
        switch (c) {
        case '"':
            out += "\\\"";
            continue;
        case '\\':
            out += "\\\\";
            continue;
        case '\n':
            out += "\\n";
            continue;
        case '\r':
            out += "\\r";
            continue;
        case '\t':
            out += "\\t";
            continue;
        case '\b':
            out += "\\b";
            continue;
        case '\f':
            out += "\\f";
            continue;
        default:
            break;
        }
        if (c < 0x20) {
            appendUnicodeEscape(out, static_cast<unsigned>(c));
        } else if (!ensureAscii || (c < 0x7F)) {
            out.append(s, i, len);
        } else if (c < 0x10000) {
            appendUnicodeEscape(out, static_cast<unsigned>(c));
        } else {
            const char32_t v = c - 0x10000;
            appendUnicodeEscape(out, static_cast<unsigned>(0xD800 | (v >> 10)));
            appendUnicodeEscape(out, static_cast<unsigned>(0xDC00 | (v & 0x3FF)));
        }
    }
    out += '"';
}

std::string jsonFloat(double x)
{
    if (std::isnan(x))
        return "NaN";
    if (std::isinf(x))
        return x < 0 ? "-Infinity" : "Infinity";
    return pyFloatRepr(x);
}

// A dict key as json.dumps writes it: str as is; int, float, bool and None converted.
std::string jsonKey(const Val& key)
{
    switch (key.kind()) {
    case Kind::String:
        return key.str();
    case Kind::Int:
        return std::to_string(key.integer());
    case Kind::Bool:
        return key.boolean() ? "true" : "false";
    case Kind::None:
        return "null";
    case Kind::Float:
        return jsonFloat(key.number());
    default:
        failRender("keys must be str, int, float, bool or None, not ", typeName(key));
    }
}

class JsonWriter {
public:
    JsonWriter(const JsonStyle& style) : m_style(style) {}

    std::string run(const Val& v)
    {
        write(v, 0);
        return std::move(m_out);
    }

private:
    const JsonStyle& m_style;
    std::string m_out;

    void newline(int level)
    {
        m_out += '\n';
        for (int i = 0; i < level; ++i)
            m_out += m_style.indent;
        checkSize(m_out.size());
    }

    void write(const Val& v, int level)
    {
        if (level > kMaxJsonDepth)
            failRender("tojson: value nested more than ", kMaxJsonDepth, " levels deep");
        switch (v.kind()) {
        case Kind::None:
            m_out += "null";
            return;
        case Kind::Bool:
            m_out += v.boolean() ? "true" : "false";
            return;
        case Kind::Int:
            m_out += std::to_string(v.integer());
            return;
        case Kind::Float:
            m_out += jsonFloat(v.number());
            return;
        case Kind::String:
            appendJsonString(m_out, v.str(), m_style.ensureAscii);
            break;
        case Kind::List:
            if (!v.isSequence())
                break;
            writeList(v.items(), level);
            return;
        case Kind::Dict:
            writeDict(v.dict(), level);
            return;
        default:
            break;
        }
        if (v.kind() != Kind::String)
            failRender("Object of type ", typeName(v), " is not JSON serializable");
        checkSize(m_out.size());
    }

    void writeList(const std::vector<Val>& items, int level)
    {
        if (items.empty()) {
            m_out += "[]";
            return;
        }
        m_out += '[';
        if (m_style.pretty)
            newline(level + 1);
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) {
                m_out += m_style.itemSep;
                if (m_style.pretty)
                    newline(level + 1);
            }
            write(items[i], level + 1);
        }
        if (m_style.pretty)
            newline(level);
        m_out += ']';
    }

    void writeDict(const Dict& dict, int level)
    {
        if (dict.size() == 0) {
            m_out += "{}";
            return;
        }
        std::vector<const std::pair<Val, Val>*> items;
        for (const auto& item : dict.items())
            items.push_back(&item);
        if (m_style.sortKeys)
            std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) {
                return pyLess(a->first, b->first);
            });
        m_out += '{';
        if (m_style.pretty)
            newline(level + 1);
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) {
                m_out += m_style.itemSep;
                if (m_style.pretty)
                    newline(level + 1);
            }
            appendJsonString(m_out, jsonKey(items[i]->first), m_style.ensureAscii);
            m_out += m_style.keySep;
            write(items[i]->second, level + 1);
        }
        if (m_style.pretty)
            newline(level);
        m_out += '}';
    }
};

}  // namespace

std::string pyJsonDumps(const Val& v, const JsonStyle& style)
{
    return JsonWriter(style).run(v);
}

// transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Val tojsonFilter(const Val& input, const Args& args)
{
    const Params p("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonStyle style;
    style.ensureAscii = truthy(p[0]);
    const Val& indent = p[1];
    if (!indent.isUndefined() && !indent.isNone()) {
        style.pretty = true;
        style.itemSep = ",";
        if (indent.isString()) {
            style.indent = indent.str();
        } else {
            const int64_t n = toIndex(indent, "indent");
            style.indent.assign(static_cast<size_t>(std::clamp<int64_t>(n, 0, 1 << 16)), ' ');
        }
    }
    const Val& separators = p[2];
    if (!separators.isUndefined() && !separators.isNone()) {
        const auto items = iterate(separators);
        if (items->size() != 2)
            failRender("tojson: separators must be an (item_separator, key_separator) pair");
        style.itemSep = requireStr((*items)[0], "tojson", "separators");
        style.keySep = requireStr((*items)[1], "tojson", "separators");
    }
    style.sortKeys = truthy(p[3]);
    return Val(pyJsonDumps(input, style));
}

}  // namespace tb::jinja::detail
