// The values a Jinja template computes with, as Python sees them: undefined, None, bool, int,
// float, str (with markupsafe's Markup flag), list and its kin (tuple, dict views, generators),
// dict, and objects (namespaces, macros, the loop, bound methods, global functions).
#pragma once

#include "tokenizer/jinja.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tb::jinja::detail {

// An error while rendering, before the evaluator adds the template's name and the position.
struct Fail {
    std::string message;
};

template <typename... Parts> [[noreturn]] void failRender(Parts&&... parts)
{
    throw Fail{tb::cat(std::forward<Parts>(parts)...)};
}

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Object };

// The Python type behind a Kind::List value. Lists and tuples are sequences; dict views iterate
// again and again but cannot be indexed; generators and iterators are used up by one pass, are
// always true and have no length.
enum class Seq : uint8_t { List, Tuple, Items, Keys, Values, Generator, Iterator };

class Dict;
struct Object;

struct ListData {
    std::vector<class Val> items;
    size_t consumed = 0;        // generators: items already taken
    const char* producer = "";  // generators: the Python function that made it (for repr)
};

class Val {
public:
    Val() = default;  // undefined
    static Val undefined(std::string hint, bool unsafe = false);
    static Val none();
    Val(bool b);
    Val(int64_t i);
    Val(int i) : Val(static_cast<int64_t>(i)) {}
    Val(double f);
    Val(std::string s, bool markup = false);
    Val(const char* s) : Val(std::string(s)) {}
    static Val list(std::vector<Val> items, Seq seq = Seq::List, const char* producer = "");
    static Val dict(std::shared_ptr<Dict> dict);
    static Val object(std::shared_ptr<Object> object);

    Kind kind() const { return m_kind; }
    Seq seq() const { return m_seq; }
    bool isUndefined() const { return m_kind == Kind::Undefined; }
    bool isNone() const { return m_kind == Kind::None; }
    bool isString() const { return m_kind == Kind::String; }
    bool isInt() const { return m_kind == Kind::Int; }
    bool isBool() const { return m_kind == Kind::Bool; }
    // bool, int or float
    bool isNumber() const;
    // bool or int (Python's bool is an int)
    bool isIntLike() const { return m_kind == Kind::Int || m_kind == Kind::Bool; }
    bool isList() const { return m_kind == Kind::List; }
    bool isSequence() const;  // list or tuple (indexable)
    bool isDict() const { return m_kind == Kind::Dict; }
    bool isObject() const { return m_kind == Kind::Object; }

    bool boolean() const { return m_b; }
    int64_t integer() const { return m_kind == Kind::Bool ? (m_b ? 1 : 0) : m_i; }
    double number() const;  // bool, int or float as a double
    const std::string& str() const { return m_s; }
    bool markup() const { return m_flag && m_kind == Kind::String; }
    // Undefined: the message an operation on it raises; whether it stands for a blocked attribute.
    const std::string& hint() const { return m_s; }
    bool unsafe() const { return m_flag && m_kind == Kind::Undefined; }
    ListData& listData() const { return *static_cast<ListData*>(m_ptr.get()); }
    const std::vector<Val>& items() const { return listData().items; }
    const Dict& dict() const { return *static_cast<const Dict*>(m_ptr.get()); }
    Object& object() const { return *static_cast<Object*>(m_ptr.get()); }
    const void* identity() const { return m_ptr.get(); }
    std::shared_ptr<Object> objectPtr() const { return std::static_pointer_cast<Object>(m_ptr); }
    std::shared_ptr<ListData> listPtr() const { return std::static_pointer_cast<ListData>(m_ptr); }

    // Throws the UndefinedError (or SecurityError) this undefined value stands for.
    [[noreturn]] void raiseUndefined() const;

private:
    Kind m_kind = Kind::Undefined;
    Seq m_seq = Seq::List;
    bool m_flag = false;
    bool m_b = false;
    int64_t m_i = 0;
    double m_f = 0;
    std::string m_s;
    std::shared_ptr<void> m_ptr;
};

// A Python dict: items in insertion order; string keys are indexed, other keys (ints, None,
// tuples) are searched with Python's ==.
class Dict {
public:
    const Val* find(const Val& key) const;
    const Val* find(const std::string& key) const;
    // Replaces the value of an existing key in place, appends otherwise. Throws Fail for an
    // unhashable key.
    void set(const Val& key, Val value);
    void set(const std::string& key, Val value) { set(Val(key), std::move(value)); }
    size_t size() const { return m_items.size(); }
    const std::vector<std::pair<Val, Val>>& items() const { return m_items; }
    void clear();

private:
    std::vector<std::pair<Val, Val>> m_items;
    std::unordered_map<std::string, size_t> m_index;
};

enum class ObjKind : uint8_t { Namespace, Macro, Loop, Method, Function };

struct Object {
    explicit Object(ObjKind k) : kind(k) {}
    virtual ~Object() = default;
    // Python's repr of the object.
    virtual void repr(std::string& out, int depth) const = 0;
    ObjKind kind;
};

struct Namespace : Object {
    Namespace() : Object(ObjKind::Namespace) {}
    void repr(std::string& out, int depth) const override;
    Dict attrs;
};

// `loop` inside a for loop: items is the whole (filtered) sequence.
struct LoopObj : Object {
    LoopObj() : Object(ObjKind::Loop) {}
    void repr(std::string& out, int depth) const override;
    std::shared_ptr<const std::vector<Val>> items;
    size_t index0 = 0;
    Val lastChanged;
    bool changedOnce = false;
};

// A method looked up on a value (`message.content.strip`), not yet called.
struct MethodObj : Object {
    MethodObj(Val s, std::string n) : Object(ObjKind::Method), self(std::move(s)), name(n) {}
    void repr(std::string& out, int depth) const override;
    Val self;
    std::string name;
};

enum class Global : uint8_t {
    Range,
    Namespace,
    Dict,
    RaiseException,
    StrftimeNow,
    Cycler,
    Joiner,
    Lipsum
};

struct FunctionObj : Object {
    explicit FunctionObj(Global g) : Object(ObjKind::Function), which(g) {}
    void repr(std::string& out, int depth) const override;
    Global which;
};

// Python's type name of a value ("str", "dict", "NoneType"), as TypeError messages give it.
const char* typeName(const Val& v);
// jinja2's object_type_repr: "dict object", "None".
std::string objectTypeRepr(const Val& v);

bool truthy(const Val& v);
// Python str(v) and repr(v).
std::string toStr(const Val& v);
std::string toRepr(const Val& v);
void appendRepr(std::string& out, const Val& v, int depth);

bool pyEquals(const Val& a, const Val& b);
// Python a < b; throws Fail for types that do not order.
bool pyLess(const Val& a, const Val& b);
// Throws Fail "unhashable type: 'list'" for values that cannot be dict keys.
void requireHashable(const Val& v);

// Python len(v); throws Fail for values without one (generators, numbers).
size_t pyLen(const Val& v);
// Python iter(v) drained: the items of a list, the keys of a dict, the characters of a string,
// nothing for undefined. Uses up a generator. Throws Fail for values that do not iterate.
std::shared_ptr<const std::vector<Val>> iterate(const Val& v);
bool isIterable(const Val& v);

Val fromJson(const Value& json);

}  // namespace tb::jinja::detail
