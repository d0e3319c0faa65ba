// Python's two string formatting languages as templates use them: printf-style `str % args`
// (and the format filter) and str.format with its format-spec mini-language.
#include "tokenizer/jinja_builtins.h"

#include "tokenizer/jinja_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace tb::jinja::detail {

namespace {

struct Spec {
    std::string fill = " ";
    char align = '\0';
    char sign = '-';
    bool alternate = false;
    bool zero = false;
    int64_t width = -1;
    char grouping = '\0';
    int precision = -1;
    char type = '\0';
};

std::string cFormat(const char* fmt, double x)
{
    char buf[512];
    const int n = std::snprintf(buf, sizeof buf, fmt, x);
    if (n < 0 || n >= static_cast<int>(sizeof buf))
        failRender("unsupported: a formatted number longer than 500 characters");
    return buf;
}

std::string padTo(std::string body, const Spec& spec, char defaultAlign, bool numeric)
{
    const auto length = static_cast<int64_t>(codePointCount(body));
    if (spec.width <= length)
        return body;
    checkSize(static_cast<size_t>(spec.width) * spec.fill.size());
    const int64_t marg = spec.width - length;
    char align = spec.align ? spec.align : defaultAlign;
    std::string fill = spec.fill;
    if (!spec.align && spec.zero && numeric) {
        align = '=';
        fill = "0";
    }
    std::string padding;
    auto repeat = [&](int64_t n) {
        std::string out;
        for (int64_t i = 0; i < n; ++i)
            out += fill;
        return out;
    };
    if (align == '<')
        return body + repeat(marg);
    if (align == '>')
        return repeat(marg) + body;
    if (align == '^')
        return repeat(marg / 2) + body + repeat(marg - marg / 2);
    // '=': padding after the sign
    const size_t signLen = !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ');
    return body.substr(0, signLen) + repeat(marg) + body.substr(signLen);
}

std::string group(const std::string& digits, char sep)
{
    std::string out;
    const size_t n = digits.size();
    for (size_t i = 0; i < n; ++i) {
        if (i && (n - i) % 3 == 0)
            out += sep;
        out += digits[i];
    }
    return out;
}

std::string formatInt(int64_t v, const Spec& spec)
{
    const char type = spec.type ? spec.type : 'd';
    const uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    std::string digits;
    if (type == 'c') {
        appendUtf8(digits, static_cast<char32_t>(v));
        return padTo(digits, spec, '<', false);
    }
    const int base = type == 'x' || type == 'X' ? 16 : type == 'o' ? 8 : type == 'b' ? 2 : 10;
    if (base == 10 && type != 'd' && type != 'n')
        failRender("Unknown format code '", type, "' for object of type 'int'");
    uint64_t m = mag;
    do {
        digits.insert(digits.begin(), "0123456789abcdef"[m % static_cast<uint64_t>(base)]);
        m /= static_cast<uint64_t>(base);
    } while (m);
    if (type == 'X')
        digits = pyUpper(digits);
    if (spec.grouping)
        digits = group(digits, spec.grouping);
    std::string prefix = v < 0 ? "-" : spec.sign == '+' ? "+" : spec.sign == ' ' ? " " : "";
    if (spec.alternate && base != 10)
        prefix += base == 16 ? (type == 'X' ? "0X" : "0x") : base == 8 ? "0o" : "0b";
    return padTo(prefix + digits, spec, '>', true);
}

std::string formatFloat(double x, const Spec& spec)
{
    char type = spec.type;
    std::string body;
    if (!type && spec.precision < 0) {
        body = pyFloatRepr(x);
    } else {
        const int precision = spec.precision < 0 ? 6 : spec.precision;
        const bool percent = type == '%';
        const char c = !type ? 'g' : percent ? 'f' : type;
        if (std::string_view("eEfFgG").find(c) == std::string_view::npos)
            failRender("Unknown format code '", type, "' for object of type 'float'");
        const std::string fmt = tb::cat("%", spec.alternate ? "#" : "", ".", precision, c);
        body = cFormat(fmt.c_str(), percent ? x * 100 : x);
        if (percent)
            body += "%";
        if (!type && body.find_first_of(".en") == std::string::npos)
            body += ".0";  // the general format without a type keeps a decimal point
    }
    if (!body.empty() && body[0] != '-' && spec.sign != '-')
        body.insert(body.begin(), spec.sign == '+' ? '+' : ' ');
    if (spec.grouping) {
        const size_t neg = body[0] == '-' || body[0] == '+' || body[0] == ' ';
        const size_t end = body.find_first_not_of("0123456789", neg);
        body = body.substr(0, neg) + group(body.substr(neg, end - neg), spec.grouping) +
               (end == std::string::npos ? "" : body.substr(end));
    }
    return padTo(body, spec, '>', true);
}

Spec parseSpec(const std::string& text)
{
    Spec spec;
    size_t i = 0;
    auto isAlign = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    size_t len = 0;
    if (!text.empty())
        decodeUtf8(text, 0, &len);
    if (len < text.size() && isAlign(text[len])) {
        spec.fill = text.substr(0, len);
        spec.align = text[len];
        i = len + 1;
    } else if (!text.empty() && isAlign(text[0])) {
        spec.align = text[0];
        i = 1;
    }
    if (i < text.size() && (text[i] == '+' || text[i] == '-' || text[i] == ' '))
        spec.sign = text[i++];
    if (i < text.size() && text[i] == '#') {
        spec.alternate = true;
        ++i;
    }
    if (i < text.size() && text[i] == '0') {
        spec.zero = true;
        ++i;
    }
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i < 12)
        spec.width = std::max<int64_t>(spec.width, 0) * 10 + (text[i++] - '0');
    if (i < text.size() && (text[i] == ',' || text[i] == '_'))
        spec.grouping = text[i++];
    if (i < text.size() && text[i] == '.') {
        spec.precision = 0;
        ++i;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) &&
               spec.precision < 1000)
            spec.precision = spec.precision * 10 + (text[i++] - '0');
    }
    if (i < text.size())
        spec.type = text[i++];
    if (i != text.size())
        failRender("Invalid format specifier");
    return spec;
}

}  // namespace

