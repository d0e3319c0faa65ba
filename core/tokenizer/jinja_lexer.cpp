// jinja2's lexer (lexer.py) for one configuration: {{ }}, {% %}, {# #}, raw blocks, whitespace
// control with trim_blocks / lstrip_blocks, and Python's literals inside tags.
#include "tokenizer/jinja_lexer.h"

#include "tokenizer/jinja_text.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace tb::jinja::detail {

void failAt(const std::string& name, Pos pos, const std::string& what)
{
    tb::fail(name, ": line ", pos.line, ", column ", pos.column, ": ", what);
}

namespace {

// jinja2 reads \r\n and \r as \n and drops one trailing newline (keep_trailing_newline off).
std::string normalizeNewlines(const std::string& source)
{
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n')
                ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n')
        out.pop_back();
    return out;
}

bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

class Lexer {
public:
    Lexer(const std::string& source, const Options& options, const std::string& name)
        : m_src(normalizeNewlines(source)), m_options(options), m_name(name)
    {
    }

    std::vector<Token> run()
    {
        while (m_pos < m_src.size())
            rootStep();
        Token eof;
        eof.pos = here();
        m_tokens.push_back(eof);
        return std::move(m_tokens);
    }

private:
    std::string m_src;
    const Options& m_options;
    const std::string& m_name;
    std::vector<Token> m_tokens;
    size_t m_pos = 0;
    Pos m_at;  // position of m_pos
    bool m_lineStarting = true;
    std::vector<char> m_balance;

    Pos here() const { return m_at; }

    [[noreturn]] void error(Pos pos, const std::string& what) const { failAt(m_name, pos, what); }

    void advance(size_t to)
    {
        for (; m_pos < to; ++m_pos) {
            const char c = m_src[m_pos];
            if (c == '\n') {
                ++m_at.line;
                m_at.column = 1;
            } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
                ++m_at.column;
            }
        }
    }

    void push(Tok type, Pos pos, std::string text = {})
    {
        Token t;
        t.type = type;
        t.pos = pos;
        t.text = std::move(text);
        m_tokens.push_back(std::move(t));
    }

    size_t skipSpace(size_t p) const
    {
        while (p < m_src.size()) {
            size_t len = 0;
            if (!isPySpace(decodeUtf8(m_src, p, &len)))
                break;
            p += len;
        }
        return p;
    }

    bool startsWith(size_t p, const char* s) const { return m_src.compare(p, strlen(s), s) == 0; }

    // The text before a tag, with the tag's whitespace control applied (OptionalLStrip).
    std::string stripData(std::string text, char sign, bool variable) const
    {
        if (sign == '-')
            return pyStrip(text, nullptr, false, true);
        if (sign == '+' || !m_options.lstripBlocks || variable)
            return text;
        const size_t nl = text.rfind('\n');
        const size_t lpos = nl == std::string::npos ? 0 : nl + 1;
        if (lpos == 0 && !m_lineStarting)
            return text;
        if (lpos < text.size() && skipSpaceIn(text, lpos) == text.size())
            text.resize(lpos);
        return text;
    }

    static size_t skipSpaceIn(const std::string& s, size_t p)
    {
        while (p < s.size()) {
            size_t len = 0;
            if (!isPySpace(decodeUtf8(s, p, &len)))
                break;
            p += len;
        }
        return p;
    }

    void rootStep()
    {
        size_t at = m_pos;
        while (true) {
            at = m_src.find('{', at);
            if (at == std::string::npos || at + 1 >= m_src.size())
                break;
            const char k = m_src[at + 1];
            if (k == '{' || k == '%' || k == '#')
                break;
            ++at;
        }
        if (at == std::string::npos || at + 1 >= m_src.size()) {
            push(Tok::Data, here(), m_src.substr(m_pos));
            advance(m_src.size());
            return;
        }
        const char kind = m_src[at + 1];
        const char sign = at + 2 < m_src.size() && (m_src[at + 2] == '-' || m_src[at + 2] == '+')
                              ? m_src[at + 2]
                              : '\0';
        size_t rawEnd = 0;
        const bool raw = kind == '%' && matchRawBegin(at, &rawEnd);
        std::string text = stripData(m_src.substr(m_pos, at - m_pos), sign, kind == '{');
        if (!text.empty())
            push(Tok::Data, here(), std::move(text));
        advance(at);
        const size_t inner = at + 2 + (sign ? 1 : 0);
        if (raw)
            rawBlock(rawEnd);
        else if (kind == '#')
            comment(inner);
        else
            tag(kind == '{', inner);
    }

