// Python's operators on template values (+ - * / // % ** with Python's int/float rules and
// messages, comparisons, `in`) and jinja2's sandboxed attribute, item and slice lookup.
#include "tokenizer/jinja_builtins.h"

#include "tokenizer/jinja_text.h"

#include <climits>
#include <cmath>

namespace tb::jinja::detail {

void Ctx::tick(uint64_t n)
{
    steps += n;
    if (steps > kMaxSteps)
        failRender("the template took more than ", kMaxSteps,
                   " steps (loop iterations, calls, filtered items)");
}

Params::Params(const char* function, const Args& args, std::initializer_list<const char*> names,
               size_t required)
    : m_function(function), m_bound(names.size(), nullptr)
{
    if (args.pos.size() > names.size())
        failRender(function, "() takes at most ", names.size(), " argument(s) (", args.pos.size(),
                   " given)");
    for (size_t i = 0; i < args.pos.size(); ++i)
        m_bound[i] = &args.pos[i];
    for (const auto& [key, value] : args.kw) {
        size_t i = 0;
        for (const char* name : names) {
            if (key == name)
                break;
            ++i;
        }
        if (i == names.size())
            failRender(function, "() got an unexpected keyword argument '", key, "'");
        if (m_bound[i])
            failRender(function, "() got multiple values for argument '", key, "'");
        m_bound[i] = &value;
    }
    for (size_t i = 0; i < required; ++i)
        if (!m_bound[i])
            failRender(function, "() missing required argument '", names.begin()[i], "'");
}

const Val& Params::operator[](size_t i) const
{
    static const Val missing;
    return m_bound[i] ? *m_bound[i] : missing;
}

void checkSize(size_t bytes)
{
    if (bytes > kMaxStringBytes)
        failRender("a string would pass ", kMaxStringBytes >> 20, " MiB");
}

int64_t toIndex(const Val& v, const char* what)
{
    if (v.isUndefined())
        v.raiseUndefined();
    if (!v.isIntLike())
        failRender("'", typeName(v), "' object cannot be interpreted as an integer (", what, ")");
    return v.integer();
}

std::string requireStr(const Val& v, const char* function, const char* param)
{
    if (v.isUndefined())
        v.raiseUndefined();
    if (!v.isString())
        failRender(function, "() argument '", param, "' must be str, not ", typeName(v));
    return v.str();
}

namespace {

[[noreturn]] void unsupportedOperands(const char* op, const Val& a, const Val& b)
{
    failRender("unsupported operand type(s) for ", op, ": '", typeName(a), "' and '", typeName(b),
               "'");
}

[[noreturn]] void overflow()
{
    failRender("unsupported: integer overflow (templates compute with 64-bit integers here)");
}

Val repeat(const Val& seq, int64_t times)
{
    const int64_t n = std::max<int64_t>(times, 0);
    if (seq.isString()) {
        if (n > 0 && seq.str().size() > kMaxStringBytes / static_cast<size_t>(n))
            checkSize(kMaxStringBytes + 1);
        std::string out;
        for (int64_t i = 0; i < n; ++i)
            out += seq.str();
        return Val(std::move(out), seq.markup());
    }
    if (n > 0 && seq.items().size() > kMaxListItems / static_cast<size_t>(n))
        failRender("a list would pass ", kMaxListItems, " items");
    std::vector<Val> out;
    for (int64_t i = 0; i < n; ++i)
        out.insert(out.end(), seq.items().begin(), seq.items().end());
    return Val::list(std::move(out), seq.seq());
}

Val add(const Val& a, const Val& b)
{
    if (a.isIntLike() && b.isIntLike()) {
        int64_t r = 0;
        if (__builtin_add_overflow(a.integer(), b.integer(), &r))
            overflow();
        return Val(r);
    }
    if (a.isNumber() && b.isNumber())
        return Val(a.number() + b.number());
    if (a.isString() && b.isString()) {
        checkSize(a.str().size() + b.str().size());
        // markupsafe: Markup + str escapes the str, and so does str + Markup
        if (a.markup() && !b.markup())
            return Val(a.str() + htmlEscape(b.str()), true);
        if (b.markup() && !a.markup())
            return Val(htmlEscape(a.str()) + b.str(), true);
        return Val(a.str() + b.str(), a.markup());
    }
    if (a.isSequence() && b.isSequence() && a.seq() == b.seq()) {
        if (a.items().size() + b.items().size() > kMaxListItems)
            failRender("a list would pass ", kMaxListItems, " items");
        std::vector<Val> out = a.items();
        out.insert(out.end(), b.items().begin(), b.items().end());
        return Val::list(std::move(out), a.seq());
    }
    if (a.isString() || a.isSequence())
        failRender("can only concatenate ", typeName(a), " (not \"", typeName(b), "\") to ",
                   typeName(a));
    unsupportedOperands("+", a, b);
}

Val multiply(const Val& a, const Val& b)
{
    if (a.isIntLike() && b.isIntLike()) {
        int64_t r = 0;
        if (__builtin_mul_overflow(a.integer(), b.integer(), &r))
            overflow();
        return Val(r);
    }
    if (a.isNumber() && b.isNumber())
        return Val(a.number() * b.number());
    const bool aSeq = a.isString() || a.isSequence();
    const bool bSeq = b.isString() || b.isSequence();
    if (aSeq && b.isIntLike())
        return repeat(a, b.integer());
    if (bSeq && a.isIntLike())
        return repeat(b, a.integer());
    if (aSeq || bSeq)
        failRender("can't multiply sequence by non-int of type '", typeName(aSeq ? b : a), "'");
    unsupportedOperands("*", a, b);
}

Val floorDivide(const Val& a, const Val& b)
{
    if (a.isIntLike() && b.isIntLike()) {
        const int64_t x = a.integer();
        const int64_t y = b.integer();
        if (y == 0)
            failRender("integer division or modulo by zero");
        if (x == INT64_MIN && y == -1)
            overflow();
        int64_t q = x / y;
        if (x % y != 0 && ((x < 0) != (y < 0)))
            --q;
        return Val(q);
    }
    const double vx = a.number();
    const double wx = b.number();
    if (wx == 0.0)
        failRender("float floor division by zero");
    double mod = std::fmod(vx, wx);
    double div = (vx - mod) / wx;
    if (mod != 0.0 && ((wx < 0) != (mod < 0)))
        div -= 1.0;
    if (div != 0.0) {
        double floordiv = std::floor(div);
        if (div - floordiv > 0.5)
            floordiv += 1.0;
        return Val(floordiv);
    }
    return Val(std::copysign(0.0, vx / wx));
}

Val modulo(const Val& a, const Val& b)
{
    if (a.isIntLike() && b.isIntLike()) {
        const int64_t x = a.integer();
        const int64_t y = b.integer();
        if (y == 0)
            failRender("integer modulo by zero");
        if (y == -1)
            return Val(int64_t{0});
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0)))
            r += y;
        return Val(r);
    }
    const double wx = b.number();
    if (wx == 0.0)
        failRender("float modulo");
    double mod = std::fmod(a.number(), wx);
    if (mod != 0.0) {
        if ((wx < 0) != (mod < 0))
            mod += wx;
    } else {
        mod = std::copysign(0.0, wx);
    }
    return Val(mod);
}

