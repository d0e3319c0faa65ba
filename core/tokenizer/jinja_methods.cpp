// Methods templates call on values, with Python's semantics: str (strip, split, startswith,
// replace, find, join, ...), dict (items, keys, values, get), list and tuple (count, index), and
// the loop's cycle() and changed(). Mutating methods are refused, as jinja2's immutable sandbox
// does.
#include "tokenizer/jinja_builtins.h"

#include "tokenizer/jinja_text.h"

#include <algorithm>
#include <set>

namespace tb::jinja::detail {

std::string strFormat(const std::string& format, const Args& args);

namespace {

const std::set<std::string, std::less<>>& strMethods()
{
    static const std::set<std::string, std::less<>> names = {
        "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
        "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
        "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
        "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
        "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
        "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
        "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
        "swapcase",     "title",       "translate", "upper",      "zfill"};
    return names;
}

bool oneOf(const std::string& name, std::initializer_list<const char*> names)
{
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

// Code point index <-> byte offset in s.
size_t cpToByte(const std::vector<size_t>& offsets, int64_t cp)
{
    return offsets[static_cast<size_t>(cp)];
}

int64_t byteToCp(const std::vector<size_t>& offsets, size_t byte)
{
    return static_cast<int64_t>(std::lower_bound(offsets.begin(), offsets.end(), byte) -
                                offsets.begin());
}

// The [start, end) window of str.find/count/startswith arguments, as byte offsets.
void window(const std::vector<size_t>& offsets, const Val& start, const Val& end, size_t* from,
            size_t* to)
{
    const auto n = static_cast<int64_t>(offsets.size() - 1);
    auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(i + n, 0) : std::min(i, n); };
    const int64_t a = start.isUndefined() || start.isNone() ? 0 : clamp(toIndex(start, "start"));
    const int64_t b = end.isUndefined() || end.isNone() ? n : clamp(toIndex(end, "end"));
    *from = cpToByte(offsets, a);
    *to = std::max(*from, cpToByte(offsets, std::max(a, b)));
}

std::vector<std::string> splitWhitespace(const std::string& s, int64_t maxsplit, bool right)
{
    std::vector<std::string> parts;
    std::vector<std::pair<size_t, size_t>> words;  // byte ranges of the words
    for (size_t i = 0, len = 0; i < s.size();) {
        if (isPySpace(decodeUtf8(s, i, &len))) {
            i += len;
            continue;
        }
        const size_t begin = i;
        while (i < s.size() && !isPySpace(decodeUtf8(s, i, &len)))
            i += len;
        words.emplace_back(begin, i);
    }
    const size_t limit = maxsplit < 0 ? words.size() : static_cast<size_t>(maxsplit) + 1;
    if (maxsplit < 0 || words.size() < limit) {
        for (const auto& [a, b] : words)
            parts.push_back(s.substr(a, b - a));
        return parts;
    }
    if (!right) {
        for (size_t w = 0; w + 1 < limit; ++w)
            parts.push_back(s.substr(words[w].first, words[w].second - words[w].first));
        parts.push_back(s.substr(words[limit - 1].first));  // the rest keeps its trailing space
        return parts;
    }
    const size_t firstKept = words.size() - (limit - 1);
    parts.push_back(s.substr(0, words[firstKept - 1].second));
    for (size_t w = firstKept; w < words.size(); ++w)
        parts.push_back(s.substr(words[w].first, words[w].second - words[w].first));
    return parts;
}

std::vector<std::string> splitOn(const std::string& s, const std::string& sep, int64_t maxsplit,
                                 bool right)
{
    if (sep.empty())
        failRender("empty separator");
    std::vector<size_t> hits;
    for (size_t at = s.find(sep); at != std::string::npos; at = s.find(sep, at + sep.size()))
        hits.push_back(at);
    if (maxsplit >= 0 && hits.size() > static_cast<size_t>(maxsplit)) {
        if (right) {
            // rsplit finds separators from the right; they may differ for overlapping ones
            hits.clear();
            size_t end = s.size();
            while (hits.size() < static_cast<size_t>(maxsplit) && end >= sep.size()) {
                const size_t at = s.rfind(sep, end - sep.size());
                if (at == std::string::npos)
                    break;
                hits.insert(hits.begin(), at);
                end = at;
            }
        } else {
            hits.resize(static_cast<size_t>(maxsplit));
        }
    }
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t at : hits) {
        parts.push_back(s.substr(start, at - start));
        start = at + sep.size();
    }
    parts.push_back(s.substr(start));
    return parts;
}

Val stringList(const std::vector<std::string>& parts, Seq seq = Seq::List)
{
    std::vector<Val> items;
    items.reserve(parts.size());
    for (const auto& p : parts)
        items.emplace_back(p);
    return Val::list(std::move(items), seq);
}

std::string pad(const std::string& s, const Val& widthVal, const Val& fillVal, char align)
{
    const int64_t width = toIndex(widthVal, "width");
    std::string fill = " ";
    if (!fillVal.isUndefined()) {
        fill = requireStr(fillVal, "pad", "fillchar");
        if (codePointCount(fill) != 1)
            failRender("The fill character must be exactly one character long");
    }
    const auto length = static_cast<int64_t>(codePointCount(s));
    if (width <= length)
        return s;
    checkSize(static_cast<size_t>(width) * fill.size());
    const int64_t marg = width - length;
    int64_t left = align == '<' ? 0 : align == '>' ? marg : marg / 2 + (marg & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i)
        out += fill;
    out += s;
    for (int64_t i = 0; i < marg - left; ++i)
        out += fill;
    return out;
}

bool matchesAffix(const std::string& s, size_t from, size_t to, const Val& affix, bool suffix)
{
    auto one = [&](const Val& a) {
        const std::string x = requireStr(a, suffix ? "endswith" : "startswith", "prefix");
        if (x.size() > to - from)
            return false;
        return suffix ? s.compare(to - x.size(), x.size(), x) == 0
                      : s.compare(from, x.size(), x) == 0;
    };
    if (affix.isList() && affix.seq() == Seq::Tuple)
        return std::any_of(affix.items().begin(), affix.items().end(), one);
    if (!affix.isString())
        failRender(suffix ? "endswith" : "startswith",
                   " first arg must be str or a tuple of str, not ", typeName(affix));
    return one(affix);
}

std::string replaceAll(const std::string& s, const std::string& old, const std::string& with,
                       int64_t count)
{
    std::string out;
    int64_t done = 0;
    if (old.empty()) {
        for (size_t i = 0, len = 0; i <= s.size(); i += len) {
            if (count < 0 || done < count) {
                out += with;
                ++done;
            }
            if (i == s.size())
                break;
            decodeUtf8(s, i, &len);
            out.append(s, i, len);
            checkSize(out.size());
        }
        return out;
    }
    size_t start = 0;
    for (size_t at = s.find(old); at != std::string::npos && (count < 0 || done < count);
         at = s.find(old, start)) {
        out.append(s, start, at - start);
        out += with;
        checkSize(out.size());
        start = at + old.size();
        ++done;
    }
    out.append(s, start, std::string::npos);
    return out;
}

Val findIn(const std::string& s, const Params& p, bool right, bool raise, bool count)
{
    const std::string sub = requireStr(p[0], p.function(), "sub");
    const auto offsets = codePointOffsets(s);
    size_t from = 0;
    size_t to = 0;
    window(offsets, p[1], p[2], &from, &to);
    const std::string_view hay(s.data() + from, to - from);
    if (count) {
        if (sub.empty())
            return Val(static_cast<int64_t>(codePointCount(hay)) + 1);
        int64_t n = 0;
        for (size_t at = hay.find(sub); at != std::string_view::npos;
             at = hay.find(sub, at + sub.size()))
            ++n;
        return Val(n);
    }
    const size_t at = right ? hay.rfind(sub) : hay.find(sub);
    if (at == std::string_view::npos) {
        if (raise)
            failRender("substring not found");
        return Val(int64_t{-1});
    }
    return Val(byteToCp(offsets, from + at));
}

Val callStrMethod(const Val& self, const std::string& name, const Args& args);
Val callStrPredicate(const std::string& s, const std::string& name);
Val otherStrMethod(const std::string& s, const std::string& name, const Args& args);

}  // namespace