    bool matchRawBegin(size_t at, size_t* end) const
    {
        size_t p = at + 2;
        if (p < m_src.size() && (m_src[p] == '-' || m_src[p] == '+'))
            ++p;
        p = skipSpace(p);
        if (!startsWith(p, "raw"))
            return false;
        p = skipSpace(p + 3);
        if (startsWith(p, "-%}")) {
            *end = skipSpace(p + 3);
            return true;
        }
        if (startsWith(p, "%}")) {
            *end = p + 2;
            return true;
        }
        return false;
    }

    // Where `{% endraw %}` starting at p ends (its whole match), or npos.
    size_t matchEndRaw(size_t p, char* sign) const
    {
        p += 2;
        *sign = '\0';
        if (p < m_src.size() && (m_src[p] == '-' || m_src[p] == '+'))
            *sign = m_src[p++];
        p = skipSpace(p);
        if (!startsWith(p, "endraw"))
            return std::string::npos;
        p = skipSpace(p + 6);
        if (startsWith(p, "+%}"))
            return p + 3;
        if (startsWith(p, "-%}"))
            return skipSpace(p + 3);
        if (startsWith(p, "%}")) {
            p += 2;
            if (m_options.trimBlocks && p < m_src.size() && m_src[p] == '\n')
                ++p;
            return p;
        }
        return std::string::npos;
    }

    void rawBlock(size_t rawEnd)
    {
        const Pos opener = here();
        m_lineStarting = m_src[rawEnd - 1] == '\n';
        advance(rawEnd);
        for (size_t at = m_src.find("{%", rawEnd); at != std::string::npos;
             at = m_src.find("{%", at + 1)) {
            char sign = '\0';
            const size_t end = matchEndRaw(at, &sign);
            if (end == std::string::npos)
                continue;
            std::string text = stripData(m_src.substr(rawEnd, at - rawEnd), sign, false);
            if (!text.empty())
                push(Tok::Data, here(), std::move(text));
            m_lineStarting = m_src[end - 1] == '\n';
            advance(end);
            return;
        }
        error(opener, "missing end of raw directive");
    }

    void comment(size_t inner)
    {
        const size_t close = m_src.find("#}", inner);
        if (close == std::string::npos)
            error(here(), "missing end of comment tag");
        size_t end = close + 2;
        if (close > inner && m_src[close - 1] == '-')
            end = skipSpace(end);
        else if ((close <= inner || m_src[close - 1] != '+') && m_options.trimBlocks &&
                 end < m_src.size() && m_src[end] == '\n')
            ++end;
        m_lineStarting = m_src[end - 1] == '\n';
        advance(end);
    }

    // The end of the tag at p when it closes there: -%} and -}} swallow the whitespace after.
    size_t matchTagEnd(bool variable, size_t p) const
    {
        if (variable) {
            if (startsWith(p, "-}}"))
                return skipSpace(p + 3);
            return startsWith(p, "}}") ? p + 2 : std::string::npos;
        }
        if (startsWith(p, "+%}"))
            return p + 3;
        if (startsWith(p, "-%}"))
            return skipSpace(p + 3);
        if (!startsWith(p, "%}"))
            return std::string::npos;
        p += 2;
        if (m_options.trimBlocks && p < m_src.size() && m_src[p] == '\n')
            ++p;
        return p;
    }

    void tag(bool variable, size_t inner)
    {
        push(variable ? Tok::VarBegin : Tok::BlockBegin, here());
        advance(inner);
        m_balance.clear();
        while (m_pos < m_src.size()) {
            if (m_balance.empty()) {
                const size_t end = matchTagEnd(variable, m_pos);
                if (end != std::string::npos) {
                    push(variable ? Tok::VarEnd : Tok::BlockEnd, here());
                    m_lineStarting = m_src[end - 1] == '\n';
                    advance(end);
                    return;
                }
            }
            const size_t space = skipSpace(m_pos);
            if (space != m_pos) {
                advance(space);
                continue;
            }
            innerToken();
        }
    }

