// Python semantics of the interpreter's values: truth, str() and repr(), ==, <, len(), iter(),
// hashing rules for dict keys, and the conversion of the render context from JSON.
#include "tokenizer/jinja_value.h"

#include "tokenizer/jinja_text.h"

#include <cmath>

namespace tb::jinja::detail {

namespace {

constexpr int kMaxReprDepth = 200;
constexpr int kMaxJsonDepth = 512;

}  // namespace

Val Val::undefined(std::string hint, bool unsafe)
{
    Val v;
    v.m_s = std::move(hint);
    v.m_flag = unsafe;
    return v;
}

Val Val::none()
{
    Val v;
    v.m_kind = Kind::None;
    return v;
}

Val::Val(bool b) : m_kind(Kind::Bool), m_b(b) {}
Val::Val(int64_t i) : m_kind(Kind::Int), m_i(i) {}
Val::Val(double f) : m_kind(Kind::Float), m_f(f) {}
Val::Val(std::string s, bool markup) : m_kind(Kind::String), m_flag(markup), m_s(std::move(s)) {}

Val Val::list(std::vector<Val> items, Seq seq, const char* producer)
{
    Val v;
    v.m_kind = Kind::List;
    v.m_seq = seq;
    auto data = std::make_shared<ListData>();
    data->items = std::move(items);
    data->producer = producer;
    v.m_ptr = std::move(data);
    return v;
}

Val Val::dict(std::shared_ptr<Dict> dict)
{
    Val v;
    v.m_kind = Kind::Dict;
    v.m_ptr = std::move(dict);
    return v;
}

Val Val::object(std::shared_ptr<Object> object)
{
    Val v;
    v.m_kind = Kind::Object;
    v.m_ptr = std::move(object);
    return v;
}

bool Val::isNumber() const
{
    return m_kind == Kind::Bool || m_kind == Kind::Int || m_kind == Kind::Float;
}

bool Val::isSequence() const
{
    return m_kind == Kind::List && (m_seq == Seq::List || m_seq == Seq::Tuple);
}

double Val::number() const
{
    switch (m_kind) {
    case Kind::Bool:
        return m_b ? 1.0 : 0.0;
    case Kind::Int:
        return static_cast<double>(m_i);
    default:
        return m_f;
    }
}

void Val::raiseUndefined() const
{
    throw Fail{m_s};
}

const Val* Dict::find(const std::string& key) const
{
    const auto it = m_index.find(key);
    return it == m_index.end() ? nullptr : &m_items[it->second].second;
}

const Val* Dict::find(const Val& key) const
{
    if (key.isString())
        return find(key.str());
    for (const auto& [k, v] : m_items)
        if (!k.isString() && pyEquals(k, key))
            return &v;
    return nullptr;
}

void Dict::set(const Val& key, Val value)
{
    requireHashable(key);
    if (key.isString()) {
        const auto [it, added] = m_index.emplace(key.str(), m_items.size());
        if (!added) {
            m_items[it->second].second = std::move(value);
            return;
        }
    } else {
        for (auto& [k, v] : m_items)
            if (!k.isString() && pyEquals(k, key)) {
                v = std::move(value);
                return;
            }
    }
    m_items.emplace_back(key, std::move(value));
}

void Dict::clear()
{
    m_items.clear();
    m_index.clear();
}

void Namespace::repr(std::string& out, int depth) const
{
    out += "<Namespace ";
    appendRepr(out, Val::dict(std::make_shared<Dict>(attrs)), depth + 1);
    out += ">";
}

void LoopObj::repr(std::string& out, int) const
{
    out += tb::cat("<LoopContext ", index0 + 1, "/", items->size(), ">");
}

void MethodObj::repr(std::string& out, int) const
{
    out += tb::cat("<built-in method ", name, " of ", objectTypeRepr(self), ">");
}

void FunctionObj::repr(std::string& out, int) const
{
    static const char* const names[] = {"safe_range",      "TemplateNamespace",   "TemplateDict",
                                        "raise_exception", "strftime_now",        "Cycler",
                                        "Joiner",          "generate_lorem_ipsum"};
    out += tb::cat("<function ", names[static_cast<int>(which)], ">");
}

const char* typeName(const Val& v)
{
    switch (v.kind()) {
    case Kind::Undefined:
        return "Undefined";
    case Kind::None:
        return "NoneType";
    case Kind::Bool:
        return "bool";
    case Kind::Int:
        return "int";
    case Kind::Float:
        return "float";
    case Kind::String:
        return v.markup() ? "Markup" : "str";
    case Kind::Dict:
        return "dict";
    case Kind::List:
        switch (v.seq()) {
        case Seq::List:
            return "list";
        case Seq::Tuple:
            return "tuple";
        case Seq::Items:
            return "dict_items";
        case Seq::Keys:
            return "dict_keys";
        case Seq::Values:
            return "dict_values";
        case Seq::Generator:
            return "generator";
        case Seq::Iterator:
            return "list_reverseiterator";
        }
        return "list";
    case Kind::Object:
        switch (v.object().kind) {
        case ObjKind::Namespace:
            return "TemplateNamespace";
        case ObjKind::Macro:
            return "Macro";
        case ObjKind::Loop:
            return "LoopContext";
        case ObjKind::Method:
            return "builtin_function_or_method";
        case ObjKind::Function:
            return "function";
        }
    }
    return "object";
}

std::string objectTypeRepr(const Val& v)
{
    switch (v.kind()) {
    case Kind::None:
        return "None";
    case Kind::Undefined:
        return "jinja2.runtime.Undefined object";
    case Kind::String:
        return v.markup() ? "markupsafe.Markup object" : "str object";
    case Kind::Object:
        switch (v.object().kind) {
        case ObjKind::Namespace:
            return "transformers.utils.chat_template_utils.TemplateNamespace object";
        case ObjKind::Macro:
            return "jinja2.runtime.Macro object";
        case ObjKind::Loop:
            return "jinja2.runtime.LoopContext object";
        default:
            break;
        }
        break;
    default:
        break;
    }
    return std::string(typeName(v)) + " object";
}

bool truthy(const Val& v)
{
    switch (v.kind()) {
    case Kind::Undefined:
    case Kind::None:
        return false;
    case Kind::Bool:
        return v.boolean();
    case Kind::Int:
        return v.integer() != 0;
    case Kind::Float:
        return v.number() != 0.0;
    case Kind::String:
        return !v.str().empty();
    case Kind::Dict:
        return v.dict().size() != 0;
    case Kind::List:
        if (v.seq() == Seq::Generator || v.seq() == Seq::Iterator)
            return true;
        return !v.items().empty();
    case Kind::Object:
        if (v.object().kind == ObjKind::Loop)
            return !static_cast<const LoopObj&>(v.object()).items->empty();
        return true;
    }
    return true;
}

namespace {

void appendItems(std::string& out, const std::vector<Val>& items, int depth)
{
    for (size_t i = 0; i < items.size(); ++i) {
        if (i)
            out += ", ";
        appendRepr(out, items[i], depth + 1);
    }
}

void appendListRepr(std::string& out, const Val& v, int depth)
{
    const auto& items = v.items();
    switch (v.seq()) {
    case Seq::List:
        out += '[';
        appendItems(out, items, depth);
        out += ']';
        return;
    case Seq::Tuple:
        out += '(';
        appendItems(out, items, depth);
        out += items.size() == 1 ? ",)" : ")";
        return;
    case Seq::Items:
    case Seq::Keys:
    case Seq::Values:
        out += typeName(v);
        out += "([";
        appendItems(out, items, depth);
        out += "])";
        return;
    case Seq::Generator:
        out += tb::cat("<generator object ", v.listData().producer, ">");
        return;
    case Seq::Iterator:
        out += "<list_reverseiterator object>";
        return;
    }
}

}  // namespace

void appendRepr(std::string& out, const Val& v, int depth)
{
    if (depth > kMaxReprDepth)
        failRender("value nested too deeply to print");
    switch (v.kind()) {
    case Kind::Undefined:
        out += "Undefined";
        return;
    case Kind::None:
        out += "None";
        return;
    case Kind::Bool:
        out += v.boolean() ? "True" : "False";
        return;
    case Kind::Int:
        out += std::to_string(v.integer());
        return;
    case Kind::Float:
        out += pyFloatRepr(v.number());
        return;
    case Kind::String:
        if (v.markup())
            out += "Markup(" + pyStrRepr(v.str()) + ")";
        else
            out += pyStrRepr(v.str());
        return;
    case Kind::List:
        appendListRepr(out, v, depth);
        return;
    case Kind::Dict: {
        out += '{';
        bool first = true;
        for (const auto& [key, value] : v.dict().items()) {
            if (!first)
                out += ", ";
            first = false;
            appendRepr(out, key, depth + 1);
            out += ": ";
            appendRepr(out, value, depth + 1);
        }
        out += '}';
        return;
    }
    case Kind::Object:
        v.object().repr(out, depth);
        return;
    }
}

std::string toRepr(const Val& v)
{
    std::string out;
    appendRepr(out, v, 0);
    return out;
}

std::string toStr(const Val& v)
{
    switch (v.kind()) {
    case Kind::Undefined:
        return "";
    case Kind::String:
        return v.str();
    default:
        return toRepr(v);
    }
}

namespace {

bool numbersEqual(const Val& a, const Val& b)
{
    if (a.isIntLike() && b.isIntLike())
        return a.integer() == b.integer();
    const Val& f = a.kind() == Kind::Float ? a : b;
    const Val& o = a.kind() == Kind::Float ? b : a;
    if (o.kind() == Kind::Float)
        return a.number() == b.number();
    // float vs int: exact, as Python compares them
    const double x = f.number();
    if (!std::isfinite(x) || x != std::floor(x) || std::fabs(x) >= 9223372036854775808.0)
        return false;
    return static_cast<int64_t>(x) == o.integer();
}

bool listsEqual(const std::vector<Val>& a, const std::vector<Val>& b)
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!pyEquals(a[i], b[i]))
            return false;
    return true;
}

}  // namespace