// format(value, spec) for the values templates pass to str.format.
std::string formatValue(const Val& v, const std::string& specText)
{
    if (specText.empty())
        return toStr(v);
    const Spec spec = parseSpec(specText);
    if (v.isIntLike() &&
        (!spec.type || std::string_view("bcdoxXn").find(spec.type) != std::string_view::npos))
        return formatInt(v.integer(), spec);
    if (v.isNumber())
        return formatFloat(v.number(), spec);
    if (v.isString()) {
        if (spec.type && spec.type != 's')
            failRender("Unknown format code '", spec.type, "' for object of type 'str'");
        std::string s = v.str();
        if (spec.precision >= 0) {
            const auto offsets = codePointOffsets(s);
            if (static_cast<size_t>(spec.precision) + 1 < offsets.size())
                s.resize(offsets[static_cast<size_t>(spec.precision)]);
        }
        return padTo(s, spec, '<', false);
    }
    failRender("unsupported format string passed to ", typeName(v), ".__format__");
}

// One %-conversion of printf-style formatting.
std::string percentOne(char conv, const std::string& flags, int64_t width, int precision,
                       const Val& v)
{
    Spec spec;
    spec.width = width;
    spec.precision = precision;
    spec.align = flags.find('-') != std::string::npos ? '<' : '\0';
    spec.zero = flags.find('0') != std::string::npos && spec.align != '<';
    spec.sign = flags.find('+') != std::string::npos   ? '+'
                : flags.find(' ') != std::string::npos ? ' '
                                                       : '-';
    spec.alternate = flags.find('#') != std::string::npos;
    if (conv == 's' || conv == 'r' || conv == 'a') {
        std::string s = conv == 's' ? toStr(v) : toRepr(v);
        if (precision >= 0) {
            const auto offsets = codePointOffsets(s);
            if (static_cast<size_t>(precision) + 1 < offsets.size())
                s.resize(offsets[static_cast<size_t>(precision)]);
        }
        spec.zero = false;
        return padTo(s, spec, '>', false);
    }
    if (v.isUndefined())
        v.raiseUndefined();
    if (conv == 'c') {
        spec.type = 'c';
        if (v.isString() && codePointCount(v.str()) == 1)
            return padTo(v.str(), spec, '>', false);
        return formatInt(toIndex(v, "%c"), spec);
    }
    if (!v.isNumber())
        failRender("%", conv, " format: a real number is required, not ", typeName(v));
    if (conv == 'd' || conv == 'i' || conv == 'u') {
        spec.type = 'd';
        spec.precision = -1;
        return formatInt(v.isIntLike() ? v.integer() : static_cast<int64_t>(v.number()), spec);
    }
    if (conv == 'x' || conv == 'X' || conv == 'o') {
        if (!v.isIntLike())
            failRender("%", conv, " format: an integer is required, not ", typeName(v));
        spec.type = conv;
        return formatInt(v.integer(), spec);
    }
    if (std::string_view("eEfFgG").find(conv) == std::string_view::npos)
        failRender("unsupported format character '", conv, "'");
    spec.type = conv;
    return formatFloat(v.number(), spec);
}

