// jinja2's filters (filters.py) over template values, with transformers' tojson; filters that
// return generators in jinja2 (select, map, items, ...) return single-pass values here too.
#include "tokenizer/jinja_builtins.h"

#include "tokenizer/jinja_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tb::jinja::detail {

// jinja2's ignore_case: strings compare lowercased unless case_sensitive.
Val sortKey(const Val& v, bool caseSensitive)
{
    return !caseSensitive && v.isString() ? Val(pyLower(v.str())) : v;
}

void sortBy(std::vector<Val>& items, const std::vector<Val>& keys, bool reverse)
{
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return reverse ? pyLess(keys[b], keys[a]) : pyLess(keys[a], keys[b]);
    });
    std::vector<Val> sorted;
    sorted.reserve(items.size());
    for (size_t i : order)
        sorted.push_back(items[i]);
    items = std::move(sorted);
}

namespace {

std::string strOf(const Val& v)
{
    return toStr(v);
}

Val fAbs(Ctx&, const Val& v, const Args& args)
{
    Params p("abs", args, {});
    if (v.isUndefined())
        v.raiseUndefined();
    if (v.isIntLike())
        return v.integer() < 0 ? negate(v) : Val(v.integer());
    if (v.kind() == Kind::Float)
        return Val(std::fabs(v.number()));
    failRender("bad operand type for abs(): '", typeName(v), "'");
}

Val fAttr(Ctx&, const Val& v, const Args& args)
{
    const Params p("attr", args, {"name"}, 1);
    return getAttrOnly(v, requireStr(p[0], "attr", "name"));
}

Val fCapitalize(Ctx&, const Val& v, const Args& args)
{
    Params p("capitalize", args, {});
    return Val(pyCapitalize(strOf(v)));
}

Val fCenter(Ctx& ctx, const Val& v, const Args& args)
{
    const Params p("center", args, {"width"});
    Args call;
    call.pos.push_back(p.has(0) ? p[0] : Val(int64_t{80}));
    return callMethod(ctx, MethodObj(Val(strOf(v)), "center"), call);
}

Val fLength(Ctx&, const Val& v, const Args& args)
{
    Params p("length", args, {});
    return Val(static_cast<int64_t>(pyLen(v)));
}

Val fDefault(Ctx&, const Val& v, const Args& args)
{
    const Params p("default", args, {"default_value", "boolean"});
    if (v.isUndefined() || (truthy(p[1]) && !truthy(v)))
        return p.has(0) ? p[0] : Val("");
    return v;
}

Val fDictsort(Ctx&, const Val& v, const Args& args)
{
    const Params p("dictsort", args, {"case_sensitive", "by", "reverse"});
    if (!v.isDict())
        failRender("'", typeName(v), "' object has no attribute 'items'");
    const std::string by = p.has(1) ? requireStr(p[1], "dictsort", "by") : "key";
    if (by != "key" && by != "value")
        failRender("You can only sort by either \"key\" or \"value\"");
    std::vector<Val> items;
    std::vector<Val> keys;
    for (const auto& [key, value] : v.dict().items()) {
        items.push_back(Val::list({key, value}, Seq::Tuple));
        keys.push_back(sortKey(by == "key" ? key : value, truthy(p[0])));
    }
    sortBy(items, keys, truthy(p[2]));
    return Val::list(std::move(items));
}

Val fEscape(Ctx&, const Val& v, const Args& args)
{
    Params p("escape", args, {});
    if (v.markup())
        return v;
    return Val(htmlEscape(strOf(v)), true);
}

Val fForceescape(Ctx&, const Val& v, const Args& args)
{
    Params p("forceescape", args, {});
    return Val(htmlEscape(strOf(v)), true);
}

Val fFirst(Ctx&, const Val& v, const Args& args)
{
    Params p("first", args, {});
    if (v.isList() && (v.seq() == Seq::Generator || v.seq() == Seq::Iterator)) {
        ListData& data = v.listData();
        if (data.consumed < data.items.size())
            return data.items[data.consumed++];
    } else {
        const auto items = iterate(v);
        if (!items->empty())
            return items->front();
    }
    return Val::undefined("No first item, sequence was empty.");
}

Val fLast(Ctx&, const Val& v, const Args& args)
{
    Params p("last", args, {});
    if (v.isList() && (v.seq() == Seq::Generator || v.seq() == Seq::Iterator))
        failRender("'", typeName(v), "' object is not reversible");
    if (!v.isUndefined() && !v.isString() && !v.isList() && !v.isDict())
        failRender("'", typeName(v), "' object is not reversible");
    const auto items = iterate(v);
    if (!items->empty())
        return items->back();
    return Val::undefined("No last item, sequence was empty.");
}

// Python's float(str): optional sign, digits with single underscores, inf and nan.
bool parsePyFloat(const std::string& text, double* out)
{
    std::string s = pyStrip(text, nullptr, true, true);
    std::string clean;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_') {
            if (i == 0 || i + 1 >= s.size() ||
                !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
                !std::isdigit(static_cast<unsigned char>(s[i + 1])))
                return false;
            continue;
        }
        clean += s[i];
    }
    if (clean.empty() || clean.find_first_of("xXpP") != std::string::npos)
        return false;
    char* end = nullptr;
    *out = std::strtod(clean.c_str(), &end);
    if (end != clean.c_str() + clean.size())
        return false;
    const std::string lower = pyLower(clean);
    const std::string body = lower[0] == '+' || lower[0] == '-' ? lower.substr(1) : lower;
    if (std::isalpha(static_cast<unsigned char>(body[0])))
        return body == "inf" || body == "infinity" || body == "nan";
    return true;
}