bool pyEquals(const Val& a, const Val& b)
{
    if (a.isNumber() && b.isNumber())
        return numbersEqual(a, b);
    if (a.kind() != b.kind())
        return false;
    switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None:
        return true;
    case Kind::String:
        return a.str() == b.str();
    case Kind::List:
        if (a.seq() != b.seq())
            return false;
        if (a.seq() == Seq::Generator || a.seq() == Seq::Iterator || a.seq() == Seq::Values)
            return a.identity() == b.identity();
        return listsEqual(a.items(), b.items());
    case Kind::Dict: {
        if (a.dict().size() != b.dict().size())
            return false;
        for (const auto& [key, value] : a.dict().items()) {
            const Val* other = b.dict().find(key);
            if (!other || !pyEquals(value, *other))
                return false;
        }
        return true;
    }
    case Kind::Object:
        return a.identity() == b.identity();
    default:
        return false;
    }
}

bool pyLess(const Val& a, const Val& b)
{
    if (a.isUndefined())
        a.raiseUndefined();
    if (b.isUndefined())
        b.raiseUndefined();
    if (a.isNumber() && b.isNumber()) {
        if (a.isIntLike() && b.isIntLike())
            return a.integer() < b.integer();
        return a.number() < b.number();
    }
    if (a.isString() && b.isString())
        return a.str() < b.str();  // UTF-8 byte order is code point order
    if (a.isSequence() && b.isSequence() && a.seq() == b.seq()) {
        const auto& x = a.items();
        const auto& y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!pyEquals(x[i], y[i]))
                return pyLess(x[i], y[i]);
        return x.size() < y.size();
    }
    failRender("'<' not supported between instances of '", typeName(a), "' and '", typeName(b),
               "'");
}

