// What the interpreter provides besides syntax: Python's operators, jinja2's sandboxed attribute
// and item lookup, the filters, tests and global functions of transformers' environment, and the
// methods of str, dict and list.
#pragma once

#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_value.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tb::jinja::detail {

// Hard limits that keep a hostile template from exhausting the machine.
inline constexpr size_t kMaxStringBytes = size_t{64} << 20;  // any one string, and the output
inline constexpr size_t kMaxListItems = size_t{1} << 22;
inline constexpr uint64_t kMaxSteps = 10'000'000;  // loop iterations, calls, items filtered
inline constexpr int64_t kMaxRange = 100000;       // jinja2's sandbox MAX_RANGE

// raise_exception(message): carried to Template::render, which throws RaisedError.
struct Raised {
    std::string message;
};

struct Args {
    std::vector<Val> pos;
    std::vector<std::pair<std::string, Val>> kw;
};

// The render-wide state builtins need.
struct Ctx {
    const Options& options;
    uint64_t steps = 0;
    void tick(uint64_t n = 1);
};

// Python's binding of call arguments to named parameters.
class Params {
public:
    // The first `required` of `names` must be given; throws Fail like Python's TypeError.
    Params(const char* function, const Args& args, std::initializer_list<const char*> names,
           size_t required = 0);
    bool has(size_t i) const { return m_bound[i] != nullptr; }
    // The argument, or undefined when it was not given.
    const Val& operator[](size_t i) const;
    const char* function() const { return m_function; }

private:
    const char* m_function;
    std::vector<const Val*> m_bound;
};

// Checks a string or list about to be built stays under the limits.
void checkSize(size_t bytes);
int64_t toIndex(const Val& v, const char* what);
std::string requireStr(const Val& v, const char* function, const char* param);

// Operators (jinja_ops.cpp).
Val binaryOp(BinOp op, const Val& a, const Val& b);
Val negate(const Val& v);
Val plus(const Val& v);
bool compareOp(CmpOp op, const Val& a, const Val& b);
bool contains(const Val& container, const Val& item);  // Python `item in container`
Val getAttr(const Val& obj, const std::string& name);
// getattr without the item fallback (the attr filter).
Val getAttrOnly(const Val& obj, const std::string& name);
Val getItem(const Val& obj, const Val& key);
// obj[start:stop:step]; undefined arguments count as None.
Val sliceOf(const Val& obj, const Val& start, const Val& stop, const Val& step);
// jinja2's make_attrgetter: "a.b.0" looked up part by part with getItem.
Val getPath(const Val& obj, const Val& path);

using FilterFn = Val (*)(Ctx& ctx, const Val& input, const Args& args);
struct FilterDef {
    const char* name;
    FilterFn fn;
};
// The filters of each file, collected by filterId.
void addTextFilters(std::vector<FilterDef>& table);
void addSequenceFilters(std::vector<FilterDef>& table);

// jinja2's ignore_case: strings compare lowercased unless case_sensitive.
Val sortKey(const Val& v, bool caseSensitive);
// Python's sorted() by precomputed keys: stable, also with reverse.
void sortBy(std::vector<Val>& items, const std::vector<Val>& keys, bool reverse);

// Filters and tests by name: the id, or -1 when transformers' environment has no such one.
// `known` says whether jinja2 has it at all (so a miss is "unsupported", not "no such filter").
int filterId(std::string_view name, bool* known);
int testId(std::string_view name, bool* known);
Val applyFilter(Ctx& ctx, int id, const Val& input, const Args& args);
bool applyTest(Ctx& ctx, int id, const Val& input, const Args& args);
Val applyFilterByName(Ctx& ctx, const Val& name, const Val& input, const Args& args);
bool applyTestByName(Ctx& ctx, const Val& name, const Val& input, const Args& args);

// Methods of str, dict, list and the loop (jinja_methods.cpp).
bool hasMethod(const Val& self, const std::string& name, bool* unsafe);
Val callMethod(Ctx& ctx, const MethodObj& method, const Args& args);

// Globals: range, namespace, dict, raise_exception, strftime_now.
const Val* globalNamed(const std::string& name);
Val callGlobal(Ctx& ctx, Global which, const Args& args);

// json.dumps as transformers' tojson calls it (jinja_json.cpp).
struct JsonStyle {
    bool ensureAscii = false;
    bool pretty = false;  // indent given
    std::string indent;
    std::string itemSep = ", ";
    std::string keySep = ": ";
    bool sortKeys = false;
};
std::string pyJsonDumps(const Val& v, const JsonStyle& style);
Val tojsonFilter(const Val& input, const Args& args);

// Python's str % args (jinja_methods.cpp).
std::string percentFormat(const std::string& format, const Val& args);

}  // namespace tb::jinja::detail