Val fFloat(Ctx&, const Val& v, const Args& args)
{
    const Params p("float", args, {"default"});
    const Val fallback = p.has(0) ? p[0] : Val(0.0);
    if (v.isUndefined())
        v.raiseUndefined();
    if (v.isNumber())
        return Val(v.number());
    double x = 0;
    if (v.isString() && parsePyFloat(v.str(), &x))
        return Val(x);
    return fallback;
}

// Python's int(str, base) for base 10 (and the prefixes base 0 allows).
bool parsePyInt(const std::string& text, int64_t base, int64_t* out)
{
    std::string s = pyStrip(text, nullptr, true, true);
    bool negative = false;
    size_t i = 0;
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
        negative = s[i++] == '-';
    if (base == 0 || base == 16 || base == 8 || base == 2) {
        if (i + 1 < s.size() && s[i] == '0') {
            const char x = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i + 1])));
            const int64_t prefixed = x == 'x' ? 16 : x == 'o' ? 8 : x == 'b' ? 2 : 0;
            if (prefixed && (base == 0 || base == prefixed)) {
                base = prefixed;
                i += 2;
            }
        }
        if (base == 0)
            base = 10;
    }
    if (base < 2 || base > 36 || i >= s.size())
        return false;
    uint64_t value = 0;
    bool lastDigit = false;
    for (; i < s.size(); ++i) {
        if (s[i] == '_' && lastDigit) {
            lastDigit = false;
            continue;
        }
        const int c = std::tolower(static_cast<unsigned char>(s[i]));
        const int64_t d = std::isdigit(c) ? c - '0' : std::isalpha(c) ? c - 'a' + 10 : 99;
        if (d >= base)
            return false;
        if (value > (static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(d)) /
                        static_cast<uint64_t>(base))
            failRender("unsupported: integer overflow (templates compute with 64-bit integers)");
        value = value * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
        lastDigit = true;
    }
    if (!lastDigit)
        return false;
    *out = negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
    return true;
}

Val floatToInt(double x)
{
    if (std::isnan(x))
        failRender("cannot convert float NaN to integer");
    if (std::isinf(x) || std::fabs(x) >= 9223372036854775808.0)
        failRender("cannot convert float infinity to integer");
    return Val(static_cast<int64_t>(x));
}

Val fInt(Ctx&, const Val& v, const Args& args)
{
    const Params p("int", args, {"default", "base"});
    const Val fallback = p.has(0) ? p[0] : Val(int64_t{0});
    if (v.isUndefined())
        v.raiseUndefined();
    if (v.isIntLike())
        return Val(v.integer());
    if (v.kind() == Kind::Float)
        return floatToInt(v.number());
    if (v.isString()) {
        int64_t i = 0;
        if (parsePyInt(v.str(), p.has(1) ? toIndex(p[1], "base") : 10, &i))
            return Val(i);
        double x = 0;  // "42.23"|int is 42
        if (parsePyFloat(v.str(), &x) && std::isfinite(x))
            return floatToInt(x);
    }
    return fallback;
}