void requireHashable(const Val& v)
{
    if (v.kind() == Kind::Dict || (v.isList() && v.seq() != Seq::Tuple &&
                                   v.seq() != Seq::Generator && v.seq() != Seq::Iterator))
        failRender("unhashable type: '", typeName(v), "'");
    if (v.isList() && v.seq() == Seq::Tuple)
        for (const Val& item : v.items())
            requireHashable(item);
}

size_t pyLen(const Val& v)
{
    switch (v.kind()) {
    case Kind::Undefined:
        return 0;
    case Kind::String:
        return codePointCount(v.str());
    case Kind::Dict:
        return v.dict().size();
    case Kind::List:
        if (v.seq() != Seq::Generator && v.seq() != Seq::Iterator)
            return v.items().size();
        break;
    case Kind::Object:
        if (v.object().kind == ObjKind::Loop)
            return static_cast<const LoopObj&>(v.object()).items->size();
        break;
    default:
        break;
    }
    failRender("object of type '", typeName(v), "' has no len()");
}

bool isIterable(const Val& v)
{
    return v.kind() == Kind::Undefined || v.kind() == Kind::String || v.kind() == Kind::List ||
           v.kind() == Kind::Dict || (v.kind() == Kind::Object && v.object().kind == ObjKind::Loop);
}

