// Parsing of `--key value` and `--flag` options with errors that name the option.
#include "cli/args.h"

#include "util/error.h"
#include "util/utf8.h"

#include <cmath>
#include <cstdio>

namespace tb {

namespace {

// Words go into stores, run files and JSON output, which hold text: a word that is not UTF-8 (an
// annotator name typed in a Latin-1 terminal, a file name from an old archive) is refused here,
// by its option, instead of being stored and failing every later --json of the store.
void requireUtf8(const std::string& word, const std::string& option)
{
    const std::ptrdiff_t at = invalidUtf8At(word);
    if (at < 0)
        return;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(word[size_t(at)]));
    fail(option.empty() ? std::string("argument") : "option --" + option,
         " is not valid UTF-8 (byte ", byte, " at ", at,
         "); a file name that is not UTF-8 needs renaming first");
}

}  // namespace

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& flags)
{
    const auto setValue = [this](const std::string& name, const std::string& value) {
        requireUtf8(value, name);
        const auto [it, added] = m_values.emplace(name, value);
        if (!added && it->second != value)
            fail("option --", name, " is given twice (", it->second, ", then ", value,
                 "): give it once");
    };
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (a.rfind("--", 0) != 0 || a.size() == 2) {
            requireUtf8(a, "");
            m_positional.push_back(a);
            m_words.push_back({"", {a}});
            continue;
        }
        std::string name = a.substr(2);
        auto eq = name.find('=');
        requireUtf8(name.substr(0, eq), "");  // the value is checked with its option's name
        if (eq != std::string::npos) {
            setValue(name.substr(0, eq), name.substr(eq + 1));
            m_words.push_back({name.substr(0, eq), {a}});
            continue;
        }
        if (flags.count(name)) {
            m_flags.insert(name);
            m_words.push_back({name, {a}});
            continue;
        }
        if (i + 1 >= argv.size())
            fail("option --", name, " needs a value");
        setValue(name, argv[i + 1]);
        ++i;
        m_words.push_back({name, {a, argv[i]}});
    }
}

std::string Args::value(const std::string& name) const
{
    auto it = m_values.find(name);
    if (it == m_values.end())
        fail("missing required option --", name);
    return it->second;
}

std::string Args::value(const std::string& name, const std::string& fallback) const
{
    auto it = m_values.find(name);
    return it == m_values.end() ? fallback : it->second;
}

long long Args::integer(const std::string& name, long long fallback) const
{
    auto it = m_values.find(name);
    if (it == m_values.end())
        return fallback;
    try {
        size_t used = 0;
        long long v = std::stoll(it->second, &used);
        if (used != it->second.size())
            throw std::invalid_argument("trailing");
        return v;
    } catch (const std::exception&) {
        fail("option --", name, " expects an integer, got '", it->second, "'");
    }
}

uint64_t Args::seed(uint64_t fallback) const
{
    const long long v = integer("seed", static_cast<long long>(fallback));
    if (v < 0)
        fail("option --seed is ", v, " (must be at least 0)");
    return static_cast<uint64_t>(v);
}

double Args::number(const std::string& name, double fallback) const
{
    auto it = m_values.find(name);
    if (it == m_values.end())
        return fallback;
    try {
        size_t used = 0;
        double v = std::stod(it->second, &used);
        if (used != it->second.size() || !std::isfinite(v))  // "nan", "inf" and 1e999 too
            throw std::invalid_argument("not a finite number");
        return v;
    } catch (const std::exception&) {
        fail("option --", name, " expects a finite number, got '", it->second, "'");
    }
}

void Args::allowOnly(const std::set<std::string>& known) const
{
    for (const auto& [name, v] : m_values)
        if (!known.count(name))
            fail("unknown option --", name);
    for (const auto& name : m_flags)
        if (!known.count(name))
            fail("unknown option --", name);
}

std::vector<std::string> Args::argvWithout(const std::set<std::string>& names) const
{
    std::vector<std::string> out;
    for (const auto& [name, words] : m_words)
        if (name.empty() || !names.count(name))
            out.insert(out.end(), words.begin(), words.end());
    return out;
}

}  // namespace tb