Val power(const Val& a, const Val& b)
{
    if (a.isIntLike() && b.isIntLike() && b.integer() >= 0) {
        int64_t base = a.integer();
        int64_t e = b.integer();
        int64_t r = 1;
        while (e > 0) {
            if ((e & 1) && __builtin_mul_overflow(r, base, &r))
                overflow();
            e >>= 1;
            if (e > 0 && __builtin_mul_overflow(base, base, &base))
                overflow();
        }
        return Val(r);
    }
    const double x = a.number();
    const double y = b.number();
    if (x == 0.0 && y < 0)
        failRender("0.0 cannot be raised to a negative power");
    if (x < 0 && y != std::floor(y))
        failRender("unsupported: a negative number raised to a fractional power (complex)");
    const double r = std::pow(x, y);
    if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
        failRender("(34, 'Numerical result out of range')");
    return Val(r);
}

}  // namespace

Val binaryOp(BinOp op, const Val& a, const Val& b)
{
    if (op == BinOp::Mod && a.isString())  // printf-style; undefined args act as an empty mapping
        return Val(percentFormat(a.str(), b), a.markup());
    if (a.isUndefined())
        a.raiseUndefined();
    if (b.isUndefined())
        b.raiseUndefined();
    switch (op) {
    case BinOp::Add:
        return add(a, b);
    case BinOp::Mul:
        return multiply(a, b);
    default:
        break;
    }
    if (!a.isNumber() || !b.isNumber()) {
        static const char* const symbols[] = {"+", "-", "*", "/", "//", "%", "** or pow()"};
        unsupportedOperands(symbols[static_cast<int>(op)], a, b);
    }
    switch (op) {
    case BinOp::Sub:
        if (a.isIntLike() && b.isIntLike()) {
            int64_t r = 0;
            if (__builtin_sub_overflow(a.integer(), b.integer(), &r))
                overflow();
            return Val(r);
        }
        return Val(a.number() - b.number());
    case BinOp::Div:
        if (b.number() == 0.0)
            failRender(a.isIntLike() && b.isIntLike() ? "division by zero"
                                                      : "float division by zero");
        return Val(a.number() / b.number());
    case BinOp::FloorDiv:
        return floorDivide(a, b);
    case BinOp::Mod:
        return modulo(a, b);
    case BinOp::Pow:
        return power(a, b);
    default:
        break;
    }
    failRender("unsupported operator");
}