std::shared_ptr<const std::vector<Val>> iterate(const Val& v)
{
    switch (v.kind()) {
    case Kind::Undefined:
        return std::make_shared<std::vector<Val>>();
    case Kind::String: {
        auto chars = std::make_shared<std::vector<Val>>();
        const std::string& s = v.str();
        for (size_t i = 0, len = 0; i < s.size(); i += len) {
            decodeUtf8(s, i, &len);
            chars->emplace_back(s.substr(i, len));
        }
        return chars;
    }
    case Kind::Dict: {
        auto keys = std::make_shared<std::vector<Val>>();
        keys->reserve(v.dict().size());
        for (const auto& item : v.dict().items())
            keys->push_back(item.first);
        return keys;
    }
    case Kind::List: {
        const auto data = v.listPtr();
        if (v.seq() != Seq::Generator && v.seq() != Seq::Iterator)
            return std::shared_ptr<const std::vector<Val>>(data, &data->items);
        auto rest = std::make_shared<std::vector<Val>>(
            data->items.begin() + static_cast<std::ptrdiff_t>(data->consumed), data->items.end());
        data->consumed = data->items.size();
        return rest;
    }
    case Kind::Object:
        if (v.object().kind == ObjKind::Loop)
            return static_cast<const LoopObj&>(v.object()).items;
        break;
    default:
        break;
    }
    failRender("'", typeName(v), "' object is not iterable");
}

namespace {

Val fromJsonAt(const Value& json, int depth)
{
    if (depth > kMaxJsonDepth)
        failRender("the context is nested more than ", kMaxJsonDepth, " levels deep");
    switch (json.type()) {
    case Value::value_t::null:
        return Val::none();
    case Value::value_t::boolean:
        return Val(json.get<bool>());
    case Value::value_t::number_integer:
        return Val(json.get<int64_t>());
    case Value::value_t::number_unsigned: {
        const auto u = json.get<uint64_t>();
        if (u <= static_cast<uint64_t>(INT64_MAX))
            return Val(static_cast<int64_t>(u));
        return Val(static_cast<double>(u));
    }
    case Value::value_t::number_float:
        return Val(json.get<double>());
    case Value::value_t::string:
        return Val(json.get<std::string>());
    case Value::value_t::array: {
        std::vector<Val> items;
        items.reserve(json.size());
        for (const auto& item : json)
            items.push_back(fromJsonAt(item, depth + 1));
        return Val::list(std::move(items));
    }
    case Value::value_t::object: {
        auto dict = std::make_shared<Dict>();
        for (const auto& [key, value] : json.items())
            dict->set(key, fromJsonAt(value, depth + 1));
        return Val::dict(std::move(dict));
    }
    default:
        failRender("the context holds a value JSON cannot hold (binary)");
    }
}

}  // namespace

Val fromJson(const Value& json)
{
    return fromJsonAt(json, 0);
}

}  // namespace tb::jinja::detail
