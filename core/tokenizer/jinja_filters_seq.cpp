// jinja2's filters over sequences: list, map, select/reject(attr), sort, unique, min/max, sum,
// reverse, slice, batch, and round; the lazy ones give single-pass generators as jinja2 does.
#include "tokenizer/jinja_builtins.h"

#include "tokenizer/jinja_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tb::jinja::detail {

namespace {

Val generator(std::vector<Val> items, const char* producer)
{
    return Val::list(std::move(items), Seq::Generator, producer);
}

const Val* keyword(const Args& args, const char* name)
{
    for (const auto& [key, value] : args.kw)
        if (key == name)
            return &value;
    return nullptr;
}

Val fList(Ctx& ctx, const Val& v, const Args& args)
{
    Params p("list", args, {});
    const auto items = iterate(v);
    ctx.tick(items->size());
    return Val::list(*items);
}

Val fMap(Ctx& ctx, const Val& v, const Args& args)
{
    if (!truthy(v))
        return generator({}, "sync_do_map");
    std::vector<Val> out;
    const Val* attribute = args.pos.empty() ? keyword(args, "attribute") : nullptr;
    if (attribute) {
        const Val* fallback = keyword(args, "default");
        for (const auto& [key, value] : args.kw)
            if (key != "attribute" && key != "default")
                failRender("Unexpected keyword argument ", pyStrRepr(key));
        const auto iterated = iterate(v);
        for (const Val& item : *iterated) {
            ctx.tick();
            Val r = getPath(item, *attribute);
            if (fallback && !fallback->isNone() && r.isUndefined())
                r = *fallback;
            out.push_back(std::move(r));
        }
        return generator(std::move(out), "sync_do_map");
    }
    if (args.pos.empty())
        failRender("map requires a filter argument");
    Args rest;
    rest.pos.assign(args.pos.begin() + 1, args.pos.end());
    rest.kw = args.kw;
    const auto iterated = iterate(v);
    for (const Val& item : *iterated) {
        ctx.tick();
        out.push_back(applyFilterByName(ctx, args.pos[0], item, rest));
    }
    return generator(std::move(out), "sync_do_map");
}

// select, reject, selectattr and rejectattr (jinja2's select_or_reject).
Val selectOrReject(Ctx& ctx, const Val& v, const Args& args, bool reject, bool byAttr)
{
    if (!truthy(v))
        return generator({}, "select_or_reject");
    size_t off = 0;
    if (byAttr) {
        if (args.pos.empty())
            failRender("Missing parameter for attribute name");
        off = 1;
    }
    const Val* test = args.pos.size() > off ? &args.pos[off] : nullptr;
    Args rest;
    if (test)
        rest.pos.assign(args.pos.begin() + static_cast<std::ptrdiff_t>(off) + 1, args.pos.end());
    rest.kw = args.kw;
    std::vector<Val> out;
    const auto iterated = iterate(v);
    for (const Val& item : *iterated) {
        ctx.tick();
        const Val x = byAttr ? getPath(item, args.pos[0]) : item;
        const bool ok = test ? applyTestByName(ctx, *test, x, rest) : truthy(x);
        if (ok != reject)
            out.push_back(item);
    }
    return generator(std::move(out), "select_or_reject");
}

Val fSelect(Ctx& ctx, const Val& v, const Args& args)
{
    return selectOrReject(ctx, v, args, false, false);
}

Val fReject(Ctx& ctx, const Val& v, const Args& args)
{
    return selectOrReject(ctx, v, args, true, false);
}

Val fSelectattr(Ctx& ctx, const Val& v, const Args& args)
{
    return selectOrReject(ctx, v, args, false, true);
}

Val fRejectattr(Ctx& ctx, const Val& v, const Args& args)
{
    return selectOrReject(ctx, v, args, true, true);
}

// make_multi_attrgetter: the sort key of an item, a list of one value per comma-separated path.
Val multiKey(const Val& item, const Val& attribute, bool caseSensitive)
{
    std::vector<Val> parts;
    if (attribute.isString()) {
        const std::string& s = attribute.str();
        size_t start = 0;
        while (true) {
            const size_t comma = s.find(',', start);
            const Val path(s.substr(start, comma == std::string::npos ? comma : comma - start));
            parts.push_back(sortKey(getPath(item, path), caseSensitive));
            if (comma == std::string::npos)
                break;
            start = comma + 1;
        }
    } else {
        parts.push_back(sortKey(getPath(item, attribute), caseSensitive));
    }
    return Val::list(std::move(parts));
}

Val fSort(Ctx& ctx, const Val& v, const Args& args)
{
    const Params p("sort", args, {"reverse", "case_sensitive", "attribute"});
    std::vector<Val> items = *iterate(v);
    ctx.tick(items.size());
    std::vector<Val> keys;
    for (const Val& item : items)
        keys.push_back(multiKey(item, p[2], truthy(p[1])));
    sortBy(items, keys, truthy(p[0]));
    return Val::list(std::move(items));
}

Val fUnique(Ctx& ctx, const Val& v, const Args& args)
{
    const Params p("unique", args, {"case_sensitive", "attribute"});
    std::vector<Val> seen;
    std::vector<Val> out;
    const auto iterated = iterate(v);
    for (const Val& item : *iterated) {
        const Val key = sortKey(getPath(item, p[1]), truthy(p[0]));
        requireHashable(key);
        ctx.tick(1 + seen.size() / 64);
        bool dup = false;
        for (const Val& s : seen)
            if (pyEquals(s, key)) {
                dup = true;
                break;
            }
        if (!dup) {
            seen.push_back(key);
            out.push_back(item);
        }
    }
    return generator(std::move(out), "sync_do_unique");
}

Val minOrMax(Ctx& ctx, const Val& v, const Args& args, bool max)
{
    const Params p(max ? "max" : "min", args, {"case_sensitive", "attribute"});
    const auto items = iterate(v);
    if (items->empty())
        return Val::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    Val bestKey = sortKey(getPath((*items)[0], p[1]), truthy(p[0]));
    for (size_t i = 1; i < items->size(); ++i) {
        ctx.tick();
        Val key = sortKey(getPath((*items)[i], p[1]), truthy(p[0]));
        if (max ? pyLess(bestKey, key) : pyLess(key, bestKey)) {
            best = i;
            bestKey = std::move(key);
        }
    }
    return (*items)[best];
}

Val fMin(Ctx& ctx, const Val& v, const Args& args)
{
    return minOrMax(ctx, v, args, false);
}

Val fMax(Ctx& ctx, const Val& v, const Args& args)
{
    return minOrMax(ctx, v, args, true);
}

Val fSum(Ctx& ctx, const Val& v, const Args& args)
{
    const Params p("sum", args, {"attribute", "start"});
    Val total = p.has(1) ? p[1] : Val(int64_t{0});
    if (total.isString())
        failRender("sum() can't sum strings [use ''.join(seq) instead]");
    const auto iterated = iterate(v);
    for (const Val& item : *iterated) {
        ctx.tick();
        total =
            binaryOp(BinOp::Add, total, p.has(0) && !p[0].isNone() ? getPath(item, p[0]) : item);
    }
    return total;
}

Val fReverse(Ctx&, const Val& v, const Args& args)
{
    Params p("reverse", args, {});
    if (v.isString()) {
        const auto offsets = codePointOffsets(v.str());
        std::string out;
        for (size_t i = offsets.size() - 1; i > 0; --i)
            out.append(v.str(), offsets[i - 1], offsets[i] - offsets[i - 1]);
        return Val(std::move(out), v.markup());
    }
    const bool once = v.isList() && (v.seq() == Seq::Generator || v.seq() == Seq::Iterator);
    if (!isIterable(v))
        failRender("argument must be iterable");
    std::vector<Val> items = *iterate(v);
    std::reverse(items.begin(), items.end());
    // reversed() of a sequence is an iterator; a generator is read into a list first
    return Val::list(std::move(items), once ? Seq::List : Seq::Iterator);
}

Val fSlice(Ctx&, const Val& v, const Args& args)
{
    const Params p("slice", args, {"slices", "fill_with"}, 1);
    const std::vector<Val> seq = *iterate(v);
    const int64_t slices = toIndex(p[0], "slices");
    if (slices <= 0)
        failRender("integer division or modulo by zero");
    if (slices > static_cast<int64_t>(kMaxListItems))
        failRender("slice: too many slices");
    const auto length = static_cast<int64_t>(seq.size());
    const int64_t perSlice = length / slices;
    const int64_t withExtra = length % slices;
    int64_t offset = 0;
    std::vector<Val> out;
    for (int64_t n = 0; n < slices; ++n) {
        const int64_t start = offset + n * perSlice;
        if (n < withExtra)
            ++offset;
        const int64_t end = offset + (n + 1) * perSlice;
        std::vector<Val> tmp(seq.begin() + start, seq.begin() + end);
        if (p.has(1) && !p[1].isNone() && n >= withExtra)
            tmp.push_back(p[1]);
        out.push_back(Val::list(std::move(tmp)));
    }
    return generator(std::move(out), "sync_do_slice");
}

Val fBatch(Ctx&, const Val& v, const Args& args)
{
    const Params p("batch", args, {"linecount", "fill_with"}, 1);
    const int64_t n = toIndex(p[0], "linecount");
    if (n <= 0)
        failRender("batch: linecount must be positive");
    std::vector<Val> batches;
    std::vector<Val> tmp;
    const auto iterated = iterate(v);
    for (const Val& item : *iterated) {
        if (static_cast<int64_t>(tmp.size()) == n)
            batches.push_back(Val::list(std::exchange(tmp, {})));
        tmp.push_back(item);
    }
    if (!tmp.empty()) {
        if (p.has(1) && !p[1].isNone())
            while (static_cast<int64_t>(tmp.size()) < n)
                tmp.push_back(p[1]);
        batches.push_back(Val::list(std::move(tmp)));
    }
    return generator(std::move(batches), "do_batch");
}

// Python's round(x, n) for floats: correctly rounded, ties to even on the exact binary value
// (glibc's printf rounds the same way).
double roundFloat(double x, int64_t digits)
{
    if (!std::isfinite(x) || digits > 308)
        return x;
    if (digits < 0) {
        const double scale = std::pow(10.0, static_cast<double>(-digits));
        return std::nearbyint(x / scale) * scale;
    }
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(digits), x);
    return std::strtod(buf, nullptr);
}