Val negate(const Val& v)
{
    if (v.isUndefined())
        v.raiseUndefined();
    if (v.isIntLike()) {
        if (v.integer() == INT64_MIN)
            overflow();
        return Val(-v.integer());
    }
    if (v.kind() == Kind::Float)
        return Val(-v.number());
    failRender("bad operand type for unary -: '", typeName(v), "'");
}

Val plus(const Val& v)
{
    if (v.isUndefined())
        v.raiseUndefined();
    if (v.isIntLike())
        return Val(v.integer());
    if (v.kind() == Kind::Float)
        return v;
    failRender("bad operand type for unary +: '", typeName(v), "'");
}

namespace {

bool orderable(const Val& a, const Val& b)
{
    return (a.isNumber() && b.isNumber()) || (a.isString() && b.isString()) ||
           (a.isSequence() && b.isSequence() && a.seq() == b.seq());
}

}  // namespace

bool compareOp(CmpOp op, const Val& a, const Val& b)
{
    switch (op) {
    case CmpOp::Eq:
        return pyEquals(a, b);
    case CmpOp::Ne:
        return !pyEquals(a, b);
    case CmpOp::In:
        return contains(b, a);
    case CmpOp::NotIn:
        return !contains(b, a);
    default:
        break;
    }
    if (a.isUndefined())
        a.raiseUndefined();
    if (b.isUndefined())
        b.raiseUndefined();
    static const char* const symbols[] = {"==", "!=", "<", "<=", ">", ">="};
    if (!orderable(a, b))
        failRender("'", symbols[static_cast<int>(op)], "' not supported between instances of '",
                   typeName(a), "' and '", typeName(b), "'");
    switch (op) {
    case CmpOp::Lt:
        return pyLess(a, b);
    case CmpOp::Le:
        return pyLess(a, b) || pyEquals(a, b);
    case CmpOp::Gt:
        return pyLess(b, a);
    case CmpOp::Ge:
        return pyLess(b, a) || pyEquals(a, b);
    default:
        return false;
    }
}

bool contains(const Val& container, const Val& item)
{
    switch (container.kind()) {
    case Kind::Undefined:
        return false;
    case Kind::String:
        if (!item.isString())
            failRender("'in <string>' requires string as left operand, not ", typeName(item));
        return container.str().find(item.str()) != std::string::npos;
    case Kind::Dict:
        requireHashable(item);
        return container.dict().find(item) != nullptr;
    case Kind::List: {
        ListData& data = container.listData();
        const bool once = container.seq() == Seq::Generator || container.seq() == Seq::Iterator;
        for (size_t i = once ? data.consumed : 0; i < data.items.size(); ++i)
            if (pyEquals(data.items[i], item)) {
                if (once)
                    data.consumed = i + 1;
                return true;
            }
        if (once)
            data.consumed = data.items.size();
        return false;
    }
    case Kind::Object:
        if (container.object().kind == ObjKind::Loop) {
            const auto iterated = iterate(container);
            for (const Val& v : *iterated)
                if (pyEquals(v, item))
                    return true;
            return false;
        }
        break;
    default:
        break;
    }
    failRender("argument of type '", typeName(container), "' is not iterable");
}

}  // namespace tb::jinja::detail
