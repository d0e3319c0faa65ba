// jinja2's sandboxed lookups: obj.name (attribute first, then item), obj[key] (item first, then
// attribute), slices over code points and items, attribute paths, and the loop's attributes.
#include "tokenizer/jinja_builtins.h"

#include "tokenizer/jinja_text.h"

#include <climits>

namespace tb::jinja::detail {

namespace {

Val noAttribute(const Val& obj, const std::string& name)
{
    return Val::undefined(pyStrRepr(objectTypeRepr(obj)) + " has no attribute " + pyStrRepr(name));
}

Val noElement(const Val& obj, const Val& key)
{
    return Val::undefined(objectTypeRepr(obj) + " has no element " + toRepr(key));
}

Val unsafeAttribute(const Val& obj, const std::string& name)
{
    return Val::undefined("access to attribute " + pyStrRepr(name) + " of " +
                              pyStrRepr(typeName(obj)) + " object is unsafe.",
                          true);
}

Val loopAttr(const Val& loopVal, const std::string& name)
{
    const auto& loop = static_cast<const LoopObj&>(loopVal.object());
    const auto length = static_cast<int64_t>(loop.items->size());
    const auto index0 = static_cast<int64_t>(loop.index0);
    if (name == "index")
        return Val(index0 + 1);
    if (name == "index0")
        return Val(index0);
    if (name == "revindex")
        return Val(length - index0);
    if (name == "revindex0")
        return Val(length - index0 - 1);
    if (name == "first")
        return Val(index0 == 0);
    if (name == "last")
        return Val(index0 + 1 == length);
    if (name == "length")
        return Val(length);
    if (name == "depth")
        return Val(int64_t{1});
    if (name == "depth0")
        return Val(int64_t{0});
    if (name == "previtem")
        return index0 == 0 ? Val::undefined("there is no previous item")
                           : (*loop.items)[loop.index0 - 1];
    if (name == "nextitem")
        return index0 + 1 >= length ? Val::undefined("there is no next item")
                                    : (*loop.items)[loop.index0 + 1];
    if (name == "cycle" || name == "changed")
        return Val::object(std::make_shared<MethodObj>(loopVal, name));
    return noAttribute(loopVal, name);
}

// getattr(obj, name) as the sandbox does it, without the item fallback; nullopt-like: sets
// *found to false when obj has no such attribute.
Val attributeOf(const Val& obj, const std::string& name, bool* found)
{
    *found = true;
    if (name.size() > 1 && name[0] == '_' && name[1] == '_')
        return unsafeAttribute(obj, name);
    bool unsafe = false;
    if (hasMethod(obj, name, &unsafe))
        return unsafe ? unsafeAttribute(obj, name)
                      : Val::object(std::make_shared<MethodObj>(obj, name));
    if (obj.isNumber()) {  // the number attributes a format field may name
        if (name == "real")
            return obj.isIntLike() ? Val(obj.integer()) : obj;
        if (name == "imag")
            return obj.isIntLike() ? Val(int64_t{0}) : Val(0.0);
        if (obj.isIntLike() && name == "numerator")
            return Val(obj.integer());
        if (obj.isIntLike() && name == "denominator")
            return Val(int64_t{1});
    }
    if (obj.isObject()) {
        if (obj.object().kind == ObjKind::Loop)
            return loopAttr(obj, name);
        if (obj.object().kind == ObjKind::Namespace) {
            if (const Val* v = static_cast<const Namespace&>(obj.object()).attrs.find(name))
                return *v;
        }
    }
    *found = false;
    return {};
}

int64_t clampSliceIndex(int64_t i, int64_t length, int64_t step)
{
    if (i < 0) {
        i += length;
        if (i < 0)
            i = step < 0 ? -1 : 0;
    } else if (i >= length) {
        i = step < 0 ? length - 1 : length;
    }
    return i;
}

}  // namespace

Val getAttr(const Val& obj, const std::string& name)
{
    if (obj.isUndefined())
        obj.raiseUndefined();
    bool found = false;
    Val v = attributeOf(obj, name, &found);
    if (found)
        return v;
    if (obj.isDict()) {
        if (const Val* item = obj.dict().find(name))
            return *item;
    }
    return noAttribute(obj, name);
}

Val getAttrOnly(const Val& obj, const std::string& name)
{
    if (obj.isUndefined())
        obj.raiseUndefined();
    bool found = false;
    Val v = attributeOf(obj, name, &found);
    return found ? v : noAttribute(obj, name);
}

Val getItem(const Val& obj, const Val& key)
{
    if (obj.isUndefined())
        obj.raiseUndefined();
    if (obj.isDict()) {
        const bool hashable = !(key.isDict() || (key.isList() && key.seq() != Seq::Tuple));
        if (hashable)
            if (const Val* item = obj.dict().find(key))
                return *item;
    } else if ((obj.isSequence() || obj.isString()) && key.isIntLike()) {
        const bool isStr = obj.isString();
        std::vector<size_t> offsets;
        if (isStr)
            offsets = codePointOffsets(obj.str());
        const auto length = static_cast<int64_t>(isStr ? offsets.size() - 1 : obj.items().size());
        int64_t i = key.integer();
        if (i < 0)
            i += length;
        if (i >= 0 && i < length) {
            const auto u = static_cast<size_t>(i);
            if (isStr)
                return Val(obj.str().substr(offsets[u], offsets[u + 1] - offsets[u]));
            return obj.items()[u];
        }
    }
    if (key.isString()) {
        bool found = false;
        Val v = attributeOf(obj, key.str(), &found);
        if (found)
            return v;
        return noAttribute(obj, key.str());
    }
    return noElement(obj, key);
}

// jinja2 compiles obj[a:b:c] to a plain Python subscript: no undefined fallback here.
Val sliceOf(const Val& obj, const Val& start, const Val& stop, const Val& step)
{
    if (obj.isUndefined())
        obj.raiseUndefined();
    if (obj.isDict())
        failRender("unhashable type: 'slice'");
    if (!obj.isString() && !obj.isSequence())
        failRender("'", typeName(obj), "' object is not subscriptable");
    for (const Val* b : {&start, &stop, &step}) {
        if (b->isUndefined())
            b->raiseUndefined();
        if (!b->isNone() && !b->isIntLike())
            failRender("slice indices must be integers or None or have an __index__ method");
    }
    const int64_t by = step.isNone() ? 1 : step.integer();
    if (by == 0)
        failRender("slice step cannot be zero");
    std::vector<size_t> offsets;
    if (obj.isString())
        offsets = codePointOffsets(obj.str());
    const auto length =
        static_cast<int64_t>(obj.isString() ? offsets.size() - 1 : obj.items().size());
    int64_t from = start.isNone() ? (by < 0 ? INT64_MAX : 0) : start.integer();
    int64_t to = stop.isNone() ? (by < 0 ? INT64_MIN : INT64_MAX) : stop.integer();
    from = clampSliceIndex(from, length, by);
    to = clampSliceIndex(to, length, by);
    if (obj.isString() && by == 1) {
        if (to <= from)
            return Val(std::string(), obj.markup());
        const auto a = static_cast<size_t>(from);
        const auto b = static_cast<size_t>(to);
        return Val(obj.str().substr(offsets[a], offsets[b] - offsets[a]), obj.markup());
    }
    std::string text;
    std::vector<Val> items;
    for (int64_t i = from; by > 0 ? i < to : i > to; i += by) {
        const auto u = static_cast<size_t>(i);
        if (obj.isString())
            text.append(obj.str(), offsets[u], offsets[u + 1] - offsets[u]);
        else
            items.push_back(obj.items()[u]);
        if ((by > 0 && i > INT64_MAX - by) || (by < 0 && i < INT64_MIN - by))
            break;
    }
    if (obj.isString())
        return Val(std::move(text), obj.markup());
    return Val::list(std::move(items), obj.seq());
}

Val getPath(const Val& obj, const Val& path)
{
    if (path.isNone() || path.isUndefined())
        return obj;
    if (!path.isString())
        return getItem(obj, path);
    Val v = obj;
    const std::string& s = path.str();
    size_t start = 0;
    while (true) {
        const size_t dot = s.find('.', start);
        const std::string part = s.substr(start, dot == std::string::npos ? dot : dot - start);
        const bool digits =
            !part.empty() && pyIsClass(part, 'd') && isAscii(part) && part.size() < 19;
        v = getItem(v, digits ? Val(static_cast<int64_t>(std::stoll(part))) : Val(part));
        if (dot == std::string::npos)
            return v;
        start = dot + 1;
    }
}

}  // namespace tb::jinja::detail