Val fFormat(Ctx&, const Val& v, const Args& args)
{
    if (!args.pos.empty() && !args.kw.empty())
        failRender("can't handle positional and keyword arguments at the same time");
    if (!args.kw.empty()) {
        auto dict = std::make_shared<Dict>();
        for (const auto& [key, value] : args.kw)
            dict->set(key, value);
        return Val(percentFormat(strOf(v), Val::dict(dict)), v.markup());
    }
    return Val(percentFormat(strOf(v), Val::list(args.pos, Seq::Tuple)), v.markup());
}

Val fIndent(Ctx&, const Val& v, const Args& args)
{
    const Params p("indent", args, {"width", "first", "blank"});
    if (v.isUndefined())
        v.raiseUndefined();
    if (!v.isString())
        failRender("unsupported operand type(s) for +=: '", typeName(v), "' and 'str'");
    std::string indention = "    ";
    if (p.has(0))
        indention = p[0].isString() ? p[0].str()
                                    : std::string(static_cast<size_t>(std::clamp<int64_t>(
                                                      toIndex(p[0], "width"), 0, 1 << 16)),
                                                  ' ');
    const std::vector<std::string> lines = pySplitLines(v.str() + "\n", false);
    std::string out;
    if (truthy(p[2])) {
        for (size_t i = 0; i < lines.size(); ++i)
            out += (i ? "\n" + indention : "") + lines[i];
    } else {
        out = lines.empty() ? "" : lines[0];
        for (size_t i = 1; i < lines.size(); ++i) {
            out += "\n";
            if (!lines[i].empty())
                out += indention;
            out += lines[i];
            checkSize(out.size());
        }
    }
    if (truthy(p[1]))
        out = indention + out;
    return Val(std::move(out), v.markup());
}

Val fItems(Ctx&, const Val& v, const Args& args)
{
    Params p("items", args, {});
    if (v.isUndefined())
        return Val::list({}, Seq::Generator, "do_items");
    if (!v.isDict())
        failRender("Can only get item pairs from a mapping.");
    std::vector<Val> pairs;
    for (const auto& [key, value] : v.dict().items())
        pairs.push_back(Val::list({key, value}, Seq::Tuple));
    return Val::list(std::move(pairs), Seq::Generator, "do_items");
}

Val fJoin(Ctx&, const Val& v, const Args& args)
{
    const Params p("join", args, {"d", "attribute"});
    const std::string sep = p.has(0) ? strOf(p[0]) : "";
    std::string out;
    bool first = true;
    const auto iterated = iterate(v);
    for (const Val& item : *iterated) {
        if (!first)
            out += sep;
        first = false;
        out += strOf(p.has(1) ? getPath(item, p[1]) : item);
        checkSize(out.size());
    }
    return Val(std::move(out));
}

Val fLower(Ctx&, const Val& v, const Args& args)
{
    Params p("lower", args, {});
    return Val(pyLower(strOf(v)));
}

Val fUpper(Ctx&, const Val& v, const Args& args)
{
    Params p("upper", args, {});
    return Val(pyUpper(strOf(v)));
}

Val fReplace(Ctx& ctx, const Val& v, const Args& args)
{
    const Params p("replace", args, {"old", "new", "count"}, 2);
    Args call;
    call.pos = {Val(strOf(p[0])), Val(strOf(p[1]))};
    if (p.has(2) && !p[2].isNone())
        call.pos.push_back(p[2]);
    return callMethod(ctx, MethodObj(Val(strOf(v)), "replace"), call);
}

Val fSafe(Ctx&, const Val& v, const Args& args)
{
    Params p("safe", args, {});
    return Val(strOf(v), true);
}

Val fString(Ctx&, const Val& v, const Args& args)
{
    Params p("string", args, {});
    return Val(strOf(v), v.markup());
}

bool isTitleSeparator(char32_t c)
{
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || isPySpace(c);
}

