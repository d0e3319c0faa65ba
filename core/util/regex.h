// Regex: a compiled PCRE2 pattern over UTF-8 text. Searches run under PCRE2's default match and
// depth limits, so a pattern with nested repeats (`(a+)+$`) ends with an error instead of running
// for hours as a backtracking std::regex does.
#pragma once

#include <optional>
#include <string>
#include <string_view>

struct pcre2_real_code_8;
struct pcre2_real_match_data_8;

namespace tb {

class Regex {
public:
    // Throws tb::Error `regex "PATTERN": MESSAGE at offset N` when the pattern does not compile.
    explicit Regex(const std::string& pattern);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Whether the pattern occurs in text; nullopt, with PCRE2's reason in *why, when PCRE2 cannot
    // decide (its match or depth limit, text that is not UTF-8). Not for two threads at once.
    std::optional<bool> search(std::string_view text, std::string* why) const;
    const std::string& pattern() const { return m_pattern; }

private:
    std::string m_pattern;
    pcre2_real_code_8* m_code = nullptr;
    pcre2_real_match_data_8* m_match = nullptr;
};

}  // namespace tb