bool hasMethod(const Val& self, const std::string& name, bool* unsafe)
{
    *unsafe = false;
    switch (self.kind()) {
    case Kind::String:
        return strMethods().count(name) != 0;
    case Kind::Dict:
        if (oneOf(name, {"clear", "pop", "popitem", "setdefault", "update"}))
            return *unsafe = true;
        return oneOf(name, {"keys", "values", "items", "get", "copy", "fromkeys"});
    case Kind::List:
        if (self.seq() == Seq::List) {
            if (oneOf(name,
                      {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"}))
                return *unsafe = true;
            return oneOf(name, {"count", "index", "copy"});
        }
        return self.seq() == Seq::Tuple && oneOf(name, {"count", "index"});
    default:
        return false;
    }
}

namespace {

Val callDictMethod(const Val& self, const std::string& name, const Args& args)
{
    const Dict& d = self.dict();
    if (name == "get") {
        const Params p("get", args, {"key", "default"}, 1);
        requireHashable(p[0]);
        const Val* v = d.find(p[0]);
        return v ? *v : p.has(1) ? p[1] : Val::none();
    }
    const Params p(name.c_str(), args, {});
    if (name == "copy")
        return Val::dict(std::make_shared<Dict>(d));
    std::vector<Val> out;
    out.reserve(d.size());
    for (const auto& [key, value] : d.items()) {
        if (name == "keys")
            out.push_back(key);
        else if (name == "values")
            out.push_back(value);
        else
            out.push_back(Val::list({key, value}, Seq::Tuple));
    }
    if (name == "keys")
        return Val::list(std::move(out), Seq::Keys);
    if (name == "values")
        return Val::list(std::move(out), Seq::Values);
    if (name == "items")
        return Val::list(std::move(out), Seq::Items);
    failRender("unsupported: dict.", name, "()");
}

Val callListMethod(const Val& self, const std::string& name, const Args& args)
{
    const auto& items = self.items();
    if (name == "copy") {
        const Params p("copy", args, {});
        return Val::list(items, self.seq());
    }
    const Params p(name.c_str(), args, {"value", "start", "stop"}, 1);
    if (name == "count")
        return Val(static_cast<int64_t>(std::count_if(
            items.begin(), items.end(), [&](const Val& v) { return pyEquals(v, p[0]); })));
    const auto n = static_cast<int64_t>(items.size());
    auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(i + n, 0) : std::min(i, n); };
    const int64_t from = p.has(1) ? clamp(toIndex(p[1], "start")) : 0;
    const int64_t to = p.has(2) ? clamp(toIndex(p[2], "stop")) : n;
    for (int64_t i = from; i < to; ++i)
        if (pyEquals(items[static_cast<size_t>(i)], p[0]))
            return Val(i);
    failRender(toRepr(p[0]), " is not in list");
}

Val callLoopMethod(const Val& self, const std::string& name, const Args& args)
{
    auto& loop = static_cast<LoopObj&>(self.object());
    if (!args.kw.empty())
        failRender(name, "() takes no keyword arguments");
    if (name == "cycle") {
        if (args.pos.empty())
            failRender("no items for cycling given");
        return args.pos[loop.index0 % args.pos.size()];
    }
    const Val value = Val::list(args.pos, Seq::Tuple);
    if (loop.changedOnce && pyEquals(loop.lastChanged, value))
        return Val(false);
    loop.changedOnce = true;
    loop.lastChanged = value;
    return Val(true);
}

}  // namespace

Val callMethod(Ctx& ctx, const MethodObj& method, const Args& args)
{
    const Val& self = method.self;
    ctx.tick();
    switch (self.kind()) {
    case Kind::String:
        return callStrMethod(self, method.name, args);
    case Kind::Dict:
        return callDictMethod(self, method.name, args);
    case Kind::List:
        return callListMethod(self, method.name, args);
    case Kind::Object:
        if (self.object().kind == ObjKind::Loop)
            return callLoopMethod(self, method.name, args);
        break;
    default:
        break;
    }
    failRender("unsupported method ", method.name);
}

namespace {

Val callStrPredicate(const std::string& s, const std::string& name)
{
    if (name == "islower")
        return Val(pyIsLower(s));
    if (name == "isupper")
        return Val(pyIsUpper(s));
    if (name == "isascii")
        return Val(isAscii(s));
    static const std::pair<const char*, char> classes[] = {{"isalpha", 'a'},   {"isdigit", 'd'},
                                                           {"isnumeric", 'n'}, {"isdecimal", 'D'},
                                                           {"isalnum", 'w'},   {"isspace", 's'}};
    for (const auto& [n, c] : classes)
        if (name == n)
            return Val(pyIsClass(s, c));
    if (name == "istitle")  // title-cased already, with at least one cased character
        return Val(pyTitle(s) == s && pyLower(s) != pyUpper(s));
    failRender("unsupported: str.", name, "()");
}

Val splitMethod(const std::string& s, const std::string& name, const Args& args)
{
    const Params p(name.c_str(), args, {"sep", "maxsplit"});
    const int64_t maxsplit = p.has(1) ? toIndex(p[1], "maxsplit") : -1;
    const bool right = name == "rsplit";
    if (!p.has(0) || p[0].isNone())
        return stringList(splitWhitespace(s, maxsplit, right));
    return stringList(splitOn(s, requireStr(p[0], name.c_str(), "sep"), maxsplit, right));
}

Val callStrMethod(const Val& self, const std::string& name, const Args& args)
{
    const std::string& s = self.str();
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const Params p(name.c_str(), args, {"chars"});
        std::string chars;
        const bool given = p.has(0) && !p[0].isNone();
        if (given)
            chars = requireStr(p[0], name.c_str(), "chars");
        return Val(pyStrip(s, given ? &chars : nullptr, name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit")
        return splitMethod(s, name, args);
    if (name == "splitlines") {
        const Params p("splitlines", args, {"keepends"});
        return stringList(pySplitLines(s, truthy(p[0])));
    }
    if (name == "startswith" || name == "endswith") {
        const Params p(name.c_str(), args, {"prefix", "start", "end"}, 1);
        const auto offsets = codePointOffsets(s);
        size_t from = 0;
        size_t to = 0;
        window(offsets, p[1], p[2], &from, &to);
        return Val(matchesAffix(s, from, to, p[0], name == "endswith"));
    }
    if (name == "replace") {
        const Params p("replace", args, {"old", "new", "count"}, 2);
        return Val(replaceAll(s, requireStr(p[0], "replace", "old"),
                              requireStr(p[1], "replace", "new"),
                              p.has(2) ? toIndex(p[2], "count") : -1));
    }
    if (oneOf(name, {"find", "rfind", "index", "rindex", "count"})) {
        const Params p(name.c_str(), args, {"sub", "start", "end"}, 1);
        return findIn(s, p, name[0] == 'r', name.find("index") != std::string::npos,
                      name == "count");
    }
    if (name == "format")
        return Val(strFormat(s, args));
    return otherStrMethod(s, name, args);
}

// join, padding, partition, affixes and case: the rest of callStrMethod.
Val otherStrMethod(const std::string& s, const std::string& name, const Args& args)
{
    if (name == "join") {
        const Params p("join", args, {"iterable"}, 1);
        std::string out;
        size_t i = 0;
        const auto iterated = iterate(p[0]);
        for (const Val& item : *iterated) {
            if (!item.isString())
                failRender("sequence item ", i, ": expected str instance, ", typeName(item),
                           " found");
            if (i++)
                out += s;
            out += item.str();
            checkSize(out.size());
        }
        return Val(std::move(out));
    }
    if (name == "center" || name == "ljust" || name == "rjust") {
        const Params p(name.c_str(), args, {"width", "fillchar"}, 1);
        return Val(pad(s, p[0], p[1], name == "center" ? '^' : name == "ljust" ? '<' : '>'));
    }
    if (name == "zfill") {
        const Params p("zfill", args, {"width"}, 1);
        const int64_t width = toIndex(p[0], "width");
        const auto length = static_cast<int64_t>(codePointCount(s));
        if (width <= length)
            return Val(s);
        checkSize(static_cast<size_t>(width));
        const bool sign = !s.empty() && (s[0] == '+' || s[0] == '-');
        std::string zeros(static_cast<size_t>(width - length), '0');
        return Val(sign ? s.substr(0, 1) + zeros + s.substr(1) : zeros + s);
    }
    if (name == "partition" || name == "rpartition") {
        const Params p(name.c_str(), args, {"sep"}, 1);
        const std::string sep = requireStr(p[0], name.c_str(), "sep");
        if (sep.empty())
            failRender("empty separator");
        const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
        if (at == std::string::npos)
            return stringList(name == "partition" ? std::vector<std::string>{s, "", ""}
                                                  : std::vector<std::string>{"", "", s},
                              Seq::Tuple);
        return stringList({s.substr(0, at), sep, s.substr(at + sep.size())}, Seq::Tuple);
    }
    if (name == "removeprefix" || name == "removesuffix") {
        const Params p(name.c_str(), args, {"affix"}, 1);
        const std::string a = requireStr(p[0], name.c_str(), "affix");
        if (name == "removeprefix")
            return Val(s.compare(0, a.size(), a) == 0 ? s.substr(a.size()) : s);
        const bool ends = a.size() <= s.size() && s.compare(s.size() - a.size(), a.size(), a) == 0;
        return Val(ends ? s.substr(0, s.size() - a.size()) : s);
    }
    const Params none(name.c_str(), args, {});
    if (name == "lower" || name == "casefold")
        return Val(pyLower(s));
    if (name == "upper")
        return Val(pyUpper(s));
    if (name == "title")
        return Val(pyTitle(s));
    if (name == "capitalize")
        return Val(pyCapitalize(s));
    if (name == "swapcase")
        return Val(pySwapcase(s));
    if (name.rfind("is", 0) == 0)
        return callStrPredicate(s, name);
    failRender("unsupported: str.", name, "()");
}

}  // namespace

}  // namespace tb::jinja::detail
