// A small command-line parser for the tunebench CLI: `--key value`, `--flag`, positional words.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tb {

class Args {
public:
    // flags: options that take no value (e.g. "json", "greedy").
    Args(const std::vector<std::string>& argv, const std::set<std::string>& flags);

    bool flag(const std::string& name) const { return m_flags.count(name) > 0; }
    bool has(const std::string& name) const { return m_values.count(name) > 0; }
    std::string value(const std::string& name) const;  // required
    std::string value(const std::string& name, const std::string& fallback) const;
    long long integer(const std::string& name, long long fallback) const;
    // --seed: a non-negative integer (a negative one would wrap to a huge unsigned seed).
    uint64_t seed(uint64_t fallback) const;
    double number(const std::string& name, double fallback) const;
    const std::vector<std::string>& positional() const { return m_positional; }
    // Throws when an option was given that the command does not know.
    void allowOnly(const std::set<std::string>& known) const;
    // The words as given, in order, without the named options (and their values).
    std::vector<std::string> argvWithout(const std::set<std::string>& names) const;

private:
    std::map<std::string, std::string> m_values;
    std::set<std::string> m_flags;
    std::vector<std::string> m_positional;
    std::vector<std::pair<std::string, std::vector<std::string>>> m_words;  // option ("": none)
};

}  // namespace tb