// jinja2's title: words split at runs of - ( { [ < and whitespace; each piece gets its first
// character upper-cased and the rest lower-cased.
Val fTitle(Ctx&, const Val& v, const Args& args)
{
    Params p("title", args, {});
    const std::string s = strOf(v);
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
        size_t len = 0;
        const bool sep = isTitleSeparator(decodeUtf8(s, i, &len));
        size_t j = i;
        while (j < s.size() && isTitleSeparator(decodeUtf8(s, j, &len)) == sep)
            j += len;
        decodeUtf8(s, i, &len);
        out += pyUpper(s.substr(i, len)) + pyLower(s.substr(i + len, j - i - len));
        i = j;
    }
    return Val(std::move(out));
}

Val fTrim(Ctx&, const Val& v, const Args& args)
{
    const Params p("trim", args, {"chars"});
    if (p.has(0) && !p[0].isNone()) {
        const std::string chars = requireStr(p[0], "trim", "chars");
        return Val(pyStrip(strOf(v), &chars, true, true));
    }
    return Val(pyStrip(strOf(v), nullptr, true, true));
}

Val fTruncate(Ctx&, const Val& v, const Args& args)
{
    const Params p("truncate", args, {"length", "killwords", "end", "leeway"});
    if (!v.isString()) {  // jinja2 takes len() of anything and slices it
        const size_t n = pyLen(v);
        if (static_cast<int64_t>(n) <= (p.has(0) ? toIndex(p[0], "length") : 255) + 5)
            return v;
        failRender("unsupported: truncate of a long ", typeName(v));
    }
    const std::string s = v.str();
    const int64_t length = p.has(0) ? toIndex(p[0], "length") : 255;
    const std::string end = p.has(2) ? strOf(p[2]) : "...";
    const int64_t leeway = p.has(3) && !p[3].isNone() ? toIndex(p[3], "leeway") : 5;
    const auto endLength = static_cast<int64_t>(codePointCount(end));
    if (length < endLength)
        failRender("expected length >= ", endLength, ", got ", length);
    if (leeway < 0)
        failRender("expected leeway >= 0, got ", leeway);
    const auto offsets = codePointOffsets(s);
    if (static_cast<int64_t>(offsets.size() - 1) <= length + leeway)
        return Val(s);
    std::string head = s.substr(0, offsets[static_cast<size_t>(length - endLength)]);
    if (!truthy(p[1])) {
        const size_t space = head.rfind(' ');
        if (space != std::string::npos)
            head.resize(space);
    }
    return Val(head + end);
}

Val fWordcount(Ctx&, const Val& v, const Args& args)
{
    Params p("wordcount", args, {});
    const std::string s = strOf(v);
    int64_t words = 0;
    bool inWord = false;
    for (size_t i = 0, len = 0; i < s.size(); i += len) {
        const bool w = isAlnumCp(decodeUtf8(s, i, &len));
        words += w && !inWord;
        inWord = w;
    }
    return Val(words);
}

Val fTojson(Ctx&, const Val& v, const Args& args)
{
    return tojsonFilter(v, args);
}

}  // namespace

void addTextFilters(std::vector<FilterDef>& table)
{
    table.insert(table.end(), {{"abs", fAbs},
                               {"attr", fAttr},
                               {"capitalize", fCapitalize},
                               {"center", fCenter},
                               {"count", fLength},
                               {"d", fDefault},
                               {"default", fDefault},
                               {"dictsort", fDictsort},
                               {"e", fEscape},
                               {"escape", fEscape},
                               {"first", fFirst},
                               {"float", fFloat},
                               {"forceescape", fForceescape},
                               {"format", fFormat},
                               {"indent", fIndent},
                               {"int", fInt},
                               {"items", fItems},
                               {"join", fJoin},
                               {"last", fLast},
                               {"length", fLength},
                               {"lower", fLower},
                               {"replace", fReplace},
                               {"safe", fSafe},
                               {"string", fString},
                               {"title", fTitle},
                               {"tojson", fTojson},
                               {"trim", fTrim},
                               {"truncate", fTruncate},
                               {"upper", fUpper},
                               {"wordcount", fWordcount}});
}

}  // namespace tb::jinja::detail
