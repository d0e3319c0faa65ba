// Shared by the Jinja tests: strftime_now pinned to a fixed time, formatted like Python's
// datetime.strftime in the C locale (English month and day names).
#pragma once

#include "tokenizer/jinja.h"

#include <clocale>
#include <ctime>
#include <string>

#include <locale.h>

namespace tbtest {

// Options whose strftime_now formats `iso` ("YYYY-MM-DDTHH:MM:SS"); default options when null.
inline tb::jinja::Options pinnedClock(const char* iso)
{
    tb::jinja::Options options;
    if (!iso)
        return options;
    const std::string now = iso;
    options.strftimeNow = [now](const std::string& format) {
        std::tm tm{};
        strptime(now.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
        tm.tm_isdst = -1;
        std::mktime(&tm);  // fills in the weekday and the day of the year
        const locale_t c = newlocale(LC_ALL_MASK, "C", nullptr);
        char buf[512];
        const size_t n = strftime_l(buf, sizeof buf, format.c_str(), &tm, c);
        freelocale(c);
        return std::string(buf, n);
    };
    return options;
}

}  // namespace tbtest
