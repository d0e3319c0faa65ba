// UTF-8 validation (RFC 3629) and character-boundary helpers.
#include "util/utf8.h"

namespace tb {

std::ptrdiff_t invalidUtf8At(std::string_view s)
{
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const size_t n = s.size();
    size_t i = 0;
    while (i < n) {
        const unsigned char c = p[i];
        if (c < 0x80) {  // the common case: ASCII runs
            ++i;
            continue;
        }
        size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            lo = c == 0xE0 ? 0xA0 : 0x80;  // no overlong forms
            hi = c == 0xED ? 0x9F : 0xBF;  // no surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
        } else {
            return static_cast<std::ptrdiff_t>(i);
        }
        if (i + len > n)
            return static_cast<std::ptrdiff_t>(i);
        for (size_t k = 1; k < len; ++k) {
            const unsigned char b = p[i + k];
            if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
                return static_cast<std::ptrdiff_t>(i);
        }
        i += len;
    }
    return -1;
}

size_t utf8Floor(std::string_view s, size_t at)
{
    if (at >= s.size())
        return s.size();
    // At most three continuation bytes precede a lead byte in valid text; stop there in any case.
    size_t i = at;
    while (i > 0 && at - i < 3 && !isUtf8Lead(s[i]))
        --i;
    return isUtf8Lead(s[i]) ? i : at;
}

}  // namespace tb