    void innerToken()
    {
        const char c = m_src[m_pos];
        if (isDigit(c) && (m_pos == 0 || m_src[m_pos - 1] != '.') && lexFloat())
            return;
        if (isDigit(c))
            return lexInteger();
        if (c == '\'' || c == '"')
            return lexString();
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
            static_cast<unsigned char>(c) >= 0x80)
            return lexName();
        lexOperator();
    }

    // (\d+_)*\d+ from p: the end, or p when there is no digit.
    size_t scanDigits(size_t p) const
    {
        size_t q = p;
        while (q < m_src.size() && isDigit(m_src[q])) {
            ++q;
            if (q + 1 < m_src.size() && m_src[q] == '_' && isDigit(m_src[q + 1]))
                ++q;
        }
        return q;
    }

    size_t scanExponent(size_t p) const
    {
        if (p >= m_src.size() || (m_src[p] != 'e' && m_src[p] != 'E'))
            return std::string::npos;
        ++p;
        if (p < m_src.size() && (m_src[p] == '+' || m_src[p] == '-'))
            ++p;
        const size_t q = scanDigits(p);
        return q == p ? std::string::npos : q;
    }

    bool lexFloat()
    {
        const size_t whole = scanDigits(m_pos);
        size_t fraction = std::string::npos;
        if (whole + 1 < m_src.size() && m_src[whole] == '.' && isDigit(m_src[whole + 1]))
            fraction = scanDigits(whole + 1);
        size_t end = fraction != std::string::npos ? scanExponent(fraction) : std::string::npos;
        if (end == std::string::npos)
            end = scanExponent(whole);
        if (end == std::string::npos)
            end = fraction;
        if (end == std::string::npos)
            return false;
        std::string digits;
        for (size_t i = m_pos; i < end; ++i)
            if (m_src[i] != '_')
                digits += m_src[i];
        Token t;
        t.type = Tok::Float;
        t.pos = here();
        t.number = std::strtod(digits.c_str(), nullptr);
        m_tokens.push_back(std::move(t));
        advance(end);
        return true;
    }

    void lexInteger()
    {
        const Pos start = here();
        size_t p = m_pos;
        int base = 10;
        if (m_src[p] == '0' && p + 1 < m_src.size()) {
            const char x =
                static_cast<char>(std::tolower(static_cast<unsigned char>(m_src[p + 1])));
            base = x == 'b' ? 2 : x == 'o' ? 8 : x == 'x' ? 16 : 10;
        }
        auto digitValue = [](char ch) {
            const int d = std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0'
                          : std::isalpha(static_cast<unsigned char>(ch))
                              ? std::tolower(static_cast<unsigned char>(ch)) - 'a' + 10
                              : 99;
            return d;
        };
        size_t q = p;
        if (base != 10) {
            q = p + 2;
            while (true) {
                size_t r = q;
                if (r < m_src.size() && m_src[r] == '_')
                    ++r;
                if (r >= m_src.size() || digitValue(m_src[r]) >= base)
                    break;
                q = r + 1;
            }
            if (q == p + 2) {  // "0x" with no digits: jinja2 reads the 0 alone
                base = 10;
                q = p + 1;
            }
        } else if (m_src[p] == '0') {
            q = p + 1;
            while (q < m_src.size() &&
                   (m_src[q] == '0' ||
                    (m_src[q] == '_' && q + 1 < m_src.size() && m_src[q + 1] == '0')))
                q += m_src[q] == '_' ? 2 : 1;
        } else {
            q = scanDigits(p);
        }
        const size_t digitsFrom = base == 10 ? p : p + 2;
        uint64_t value = 0;
        for (size_t i = digitsFrom; i < q; ++i) {
            if (m_src[i] == '_')
                continue;
            const auto d = static_cast<uint64_t>(digitValue(m_src[i]));
            if (value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - d) /
                            static_cast<uint64_t>(base))
                error(start, "unsupported: integer literal larger than 64 bits");
            value = value * static_cast<uint64_t>(base) + d;
        }
        Token t;
        t.type = Tok::Int;
        t.pos = start;
        t.integer = static_cast<int64_t>(value);
        m_tokens.push_back(std::move(t));
        advance(q);
    }

    void lexName()
    {
        size_t q = m_pos;
        while (q < m_src.size()) {
            size_t len = 0;
            const char32_t c = decodeUtf8(m_src, q, &len);
            if (!isAlnumCp(c))
                break;
            q += len;
        }
        if (q == m_pos)
            error(here(), tb::cat("unexpected character ", pyStrRepr(m_src.substr(m_pos, 1))));
        push(Tok::Name, here(), m_src.substr(m_pos, q - m_pos));
        advance(q);
    }

    void lexString();
    void lexOperator();
    size_t unescapeAt(size_t p, std::string& out, Pos start) const;
};