Val fRound(Ctx&, const Val& v, const Args& args)
{
    const Params p("round", args, {"precision", "method"});
    const int64_t precision = p.has(0) ? toIndex(p[0], "precision") : 0;
    const std::string method = p.has(1) ? requireStr(p[1], "round", "method") : "common";
    if (method != "common" && method != "ceil" && method != "floor")
        failRender("method must be common, ceil or floor");
    if (v.isUndefined())
        failRender("type Undefined doesn't define __round__ method");
    if (!v.isNumber())
        failRender("type ", typeName(v), " doesn't define __round__ method");
    if (method == "common") {
        if (v.isIntLike() && precision >= 0)
            return Val(v.integer());
        if (v.isIntLike())
            return Val(
                static_cast<int64_t>(roundFloat(static_cast<double>(v.integer()), precision)));
        return Val(roundFloat(v.number(), precision));
    }
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double scaled = v.number() * scale;
    return Val((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

}  // namespace

void addSequenceFilters(std::vector<FilterDef>& table)
{
    table.insert(table.end(), {{"batch", fBatch},
                               {"list", fList},
                               {"map", fMap},
                               {"max", fMax},
                               {"min", fMin},
                               {"reject", fReject},
                               {"rejectattr", fRejectattr},
                               {"reverse", fReverse},
                               {"round", fRound},
                               {"select", fSelect},
                               {"selectattr", fSelectattr},
                               {"slice", fSlice},
                               {"sort", fSort},
                               {"sum", fSum},
                               {"unique", fUnique}});
}

}  // namespace tb::jinja::detail
