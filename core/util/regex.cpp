// Regex over PCRE2 (8-bit code units, UTF mode).
#include "util/regex.h"

#include "util/error.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace tb {

namespace {

std::string pcre2Message(int code)
{
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(code, message, sizeof message);
    return reinterpret_cast<const char*>(message);
}

}  // namespace

Regex::Regex(const std::string& pattern) : m_pattern(pattern)
{
    int error = 0;
    PCRE2_SIZE offset = 0;
    m_code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF,
                           &error, &offset, nullptr);
    if (!m_code)
        fail("regex \"", pattern, "\": ", pcre2Message(error), " at offset ", offset);
    m_match = pcre2_match_data_create_from_pattern(m_code, nullptr);
}

Regex::~Regex()
{
    pcre2_match_data_free(m_match);
    pcre2_code_free(m_code);
}

std::optional<bool> Regex::search(std::string_view text, std::string* why) const
{
    const int rc = pcre2_match(m_code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0,
                               m_match, nullptr);
    if (rc >= 0)
        return true;
    if (rc == PCRE2_ERROR_NOMATCH)
        return false;
    if (why)
        *why = pcre2Message(rc);
    return std::nullopt;
}

}  // namespace tb