// One backslash escape of Python's unicode-escape codec at p (just after the backslash); returns
// where the escape ends.
size_t Lexer::unescapeAt(size_t p, std::string& out, Pos start) const
{
    const char c = m_src[p];
    auto hex = [&](size_t from, int n) -> char32_t {
        char32_t v = 0;
        for (int k = 0; k < n; ++k) {
            const size_t i = from + static_cast<size_t>(k);
            if (i >= m_src.size() || !std::isxdigit(static_cast<unsigned char>(m_src[i])))
                error(start, tb::cat("truncated \\", c, " escape in a string"));
            const auto h = static_cast<unsigned char>(m_src[i]);
            v = v * 16 +
                static_cast<char32_t>(std::isdigit(h) ? h - '0' : std::tolower(h) - 'a' + 10);
        }
        return v;
    };
    auto emit = [&](char32_t v) {
        if (v > 0x10FFFF)
            error(start, "illegal Unicode character in a string");
        appendUtf8(out, v >= 0xD800 && v <= 0xDFFF ? 0xFFFD : v);
    };
    switch (c) {
    case '\n':
        return p + 1;
    case '\\':
        out += '\\';
        return p + 1;
    case '\'':
        out += '\'';
        return p + 1;
    case '"':
        out += '"';
        return p + 1;
    case 'a':
        out += '\a';
        return p + 1;
    case 'b':
        out += '\b';
        return p + 1;
    case 'f':
        out += '\f';
        return p + 1;
    case 'n':
        out += '\n';
        return p + 1;
    case 'r':
        out += '\r';
        return p + 1;
    case 't':
        out += '\t';
        return p + 1;
    case 'v':
        out += '\v';
        return p + 1;
    case 'x':
        emit(hex(p + 1, 2));
        return p + 3;
    case 'u':
        emit(hex(p + 1, 4));
        return p + 5;
    case 'U':
        emit(hex(p + 1, 8));
        return p + 9;
    case 'N':
        error(start, "unsupported: \\N{...} escapes in strings");
    default:
        break;
    }
    if (c >= '0' && c <= '7') {
        char32_t v = 0;
        size_t q = p;
        while (q < p + 3 && q < m_src.size() && m_src[q] >= '0' && m_src[q] <= '7')
            v = v * 8 + static_cast<char32_t>(m_src[q++] - '0');
        emit(v);
        return q;
    }
    out += '\\';  // Python keeps an unknown escape as it is
    return p;
}

void Lexer::lexString()
{
    const Pos start = here();
    const char quote = m_src[m_pos];
    std::string value;
    size_t p = m_pos + 1;
    while (true) {
        if (p >= m_src.size())
            error(start, "unterminated string");
        const char c = m_src[p];
        if (c == quote)
            break;
        if (c == '\\' && p + 1 < m_src.size()) {
            p = unescapeAt(p + 1, value, start);
            continue;
        }
        value += c;
        ++p;
    }
    push(Tok::String, start, std::move(value));
    advance(p + 1);
}

void Lexer::lexOperator()
{
    static const char* const twoChar[] = {"**", "//", "==", "!=", ">=", "<="};
    const Pos start = here();
    for (const char* op : twoChar)
        if (startsWith(m_pos, op)) {
            push(Tok::Op, start, op);
            advance(m_pos + 2);
            return;
        }
    const char c = m_src[m_pos];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
        size_t len = 0;
        decodeUtf8(m_src, m_pos, &len);
        error(start, tb::cat("unexpected character ", pyStrRepr(m_src.substr(m_pos, len))));
    }
    if (c == '(' || c == '[' || c == '{') {
        m_balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
        if (m_balance.empty())
            error(start, tb::cat("unexpected '", c, "'"));
        const char expected = m_balance.back();
        m_balance.pop_back();
        if (expected != c)
            error(start, tb::cat("unexpected '", c, "', expected '", expected, "'"));
    }
    push(Tok::Op, start, std::string(1, c));
    advance(m_pos + 1);
}

}  // namespace

std::vector<Token> tokenize(const std::string& source, const Options& options,
                            const std::string& name)
{
    return Lexer(source, options, name).run();
}

}  // namespace tb::jinja::detail
