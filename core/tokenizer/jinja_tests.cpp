// jinja2's tests (tests.py), the filter and test tables by name, and the globals transformers'
// environment defines: range (sandboxed), namespace, dict, raise_exception and strftime_now.
#include "tokenizer/jinja_builtins.h"

#include "tokenizer/jinja_text.h"

#include <ctime>
#include <set>

namespace tb::jinja::detail {

namespace {

// jinja2 filters and tests this interpreter does not implement (refused as "unsupported").
const std::set<std::string, std::less<>> kUnsupportedFilters = {
    "filesizeformat", "groupby", "pprint",   "random", "striptags",
    "urlencode",      "urlize",  "wordwrap", "xmlattr"};

using TestFn = bool (*)(Ctx& ctx, const Val& v, const Params& p);
struct TestDef {
    const char* name;
    TestFn fn;
    std::initializer_list<const char*> params;
};

bool isOdd(Ctx&, const Val& v, const Params&)
{
    return pyEquals(binaryOp(BinOp::Mod, v, Val(int64_t{2})), Val(int64_t{1}));
}

bool isEven(Ctx&, const Val& v, const Params&)
{
    return pyEquals(binaryOp(BinOp::Mod, v, Val(int64_t{2})), Val(int64_t{0}));
}

bool isDivisibleby(Ctx&, const Val& v, const Params& p)
{
    return pyEquals(binaryOp(BinOp::Mod, v, p[0]), Val(int64_t{0}));
}

bool isDefined(Ctx&, const Val& v, const Params&)
{
    return !v.isUndefined();
}

bool isUndefined(Ctx&, const Val& v, const Params&)
{
    return v.isUndefined();
}

bool isNone(Ctx&, const Val& v, const Params&)
{
    return v.isNone();
}

bool isBoolean(Ctx&, const Val& v, const Params&)
{
    return v.isBool();
}

bool isFalse(Ctx&, const Val& v, const Params&)
{
    return v.isBool() && !v.boolean();
}

bool isTrue(Ctx&, const Val& v, const Params&)
{
    return v.isBool() && v.boolean();
}

bool isInteger(Ctx&, const Val& v, const Params&)
{
    return v.isInt();
}

bool isFloat(Ctx&, const Val& v, const Params&)
{
    return v.kind() == Kind::Float;
}

bool isLower(Ctx&, const Val& v, const Params&)
{
    return pyIsLower(toStr(v));
}

bool isUpper(Ctx&, const Val& v, const Params&)
{
    return pyIsUpper(toStr(v));
}

bool isString(Ctx&, const Val& v, const Params&)
{
    return v.isString();
}

bool isMapping(Ctx&, const Val& v, const Params&)
{
    return v.isDict();
}

bool isNumber(Ctx&, const Val& v, const Params&)
{
    return v.isNumber();
}

// len() and __getitem__: str, list, tuple, dict, and (quirk) undefined.
bool isSequence(Ctx&, const Val& v, const Params&)
{
    return v.isUndefined() || v.isString() || v.isSequence() || v.isDict();
}

bool isIterableTest(Ctx&, const Val& v, const Params&)
{
    return isIterable(v);
}

bool isCallable(Ctx&, const Val& v, const Params&)
{
    return v.isUndefined() || (v.isObject() && v.object().kind != ObjKind::Namespace &&
                               v.object().kind != ObjKind::Loop);
}

bool isSameas(Ctx&, const Val& v, const Params& p)
{
    const Val& o = p[0];
    if (v.kind() != o.kind())
        return false;
    switch (v.kind()) {
    case Kind::None:
        return true;
    case Kind::Bool:
        return v.boolean() == o.boolean();
    case Kind::Int:  // CPython caches the small ints
        return v.integer() == o.integer() && v.integer() >= -5 && v.integer() <= 256;
    case Kind::List:
    case Kind::Dict:
    case Kind::Object:
        return v.identity() == o.identity();
    default:
        return false;
    }
}

bool isEscaped(Ctx&, const Val& v, const Params&)
{
    return v.markup();
}

bool isIn(Ctx&, const Val& v, const Params& p)
{
    return contains(p[0], v);
}

bool isFilter(Ctx&, const Val& v, const Params&)
{
    bool known = false;
    return v.isString() && filterId(v.str(), &known) >= 0;
}

bool isTest(Ctx&, const Val& v, const Params&)
{
    bool known = false;
    return v.isString() && testId(v.str(), &known) >= 0;
}

bool isEq(Ctx&, const Val& v, const Params& p)
{
    return compareOp(CmpOp::Eq, v, p[0]);
}
bool isNe(Ctx&, const Val& v, const Params& p)
{
    return compareOp(CmpOp::Ne, v, p[0]);
}
bool isGt(Ctx&, const Val& v, const Params& p)
{
    return compareOp(CmpOp::Gt, v, p[0]);
}
bool isGe(Ctx&, const Val& v, const Params& p)
{
    return compareOp(CmpOp::Ge, v, p[0]);
}
bool isLt(Ctx&, const Val& v, const Params& p)
{
    return compareOp(CmpOp::Lt, v, p[0]);
}
bool isLe(Ctx&, const Val& v, const Params& p)
{
    return compareOp(CmpOp::Le, v, p[0]);
}

const std::vector<TestDef>& tests()
{
    static const std::vector<TestDef> table = {{"odd", isOdd, {}},
                                               {"even", isEven, {}},
                                               {"divisibleby", isDivisibleby, {"num"}},
                                               {"defined", isDefined, {}},
                                               {"undefined", isUndefined, {}},
                                               {"filter", isFilter, {}},
                                               {"test", isTest, {}},
                                               {"none", isNone, {}},
                                               {"boolean", isBoolean, {}},
                                               {"false", isFalse, {}},
                                               {"true", isTrue, {}},
                                               {"integer", isInteger, {}},
                                               {"float", isFloat, {}},
                                               {"lower", isLower, {}},
                                               {"upper", isUpper, {}},
                                               {"string", isString, {}},
                                               {"mapping", isMapping, {}},
                                               {"number", isNumber, {}},
                                               {"sequence", isSequence, {}},
                                               {"iterable", isIterableTest, {}},
                                               {"callable", isCallable, {}},
                                               {"sameas", isSameas, {"other"}},
                                               {"escaped", isEscaped, {}},
                                               {"in", isIn, {"seq"}},
                                               {"==", isEq, {"other"}},
                                               {"eq", isEq, {"other"}},
                                               {"equalto", isEq, {"other"}},
                                               {"!=", isNe, {"other"}},
                                               {"ne", isNe, {"other"}},
                                               {">", isGt, {"other"}},
                                               {"gt", isGt, {"other"}},
                                               {"greaterthan", isGt, {"other"}},
                                               {">=", isGe, {"other"}},
                                               {"ge", isGe, {"other"}},
                                               {"<", isLt, {"other"}},
                                               {"lt", isLt, {"other"}},
                                               {"lessthan", isLt, {"other"}},
                                               {"<=", isLe, {"other"}},
                                               {"le", isLe, {"other"}}};
    return table;
}

const std::vector<FilterDef>& filters()
{
    static const std::vector<FilterDef> table = [] {
        std::vector<FilterDef> t;
        addTextFilters(t);
        addSequenceFilters(t);
        return t;
    }();
    return table;
}

}  // namespace

int filterId(std::string_view name, bool* known)
{
    const auto& table = filters();
    for (size_t i = 0; i < table.size(); ++i)
        if (name == table[i].name) {
            *known = true;
            return static_cast<int>(i);
        }
    *known = kUnsupportedFilters.count(name) != 0;
    return -1;
}

int testId(std::string_view name, bool* known)
{
    const auto& table = tests();
    for (size_t i = 0; i < table.size(); ++i)
        if (name == table[i].name) {
            *known = true;
            return static_cast<int>(i);
        }
    *known = false;
    return -1;
}

Val applyFilter(Ctx& ctx, int id, const Val& input, const Args& args)
{
    return filters()[static_cast<size_t>(id)].fn(ctx, input, args);
}

bool applyTest(Ctx& ctx, int id, const Val& input, const Args& args)
{
    const TestDef& test = tests()[static_cast<size_t>(id)];
    const std::string function = std::string("test_") + test.name;
    const Params p(function.c_str(), args, test.params, test.params.size());
    return test.fn(ctx, input, p);
}

Val applyFilterByName(Ctx& ctx, const Val& name, const Val& input, const Args& args)
{
    bool known = false;
    const int id = name.isString() ? filterId(name.str(), &known) : -1;
    if (id < 0)
        failRender(known ? "unsupported filter " : "No filter named ", toRepr(name), ".");
    return applyFilter(ctx, id, input, args);
}

bool applyTestByName(Ctx& ctx, const Val& name, const Val& input, const Args& args)
{
    bool known = false;
    const int id = name.isString() ? testId(name.str(), &known) : -1;
    if (id < 0)
        failRender("No test named ", toRepr(name), ".");
    return applyTest(ctx, id, input, args);
}

const Val* globalNamed(const std::string& name)
{
    static const std::vector<std::pair<std::string, Val>> globals = [] {
        std::vector<std::pair<std::string, Val>> g;
        const std::pair<const char*, Global> names[] = {{"range", Global::Range},
                                                        {"namespace", Global::Namespace},
                                                        {"dict", Global::Dict},
                                                        {"raise_exception", Global::RaiseException},
                                                        {"strftime_now", Global::StrftimeNow},
                                                        {"cycler", Global::Cycler},
                                                        {"joiner", Global::Joiner},
                                                        {"lipsum", Global::Lipsum}};
        for (const auto& [n, which] : names)
            g.emplace_back(n, Val::object(std::make_shared<FunctionObj>(which)));
        return g;
    }();
    for (const auto& [n, v] : globals)
        if (n == name)
            return &v;
    return nullptr;
}

namespace {

Val rangeOf(const Args& args)
{
    if (!args.kw.empty())
        failRender("range() takes no keyword arguments");
    if (args.pos.empty() || args.pos.size() > 3)
        failRender("range expected 1 to 3 arguments, got ", args.pos.size());
    int64_t start = 0;
    int64_t stop = 0;
    int64_t step = 1;
    if (args.pos.size() == 1) {
        stop = toIndex(args.pos[0], "range");
    } else {
        start = toIndex(args.pos[0], "range");
        stop = toIndex(args.pos[1], "range");
        if (args.pos.size() == 3)
            step = toIndex(args.pos[2], "range");
    }
    if (step == 0)
        failRender("range() arg 3 must not be zero");
    // the length in 128 bits: start, stop and step may be anything
    const __int128 span =
        step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
    const __int128 by = step > 0 ? step : -static_cast<__int128>(step);
    const __int128 length = span <= 0 ? 0 : (span + by - 1) / by;
    if (length > kMaxRange)
        failRender("Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange,
                   ").");
    std::vector<Val> items;
    items.reserve(static_cast<size_t>(length));
    for (__int128 i = 0; i < length; ++i)
        items.emplace_back(static_cast<int64_t>(start + i * step));
    return Val::list(std::move(items));
}

// dict(*args, **kwargs): a mapping or pairs, then keywords.
std::shared_ptr<Dict> dictOf(const Args& args, const char* function)
{
    auto dict = std::make_shared<Dict>();
    if (args.pos.size() > 1)
        failRender(function, " expected at most 1 argument, got ", args.pos.size());
    if (!args.pos.empty()) {
        const Val& source = args.pos[0];
        if (source.isDict()) {
            *dict = source.dict();
        } else {
            size_t i = 0;
            const auto iterated = iterate(source);
            for (const Val& pair : *iterated) {
                const auto kv = iterate(pair);
                if (kv->size() != 2)
                    failRender("dictionary update sequence element #", i, " has length ",
                               kv->size(), "; 2 is required");
                dict->set((*kv)[0], (*kv)[1]);
                ++i;
            }
        }
    }
    for (const auto& [key, value] : args.kw)
        dict->set(key, value);
    return dict;
}

std::string localStrftime(const std::string& format)
{
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    if (format.empty())
        return {};
    for (size_t size = 256; size <= (size_t{1} << 20); size *= 4) {
        std::string buf(size, '\0');
        const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &local);
        if (n > 0) {
            buf.resize(n);
            return buf;
        }
    }
    return {};
}

}  // namespace