std::string percentFormat(const std::string& format, const Val& args)
{
    const bool tuple = args.isList() && args.seq() == Seq::Tuple;
    // Python takes anything subscriptable but a tuple or str as a mapping: no "not all converted"
    const bool mapping =
        args.isDict() || args.isUndefined() || (args.isList() && args.seq() == Seq::List);
    const std::vector<Val> single{args};
    const std::vector<Val>& items = tuple ? args.items() : single;
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%') {
            out += format[i];
            continue;
        }
        if (++i >= format.size())
            failRender("incomplete format");
        const Val* value = nullptr;
        if (format[i] == '(') {
            const size_t close = format.find(')', i);
            if (close == std::string::npos)
                failRender("incomplete format key");
            if (!args.isDict())
                failRender("format requires a mapping");
            value = args.dict().find(format.substr(i + 1, close - i - 1));
            if (!value)
                failRender("KeyError: ", pyStrRepr(format.substr(i + 1, close - i - 1)));
            i = close + 1;
        }
        std::string flags;
        while (i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string::npos)
            flags += format[i++];
        int64_t width = -1;
        while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i])))
            width = std::max<int64_t>(width, 0) * 10 + (format[i++] - '0');
        int precision = -1;
        if (i < format.size() && format[i] == '.') {
            precision = 0;
            while (++i < format.size() && std::isdigit(static_cast<unsigned char>(format[i])))
                precision = std::min(precision * 10 + (format[i] - '0'), 1000);
        }
        while (i < format.size() && (format[i] == 'h' || format[i] == 'l' || format[i] == 'L'))
            ++i;
        if (i >= format.size())
            failRender("incomplete format");
        const char conv = format[i];
        if (conv == '%' && !value) {
            out += '%';
            continue;
        }
        if (!value) {
            if (next >= items.size())
                failRender("not enough arguments for format string");
            value = &items[next++];
        }
        out +=
            percentOne(conv, flags, std::min<int64_t>(width, int64_t{1} << 24), precision, *value);
        checkSize(out.size());
    }
    if (!mapping && next < items.size())
        failRender("not all arguments converted during string formatting");
    return out;
}

namespace {

// The value a str.format field names: an index or a keyword, then .attr and [key] parts.
Val fieldValue(const std::string& field, const Args& args, size_t* autoIndex, int* numbering)
{
    size_t i = 0;
    while (i < field.size() && field[i] != '.' && field[i] != '[')
        ++i;
    const std::string first = field.substr(0, i);
    Val v;
    if (first.empty() || std::isdigit(static_cast<unsigned char>(first[0]))) {
        const bool automatic = first.empty();
        if (*numbering != 0 && *numbering != (automatic ? 1 : 2))
            failRender("cannot switch between automatic field numbering and manual field "
                       "specification");
        *numbering = automatic ? 1 : 2;
        const size_t index = automatic ? (*autoIndex)++ : std::stoul(first.substr(0, 9));
        if (index >= args.pos.size())
            failRender("Replacement index ", index, " out of range for positional args tuple");
        v = args.pos[index];
    } else {
        const auto it = std::find_if(args.kw.begin(), args.kw.end(),
                                     [&](const auto& kw) { return kw.first == first; });
        if (it == args.kw.end())
            failRender("KeyError: ", pyStrRepr(first));
        v = it->second;
    }
    while (i < field.size()) {
        if (field[i] == '.') {
            size_t j = i + 1;
            while (j < field.size() && field[j] != '.' && field[j] != '[')
                ++j;
            v = getAttr(v, field.substr(i + 1, j - i - 1));
            i = j;
            continue;
        }
        const size_t close = field.find(']', i);
        if (close == std::string::npos)
            failRender("Missing ']' in format string");
        const std::string key = field.substr(i + 1, close - i - 1);
        const bool digits = !key.empty() && key.size() < 18 &&
                            key.find_first_not_of("0123456789") == std::string::npos;
        v = getItem(v, digits ? Val(static_cast<int64_t>(std::stoll(key))) : Val(key));
        i = close + 1;
    }
    return v;
}

}  // namespace

std::string strFormat(const std::string& format, const Args& args)
{
    std::string out;
    size_t autoIndex = 0;
    int numbering = 0;
    for (size_t i = 0; i < format.size(); ++i) {
        const char c = format[i];
        if (c == '}') {
            if (i + 1 < format.size() && format[i + 1] == '}') {
                out += '}';
                ++i;
                continue;
            }
            failRender("Single '}' encountered in format string");
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < format.size() && format[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        const size_t close = format.find('}', i);
        if (close == std::string::npos)
            failRender("Single '{' encountered in format string");
        const std::string inner = format.substr(i + 1, close - i - 1);
        if (inner.find('{') != std::string::npos)
            failRender("unsupported: nested fields in a format specification");
        size_t cut = 0;
        while (cut < inner.size() && inner[cut] != '!' && inner[cut] != ':') {
            if (inner[cut] == '[')
                cut = std::min(inner.find(']', cut), inner.size() - 1);
            ++cut;
        }
        Val v = fieldValue(inner.substr(0, cut), args, &autoIndex, &numbering);
        std::string spec;
        if (cut < inner.size() && inner[cut] == '!') {
            const char conv = cut + 1 < inner.size() ? inner[cut + 1] : '\0';
            if (conv != 'r' && conv != 's' && conv != 'a')
                failRender("Unknown conversion specifier ", std::string(1, conv));
            v = Val(conv == 's' ? toStr(v) : toRepr(v));
            cut += 2;
        }
        if (cut < inner.size() && inner[cut] == ':')
            spec = inner.substr(cut + 1);
        else if (cut < inner.size())
            failRender("expected ':' after conversion specifier");
        out += formatValue(v, spec);
        checkSize(out.size());
        i = close;
    }
    return out;
}

}  // namespace tb::jinja::detail