Val callGlobal(Ctx& ctx, Global which, const Args& args)
{
    switch (which) {
    case Global::Range:
        return rangeOf(args);
    case Global::Dict:
        return Val::dict(dictOf(args, "dict"));
    case Global::Namespace: {
        auto ns = std::make_shared<Namespace>();
        ns->attrs = *dictOf(args, "namespace");
        for (const auto& [key, value] : ns->attrs.items())
            if (key.isString() && !key.str().empty() && key.str()[0] == '_')
                failRender("Chat templates cannot store underscore-prefixed attributes on a "
                           "namespace, but got ",
                           pyStrRepr(key.str()), ". Please rename the attribute.");
        return Val::object(std::move(ns));
    }
    case Global::RaiseException: {
        const Params p("raise_exception", args, {"message"}, 1);
        throw Raised{toStr(p[0])};
    }
    case Global::StrftimeNow: {
        const Params p("strftime_now", args, {"format"}, 1);
        const std::string format = requireStr(p[0], "strftime_now", "format");
        return Val(ctx.options.strftimeNow ? ctx.options.strftimeNow(format)
                                           : localStrftime(format));
    }
    case Global::Cycler:
        failRender("unsupported: cycler()");
    case Global::Joiner:
        failRender("unsupported: joiner()");
    case Global::Lipsum:
        failRender("unsupported: lipsum()");
    }
    failRender("unsupported function");
}

}  // namespace tb::jinja::detail
